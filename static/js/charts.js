// Draw every Plotly figure on the page. Each chart is a <div data-figure="ID"> whose spec sits
// in a <script type="application/json" id="ID"> written by Django's json_script (no inline JS).
(function () {
  "use strict";
  function draw(el) {
    var spec = document.getElementById(el.dataset.figure);
    if (!spec || !window.Plotly) { return; }
    var figure = JSON.parse(spec.textContent);
    window.Plotly.newPlot(el, figure.data, figure.layout, {displaylogo: false, responsive: true, displayModeBar: false});
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-figure]").forEach(draw);
  });
})();
