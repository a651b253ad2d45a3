// Draws every [data-figure] element from the JSON that json_script put in the
// page. Figures come from leaderboard/boards/charts/ (and campaigns/, regressions/) with user text already
// escaped. On a narrow screen a multi-pane grid becomes one column and a
// horizontal bar chart's long labels wrap.
(function () {
  "use strict";
  var LINE_PX = 16;
  function cut(text, chars) {
    // Shorten to `chars` characters with an ellipsis, never inside an escaped entity (&amp;).
    if (text.length <= chars) { return text; }
    var kept = text.slice(0, chars - 1);
    var amp = kept.lastIndexOf("&");
    if (amp > -1 && kept.indexOf(";", amp) === -1) { kept = kept.slice(0, amp); }
    return kept + "…";
  }
  function wrapLabel(label, chars, maxLines) {
    // "1. model quant · stack · rig" → lines of at most `chars` characters, broken
    // between its " · " parts, else between words; a word longer than a line is
    // shortened, and past `maxLines` lines the last one ends with an ellipsis.
    var lines = [];
    String(label).split(" · ").forEach(function (part) {
      part.split(" ").forEach(function (word, i) {
        var last = lines.length - 1;
        var joined = last >= 0 ? lines[last] + (i === 0 ? " · " : " ") + word : null;
        if (joined !== null && (joined.length <= chars || (word.length > chars && lines[last].length < chars / 2))) {
          // A word too long for any line is cut where it is, not after a short line.
          lines[last] = cut(joined, chars);
        } else {
          lines.push(cut(word, chars));
        }
      });
    });
    if (lines.length > maxLines) {
      lines = lines.slice(0, maxLines);
      var tail = lines[maxLines - 1];
      lines[maxLines - 1] = tail.slice(-1) === "…" ? tail : cut(tail + " …", chars);
    }
    return lines;
  }
  function phoneBarLabels(figure, layout, width) {
    // A horizontal bar chart's category labels sit beside the bars: on a phone a
    // long one runs off the chart's left edge. Wrap each into at most three lines
    // that take at most half the width (about 7 px a character); the bar's hover
    // text keeps the whole label.
    var chars = Math.max(12, Math.floor(width / 2 / 7));
    var categories = [];
    figure.data.forEach(function (trace) {
      (trace.y || []).forEach(function (y) { if (categories.indexOf(y) === -1) { categories.push(y); } });
    });
    var most = 1;
    var ticktext = categories.map(function (label) {
      var lines = wrapLabel(label, chars, 3);
      most = Math.max(most, lines.length);
      return lines.join("<br>");
    });
    layout.yaxis = Object.assign({}, layout.yaxis, {tickmode: "array", tickvals: categories, ticktext: ticktext});
    // (90 px for the axis and margins, and whatever a legend below the axis adds to the bottom margin.)
    var below = Math.max(0, ((layout.margin || {}).b || 0) - 50);
    layout.height = Math.max(layout.height || 0, categories.length * (most * LINE_PX + 12) + 90 + below);
  }
  function draw(el) {
    var source = document.getElementById(el.getAttribute("data-figure"));
    if (!source || !window.Plotly) { return; }
    var figure = JSON.parse(source.textContent);
    if (!figure.data || figure.data.length === 0) {
      el.textContent = "No data to chart.";
      el.classList.add("chart-empty");
      return;
    }
    var layout = figure.layout || {};
    if (el.clientWidth < 640 && layout.xaxis && layout.xaxis.ticktext) {
      // On a phone, category labels keep their first line (the run number); the hover has the rest.
      layout.xaxis.ticktext = layout.xaxis.ticktext.map(function (t) { return String(t).split("<br>")[0]; });
    }
    if (layout.grid && layout.grid.columns > 1 && el.clientWidth < 640) {
      // One row per pane drawn (an odd count would leave an empty row as a gap above the legend).
      var panes = Object.keys(layout).filter(function (k) { return /^xaxis\d*$/.test(k); }).length ||
        layout.grid.rows * layout.grid.columns;
      layout.grid.columns = 1;
      layout.grid.rows = panes;
      layout.grid.ygap = 0.4;
      layout.height = 330 * panes;
      // The legend just below the last pane, not a fifth of the tall figure's height below it.
      layout.legend = Object.assign({}, layout.legend, {y: -70 / (layout.height - 80)});
    }
    if (el.clientWidth < 640 && figure.data.some(function (t) { return t.orientation === "h"; })) {
      phoneBarLabels(figure, layout, el.clientWidth);
    }
    if (el.clientWidth < 640) {
      // A phone's legend does not wrap: keep a long run label's first parts (the hover has it all).
      // A trace the legend does not show keeps its whole name (its run and its pane).
      figure.data.forEach(function (trace) {
        if (trace.showlegend === false) { return; }
        var parts = String(trace.name || "").split(" · ");
        var name = parts[0];
        for (var i = 1; i < parts.length && (name + " · " + parts[i]).length <= 40; i++) { name += " · " + parts[i]; }
        if (name.length < String(trace.name || "").length) { trace.name = name + " …"; }
      });
    }
    // On a phone the toolbar (zoom, pan, download) would sit over the legend and the
    // title at the top right: left out there, where a pinch zooms the page anyway.
    var config = {responsive: true, displaylogo: false, displayModeBar: el.clientWidth >= 640 ? "hover" : false};
    var drawn = window.Plotly.newPlot(el, figure.data, layout, config);
    // Marked drawn once the tick labels are untangled (tests and benchmarks wait on it).
    Promise.resolve(drawn).then(function () { return untangle(el); }).then(function () {
      el.setAttribute("data-drawn", "true");
    });
  }
  function tickBoxes(el, axisId) {
    return [].map.call(el.querySelectorAll("g." + axisId + "tick text"), function (t) {
      return t.getBoundingClientRect();
    }).filter(function (r) { return r.width > 0 && r.height > 0; });
  }
  function overlapping(el, axisId) {
    var boxes = tickBoxes(el, axisId);
    for (var i = 0; i < boxes.length; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
            Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5) { return true; }
      }
    }
    return false;
  }
  function untangle(el) {
    // Tick labels that run into each other (a log axis's 128K and 198K, commit hashes
    // on a phone, long category names): an x axis's labels turn upright first (the
    // margin grows to fit them); labels that still collide, on any axis, are thinned
    // to every second, third… one, the first and last kept. The hover keeps every value.
    var full = el._fullLayout;
    if (!full) { return null; }
    var names = Object.keys(full).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
    var turn = {};
    names.forEach(function (name) {
      var ax = full[name];
      if (name.charAt(0) === "x" && overlapping(el, ax._id)) {
        turn[name + ".tickangle"] = -90;
        turn[name + ".automargin"] = true;
      }
    });
    var turned = Object.keys(turn).length ? window.Plotly.relayout(el, turn) : null;
    return Promise.resolve(turned).then(function () {
      var thin = {};
      names.forEach(function (name) {
        var ax = el._fullLayout[name];
        var ticks = (ax._vals || []).filter(function (v) { return v.text !== undefined && v.text !== ""; });
        if (ticks.length < 3 || !overlapping(el, ax._id)) { return; }
        var boxes = tickBoxes(el, ax._id);
        var along = name.charAt(0) === "x" ? "width" : "height";
        var span = Math.abs(ax._length || 1);
        var need = boxes.reduce(function (most, r) { return Math.max(most, r[along]); }, 0) + 4;
        var step = Math.max(2, Math.ceil(need * ticks.length / span));
        var kept = ticks.filter(function (v, i) { return i % step === 0; });
        var last = ticks[ticks.length - 1];
        if (kept[kept.length - 1] !== last) { kept[kept.length - 1] = last; }
        thin[name + ".tickmode"] = "array";
        // A log axis's ticks are placed by their log10; tickvals take the values.
        thin[name + ".tickvals"] = kept.map(function (v) { return ax.type === "log" ? Math.pow(10, v.x) : v.x; });
        thin[name + ".ticktext"] = kept.map(function (v) { return v.text; });
      });
      return Object.keys(thin).length ? window.Plotly.relayout(el, thin) : null;
    });
  }
  function drawAll() {
    var charts = document.querySelectorAll("[data-figure]");
    for (var i = 0; i < charts.length; i++) { draw(charts[i]); }
    // For benchmarks/site_browser.py: when the last chart was drawn.
    if (window.performance && performance.mark) { performance.mark("rigboard:charts-drawn"); }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
