"""Every page type of `make demo`'s data in a real browser, at 1400 and 390 px, as a
new visitor (and, for /me/ and the account pages, a signed-in owner) meets it:
every route of the URL conf that shows a page, with a demo object, plus every
link from `/`. On each: no sideways scroll, no two tick labels of one chart axis
overlapping, no chart label outside its chart, nothing under a chart's toolbar,
no console error, no path or loopback port of the recording machine (verbatim
records included), and no visible text a visitor cannot read (raw field names and
identifiers, "None", "nan", "-0.0%", a "… Unknown" pair, internal reasons, the
repository's own file names). One demo database (SQLite, the Makefile's own
`demo-data`), one server and one browser for the session."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.boards.chart_values import chart_mismatches
from tests.embedded import ROOT, embedded_env, run_embedded
from tests.fixtures.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (1400, 390)
OWNER_EMAIL, OWNER_PASSWORD = "owner@example.org", "a long enough password 42"

# What a visitor must never read: raw field names, Python's None, NaN, a signed zero,
# the statistics' internal reasons, "Unknown" beside a name ("vLLM Unknown": a source
# that did not say), the repository's files and the transcripts' file names.
UNREADABLE = re.compile(
    r"_per_s|_pct\b|\bNone\b|\bnan\b|\bNaN\b|-0\.0%|needs at least|\bUnknown\b|\bseed \d{3}\b"
    r"|\b\d{3}_[0-9a-f]{8,}\.txt\b|(?<![\w/.-])benchmarks/|demo_data|\b[\w/]+\.py\b"
)
# A raw identifier: a snake_case name. The configuration keys a reader writes in a rig's
# TOML or a campaign's space (and sees as such) are words of their own.
# (A part of a file or URL, "q4_k_m" in gemma-3-270m-q4_k_m.gguf, is not one; nor is a
# quantization or cache type, q8_0, which is llama.cpp's own name.)
IDENTIFIER = re.compile(r"(?<![\w./-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w./-])")
QUANT_NAME = re.compile(r"i?q\d+(?:_[a-z0-9]+)+|[bf]f?\d+")
CONFIG_KEYS = {
    "ctx_size", "n_gpu_layers", "cache_type_k", "cache_type_v", "flash_attn", "spec_type", "draft_n_max",
    "batch_size", "ubatch_size", "tensor_split", "tensor_overrides", "draft_model", "chat_template_kwargs",
    "extra_args", "n_prompt", "n_gen", "n_depth", "n_threads",
}  # fmt: skip
# The address `make demo`'s pages link to themselves by (settings.RIGBOARD_PUBLIC_URL's default).
PUBLIC_URL = "http://127.0.0.1:8000"
# A path of the recording machine, or a loopback address's port, anywhere on a page
# (command lines and logs included: a reader copies those onto their own rig).
MACHINE_PATH = re.compile(
    r"(?<![\w.:/])(?:/tmp/|/root/|/home/|/work/|~/)|\.cache/|--port \d|\b(?:127\.0\.0\.1|localhost):(?!PORT)\d"
)

# The routes with no page to crawl, and why; every other route of the URL conf must
# be in the crawl (``test_the_crawl_covers_every_page_route``).
NOT_PAGES = {
    "admin:": "Django's admin, staff only",
    "api:": "JSON API (its docs page is crawled)",
    "jobs-": "JSON API",
    "campaigns-": "JSON API",
    "intake-api:": "JSON API",
    "favicon": "an icon",
    "boards:leaderboard-csv": "a CSV export",
    "boards:leaderboard-json": "a JSON export",
    "boards:leaderboard-ndjson": "an NDJSON export",
    "opendata:file": "a dump's files (Parquet, CSV, the manifest)",
    "regressions:aa-frequency": "owner or staff only: a subscription's A/A check frequency form",
    "owners:token-issue": "POST only",
    "owners:token-revoke": "POST only",
    "account_logout": "signs the owner out (crawled last by the header's Sign out)",
    "account_confirm_email": "needs a mailed key (test_site_navigation signs up through it)",
    "account_reset_password_from_key": "needs a mailed key",
    "account_reset_password_from_key_done": "after a mailed key",
    "account_confirm_login_code": "login by code is off",
    "account_reauthenticate": "asks for the password again",
    "account_inactive": "only after an inactive account's log-in",
    "account_set_password": "redirects: the owner has a password",
    "regressions:report_md": "the report's Markdown export (text to paste, the report page's content)",
}

SETUP = r"""
import json
from urllib.parse import urlencode
import django
django.setup()
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from leaderboard.campaigns.models import Campaign
from leaderboard.intake.owners import owned_rig_register
from leaderboard.regressions.models import Subscription, Verdict
from leaderboard.results.models import ModelFile, PublishedComparison, Rig, Run, Source
from leaderboard.results.services.rigs import GpuSpec

