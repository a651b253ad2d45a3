"""Workload × server → warmup, then N measured repetitions → samples.

A repetition that fails stops the suite: the result says ``failed`` with the
repetitions measured so far and why (a dead server's exit, a hang's timeout,
the server's log tail is added by the pipeline).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import requests

from runners.harness.measure import Sample, measure_stream, scrape_spec_counters, spec_counter_delta
from runners.harness.outputcheck import check_output
from runners.harness.power import PowerReading
from runners.harness.power_source import PowerSource
from runners.harness.server import ServerHandle
from runners.harness.workload import Workload

Progress = Callable[[str, int, int], None]
OnSample = Callable[[Sample], None]


@dataclass
class SuiteResult:
    samples: list[Sample] = field(default_factory=list)
    warmups: list[Sample] = field(default_factory=list)
    status: str = "finished"  # finished | failed (| aborted, set by the pipeline)
    failure_reason: str = ""


def apply_power(sample: Sample, reading: PowerReading) -> None:
    """Copy a window's power figures onto the sample (None without NVML)."""
    sample.energy_j = reading.energy_j
    sample.power_w_mean = reading.power_w_mean
    sample.power_w_peak = reading.power_w_peak
    sample.vram_peak_mib = reading.vram_peak_mib
    sample.power = reading.as_dict()


def measure_once(
    server: ServerHandle,
    workload: Workload,
    *,
    index: int,
    monitor: PowerSource,
    session: requests.Session,
) -> Sample:
    """Run one repetition with power sampling and the output check; never raises for the server's faults."""
    # vLLM gives no per-request draft counts; its cumulative counters, read
    # around a single-stream request, give them.
    counters = server.api == "vllm"
    before = scrape_spec_counters(session, server.base_url, server.headers) if counters else None
    with monitor.window() as window:
        sample = measure_stream(
            session,
            f"{server.base_url}/v1/chat/completions",
            server.adapt(workload.chat_body(model=server.model_id)),
            index=index,
            timeout_s=workload.request_timeout_s,
            disagreement_pct=workload.disagreement_pct,
            headers=server.headers,
            server_timings=server.server_timings,
        )
    apply_power(sample, window.reading)
    if counters and sample.draft_n is None:
        after = scrape_spec_counters(session, server.base_url, server.headers)
        sample.draft_n, sample.draft_n_accepted, why = spec_counter_delta(before, after)
        if why:
            sample.flags.append(f"draft_counts_unavailable:{why}")
    if sample.ok:
        verdict = check_output(sample.text)
        sample.output_ok = verdict.ok
        sample.flags.extend(verdict.flags)
    return sample


def failure_reason(server: ServerHandle, sample: Sample, what: str) -> str:
    """Return why ``what`` (e.g. 'repetition 3') failed, naming a dead or hung server."""
    alive, why = server.alive()
    # A dropped connection usually means the process is going down; give it a
    # moment so the reason names the exit rather than the symptom.
    deadline = time.monotonic() + 3.0
    while alive and server.managed and sample.error_kind == "connection" and time.monotonic() < deadline:
        time.sleep(0.1)
        alive, why = server.alive()
    if not alive:
        return f"{what}: {why} ({sample.error})"
    if sample.error_kind == "timeout":
        return f"{what}: no answer in time, the server hung ({sample.error})"
    return f"{what}: {sample.error}"


def run_suite(
    server: ServerHandle,
    workload: Workload,
    *,
    monitor: PowerSource,
    session: requests.Session | None = None,
    progress: Progress | None = None,
    on_sample: OnSample | None = None,
    result: SuiteResult | None = None,
) -> SuiteResult:
    """Return the warmups and the measured samples; status 'failed' at the first failed repetition.

    ``on_sample`` is called with each measured (not warmup) sample as soon as it
    is taken, and ``progress`` after each repetition; an exception either raises
    (the service ended the run) stops the suite after that repetition and
    propagates. Samples are added to ``result`` (a new one if None) as they come,
    before ``on_sample``, so a caller interrupted mid-suite (a time limit,
    Ctrl-C, the service) still has them."""
    own_session = session is None
    http = session or requests.Session()
    result = result if result is not None else SuiteResult()
    total = workload.warmup + workload.repetitions
    try:
        for step in range(total):
            is_warmup = step < workload.warmup
            index = step + 1 if is_warmup else step - workload.warmup + 1
            what = f"warmup {index}" if is_warmup else f"repetition {index}"
            sample = measure_once(server, workload, index=index, monitor=monitor, session=http)
            if not sample.ok:
                result.status = "failed"
                result.failure_reason = failure_reason(server, sample, what)
                return result
            (result.warmups if is_warmup else result.samples).append(sample)
            if on_sample is not None and not is_warmup:
                on_sample(sample)
            if progress is not None:
                progress("warmup" if is_warmup else "repetitions", step + 1, total)
    finally:
        if own_session:
            http.close()
    return result
