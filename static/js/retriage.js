/* The rule-set page: follow a background re-triage's progress until it ends. Plain JS, no build step. */
(function () {
  "use strict";
  var box = document.getElementById("retriage");
  if (!box || box.dataset.status === "done" || box.dataset.status === "failed") return;
  var bar = document.getElementById("retriage-bar");
  var text = document.getElementById("retriage-text");
  var timer = setInterval(function () {
    fetch(box.dataset.url, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (progress) {
        if (!progress) return;
        bar.value = progress.percent;
        bar.textContent = progress.percent + " %";
        text.textContent = progress.done + " of " + progress.total + " jobs · " + progress.status_display;
        box.dataset.status = progress.status;
        if (progress.status === "done" || progress.status === "failed") clearInterval(timer);
      })
      .catch(function () { /* a dropped request: the next tick asks again */ });
  }, 2000);
})();
