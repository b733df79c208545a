"""Build the course as a static website: every student lesson executed, as a web page.

    python -m helpers.instructor.book [OUT]        (make book: OUT = _build/book)

writes ``OUT/html/index.html`` -- open it in a browser -- from:

- ``OUT/source/index.md``: the landing page, a table of the lessons, each by its page's
  title (the sidebar's name for it) with the README's "what you learn" (lessons are found
  by :func:`helpers.course.lessons`, never listed here);
- ``OUT/source/notebooks/NAME.ipynb``: copies of the **student** notebooks (no solution
  code), each with a Binder badge next to its Colab badge and a line saying how to run it,
  made into web pages: no setup cell shown (it still runs) and no "Shift + Enter"; each
  "on your machine" said of the build machine, and a note dating the measurements ("measured
  when this page was built, on ..."); each exercise shown as an exercise: its statement, its
  starting code folded, and a "Try it" box that opens the lesson in Colab or on Binder (in
  place of the check cell, which still runs: the page goes on with the reference).
  The repository's notebooks are never touched.

Sphinx with MyST-NB (the engine of Jupyter Book 1) executes every copy in a fresh kernel,
so each figure and printed number shows, and stops with an error if any cell raises.
Its settings are in ``book/conf.py``; ``book/slider_figures.py`` turns each slider into the
figure at its starting value and a note saying where it moves. Nothing here is
learner-facing, and the packages it needs are in ``requirements-book.txt``.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from helpers import course

from .release import lesson_title
from .student import ROOT

#: Where ``make book`` writes: ``source/`` (what Sphinx reads) and ``html/`` (the site).
DEFAULT_OUT = ROOT / "_build" / "book"
#: Sphinx's settings (``conf.py``) and the course's small Sphinx extension.
CONF_DIR = ROOT / "book"
#: The variable that tells ``book/conf.py`` where :func:`stage_mathjax` put MathJax.
MATHJAX_ENV = "COURSE_BOOK_MATHJAX"

INTRO = """\
# Self-Attention & Multi-Head

A hands-on course on how attention actually works: from the query/key/value projections,
through the score grid, the $\\sqrt{{d_k}}$ scaling, softmax and multi-head attention, to its cost,
its gradients, a model trained with them, word order, two layers that work together, and
generating text with a KV cache. NumPy, matplotlib and ipywidgets only: no deep-learning
framework.

Each page below is a lesson, run from top to bottom: every figure and number on it was
computed when this site was built, and its sliders move on the page (each position drawn
then). Each exercise has a "Try it" box: to do it, open the lesson in Colab or on Binder
(the links on each page), or on your machine: `make lab` in a clone of the course.

{binder}
"""


def readme_rows(readme_text):
    """The README's lesson rows, by lesson: ``{"01_qkv_projections": "| 01 | [...](...) | ... |"}``."""
    rows = {}
    for line in readme_text.splitlines():
        found = re.match(r"\|\s*\d+\s*\|.*\]\(notebooks/([^)/]+)\.ipynb\)", line)
        if found:
            rows[found.group(1)] = line.strip()
    return rows


def lesson_table(lessons, readme_text, notebooks):
    """The landing page's table: each lesson by its page's title (as the sidebar names it), with
    the README's "what you learn" and Colab badge for it (a lesson the README does not list yet
    gets its title alone).

    ``notebooks`` is the folder of the staged lessons. The links point at
    ``notebooks/NAME.ipynb``: on the site, MyST turns them into links to the lesson's page.
    """
    rows = readme_rows(readme_text)
    lines = ["| # | lesson | what you learn | |", "|---|---|---|---|"]
    for lesson in lessons:
        where = f"notebooks/{lesson}.ipynb"
        title = lesson_title(notebooks / f"{lesson}.ipynb").replace("|", "\\|")
        cells = [c.strip() for c in rows[lesson].strip("|").split("|")] if lesson in rows else []
        learn = cells[2] if len(cells) > 3 else ""
        badge = cells[3] if len(cells) > 3 else course.colab_badge(where)
        lines.append(f"| {lesson.split('_')[0]} | [{title}]({where}) | {learn} | {badge} |")
    return "\n".join(lines)


