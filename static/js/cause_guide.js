// A cause's page on a phone: its fix guide (a few screens of before/after code) folds under its heading,
// so the jobs with the cause, which an operator opens the page for from a digest or the dashboard, are
// within reach; one tap on the heading opens it. A wider window, or a browser without this script, shows
// it open. Run once, at load, before the page is first drawn at its width.
(function () {
  "use strict";
  var guide = document.getElementById("cause-guide");
  var narrow = window.FleetNarrow ? window.FleetNarrow.NARROW_PX : 560;
  if (guide && window.innerWidth < narrow) { guide.open = false; }
})();
