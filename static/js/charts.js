// Draw every Plotly figure on the page. Each chart is a <div data-figure="ID"> whose spec sits
// in a <script type="application/json" id="ID"> written by Django's json_script (no inline JS).
(function () {
  "use strict";
  // A name broken into lines of about `width` characters, between words.
  function wrapped(text, width) {
    var lines = [], line = "";
    text.split(" ").forEach(function (word) {
      if (line && (line + " " + word).length > width) { lines.push(line); line = word; }
      else { line = line ? line + " " + word : word; }
    });
    lines.push(line);
    return lines.join("<br>");
  }
  // In a narrow box (a phone) a horizontal bar chart's long names would leave its bars no room:
  // they are wrapped (the left margin, automargin, shrinks with them); then the chart grows so
  // that wrapped names keep apart, and its legend's type gets smaller so that its entries fit.
  // (The breakpoint is narrow.js's; resized across it, a chart is drawn again for its new width.)
  var NAME_CHARS = 20, LINE_PX = 15;
  function fitNarrow(figure) {
    var layout = figure.layout || {}, rows = 0, lines = 1;
    (figure.data || []).forEach(function (trace) {
      if (trace.orientation !== "h" || !Array.isArray(trace.y)) { return; }
      trace.y = trace.y.map(function (name) {
        if (typeof name !== "string") { return name; }
        var text = wrapped(name, NAME_CHARS);
        lines = Math.max(lines, text.split("<br>").length);
        return text;
      });
      rows = Math.max(rows, trace.y.length);
    });
    if (lines === 1) { return; }
    if (layout.height) { layout.height = Math.max(layout.height, rows * (lines + 1) * LINE_PX + 120); }
    if (layout.legend) { layout.legend.font = Object.assign({}, layout.legend.font, {size: 10}); }
  }
  // The figure as the server wrote it, laid out for a phone when `narrow`.
  function figureFor(spec, narrow) {
    var figure = JSON.parse(spec.textContent);
    if (narrow) { fitNarrow(figure); }
    if (window.FleetTheme) { window.FleetTheme.apply(figure); }  // the page's colours, light or dark
    return figure;
  }
  function draw(el) {
    var spec = document.getElementById(el.dataset.figure);
    if (!spec || !window.Plotly) { return; }
    var narrowShown = window.FleetNarrow.isNarrow(el);
    var figure = figureFor(spec, narrowShown);
    // The box keeps the figure's height: on a window resize Plotly's responsive mode sizes the plot
    // to its box, which would otherwise shrink to the CSS minimum and let the plot spill over what
    // follows it (the numbers under it).
    function keepHeight() { if (figure.layout && figure.layout.height) { el.style.height = figure.layout.height + "px"; } }
    keepHeight();
    var config = {displaylogo: false, responsive: true, displayModeBar: false};
    window.Plotly.newPlot(el, figure.data, figure.layout, config);
    // Names wrapped or not, and the height and legend type that go with them: drawn again, from the spec.
    window.FleetNarrow.onCrossing(el, function () { return narrowShown; }, function (narrow) {
      narrowShown = narrow;
      figure = figureFor(spec, narrow);
      keepHeight();
      window.Plotly.react(el, figure.data, figure.layout, config);
    });
    // The system's light or dark setting changed: drawn again in the page's new colours.
    if (window.FleetTheme) {
      window.FleetTheme.onChange(function () {
        figure = figureFor(spec, narrowShown);
        window.Plotly.react(el, figure.data, figure.layout, config);
      });
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-figure]").forEach(draw);
  });
})();
