"""/me/: a signed-in owner's rigs."""

from __future__ import annotations

from django.urls import path

from leaderboard.intake import owner_views

app_name = "owners"

urlpatterns = [
    path("rigs/", owner_views.my_rigs, name="my-rigs"),
    path("rigs/new/", owner_views.rig_register, name="rig-register"),
    path("rigs/<int:rig_id>/edit/", owner_views.rig_edit, name="rig-edit"),
    path("rigs/<int:rig_id>/tokens/", owner_views.token_issue, name="token-issue"),
    path("rigs/<int:rig_id>/tokens/<int:token_id>/revoke/", owner_views.token_revoke, name="token-revoke"),
    path("rigs/<int:rig_id>/llama-bench/", owner_views.llama_bench_upload, name="llama-bench-upload"),
]
