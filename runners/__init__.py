"""The rig side of Rigboard; imports no Django (docs/architecture.md has the map).

Top level: the entry points (cli, pipeline.run_job, tasks and celery_app for
jobs sent by the service), the rig config (config) and the pure statistics the
service shares (stats, distribution). Below: harness/ measures a server,
delivery/ gets the run to the service, builds/ builds llama.cpp for the nightly,
campaign/ searches a configuration space, llamabench/ imports llama-bench.
"""
