"""A chart's plotted values against its page's table, read in the browser: what the
site crawl checks on the timeline, sweep, GPU and compare pages.

Each check reads the table's printed cells and the drawn chart (Plotly's ``data`` on
the chart element, and for the timeline's CI band the vertices of the fill Plotly
drew, mapped back through its axes), and returns the mismatches in words: a value
off by more than the table's rounding, a point the table does not have, or one it
has that the chart lacks (a gap where a point is missing is right, a line or band
across it is not)."""

from __future__ import annotations

from typing import Any

# Shared by every check: a printed cell as a number ('1,234.5' → 1234.5; '–' → null)
# and "the chart's value prints as the table's" at the table's decimals.
_HELPERS = r"""
  const num = text => {
    const t = (text || '').trim().replace(/,/g, '').replace(/%$/, '');
    return t === '' || t === '–' || t === '-' ? null : parseFloat(t);
  };
  const prints = (value, cell, digits) => value !== null && value !== undefined && cell !== null &&
    Math.abs(value - cell) <= 0.5 * 10 ** -digits + 1e-9;
  const lines = gd => gd.data.filter(t => !(t.meta && t.meta.legend));
  const tokensOf = label => {
    const m = /^([\d.]+)\s*([KM]?)$/i.exec((label || '').trim());
    return m ? Math.round(parseFloat(m[1]) * {'': 1, K: 1024, M: 1048576}[m[2].toUpperCase()]) : null;
  };
"""

TIMELINE = (
    r"""
() => {
"""
    + _HELPERS
    + r"""
  const problems = [];
  const gd = document.getElementById('timeline-decode-chart');
  if (!gd || !gd.data) { return ['timeline: no decode chart']; }
  const rows = [...document.querySelectorAll('table.timeline-builds tbody tr')].map(tr => {
    const td = tr.querySelectorAll('td');
    const [low, high] = td[3].innerText.split('–');
    return {x: td[0].innerText.trim(), decode: num(td[2].innerText), low: num(low),
            high: high === undefined ? null : num(high)};
  });
  const line = gd.data.find(t => t.name === 'Decode (t/s)');
  const bars = line.error_y || {array: [], arrayminus: []};
  for (const row of rows) {
    const i = line.x.indexOf(row.x);
    if (i < 0) { problems.push(`timeline: build ${row.x} is not on the chart`); continue; }
    const y = line.y[i];
    if (row.decode === null ? y !== null && y !== undefined : !prints(y, row.decode, 2)) {
      problems.push(`timeline: ${row.x} plotted at ${y}, the table says ${row.decode}`);
    }
    if (row.low === null) {
      if (bars.array[i] !== null && bars.array[i] !== undefined) {
        problems.push(`timeline: an interval drawn at ${row.x}, which has none`);
      }
    } else if (!prints(y + bars.array[i], row.high, 2) || !prints(y - bars.arrayminus[i], row.low, 2)) {
      problems.push(`timeline: ${row.x}'s bar spans ${y - bars.arrayminus[i]}–${y + bars.array[i]}, ` +
                    `the table ${row.low}–${row.high}`);
    }
  }
  // The band as drawn: every vertex of its fill is one build's CI end, each shape
  // covers consecutive builds that all have a CI, and every CI end is a vertex.
  const index = gd._fullData.findIndex(t => t.name === '95% CI');
  const withCi = rows.filter(r => r.low !== null);
  if (index < 0) { return withCi.length ? [...problems, 'timeline: no CI band'] : problems; }
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const order = xa._categories;
  const tolerance = 0.006 + Math.abs(ya.p2l(0) - ya.p2l(1));
  const fills = [...gd.querySelectorAll('.scatterlayer .trace')[index].querySelectorAll('path.js-fill')];
  const seen = new Set();
  for (const fill of fills) {
    for (const shape of (fill.getAttribute('d') || '').split('M').filter(s => s.trim())) {
      const columns = new Set();
      for (const [, px, py] of shape.matchAll(/(-?[\d.]+),(-?[\d.]+)/g)) {
        const x = order[Math.round(xa.p2l(parseFloat(px)))];
        const y = ya.p2l(parseFloat(py));
        const row = rows.find(r => r.x === x);
        // The nearer of the build's two ends (a narrow CI's ends are a pixel or two apart).
        const nearest = row && row.low !== null &&
          [['low', row.low], ['high', row.high]].sort((a, b) => Math.abs(a[1] - y) - Math.abs(b[1] - y))[0];
        const end = nearest && Math.abs(nearest[1] - y) <= tolerance ? nearest : null;
        if (!end) {
          problems.push(`timeline: the band has a corner at ${x} ${y.toFixed(2)}, not a CI end of the table's`);
          continue;
        }
        seen.add(`${x} ${end[0]}`);
        columns.add(order.indexOf(x));
      }
      const span = [...columns].sort((a, b) => a - b);
      for (let c = span[0]; c <= span[span.length - 1]; c++) {
        const row = rows.find(r => r.x === order[c]);
        if (!row || row.low === null) { problems.push(`timeline: the band runs across ${order[c]}, which has no CI`); }
      }
    }
  }
  for (const row of withCi) {
    for (const end of ['low', 'high']) {
      if (!seen.has(`${row.x} ${end}`)) { problems.push(`timeline: the band leaves out ${row.x}'s ${end} end`); }
    }
  }
  return problems;
}
"""
)

