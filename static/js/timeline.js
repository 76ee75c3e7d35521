// The job timeline: drawn from JSON, and re-fetched at full resolution for a zoomed window.
(function () {
  "use strict";
  var el = document.getElementById("timeline");
  if (!el || !window.Plotly) { return; }
  var source = el.dataset.src;
  var status = document.getElementById("timeline-status");
  var busy = false;

  var form = document.getElementById("timeline-window");

  function say(text) { if (status) { status.textContent = text; } }

  // Plotly's toolbar without what does nothing here or should not be: Box and Lasso Select (no
  // selection is used) and Plotly 4's "Share chart...", which opens Plotly Cloud and posts the chart,
  // the job's series and names, to it. Each was a Tab stop on the way through the chart.
  var PLOT_CONFIG = {displaylogo: false, responsive: true, showSendToCloud: false,
                     modeBarButtonsToRemove: ["select2d", "lasso2d"]};

  // On a phone (a box narrower than narrow.js's NARROW_PX) a legend's column at the right (7 to 32
  // GPUs) left the plot a third of the width: the legend goes above the plot, in smaller type, and the
  // chart grows by the rows it takes (in as many columns as fit: narrowLayout), which Plotly's margin
  // would otherwise take from the panels. Plotly's toolbar stays hidden there (the class timeline-narrow,
  // app.css): down the right edge it stood beside the plot's last pixels and over its hover labels, in a
  // margin the plot gets back. Zooming stays: drag across the chart, or the window form above it and
  // Whole job, which the keyboard reaches too.
  var LEGEND_ROW_PX = 20;
  var PLOT_RIGHT_PX = 20, NARROW_TOP_PX = 10;  // the phone layout's right and top margins
  var wideLayout = null;  // the server's legend, margin and height, which the phone layout replaces
  var narrowShown = null;  // whether the chart on the page has the phone layout

  function isNarrow() { return window.FleetNarrow.isNarrow(el); }

  function layoutParts(layout) {
    return JSON.parse(JSON.stringify({legend: layout.legend, margin: layout.margin, height: layout.height}));
  }

  // A legend entry's width besides its name: Plotly's line sample (itemwidth 30) and the gaps around
  // it and after the entry.
  var ENTRY_PX = 45, LEGEND_FONT_PX = 10;
  var fontFamily = "sans-serif";
  var measure = document.createElement("canvas").getContext("2d");
  function nameWidth(name) {
    measure.font = LEGEND_FONT_PX + "px " + fontFamily;
    return measure.measureText(String(name || "")).width;
  }

  // A 32-GPU job's entries each took a row (about 640 px above the chart at 390 px): Plotly wraps a
  // legend above the plot at the plot's width, which two entries overran. Started near the chart's left
  // edge (x below 0, where Plotly wraps at the margin and plot's width; LEGEND_LEFT_PX in, as Plotly's
  // auto-margin widens the left margin for anything nearer) with every entry as wide as the longest
  // name, they fall into as many columns as fit, and the chart grows by the rows that makes.
  var LEGEND_LEFT_PX = 12;
  // The legend's entries: the traces' and the shapes' that have one (each cause's shaded windows).
  function legendNames(data, shapes) {
    var traces = data.filter(function (trace) { return trace.showlegend !== false; });
    var shaded = (shapes || []).filter(function (shape) { return shape.showlegend === true; });
    return traces.concat(shaded).map(function (item) { return item.name; });
  }

  // A name wider than `maxPx` broken between words into lines that fit (Plotly draws <br> as a new
  // line): 320 px wide, "Inefficient host-GPU data transfer: idle windows" ran past the chart's edge.
  function wrapName(name, maxPx) {
    name = String(name || "");
    if (nameWidth(name) <= maxPx) { return name; }
    var lines = [], line = "";
    name.split(" ").forEach(function (word) {
      var longer = line ? line + " " + word : word;
      if (line && nameWidth(longer) > maxPx) { lines.push(line); line = word; } else { line = longer; }
    });
    if (line) { lines.push(line); }
    return lines.join("<br>");
  }

  function narrowLayout(data, wide, shapes, shapeNames) {
    var left = (wide.margin && wide.margin.l) || 0, right = PLOT_RIGHT_PX;
    var roomPx = Math.max(el.clientWidth - right - LEGEND_LEFT_PX - ENTRY_PX, 40);
    // The causes' entries (the shapes' names, as the server wrote them) broken to fit the legend.
    var wrapped = (shapes || []).map(function (shape, index) {
      return shape.showlegend === true ? wrapName(shapeNames[index], roomPx) : shapeNames[index];
    });
    var names = legendNames(data, (shapes || []).map(function (shape, index) {
      return Object.assign({}, shape, {name: wrapped[index]});
    }));
    var lines = names.map(function (name) { return String(name || "").split("<br>"); });
    var namePx = Math.ceil(Math.max.apply(null, [].concat.apply([], lines).map(nameWidth).concat([0]))) + 2;
    var columns = Math.max(1, Math.floor((el.clientWidth - right - LEGEND_LEFT_PX) / (ENTRY_PX + namePx)));
    var extraLines = lines.reduce(function (sum, parts) { return sum + parts.length - 1; }, 0);
    var plotPx = Math.max(el.clientWidth - left - right, 1);
    return {
      legend: {orientation: "h", x: Math.min(0, LEGEND_LEFT_PX - left) / plotPx, xanchor: "left",
               y: 1.02, yanchor: "bottom", font: {size: LEGEND_FONT_PX}, tracegroupgap: 0,
               entrywidth: namePx, entrywidthmode: "pixels"},
      margin: Object.assign({}, wide.margin, {r: right, t: NARROW_TOP_PX}),
      height: (wide.height || 450) + (Math.ceil(names.length / columns) + extraLines) * LEGEND_ROW_PX,
      shapeNames: wrapped,
    };
  }

  // The shapes' legend names as the server wrote them (the wide layout's), set back when the chart
  // widens again.
  var wideShapeNames = [];
  function shapeNamesOf(shapes) { return (shapes || []).map(function (shape) { return shape.name; }); }
  // Plotly's relayout of each shape's name that differs from what is drawn.
  function shapeNameUpdate(names) {
    var update = {};
    (el.layout.shapes || []).forEach(function (shape, index) {
      if (names[index] !== undefined && shape.name !== names[index]) { update["shapes[" + index + "].name"] = names[index]; }
    });
    return update;
  }

  // The time axis on a phone: labels as far apart as they need to lie level. Plotly tilts labels whose
  // boxes meet, and a tilted date ran into the axis's title under it, out of the margin kept for it: a
  // label every minute of an 8-GPU job's first minutes at 390 px, and four labels of hours in the 178 px
  // plot at 320 px (the first, a time with the date under it, is 70 px wide). Told a count (nticks),
  // Plotly rounds its step up to the next of its own, which left one label alone under a 10-day job. So
  // on a phone the step is chosen here from STEPS, close together: the shortest that shows two labels
  // or more, each clear of the next; failing that, the longest that shows two. The wide chart keeps
  // Plotly's own ticks.
  var SECOND = 1000, MINUTE = 60 * SECOND, HOUR = 60 * MINUTE, DAY = 24 * HOUR;
  function times(unit, counts) { return counts.map(function (count) { return count * unit; }); }
  var STEPS = [].concat(times(SECOND, [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 45]),
                        times(MINUTE, [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 45]),
                        times(HOUR, [1, 2, 3, 4, 6, 8, 12, 18]),
                        times(DAY, [1, 2, 3, 4, 5, 7, 10, 14, 21, 28, 42, 56, 91, 182, 364]));
  var TICK_FONT_PX = 12, LABEL_GAP_PX = 6;
  var NARROW_TICKS = 4;  // where no step can be chosen (no range yet): about as many labels, from Plotly
  function labelWidth(text) {
    measure.font = TICK_FONT_PX + "px " + fontFamily;
    return measure.measureText(text).width;
  }
  // A time of the layout's range in ms, its wall clock read as UTC (as Plotly draws it).
  function wallMs(value) {
    var text = String(value).replace(" ", "T");
    return Date.parse(/(Z|[+-]\d\d:?\d\d)$/i.test(text) ? text : text + "Z");
  }
  function narrowAxis(range) {
    var left = (wideLayout && wideLayout.margin && wideLayout.margin.l) || 0;
    var plotPx = el.clientWidth - left - PLOT_RIGHT_PX;
    var from = range ? wallMs(range[0]) : NaN, to = range ? wallMs(range[1]) : NaN;
    if (!(plotPx > 0 && to > from)) { return {nticks: NARROW_TICKS}; }
    var dateLabel = labelWidth("2026-11-16");
    // The labels a step puts in view, each's middle and width: the date is under the first and where the
    // day changes (the server's tickformatstops; seconds shown up to a step of a minute), and Plotly hides
    // a label that would run past the chart's right edge.
    function labels(step, anchor) {
      var time = labelWidth(step <= MINUTE ? "00:00:00" : "00:00"), shown = [];
      for (var at = anchor + Math.ceil((from - anchor) / step) * step; at <= to && shown.length < 12; at += step) {
        var newDay = Math.floor(at / DAY) !== Math.floor((at - step) / DAY);
        var width = step >= DAY || newDay || !shown.length ? dateLabel : time;
        var middle = (at - from) / (to - from) * plotPx;
        if (middle + width / 2 <= plotPx + PLOT_RIGHT_PX) { shown.push({middle: middle, width: width}); }
      }
      return shown;
    }
    function clear(step, anchor) {  // two labels or more, each apart from the next: Plotly leaves them level
      var shown = labels(step, anchor);
      return shown.length >= 2 && shown.every(function (label, index) {
        var next = shown[index + 1];
        return !next || next.middle - label.middle >= (label.width + next.width) / 2 + LABEL_GAP_PX;
      });
    }
    // Steps counted from midnight; else from the window's first whole unit (an 18-hour step from 11:00
    // in a 30-hour window at 320 px, where every step from midnight met or showed one label).
    function unitOf(step) { return step >= DAY ? DAY : step >= HOUR ? HOUR : step >= MINUTE ? MINUTE : SECOND; }
    var anchor = 0;
    var chosen = STEPS.filter(function (step) { return clear(step, 0); })[0];
    if (!chosen) {
      chosen = STEPS.filter(function (step) { return clear(step, Math.ceil(from / unitOf(step)) * unitOf(step)); })[0];
      anchor = chosen ? Math.ceil(from / unitOf(chosen)) * unitOf(chosen) : 0;
    }
    if (!chosen) {  // none lies clear: the longest step that still shows two, tilted as Plotly must
      var two = STEPS.filter(function (step) { return labels(step, 0).length >= 2; });
      chosen = two[two.length - 1];
    }
    if (!chosen) { return {nticks: NARROW_TICKS}; }
    return {tickmode: "linear", tick0: new Date(anchor).toISOString().slice(0, 19).replace("T", " "), dtick: chosen};
  }
  function axisFor(axis) {
    return {"xaxis.tickmode": axis.tickmode || "auto", "xaxis.tick0": axis.tick0 || null,
            "xaxis.dtick": axis.dtick || null, "xaxis.nticks": axis.nticks || null};
  }

  // The phone layout's bottom margin: room for the labels as they lie there, level (the date under the
  // first time, a second line, unless the step is a day or more), and the axis's title under them, a few
  // pixels clear of the chart's foot. The server's margin (62 px) is kept for labels Plotly tilts; level,
  // it left some 47 px empty under "Time (UTC)" at 320 and 390 px. The bottom panel ends above the
  // plot's foot (its domain from 0.06: part of the room is there already), by a share of the plot's
  // height, which the margin taken away adds to: solved for the margin, the legend's rows left out
  // (they are added to the chart's height, above the plot).
  var LABEL_LINE_PX = 16, UNDER_LABELS_PX = 21, FOOT_PX = 6;  // 12 px labels; the 14 px title 2 px below them
  function narrowBottom(layout, axis) {
    var wide = wideLayout || {}, wideBottom = (wide.margin && wide.margin.b) || 0;
    var anchor = String((layout.xaxis && layout.xaxis.anchor) || "y").replace(/^y1?$/, "y").replace(/^y/, "yaxis");
    var domain = (layout[anchor] && layout[anchor].domain) || [0, 1];
    var below = Math.min(Math.max(domain[0] || 0, 0), 0.5);
    var lines = axis.dtick >= DAY ? 1 : 2;
    var needed = lines * LABEL_LINE_PX + UNDER_LABELS_PX + FOOT_PX;
    var bottom = (needed - below * ((wide.height || 450) - NARROW_TOP_PX)) / (1 - below);
    return Math.round(Math.min(Math.max(bottom, 0), wideBottom || bottom));
  }

  // The layout for the box's width, into a figure about to be drawn.
  function fitWidth(figure) {
    wideLayout = layoutParts(figure.layout);
    fontFamily = (figure.layout.font && figure.layout.font.family) || fontFamily;
    narrowShown = isNarrow();
    el.classList.toggle("timeline-narrow", narrowShown);
    wideShapeNames = shapeNamesOf(figure.layout.shapes);
    if (narrowShown) {
      var narrow = narrowLayout(figure.data, wideLayout, figure.layout.shapes, wideShapeNames);
      (figure.layout.shapes || []).forEach(function (shape, index) { shape.name = narrow.shapeNames[index]; });
      delete narrow.shapeNames;
      Object.assign(figure.layout, narrow);
      var axis = narrowAxis(figure.layout.xaxis.range);
      Object.assign(figure.layout.xaxis, axis);
      figure.layout.margin.b = narrowBottom(figure.layout, axis);
    }
  }

  // A phone turned sideways, or a window narrowed past the breakpoint, kept the layout the chart was
  // drawn with until the next zoom (narrow.js watches the box); only the legend, margins and height
  // change, so relayout does (no new fetch, no new plot).
  function refit(narrow) {
    narrowShown = narrow;
    el.classList.toggle("timeline-narrow", narrowShown);
    var parts = narrowShown ? narrowLayout(el.data, wideLayout, el.layout.shapes, wideShapeNames)
                            : layoutParts(wideLayout);
    var names = shapeNameUpdate(narrowShown ? parts.shapeNames : wideShapeNames);
    var axis = narrowShown ? narrowAxis(el.layout.xaxis && el.layout.xaxis.range) : {};
    if (narrowShown) { parts.margin.b = narrowBottom(el.layout, axis); }
    // The legend after the height and margins: changed in one relayout, Plotly placed the legend where
    // the old height put it (19 px into the plot on a phone, when its rows wrapped anew).
    var change = Object.assign({margin: parts.margin, height: parts.height}, names, axisFor(axis));
    window.Plotly.relayout(el, change).then(function () {
      return window.Plotly.relayout(el, {legend: parts.legend});
    });
  }
  window.FleetNarrow.onCrossing(el, function () { return wideLayout && el.data ? narrowShown : null; }, refit);

  // The chart (its axis, hover, shaded windows: the server draws them on the reader's clock) and the
  // window's fields read and take times as the page's others do: in the reader's zone (the chart's and
  // form's data-time-zone, the page's), 24-hour, to the second, "2026-11-21 00:22:16". The timeline's
  // address (?start=&end=) stays in UTC: these convert between the two.
  var zone = el.dataset.timeZone || (form && form.dataset.timeZone) || "UTC";
  var wallClock = null;
  try {
    wallClock = new Intl.DateTimeFormat("en-US", {timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit",
                                                  day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit"});
  } catch (error) {  // a zone this browser does not know: UTC, and the fields say so
    zone = "UTC";
    wallClock = new Intl.DateTimeFormat("en-US", {timeZone: "UTC", hourCycle: "h23", year: "numeric", month: "2-digit",
                                                  day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit"});
  }
  function wallParts(ms) {
    var parts = {};
    wallClock.formatToParts(new Date(ms)).forEach(function (part) { parts[part.type] = part.value; });
    return parts;
  }
  // The zone's offset from UTC (ms) at an instant.
  function offsetAt(ms) {
    var p = wallParts(ms);
    var wall = Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour % 24, +p.minute, +p.second);
    return wall - Math.floor(ms / 1000) * 1000;
  }
  // The instant (ms) a wall-clock time (ms as if it were UTC) is in the reader's zone. A time the clocks
  // skip (spring forward) is taken an hour on; one they repeat (fall back), the second time it comes.
  function instantOf(wall) {
    var instant = wall - offsetAt(wall);
    return wall - offsetAt(instant);  // again, for an offset that changed between the two
  }
  // "2026-11-21T00:22:16.000Z" as the fields write it: "2026-11-20 21:22:16" in America/Argentina/Buenos_Aires.
  function asInput(iso) {
    var date = iso ? new Date(iso) : null;
    if (!date || isNaN(date)) { return ""; }
    var p = wallParts(date.getTime());
    return p.year + "-" + p.month + "-" + p.day + " " + p.hour + ":" + p.minute + ":" + p.second;
  }
  // An ISO 8601 instant as the chart's axis takes it: the same for a UTC reader, else on their clock,
  // to the millisecond ("2026-11-20 21:22:16.500").
  function toChart(iso) {
    if (zone === "UTC") { return iso; }
    var ms = new Date(iso).getTime();
    return isNaN(ms) ? iso : asInput(iso) + "." + String(((ms % 1000) + 1000) % 1000).padStart(3, "0");
  }
  // A field's "2026-11-20 21:22:16" (or "…T21:22", seconds left out) in the reader's zone as ISO 8601 in
  // UTC, "" for anything else. A time the clocks skip (spring forward) is taken an hour on.
  function fromInput(text) {
    var m = /^\s*(\d{4})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{2})(?::(\d{2}))?\s*$/.exec(String(text || ""));
    if (!m) { return ""; }
    var wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0));
    var check = new Date(wall);
    if (check.getUTCMonth() !== +m[2] - 1 || check.getUTCDate() !== +m[3] || +m[4] > 23 || +m[5] > 59 || +(m[6] || 0) > 59) {
      return "";
    }
    return new Date(instantOf(wall)).toISOString();
  }

  function showing(start, end) {
    if (!form) { return; }
    form.elements.start.value = asInput(start);
    form.elements.end.value = asInput(end);
  }

  // "More metrics": a box per metric the series has beyond GPU util, memory and CPU, ticked for those drawn
  // (at first the server's choice, the metrics behind the job's findings, each naming its cause). A change
  // draws the window shown again with the metrics ticked (?metrics=, every one named: none ticked is none).
  var metricsBox = document.getElementById("timeline-metrics");
  var chosenMetrics = null;  // null: the server's choice
  var metricsPending = false;  // ticked while a window was loading
  function offerMetrics(metrics) {
    if (!metricsBox || !metrics) { return; }
    var list = metricsBox.querySelector(".timeline-metric-choices");
    list.textContent = "";
    metrics.forEach(function (metric) {
      var label = document.createElement("label");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.value = metric.name;
      box.checked = !!metric.shown;
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + metric.label));
      if (metric.causes && metric.causes.length) {
        var why = document.createElement("span");
        why.className = "muted";
        why.textContent = " (" + metric.causes.join(", ") + ")";
        label.appendChild(why);
      }
      list.appendChild(label);
    });
    metricsBox.hidden = !metrics.length;
    var count = metricsBox.querySelector(".timeline-metric-count");
    var drawn = metrics.filter(function (metric) { return metric.shown; }).length;
    if (count) { count.textContent = drawn ? " (" + drawn + " of " + metrics.length + " shown)" : " (" + metrics.length + ")"; }
  }
  if (metricsBox) {
    metricsBox.addEventListener("change", function () {
      chosenMetrics = Array.prototype.map.call(metricsBox.querySelectorAll("input:checked"), function (box) { return box.value; });
      // Ticked while a window loads: drawn once it has (a tick is never lost).
      if (busy) { metricsPending = true; } else { load(shown[0], shown[1]); }
    });
  }

  var shown = [];  // the window last asked for (none: the whole job), drawn again when the colours change
  function load(start, end) {
    shown = [start, end];
    var query = [];
    if (start) { query.push("start=" + encodeURIComponent(start), "end=" + encodeURIComponent(end)); }
    if (chosenMetrics !== null) { query.push("metrics=" + encodeURIComponent(chosenMetrics.join(","))); }
    var url = source + (query.length ? "?" + query.join("&") : "");
    busy = true;
    say("Loading…");
    return fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) { return response.json(); })
      .then(function (figure) {
        // Nothing to draw: the message stays (the next step would clear it) and the page is ready.
        if (figure.empty || figure.error) { say(figure.empty || figure.error); el.dataset.ready = "1"; return false; }
        offerMetrics(figure.metrics);
        if (start) { figure.layout.xaxis.range = [toChart(start), toChart(end)]; }
        if (window.FleetTheme) { window.FleetTheme.apply(figure); }  // the page's colours, light or dark
        fitWidth(figure);
        return window.Plotly.react(el, figure.data, figure.layout, PLOT_CONFIG);
      })
      .then(function (drawn) {
        if (drawn === false) { return; }
        say(start ? "Showing " + asInput(start) + " to " + asInput(end) + " (" + zone + ")." : "");
        var range = el.layout && el.layout.xaxis && el.layout.xaxis.range;
        if (start) { showing(start, end); } else if (range) { showing(toIso(range[0]), toIso(range[1])); }
        el.dataset.ready = "1";
        return true;
      })
      .catch(function () { say("The timeline could not be loaded."); })
      .finally(function () {
        busy = false;
        if (metricsPending) { metricsPending = false; load(shown[0], shown[1]); }
      });
  }

  load().then(function (drawn) {
    // The browser jumped to a #fragment below the chart (#log-events) before the chart grew the page.
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && (target.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_PRECEDING)) { target.scrollIntoView(); }
    // A log event's marker opens its line in the log (a path on this site, nothing else); in a new
    // tab where the page holds unsaved work (data-open-in="tab": the labeling page's answers).
    el.on && el.on("plotly_click", function (event) {
      var point = event && event.points && event.points[0];
      var url = point && point.customdata;
      if (typeof url !== "string" || url.charAt(0) !== "/" || url.charAt(1) === "/") { return; }
      if (el.dataset.openIn === "tab") { window.open(url, "_blank", "noopener"); } else { window.location.assign(url); }
    });
    el.on && el.on("plotly_relayout", function (change) {
      if (busy) { return; }
      if (change["xaxis.autorange"]) { load(); return; }
      var start = change["xaxis.range[0]"], end = change["xaxis.range[1]"];
      if (start && end) { load(toIso(start), toIso(end)); }
    });
    if (drawn === true) { keyboardWindows(); }  // nothing to zoom in a job without samples
    // The system's light or dark setting changed: the window shown drawn again in the page's new colours.
    if (drawn === true && window.FleetTheme) {
      window.FleetTheme.onChange(function () { if (!busy) { load(shown[0], shown[1]); } });
    }
  });

  // Plotly's axis values ("2026-11-21 00:22:16.5", "2026-11-21 00:22", "2026-11-21": on the reader's
  // clock; or an instant with its offset) as ISO 8601 in UTC.
  function toIso(value) {
    value = String(value);
    if (/Z|[+-]\d\d:?\d\d$/.test(value)) {
      var date = new Date(value.replace(" ", "T"));
      return isNaN(date) ? "" : date.toISOString();
    }
    var m = /^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d)(\.\d+)?)?)?$/.exec(value.trim());
    if (!m) { return ""; }
    var wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +(m[4] || 0), +(m[5] || 0), +(m[6] || 0), Math.round(+(m[7] || 0) * 1000));
    return isNaN(wall) ? "" : new Date(instantOf(wall)).toISOString();
  }

  // A window the form refuses: both fields are marked invalid and name the message (read with each),
  // which is an alert. The focus stays in the field the window was sent from, or goes from the Show
  // button to the end, the field to change. The status line, the chart's, keeps saying what it shows.
  var refusal = document.getElementById("timeline-window-error");
  function refuse(message) {
    if (!form || !refusal) { return; }
    refusal.textContent = message;
    refusal.hidden = !message;
    [form.elements.start, form.elements.end].forEach(function (field) {
      if (message) {
        field.setAttribute("aria-invalid", "true");
        field.setAttribute("aria-describedby", refusal.id);
      } else {
        field.removeAttribute("aria-invalid");
        field.removeAttribute("aria-describedby");
      }
    });
    var inField = document.activeElement === form.elements.start || document.activeElement === form.elements.end;
    if (message && !inField) { form.elements.end.focus(); }
  }

  // Ways to a window without a mouse: the form above the chart, and each finding's time windows.
  function keyboardWindows() {
    el.tabIndex = -1;  // focusable by script only: a finding's window shown on it
    if (form) {
      form.hidden = false;
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        var start = fromInput(form.elements.start.value), end = fromInput(form.elements.end.value);
        if (!start || !end) {
          refuse("Write each time as year-month-day hour:minute:second, such as " +
                 (asInput(el.layout && el.layout.xaxis && toIso(el.layout.xaxis.range[0])) || "2026-11-02 07:10:00") + ".");
          return;
        }
        if (end <= start) { refuse("Choose a window whose end is after its start."); return; }
        refuse("");
        if (!busy) { load(start, end); }
      });
      document.getElementById("timeline-whole").addEventListener("click", function () {
        refuse("");
        if (!busy) { load(); }
      });
    }
    document.querySelectorAll("[data-zoom-start]").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () {
        // The window with a tenth of its length either side, so what comes before and after shows.
        var start = new Date(button.dataset.zoomStart), end = new Date(button.dataset.zoomEnd);
        if (isNaN(start) || isNaN(end) || busy) { return; }
        var margin = Math.max((end - start) / 10, 30000);
        // The chart comes into view and takes the focus: left on the button, out of sight above,
        // the next Tab scrolled the page back to the findings (the status line says the window).
        load(new Date(start - margin).toISOString(), new Date(end.getTime() + margin).toISOString()).then(function () {
          el.scrollIntoView({block: "center"});
          el.focus({preventScroll: true});
        });
      });
    });
  }
})();
