"""A filter form's ``<select>`` built in Python with format_html instead of by
Django's widget templates, which render each ``<option>`` through the template
engine: with a rig select of 200 options that costs more than the page's 50 rows.

Plain reference: ``{{ bound_field }}`` (Django's ``Select`` widget).
tests/boards/test_cells_speedup.py checks the two give the same HTML up to
whitespace for valid filters. One known difference: on a value that is not a
choice, Django adds ``aria-invalid="true" aria-describedby="id_<name>_error"``;
this does not, and the leaderboard's error ``<span>`` has no such id for it to point at.

Measured 2026-11-23 (2-core VM, load average 2–4, 10k generated runs, 200 rigs;
benchmarks/site_speedups.py): the form's seven selects cost 1.5 ms of CPU here
against 8.4 ms through the widget; the leaderboard page's CPU p50 is 23.1 ms
with this and 29.4 ms with the widget (27% more). Kept (issue #10 item 2)."""

from __future__ import annotations

from typing import Any

from leaderboard.boards.speedups.html import format_html, format_html_join


def select_field(bound_field: Any) -> str:
    """Return the ``<select>`` of a choice field (``bound_field``: a BoundField), its current value selected."""
    current = bound_field.value()
    current = "" if current is None else str(current)
    options = format_html_join(
        "",
        '<option value="{}"{}>{}</option>',
        ((value, " selected" if str(value) == current else "", label) for value, label in bound_field.field.choices),
    )
    return format_html('<select name="{}" id="{}">{}</select>', bound_field.html_name, bound_field.auto_id, options)
