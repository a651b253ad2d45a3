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


class AddColumnInPlace(migrations.AddField):
    """AddField that, on SQLite, adds the column in place (``ALTER TABLE … ADD COLUMN`` with its
    constant default) instead of Django's table remake there.

    A remake builds every index of the model's state again, the PostgreSQL-only ``NULLS LAST``
    one among them (``PostgresOnlyAddIndex``), which SQLite cannot build: the embedded demo's
    migrate failed. For a NOT NULL field with a constant default; elsewhere a plain AddField."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor != "sqlite":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
            return
        model = to_state.apps.get_model(app_label, self.model_name)
        field = model._meta.get_field(self.name)
        definition, params = schema_editor.column_sql(model, field, include_default=True)
        quote = schema_editor.quote_name
        schema_editor.execute(
            f"ALTER TABLE {quote(model._meta.db_table)} ADD COLUMN {quote(field.column)} {definition}", params
        )