owner = User.objects.filter(email=EMAIL).first()
if owner is None:
    owner = User.objects.create_user("owner", EMAIL, PASSWORD)
    EmailAddress.objects.create(user=owner, email=owner.email, verified=True, primary=True)
    owned_rig_register(owner=owner, name="owner-rig", gpus=[GpuSpec(model="RTX 4090", vram_gb=24, count=1)])
owned = Rig.objects.get(name="owner-rig")
demo_rig = Rig.objects.get(name="rigboard-dev-vm-demo")
runs = Run.objects.filter(rig=demo_rig)
sweep = runs.filter(sweep_points__isnull=False).distinct().first()
concurrent = runs.filter(concurrency_levels__isnull=False).distinct().first()
bench = runs.filter(workload__name__startswith="llama-bench").first()
reported = Run.objects.filter(provenance="reported").order_by("pk")
published_sweep = Run.objects.get(report_key="six-3090-qwen35-122b-a10b-q6kxl-ctx-sweep")
# The demo's nightly pages are real releases: b10423 -> b10429 with its confirmed regression.
sub = Subscription.objects.get(rig__name="rigboard-dev-vm-b10429-demo")
regression = Verdict.objects.filter(build__subscription=sub, kind="regression").order_by("pk").first()
owned_sub, _ = Subscription.objects.get_or_create(
    rig=owned, repo_url="https://github.com/ggml-org/llama.cpp", branch="master", build_flags=""
)
measured = runs.filter(decode_tokens_per_s_mean__isnull=False).order_by("pk")
phases = Source.objects.filter(key__startswith="003").first()
print(json.dumps({
    "rig": demo_rig.pk, "owned_rig": owned.pk, "sweep_rig": published_sweep.rig_id,
    "run": measured.first().pk, "sweep": sweep.pk, "published_sweep": published_sweep.pk,
    "concurrent": concurrent.pk, "bench": bench.pk, "reported": reported.first().pk,
    "compare": [r.pk for r in measured[:4]],
    "same_figure": ",".join(str(Run.objects.get(report_key=k).pk) for k in (
        "olares-qwen36-35b-a3b-mtp-q3kxl-32k", "olares-qwen36-35b-a3b-mtp-q3kxl-ctx-sweep")),
    # Seed 001's 122B (headline at 4K) and 397B (printed at 8K only): compared at 8K.
    "depths": ",".join(str(Run.objects.get(report_key=k).pk) for k in (
        "six-3090-qwen35-122b-a10b-q6kxl-ctx-sweep", "six-3090-qwen35-397b-ud-tq1-0")),
    "subscriptions": [[s.pk, r.pk] for s in Subscription.objects.order_by("pk") for r in s.reference_configs.all()],
    "model": sweep.model_file_id, "gpu": "RTX 3090",
    "source": published_sweep.source_id, "phases_source": phases.pk if phases else None,
    "comparison": PublishedComparison.objects.order_by("pk").first().pk,
    "campaign": Campaign.objects.filter(rig=demo_rig).get().pk,
    "gpu_campaign": Campaign.objects.get(rig__name="lent-h200-demo").pk,
    "gpu_rig": Rig.objects.get(name="lent-h200-demo").pk,
    "subscription": sub.pk, "reference": sub.reference_configs.order_by("pk").first().pk,
    "branch_query": urlencode({"repo": sub.repo_url, "branch": sub.branch}), "owned_subscription": owned_sub.pk,
    "regression": regression.pk,
}))
"""


@dataclass(frozen=True)
class DemoSite:
    url: str
    ids: dict[str, Any]
    # The server's output: the console email backend writes the mails there.
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_up(url: str, server: subprocess.Popen[bytes], deadline_s: float = 60) -> None:
    def answers() -> bool:
        assert server.poll() is None, "the demo server died on start"
        try:
            with urllib.request.urlopen(url + "/favicon.ico", timeout=2):
                return True
        except OSError:
            return False

    wait_until(answers, deadline_s, "the demo server to answer")


@pytest.fixture(scope="session")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSite]:
    """Return `make demo`'s site: the Makefile's demo-data on a fresh SQLite file, an
    owner with a verified email and a rig, served by runserver (one per session)."""
    tmp = tmp_path_factory.mktemp("demo-site")
    env = {**embedded_env(tmp), "DEBUG": "true"}
    make = ["make", "-s", "demo-data", f"BIN={Path(sys.executable).parent}"]
    done = subprocess.run(make, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    ids = run_embedded(f"EMAIL, PASSWORD = {OWNER_EMAIL!r}, {OWNER_PASSWORD!r}\n" + SETUP, tmp)
    port = _free_port()
    log = tmp / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, server)
        yield DemoSite(url, ids, log)
    finally:
        server.terminate()
        server.wait(timeout=10)


def page_paths(ids: dict[str, Any]) -> dict[str, list[str]]:
    """Return, per route name, the demo pages of that route a visitor opens."""
    compare = ",".join(map(str, ids["compare"]))
    pages = {
        "boards:leaderboard": [
            "/",
            "/?sort=-cost",
            "/?sort=date",
            "/?failed=on&sort=-tpkwh",
            "/?workload=all",
            "/?concurrency=2",
        ],  # fmt: skip
        "boards:rig": [f"/rigs/{ids['rig']}/", f"/rigs/{ids['sweep_rig']}/", f"/rigs/{ids['gpu_rig']}/"],
        "boards:rigs": ["/rigs/"],
        "boards:gpu": [f"/gpus/{ids['gpu']}/", "/gpus/H200/"],
        "boards:gpus": ["/gpus/"],
        "boards:models": ["/models/"],
        "boards:model": [f"/models/{ids['model']}/"],
        "boards:run": [
            f"/runs/{ids[k]}/" for k in ("run", "sweep", "published_sweep", "concurrent", "bench", "reported")
        ],
        # Seed 004's two runs of one figure (249.303 and 249.3): no "-0.0% slower".
        "boards:compare": [
            f"/compare/?runs={compare}",
            f"/compare/?runs={ids['same_figure']}",
            f"/compare/?runs={ids['depths']}",
        ],
        "boards:sweeps": ["/sweeps/", f"/sweeps/?runs={ids['sweep']},{ids['published_sweep']}"],
        "boards:estimate": ["/estimate/", f"/estimate/?gpu=RTX+4090&model={ids['model']}"],
        "boards:concurrency": ["/concurrency/", f"/concurrency/?runs={ids['concurrent']}"],
        "boards:published-comparisons": ["/published/comparisons/"],
        "boards:published-comparison": [f"/published/comparisons/{ids['comparison']}/"],
        "boards:experiments": ["/published/experiments/"],
        "boards:source": [f"/published/sources/{ids['source']}/"],
        "campaigns:list": ["/campaigns/"],
        "campaigns:detail": [f"/campaigns/{ids['campaign']}/", f"/campaigns/{ids['gpu_campaign']}/"],
        "campaigns:reported": [f"/campaigns/reported/{ids['phases_source']}/"],
        "regressions:index": ["/regressions/"],
        "regressions:timeline": [f"/regressions/{ids['subscription']}/{ids['reference']}/"],
        "regressions:matrix": [f"/regressions/matrix/?{ids['branch_query']}"],
        "regressions:report": [f"/regressions/report/{ids['regression']}/"],
        "intake:llama-bench": ["/llama-bench/"],
        "intake:llama-bench-compare": [f"/llama-bench/compare/?rig={ids['rig']}"],
        "api:docs": ["/api/docs/"],
        "opendata:data": ["/data/"],
        "account_login": ["/accounts/login/"],
        "account_signup": ["/accounts/signup/"],
        "account_reset_password": ["/accounts/password/reset/"],
        "account_reset_password_done": ["/accounts/password/reset/done/"],
        "account_email_verification_sent": ["/accounts/confirm-email/"],
    }
    owner_pages = {
        "owners:my-rigs": ["/me/rigs/"],
        "owners:rig-register": ["/me/rigs/new/"],
        "owners:rig-edit": [f"/me/rigs/{ids['owned_rig']}/edit/"],
        "owners:llama-bench-upload": [f"/me/rigs/{ids['owned_rig']}/llama-bench/"],
        "account_email": ["/accounts/email/"],
        "account_change_password": ["/accounts/password/change/"],
        "regressions:subscribe": ["/regressions/subscribe/"],
        "regressions:references-add": [f"/regressions/{ids['owned_subscription']}/references/"],
    }
    return {**pages, **owner_pages}


OWNER_ONLY = {
    "owners:my-rigs",
    "owners:rig-register",
    "owners:rig-edit",
    "owners:llama-bench-upload",
    "account_email",
    "account_change_password",
    "regressions:subscribe",
    "regressions:references-add",
}


def url_names() -> set[str]:
    """Return every named route of the URL conf as ``namespace:name`` (or ``name``)."""
    import django

    django.setup()
    from django.urls import URLPattern, URLResolver, get_resolver

    names: set[str] = set()

    def walk(resolver: URLResolver, namespace: str) -> None:
        for pattern in resolver.url_patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern, namespace + (f"{pattern.namespace}:" if pattern.namespace else ""))
            elif isinstance(pattern, URLPattern):
                names.add(namespace + (pattern.name or ""))

    walk(get_resolver(), "")
    return names


def test_the_crawl_covers_every_page_route() -> None:
    crawled = set(page_paths(_Any()))
    missing = {name for name in url_names() if name not in crawled and not any(name.startswith(p) for p in NOT_PAGES)}
    assert not missing, f"routes with no page in the crawl (add a demo page or a reason to NOT_PAGES): {missing}"


class _Any(dict[str, Any]):
    """Any demo id: 1."""

    def __missing__(self, key: str) -> Any:
        return [1] if key == "compare" else 1


# Runs in the page: the problems a visitor would see, as strings.
CHECK_PAGE = r"""
(width) => {
  const problems = [];
  const doc = document.documentElement;
  // A phone widens its layout viewport to fit a page too wide for it: compare with the screen's width.
  if (doc.scrollWidth > width + 1) {
    const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > width + 1)
      .filter(e => !e.closest('.table-wrap, pre, .chart'))
      .slice(0, 3).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className);
    problems.push(`sideways scroll: ${doc.scrollWidth} px wide (${wide.join(', ')})`);
  }
  const visible = r => r.width > 0 && r.height > 0;
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
  for (const chart of document.querySelectorAll('.js-plotly-plot')) {
    const name = chart.id || 'a chart';
    const frame = chart.getBoundingClientRect();
    // Each axis's tick labels: a cartesian axis layer, or one parallel-coordinates axis.
    const axes = [...chart.querySelectorAll('.xaxislayer-above, .yaxislayer-above, .parcoords .y-axis')];
    for (const axis of axes) {
      const labels = [...axis.querySelectorAll('text')].filter(t => t.textContent.trim())
        .map(t => [t.textContent, t.getBoundingClientRect()]).filter(([, r]) => visible(r));
      for (let i = 0; i < labels.length; i++) {
        for (let j = i + 1; j < labels.length; j++) {
          if (overlap(labels[i][1], labels[j][1])) {
            problems.push(`${name}: tick labels "${labels[i][0]}" and "${labels[j][0]}" overlap`);
          }
        }
      }
    }
    for (const text of chart.querySelectorAll('svg text')) {
      const r = text.getBoundingClientRect();
      if (!visible(r) || !text.textContent.trim()) { continue; }
      if (r.left < frame.left - 1 || r.right > frame.right + 1 ||
          r.top < frame.top - 1 || r.bottom > frame.bottom + 1) {
        problems.push(`${name}: label "${text.textContent}" outside its chart`);
      }
    }
  }
  // A chart's toolbar (zoom, download) must not sit over its legend, title or axis titles.
  for (const chart of document.querySelectorAll('.js-plotly-plot')) {
    // (Plotly shows it on hover or a tap: its box counts whatever its opacity now.)
    const bar = chart.querySelector('.modebar');
    if (!bar) { continue; }
    const barBox = bar.getBoundingClientRect();
    if (!visible(barBox) || getComputedStyle(bar).display === 'none') { continue; }
    const covered = '.legend text, .gtitle, .g-xtitle text, .g-ytitle text, .annotation-text';
    for (const el of chart.querySelectorAll(covered)) {
      const r = el.getBoundingClientRect();
      if (visible(r) && el.textContent.trim() && overlap(barBox, r)) {
        problems.push(`${chart.id || 'a chart'}: "${el.textContent.trim().slice(0, 40)}" under the chart's toolbar`);
      }
    }
  }
  // Text a visitor cannot see: its colour on the background it sits on (white on white).
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const linear = v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  const luminance = ([r, g, b]) => 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  const backdrop = el => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) { return c; }
    }
    return [255, 255, 255];
  };
  for (const el of document.querySelectorAll('body *:not(svg):not(svg *)')) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || !visible(el.getBoundingClientRect()) || getComputedStyle(el).visibility === 'hidden') { continue; }
    const fg = luminance(rgb(getComputedStyle(el).color)), bg = luminance(backdrop(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 2) {
      problems.push(`unreadable colours (contrast ${ratio.toFixed(2)}): "${el.textContent.trim().slice(0, 40)}"`);
    }
  }
  // Words: what is rendered, chart text included; a verbatim record (a command line,
  // a fingerprint's JSON, a log, an article's notes as transcribed) is shown as recorded.
  const words = [];
  const verbatim = [...document.querySelectorAll('pre, code, textarea')].map(e => e.textContent);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const el = node.parentElement;
    if (!el || el.closest('pre, code, script, style, noscript, textarea, select, .notes')) { continue; }
    if (!node.textContent.trim()) { continue; }
    const r = el.getBoundingClientRect();
    if (!visible(r) && !el.closest('svg')) { continue; }
    words.push(node.textContent);
  }
  for (const option of document.querySelectorAll('select option')) { words.push(option.textContent); }
  const identifiers = [];
  const walker2 = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker2.nextNode()) {
    const node = walker2.currentNode;
    const el = node.parentElement;
    const skipped = 'pre, code, script, style, noscript, textarea, .notes, .printed, .js-plotly-plot, #swagger-ui';
    if (!el || el.closest(skipped)) { continue; }
    if (node.textContent.trim()) { identifiers.push(node.textContent); }
  }
  return {problems, words, verbatim, identifiers};
}
"""

# (The API docs are drawn by Swagger UI: its title block and version badges count too.)
WAIT_FOR_CHARTS = """
() => [...document.querySelectorAll('[data-figure]')].filter(e => !e.closest('details:not([open])'))
  .every(e => e.getAttribute('data-drawn') === 'true' || e.classList.contains('chart-empty'))
  && (!document.getElementById('swagger-ui') || !!document.querySelector('#swagger-ui .info .title small'))
