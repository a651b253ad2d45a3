"""Shared fixtures live in tests/fixtures/, one module per area, so each area
owns its own; they are registered here."""

pytest_plugins = [
    "tests.fixtures.data",
]
