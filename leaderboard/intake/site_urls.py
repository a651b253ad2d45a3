"""/llama-bench/: the llama-bench pages."""

from __future__ import annotations

from django.urls import path

from leaderboard.intake import views

app_name = "intake"

urlpatterns = [
    path("", views.llama_bench_board, name="llama-bench"),
    path("compare/", views.llama_bench_compare, name="llama-bench-compare"),
]
