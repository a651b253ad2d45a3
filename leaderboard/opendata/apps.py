from django.apps import AppConfig


class OpendataConfig(AppConfig):
    name = "leaderboard.opendata"
    label = "opendata"
    verbose_name = "Open data dumps"
