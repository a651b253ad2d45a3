from django.urls import path

from leaderboard.regressions import views, views_report

app_name = "regressions"

urlpatterns = [
    path("", views.subscriptions_page, name="index"),
    path("<int:subscription_id>/<int:reference_id>/", views.timeline_page, name="timeline"),
    path("report/<int:verdict_id>/", views_report.report_page, name="report"),
    path("report/<int:verdict_id>.md", views_report.report_markdown_file, name="report_md"),
]
