"""The default ranking under a filter naming several model files reads each file's first
runs of the page (``filters.model_rank_window``) and shows what ranking every run shows:
every page, files' runs interleaved, ties across files broken by run id."""

from __future__ import annotations

import pytest
from django.db.models import QuerySet
from django.http import QueryDict

from leaderboard.boards.filters import (
    LeaderboardFilterForm,
    chosen_model_files,
    filter_options,
    model_rank_window,
    runs_filter,
)
from leaderboard.results.models import Run, RunStatus
from tests.fixtures.board_pages import pages, plain_order

pytestmark = pytest.mark.django_db

QUERY = "model=qwen&sort=-decode"


@pytest.fixture
def model_runs(board_run) -> list[Run]:
    runs = []
    # Three matching files (decode t/s interleaved, a tie across two files) and one that does not match.
    for i, (model, tps) in enumerate(
        [("Qwen-A", 100), ("Qwen-B", 130), ("Qwen-C", 90), ("Qwen-A", 120), ("Qwen-B", 120), ("Qwen-A", 80)]
        + [("Qwen-C", 125), ("Llama-D", 200), ("Qwen-B", 60), ("Qwen-C", 120)]
    ):
        runs.append(board_run(tps=[float(tps)], model=model, rig=f"rig-{i % 3}"))
    return runs


@pytest.mark.parametrize("per_page", [1, 2, 4])
def test_every_page_of_a_ranking_over_several_model_files_shows_the_plain_order(model_runs, per_page) -> None:
    reference = plain_order(QUERY)
    assert len(reference) == len(model_runs) - 1
    shown = pages(QUERY, per_page=per_page)
    assert [run for page in shown for run in page] == reference
    # The window kept each file's first per_page runs (3 files of 3 runs): it left runs
    # out where per_page < 3 (the check above would pass without one).
    form = LeaderboardFilterForm(QueryDict(QUERY), options=filter_options())
    assert form.is_valid(), form.errors
    files = chosen_model_files(form.cleaned_data)
    assert files is not None and len(files) == 3

    def runs_of(model_files: list[int]) -> QuerySet[Run]:
        return runs_filter(Run.objects.filter(status=RunStatus.FINISHED), form.cleaned_data, model_files=model_files)

    window = model_rank_window(runs_of(files), lambda model_file: runs_of([model_file]), files, rows=per_page)
    assert window.count() == 3 * min(per_page, 3)


def test_the_ranking_breaks_a_tie_across_model_files_by_run_id(model_runs) -> None:
    tied = [run.pk for run in model_runs if run.decode_tokens_per_s_mean == 120.0]
    assert len(tied) == 3
    reference = plain_order(QUERY)
    assert [pk for pk in reference if pk in tied] == sorted(tied, reverse=True)
