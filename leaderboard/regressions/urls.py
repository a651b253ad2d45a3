from django.urls import path

from leaderboard.regressions import views

app_name = "regressions"

urlpatterns = [
    path("", views.subscriptions_page, name="index"),
    path("<int:subscription_id>/<int:reference_id>/", views.timeline_page, name="timeline"),
]
