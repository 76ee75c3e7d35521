// A wide table scrolls sideways inside its box rather than the page (static/css/app.css,
// .table-scroll). A box that scrolls becomes a Tab stop named after its table, so the keyboard
// can scroll it too (WCAG 2.1.1); a box that fits stays out of the Tab order. Re-checked whenever
// a box or its table changes size: a window resized or rotated, a folded table opened.
// A box whose table goes on past its right edge is marked data-more-right, and --scrolled says how
// far it is scrolled: the stylesheet draws a shadow over that edge (a phone shows no scrollbar, and
// a cut column looked like the table's end).
(function () {
  "use strict";
  // The table's caption, else its section's heading, else the page's; a heading's own text only
  // (not the muted note after it).
  function tableName(box) {
    const section = box.closest("section, details, .card");
    const source = box.querySelector("caption")
      || (section && section.querySelector("h2, h3, summary"))
      || document.querySelector("h1");
    const first = source && source.firstChild;
    const text = first && first.nodeType === Node.TEXT_NODE ? first.textContent : (source ? source.textContent : "");
    return (text.trim() || "Table").slice(0, 80);
  }
  function edge(box) {
    box.style.setProperty("--scrolled", box.scrollLeft + "px");
    box.toggleAttribute("data-more-right", box.scrollWidth - box.clientWidth - box.scrollLeft > 1);
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
    edge(box);
  }
  if (!("ResizeObserver" in window)) return;
  // The box and what it holds are both watched: a table can grow past a box that keeps its size
  // (rows filled in, a cell's text wrapping differently once laid out at a new width), and the box
  // alone then never said so.
  const observer = new ResizeObserver((entries) => {
    new Set(entries.map((entry) => entry.target.closest(".table-scroll"))).forEach(update);
  });
  document.querySelectorAll(".table-scroll").forEach((box) => {
    observer.observe(box);
    if (box.firstElementChild) observer.observe(box.firstElementChild);
    box.addEventListener("scroll", () => edge(box), {passive: true});
  });
})();
