"""The limits' settings: rates and the cache come from the environment, bad values stop start-up."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.test_settings import ROOT, _env


def _load(**overrides: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import json\nfrom leaderboard import settings as s\n"
        "print(json.dumps({'cache': s.CACHES['default'], 'rates': s.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']}))\n"
    )
    env = {k: v for k, v in _env(**overrides).items() if k != "CACHE_URL" or "CACHE_URL" in overrides}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_a_bad_rate_stops_startup_naming_the_variable():
    result = _load(RIGBOARD_THROTTLE_RIG_WRITES="lots")
    assert result.returncode != 0
    assert "RIGBOARD_THROTTLE_RIG_WRITES must look like 120/min" in result.stderr


def test_rates_default_and_off():
    loaded = json.loads(_load(RIGBOARD_THROTTLE_ACCOUNT_WRITES="off").stdout)
    assert loaded["rates"] == {"rig_token": "120/min", "account": None}


def test_redis_url_puts_the_cache_on_redis_and_a_bad_cache_url_stops_startup():
    cache = json.loads(_load(REDIS_URL="redis://127.0.0.1:6379/3").stdout)["cache"]
    assert cache == {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:6379/3"}
    assert "locmem" in json.loads(_load().stdout)["cache"]["BACKEND"]
    result = _load(CACHE_URL="memcached://x")
    assert result.returncode != 0 and "CACHE_URL must be a redis:// URL" in result.stderr


def test_social_providers_are_optional_and_named_in_the_environment():
    code = "from leaderboard import settings as s\nprint(','.join(a for a in s.INSTALLED_APPS if 'social' in a))\n"
    run = lambda **o: subprocess.run(  # noqa: E731
        [sys.executable, "-c", code], cwd=ROOT, env=_env(**o), capture_output=True, text=True, timeout=60
    )
    assert run().stdout.strip() == ""
    assert run(RIGBOARD_SOCIAL_PROVIDERS="github").stdout.strip() == (
        "allauth.socialaccount,allauth.socialaccount.providers.github"
    )
    bad = run(RIGBOARD_SOCIAL_PROVIDERS="git hub")
    assert bad.returncode != 0 and "RIGBOARD_SOCIAL_PROVIDERS" in bad.stderr
