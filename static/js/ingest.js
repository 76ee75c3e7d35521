/* Archive upload with progress, then the ingest run's live progress. Plain JS, no build step. */
(function () {
  "use strict";

  function csrfToken(form) {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function show(element, text) {
    element.textContent = text;
    element.hidden = false;
  }

  // The keyboard's place while the page changes under it: the button pressed is disabled during the
  // upload and the form's message replaces it, and a disabled or hidden element drops the focus to
  // <body> (the next Tab started again at the menu). The focus moves to what the page says instead.
  function focusOn(element) {
    element.tabIndex = -1;
    element.focus();
  }

  function failed(errorBox, text) {
    show(errorBox, text);
    focusOn(errorBox);
  }

  // Why the upload came back without the JSON this script reads: a page in its place (the login page the
  // request was redirected to, Django's CSRF refusal, a proxy's error) said nothing as its source did.
  function refusal(request) {
    var answer = "HTTP " + request.status + (request.statusText ? " " + request.statusText : "");
    if (/\/login\/$/.test(new URL(request.responseURL || location.href).pathname)) {
      return "You are no longer logged in (your session ended), so nothing was imported: log in again, then upload the archive again.";
    }
    if (request.status === 403) {
      return "The server refused the upload (" + answer + "), so nothing was imported: reload this page and upload the archive again.";
    }
    if (request.status === 413) {
      return "The server refused the upload as too large (" + answer + "), so nothing was imported: a proxy in front of Fleet Triage " +
        "accepts less than the upload limit (nginx: client_max_body_size; see docs/operations.md).";
    }
    return "The upload failed (" + answer + "). The import may have started all the same: see Ingest runs before uploading the archive again.";
  }

  function setUpUpload(form) {
    var fileInput = form.querySelector("input[type=file]");
    var progress = document.getElementById("upload-progress");
    var bar = document.getElementById("upload-bar");
    var percent = document.getElementById("upload-percent");
    var label = document.getElementById("upload-label");
    var errorBox = document.getElementById("upload-error");
    var button = document.getElementById("upload-button");
    var maxBytes = parseInt(form.dataset.maxBytes, 10);

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      errorBox.hidden = true;
      var file = fileInput.files[0];
      if (!file) { failed(errorBox, "Choose an archive file first."); return; }
      if (maxBytes && file.size > maxBytes) {
        failed(errorBox, "This file is larger than the upload limit of " + form.dataset.maxSize + ".");
        return;
      }
      var data = new FormData();
      data.append("file", file);
      var request = new XMLHttpRequest();
      request.open("POST", form.action);
      request.setRequestHeader("X-CSRFToken", csrfToken(form));
      request.setRequestHeader("Accept", "application/json");
      request.upload.addEventListener("progress", function (e) {
        if (!e.lengthComputable) { return; }
        var share = Math.floor((100 * e.loaded) / e.total);
        bar.value = share;
        percent.textContent = share + " %";
        if (share >= 100) { label.textContent = "Uploaded; starting the import…"; }
      });
      request.addEventListener("load", function () {
        var body = null;
        try { body = JSON.parse(request.responseText); } catch (ignored) { body = null; }
        if (request.status === 202 && body && body.detail_url) {
          window.location.assign(body.detail_url);
          return;
        }
        button.disabled = false;
        progress.hidden = true;
        failed(errorBox, (body && body.detail) || refusal(request));
      });
      request.addEventListener("error", function () {
        button.disabled = false;
        progress.hidden = true;
        failed(errorBox, "The upload was interrupted (network error or refused by the server).");
      });
      label.textContent = "Uploading " + file.name + "…";
      progress.hidden = false;
      focusOn(label);
      button.disabled = true;
      request.send(data);
    });
  }

  var FINISHED = "fleet-triage.run-finished";

  function setUpRunProgress(section) {
    var url = section.dataset.statusUrl;
    var bar = document.getElementById("run-bar");
    var count = document.getElementById("run-count");
    var phase = document.getElementById("run-phase");
    var status = document.getElementById("run-status");
    var jobs = document.getElementById("run-jobs");
    var samples = document.getElementById("run-samples");
    var duration = document.getElementById("run-duration");
    var left = document.getElementById("run-left");
    var rate = document.getElementById("run-rate");

    function poll() {
      var request = new XMLHttpRequest();
      request.open("GET", url);
      request.setRequestHeader("Accept", "application/json");
      request.addEventListener("load", function () {
        if (request.status !== 200) { window.setTimeout(poll, 5000); return; }
        var run = JSON.parse(request.responseText);
        // The finished page comes back with the focus on its heading, which says how the run ended:
        // a reload put it on <body>, and a status a page loads with is not announced.
        if (run.finished) { sessionStorage.setItem(FINISHED, location.pathname); window.location.reload(); return; }
        if (run.jobs_counted) {
          bar.max = Math.max(run.jobs_total, 1);
          bar.value = run.jobs_processed;
        } else {
          bar.removeAttribute("value"); // indeterminate: how many jobs there are is not known yet
        }
        count.textContent = run.display.count;
        phase.textContent = run.phase || section.dataset.idlePhase;
        status.textContent = run.status_display;
        status.className = "status " + run.status;
        jobs.textContent = run.display.jobs;
        samples.textContent = run.display.samples;
        duration.textContent = run.display.duration;
        if (left) { left.textContent = run.display.left; }
        // Each figure a box of its own, as the page has them (IngestRun.rate_parts).
        rate.textContent = "";
        run.display.rate.split(" · ").forEach(function (part, i) {
          var box = document.createElement("span");
          box.className = "rate-part";
          box.textContent = part;
          if (i) { rate.append(" · "); }
          rate.append(box);
        });
        window.setTimeout(poll, 1000);
      });
      request.addEventListener("error", function () { window.setTimeout(poll, 5000); });
      request.send();
    }
    poll();
  }

  var form = document.getElementById("upload-form");
  if (form) { setUpUpload(form); }
  var section = document.getElementById("run-progress");
  if (section && section.dataset.statusUrl) { setUpRunProgress(section); }
  if (section && sessionStorage.getItem(FINISHED) === location.pathname) {
    sessionStorage.removeItem(FINISHED);
    focusOn(document.querySelector("main h1"));
  }
})();