def index_page(lessons, readme_text, notebooks):
    """The landing page (MyST Markdown): the introduction, the lesson table, the page order."""
    toctree = "\n".join(["```{toctree}", ":hidden:", ":maxdepth: 1", ""]
                        + [f"notebooks/{lesson}" for lesson in lessons] + ["```"])
    return "\n".join([INTRO.format(binder=course.binder_badge("notebooks")), "## The lessons", "",
                      lesson_table(lessons, readme_text, notebooks), "", toctree, ""])


def with_binder_badge(nb, path):
    """``nb`` with a Binder badge next to its Colab badge (or under its title if it has none)."""
    colab, binder = course.colab_badge(path), course.binder_badge(path)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and colab in cell.source:
            cell.source = cell.source.replace(colab, f"{colab} {binder}", 1)
            return nb
    first = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    badges = f"{colab} {binder}"
    if first is not None and first.source.lstrip().startswith("#"):
        title, _, rest = first.source.partition("\n")
        first.source = f"{title}\n\n{badges}\n{rest}"
    else:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(badges))
    return nb


def _fold(cell, label):
    """Fold ``cell``'s code on the page behind a button named ``label`` (MyST-NB's hide-input)."""
    tags = cell.metadata.setdefault("tags", [])
    if "hide-input" not in tags:
        tags.append("hide-input")
    cell.metadata.setdefault("mystnb", {}).update(code_prompt_show=label, code_prompt_hide="Hide it")


def with_setup_removed(nb):
    """``nb`` with its setup cell off the page: it still runs (tag ``remove-cell``), but a web page
    has no ``sys.path`` to set up, and a reader nothing to fold open."""
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith(course.SETUP_TITLE):
            tags = cell.metadata.setdefault("tags", [])
            if "remove-cell" not in tags:
                tags.append("remove-cell")
    return nb


#: A notebook's instruction that has no meaning on a web page (there are no cells to run).
NOTEBOOK_ONLY_LINE = re.compile(r"^[^\n]*Shift\s*\+\s*Enter[^\n]*\n?", re.M)


def without_notebook_instructions(nb):
    """``nb`` without the lines that tell a notebook's reader how to run cells ("Shift + Enter")."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = NOTEBOOK_ONLY_LINE.sub("", cell.source)
    return nb


#: A code cell that times or traces something: its numbers are the build machine's.
MEASURING = re.compile(r"\bmeasure\w*\.\w*(?:time|peak|cost|bytes)|perf_counter|timeit|traced_peak")
#: What the notebook says of its reader's machine, and what the page says instead.
ON_YOUR_MACHINE = [(re.compile(r"^(#.*?) on your machine", re.M), r"\1"),     # a heading: just drop it
                   (re.compile(r"\bon your machine\b"), "on the machine that built this page"),
                   (re.compile(r"\bthis notebook's own measurement"), "a measurement made when this page was built")]
MEASURED_NOTE = ("```{{note}}\nThe times and memory figures on this page were measured when this page "
                 "was built, on {built}. On your machine they differ: run the lesson to see yours.\n```")


def page_title(notebook):
    """The title a lesson's page shows (and the sidebar, and the landing table): its notebook's
    title, with what it says of the reader's machine rewritten as on the page."""
    heading = f"# {lesson_title(notebook)}"
    for pattern, replacement in ON_YOUR_MACHINE:
        heading = pattern.sub(replacement, heading)
    return heading[2:]


def build_machine(today=None):
    """``"2026-12-04, on Linux x86_64 with 2 cores (Python 3.11, NumPy 2.3.1)"``: where the page is built."""
    import datetime
    import platform

    import numpy

    today = today or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    cores = os.cpu_count() or 1
    return (f"{today}, on {platform.system()} {platform.machine()} with {cores} core{'s' * (cores != 1)} "
            f"(Python {platform.python_version()}, NumPy {numpy.__version__})")


