"""Migration operations for indexes only PostgreSQL can build."""

from __future__ import annotations

from typing import Any

from django.db import migrations


class PostgresOnlyAddIndex(migrations.AddIndex):
    """AddIndex that creates the index on PostgreSQL and nothing elsewhere.

    The leaderboard's ``NULLS LAST`` index is a PostgreSQL speed-up; SQLite (the
    embedded default `make demo` runs on) cannot build it and needs none at demo
    size. The migration state is the same everywhere, so makemigrations sees no
    change. A later RemoveIndex of such an index must be PostgreSQL-only too."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
