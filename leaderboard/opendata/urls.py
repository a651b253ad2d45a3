"""The open data: /data/ (the data card) and /data/files/<dump or latest>/<file>."""

from django.urls import path

from leaderboard.opendata import views

app_name = "opendata"

urlpatterns = [
    path("", views.data_page, name="data"),
    path("files/<str:dump>/<str:filename>", views.data_file, name="file"),
]
