/* The course's website (helpers/instructor/book.py; tests/test_book.py reads it in a browser).
   No library, no network: it works offline, as the rest of the site. */
(function () {
  "use strict";

  /* A figure enlarges on a tap or a click: a full-screen dialog with the image at its own size
     (scroll or pinch to read it); a tap, a click or Escape closes it. */
  function enlarge(img) {
    const dialog = document.createElement("dialog");
    dialog.className = "course-zoom";
    const copy = document.createElement("img");
    copy.src = img.currentSrc || img.src;
    copy.alt = img.alt || "";
    const hint = document.createElement("p");
    hint.textContent = "Tap or press Escape to close.";
    dialog.append(hint, copy);
    dialog.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => dialog.remove());
    document.body.append(dialog);
    dialog.showModal();
  }
  document.addEventListener("click", (event) => {
    const img = event.target.closest && event.target.closest(".cell_output img, img.course-slider-figure");
    if (img && !img.closest("dialog")) enlarge(img);
  });

  /* Search results: Sphinx shows a snippet of each page's [role=main] text, which on this theme
     holds the page's buttons too ("Light Dark ...") and the formulas' TeX source. Give it the
     article alone, each formula as plain text. */
  const NAMES = {alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", theta: "θ", lambda: "λ",
                 mu: "μ", pi: "π", sigma: "σ", tau: "τ", phi: "φ", omega: "ω", Delta: "Δ", Sigma: "Σ",
                 cdot: "·", times: "×", approx: "≈", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠",
                 neq: "≠", to: "→", rightarrow: "→", infty: "∞", sum: "Σ", in: "∈", ldots: "…",
                 cdots: "⋯", dots: "…", top: "ᵀ", quad: " ", qquad: " "};
  function plainMaths(tex) {
    return tex
      .replace(/^\\[(\[]|\\[)\]]$/g, "")
      .replace(/\\sqrt\{([^{}]*)\}/g, "√($1)")
      .replace(/\\frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)")
      .replace(/\\(?:mathrm|text|mathbf|mathit|operatorname|mathcal|boldsymbol)\{([^{}]*)\}/g, "$1")
      .replace(/\\(left|right|big|Big|bigl|bigr|displaystyle)\b/g, "")
      .replace(/\\([A-Za-z]+)/g, (all, name) => (name in NAMES ? NAMES[name] : name))
      .replace(/\\[,;:! ]/g, " ")
      .replace(/[{}]/g, "")
      .replace(/\s+/g, " ")
      .trim();
  }
  function cleanForSearch(htmlString) {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const article = doc.querySelector("article.bd-article") || doc.querySelector('[role="main"]');
    if (!article) return htmlString;
    article.querySelectorAll(".math").forEach((m) => { m.textContent = " " + plainMaths(m.textContent) + " "; });
    article.querySelectorAll(".headerlink, script, style, .course-slider-control").forEach((e) => e.remove());
    return '<html><body><div role="main">' + article.innerHTML + "</div></body></html>";
  }
  function patchSearch() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.courseClean) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => original(cleanForSearch(htmlString), anchor);
    Search.courseClean = true;
  }
  patchSearch();
  document.addEventListener("DOMContentLoaded", patchSearch);

  /* On a laptop (course.css: 992-1599 px) the page's contents are not a third column: the
     header's contents button opens them as a panel on the right (a click on a link, on the
     page, or Escape closes it). Elsewhere the theme's own behaviour stands. */
  const LAPTOP = window.matchMedia("(min-width: 992px) and (max-width: 1599.98px)");
  document.addEventListener("click", (event) => {
    const toggle = event.target.closest && event.target.closest(".secondary-toggle");
    const open = document.body.classList.contains("course-toc-open");
    if (toggle && LAPTOP.matches) {
      event.preventDefault();
      event.stopImmediatePropagation();
      document.body.classList.toggle("course-toc-open");
    } else if (open && (!event.target.closest(".bd-sidebar-secondary") || event.target.closest("a"))) {
      document.body.classList.remove("course-toc-open");
    }
  }, true);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") document.body.classList.remove("course-toc-open");
  });

  /* Sliders that move without a kernel: each .course-slider holds the frames its slider drew
     when the page was built (helpers/instructor/book.py, show_slider_frames), each under the
     labels its controls showed. A range input (or a menu) per control picks the frame. A
     control that sets another's choices (the head count sets the kv heads it offers) comes
     first in data-order; the other keeps its value if it can, else the nearest one below. */
  function nearest(options, old) {
    if (options.includes(old)) return old;
    const value = Number(old), numbers = options.map(Number);
    if (!Number.isNaN(value) && !numbers.some(Number.isNaN)) {
      const below = options.filter((o, i) => numbers[i] <= value);
      if (below.length) return below[below.length - 1];
    }
    return options[0];
  }
  function setUpSlider(root) {
    const frames = JSON.parse(root.dataset.frames);
    const order = JSON.parse(root.dataset.order);
    const inputs = Array.from(root.querySelectorAll(".course-slider-control input, .course-slider-control select"));
    const image = root.querySelector("img.course-slider-figure");
    const names = Array.from(root.querySelectorAll(".course-slider-control label")).map((l) => l.textContent);
    const shown = frames.find((f) => image.getAttribute("src") === f.src) || frames[0];
    const current = shown.v.slice();
    const optionsFor = (c) => {
      const before = order.slice(0, order.indexOf(c));
      const seen = [];
      frames.forEach((f) => {
        if (before.every((b) => f.v[b] === current[b]) && !seen.includes(f.v[c])) seen.push(f.v[c]);
      });
      return seen;
    };
    function show() {
      order.forEach((c) => {
        const options = optionsFor(c);
        current[c] = nearest(options, current[c]);
        const input = inputs[c];
        if (input.tagName === "SELECT") {
          if (Array.from(input.options).map((o) => o.textContent).join("\n") !== options.join("\n")) {
            input.replaceChildren(...options.map((label, i) => new Option(label, String(i))));
          }
        } else {
          input.max = String(options.length - 1);
          const output = input.parentElement.querySelector("output");
          if (output) output.textContent = current[c];
        }
        input.value = String(options.indexOf(current[c]));
        input.setAttribute("aria-valuetext", current[c]);
      });
      const frame = frames.find((f) => f.v.every((v, i) => v === current[i]));
      if (frame && image.getAttribute("src") !== frame.src) {
        image.src = frame.src;
        image.alt = "the figure at " + names.map((n, i) => n + " = " + current[i]).join(", ");
      }
    }
    inputs.forEach((input, c) => {
      input.addEventListener("input", () => {
        current[c] = optionsFor(c)[Number(input.value)];
        show();
      });
    });
    show();
    root.classList.add("course-slider-ready");
  }
  function setUpSliders() {
    document.querySelectorAll(".course-slider:not(.course-slider-ready)").forEach(setUpSlider);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUpSliders);
  else setUpSliders();
})();

