from django.apps import AppConfig


class ResultsConfig(AppConfig):
    name = "leaderboard.results"
    label = "results"
    default_auto_field = "django.db.models.BigAutoField"
