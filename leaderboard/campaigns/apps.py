from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "leaderboard.campaigns"
    label = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Tuning campaigns"

    def ready(self) -> None:
        from leaderboard.campaigns import signals  # noqa: F401 - connects the receivers
