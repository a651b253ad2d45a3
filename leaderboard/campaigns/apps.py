from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "leaderboard.campaigns"
    label = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Tuning campaigns"

    def ready(self) -> None:
        from leaderboard.campaigns.dispatch import campaign_dispatch_on_job_end
        from leaderboard.jobs.services import job_end_handler_add

        # A trial's job that ends moves its campaign on (jobs cannot call campaigns: the import layers).
        job_end_handler_add(campaign_dispatch_on_job_end)
