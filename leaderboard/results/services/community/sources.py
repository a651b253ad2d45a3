"""Two public result sets, read from their README as fetched (``community_data/``) into rows.

Pure parsing, no database: each :class:`CommunityRow` is one figure of the source
file with the line it stands on, the column it came from, and the text as printed.

- ``geerlingguy/ai-benchmarks``: the "Findings" tables, one per model (``### Llama
  3.2:3b``): System, CPU/GPU, Eval Rate ("92.49 Tokens/s", Ollama's word for decode
  t/s), Power (Peak) ("464.2W" or "N/A"). A system marked ``<sup>1</sup>`` was run
  with llama.cpp on Vulkan (the README's footnote); for the others the README does
  not say which engine, so none is claimed.
- ``geerlingguy/ai-benchmarks`` issues: the llama-bench Markdown tables posted in the
  issues the README links, one section per table headed by the issue's URL, read by
  the Markdown table reader (runners/llamabench/markdown.py): each row a printed
  summary (mean ± SD, no samples); a combined -pg row mixes prefill and decode and
  is left out.
- ``XiongjieDai/GPU-Benchmarks-on-LLM-Inference``: the LLaMA 3 "Benchmarks" tables
  (gaming, professional, Apple Silicon): per GPU set and model, llama-bench tg and
  pp at 512/1024/4096/8192 tokens; "OOM" cells are no figure and are skipped. The
  README's "Overview" tables repeat the tg 1024 and pp 1024 columns and are not read
  twice.

Hardware names are mapped onto Rigboard's GPU model names (``GPU_NAMES``), so the
GPU pages gather these rows with everyone else's; a name the maps do not know is an
error (the source changed: look at it), never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from runners.delivery.payload import quantization_from_ftype
from runners.llamabench import LlamaBenchError, markdown
from runners.llamabench.parse import model_type_parts

GEERLING = "geerlingguy-ai-benchmarks"
GEERLING_ISSUES = "geerlingguy-ai-benchmarks-issues"
XIONGJIE = "xiongjiedai-gpu-benchmarks"


class SourceFormatError(ValueError):
    """The source file is not laid out as this parser expects; the message names the line."""


@dataclass(frozen=True)
class Gpu:
    model: str
    vram_gb: float | None = None
    count: int = 1


@dataclass(frozen=True)
class CommunityRow:
    """One figure of a public result set, where it stands in its source file."""

    set_key: str
    line: int  # 1-based line of the source file
    column: str  # the column header the figure is under
    printed: str  # the cell as printed
    system: str  # the system as the source names it (link and markup removed)
    gpus: tuple[Gpu, ...]
    cpu: str
    model_name: str
    params_b: float | None
    quantization: str
    engine: str  # 'llama.cpp' or 'other' (not stated)
    backend: str
    workload: str
    metric: str  # 'decode' or 'prefill'
    tokens_per_s: float
    max_tokens: int | None = None
    power_w_peak: float | None = None
    details_url: str = ""
    notes: tuple[str, ...] = field(default=())
    # A llama-bench table row: its printed SD (the figure is a printed summary, no
    # samples), the -r it was run with when the post states it, its build.
    stddev_ts: float | None = None
    printed_summary: bool = False
    repetitions: int | None = None
    build: str = ""
    row_url: str = ""  # the page the row stands on, when not a line of the set's file

    @property
    def report_key(self) -> str:
        return f"{self.set_key}:L{self.line}:{self.column}"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


Table = tuple[int, list[str], list[tuple[int, list[str]]]]


def _is_rule(line: str) -> bool:
    return set(line.replace("|", "").strip()) <= set(":- ")


def _tables(lines: Sequence[str], start: int, stop: int) -> Iterator[Table]:
    """Yield (header line, header cells, [(line, cells)]) for each table in lines[start:stop]."""
    i = start
    while i < stop:
        if lines[i].lstrip().startswith("|") and i + 1 < stop and _is_rule(lines[i + 1]):
            header = _cells(lines[i])
            rows = []
            j = i + 2
            while j < stop and lines[j].lstrip().startswith("|"):
                rows.append((j + 1, _cells(lines[j])))
                j += 1
            yield i + 1, header, rows
            i = j
        else:
            i += 1


# ---- geerlingguy/ai-benchmarks ----------------------------------------------------------

_LINK = re.compile(r"\[(?P<label>[^\]]*)\]\((?P<url>[^)\s]+)\)")
_SUP = re.compile(r"<sup>(\d+)</sup>")
_RATE = re.compile(r"^(?P<value>\d+(?:\.\d+)?) Tokens/s$")
_POWER = re.compile(r"^(?P<value>\d+(?:\.\d+)?)W$")
_PARAMS = re.compile(r"(\d+(?:\.\d+)?)b$", re.IGNORECASE)
# (pattern over the system's name, Rigboard's GPU model). First match wins: longer names first.
GPU_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), name)
    for pattern, name in (
        (r"\bNvidia (?:RTX )?4070 Ti Super\b", "RTX 4070 Ti Super"),
        (r"\bNvidia (?:RTX )?4070 Ti\b", "RTX 4070 Ti"),
        (r"\bNvidia (?:RTX )?4070\b", "RTX 4070"),
        (r"\bNvidia (?:RTX )?4080\b", "RTX 4080"),
        (r"\bNvidia (?:RTX )?4090\b", "RTX 4090"),
        (r"\bNvidia (?:RTX )?5090\b", "RTX 5090"),
        (r"\bNvidia (?:RTX )?3080 Ti\b", "RTX 3080 Ti"),
        (r"\bNvidia (?:RTX )?3060\b", "RTX 3060"),
        (r"\bNvidia (?:RTX )?2080 Ti\b", "RTX 2080 Ti"),
        (r"\bNvidia (?:RTX )?A4000\b", "RTX A4000"),
        (r"\bNvidia (?:RTX )?A2000\b", "RTX A2000"),
        (r"\bNvidia (?:RTX )?A400\b", "RTX A400"),
        (r"\bNvidia Spark\b", "NVIDIA GB10"),
        (r"\bAMD (?:Radeon )?AI Pro R9700\b", "Radeon AI Pro R9700"),
        (r"\bAMD Pro W7700\b", "Radeon Pro W7700"),
        (r"\bAMD (?:RX )?7900 XT\b", "Radeon RX 7900 XT"),
        (r"\bAMD RX 9070 XT\b", "Radeon RX 9070 XT"),
        (r"\bAMD RX 6700 XT\b", "Radeon RX 6700 XT"),
        (r"\bAMD RX 6500 XT\b", "Radeon RX 6500 XT"),
        (r"\bAMD RX 7600\b", "Radeon RX 7600"),
        (r"\bAMD RX 580\b", "Radeon RX 580"),
        (r"\bIntel Arc Pro B50\b", "Arc Pro B50"),
        (r"\bIntel Arc B580\b", "Arc B580"),
        (r"\bIntel Arc A310 ECO\b", "Arc A310 ECO"),
        (r"\bM3 Ultra\b", "Apple M3 Ultra"),
        (r"\bM1 Ultra\b", "Apple M1 Ultra"),
        (r"\bM1 Max\b", "Apple M1 Max"),
        (r"\bM4 Mac mini\b", "Apple M4"),
    )
)
# GPU rows whose system name names no GPU (an integrated one): stored without a GPU model.
GPU_NOT_NAMED = ("Framework Mainboard", "Framework Desktop Mainboard", "Framework Mainboard Cluster")
_VRAM_AFTER = re.compile(r"\)\s*(\d+)GB$")


def _system(cell: str) -> tuple[str, str, bool]:
    """Return (name without link or markup, linked URL, whether footnote 1 marks it)."""
    url = ""
    link = _LINK.search(cell)
    if link:
        url = link.group("url")
        cell = cell[: link.start()] + link.group("label") + cell[link.end() :]
    vulkan = "<sup>1</sup>" in cell
    return " ".join(_SUP.sub("", cell).split()), url, vulkan


def geerling_gpus(system: str, kind: str, line: int) -> tuple[Gpu, ...]:
    """Return the GPU a findings row ran on, as Rigboard names it; () for a CPU row or an
    integrated GPU the name does not give. Raise SourceFormatError for an unknown GPU."""
    if kind == "CPU":
        return ()
    for pattern, name in GPU_NAMES:
        if pattern.search(system):
            vram = _VRAM_AFTER.search(system)
            return (Gpu(name, float(vram.group(1)) if vram else None),)
    if system.startswith(GPU_NOT_NAMED):
        return ()
    raise SourceFormatError(f"line {line}: no GPU model known for {system!r} (add it to GPU_NAMES)")


def geerling_rows(text: str) -> list[CommunityRow]:
    """Return every figure of the README's findings tables, in file order."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "## Findings")
    except StopIteration:
        raise SourceFormatError("no '## Findings' section") from None
    stop = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    headings = [(i, lines[i][4:].strip()) for i in range(start, stop) if lines[i].startswith("### ")]
    rows: list[CommunityRow] = []
    for header_line, header, table in _tables(lines, start, stop):
        if header != ["System", "CPU/GPU", "Eval Rate", "Power (Peak)"]:
            raise SourceFormatError(f"line {header_line}: unexpected findings header {header}")
        model = next(name for i, name in reversed(headings) if i < header_line)
        params = _PARAMS.search(model)
        for line, cells in table:
            if len(cells) != 4:
                raise SourceFormatError(f"line {line}: {len(cells)} cells, expected 4")
            system, url, vulkan = _system(cells[0])
            rate = _RATE.match(cells[2])
            if not rate:
                raise SourceFormatError(f"line {line}: eval rate {cells[2]!r} is not 'N Tokens/s'")
            power = _POWER.match(cells[3])
            if not power and cells[3] != "N/A":
                raise SourceFormatError(f"line {line}: power {cells[3]!r} is not 'NW' or N/A")
            rows.append(
                CommunityRow(
                    set_key=GEERLING,
                    line=line,
                    column="Eval Rate",
                    printed=cells[2],
                    system=system,
                    gpus=geerling_gpus(system, cells[1], line),
                    cpu="",
                    model_name=model,
                    params_b=float(params.group(1)) if params else None,
                    quantization="",
                    engine="llama.cpp" if vulkan else "other",
                    backend="Vulkan" if vulkan else "",
                    workload="geerlingguy/ai-benchmarks: eval rate",
                    metric="decode",
                    tokens_per_s=float(rate.group("value")),
                    power_w_peak=float(power.group("value")) if power else None,
                    details_url=url,
                    notes=(
                        f"CPU/GPU: {cells[1]}",
                        f"Power (Peak): {cells[3]}",
                        "llama.cpp with Vulkan (the README's footnote 1)" if vulkan else "engine not stated",
                    ),
                )
            )
    if not rows:
        raise SourceFormatError("no findings rows")
    return rows


