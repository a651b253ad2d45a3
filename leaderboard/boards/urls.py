"""The site's pages, mounted at the root by leaderboard/urls.py."""

from django.urls import path

from leaderboard.boards import bound_views, index_views, views, views_exports, views_published, views_runs

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
    path("runs/<int:run_id>/", views_runs.run_page, name="run"),
    path("compare/", views_runs.compare_page, name="compare"),
    path("estimate/", bound_views.estimate_page, name="estimate"),
    path("sweeps/", views_runs.sweeps_page, name="sweeps"),
    path("concurrency/", views_runs.concurrency_page, name="concurrency"),
    path("published/comparisons/", views_published.published_comparisons, name="published-comparisons"),
    path(
        "published/comparisons/<int:comparison_id>/", views_published.published_comparison, name="published-comparison"
    ),
    path("published/experiments/", views_published.experiments, name="experiments"),
    path("published/sources/<int:source_id>/", views_published.source_page, name="source"),
]
