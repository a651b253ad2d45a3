from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "leaderboard.campaigns"
    label = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Tuning campaigns"