# The run page's sweep table (#sweep) against the sweep figure's panes: column, decimals.
SWEEP = (
    r"""
() => {
"""
    + _HELPERS
    + r"""
  const problems = [];
  const gd = document.getElementById('sweep-fig-chart');
  const table = document.getElementById('sweep');
  if (!gd || !gd.data || !table) { return ['sweep: no chart or no table']; }
  const rows = [...table.querySelectorAll('tbody tr')]
    .map(tr => [...tr.querySelectorAll('td')].map(td => td.innerText));
  const panes = {'Prefill vs context': [1, 1], 'Decode vs context': [3, 2], 'TTFT vs context': [5, 0],
                 'Power range vs context': [7, 0], 'Energy efficiency vs context': [8, 0]};
  for (const [pane, [column, digits]] of Object.entries(panes)) {
    const trace = lines(gd).find(t => t.name.endsWith(': ' + pane));
    const expected = rows.map(r => [tokensOf(r[0]), num(r[column])]).filter(([, v]) => v !== null);
    // A depth without the figure is a gap (null), drawn as no point.
    const drawn = trace ? trace.x.map((x, i) => [x, trace.y[i]]).filter(([, y]) => y !== null) : [];
    if (drawn.length !== expected.length) {
      problems.push(`sweep: ${pane} has ${drawn.length} points, the table ${expected.length}`);
      continue;
    }
    expected.forEach(([x, v], i) => {
      if (x !== null && drawn[i][0] !== x) {
        problems.push(`sweep: ${pane} point ${i + 1} at ${drawn[i][0]}, the table's at ${x}`);
      }
      if (!prints(drawn[i][1], v, digits)) {
        problems.push(`sweep: ${pane} at ${x}: ${drawn[i][1]} drawn, ${v} in the table`);
      }
    });
  }
  return problems;
}
"""
)

# The GPU page's bars: the ranked table's decode t/s, first rows first.
BARS = (
    r"""
() => {
"""
    + _HELPERS
    + r"""
  const problems = [];
  const gd = document.getElementById('scope-bars-chart');
  if (!gd || !gd.data) { return ['bars: no chart']; }
  const table = [...document.querySelectorAll('#leaderboard tbody td.col-decode a.decode')].map(a => num(a.innerText))
    .filter(v => v !== null);
  // One trace per workload when the page ranks across workloads: the bars in rank
  // order are every trace's bars ordered by the y axis's category array.
  const order = (gd.layout.yaxis && gd.layout.yaxis.categoryarray) || [];
  const drawn = gd.data.flatMap(t => t.x.map((x, i) => [order.indexOf(t.y[i]), x]))
    .sort((a, b) => a[0] - b[0]).map(p => p[1]);
  if (!drawn.length || drawn.length > table.length) {
    problems.push(`bars: ${drawn.length} bars for ${table.length} rows`);
  }
  drawn.forEach((x, i) => {
    if (!prints(x, table[i], 2)) { problems.push(`bars: bar ${i + 1} is ${x}, row ${i + 1} says ${table[i]}`); }
  });
  return problems;
}
"""
)

# The compare page: each run's strip (its repetitions' mean) or published-mean diamond
# against the table's mean, and the table at matching context against the sweep panes.
COMPARE = (
    r"""
() => {
"""
    + _HELPERS
    + r"""
  const problems = [];
  const dist = document.getElementById('dist-chart');
  const means = {};
  for (const tr of document.querySelectorAll('#compare tbody tr')) {
    const id = tr.querySelector('td a').innerText.trim();
    means[id] = num(tr.querySelectorAll('td')[1].querySelector('.strong').innerText);
  }
  for (const trace of dist.data) {
    const id = trace.name.split(' ')[0];
    const ys = trace.y;
    const mean = ys.reduce((a, b) => a + b, 0) / ys.length;
    if (!(id in means)) { problems.push(`compare: a strip for ${id}, which the table does not have`); continue; }
    if (!prints(mean, means[id], 2)) {
      problems.push(`compare: ${id}'s strip averages ${mean}, the table says ${means[id]}`);
    }
  }
  const plotted = new Set(dist.data.map(t => t.name.split(' ')[0]));
  for (const [id, mean] of Object.entries(means)) {
    if (mean !== null && !plotted.has(id)) { problems.push(`compare: ${id} has a mean but no strip`); }
  }
  const matched = document.getElementById('matched');
  const sweep = document.getElementById('sweep-fig-chart');
  if (matched) {
    const heads = [...matched.querySelectorAll('thead th')].map(th => th.innerText.trim());
    const columns = heads.map((h, i) => [h.split(' ')[0], i]).filter(([, i]) => heads[i].endsWith('t/s'));
    for (const tr of matched.querySelectorAll('tbody tr')) {
      const cells = [...tr.querySelectorAll('td')].map(td => td.innerText);
      const depth = tokensOf(cells[0]);
      const runs = columns.map(([id]) => id);
      const values = columns.map(([, i]) => num(cells[i]));
      runs.forEach((id, i) => {
        const trace = lines(sweep.data ? sweep : {data: []}).find(t => t.name.startsWith(id + ' ') &&
          t.name.endsWith(': Decode vs context'));
        const at = trace ? trace.x.indexOf(depth) : -1;
        if (at < 0 || !prints(trace.y[at], values[i], 2)) {
          const drawn = at < 0 ? 'not drawn' : trace.y[at];
          problems.push(`compare: ${id} at ${cells[0]} is ${values[i]} in the table, ${drawn} on the sweep`);
        }
      });
    }
  }
  return problems;
}
"""
)

CHECKS = {"timeline": TIMELINE, "sweep": SWEEP, "bars": BARS, "compare": COMPARE}


def chart_mismatches(page: Any, kind: str) -> list[str]:
    """Return where the page's ``kind`` chart ('timeline', 'sweep', 'bars', 'compare')
    does not plot what its table prints; the page is open and its charts drawn."""
    return list(page.evaluate(CHECKS[kind]))
