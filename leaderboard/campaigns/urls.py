"""Routes under /api/campaigns/."""

from django.urls import path

from leaderboard.campaigns import api

urlpatterns = [
    path("", api.CampaignListCreateApi.as_view(), name="campaigns-list"),
    path("<int:campaign_id>/", api.CampaignDetailApi.as_view(), name="campaigns-detail"),
    path("<int:campaign_id>/trials/", api.TrialCreateApi.as_view(), name="campaigns-trials"),
    path("<int:campaign_id>/cancel/", api.CampaignCancelApi.as_view(), name="campaigns-cancel"),
    path("<int:campaign_id>/finish/", api.CampaignFinishApi.as_view(), name="campaigns-finish"),
]
