// Labeling studies. A final action asks first (the study page's "Submit my labels").
// Labeling and adjudication pages (the form #label-form): keyboard shortcuts, "none of these"
// exclusive, rationale fields only for ticked options. Keys that a page lacks the target of (save and
// next, previous / next job on the adjudication page) do nothing there.
(function () {
  "use strict";
  // A form whose action is final (data-confirm: "Submit my labels") asks before it is sent. Here, not
  // in an onsubmit attribute: the Content-Security-Policy allows no inline script.
  Array.prototype.forEach.call(document.querySelectorAll("form[data-confirm]"), function (final) {
    final.addEventListener("submit", function (event) {
      if (!window.confirm(final.dataset.confirm)) { event.preventDefault(); }
    });
  });

  var form = document.getElementById("label-form");
  if (!form) { return; }
  var boxes = Array.prototype.slice.call(form.querySelectorAll("input[type=checkbox][name=option]"));
  var byKey = {};
  boxes.forEach(function (box) { byKey[box.dataset.key] = box; });
  var otherNote = document.getElementById("other_note");
  var wide = window.matchMedia("(min-width: 1001px)");  // the form beside the evidence (labeling.css)

  function sync() {
    boxes.forEach(function (box) {
      var row = box.closest(".option");
      row.classList.toggle("checked", box.checked);
      var rationale = row.querySelector(".rationale");
      if (rationale) { rationale.hidden = !box.checked; }
    });
    var other = form.querySelector("input[value=other]");
    if (otherNote) { otherNote.closest(".field").hidden = !(other && other.checked); }
  }

  function changed(box) {
    // "None of these" excludes every other answer, and any other answer excludes it.
    if (box.checked && box.value === "none") {
      boxes.forEach(function (b) { if (b !== box) { b.checked = false; } });
    } else if (box.checked) {
      var none = form.querySelector("input[value=none]");
      if (none) { none.checked = false; }
    }
    sync();
  }

  function saveAndNext() {
    var button = document.getElementById("save-next");
    if (button) { form.requestSubmit(button); }
  }
  // Ctrl+Enter: save and next, or on the adjudication page (no such button) save the gold labels, the
  // way out of its note, where Enter starts a new line. A plain s there still does nothing.
  function saveFromAnywhere() {
    var button = document.getElementById("save-next") || document.getElementById("save-gold");
    if (button) { form.requestSubmit(button); }
  }

  boxes.forEach(function (box) { box.addEventListener("change", function () { changed(box); }); });

  // Going to the previous or next job ([ / ], or any link) does not save: with ticks, rationales or a
  // note changed since the page opened, ask first, as they would be lost without a word.
  function state() {
    var parts = [];
    new FormData(form).forEach(function (value, name) {
      if (name !== "csrfmiddlewaretoken") { parts.push(name + "=" + value); }
    });
    return parts.join("&");
  }
  // A form sent back refused (data-unsaved: an error, or an answer stored since the page opened) holds
  // the rater's answer, not the stored one: leaving it asks even before anything changes again.
  var opened = form.hasAttribute("data-unsaved") ? null : state();
  var UNSAVED = "Your changes to this job are not saved. Leave it anyway?\n\n(Cancel, then press s to save and go on.)";
  function mayLeave() { return state() === opened || window.confirm(UNSAVED); }
  // Any link that leaves the page (previous / next, the study, "Change it" on the job just saved), not
  // one that opens a file in a tab of its own.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[href]");
    if (!link || link.target === "_blank" || event.ctrlKey || event.metaKey || event.shiftKey) { return; }
    if (link.getAttribute("href").charAt(0) === "#" || link.id === "take-saved") { return; }  // chosen: drop theirs
    if (!mayLeave()) { event.preventDefault(); }
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text"));
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") { event.preventDefault(); saveFromAnywhere(); return; }
    if (typing) {
      if (event.key === "Escape") { target.blur(); }
      // Enter in the skip's note skips (the form's first button, which Enter would press, saves).
      if (event.key === "Enter" && target.id === "skip_note") {
        event.preventDefault();
        form.requestSubmit(document.getElementById("skip-job"));
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var key = event.key.toLowerCase();
    if (byKey[key] && !byKey[key].disabled) {
      event.preventDefault();
      byKey[key].checked = !byKey[key].checked;
      changed(byKey[key]);
      // "Other" cannot be saved without its note: put the cursor there (Esc leaves it again).
      if (byKey[key].value === "other" && byKey[key].checked && otherNote) { otherNote.focus(); }
      // Else the focus goes to the box, so Tab goes on to its "Why?" (from the page, Tab began at the
      // menu, some 45 stops away). Beside the evidence only the form's box scrolls to it; under the
      // evidence (narrow) the page stays where the rater was reading until they Tab on.
      else { byKey[key].focus({ preventScroll: !wide.matches }); }
      return;
    }
    var link;
    if (key === "s") { event.preventDefault(); saveAndNext(); }
    else if (key === "[" && (link = document.getElementById("prev-job"))) { if (mayLeave()) { window.location = link.href; } }
    else if (key === "]" && (link = document.getElementById("next-job"))) { if (mayLeave()) { window.location = link.href; } }
    else if (key === "?") {
      // The list is at the foot of the form's box, below its edge on a laptop: bring it into view.
      var help = form.querySelector(".shortcuts");
      if (help) { help.open = !help.open; if (help.open) { help.scrollIntoView({ block: "nearest" }); } }
    }
  });

  // Beside the evidence (two columns, wider than 1000 px) the form is a box of its own, as tall as the
  // window below its top: at the page's top the heading above pushed its foot, and the buttons kept there
  // (labeling.css), below the window. Once the page scrolls the box sticks 8 px from the top.
  var pending = false;
  function fit() {
    pending = false;
    var top = Math.max(8, form.getBoundingClientRect().top);
    form.style.maxHeight = wide.matches ? Math.max(240, window.innerHeight - top - 8) + "px" : "";
  }
  function refit() {
    if (!pending) { pending = true; window.requestAnimationFrame(fit); }
  }
  // A page sent back with the focus on a message in the form (focus.js: a refused save or skip) is
  // scrolled to it before the timeline has drawn. Under the evidence (one column, a phone) the timeline
  // then grows some 400 px above the form and pushes the message off the screen. Until the rater does
  // anything, the message is brought back into view as the evidence above it changes size.
  var evidence = document.querySelector(".evidence");
  if (evidence && window.ResizeObserver) {
    var keep = new ResizeObserver(function () {
      var focused = document.activeElement;
      if (!wide.matches && form.contains(focused) && focused.matches("[data-focus], [aria-invalid=true]")) {
        focused.scrollIntoView({ block: "center" });
      }
    });
    keep.observe(evidence);
    ["keydown", "pointerdown", "wheel", "touchstart"].forEach(function (name) {
      window.addEventListener(name, function () { keep.disconnect(); }, { once: true, passive: true });
    });
  }

  window.addEventListener("scroll", refit, { passive: true });
  window.addEventListener("resize", refit);
  fit();

  sync();
})();
