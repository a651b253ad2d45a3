// Draws every [data-figure] element from the JSON that json_script put in the
// page. Figures come from leaderboard/boards/charts.py with user text already
// escaped. On a narrow screen a multi-pane grid becomes one column.
(function () {
  "use strict";
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
    if (el.clientWidth < 640) {
      // A phone's legend does not wrap: keep a long run label's first parts (the hover has it all).
      figure.data.forEach(function (trace) {
        var parts = String(trace.name || "").split(" · ");
        var name = parts[0];
        for (var i = 1; i < parts.length && (name + " · " + parts[i]).length <= 40; i++) { name += " · " + parts[i]; }
        if (name.length < String(trace.name || "").length) { trace.name = name + " …"; }
      });
    }
    window.Plotly.newPlot(el, figure.data, layout, {responsive: true, displaylogo: false});
    el.setAttribute("data-drawn", "true");
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
