"""/api/llama-bench/: llama-bench output files."""

from __future__ import annotations

from django.urls import path

from leaderboard.intake.api import LlamaBenchImportApi

app_name = "intake-api"

urlpatterns = [
    path("", LlamaBenchImportApi.as_view(), name="llama-bench-import"),
]
