// The phone layout's breakpoint, for charts.js and timeline.js: a chart whose box is narrower than
// NARROW_PX is laid out for a phone. The box is measured rather than the window (a media query), as the
// page's padding around it differs by page.
window.FleetNarrow = (function () {
  "use strict";
  var NARROW_PX = 560, SETTLE_MS = 150;

  function isNarrow(el) { return el.clientWidth < NARROW_PX; }

  // `settled()` once the box's size has settled after a change (and once as it is first observed).
  // Debounced, as Plotly's own resizing is, so a window dragged wider or narrower lays a chart out once.
  function onSettled(el, settled) {
    if (!window.ResizeObserver) { return; }
    var timer = null;
    new ResizeObserver(function () {
      clearTimeout(timer);
      timer = setTimeout(settled, SETTLE_MS);
    }).observe(el);
  }

  // A phone turned sideways, or a window resized past the breakpoint, kept the layout a chart was drawn
  // with: once its box has settled on the other side of the breakpoint from the layout shown
  // (`shownNarrow()`: true, false, or null while nothing is drawn), `relayout(narrow)` lays it out for
  // its new width.
  function onCrossing(el, shownNarrow, relayout) {
    onSettled(el, function () {
      var shown = shownNarrow();
      if (shown !== null && shown !== isNarrow(el)) { relayout(isNarrow(el)); }
    });
  }

  return {NARROW_PX: NARROW_PX, isNarrow: isNarrow, onSettled: onSettled, onCrossing: onCrossing};
})();