def with_measurements_dated(nb, built=None):
    """``nb`` saying that its measured numbers are the build machine's: each "on your machine"
    rewritten (:data:`ON_YOUR_MACHINE`), and a note (:data:`MEASURED_NOTE`) right before the
    first cell that measures, if any does."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for pattern, replacement in ON_YOUR_MACHINE:
                cell.source = pattern.sub(replacement, cell.source)
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code" and MEASURING.search(c.source)),
                 None)
    if first is not None:
        at = first
        while at > 0 and nb.cells[at - 1].cell_type == "markdown":   # before the text that leads to it
            at -= 1
        at = max(at, first - 1)
        nb.cells.insert(at, nbformat.v4.new_markdown_cell(MEASURED_NOTE.format(built=built or build_machine())))
    return nb


#: Under the badges of every lesson page: what the page is, and where to run it.
HOW_TO_RUN = ("*This page is the lesson as it ran when the site was built: every figure and number "
              "below was computed then, and each slider shows the figures drawn then. To run it "
              "yourself and do its exercises, open it in [Colab]({colab}) or on [Binder]({binder}) "
              "(a free JupyterLab in your browser).*")

TRY_IT = """```{{admonition}} Try it: {name}
:class: tip course-try-it
This is an exercise. Open this lesson in [Colab]({colab}) or on [Binder]({binder}), write
`{name}` in the cell above (its starting code is folded here), and run the check under it:
it tells you in a moment whether it is right, or what is wrong. On this page the lesson goes
on with the course's own `{name}`.
```"""


def _check_cell_of(name, cells):
    """The index of the check cell of exercise ``name`` (``name = check("name", name)``), or None."""
    call = re.compile(rf"""\bcheck\(\s*["']{re.escape(name)}["']""")
    return next((i for i, c in enumerate(cells) if c.cell_type == "code" and call.search(c.source)), None)


def with_exercises_as_exercises(nb, path):
    """``nb`` with each exercise shown as one on the page: its starting code folded, and a
    "Try it" box (Colab, Binder) in place of its check cell's source and "not attempted" notice.

    The check cell still runs (tag ``remove-cell``): the page goes on with the reference.
    A student stub is a code cell that raises ``NotImplementedError()``; the exercises are
    the notebook's ``metadata.course.exercises``.
    """
    for cell in nb.cells:
        if cell.cell_type == "code" and "raise NotImplementedError()" in cell.source:
            _fold(cell, "Show the exercise's starting code")
        elif cell.cell_type == "markdown":        # the Try it box says where to run the check
            cell.source = re.sub(r"\n*^Then run the check cell below it\.$", "", cell.source, flags=re.M)
    links = dict(colab=course.colab_url(path), binder=course.binder_url(path))
    for name in nb.metadata.get("course", {}).get("exercises", []):
        at = _check_cell_of(name, nb.cells)
        if at is None:
            continue
        tags = nb.cells[at].metadata.setdefault("tags", [])
        if "remove-cell" not in tags:
            tags.append("remove-cell")
        nb.cells.insert(at + 1, nbformat.v4.new_markdown_cell(TRY_IT.format(name=name, **links)))
    return nb


def with_how_to_run(nb, path):
    """``nb`` with :data:`HOW_TO_RUN` right after the cell that holds its badges."""
    binder = course.binder_badge(path)
    at = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and binder in c.source), 0)
    line = HOW_TO_RUN.format(colab=course.colab_url(path), binder=course.binder_url(path))
    nb.cells.insert(at + 1, nbformat.v4.new_markdown_cell(line))
    return nb


# --- sliders that move on the page: their frames, rendered when the page is built --------------

#: A cell that builds a slider: a ``*_slider`` or ``*_explorer`` maker, or an ipywidgets ``*Slider``
#: (``figure_slider`` only puts a figure under a slider made elsewhere).
SLIDER_CALL = re.compile(r"\b(?!figure_slider\()\w*(?:_slider|_explorer|Slider)\(")
#: Where the kernel writes the frames (the build sets it; book/conf.py serves it as static files).
FRAMES_ENV = "COURSE_BOOK_FRAMES"
#: The hidden cell after each slider cell: it renders every frame of the sliders just built.
FRAMES_CELL = "from helpers.instructor.book import show_slider_frames\nshow_slider_frames({lesson!r})"
#: At most this many positions per control (evenly spread, the starting one kept), and frames per slider.
MAX_STEPS, MAX_FRAMES = 17, 200
FRAMES_CAPTION = ("Move it: each position shows the figure drawn for it when this page was built, by "
                  "the same code as in the notebook, with the course's own functions (in the notebook, "
                  "each step calls yours).")
