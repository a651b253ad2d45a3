"""The words a campaign and its trials are told in, shared by the rig and the
service: the service's model choices (leaderboard.campaigns.models) are built
from these values, and the campaigns API's Literals (schema.py) list the same
ones (tests/campaigns/test_states.py checks both)."""

from __future__ import annotations

from enum import StrEnum


class TrialState(StrEnum):
    """How a measured trial ended (the service adds "running": a job in hand)."""

    COMPLETE = "complete"
    FAILED = "failed"
    INFEASIBLE = "infeasible"  # measured, but breaks a constraint
    ABORTED = "aborted"


class TrialRole(StrEnum):
    SEARCH = "search"
    # The best feasible search trial measured again with the spec's
    # confirm_repetitions; the search and its analysis never see it.
    CONFIRMATION = "confirmation"


class CampaignOrigin(StrEnum):
    """Who runs a campaign's trials: the rig's CLI (``python -m runners campaign``)
    posting each, or the service queueing each as a job (campaigns/dispatch.py)."""

    TERMINAL = "terminal"
    SERVICE = "service"