"""


def check_page(page: Any, url: str, *, words: bool = True) -> list[str]:
    """Open ``url`` in ``page``; return what is wrong with it, each prefixed by the page."""
    errors: list[str] = []
    response = page.goto(url, wait_until="load")
    where = f"{url.split('/', 3)[-1]} @{page.viewport_size['width']}"
    if response is None or response.status != 200:
        return [f"/{where}: HTTP {response.status if response else 'none'}"]
    try:
        page.wait_for_function(WAIT_FOR_CHARTS, timeout=15_000)
    except PlaywrightTimeout:
        errors.append("a chart was not drawn within 15 s")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    found = page.evaluate(CHECK_PAGE, page.viewport_size["width"])
    errors.extend(found["problems"])
    if words:
        for text in found["words"]:
            match = UNREADABLE.search(text)
            if match:
                errors.append(f"unreadable text {match.group(0)!r} in {text.strip()[:120]!r}")
        # The data card's subject is the dump's column names: snake_case by design there.
        for text in [] if url.split("?")[0].rstrip("/").endswith("/data") else found["identifiers"]:
            raw = [m for m in IDENTIFIER.findall(text) if m not in CONFIG_KEYS and not QUANT_NAME.fullmatch(m)]
            if raw:
                errors.append(f"raw identifier {raw[0]!r} in {text.strip()[:120]!r}")
    # The site's own address (a token page's RIGBOARD_URL, a report's link: RIGBOARD_PUBLIC_URL)
    # is the visitor's, not the recording machine's.
    own = (url.split("/")[2], PUBLIC_URL.split("/")[2])
    for text in [*found["words"], *found["verbatim"]]:
        match = MACHINE_PATH.search(text.replace(own[0], "SITE").replace(own[1], "SITE"))
        if match:
            errors.append(f"a path or port of the recording machine {match.group(0)!r} in {text.strip()[:160]!r}")
    return [f"/{where}: {e}" for e in errors]


def crawl_width(chromium: Any, site: DemoSite, width: int) -> list[str]:
    """Crawl every page at ``width``, anonymous then signed in; return the problems found."""
    paths = page_paths(site.ids)
    context = chromium.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 600)
    page = context.new_page()
    console: list[str] = []
    page.on("pageerror", lambda exc: console.append(f"page error: {exc}"))
    page.on("console", lambda msg: console.append(f"console: {msg.text}") if msg.type == "error" else None)
    problems: list[str] = []

    def visit(path: str, *, words: bool = True) -> None:
        before = len(console)
        problems.extend(check_page(page, site.url + path, words=words))
        problems.extend(f"{path} @{width}: {c}" for c in console[before:])

    try:
        anonymous = [p for name, ps in paths.items() if name not in OWNER_ONLY for p in ps]
        page.goto(site.url + "/")
        links = page.evaluate(
            "[...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))"
            ".filter(h => h.startsWith('/') && !h.startsWith('//'))"
        )
        # The exports and the admin are not pages a visitor reads.
        followed = [h for h in links if not h.startswith(("/admin", "/leaderboard.", "/api/runs"))]
        for path in dict.fromkeys([*anonymous, *followed]):
            # The API docs print the API's own field names, by design.
            visit(path, words=not path.startswith("/api/"))
        page.goto(site.url + "/accounts/login/")
        page.fill("input[name=login]", OWNER_EMAIL)
        page.fill("input[name=password]", OWNER_PASSWORD)
        page.click("form button[type=submit]")
        page.wait_for_url("**/me/rigs/")
        for name in sorted(OWNER_ONLY):
            for path in paths[name]:
                visit(path)
    finally:
        context.close()
    return problems


@pytest.mark.parametrize("width", WIDTHS)
def test_every_demo_page_reads_right(demo_site: DemoSite, chromium: Any, width: int) -> None:
    problems = crawl_width(chromium, demo_site, width)
    assert not problems, f"{len(problems)} problems at {width} px:\n" + "\n".join(problems)


def _mailed_link(log: Path, email: str, deadline_s: float = 20) -> str:
    """Return the confirmation link mailed to ``email`` (the console backend prints it to the server log)."""

    def link() -> str | None:
        text = log.read_text(errors="replace")
        if f"To: {email}" not in text:
            return None
        match = re.search(r"https?://\S+/accounts/confirm-email/\S+/", text.split(f"To: {email}", 1)[1])
        return match.group(0) if match else None

    return str(wait_until(link, deadline_s, f"a confirmation mail to {email} in the server's output"))


def test_a_new_visitor_reaches_every_feature_from_the_header(demo_site: DemoSite, chromium: Any) -> None:
    """Sign up, a rig's token, a campaign, a concurrency comparison and the API docs,
    following the header's links alone; confirming the email signs the visitor in."""
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    header = page.locator("header.site-header")
    try:
        page.goto(demo_site.url + "/")
        for name in ("Leaderboard", "Published comparisons", "Experiments", "Nightly", "llama-bench", "Campaigns",
                     "Concurrency", "API docs", "Sign up", "Sign in"):  # fmt: skip
            assert header.get_by_role("link", name=name, exact=True).is_visible(), name

        header.get_by_role("link", name="Sign up", exact=True).click()
        page.wait_for_url("**/accounts/signup/")
        assert header.is_visible()  # the account pages are the site's own
        page.fill("input[name=email]", "newcomer@example.org")
        page.fill("input[name=password1]", OWNER_PASSWORD)
        page.fill("input[name=password2]", OWNER_PASSWORD)
        page.click("main form button[type=submit]")
        page.wait_for_url("**/accounts/confirm-email/")
        # The demo sends no mail: the page says where the link is printed.
        assert "make demo" in page.inner_text("#mail-printed-here")
        page.goto(_mailed_link(demo_site.log, "newcomer@example.org"))
        page.click("main form button[type=submit]")
        # Confirmed and signed in, without typing the password again.
        page.wait_for_url("**/me/rigs/")
        assert header.get_by_role("link", name="My rigs", exact=True).is_visible()
        assert header.get_by_role("link", name="Sign out", exact=True).is_visible()

        page.click("#register-rig")
        page.fill("input[name=name]", "newcomer-rig")
        page.fill("textarea[name=gpus]", "RTX 4060 Ti:16:1")
        page.click("#rig-form button[type=submit]")
        assert len(page.inner_text("#new-token").strip()) > 20

        header.get_by_role("link", name="Campaigns", exact=True).click()
        page.locator(f"main a[href='/campaigns/{demo_site.ids['campaign']}/']").first.click()
        page.wait_for_url(f"**/campaigns/{demo_site.ids['campaign']}/")
        # Gemma 270M cannot write the game: every measured trial failed its output check, said so.
        assert "failed their output check" in page.inner_text("#all-failed-checks")

        header.get_by_role("link", name="Concurrency", exact=True).click()
        page.check(f"#pick-{demo_site.ids['concurrent']}")
        page.click("#pick-runs button[type=submit]")
        page.wait_for_url(re.compile(rf".*/concurrency/\?runs={demo_site.ids['concurrent']}$"))
        assert page.locator("#concurrency-fig-chart").is_visible()  # the runs against concurrent streams

        header.get_by_role("link", name="API docs", exact=True).click()
        page.wait_for_url("**/api/docs/")
        page.locator("#swagger-ui .opblock").first.wait_for()  # the operations, drawn by Swagger UI
        # The docs page carries the site's header too: the visitor goes on from it.

        header.get_by_role("link", name="Sign out", exact=True).click()
        page.click("main form button[type=submit]")
        page.wait_for_load_state()
        assert header.get_by_role("link", name="Sign in", exact=True).is_visible()
    finally:
        context.close()


