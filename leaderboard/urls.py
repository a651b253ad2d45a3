"""URL map: the site at /, the REST API under /api/, the admin under /admin/."""

from django.contrib import admin
from django.urls import include, path

from leaderboard.boards import views as board_views

handler404 = "leaderboard.boards.views.page_not_found"
handler500 = "leaderboard.boards.views.server_error"

urlpatterns = [
    path("favicon.ico", board_views.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("api/", include("leaderboard.results.api.urls")),
    path("api/jobs/", include("leaderboard.jobs.urls")),
    path("api/llama-bench/", include("leaderboard.intake.urls")),
    path("api/campaigns/", include("leaderboard.campaigns.urls")),
    path("campaigns/", include("leaderboard.campaigns.page_urls")),
    path("regressions/", include("leaderboard.regressions.urls")),
    path("llama-bench/", include("leaderboard.intake.site_urls")),
    path("accounts/", include("allauth.urls")),
    path("me/", include("leaderboard.intake.owner_urls")),
    path("data/", include("leaderboard.opendata.urls")),
    path("", include("leaderboard.boards.urls")),
]

# A URL no route matches under /api/ gets a JSON 404 like every other API error.
