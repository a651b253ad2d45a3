"""The leaderboard's query string: which sort keys and page sizes a URL may name.

Plain values, no queries: an unknown sort is the default ranking, an unreadable page
size the default size (a shared URL never makes a 500)."""

from __future__ import annotations

from typing import Any

# sort key in the URL → (column label, ORDER BY expression). "-key" sorts descending.
# Each orders by the value its column shows (``shown_value``): names case-insensitively,
# the cost a row prints (electricity, else the published price), the date it prints.
SORTS: dict[str, tuple[str, str]] = {
    "decode": ("Decode t/s", "decode_tokens_per_s_mean"),
    # The stored share of the run's memory-bandwidth bound (results/hardware/stored.py).
    "bound": ("Of bound", "bound_share__decode_share"),
    "n": ("n", "n_samples"),
    "stdev": ("σ t/s", "decode_tokens_per_s_stdev"),
    "range": ("Range t/s", "decode_tokens_per_s_range"),
    "rig": ("Rig", "rig__name"),
    "gpu": ("GPUs", "gpu_sort"),
    "engine": ("Engine", "stack__engine"),
    "model": ("Model", "model_file__name"),
    "quant": ("Quant", "model_file__quantization"),
    "spec": ("Speculative", "configuration__speculative_type"),
    "accept": ("Accept %", "acceptance_pct"),
    "ctx": ("Context", "configuration__ctx_size"),
    "power": ("Power W", "power_w_mean"),
    "tpkwh": ("Tokens/kWh", "tokens_per_kwh"),
    "cost": ("$/MTok", "shown_cost"),
    "provenance": ("Provenance", "provenance"),
    "date": ("Date", "shown_date"),
}
DEFAULT_SORT = "-decode"
PER_PAGE_DEFAULT = 50
PER_PAGE_MAX = 500


def parse_sort(raw: str | None) -> str:
    """Return a known sort key (``decode`` or ``-decode``…); the default for anything else."""
    key = (raw or "").strip()
    return key if key.lstrip("-") in SORTS else DEFAULT_SORT


# A filter that fixes the value a sort's column shows (one rig, one engine…): every
# row ties on it, so that sort orders as the default ranking does.
_FIXED_BY = {"rig": "rig", "engine": "engine", "quant": "quant", "spec": "spec", "provenance": "provenance"}


def ranking_sort(sort: str, data: dict[str, Any]) -> str:
    """Return the sort to order by for ``sort`` under a valid form's ``cleaned_data``:
    the default ranking where a filter leaves one value in the sorted column (its
    tie-break, decode t/s then run id, is then the whole order), else ``sort``.

    The same rows in the same order, by a plan that fits: ``/?rig=X&sort=rig``
    ordered a busy rig's every run by its name before keeping 50 (188 ms at a
    million runs); by decode t/s it walks the rig's rank index and stops."""
    return DEFAULT_SORT if data.get(_FIXED_BY.get(sort.lstrip("-"), "")) else sort


def parse_per_page(raw: str | None) -> int:
    """Return the page size asked for, clamped to 1..PER_PAGE_MAX; the default when unreadable."""
    try:
        value = int(raw or PER_PAGE_DEFAULT)
    except ValueError:
        return PER_PAGE_DEFAULT
    return max(1, min(PER_PAGE_MAX, value))
