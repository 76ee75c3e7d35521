// The top menu is a <details> folded up to 900 px wide, 1,200 px for eight links or more (app.css). A
// browser that has ::details-content holds it open on a wider window by CSS alone. One without it (Firefox before 143, so Firefox ESR 140;
// Safari before 18.4) showed "Menu" at every width, every link one click away on a desktop: there this
// opens the menu while the window is wider than 900 px and marks it `held-open`, which app.css uses to
// hide "Menu", and folds it again when the window narrows to a phone's.
(function () {
  "use strict";
  var menu = document.querySelector(".topbar .menu");
  if (!menu || !window.matchMedia || (window.CSS && CSS.supports && CSS.supports("selector(::details-content)"))) {
    return;
  }
  // A menu of eight links or more (an operator's) is folded up to 1,200 px, as app.css says.
  var many = menu.querySelectorAll("nav > a").length >= 8;
  var wide = window.matchMedia(many ? "(min-width: 1201px)" : "(min-width: 901px)");
  function follow() {
    menu.classList.toggle("held-open", wide.matches);
    menu.open = wide.matches;
  }
  follow();
  wide.addEventListener("change", follow);
})();
