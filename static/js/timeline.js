// The job timeline: drawn from JSON, and re-fetched at full resolution for a zoomed window.
(function () {
  "use strict";
  var el = document.getElementById("timeline");
  if (!el || !window.Plotly) { return; }
  var source = el.dataset.src;
  var status = document.getElementById("timeline-status");
  var busy = false;

  function say(text) { if (status) { status.textContent = text; } }

  function load(start, end) {
    var url = source + (start ? "?start=" + encodeURIComponent(start) + "&end=" + encodeURIComponent(end) : "");
    busy = true;
    say("Loading…");
    return fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) { return response.json(); })
      .then(function (figure) {
        // Nothing to draw: the message stays (the next step would clear it) and the page is ready.
        if (figure.empty || figure.error) { say(figure.empty || figure.error); el.dataset.ready = "1"; return false; }
        if (start) { figure.layout.xaxis.range = [start, end]; }
        return window.Plotly.react(el, figure.data, figure.layout, {displaylogo: false, responsive: true});
      })
      .then(function (drawn) {
        if (drawn === false) { return; }
        say(start ? "Showing " + start + " to " + end + " (UTC)." : "");
        el.dataset.ready = "1";
      })
      .catch(function () { say("The timeline could not be loaded."); })
      .finally(function () { busy = false; });
  }

  load().then(function () {
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
      if (start && end) {
        load(new Date(start.replace(" ", "T") + "Z").toISOString(), new Date(end.replace(" ", "T") + "Z").toISOString());
      }
    });
  });
})();
