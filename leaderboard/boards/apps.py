from django.apps import AppConfig


class BoardsConfig(AppConfig):
    name = "leaderboard.boards"
    label = "boards"
    default_auto_field = "django.db.models.BigAutoField"
