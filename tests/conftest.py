"""Shared fixtures live in tests/fixtures/, one module per area, so each area
owns its own; they are registered here."""

pytest_plugins = [
    "tests.fixtures.data",
    "tests.fixtures.boards",
    "tests.fixtures.browser",
    "tests.fixtures.api",
    "tests.fixtures.celery_worker",
    "tests.fixtures.llama",
    "tests.fixtures.regressions",
]
