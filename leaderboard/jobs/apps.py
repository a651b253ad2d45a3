from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "leaderboard.jobs"
    label = "jobs"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Benchmark jobs"
