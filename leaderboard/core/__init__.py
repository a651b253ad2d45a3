"""Plumbing every app shares and none owns: the one error class a service
raises (``errors``), the API's error shape and pagination (``api``), and
sending a job to a rig's Celery queue (``queues``). It imports no app."""