# ---- geerlingguy/ai-benchmarks: the llama-bench tables in the linked issues ---------------

_ISSUE_HEADING = re.compile(r"^## (https://github\.com/geerlingguy/ai-benchmarks/issues/\d+)$")
_ISSUE_FACT = re.compile(r"^- (?P<key>[a-z ]+): (?P<value>.+)$")


def geerling_issue_rows(text: str) -> list[CommunityRow]:
    """Return every row of the llama-bench tables kept from the issues, in file order."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _ISSUE_HEADING.match(line)]
    if not starts:
        raise SourceFormatError("no '## https://github.com/geerlingguy/ai-benchmarks/issues/N' section")
    rows: list[CommunityRow] = []
    for start, stop in zip(starts, [*starts[1:], len(lines)], strict=True):
        url = lines[start][3:]
        facts = {m["key"]: m["value"] for line in lines[start:stop] if (m := _ISSUE_FACT.match(line))}
        missing = [key for key in ("system", "model file", "posted") if key not in facts]
        if missing:
            raise SourceFormatError(f"line {start + 1}: {url} states no {', '.join(missing)}")
        repetitions = int(facts["repetitions"]) if "repetitions" in facts else None
        try:
            table = markdown.parse_markdown("\n".join(lines[start:stop]), skip_combined=True, repetitions=repetitions)
        except LlamaBenchError as exc:
            raise SourceFormatError(f"{url} (section from line {start + 1}): {exc}") from None
        system = facts["system"]
        for table_row in table:
            line = start + table_row.line  # the section's line 1 is the file's line start + 1
            bench = table_row.bench
            raw = bench.raw
            _, quantization = model_type_parts(str(raw["model_type"]))
            depth = f" @ d{bench.n_depth}" if bench.n_depth else ""
            rows.append(
                CommunityRow(
                    set_key=GEERLING_ISSUES,
                    line=line,
                    column="t/s",
                    printed=_cells(lines[line - 1])[-1],
                    system=system,
                    gpus=geerling_gpus(system, "GPU", line),
                    cpu="",
                    model_name=facts["model file"],
                    params_b=round(raw["model_n_params"] / 1e9, 2) or None,
                    quantization=quantization_from_ftype(quantization),
                    engine="llama.cpp",
                    backend=str(raw.get("backends") or ""),
                    workload=f"geerlingguy/ai-benchmarks: llama-bench {bench.test}{depth}",
                    metric="decode" if bench.n_gen else "prefill",
                    tokens_per_s=table_row.mean_ts,
                    max_tokens=bench.n_gen or None,
                    details_url=url,
                    notes=(
                        f"{facts.get('title', url)}: posted by {facts['posted']}",
                        f"llama-bench {bench.test}, mean ± SD as printed, no samples; "
                        + (f"-r {repetitions}" if repetitions else "repetitions not stated"),
                    ),
                    stddev_ts=table_row.stddev_ts,
                    printed_summary=True,
                    repetitions=repetitions,
                    build=f"b{raw['build_number']}-{raw['build_commit']}" if table_row.build_stated else "",
                    row_url=url,
                )
            )
    if not rows:
        raise SourceFormatError("no llama-bench table rows")
    return rows


# ---- XiongjieDai/GPU-Benchmarks-on-LLM-Inference ----------------------------------------

_XGPU = re.compile(r"^(?P<name>.+?)\s+(?P<memory>\d+)GB(?:\s*\*\s*(?P<count>\d+))?$")
_XMODEL = re.compile(r"^(?P<params>\d+)B\s+(?P<quant>\S+)$")
_XTEST = re.compile(r"^(?P<kind>tg|pp) (?P<tokens>\d+)$")
_XFIGURE = re.compile(r"^\**(?P<value>\d+(?:\.\d+)?)\**$")
XIONGJIE_GPU_NAMES = {
    "3070": "RTX 3070",
    "3080": "RTX 3080",
    "3080 Ti": "RTX 3080 Ti",
    "4070 Ti": "RTX 4070 Ti",
    "4080": "RTX 4080",
    "3090": "RTX 3090",
    "4090": "RTX 4090",
    "RTX 4000 Ada": "RTX 4000 Ada",
    "RTX 5000 Ada": "RTX 5000 Ada",
    "RTX 6000 Ada": "RTX 6000 Ada",
    "RTX A6000": "RTX A6000",
    "A40": "A40",
    "L40S": "L40S",
    "A100 PCIe": "A100 PCIe",
    "A100 SXM": "A100 SXM",
    "H100 PCIe": "H100 PCIe",
    "M1 7-Core GPU": "Apple M1 (7-core GPU)",
    "M1 Max 32-Core GPU": "Apple M1 Max (32-core GPU)",
    "M2 Ultra 76-Core GPU": "Apple M2 Ultra (76-core GPU)",
    "M3 Max 40-Core GPU": "Apple M3 Max (40-core GPU)",
}


def xiongjie_gpus(cell: str, line: int) -> tuple[Gpu, ...]:
    """Return the GPU set of a benchmarks row ('4090 24GB * 2' → 2 × RTX 4090, 24 GB each)."""
    # The README writes some Apple names with a non-breaking hyphen (U+2011).
    match = _XGPU.match(cell.replace("\u2011", "-"))
    name = XIONGJIE_GPU_NAMES.get(match.group("name")) if match else None
    if match is None or name is None:
        raise SourceFormatError(f"line {line}: no GPU model known for {cell!r} (add it to XIONGJIE_GPU_NAMES)")
    return (Gpu(name, float(match.group("memory")), int(match.group("count") or 1)),)


def xiongjie_rows(text: str) -> list[CommunityRow]:
    """Return every figure of the README's LLaMA 3 benchmark tables, in file order."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("### LLaMA 3"))
    except StopIteration:
        raise SourceFormatError("no '### LLaMA 3' benchmarks section") from None
    stop = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    sections = [(i, lines[i][5:].strip()) for i in range(start, stop) if lines[i].startswith("#### ")]
    rows: list[CommunityRow] = []
    for header_line, header, table in _tables(lines, start, stop):
        if header[:2] != ["GPU", "Model"] or not all(_XTEST.match(h) for h in header[2:]):
            raise SourceFormatError(f"line {header_line}: unexpected benchmarks header {header}")
        section = next(name for i, name in reversed(sections) if i < header_line)
        apple = section.startswith("Apple")
        gpu_cell = ""
        for line, cells in table:
            if len(cells) != len(header):
                raise SourceFormatError(f"line {line}: {len(cells)} cells, expected {len(header)}")
            gpu_cell = cells[0] or gpu_cell  # a blank GPU cell continues the row above
            model = _XMODEL.match(cells[1])
            if not gpu_cell or not model:
                raise SourceFormatError(f"line {line}: GPU {gpu_cell!r} / model {cells[1]!r} not understood")
            gpus = xiongjie_gpus(gpu_cell, line)
            for column, cell in zip(header[2:], cells[2:], strict=True):
                if cell == "OOM":
                    continue
                figure = _XFIGURE.match(cell)
                test = _XTEST.match(column)
                if not figure or not test:
                    raise SourceFormatError(f"line {line}: {column} {cell!r} is not a figure or OOM")
                tokens = int(test.group("tokens"))
                decode = test.group("kind") == "tg"
                rows.append(
                    CommunityRow(
                        set_key=XIONGJIE,
                        line=line,
                        column=column,
                        printed=cell,
                        system=gpu_cell.replace("\u2011", "-"),
                        gpus=gpus,
                        cpu="Apple Silicon (unified memory)" if apple else "",
                        model_name=f"Meta-Llama-3-{model.group('params')}B",
                        params_b=float(model.group("params")),
                        quantization=model.group("quant"),
                        engine="llama.cpp",
                        backend="Metal" if apple else "CUDA",
                        workload=f"XiongjieDai/GPU-Benchmarks-on-LLM-Inference: llama-bench {column.replace(' ', '')}",
                        metric="decode" if decode else "prefill",
                        tokens_per_s=float(figure.group("value")),
                        max_tokens=tokens if decode else None,
                        notes=(section,),
                    )
                )
    if not rows:
        raise SourceFormatError("no benchmark rows")
    return rows


PARSERS = {GEERLING: geerling_rows, GEERLING_ISSUES: geerling_issue_rows, XIONGJIE: xiongjie_rows}
