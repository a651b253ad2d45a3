"""The Reproduce block of a regression report: what someone upstream runs on
their own machine to see the change, with nothing of the recording machine in
it (no path, no port it happened to use).

- the source: the release's tag (or the commit) and the rig's CMake flags;
- the model: its file name, sha256 and where to get it;
- llama-server's flags, from the run's stored configuration (llama-server's
  default port, not the recording's);
- the client's request: the prompt's length in tokens and the tokens generated;
- a llama-bench line measuring the same decode without the server, and what
  it means when llama-bench shows no change.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from leaderboard.regressions.models import Verdict
from runners.builds.releases import release_number

# llama-server's own default port: a reader's server, not the recording's.
SERVER_PORT = 8080
BENCH_NOTE = (
    "llama-bench runs the model without the server: if it shows the same change, the change is in the "
    "model's compute (ggml, the backend); if it shows none, the change shows only through llama-server "
    "(its request handling, sampling or threads), and the server lines above are the reproduction."
)
# (Configuration field, llama-server flag, llama-bench flag or '' when llama-bench has none)
_FLAGS = (
    ("ctx_size", "--ctx-size", ""),
    ("threads", "--threads", "-t"),
    ("n_gpu_layers", "--n-gpu-layers", "-ngl"),
    ("batch_size", "--batch-size", "-b"),
    ("ubatch_size", "--ubatch-size", "-ub"),
    ("cache_type_k", "--cache-type-k", "-ctk"),
    ("cache_type_v", "--cache-type-v", "-ctv"),
    ("flash_attn", "--flash-attn", "-fa"),
    ("parallel", "--parallel", ""),
)


@dataclass(frozen=True)
class Reproduce:
    """The report's commands, each a line a reader can paste; ``model_*`` name
    the model file (sha256 and source '' when the run did not record them)."""

    source: list[str]
    model_file: str
    model_sha256: str
    model_source: str
    server: str
    client: str
    bench: str
    bench_note: str = BENCH_NOTE


def public_repo(repo_url: str) -> str:
    """Return ``repo_url`` where it is a URL another machine can fetch; a
    local path (a test's or the demo's repository) is named only by its folder."""
    if repo_url.startswith(("https://", "http://", "git@", "ssh://", "git://")):
        return repo_url
    return f"a local repository ({PurePath(repo_url).name or 'unnamed'})"


def _source(verdict: Verdict, where: str) -> list[str]:
    sub = verdict.build.subscription
    repo = public_repo(sub.repo_url)
    fetch = repo if repo == sub.repo_url else "<that repository>"
    if release_number(where) is not None:
        lines = [f"git clone --depth 1 --branch {where} {fetch} llama.cpp && cd llama.cpp"]
    else:
        lines = [f"git clone {fetch} llama.cpp && cd llama.cpp && git checkout {where}"]
    flags = " ".join(part for part in (sub.build_flags, "-DCMAKE_BUILD_TYPE=Release") if part)
    lines += [f"cmake -B build {flags}", "cmake --build build --target llama-server llama-bench -j"]
    return lines


def _model_source(repo: str) -> str:
    if repo.startswith(("https://", "http://")):
        return repo
    if repo.count("/") == 1 and not repo.startswith("/"):
        return f"https://huggingface.co/{repo}"
    return ""


def _config_value(config: Any, spec_server: dict[str, Any], name: str) -> Any:
    value = getattr(config, name, None) if config is not None else None
    return value if value not in (None, "") else spec_server.get(name)


def reproduce_of(verdict: Verdict, *, where: str) -> Reproduce:
    """Return the commands that reproduce ``verdict``'s candidate run at
    ``where`` (the first bad commit or release, else the candidate's)."""
    run = verdict.new_run
    spec = verdict.reference_config.spec or {}
    spec_server, workload = dict(spec.get("server") or {}), dict(spec.get("workload") or {})
    model_path = str(spec_server.get("model") or "")
    model_file = PurePath(model_path).name if model_path else f"{run.model_file.name}.gguf"
    config = run.configuration
    server = ["llama-server", "-m", model_file]
    bench = ["llama-bench", "-m", model_file]
    for name, server_flag, bench_flag in _FLAGS:
        value = _config_value(config, spec_server, name)
        if value in (None, ""):
            continue
        server += [server_flag, str(value)]
        if bench_flag:
            bench += [bench_flag, str(value)]
    # No --port: llama-server listens on its default (SERVER_PORT), which the request names.
    sample = run.samples.exclude(prompt_tokens=None).order_by("index").first()
    prompt_tokens = sample.prompt_tokens if sample is not None else None
    max_tokens = (run.workload.max_tokens if run.workload_id else None) or workload.get("max_tokens")
    request: dict[str, Any] = {
        "prompt": f"<a prompt of {prompt_tokens} tokens>" if prompt_tokens else "<the workload prompt>",
        "n_predict": max_tokens,
        "temperature": _config_value(config, workload, "temperature") or 0,
        "cache_prompt": False,
    }
    if workload.get("seed") is not None:
        request["seed"] = workload["seed"]
    client = f'curl -s "http://localhost:${{PORT:-{SERVER_PORT}}}/completion" -d {shlex.quote(json.dumps(request))}'
    repetitions = (run.workload.repetitions if run.workload_id else None) or workload.get("repetitions") or 5
    bench += ["-p", str(prompt_tokens or 0), "-n", str(max_tokens or 128), "-r", str(repetitions), "-o", "md"]
    return Reproduce(
        source=_source(verdict, where),
        model_file=model_file,
        model_sha256=run.model_file.sha256,
        model_source=_model_source(run.model_file.repo),
        server=shlex.join(server),
        client=client,
        bench=shlex.join(bench),
    )