def _fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - the demo server on loopback
        return str(response.read().decode())


@pytest.mark.parametrize("path", ["/", "/?provenance=reported", "/gpus/RTX 3090/", "model"])
def test_the_exports_hold_the_filtered_count(demo_site: DemoSite, path: str) -> None:
    """Each page's CSV and JSON links export every run the page counts (issue 37: the
    export held the page's 50 of 524, and a GPU page's the global top 50)."""
    import csv
    import io
    import json
    from html import unescape
    from urllib.parse import quote

    path = f"/models/{demo_site.ids['model']}/" if path == "model" else quote(path, safe="/?=&")
    html = _fetch(demo_site.url + path)
    count = re.search(r'class="count">([\d,]+) runs?<', html)
    assert count, "the page says how many runs it ranks"
    total = int(count.group(1).replace(",", ""))
    csv_link = re.search(r'href="(/leaderboard\.csv[^"]*)"', html)
    json_link = re.search(r'href="(/leaderboard\.json[^"]*)"', html)
    assert csv_link and json_link

    rows = list(csv.DictReader(io.StringIO(_fetch(demo_site.url + unescape(csv_link.group(1))))))
    body = json.loads(_fetch(demo_site.url + unescape(json_link.group(1))))

    assert len(rows) == total == body["meta"]["total"] == len(body["rows"])
    if path.startswith("/gpus/"):
        assert all("RTX 3090" in row["gpus"] for row in rows)
    if "provenance=reported" in path:
        assert {row["provenance"] for row in rows} == {"reported"}


