"""Routes under /campaigns/."""

from django.urls import path

from leaderboard.campaigns import views

app_name = "campaigns"
urlpatterns = [
    path("", views.campaign_list, name="list"),
    path("<int:campaign_id>/", views.campaign_detail, name="detail"),
    path("reported/<int:source_id>/", views.reported_campaign, name="reported"),
]
