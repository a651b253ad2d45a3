"""/api/…: runs, rigs, sources, and the OpenAPI schema with its Swagger UI."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from leaderboard.results.api.views.bulk import RunBulkCreateApi
from leaderboard.results.api.views.published import SourceDetailApi, SourceListApi
from leaderboard.results.api.views.rigs import RigDetailApi, RigListApi
from leaderboard.results.api.views.runs import RunAppendApi, RunDetailApi, RunFinishApi, RunsApi
from leaderboard.results.api.views.whoami import WhoAmIApi, WhoAmIHardwareApi

app_name = "api"

urlpatterns = [
    path("runs/", RunsApi.as_view(), name="runs"),
    path("runs/bulk/", RunBulkCreateApi.as_view(), name="runs-bulk"),
    path("runs/<uuid:uuid>/", RunDetailApi.as_view(), name="run-detail"),
    path("runs/<uuid:uuid>/samples/", RunAppendApi.as_view(), name="run-append"),
    path("runs/<uuid:uuid>/finish/", RunFinishApi.as_view(), name="run-finish"),
    path("rigs/", RigListApi.as_view(), name="rigs"),
    path("rigs/<path:name>/", RigDetailApi.as_view(), name="rig-detail"),
    path("whoami/", WhoAmIApi.as_view(), name="whoami"),
    path("whoami/hardware/", WhoAmIHardwareApi.as_view(), name="whoami-hardware"),
    path("sources/", SourceListApi.as_view(), name="sources"),
    path("sources/<str:key>/", SourceDetailApi.as_view(), name="source-detail"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # Split: its start-up script is a file too (?script), so the CSP needs no inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
]
