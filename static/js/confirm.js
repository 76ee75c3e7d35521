/* A form whose action cannot be undone (data-ask: the question, naming what it acts on) asks before it
   is sent: Revoke, beside Edit on the tokens page, revoked a token for good at one click. Without the
   script the form is sent as before. */
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("form[data-ask]"), function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.ask)) { event.preventDefault(); }
    });
  });
})();
