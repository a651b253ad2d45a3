from django.urls import path

from leaderboard.regressions import views, views_matrix, views_report, views_subscribe

app_name = "regressions"

urlpatterns = [
    path("", views.subscriptions_page, name="index"),
    path("<int:subscription_id>/<int:reference_id>/", views.timeline_page, name="timeline"),
    path("matrix/", views_matrix.matrix_page, name="matrix"),
    path("subscribe/", views_subscribe.subscribe_page, name="subscribe"),
    path("<int:subscription_id>/references/", views_subscribe.references_add_page, name="references-add"),
    path("<int:subscription_id>/aa-checks/", views_subscribe.aa_frequency_page, name="aa-frequency"),
    path("report/<int:verdict_id>/", views_report.report_page, name="report"),
    path("report/<int:verdict_id>.md", views_report.report_markdown_file, name="report_md"),
]
