from django.apps import AppConfig


class IntakeConfig(AppConfig):
    name = "leaderboard.intake"
    label = "intake"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Community intake"
