"""The leaderboard's filters and sort keys, read from the query string so a
view can be shared by its URL; one module per layer:

- ``querystring``: which sort keys and page sizes a URL may name (plain values);
- ``form``: the filter form and the values its selects offer;
- ``query``: the runs a valid form narrows to;
- ``ordering``: each sort by the value its column shows, and the windows that
  let a page of an unindexed sort read only the runs that can reach it.

The names below are the package's public face, imported from here."""

from leaderboard.boards.filters.form import FilterOptions, LeaderboardFilterForm, filter_options
from leaderboard.boards.filters.ordering import (
    NEVER_NULL,
    WINDOWED_SORTS,
    cost_sort_window,
    date_sort_window,
    model_rank_window,
    runs_sort,
    shown_value,
    sort_window,
)
from leaderboard.boards.filters.query import (
    best_of_each_configuration,
    chosen_model_files,
    configuration_groups,
    rigs_only_with,
    runs_filter,
)
from leaderboard.boards.filters.querystring import (
    DEFAULT_SORT,
    PER_PAGE_DEFAULT,
    PER_PAGE_MAX,
    SORTS,
    parse_per_page,
    parse_sort,
    ranking_sort,
)

__all__ = [
    "DEFAULT_SORT",
    "NEVER_NULL",
    "PER_PAGE_DEFAULT",
    "PER_PAGE_MAX",
    "SORTS",
    "WINDOWED_SORTS",
    "FilterOptions",
    "LeaderboardFilterForm",
    "best_of_each_configuration",
    "chosen_model_files",
    "configuration_groups",
    "cost_sort_window",
    "date_sort_window",
    "filter_options",
    "model_rank_window",
    "parse_per_page",
    "parse_sort",
    "ranking_sort",
    "rigs_only_with",
    "runs_filter",
    "runs_sort",
    "shown_value",
    "sort_window",
]
