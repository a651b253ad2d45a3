"""WSGI entry point for gunicorn."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
application = get_wsgi_application()

from leaderboard.core.heap import freeze_startup_heap  # noqa: E402 - Django is set up above

freeze_startup_heap()
