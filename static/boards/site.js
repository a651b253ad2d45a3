// Small page behaviour with no framework: the "All columns" toggle that shows
// a phone the columns it hides (the table then scrolls sideways).
(function () {
  "use strict";
  function init() {
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
