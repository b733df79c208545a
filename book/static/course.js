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
})();
