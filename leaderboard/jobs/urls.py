"""Routes under /api/jobs/."""

from django.urls import path

from leaderboard.jobs import api

urlpatterns = [
    path("", api.JobListCreateApi.as_view(), name="jobs-list"),
    path("<int:job_id>/", api.JobDetailApi.as_view(), name="jobs-detail"),
    path("<int:job_id>/status/", api.JobStatusApi.as_view(), name="jobs-status"),
    path("<int:job_id>/run-again/", api.JobRunAgainApi.as_view(), name="jobs-run-again"),
]
