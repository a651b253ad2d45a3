// Sort a table.sortable by the clicked column: numbers as numbers (data-sort wins
// over the text), "–" last; a second click reverses the order.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, column) {
      th.setAttribute("role", "button");
      th.setAttribute("tabindex", "0");
      th.title = "Sort by this column";
      function sort() {
        var descending = th.getAttribute("aria-sort") !== "descending";
        table.querySelectorAll("thead th").forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        function key(row) {
          var cell = row.cells[column];
          var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
          var number = parseFloat(raw);
          return raw === "" || raw === "–" ? null : (isNaN(number) ? raw : number);
        }
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (x === null) return 1;
          if (y === null) return -1;
          var order = x < y ? -1 : x > y ? 1 : 0;
          return descending ? -order : order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (event) { if (event.key === "Enter") sort(); });
    });
  });
});
