"""Rigboard's Django project: settings, URLs, the Celery app and the apps beneath."""

from leaderboard.celery import app as celery_app

__all__ = ("celery_app",)
