/* A connector's deletion: its progress while a worker deletes the jobs, then the finished page. Plain JS. */
(function () {
  "use strict";

  var FINISHED = "fleet-triage.deletion-finished";
  var section = document.getElementById("deletion-progress");

  function poll() {
    var request = new XMLHttpRequest();
    request.open("GET", section.dataset.statusUrl);
    request.setRequestHeader("Accept", "application/json");
    request.addEventListener("load", function () {
      if (request.status !== 200) { window.setTimeout(poll, 5000); return; }
      var deletion = JSON.parse(request.responseText);
      // The finished page comes back with the focus on its heading, which says how the deletion ended.
      if (deletion.finished) { sessionStorage.setItem(FINISHED, location.pathname); window.location.reload(); return; }
      var bar = document.getElementById("deletion-bar");
      bar.max = Math.max(deletion.jobs_total, 1);
      bar.value = deletion.jobs_deleted;
      document.getElementById("deletion-count").textContent = deletion.display.count;
      var status = document.getElementById("deletion-status");
      status.textContent = deletion.status_display;
      status.className = "status " + deletion.status;
      window.setTimeout(poll, 1000);
    });
    request.addEventListener("error", function () { window.setTimeout(poll, 5000); });
    request.send();
  }

  if (section && section.dataset.statusUrl) { poll(); }
  if (section && sessionStorage.getItem(FINISHED) === location.pathname) {
    sessionStorage.removeItem(FINISHED);
    var heading = document.querySelector("main h1");
    heading.tabIndex = -1;
    heading.focus();
  }
})();
