"""Where the service keeps its bare mirrors of the repositories subscriptions follow
(bisection walks commit ranges in them; the report reads commit subjects)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.conf import settings


def mirror_dir(repo_url: str) -> Path:
    """Return where the service keeps its bare mirror of ``repo_url``."""
    return Path(settings.RIGBOARD_REPO_CACHE_DIR) / hashlib.sha256(repo_url.encode()).hexdigest()[:16]
