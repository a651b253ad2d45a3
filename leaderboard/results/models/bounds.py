"""Each run's decode share of its memory-bandwidth bound, stored so the leaderboard can
sort by its "Of bound" column (issue 38).

The share is computed in Python from the run, its rig and the hardware catalog
(``results/hardware/runs.py``), which no SQL can order by; stored, it is an index walk.
It sits beside the run, not on it: an update of ``results_run`` fires the run-spread
trigger (migration 0010) and would un-HOT a row with a dozen indexes, for a figure
derived from the others. ``digest`` names the catalog and the method a share was
computed by (``results/hardware/stored.bound_digest``): a share whose digest is not
today's is stale and is recomputed (``manage.py refresh_bounds``, nightly)."""

from __future__ import annotations

from django.db import models

from leaderboard.results.models.runs import Run


class RunBoundShare(models.Model):
    """A run's decode t/s ÷ its bound (0.72 for 72%), as its leaderboard cell shows it."""

    run = models.OneToOneField(Run, primary_key=True, on_delete=models.CASCADE, related_name="bound_share")
    # None: no bound (its reason is on the run page), no decode figure, or speculative
    # decoding past the single-token bound (the cell says "spec. › bound"): sorted last.
    decode_share = models.FloatField(null=True, blank=True)
    # What an estimate's peer pool reads of the run (hardware/selectors.observation_of):
    # the bound in t/s (None: no bound) and the GPU family it was computed for.
    bound_tokens_per_s = models.FloatField(null=True, blank=True)
    gpu_family = models.CharField(max_length=40, blank=True)
    # The leaderboard cell's tooltip (hardware/gauge.bound_title): where the bound comes
    # from, or why there is none; with the share, all the cell shows (issue 40).
    bound_title = models.TextField(blank=True, default="")
    # The run's engine and whether it decoded speculatively, copied from its stack and
    # configuration (neither changes for a run): a GPU page's shares per engine read
    # this table alone, where joining 5,000 runs to both took ~67 ms (issue 40).
    engine = models.CharField(max_length=32, blank=True, default="")
    speculative = models.BooleanField(default=False)
    digest = models.CharField(max_length=16)

    # The leaderboard sorted by the share walks an index and stops at the page: on
    # PostgreSQL, (decode_share DESC NULLS LAST, run_id DESC) and its ascending twin,
    # made by migration 0013 (SQLite takes no NULLS LAST in an index; the demo sorts
    # a few hundred rows).

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.decode_share}"
