// Draw every Plotly figure on the page. Each chart is a <div data-figure="ID"> whose spec sits
// in a <script type="application/json" id="ID"> written by Django's json_script (no inline JS).
(function () {
  "use strict";
  function draw(el) {
    var spec = document.getElementById(el.dataset.figure);
    if (!spec || !window.Plotly) { return; }
    var figure = JSON.parse(spec.textContent);
    // The box keeps the figure's height: on a window resize Plotly's responsive mode sizes the plot
    // to its box, which would otherwise shrink to the CSS minimum and let the plot spill over what
    // follows it (the numbers under it).
    if (figure.layout && figure.layout.height) { el.style.height = figure.layout.height + "px"; }
    window.Plotly.newPlot(el, figure.data, figure.layout, {displaylogo: false, responsive: true, displayModeBar: false});
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-figure]").forEach(draw);
  });
})();
