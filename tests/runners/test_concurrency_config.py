"""The concurrency options of the rig config: bad values are refused at load,
naming the field, before anything is launched."""

from __future__ import annotations

import pytest

from runners.config import ConfigError, RigConfig


def _spec(levels, *, requests=4, server=None, attach=None):
    spec = {"workload": {"concurrency_levels": levels, "requests_per_level": requests}}
    if attach is not None:
        spec["attach"] = attach
    else:
        spec["server"] = {"model": "/models/m.gguf", **(server if server is not None else {"parallel": 4})}
    return spec


def _error(spec) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        RigConfig.from_mapping(spec)
    return caught.value


def test_it_takes_levels_up_to_the_servers_parallel_slots():
    config = RigConfig.from_mapping(_spec([1, 2, 4]))
    assert config.workload.concurrency_levels == [1, 2, 4] and config.workload.requests_per_level == 4


def test_a_level_of_zero_is_refused_naming_it():
    error = _error(_spec([1, 0, 4]))
    assert error.field == "workload.concurrency_levels.1" and "at least 1" in error.reason


def test_a_level_above_the_launched_servers_parallel_is_refused():
    error = _error(_spec([1, 2, 8], requests=8))
    assert error.field == "server.parallel"
    assert "highest concurrency level 8" in error.reason and "it is 4" in error.reason


def test_a_launched_server_without_parallel_is_refused():
    error = _error(_spec([1, 2], server={}))
    assert error.field == "server.parallel" and "not set" in error.reason


def test_parallel_in_extra_args_counts():
    RigConfig.from_mapping(_spec([1, 8], requests=8, server={"extra_args": ["-np", "8"]}))
    error = _error(_spec([1, 8], requests=8, server={"parallel": 8, "extra_args": ["--parallel", "2"]}))
    assert error.field == "server.parallel" and "it is 2" in error.reason


def test_attach_mode_does_not_check_the_servers_slots():
    config = RigConfig.from_mapping(_spec([1, 16], requests=16, attach={"url": "http://127.0.0.1:8000"}))
    assert config.workload.concurrency_levels == [1, 16]


@pytest.mark.parametrize("requests", [-1, 0])
def test_a_request_count_below_one_is_refused(requests):
    error = _error(_spec([], requests=requests))
    assert error.field == "workload.requests_per_level" and f"got {requests}" in error.reason


def test_fewer_requests_than_the_highest_level_is_refused():
    error = _error(_spec([1, 4], requests=2))
    assert error.field == "workload.requests_per_level" and "highest concurrency level (4)" in error.reason


def test_a_repeated_level_and_a_non_integer_level_are_refused():
    assert _error(_spec([2, 2])).field == "workload.concurrency_levels"
    assert _error(_spec([1, "4"])).field == "workload.concurrency_levels.1"
