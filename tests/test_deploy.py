"""docker-compose.yml, the Dockerfile and .ci/run, checked without Docker (it
cannot run in CI): the compose file's structure, that every command names a
module or management command that exists, and that every variable it sets is
one settings.py reads."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()
COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_TEXT)
SERVICES: dict[str, Any] = COMPOSE["services"]
APP_SERVICES = ("migrate", "web", "worker", "beat")


def _settings_env_names() -> set[str]:
    source = (ROOT / "leaderboard" / "settings.py").read_text()
    return set(re.findall(r"env_(?:str|bool|int|float|list)\(\s*\"([A-Z0-9_]+)\"", source))


def _argv(service: dict[str, Any]) -> list[str]:
    command = service["command"]
    return command if isinstance(command, list) else command.split()


def _module_exists(dotted: str) -> bool:
    return importlib.util.find_spec(dotted) is not None


def test_it_defines_the_services_a_deployment_needs():
    assert set(SERVICES) == {"postgres", "redis", "migrate", "web", "worker", "beat"}
    assert SERVICES["postgres"]["image"] == "postgres:16"
    assert SERVICES["redis"]["image"] == "redis:7"
    assert "pgdata:/var/lib/postgresql/data" in SERVICES["postgres"]["volumes"]
    assert "pgdata" in COMPOSE["volumes"]


@pytest.mark.parametrize("name", ["postgres", "redis"])
def test_the_data_services_have_healthchecks(name):
    check = SERVICES[name]["healthcheck"]
    probe = " ".join(check["test"])
    assert ("pg_isready" if name == "postgres" else "redis-cli ping") in probe
    assert check["retries"] >= 3


def test_migrate_runs_once_before_the_app_services_start():
    migrate = SERVICES["migrate"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    script = " ".join(_argv(migrate))
    assert "manage.py migrate --noinput" in script
    assert "manage.py import_published" in script
    for name in ("web", "worker", "beat"):
        assert SERVICES[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert SERVICES[name]["depends_on"]["postgres"] == {"condition": "service_healthy"}
        assert SERVICES[name]["depends_on"]["redis"] == {"condition": "service_healthy"}


def test_the_management_commands_compose_runs_exist():
    script = " ".join(_argv(SERVICES["migrate"]))
    named = set(re.findall(r"manage\.py (\w+)", script)) | {"collectstatic"}
    missing = named - set(get_commands())
    assert not missing, f"compose/Dockerfile run management commands that do not exist: {missing}"


def test_web_serves_the_wsgi_app_under_gunicorn_on_all_interfaces():
    argv = _argv(SERVICES["web"])
    assert argv[0] == "gunicorn"
    module, _, attribute = argv[1].partition(":")
    assert _module_exists(module)
    assert attribute == "application"
    assert "--bind=0.0.0.0:8000" in argv
    assert SERVICES["web"]["ports"] == ["8000:8000"]


def test_worker_and_beat_run_the_project_celery_app():
    worker, beat = _argv(SERVICES["worker"]), _argv(SERVICES["beat"])
    assert worker[:4] == ["celery", "-A", "leaderboard", "worker"]
    assert worker[worker.index("-Q") + 1] == "celery,default"
    assert beat[:4] == ["celery", "-A", "leaderboard", "beat"]
    assert "--scheduler=django_celery_beat.schedulers:DatabaseScheduler" in beat
    assert _module_exists("leaderboard.celery")
    assert _module_exists("django_celery_beat.schedulers")


def test_app_services_configure_production_through_variables_settings_reads():
    known = _settings_env_names()
    for name in APP_SERVICES:
        env = SERVICES[name]["environment"]
        assert set(env) <= known, f"{name} sets variables settings.py ignores: {set(env) - known}"
        assert env["DEBUG"] == "false"
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379/")
        assert "ALLOWED_HOSTS" in env
    # The secret comes from .env or the shell; compose refuses to start without it.
    assert re.search(r"SECRET_KEY: \$\{SECRET_KEY:\?[^}]+\}", COMPOSE_TEXT)


def test_the_database_url_matches_the_postgres_service():
    pg_env = SERVICES["postgres"]["environment"]
    url = SERVICES["web"]["environment"]["DATABASE_URL"]
    assert url.startswith(f"postgres://{pg_env['POSTGRES_USER']}:")
    assert url.endswith(f"@postgres:5432/{pg_env['POSTGRES_DB']}")


def test_the_commented_rig_worker_example_is_valid_compose():
    block = re.search(r"# BEGIN rig-worker example\n(.*?)\n\s*# END rig-worker example", COMPOSE_TEXT, re.S)
    assert block is not None
    uncommented = "\n".join(line.split("# ", 1)[1] for line in block.group(1).splitlines())
    rig = yaml.safe_load(uncommented)["rig-worker"]
    argv = rig["command"]
    assert argv[:4] == ["celery", "-A", "runners.celery_app", "worker"]
    assert _module_exists("runners.celery_app")
    queue = argv[argv.index("-Q") + 1]
    assert queue == f"rig.{rig['environment']['RIGBOARD_RIG']}"
    assert "--pool=solo" in argv
    # Only what the rig's Celery app reads; no database URL or SECRET_KEY on a rig.
    # runners/env.py is the rig side's one reader of its environment (RigEnv.read: the worker's part).
    read = set(re.findall(r"env_\w+\(\"(RIGBOARD_[A-Z_]+)\"", (ROOT / "runners" / "env.py").read_text()))
    assert set(rig["environment"]) <= read
    assert {"RIGBOARD_BROKER_URL", "RIGBOARD_URL", "RIGBOARD_TOKEN"} <= set(rig["environment"])
    assert rig["depends_on"]["web"] == {"condition": "service_started"}
    assert rig["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]


def test_the_dockerfile_installs_pinned_requirements_and_runs_as_a_non_root_user():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert dockerfile.startswith("# ") and "FROM python:3.11-slim" in dockerfile
    assert "pip install -r requirements.txt" in dockerfile
    users = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r"DEBUG=false SECRET_KEY=\S+ \\\n\s+python manage.py collectstatic --noinput", dockerfile)
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        assert not requirement or "==" in requirement, f"unpinned runtime requirement: {requirement}"


def test_the_docker_context_leaves_out_local_state():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".env", ".venv", "*.sqlite3", "staticfiles"} <= ignored


def test_collectstatic_works_with_the_production_storage(tmp_path):
    # What the Dockerfile runs at build time, into a scratch directory.
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL"}}
    env.update(DEBUG="false", SECRET_KEY="collectstatic-only-not-a-secret")
    code = (
        "import django, sys\n"
        "from django.conf import settings\n"
        "from django.core.management import call_command\n"
        "django.setup()\n"
        f"settings.STATIC_ROOT = {str(tmp_path)!r}\n"
        "call_command('collectstatic', '--noinput', verbosity=0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "leaderboard.settings"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "staticfiles.json").exists()
    assert list(tmp_path.glob("admin/css/base.*.css"))


def test_ci_script_is_valid_bash():
    result = subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_make_pytest_fails_with_a_clear_message_when_no_tests_are_collected():
    result = subprocess.run(
        ["make", "--no-print-directory", "pytest", "PYTEST_ARGS=-q -k no_test_has_this_name tests/test_deploy.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "pytest collected no tests (exit code 5)" in result.stderr
    assert f"test artifacts: {ROOT}/test-artifacts" in result.stdout


def test_make_demo_serves_static_files_compressed(tmp_path):
    """`make demo` collects the static files and WhiteNoise serves them gzip-compressed
    (RIGBOARD_STATIC_COLLECTED): plotly-basic is 1.2 MB as written, a fraction of it on
    the wire. Oracle: gzip's own decompression gives back the file in static/."""
    makefile = (ROOT / "Makefile").read_text()
    demo = makefile.split("\ndemo: install demo-data\n", 1)[1].split("\n\n", 1)[0]
    assert "collectstatic --noinput" in demo and "runserver --nostatic" in demo
    assert "demo: export RIGBOARD_STATIC_COLLECTED ?= true" in makefile
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL"}}
    env.update(DEBUG="true", RIGBOARD_STATIC_COLLECTED="true", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    code = (
        "import django, gzip, json\n"
        "from django.conf import settings\n"
        "from django.core.management import call_command\n"
        "django.setup()\n"
        f"settings.STATIC_ROOT = {str(tmp_path / 'static')!r}\n"
        "call_command('collectstatic', '--noinput', verbosity=0)\n"
        "from django.templatetags.static import static\n"
        "from django.test import Client\n"
        "url = static('vendor/plotly-basic-4.1.1.min.js')\n"
        "response = Client().get(url, HTTP_ACCEPT_ENCODING='gzip, deflate')\n"
        "body = b''.join(response.streaming_content)\n"
        "encoding = response.get('Content-Encoding')\n"
        "plain = len(gzip.decompress(body)) if encoding else len(body)\n"
        "print(json.dumps({'url': url, 'status': response.status_code, 'encoding': encoding,\n"
        "    'wire': len(body), 'plain': plain}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "leaderboard.settings"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    served = json.loads(result.stdout.strip().splitlines()[-1])
    source = (ROOT / "static" / "vendor" / "plotly-basic-4.1.1.min.js").stat().st_size
    assert served["status"] == 200 and served["encoding"] == "gzip", served
    assert served["plain"] == source and served["wire"] < source / 2, served
