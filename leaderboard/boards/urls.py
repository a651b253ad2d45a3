"""The site's pages, mounted at the root by leaderboard/urls.py."""

from django.urls import path

from leaderboard.boards import bound_views, index_views, views, views_exports

app_name = "boards"

urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("leaderboard.csv", views_exports.leaderboard_csv, name="leaderboard-csv"),
    path("leaderboard.json", views_exports.leaderboard_json, name="leaderboard-json"),
    path("leaderboard.ndjson", views_exports.leaderboard_ndjson, name="leaderboard-ndjson"),
    path("rigs/", index_views.rigs, name="rigs"),
    path("rigs/<int:rig_id>/", views.rig_page, name="rig"),
    path("gpus/", index_views.gpus, name="gpus"),
    path("models/", index_views.models, name="models"),
    path("gpus/<path:model>/", views.gpu_page, name="gpu"),
    path("models/<int:model_file_id>/", views.model_page, name="model"),
    path("runs/<int:run_id>/", views.run_page, name="run"),
    path("compare/", views.compare_page, name="compare"),
    path("estimate/", bound_views.estimate_page, name="estimate"),
    path("sweeps/", views.sweeps_page, name="sweeps"),
    path("concurrency/", views.concurrency_page, name="concurrency"),
    path("published/comparisons/", views.published_comparisons, name="published-comparisons"),
    path("published/comparisons/<int:comparison_id>/", views.published_comparison, name="published-comparison"),
    path("published/experiments/", views.experiments, name="experiments"),
    path("published/sources/<int:source_id>/", views.source_page, name="source"),
]