def chart_pages(ids: dict[str, Any]) -> list[tuple[str, str]]:
    """Return (page, chart check) for every demo page whose chart has a table to check it against."""
    compare = ",".join(map(str, ids["compare"]))
    return [
        *((f"/regressions/{sub}/{ref}/", "timeline") for sub, ref in ids["subscriptions"]),
        *((f"/runs/{ids[k]}/", "sweep") for k in ("sweep", "published_sweep")),
        (f"/gpus/{ids['gpu']}/", "bars"),
        *((f"/compare/?runs={runs}", "compare") for runs in (compare, ids["same_figure"], ids["depths"])),
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_every_chart_plots_what_its_table_says(demo_site: DemoSite, chromium: Any, width: int) -> None:
    """The timeline's decode line, bars and CI band (as Plotly drew its fill), the run
    page's sweep panes, the GPU page's bars and the compare page's strips and sweeps
    at matching context, each against the table beside it (tests/boards/chart_values.py)."""
    context = chromium.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 600)
    page = context.new_page()
    problems: list[str] = []
    try:
        for path, kind in chart_pages(demo_site.ids):
            page.goto(demo_site.url + path, wait_until="load")
            page.wait_for_function(WAIT_FOR_CHARTS, timeout=15_000)
            problems.extend(f"{path} @{width}: {p}" for p in chart_mismatches(page, kind))
    finally:
        context.close()
    assert not problems, "\n".join(problems)
