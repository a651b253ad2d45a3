"""URL map: the site at /, the REST API under /api/, the admin under /admin/."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("leaderboard.results.api.urls")),
    path("api/jobs/", include("leaderboard.jobs.urls")),
    path("regressions/", include("leaderboard.regressions.urls")),
    path("", include("leaderboard.boards.urls")),
]

# A URL no route matches under /api/ gets a JSON 404 like every other API error.
handler404 = "leaderboard.results.api.errors.page_not_found"
