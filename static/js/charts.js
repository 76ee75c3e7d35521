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
  // A weekly chart on a phone: its weeks' dates (2026-11-16, some 68 px) as far apart as they need to lie
  // level, as timeline.js spaces the job timeline's times. Plotly put up to six (nticks) in a cause's
  // chart 148 px wide at 320 px, 30 px apart, and tilted them. Here every `step`-th week is labelled,
  // counted back from the last (the latest week keeps its date): the shortest step whose labels, measured,
  // lie clear of each other, two at least; failing that the first and last weeks. Only in a phone's
  // window: a desktop's overview lays its trend out in a card narrower than the breakpoint, and keeps
  // Plotly's ticks there, as a chart laid out wide does and an axis the server tilts itself (tickangle).
  var LABEL_GAP_PX = 6;
  var phoneWindow = window.matchMedia("(max-width: " + (window.FleetNarrow.NARROW_PX - 1) + "px)");
  var measure = document.createElement("canvas").getContext("2d");
  function fitWeeks(figure, boxPx) {
    var layout = figure.layout || {}, axis = layout.xaxis || {}, margin = layout.margin || {};
    var trace = (figure.data || [])[0] || {};
    if (!phoneWindow.matches || axis.type !== "category" || axis.tickangle !== undefined || !Array.isArray(trace.x)) { return; }
    var weeks = trace.x, count = weeks.length, plotPx = boxPx - (margin.l || 0) - (margin.r || 0);
    if (count < 3 || !(plotPx > 0)) { return; }
    var font = layout.font || {};
    measure.font = (font.size || 12) + "px " + (font.family || "sans-serif");
    var labelPx = Math.max.apply(null, weeks.map(function (week) { return measure.measureText(String(week)).width; }));
    var slotPx = plotPx / count, step = count - 1;
    for (var tried = 1; tried < count; tried += 1) {
      if (tried * slotPx >= labelPx + LABEL_GAP_PX) { step = tried; break; }
    }
    var shown = [];
    for (var index = count - 1; index >= 0; index -= step) { shown.unshift(weeks[index]); }
    layout.xaxis = Object.assign({}, axis, {tickmode: "array", tickvals: shown, ticktext: shown, nticks: null});
  }
  // The figure as the server wrote it, laid out for a phone when `narrow` (its box `boxPx` wide).
  function figureFor(spec, narrow, boxPx) {
    var figure = JSON.parse(spec.textContent);
    if (narrow) { fitNarrow(figure); fitWeeks(figure, boxPx); }
    if (window.FleetTheme) { window.FleetTheme.apply(figure); }  // the page's colours, light or dark
    return figure;
  }
  function draw(el) {
    var spec = document.getElementById(el.dataset.figure);
    if (!spec || !window.Plotly) { return; }
    var narrowShown = window.FleetNarrow.isNarrow(el);
    var figure = figureFor(spec, narrowShown, el.clientWidth);
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
      figure = figureFor(spec, narrow, el.clientWidth);
      keepHeight();
      window.Plotly.react(el, figure.data, figure.layout, config);
    });
    // A window widened past a phone's, or narrowed to one, with the chart's box narrow either way (the
    // overview's cards): its weeks labelled again for the window, as one loaded at its new width.
    phoneWindow.addEventListener("change", function () {
      figure = figureFor(spec, narrowShown, el.clientWidth);
      window.Plotly.react(el, figure.data, figure.layout, config);
    });
    // The system's light or dark setting changed: drawn again in the page's new colours.
    if (window.FleetTheme) {
      window.FleetTheme.onChange(function () {
        figure = figureFor(spec, narrowShown, el.clientWidth);
        window.Plotly.react(el, figure.data, figure.layout, config);
      });
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-figure]").forEach(draw);
  });
})();
