"""Settings come from the environment only: safe local defaults, loud failures
on bad values, and a production configuration that ``check --deploy`` passes.

Each configuration is loaded in a fresh interpreter, because settings.py is
read once per process."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from leaderboard import settings as settings_module

ROOT = Path(__file__).resolve().parent.parent

# Everything settings.py may read, cleared so the developer's shell or CI does
# not leak into the configuration under test.
_CONFIG_VARS = (
    # Set for the session by the browser fixture (Playwright's sync API runs an
    # event loop); a deployment never has it.
    "DJANGO_ALLOW_ASYNC_UNSAFE",
    "DATABASE_URL",
    "DATABASE_JIT",
    "DATABASE_PREPARE_THRESHOLD",
    "CELERY_BROKER_URL",
    "REDIS_URL",
    "CELERY_RESULT_BACKEND",
    "SECRET_KEY",
    "DEBUG",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
)


def _env(*, debug_default: str | None = "true", **overrides: str) -> dict[str, str]:
    """The environment for a fresh interpreter: DEBUG on, as `make demo` and the
    tests set it, unless ``debug_default`` is None (nothing set: the default)."""
    env = {k: v for k, v in os.environ.items() if k not in _CONFIG_VARS and not k.startswith("RIGBOARD_")}
    env["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings"
    if debug_default is not None:
        env["DEBUG"] = debug_default
    env.update(overrides)
    return env


def _load(*, debug_default: str | None = "true", **overrides: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import json\n"
        "from leaderboard import settings as s\n"
        "print(json.dumps({'engine': s.DATABASES['default']['ENGINE'], 'name': str(s.DATABASES['default']['NAME']),"
        " 'options': s.DATABASES['default'].get('OPTIONS', {}),"
        " 'eager': s.CELERY_TASK_ALWAYS_EAGER, 'broker': s.CELERY_BROKER_URL, 'debug': s.DEBUG,"
        " 'hosts': s.ALLOWED_HOSTS, 'max_samples': s.RIGBOARD_MAX_SAMPLES,"
        " 'alert_attempts': s.RIGBOARD_ALERT_MAX_ATTEMPTS, 'repo_cache': str(s.RIGBOARD_REPO_CACHE_DIR)}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=_env(debug_default=debug_default, **overrides),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _loaded(**overrides: str) -> dict:
    result = _load(**overrides)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_without_database_url_it_uses_the_sqlite_file_next_to_manage_py():
    loaded = _loaded()
    assert loaded["engine"] == "django.db.backends.sqlite3"
    assert loaded["name"] == str(ROOT / "db.sqlite3")


def test_with_database_url_it_uses_postgresql():
    loaded = _loaded(DATABASE_URL="postgres://rb:pw@db.example:5433/rigboard")
    assert loaded["engine"] == "django.db.backends.postgresql"
    assert loaded["name"] == "rigboard"


def test_postgresql_connections_do_not_jit_compile_unless_asked():
    url = "postgres://rb:pw@db.example:5433/rigboard"
    assert _loaded(DATABASE_URL=url)["options"]["options"] == "-c jit=off"
    assert "options" not in _loaded(DATABASE_URL=url, DATABASE_JIT="true")["options"]
    assert "options" not in _loaded()["options"]  # SQLite has no JIT


def test_postgresql_prepares_the_prepared_cursors_statements_unless_told_not_to():
    url = "postgres://rb:pw@db.example:5433/rigboard"
    assert _loaded(DATABASE_URL=url)["options"]["prepare_threshold"] == 5
    assert _loaded(DATABASE_URL=url, DATABASE_PREPARE_THRESHOLD="2")["options"]["prepare_threshold"] == 2
    # 0 for a pooler that cannot keep a prepared statement: Django's own default, never.
    assert _loaded(DATABASE_URL=url, DATABASE_PREPARE_THRESHOLD="0")["options"]["prepare_threshold"] is None
    assert "prepare_threshold" not in _loaded()["options"]  # SQLite prepares nothing


@pytest.mark.django_db
def test_the_sites_own_connection_has_jit_off():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


def test_without_a_broker_celery_runs_tasks_in_process():
    loaded = _loaded()
    assert loaded["eager"] is True
    assert loaded["broker"] == ""


def test_with_a_broker_celery_sends_tasks_to_it():
    assert _loaded(CELERY_BROKER_URL="redis://127.0.0.1:6379/3") == {
        **_loaded(),
        "eager": False,
        "broker": "redis://127.0.0.1:6379/3",
    }


def test_redis_url_is_the_broker_when_no_celery_broker_url_is_set():
    loaded = _loaded(REDIS_URL="redis://cache:6379/0")
    assert loaded["broker"] == "redis://cache:6379/0"
    assert loaded["eager"] is False


def test_debug_is_off_unless_the_environment_turns_it_on():
    # Started with no settings at all, the service shows no tracebacks: DEBUG
    # is off, so it refuses to start without a SECRET_KEY...
    result = _load(debug_default=None)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
    # ...and with one it runs with DEBUG off.
    assert _loaded(debug_default=None, SECRET_KEY=secrets.token_urlsafe(50))["debug"] is False
    assert _loaded(DEBUG="true")["debug"] is True


def test_it_refuses_to_start_with_debug_false_and_no_secret_key():
    result = _load(DEBUG="false")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SECRET_KEY must be set" in result.stderr


def test_a_bad_boolean_in_the_environment_stops_startup_naming_the_variable():
    result = _load(DEBUG="maybe")
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr
    assert "'maybe'" in result.stderr


def test_a_bad_integer_in_the_environment_stops_startup_naming_the_variable():
    result = _load(RIGBOARD_MAX_SAMPLES="lots")
    assert result.returncode != 0
    assert "RIGBOARD_MAX_SAMPLES must be an integer" in result.stderr


def test_a_good_integer_in_the_environment_is_used():
    assert _loaded(RIGBOARD_MAX_SAMPLES="12")["max_samples"] == 12


def test_the_regression_settings_come_from_the_environment_with_local_defaults():
    assert _loaded()["alert_attempts"] == 5
    assert _loaded()["repo_cache"] == str(ROOT / ".cache" / "repos")
    loaded = _loaded(RIGBOARD_ALERT_MAX_ATTEMPTS="2", RIGBOARD_REPO_CACHE_DIR="/srv/rigboard/repos")
    assert (loaded["alert_attempts"], loaded["repo_cache"]) == (2, "/srv/rigboard/repos")


def test_an_alert_that_is_never_tried_stops_startup():
    result = _load(RIGBOARD_ALERT_MAX_ATTEMPTS="0")
    assert result.returncode != 0
    assert "RIGBOARD_ALERT_MAX_ATTEMPTS must be at least 1" in result.stderr


def test_local_defaults_allow_only_loopback_hosts():
    assert _loaded()["hosts"] == ["localhost", "127.0.0.1", "[::1]"]
    assert _loaded(ALLOWED_HOSTS=" a.example , b.example ,")["hosts"] == ["a.example", "b.example"]


@pytest.mark.parametrize(
    ("helper", "raw", "message"),
    [
        (settings_module.env_bool, "yes please", "RB_TEST_VAR must be a boolean (true/false), got 'yes please'"),
        (settings_module.env_int, "4.5", "RB_TEST_VAR must be an integer, got '4.5'"),
        (settings_module.env_float, "fast", "RB_TEST_VAR must be a number, got 'fast'"),
    ],
)
def test_env_helpers_name_the_variable_and_the_bad_value(monkeypatch, helper, raw, message):
    monkeypatch.setenv("RB_TEST_VAR", raw)
    with pytest.raises(ImproperlyConfigured) as excinfo:
        helper("RB_TEST_VAR", 1)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("helper", "raw", "expected"),
    [
        (settings_module.env_bool, "OFF", False),
        (settings_module.env_bool, " True ", True),
        (settings_module.env_int, "42", 42),
        (settings_module.env_float, "0.25", 0.25),
        (settings_module.env_int, "", 7),
    ],
)
def test_env_helpers_parse_good_values_and_default_on_empty(monkeypatch, helper, raw, expected):
    monkeypatch.setenv("RB_TEST_VAR", raw)
    assert helper("RB_TEST_VAR", 7) == expected


def test_production_settings_pass_check_deploy_without_warnings():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_env(DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="example.com"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_catches_a_weak_secret_key():
    # Guards the test above: the same command does fail on a bad configuration.
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_env(DEBUG="false", SECRET_KEY="short", ALLOWED_HOSTS="example.com"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "security.W009" in result.stdout + result.stderr
