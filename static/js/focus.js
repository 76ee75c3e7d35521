// Where the keyboard lands when a page comes back from something the user did (every page loads this).
// A page sent back from a form, or after a redirect, opened with the focus on <body>: a keyboard user
// started again at the menu, and a screen reader said nothing of what had happened, as content that a
// page loads with is not announced even in a live region. So:
// - a form sent with mistakes puts the focus on its first field marked invalid (Django marks each
//   field with an error aria-invalid and names its message in aria-describedby, which a screen reader
//   reads with the field);
// - else the first element marked data-focus: what became of the action (an answer saved, a token
//   created, a form's error that belongs to no one field, the lines a search found), made focusable
//   and focused, so it is read out and the next Tab goes on from there.
// The browser's own autofocus (the login form's username) then stands aside, as it does for a #fragment.
(function () {
  "use strict";
  function land(element) {
    if (!element) { return false; }
    if (!element.matches("a[href], button, input, select, textarea, summary, [tabindex]")) { element.tabIndex = -1; }
    element.focus();
    return document.activeElement === element;
  }
  var target = document.querySelector("main form[method=post] [aria-invalid=true]");
  if (!land(target)) { target = document.querySelector("main [data-focus]"); land(target); }
  // A page opened at a #fragment (an answer's form) then focuses the fragment's element, or <body>
  // where it cannot take the focus, as the browser scrolls to it: the focus is put back once it has.
  if (target && location.hash) {
    window.addEventListener("load", function () {
      window.setTimeout(function () {
        if (document.activeElement !== target && document.activeElement === document.body) { land(target); }
      }, 0);
    });
  }
})();