_SHOWN = set()        # (in the kernel) the widgets whose frames are on the page already
_COUNT = {}


def with_slider_frames(nb, lesson):
    """``nb`` with a hidden cell (:data:`FRAMES_CELL`, its code removed from the page) after each
    cell that builds a slider: on the page, the slider becomes a range input over its frames."""
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "code" and SLIDER_CALL.search(cell.source):
            frames = nbformat.v4.new_code_cell(FRAMES_CELL.format(lesson=lesson))
            frames.metadata["tags"] = ["remove-input"]
            cells.append(frames)
    nb.cells = cells
    return nb


def _descendants(widget):
    found = [widget]
    for child in getattr(widget, "children", ()) or ():
        found += _descendants(child)
    return found


def _all_widgets():
    from ipywidgets.widgets import widget

    registry = getattr(widget, "_instances", None)
    if registry is None:                                   # ipywidgets 7
        registry = widget.Widget.widgets
    return list(registry.values())


def _slider_boxes():
    """(box, controls, image) for each box built since the last call that holds selection
    controls (sliders, menus) and one picture; controls in display order."""
    import ipywidgets

    selection = ipywidgets.widgets.widget_selection._Selection
    new = [w for w in _all_widgets() if w.model_id not in _SHOWN]
    boxes = []
    for widget in new:
        if not isinstance(widget, ipywidgets.Box):
            continue
        inside = _descendants(widget)
        controls = [w for w in inside if isinstance(w, selection)]
        images = [w for w in inside if isinstance(w, ipywidgets.Image)]
        if controls and len(images) == 1:
            boxes.append((widget, controls, images[0]))
    nested = {id(w) for box, _, _ in boxes for w in _descendants(box)[1:]}
    return [b for b in boxes if id(b[0]) not in nested]


