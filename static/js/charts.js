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
  // A weekly chart's dates (2026-11-16, some 70 px) lie level and apart at whatever width its plot has, as
  // timeline.js spaces the job timeline's times. Plotly labels every dtick-th week from the first, dtick
  // the least that keeps to nticks (6) labels, and tilts them where they would touch: in a cause's chart
  // 148 px wide at 320 px, and in the overview's trend card at 1280 px (247 px of plot, six weeks 41 px
  // apart), a desktop's window. Where Plotly's labels lie level and the last week is among them they are
  // kept (a chart laid out wide). Otherwise every `step`-th week is labelled, counted back from the last
  // (the latest week keeps its date), the shortest step, Plotly's at least, whose labels, measured, lie
  // clear of each other; failing that the first and last weeks, or the last alone. The plot's width is the
  // chart's box less its side margins (the axis widens only the bottom one: automargin "height"); the
  // box's, not the window's, as a card is narrow on a desktop too. An axis the server tilts (tickangle)
  // is Plotly's.
  // The dates keep clear of the y-axes' labels beside the plot (a "0" sits level with their tops): a week
  // whose date would reach past the plot's left edge is not labelled (Plotly's ticks start at the first
  // week, whose date, in a plot of weeks narrower than a date, began under the "0"), unless that leaves the
  // last week alone where two would lie apart; the labels of the axis on a side a date shown still reaches
  // past then stand off by as much (the last week's date, always shown, past the right edge: a cause's
  // Jobs axis).
  // CATEGORY_TICK_PX: Plotly's room for a label on a category axis that sets no nticks.
  var LABEL_GAP_PX = 5, CATEGORY_TICK_PX = 15;
  var measure = document.createElement("canvas").getContext("2d");
  function fitWeeks(figure, boxPx) {
    var layout = figure.layout || {}, axis = layout.xaxis || {}, margin = layout.margin || {};
    var trace = (figure.data || [])[0] || {};
    if (axis.type !== "category" || axis.tickangle !== undefined || !Array.isArray(trace.x)) { return; }
    var weeks = trace.x, count = weeks.length, plotPx = boxPx - (margin.l || 0) - (margin.r || 0);
    if (count < 2 || !(plotPx > 0)) { return; }
    var font = layout.font || {};
    measure.font = (font.size || 12) + "px " + (font.family || "sans-serif");
    var labelPx = Math.max.apply(null, weeks.map(function (week) { return measure.measureText(String(week)).width; }));
    var slotPx = plotPx / count;
    function apart(step) { return step * slotPx >= labelPx + LABEL_GAP_PX; }
    // How far the date of week `index` (0 the first) reaches past the plot's left edge; 0 or less: not at all.
    function pastLeft(index) { return labelPx / 2 - (index + 0.5) * slotPx; }
    // The labels of the y-axes on the left (`side` "left") or right stand off by `pastPx` and a gap, if any.
    function standOff(side, pastPx) {
      Object.keys(layout).filter(function (key) { return /^yaxis\d*$/.test(key); }).forEach(function (key) {
        if ((layout[key].side === "right" ? "right" : "left") === side && pastPx > 0) {
          layout[key] = Object.assign({}, layout[key], {ticklabelstandoff: Math.ceil(pastPx + LABEL_GAP_PX)});
        }
      });
    }
    standOff("right", pastLeft(0));  // the last week's date past the right edge: the first's, mirrored
    var plotlyStep = Math.max(1, Math.ceil(count / (axis.nticks || plotPx / CATEGORY_TICK_PX)));
    if (apart(plotlyStep) && (count - 1) % plotlyStep === 0 && pastLeft(0) <= 0) { return; }
    var step = Math.min(plotlyStep, count - 1);
    while (step < count - 1 && !apart(step)) { step += 1; }
    if (!apart(step)) { step = count; }  // the first and last weeks would touch: the last alone
    var shown = [weeks[count - 1]], index = count - 1 - step;
    for (; index >= 0 && pastLeft(index) <= 0; index -= step) { shown.unshift(weeks[index]); }
    if (shown.length === 1 && index >= 0) { shown.unshift(weeks[index]); standOff("left", pastLeft(index)); }
    layout.xaxis = Object.assign({}, axis, {tickmode: "array", tickvals: shown, ticktext: shown, nticks: null});
  }
  // A category axis the server tilts (the utilization histogram's "0–10" … "90–100", at -35°): its labels are
  // parallel lines of type a category's width apart along the axis, so |sin(angle)| of that width apart
  // across them. Where that is less than a line of type (a phone: categories 19 px apart at 320 px, 11 px
  // across for 12 px type, read as "0–1010–2020–30") they stand upright, the whole width apart. The plot's
  // width is the box's less its side margins, as fitWeeks has it.
  function fitTilted(figure, boxPx) {
    var layout = figure.layout || {}, axis = layout.xaxis || {}, margin = layout.margin || {};
    var trace = (figure.data || [])[0] || {};
    if (axis.type !== "category" || typeof axis.tickangle !== "number" || !Array.isArray(trace.x)) { return; }
    var plotPx = boxPx - (margin.l || 0) - (margin.r || 0), typePx = (axis.tickfont || layout.font || {}).size || 12;
    var acrossPx = (plotPx / trace.x.length) * Math.abs(Math.sin(axis.tickangle * Math.PI / 180));
    if (plotPx > 0 && acrossPx < typePx + 1) { layout.xaxis = Object.assign({}, axis, {tickangle: -90}); }
  }
  // The figure as the server wrote it, laid out for a box `boxPx` wide: for a phone when `narrow`.
  function figureFor(spec, narrow, boxPx) {
    var figure = JSON.parse(spec.textContent);
    if (narrow) { fitNarrow(figure); }
    fitWeeks(figure, boxPx);
    fitTilted(figure, boxPx);
    if (window.FleetTheme) { window.FleetTheme.apply(figure); }  // the page's colours, light or dark
    return figure;
  }
  function draw(el) {
    var spec = document.getElementById(el.dataset.figure);
    if (!spec || !window.Plotly) { return; }
    var config = {displaylogo: false, responsive: true, displayModeBar: false};
    var shown = null;  // what the drawing is laid out for: a phone or not, the weeks labelled, the tilt of the x labels and how far a right-hand axis's labels stand off
    // The chart laid out for its box as it is now, and drawn by `plot` (Plotly.newPlot, or Plotly.react to
    // draw it again) unless it is laid out so already and `always` is false.
    function layOut(plot, always) {
      var narrow = window.FleetNarrow.isNarrow(el), figure = figureFor(spec, narrow, el.clientWidth);
      var layout = figure.layout || {}, standoffs = Object.keys(layout).map(function (key) {
        return /^yaxis\d*$/.test(key) ? layout[key].ticklabelstandoff || 0 : 0;
      });
      var xaxis = layout.xaxis || {}, layoutFor = JSON.stringify([narrow, xaxis.tickvals || null, xaxis.tickangle, standoffs]);
      if (layoutFor === shown && !always) { return; }
      shown = layoutFor;
      // The box keeps the figure's height: on a window resize Plotly's responsive mode sizes the plot
      // to its box, which would otherwise shrink to the CSS minimum and let the plot spill over what
      // follows it (the numbers under it).
      if (figure.layout && figure.layout.height) { el.style.height = figure.layout.height + "px"; }
      plot(el, figure.data, figure.layout, config);
    }
    layOut(window.Plotly.newPlot, true);
    // The box resized (a phone turned sideways, a window resized, a card narrowed with it): across a
    // phone's width, names wrapped or not, and the height and legend type that go with them; at any
    // width, the weeks labelled for the plot's new width. Drawn again from the spec, as a load at that width.
    window.FleetNarrow.onSettled(el, function () { layOut(window.Plotly.react, false); });
    // The system's light or dark setting changed: drawn again in the page's new colours.
    if (window.FleetTheme) {
      window.FleetTheme.onChange(function () { layOut(window.Plotly.react, true); });
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-figure]").forEach(draw);
  });
})();
