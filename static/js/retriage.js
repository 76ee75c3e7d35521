/* The rule-set page: follow a background re-triage's progress until it ends. Plain JS, no build step. */
(function () {
  "use strict";
  var box = document.getElementById("retriage");
  if (!box || box.dataset.status === "done" || box.dataset.status === "failed") return;
  var bar = document.getElementById("retriage-bar");
  var text = document.getElementById("retriage-text");
  // The count changes every two seconds and is not a live region (a screen reader would say nothing
  // else); how the run ended is said once, in the page's status line (role=status), with the error.
  var said = document.getElementById("retriage-said");
  var errorBox = document.getElementById("retriage-error");
  var heading = box.querySelector("h2");
  // Counts with the thousands separator the page writes them with (Django's intcomma: "1,000").
  function count(n) { return Number(n).toLocaleString("en-US"); }
  var timer = setInterval(function () {
    fetch(box.dataset.url, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (progress) {
        if (!progress) return;
        bar.value = progress.percent;
        bar.textContent = progress.percent + " %";
        text.textContent = count(progress.done) + " of " + count(progress.total) + " jobs · " + progress.status_display;
        box.dataset.status = progress.status;
        if (progress.status === "done" || progress.status === "failed") {
          clearInterval(timer);
          if (progress.error && errorBox) { errorBox.textContent = progress.error; errorBox.hidden = false; }
          if (said) {
            said.textContent = (heading ? heading.textContent.trim() + ": " : "") + progress.status_display + ", " +
              count(progress.done) + " of " + count(progress.total) + " jobs." + (progress.error ? " " + progress.error : "");
          }
        }
      })
      .catch(function () { /* a dropped request: the next tick asks again */ });
  }, 2000);
})();
