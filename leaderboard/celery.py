"""The Celery app. Tasks are found in each app's tasks module; rig jobs go to
the ``rig.<name>`` queue that only that rig's worker consumes."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

app = Celery("leaderboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
