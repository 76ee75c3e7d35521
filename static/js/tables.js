// A wide table scrolls sideways inside its box rather than the page (static/css/app.css,
// .table-scroll). A box that scrolls becomes a Tab stop named after its table, so the keyboard
// can scroll it too (WCAG 2.1.1); a box that fits stays out of the Tab order. Re-checked whenever
// a box changes size: a window resized or rotated, a folded table opened.
(function () {
  "use strict";
  function tableName(box) {
    const caption = box.querySelector("caption");
    const section = box.closest("section, details, .card");
    const heading = (section && section.querySelector("h2, h3, summary")) || document.querySelector("h1");
    const source = caption || heading;
    const text = source ? (source.firstChild && source.firstChild.nodeType === Node.TEXT_NODE ? source.firstChild.textContent : source.textContent) : "";
    return (text.trim() || "Table").slice(0, 80);
  }
  function update(box) {
    if (box.scrollWidth > box.clientWidth + 1) {
      box.tabIndex = 0;
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", tableName(box) + " (scrolls sideways)");
    } else {
      box.removeAttribute("tabindex");
      box.removeAttribute("role");
      box.removeAttribute("aria-label");
    }
  }
  if (!("ResizeObserver" in window)) return;
  const observer = new ResizeObserver((entries) => entries.forEach((entry) => update(entry.target)));
  document.querySelectorAll(".table-scroll").forEach((box) => observer.observe(box));
})();
