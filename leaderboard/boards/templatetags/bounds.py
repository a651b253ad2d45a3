"""Template tags of the memory-bandwidth bound (``{% load bounds %}``): the texts are
defined once in ../bound_text.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.safestring import SafeString

from leaderboard.boards import bound_text

register = template.Library()

register.simple_tag(bound_text.bound_sentence)
register.simple_tag(bound_text.prefill_sentence)
register.simple_tag(bound_text.outlier_note)
register.simple_tag(bound_text.headroom_note)
register.filter("bound_details", bound_text.bound_details)


@register.simple_tag
def bound_cell(bounds: Mapping[int, Any] | None, run_id: int) -> SafeString:
    """Return the leaderboard's gauge cell of run ``run_id`` from the page's bounds."""
    return bound_text.gauge_cell((bounds or {}).get(run_id))