def _steps(control):
    n = len(control.options)
    if n <= MAX_STEPS:
        return list(range(n))
    every = -(-n // 9)
    return sorted(set(range(0, n, every)) | {control.index, n - 1})


def _drivers_first(controls):
    """The controls, those that change another's options first (lesson 11's head count sets
    the kv heads it offers; lesson 10's sentence sets its word menu)."""
    drivers = []
    for control in controls:
        others = [tuple(c._options_labels) for c in controls if c is not control]
        before = {id(c): c._options_labels[c.index] for c in controls}
        control.index = (control.index + 1) % len(control.options)
        changed = others != [tuple(c._options_labels) for c in controls if c is not control]
        for c in [control] + [c for c in controls if c is not control]:     # back as they were
            if before[id(c)] in c._options_labels:
                c.index = list(c._options_labels).index(before[id(c)])
        drivers.append(changed)
    return [c for c, d in zip(controls, drivers) if d] + [c for c, d in zip(controls, drivers) if not d]


def slider_frames(controls, image):
    """Every frame of a slider: ``{(the label each control shows, display order): png}``, and the
    controls' order, drivers first (their indices).

    Each control is moved through its positions (:func:`_steps`), drivers first; each
    position redraws the picture through the slider's own code, and the picture is kept
    under the positions the controls then show. The controls go back to where they started.
    """
    start = {id(c): c._options_labels[c.index] for c in controls}
    order = _drivers_first(controls)
    frames = {}

    def visit(i):
        if len(frames) >= MAX_FRAMES:
            return
        if i == len(order):
            frames.setdefault(tuple(str(c._options_labels[c.index]) for c in controls), bytes(image.value))
            return
        for step in _steps(order[i]):
            order[i].index = step
            visit(i + 1)

    visit(0)
    for control in order:                  # drivers first: each then offers its starting choice again
        labels = list(control._options_labels)
        if start[id(control)] in labels:
            control.index = labels.index(start[id(control)])
    return frames, [controls.index(c) for c in order]


def _frame_source(png, lesson):
    import base64
    import hashlib

    folder = os.environ.get(FRAMES_ENV)
    if not folder:
        return "data:image/png;base64," + base64.b64encode(png).decode()
    name = hashlib.sha1(png).hexdigest()[:20] + ".png"
    target = Path(folder) / "course-frames" / lesson / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.write_bytes(png)
    return f"../_static/course-frames/{lesson}/{name}"


def slider_html(box, controls, image, lesson):
    """The page's slider: a range input (or a menu) per control, over the frames' images."""
    import html
    import json

    frames, order = slider_frames(controls, image)
    number = _COUNT[lesson] = _COUNT.get(lesson, 0) + 1
    data = [{"v": list(key), "src": _frame_source(png, lesson)} for key, png in frames.items()]
    first = frames.get(tuple(str(c._options_labels[c.index]) for c in controls), next(iter(frames.values())))
    width = str(image.layout.width or "")
    width = int(float(width[:-2])) if width.endswith("px") else None
    parts = [f'<div class="course-slider" data-model="{box.model_id}" data-order="{json.dumps(order)}" '
             f'data-frames="{html.escape(json.dumps(data))}">']
    for i, control in enumerate(controls):
        ident = f"course-slider-{lesson}-{number}-{i}"
        labels = [str(label) for label in control._options_labels]
        name = html.escape(control.description or f"control {i + 1}")
        parts.append(f'<div class="course-slider-control"><label for="{ident}">{name}</label>')
        if type(control).__name__.endswith("Slider"):
            parts.append(f'<input type="range" id="{ident}" min="0" max="{len(labels) - 1}" step="1" '
                         f'value="{control.index}" data-labels="{html.escape(json.dumps(labels))}">'
                         f'<output for="{ident}">{html.escape(labels[control.index])}</output>')
        else:
            options = "".join(f'<option value="{j}"{" selected" * (j == control.index)}>'
                              f"{html.escape(label)}</option>" for j, label in enumerate(labels))
            parts.append(f'<select id="{ident}" data-labels="{html.escape(json.dumps(labels))}">'
                         f"{options}</select>")
        parts.append("</div>")
    at = ", ".join(f"{c.description} = {c._options_labels[c.index]}" for c in controls)
    size = f' width="{int(width)}"' if width else ""
    parts.append(f'<img class="course-slider-figure" alt="the figure at {html.escape(at)}"{size} '
                 f'src="{_frame_source(first, lesson)}">')
    caption = FRAMES_CAPTION
    for control in controls:
        shown, total = len(_steps(control)), len(control.options)
        if shown < total:
            caption += f" On this page {control.description} takes {shown} of its {total} positions."
    parts.append(f'<p class="course-slider-caption">{html.escape(caption)}</p></div>')
    return "".join(parts)


def show_slider_frames(lesson):
    """(In the build's kernel, :data:`FRAMES_CELL`) show each slider built since the last call
    as a plain HTML slider over its frames, rendered now."""
    from IPython.display import HTML, display

    for box, controls, image in _slider_boxes():
        display(HTML(slider_html(box, controls, image, lesson)))
        _SHOWN.update(w.model_id for w in _descendants(box))
    _SHOWN.update(w.model_id for w in _all_widgets())


def stage(source, root=ROOT):
    """Write Sphinx's input into ``source`` (replaced): the landing page and the lesson copies."""
    if source.exists():
        shutil.rmtree(source)
    (source / "notebooks").mkdir(parents=True)
    lessons = course.lessons(root / "solutions")
    missing = [lesson for lesson in lessons if not (root / "notebooks" / f"{lesson}.ipynb").exists()]
    if missing:
        raise FileNotFoundError(f"book: no student notebook for {missing} in {root / 'notebooks'}: "
                                f"run `make student`")
    built = build_machine()
    for lesson in lessons:
        path = f"notebooks/{lesson}.ipynb"
        nb = nbformat.read(str(root / path), as_version=4)
        nb = with_how_to_run(with_binder_badge(nb, path), path)
        nb = with_measurements_dated(without_notebook_instructions(with_setup_removed(nb)), built)
        nb = with_slider_frames(nb, lesson)
        nbformat.write(with_exercises_as_exercises(nb, path), str(source / path))
    readme = (root / "README.md").read_text(encoding="utf-8")
    (source / "index.md").write_text(index_page(lessons, readme, source / "notebooks"), encoding="utf-8")
    return lessons


#: MathJax 3, from the Python package ``django-static-mathjax`` (requirements-book.txt): the
#: parts the site uses, copied into the site, so that its formulas render without a CDN.
MATHJAX_DISTRIBUTION = "django-static-mathjax"
MATHJAX_PARTS = ("tex-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions", "../LICENSE")


def stage_mathjax(folder, distribution=MATHJAX_DISTRIBUTION):
    """Copy MathJax's TeX-to-HTML bundle, its fonts and its TeX extensions to ``folder/mathjax``.

    Returns ``folder`` (for ``html_static_path``), or None when the package is not installed:
    the site then loads MathJax from Sphinx's default CDN.
    """
    from importlib import metadata

    try:
        files = metadata.files(distribution) or []
    except metadata.PackageNotFoundError:
        return None
    bundle = next((f for f in files if str(f).endswith("/es5/tex-chtml.js")), None)
    if bundle is None:
        return None
    es5 = Path(bundle.locate()).parent
    target = Path(folder) / "mathjax"
    if target.exists():
        shutil.rmtree(target)
    for part in MATHJAX_PARTS:
        source = es5 / part
        where = target / source.resolve().relative_to(es5.parent if part.startswith("..") else es5)
        where.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, where)
        else:
            shutil.copyfile(source, where)
    return Path(folder)


