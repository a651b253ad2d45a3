"""Benchmark jobs: staff queue a suite or a context sweep for a rig; the rig's
own Celery worker (queue ``rig.<name>``) runs it and reports back over the API."""
