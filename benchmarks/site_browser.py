"""What a visitor waits for: time to the load event and to the last chart drawn
in headless Chromium (Debian's /usr/bin/chromium through Playwright) for the
leaderboard, a run page, compare (6 runs) and sweeps (2 runs). Prints median and
p95 per page over fresh browser contexts (empty cache each time); not a test.

Serve the database filled by benchmarks/site_generate.py first, e.g.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rb_bench python manage.py runserver 127.0.0.1:8014 --noreload
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rb_bench python benchmarks/site_browser.py \
        --base-url http://127.0.0.1:8014 [--iterations 10]

"Last chart drawn" is the performance mark static/boards/charts.js sets after
drawing every chart on the page; a page without charts reports the load event.
Target: ≤ 1 s each (issue 12).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rb_bench")

from runners.distribution import percentile  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
TARGET_MS = 1000.0
TIMING = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const mark = performance.getEntriesByName("rigboard:charts-drawn")[0];
  return {load: nav.loadEventEnd, drawn: mark ? mark.startTime : null,
          charts: document.querySelectorAll("[data-drawn=true]").length};
}"""


def pages() -> list[tuple[str, str]]:
    """Return (name, path) for each page measured, picked from the data present."""
    import django

    django.setup()
    from leaderboard.results.models import Run

    swept = list(
        Run.objects.filter(sweep_points__isnull=False, n_samples__gt=0)
        .order_by("-pk")
        .values_list("pk", flat=True)
        .distinct()[:2]
    )
    six = list(Run.objects.filter(n_samples__gt=0).order_by("-pk").values_list("pk", flat=True)[:6])
    assert len(swept) == 2 and len(six) == 6, "run benchmarks/site_generate.py first"
    return [
        ("leaderboard", "/"),
        ("run page (reps + sweep)", f"/runs/{swept[0]}/"),
        ("compare 6 runs", "/compare/?runs=" + ",".join(map(str, six))),
        ("sweeps 2 runs", "/sweeps/?runs=" + ",".join(map(str, swept))),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8014")
    parser.add_argument("--iterations", type=int, default=10)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    print(f"load average (1 min) before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'page':28} {'load p50':>9} {'load p95':>9} {'drawn p50':>10} {'drawn p95':>10} {'charts':>6}  target")
    failed = False
    measured = pages()  # before Playwright's event loop starts: the ORM is synchronous
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"], headless=True
        )
        try:
            for name, path in measured:
                loads: list[float] = []
                drawn: list[float] = []
                charts = 0
                for i in range(args.iterations + 1):
                    context = browser.new_context(viewport={"width": 1400, "height": 900})
                    page = context.new_page()
                    response = page.goto(args.base_url + path, wait_until="load")
                    assert response is not None and response.status == 200, path
                    page.wait_for_function("performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
                    timing = page.evaluate(TIMING)
                    context.close()
                    if i == 0:
                        continue  # warm the server's caches and connection
                    loads.append(timing["load"])
                    drawn.append(timing["drawn"] if timing["drawn"] is not None else timing["load"])
                    charts = timing["charts"]
                worst = percentile(drawn, 95)
                failed |= worst > TARGET_MS
                verdict = f"≤ {TARGET_MS:.0f} {'ok' if worst <= TARGET_MS else 'MISSED'}"
                print(
                    f"{name:28} {statistics.median(loads):9.0f} {percentile(loads, 95):9.0f} "
                    f"{statistics.median(drawn):10.0f} {worst:10.0f} {charts:6d}  {verdict}"
                )
        finally:
            browser.close()
    print(f"load average (1 min) after: {os.getloadavg()[0]:.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
