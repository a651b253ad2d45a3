// Small page behaviour with no framework: the "All columns" toggle that shows
// a phone the columns it hides (the table then scrolls sideways).
(function () {
  "use strict";
  function loadInOrder(urls) {
    if (!urls.length) { return; }
    var script = document.createElement("script");
    script.src = urls[0];
    script.onload = function () { loadInOrder(urls.slice(1)); };
    document.head.appendChild(script);
  }
  function lazyCharts() {
    // A closed <details> whose charts need Plotly fetches it the first time it opens.
    var boxes = document.querySelectorAll("details[data-lazy-scripts]");
    for (var i = 0; i < boxes.length; i++) {
      boxes[i].addEventListener("toggle", function (event) {
        var box = event.target;
        if (!box.open || box.getAttribute("data-loaded")) { return; }
        box.setAttribute("data-loaded", "true");
        loadInOrder(box.getAttribute("data-lazy-scripts").split(" "));
      });
    }
  }
  function init() {
    lazyCharts();
    var button = document.getElementById("all-columns");
    var table = document.getElementById("leaderboard");
    if (!button || !table) { return; }
    button.addEventListener("click", function () {
      var on = table.classList.toggle("all-columns");
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.textContent = on ? "Fewer columns" : "All columns";
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
