from django.apps import AppConfig


class RegressionsConfig(AppConfig):
    name = "leaderboard.regressions"
    label = "regressions"
    default_auto_field = "django.db.models.BigAutoField"
