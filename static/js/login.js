// The login form's `next` keeps the address's #fragment. A link such as a digest's /jobs/128/#findings
// reaches the login page as /login/?next=/jobs/128/#findings: the browser keeps the fragment but never
// sends it, so the server's `next` lacks it and the job page opened at its top. The server still checks
// the whole `next` (Django's LoginView) before it redirects there.
(function () {
  "use strict";
  const next = document.querySelector("form input[name=next]");
  if (!next || !next.value || next.value.includes("#") || location.hash.length < 2) return;
  next.value += location.hash;
})();
