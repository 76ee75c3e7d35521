// Charts in the page's colours: the server's Plotly figures are drawn for a light page, and with the
// system's dark setting (app.css's prefers-color-scheme palette) they take the card's background, the
// page's text and line colours from its CSS variables, and any trace, marker or shading colour too dark
// to tell from the card (under 3:1, WCAG 1.4.11) is lightened until it is not.
window.FleetTheme = (function () {
  "use strict";
  var dark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function cssVar(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }
  // "#2f5fd0", "#fff", "rgb(27, 31, 41)", "rgba(47,95,208,0.18)" as [r, g, b, a]; null for anything else.
  function parse(colour) {
    if (typeof colour !== "string") { return null; }
    var text = colour.trim(), m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(text);
    if (m) {
      var hex = m[1].length === 3 ? m[1].replace(/./g, "$&$&") : m[1];
      return [0, 2, 4].map(function (at) { return parseInt(hex.slice(at, at + 2), 16); }).concat([1]);
    }
    m = /^rgba?\(([^)]+)\)$/i.exec(text);
    if (!m) { return null; }
    var parts = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    return parts.length >= 3 ? [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1] : null;
  }
  function luminance(rgb) {
    return [0, 1, 2].reduce(function (sum, i) {
      var v = rgb[i] / 255;
      v = v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
      return sum + v * [0.2126, 0.7152, 0.0722][i];
    }, 0);
  }
  function contrast(a, b) {
    var x = luminance(a), y = luminance(b);
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  }
  // A colour mixed towards white until it stands 3:1 from the card (its alpha kept).
  function legible(colour, card) {
    var rgb = parse(colour);
    if (!rgb || contrast(rgb, card) >= 3) { return colour; }
    for (var step = 1; step <= 10; step++) {
      var mixed = rgb.slice(0, 3).map(function (v) { return Math.round(v + (255 - v) * step / 10); });
      if (contrast(mixed, card) >= 3) { rgb = mixed.concat([rgb[3]]); break; }
    }
    return "rgba(" + rgb.join(",") + ")";
  }
  // A bar's or point's colour as the eye sees it, laid over the card at its alpha, made legible and drawn
  // opaque: a see-through colour (the paper's grey bars, 25 %) kept its alpha however it was lightened,
  // and stayed some 1.4:1 on the dark card. Fills and shading stay see-through (legible, above).
  function solid(colour, card) {
    var rgb = parse(colour);
    if (!rgb || rgb[3] >= 1) { return legible(colour, card); }
    var seen = [0, 1, 2].map(function (i) { return Math.round(rgb[i] * rgb[3] + card[i] * (1 - rgb[3])); });
    return legible("rgb(" + seen.join(",") + ")", card);
  }
  function recolour(object, key, card, how) {
    if (!object) { return; }
    var value = object[key], fix = how || legible;
    object[key] = Array.isArray(value) ? value.map(function (c) { return fix(c, card); }) : fix(value, card);
  }

  // The figure's layout in the page's colours, and in dark mode its traces' and shapes' colours legible.
  function apply(figure) {
    var layout = figure.layout = figure.layout || {};
    var card = cssVar("--card", "#fff"), fg = cssVar("--fg", "#1d2330"), line = cssVar("--line", "#e3e6ec");
    layout.paper_bgcolor = card;  // the plot's own background stays see-through: the card's, through the paper
    layout.font = Object.assign({}, layout.font, {color: fg});
    layout.hoverlabel = Object.assign({bgcolor: card, bordercolor: line, font: {color: fg}}, layout.hoverlabel);
    Object.keys(layout).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) {
        layout[key] = Object.assign({gridcolor: line, zerolinecolor: line, linecolor: line}, layout[key]);
      }
    });
    var cardRgb = parse(card);
    if (!cardRgb || luminance(cardRgb) > 0.2) { return figure; }  // a light page: the server's colours
    (figure.data || []).forEach(function (trace) {
      recolour(trace.marker, "color", cardRgb, solid);
      recolour(trace.marker && trace.marker.line, "color", cardRgb);
      recolour(trace.line, "color", cardRgb);
      recolour(trace, "fillcolor", cardRgb);
    });
    // Shaded windows: a tint of 12 % that shows on white was barely there on the dark card. Only a tint is
    // deepened: a shape drawn whole (a cause's legend entry, opacity 1: its swatch) stays whole, and legible.
    (layout.shapes || []).forEach(function (shape) {
      recolour(shape, "fillcolor", cardRgb);
      recolour(shape.line, "color", cardRgb);
      if (typeof shape.opacity === "number" && shape.opacity < 1) { shape.opacity = Math.min(shape.opacity * 2, 0.35); }
    });
    (layout.annotations || []).forEach(function (note) {
      note.font = Object.assign({}, note.font, {color: fg});
      if (note.bgcolor && note.bgcolor !== "rgba(0,0,0,0)") { note.bgcolor = card; }
    });
    return figure;
  }
  // `redraw` when the system's setting changes while the page is open (an operator's all-day dashboard).
  function onChange(redraw) {
    if (!dark) { return; }
    if (dark.addEventListener) { dark.addEventListener("change", redraw); } else if (dark.addListener) { dark.addListener(redraw); }
  }
  return {apply: apply, onChange: onChange};
})();