def build(out=DEFAULT_OUT, root=ROOT, python=sys.executable):
    """Stage the course into ``out/source`` and build the site into ``out/html``; return that folder.

    Raises ``RuntimeError`` (with Sphinx's output) when the build fails: a cell that raises,
    a broken cross-reference, any Sphinx warning.
    """
    out = Path(out).resolve()
    stage(out / "source", root)
    html = out / "html"
    if html.exists():
        shutil.rmtree(html)
    env = dict(os.environ, MPLBACKEND="module://matplotlib_inline.backend_inline",
               PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    env.pop("COURSE_RUN_CACHE", None)
    env.pop("PYTHONSTARTUP", None)   # the website trains for real, even inside a test run: lesson 09 prints how long
    frames = out / "frames"
    if frames.exists():
        shutil.rmtree(frames)
    (frames / "course-frames").mkdir(parents=True)
    env[FRAMES_ENV] = str(frames)
    mathjax = stage_mathjax(out / "static")
    if mathjax is not None:
        env[MATHJAX_ENV] = str(mathjax)
    else:
        env.pop(MATHJAX_ENV, None)
    command = [python, "-m", "sphinx", "-b", "html", "-c", str(CONF_DIR), "-W", "--keep-going", "-T",
               "-q", "-d", str(out / "doctrees"), str(out / "source"), str(html)]
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if result.returncode != 0 or not (html / "index.html").exists():
        raise RuntimeError(f"book: sphinx-build failed ({result.returncode}):\n"
                           f"{_failure(result.stdout + result.stderr)}")
    return html


def _failure(output):
    """The useful part of Sphinx's output: the cell that raised and its traceback, if a cell did."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)          # the traceback's colours
    cell = re.search(r"An error occurred while executing the following cell:.*?"
                     r"(?=\n\s*The above exception|\Z)", output, flags=re.S)
    if cell is None:
        return output[-8000:]
    where = re.search(r"ExecutionError: (\S+\.ipynb)", output)
    return (f"{Path(where.group(1)).name}: " if where else "") + cell.group(0).strip()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m helpers.instructor.book",
                                     description="Build the course as a static website: the student "
                                                 "lessons executed, one page each.")
    parser.add_argument("out", nargs="?", default=str(DEFAULT_OUT),
                        help=f"the build folder (default {DEFAULT_OUT.relative_to(ROOT)}); "
                             f"the site is written to OUT/html")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        html = build(args.out)
    except (RuntimeError, FileNotFoundError) as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"built {html / 'index.html'} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
