"""Where the service keeps its bare mirrors of the repositories subscriptions follow
(bisection walks commit ranges in them; the report reads commit subjects)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings

from leaderboard.regressions.models import BuildRecord
from runners.builds.gitrepo import commit_subject


def mirror_dir(repo_url: str) -> Path:
    """Return where the service keeps its bare mirror of ``repo_url``."""
    return Path(settings.RIGBOARD_REPO_CACHE_DIR) / hashlib.sha256(repo_url.encode()).hexdigest()[:16]


def commit_subjects(repo_url: str, commits: Iterable[str], *, rigs: Iterable[Any]) -> dict[str, str]:
    """Return the subject (first line of the message) of each of ``commits`` of
    ``repo_url``: as a build of it on one of ``rigs`` (those the viewer may see:
    a hidden rig's report shows nowhere) recorded it, in one query; else from the
    service's mirror where bisection made one; '' where neither knows it."""
    wanted = {c for c in commits if c}
    found = dict(
        BuildRecord.objects.filter(subscription__repo_url=repo_url, subscription__rig__in=rigs, commit__in=wanted)
        .exclude(subject="")
        .values_list("commit", "subject")
    )
    for commit in wanted - found.keys():
        found[commit] = commit_subject(mirror_dir(repo_url), commit)
    return found
