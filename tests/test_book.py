"""The course's website (``make book``): built once, then read in a real browser.

The build (``helpers.instructor.book.build``) runs once per test run, into a temporary
folder: Sphinx + MyST-NB execute every student lesson (a few minutes). The site is
then served on a free port of 127.0.0.1 and opened in headless Chromium (Playwright), the
same browser as tests/test_browser.py: the landing page lists every lesson by the name the
sidebar gives it, each lesson page loads, shows its figures (images that decoded), its
Colab and Binder links (to the one address of helpers/course.py), no traceback and no
solution code, and every link to a page of the site resolves (anchors included).

Every slider moves on the page: a range input (or a menu) over frames drawn at build time,
and each position shows its own figure. At a phone's width (390 px) the navigation and
contents buttons open their panels; at a laptop's (1366 px) the navigation button
collapses the sidebar and the contents button opens the page's contents (no third column: the
code gets the width); one search box, search snippets without TeX or buttons. No code line
wraps (a long one scrolls inside its block, and no name is split); no page wider than a
phone; a formula or code block wider than its column shows a shadow at each edge with more to
see (none at its end), and one that fits looks as it would without that cue; figures enlarge
on a tap. No notebook plumbing: no setup cell, no "Shift + Enter";
numbers measured at build time say so. Every lesson's maths rendered by MathJax with no
formula error and no stray ``$``; every exercise as an exercise (a "Try it" box, its
starting code folded); slider images at 100 dpi or more and never enlarged; a favicon, one
title per page, a footer with the licence; the optional PyTorch sections with their numbers.

Without Playwright, Chromium or the book's requirements (``make book-deps``) these tests
are skipped with the reason -- unless ``REQUIRE_BROWSER=1`` (``.ci/run``): then that is a
failure. ``make test-oldest`` (``COURSE_OLDEST=1``) skips them: the site is built with
the newest versions only, once per CI run, by ``make test``.

The first tests (the landing page's table, the badges, the staging) need none of that.
"""

import base64
import functools
import http.server
import io
import os
import re
import struct
import threading
import time
import urllib.parse
from pathlib import Path

import nbformat
import numpy as np
import pytest
from PIL import Image

import lab_browser
from helpers import course
from helpers.instructor import book
from test_lesson_maths import WITHOUT_MATHS_YET

pytestmark = pytest.mark.slow   # builds the whole site: scheduled first (conftest.py)

ROOT = Path(__file__).resolve().parents[1]
LESSONS = course.lessons()
# A cell that builds a slider (as in tests/test_browser.py): a *_slider or *_explorer maker,
# or an ipywidgets *Slider; figure_slider only puts a figure under a slider made elsewhere.
SLIDER_CALL = re.compile(r"\b(?!figure_slider\()\w*(?:_slider|_explorer|Slider)\(")
BOOK_PACKAGES = ("sphinx", "myst_nb", "sphinx_book_theme")
TITLE = "Self-Attention & Multi-Head"
DESKTOP = {"width": 1366, "height": 768}    # the commonest laptop screen
PHONE = {"width": 390, "height": 844}       # a common phone, in CSS pixels
#: Lessons whose slider images are still below 100 dpi (none now): expected to fail, strictly,
#: so that a fixed one says so.
LOW_DPI_SLIDERS_YET = set()


# --- the pages' sources, without a build -------------------------------------------------------

def write_lesson(path, title):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\nSome text.")]
    nbformat.write(nb, str(path))


def test_the_landing_page_names_each_lesson_by_its_title_with_the_readmes_description(tmp_path):
    write_lesson(tmp_path / "01_q.ipynb", "Lesson 01 — Queries, keys and values")
    write_lesson(tmp_path / "02_s.ipynb", "Lesson 02 — The score grid")
    readme = ("intro\n\n| # | notebook | what | |\n|---|---|---|---|\n"
              "| 01 | [Queries](notebooks/01_q.ipynb) | projections | badge |\n"
              "| 02 | [Scores](notebooks/02_s.ipynb) | grids | badge |\n")
    table = book.lesson_table(["01_q", "02_s"], readme, tmp_path).splitlines()
    assert table[2:] == [
        "| 01 | [Lesson 01 — Queries, keys and values](notebooks/01_q.ipynb) | projections | badge |",
        "| 02 | [Lesson 02 — The score grid](notebooks/02_s.ipynb) | grids | badge |"]


def test_a_lesson_the_readme_does_not_list_yet_gets_a_row_with_its_title(tmp_path):
    write_lesson(tmp_path / "01_q.ipynb", "Lesson 01 — Q")
    write_lesson(tmp_path / "09_position.ipynb", "Lesson 09 — Position")
    readme = "| 01 | [Queries](notebooks/01_q.ipynb) | projections | badge |\n"
    rows = book.lesson_table(["01_q", "09_position"], readme, tmp_path).splitlines()[2:]
    assert len(rows) == 2
    assert rows[1].startswith("| 09 | [Lesson 09 — Position](notebooks/09_position.ipynb) |")
    assert course.colab_url("notebooks/09_position.ipynb") in rows[1]


def test_a_readme_row_of_a_lesson_that_no_longer_exists_is_left_out(tmp_path):
    write_lesson(tmp_path / "01_q.ipynb", "Lesson 01 — Q")
    readme = ("| 01 | [Queries](notebooks/01_q.ipynb) | a | b |\n"
              "| 02 | [Old](notebooks/02_old.ipynb) | a | b |\n")
    rows = book.lesson_table(["01_q"], readme, tmp_path).splitlines()[2:]
    assert rows == ["| 01 | [Lesson 01 — Q](notebooks/01_q.ipynb) | a | b |"]


def test_the_binder_badge_goes_right_after_the_colab_badge():
    path = "notebooks/01_q.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# Lesson 01\n\n{course.colab_badge(path)}\n\nText.")]
    source = book.with_binder_badge(nb, path).cells[0].source
    assert source == f"# Lesson 01\n\n{course.colab_badge(path)} {course.binder_badge(path)}\n\nText."


def test_a_lesson_without_a_colab_badge_gets_both_badges_under_its_title():
    path = "notebooks/01_q.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Lesson 01\nText.")]
    source = book.with_binder_badge(nb, path).cells[0].source
    assert source == f"# Lesson 01\n\n{course.colab_badge(path)} {course.binder_badge(path)}\nText."


def test_staging_copies_every_student_lesson_and_leaves_the_course_unchanged(tmp_path):
    before = {p.name: p.read_bytes() for p in (ROOT / "notebooks").glob("*.ipynb")}
    staged = book.stage(tmp_path / "source")
    assert staged == LESSONS
    assert sorted(p.stem for p in (tmp_path / "source" / "notebooks").glob("*.ipynb")) == LESSONS
    assert {p.name: p.read_bytes() for p in (ROOT / "notebooks").glob("*.ipynb")} == before
    setup = [c for c in nbformat.read(str(tmp_path / "source" / "notebooks" / f"{LESSONS[0]}.ipynb"),
                                      as_version=4).cells
             if c.cell_type == "code" and c.source.startswith(course.SETUP_TITLE)]
    assert setup and "remove-cell" in setup[0].metadata["tags"]    # it runs, off the page


def test_a_page_loses_the_notebooks_run_instruction_and_keeps_the_rest_of_its_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Lesson 01\n\nRun each cell in order (Shift + Enter). "
                                              "Cells marked **Exercise** are yours.\nWhat it teaches.")]
    assert book.without_notebook_instructions(nb).cells[0].source == "# Lesson 01\n\nWhat it teaches."


def test_measurements_are_dated_and_said_of_the_machine_that_built_the_page():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Lesson 05 — Costs measured on your machine"),
                nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_markdown_cell("Now the real thing, on your machine."),
                nbformat.v4.new_code_cell("times = measure.median_times(f, sizes)")]
    cells = book.with_measurements_dated(nb, built="2026-12-04, on Linux x86_64 with 2 cores").cells
    assert [c.source.splitlines()[0] for c in cells] == [
        "# Lesson 05 — Costs measured", "x = 1", "```{note}",
        "Now the real thing, on the machine that built this page.", "times = measure.median_times(f, sizes)"]
    note = "measured when this page was built, on 2026-12-04, on Linux x86_64 with 2 cores."
    assert note in cells[2].source


def test_a_page_that_measures_nothing_gets_no_note():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Lesson 01"), nbformat.v4.new_code_cell("y = measure_it")]
    assert len(book.with_measurements_dated(nb, built="today").cells) == 2


def exercise_notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["course"] = {"exercises": ["f"]}
    statement = "## Exercise: `f`\n\nWrite `f`.\n\nThen run the check cell below it."
    nb.cells = [nbformat.v4.new_markdown_cell(statement),
                nbformat.v4.new_code_cell("def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"),
                nbformat.v4.new_code_cell('# Check your f\nf = check("f", f)'),
                nbformat.v4.new_code_cell("print(f(1))")]
    return nb


def test_an_exercise_gets_its_stub_folded_and_a_try_it_box_in_place_of_its_check():
    path = "notebooks/01_q.ipynb"
    cells = book.with_exercises_as_exercises(exercise_notebook(), path).cells
    assert [c.cell_type for c in cells] == ["markdown", "code", "code", "markdown", "code"]
    assert cells[0].source == "## Exercise: `f`\n\nWrite `f`."          # the notebook's own instruction
    assert "hide-input" in cells[1].metadata["tags"]
    assert cells[1].metadata["mystnb"]["code_prompt_show"] == "Show the exercise's starting code"
    assert cells[2].metadata["tags"] == ["remove-cell"]                 # still runs: the page goes on
    assert cells[3].source.startswith("```{admonition} Try it: f\n:class: tip course-try-it\n")
    assert course.colab_url(path) in cells[3].source and course.binder_url(path) in cells[3].source
    assert cells[4].source == "print(f(1))" and not cells[4].metadata.get("tags")


def test_a_check_cell_of_another_exercise_is_left_alone():
    nb = exercise_notebook()
    nb.metadata["course"]["exercises"] = ["g"]
    cells = book.with_exercises_as_exercises(nb, "notebooks/01_q.ipynb").cells
    assert len(cells) == 4 and not cells[2].metadata.get("tags")


def test_every_lesson_page_says_it_is_a_recorded_run_and_where_to_run_it():
    path = "notebooks/01_q.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# Lesson 01\n\n{course.colab_badge(path)}"),
                nbformat.v4.new_markdown_cell("Text.")]
    cells = book.with_how_to_run(book.with_binder_badge(nb, path), path).cells
    assert len(cells) == 3 and cells[1].source.startswith("*This page is the lesson as it ran")
    assert course.colab_url(path) in cells[1].source and cells[2].source == "Text."


def dependent_sliders():
    """Two sliders as lesson 11's: the first (listed second) sets the choices of the other, and a
    picture that shows both values."""
    import ipywidgets
    from matplotlib.figure import Figure

    from helpers import widgets

    heads = widgets.choice_slider([1, 2, 4], 4, "heads")
    kv = widgets.choice_slider(widgets.divisors(4), 2, "kv")
    image = ipywidgets.Image(format="png")
    fig = Figure(figsize=(1, 1))

    def redraw(change=None):
        fig.clf()
        fig.text(0.1, 0.5, f"{heads.value}/{kv.value}")
        image.value = widgets.png_of(fig)

    def heads_moved(change):
        kv.options = widgets.divisors(change["new"])
        kv.value = max(d for d in kv.options if d <= kv.value or d == 1)

    heads.observe(heads_moved, names="value")
    heads.observe(redraw, names="value")
    kv.observe(redraw, names="value")
    redraw()
    return ipywidgets.VBox([kv, heads, image]), kv, heads, image


def test_slider_frames_visit_every_position_of_controls_that_set_each_others_choices():
    box, kv, heads, image = dependent_sliders()
    frames, order = book.slider_frames([kv, heads], image)
    assert order == [1, 0]                                  # heads first: it sets kv's choices
    assert sorted(frames) == sorted([("1", "1"), ("1", "2"), ("2", "2"), ("1", "4"), ("2", "4"), ("4", "4")])
    assert len(set(frames.values())) == 6                   # each its own picture
    assert (heads.value, kv.value) == (4, 2)                # put back where they started


def test_a_slider_with_many_positions_keeps_a_few_and_its_start():
    from helpers import widgets

    slider = widgets.choice_slider(list(range(33)), 13, "q")
    steps = book._steps(slider)
    assert 9 <= len(steps) <= book.MAX_STEPS and {0, 13, 32} <= set(steps)


# --- the built site, in a browser -------------------------------------------------------------

def unavailable_reason():
    """Why the site cannot be built and read here, or None."""
    missing = [name for name in BOOK_PACKAGES if not _importable(name)]
    if missing:
        return (f"the website's requirements are not installed ({', '.join(missing)}): "
                f"make book-deps (pip install -r requirements-book.txt; .ci/run does it)")
    return lab_browser.unavailable_reason()


def _importable(name):
    try:
        __import__(name)
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def site_ready():
    reason = unavailable_reason()
    if reason and os.environ.get("COURSE_OLDEST") == "1":
        pytest.skip(f"oldest versions: the website is built once per CI run, with the newest "
                    f"versions, by `make test` ({reason})")
    if reason:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but the website test cannot run: {reason}")
        pytest.skip(reason)


def _build_once(tmp_path_factory):
    """Build the site once per test run, also when pytest-xdist spreads these tests over workers.

    ``COURSE_BOOK_HTML=_build/book/html`` reads a site already built (by ``make book``) instead:
    for working on these tests; a test run that should check the course itself leaves it unset.
    """
    if os.environ.get("COURSE_BOOK_HTML"):
        html = Path(os.environ["COURSE_BOOK_HTML"]).resolve()
        if not (html / "index.html").is_file():
            pytest.fail(f"COURSE_BOOK_HTML={html}: no index.html there (make book)")
        return html
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        started = time.perf_counter()
        html = book.build(tmp_path_factory.mktemp("book"))
        print(f"\nbook built in {time.perf_counter() - started:.0f} s")
        return html
    shared = tmp_path_factory.getbasetemp().parent / "book"     # the same for every worker
    done = shared.with_name("book.done")
    try:
        os.close(os.open(shared.with_name("book.lock"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:               # another worker builds it: wait for its verdict
        deadline = time.monotonic() + 1800
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(1)
        verdict = done.read_text() if done.exists() else "no build finished within 1800 s"
        if verdict != "ok":
            pytest.fail(f"the website's build failed (in another worker):\n{verdict}")
        return shared / "html"
    try:
        html = book.build(shared)
    except Exception as exc:
        done.write_text(str(exc) or repr(exc))
        raise
    done.write_text("ok")
    return html


def write_course(root, cells):
    """A one-lesson course in ``root``: ``cells`` are its code cells, after a title."""
    for folder in ("solutions", "notebooks"):
        (root / folder).mkdir(parents=True)
        nb = nbformat.v4.new_notebook()
        nb.cells = ([nbformat.v4.new_markdown_cell("# Lesson 01 — Tiny")]
                    + [nbformat.v4.new_code_cell(source) for source in cells])
        nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
        nbformat.write(nb, str(root / folder / "01_tiny.ipynb"))
    (root / "README.md").write_text("| 01 | [Tiny](notebooks/01_tiny.ipynb) | a tiny lesson | |\n")


def test_a_lesson_cell_that_raises_stops_the_build_and_names_the_cell(site_ready, tmp_path):
    # (a lesson that runs builds: the whole site below)
    write_course(tmp_path / "course", ["x = 1", "1 / 0"])
    with pytest.raises(RuntimeError, match=r"(?s)01_tiny\.ipynb: An error occurred while executing "
                                           r"the following cell:\s+-+\s+1 / 0.*ZeroDivisionError"):
        book.build(tmp_path / "out", root=tmp_path / "course")
    assert not (tmp_path / "out" / "html" / "notebooks" / "01_tiny.html").exists()


@pytest.fixture(scope="module")
def site(site_ready, tmp_path_factory):
    return _build_once(tmp_path_factory)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    """The site on http://127.0.0.1:PORT/ (a free port), as a web host would serve it."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(server):
    with lab_browser.launched_chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def context(browser):
    context = browser.new_context(viewport=DESKTOP)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture(scope="module")
def open_page(context, server):
    """``open_page("notebooks/01_x.html")``: that page, loaded once in its own tab for all the
    tests that read it (they only read it)."""
    pages = {}

    def load(path):
        if path not in pages:
            page = context.new_page()
            response = page.goto(server + path, wait_until="load")
            assert response is not None and response.ok, f"{path}: HTTP {response and response.status}"
            pages[path] = page
        return pages[path]

    try:
        yield load
    finally:
        for page in pages.values():
            page.close()


def student(lesson):
    return nbformat.read(str(ROOT / "notebooks" / f"{lesson}.ipynb"), as_version=4)


PAGES = ["index.html"] + [f"notebooks/{lesson}.html" for lesson in LESSONS]

# The figures of a page: every image a cell printed, and each slider's figure.
_FIGURES = """() => Array.from(document.querySelectorAll('.cell_output img, img.course-slider-figure'))
                    .map(img => ({src: img.getAttribute('src').slice(0, 60),
                                  complete: img.complete, width: img.naturalWidth}))"""
_ERRORS = """() => ({traceback: document.body.innerText.includes('Traceback'),
                    outputs: document.querySelectorAll('.cell_output .traceback, .cell_output .error, '
                                                       + '.output.traceback, .output.error').length})"""


def test_the_landing_page_links_every_lesson_in_order(open_page):
    page = open_page("index.html")
    hrefs = page.eval_on_selector_all("table a", "as => as.map(a => a.getAttribute('href'))")
    lesson_links = [h for h in hrefs if h.startswith("notebooks/")]
    assert lesson_links == [f"notebooks/{lesson}.html" for lesson in LESSONS]


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_page_shows_its_title_and_its_figures(open_page, lesson):
    page = open_page(f"notebooks/{lesson}.html")
    heading = page.inner_text("article h1").strip().rstrip("#¶").strip()
    assert heading == book.page_title(ROOT / "notebooks" / f"{lesson}.ipynb")
    figures = page.evaluate(_FIGURES)
    assert figures, f"{lesson}: no figure on the page"
    undecoded = [f["src"] for f in figures if not (f["complete"] and f["width"] > 0)]
    assert not undecoded, f"{lesson}: figures that did not load: {undecoded}"


@pytest.mark.parametrize("path", PAGES)
def test_no_page_shows_a_traceback(open_page, path):
    found = open_page(path).evaluate(_ERRORS)
    assert found == {"traceback": False, "outputs": 0}, f"{path}: {found}"


def slider_cells(lesson):
    return sum(1 for cell in student(lesson).cells
               if cell.cell_type == "code" and SLIDER_CALL.search(cell.source))


_FIGURE_NOW = """root => { const i = root.querySelector('img.course-slider-figure');
    return {src: i.getAttribute('src'), loaded: i.complete && i.naturalWidth > 0}; }"""


@pytest.mark.parametrize("lesson", [lesson for lesson in LESSONS if slider_cells(lesson)])
def test_every_slider_moves_on_the_page_and_each_position_shows_its_own_figure(open_page, lesson):
    page = open_page(f"notebooks/{lesson}.html")
    sliders = page.locator(".course-slider")
    assert sliders.count() >= slider_cells(lesson), f"{lesson}: {sliders.count()} moving sliders"
    assert page.locator(".course-slider-note").count() == 0, f"{lesson}: a slider left static"
    assert page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count() == 0
    for i in range(sliders.count()):
        root = sliders.nth(i)
        root.scroll_into_view_if_needed()
        for control in root.locator("input[type=range], select").all():
            if control.evaluate("e => e.tagName") == "SELECT":
                positions = control.evaluate("e => e.options.length")
                moves = [lambda k=k: control.select_option(index=k) for k in range(positions)]
            else:
                control.focus()
                control.press("Home")
                positions = int(control.get_attribute("max")) + 1
                moves = [lambda: None] + [lambda: control.press("ArrowRight")] * (positions - 1)
            seen = []
            for move in moves:
                move()
                page.wait_for_function("r => { const i = r.querySelector('img.course-slider-figure'); "
                                       "return i.complete && i.naturalWidth > 0; }",
                                       arg=root.element_handle())
                seen.append(root.evaluate(_FIGURE_NOW)["src"])
            assert positions >= 2, f"{lesson}: a control with {positions} position(s)"
            assert all(a != b for a, b in zip(seen, seen[1:])), \
                f"{lesson}, slider {i + 1}: a move that did not change the figure ({len(seen)} positions)"


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_page_opens_the_lesson_in_colab_and_on_binder(open_page, lesson):
    page = open_page(f"notebooks/{lesson}.html")
    hrefs = page.eval_on_selector_all("article a", "as => as.map(a => a.href)")
    path = f"notebooks/{lesson}.ipynb"
    assert course.colab_url(path) in hrefs
    assert course.binder_url(path) in hrefs


def _solution_blocks(lesson):
    """The code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` in the lesson's solution."""
    nb = nbformat.read(str(ROOT / "solutions" / f"{lesson}.ipynb"), as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    blocks = re.findall(r"### BEGIN SOLUTION\n(.*?)\n\s*### END SOLUTION", text, flags=re.S)
    return [b.strip() for b in blocks if b.strip()]


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_page_has_the_exercises_not_their_solutions(open_page, lesson):
    page = open_page(f"notebooks/{lesson}.html")
    text = page.evaluate("() => document.querySelector('article').textContent")   # folded code too
    for block in _solution_blocks(lesson):
        assert block not in text, f"{lesson}: solution code is published:\n{block}"


def exercises(lesson):
    return student(lesson).metadata.get("course", {}).get("exercises", [])


@pytest.mark.parametrize("lesson", [lesson for lesson in LESSONS if exercises(lesson)])
def test_each_exercise_invites_the_reader_to_try_it_in_colab_or_on_binder(open_page, lesson):
    page = open_page(f"notebooks/{lesson}.html")
    path = f"notebooks/{lesson}.ipynb"
    boxes = page.locator(".course-try-it")
    titles = boxes.locator(".admonition-title").all_inner_texts()
    assert titles == [f"Try it: {name}" for name in exercises(lesson)], titles
    for i in range(boxes.count()):
        links = boxes.nth(i).locator("a").evaluate_all("as => as.map(a => a.href)")
        assert links == [course.colab_url(path), course.binder_url(path)]


@pytest.mark.parametrize("lesson", [lesson for lesson in LESSONS if exercises(lesson)])
def test_no_exercise_shows_a_bare_stub_or_a_not_attempted_log(open_page, lesson):
    page = open_page(f"notebooks/{lesson}.html")
    seen = page.inner_text("article")             # what shows: folded cells are not in it
    assert "raise NotImplementedError()" not in seen
    assert "not attempted yet" not in seen
    folded = page.eval_on_selector_all("details:not([open]) > summary", "ss => ss.map(s => s.textContent)")
    assert sum("Show the exercise's starting code" in f for f in folded) >= len(exercises(lesson)), folded


# --- what a reader sees: maths, widths, figures, the page's frame ------------------------------

_MATHS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const article = document.querySelector('article');
  const copy = article.cloneNode(true);
  copy.querySelectorAll('pre, code, mjx-container, script, .cell_output').forEach(e => e.remove());
  return {rendered: article.querySelectorAll('mjx-container').length,
          errors: Array.from(article.querySelectorAll('mjx-merror, [data-mjx-error]'))
                       .map(e => e.getAttribute('data-mjx-error') || e.textContent).slice(0, 5),
          unrendered: article.querySelectorAll('.math:not(:has(mjx-container))').length,
          dollars: (copy.textContent.match(/.{0,30}\\$.{0,30}/g) || []).slice(0, 5)};
}"""


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lesson_page_shows_its_maths_rendered_and_without_an_error(open_page, lesson, request):
    if lesson in WITHOUT_MATHS_YET:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"{lesson}: no typeset maths yet"))
    found = open_page(f"notebooks/{lesson}.html").evaluate(_MATHS)
    assert found["rendered"] >= 5, f"{lesson}: {found['rendered']} formulas rendered by MathJax"
    assert found["errors"] == [] and found["unrendered"] == 0, f"{lesson}: {found}"
    assert found["dollars"] == [], f"{lesson}: a $ shows as text (unbalanced?): {found['dollars']}"


@pytest.mark.parametrize("path", PAGES)
def test_no_page_shows_a_formula_error_or_a_stray_dollar(open_page, path):
    found = open_page(path).evaluate(_MATHS)
    assert found["errors"] == [] and found["unrendered"] == 0 and found["dollars"] == [], found


# Each code or output block: does any of its lines wrap (its height holds more lines than its
# text has), and can it scroll sideways when a line is longer than the column?
_CODE_LINES = """() => Array.from(document.querySelectorAll('div.cell_input pre, div.cell_output pre'))
    .filter(pre => pre.offsetParent !== null)
    .map(pre => {
      const style = getComputedStyle(pre);
      const lines = pre.textContent.replace(/\\n$/, '').split('\\n').length;
      const lineHeight = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);
      const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
      return {first: pre.textContent.slice(0, 60), whiteSpace: style.whiteSpace, overflowX: style.overflowX,
              wraps: (pre.clientHeight - padding) > (lines + 0.5) * lineHeight || style.whiteSpace !== 'pre',
              wide: pre.scrollWidth > pre.clientWidth + 1};
    })"""


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_code_line_wraps_at_desktop_width_and_a_long_one_scrolls_inside_its_block(open_page, lesson):
    blocks = open_page(f"notebooks/{lesson}.html").evaluate(_CODE_LINES)
    assert blocks, f"{lesson}: no code block found"
    wrapped = [b["first"] for b in blocks if b["wraps"]]
    assert not wrapped, f"{lesson}: {len(wrapped)} code blocks wrap at {DESKTOP['width']} px: {wrapped[:3]}"
    stuck = [b["first"] for b in blocks if b["wide"] and b["overflowX"] not in ("auto", "scroll")]
    assert not stuck, f"{lesson}: blocks wider than the column that cannot scroll: {stuck[:3]}"


@pytest.fixture(scope="module")
def phone(browser):
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    try:
        yield context
    finally:
        context.close()


@pytest.mark.parametrize("path", PAGES)
def test_no_page_is_wider_than_a_phone(phone, server, path):
    page = phone.new_page()
    try:
        page.goto(server + path, wait_until="load")
        page.evaluate("async () => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise; }")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        wide = page.evaluate("""w => Array.from(document.querySelectorAll('article *'))
            .filter(e => e.getBoundingClientRect().right > w + 1 && !e.closest('pre, .table-wrapper, table, '
                                                                              + 'mjx-container, .bd-toc'))
            .slice(0, 3).map(e => e.tagName + ': ' + (e.textContent || '').slice(0, 60))""", PHONE["width"])
    finally:
        page.close()
    assert width <= PHONE["width"], f"{path}: {width} px wide on a {PHONE['width']} px screen: {wide}"


def visible_index(page, selector):
    """The index of the first visible element matching ``selector`` (the theme may render hidden twins)."""
    flags = page.eval_on_selector_all(selector, "es => es.map(e => e.offsetParent !== null)")
    assert True in flags, f"no visible {selector}"
    return flags.index(True)


# The sidebar is shown in place (a desktop) or inside its dialog (a phone: the theme moves it there).
_SIDEBAR = """() => { const s = document.querySelector('#pst-primary-sidebar'), r = s.getBoundingClientRect();
    const d = document.querySelector('#pst-primary-sidebar-modal');
    const inDialog = d && d.open && d.getBoundingClientRect().width > 100;
    return {shown: (r.right > 10 && r.width > 100 && getComputedStyle(s).visibility !== 'hidden')
                   || Boolean(inDialog),
            dialog: d ? d.open : null}; }"""


def test_on_a_phone_the_navigation_button_opens_the_sidebar(phone, server):
    page = phone.new_page()
    try:
        page.goto(server + f"notebooks/{LESSONS[0]}.html", wait_until="load")
        assert not page.evaluate(_SIDEBAR)["shown"]
        page.locator(".primary-toggle").nth(visible_index(page, ".primary-toggle")).click()
        page.wait_for_timeout(500)
        opened = page.evaluate(_SIDEBAR)
        assert opened["shown"] and opened["dialog"], opened
        assert page.locator("#pst-primary-sidebar-modal a.reference.internal").first.is_visible()
    finally:
        page.close()


def test_on_a_phone_the_contents_button_opens_the_pages_contents(phone, server):
    page = phone.new_page()
    try:
        page.goto(server + f"notebooks/{LESSONS[0]}.html", wait_until="load")
        page.locator(".secondary-toggle").nth(visible_index(page, ".secondary-toggle")).click()
        page.wait_for_timeout(500)
        opened = page.evaluate("""() => { const d = document.querySelector('#pst-secondary-sidebar-modal');
            return d && d.open && d.getBoundingClientRect().width > 100; }""")
        assert opened
        assert page.locator("#pst-secondary-sidebar-modal nav.page-toc a").first.is_visible()
    finally:
        page.close()


def test_on_a_desktop_the_navigation_button_collapses_the_sidebar_and_brings_it_back(context, server):
    page = context.new_page()
    try:
        page.goto(server + f"notebooks/{LESSONS[0]}.html", wait_until="load")
        toggle = page.locator(".primary-toggle").nth(visible_index(page, ".primary-toggle"))
        assert page.evaluate(_SIDEBAR)["shown"]
        toggle.click()
        page.wait_for_timeout(500)
        collapsed = page.evaluate(_SIDEBAR)
        assert not collapsed["shown"] and not collapsed["dialog"], collapsed
        toggle.click()
        page.wait_for_timeout(500)
        assert page.evaluate(_SIDEBAR)["shown"]
    finally:
        page.close()


def test_on_a_laptop_the_contents_button_opens_the_pages_contents_and_a_link_closes_them(context, server):
    # At 1366 px the contents are no third column (the code gets the width): a button opens them.
    page = context.new_page()
    try:
        page.goto(server + f"notebooks/{LESSONS[-1]}.html", wait_until="load")
        links = page.locator(".bd-sidebar-secondary nav.page-toc a")
        assert not links.first.is_visible()
        page.locator(".secondary-toggle").nth(visible_index(page, ".secondary-toggle")).click()
        page.wait_for_timeout(300)
        assert links.first.is_visible() and links.nth(1).is_visible()
        target = links.nth(1).get_attribute("href")
        links.nth(1).click()
        page.wait_for_timeout(300)
        assert page.url.endswith(target) and not links.first.is_visible()
    finally:
        page.close()


_SEARCH_BOXES = """() => Array.from(document.querySelectorAll('.search-button, .search-button-field, '
    + 'input[type=search], form.bd-search')).filter(e => e.offsetParent !== null && !e.closest('dialog'))
    .length"""


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_a_page_has_one_search_box(width, context, phone, server):
    page = (context if width == "desktop" else phone).new_page()
    try:
        page.goto(server + f"notebooks/{LESSONS[0]}.html", wait_until="load")
        assert page.evaluate(_SEARCH_BOXES) == 1
    finally:
        page.close()


@pytest.mark.parametrize("lesson", LESSONS)
def test_on_a_phone_code_blocks_scroll_sideways_and_never_split_a_name(phone, server, lesson):
    page = phone.new_page()
    try:
        page.goto(server + f"notebooks/{lesson}.html", wait_until="load")
        blocks = page.evaluate(_CODE_LINES)
    finally:
        page.close()
    wrapped = [b["first"] for b in blocks if b["wraps"]]
    assert not wrapped, (f"{lesson}: code blocks that wrap (and may split a name) at {PHONE['width']} px: "
                         f"{wrapped[:3]}")
    stuck = [b["first"] for b in blocks if b["wide"] and b["overflowX"] not in ("auto", "scroll")]
    assert not stuck, f"{lesson}: blocks wider than a phone that cannot scroll: {stuck[:3]}"


# --- the scroll cue: a shadow at an edge of a formula or code block with more to see that way ------

#: The blocks that scroll sideways inside the column: display formulas and code.
SCROLLING = {"formula": 'article mjx-container[display="true"]', "code": "article pre"}
DISPLAY_MATHS = re.compile(r"\$\$(.+?)\$\$", re.S)


def display_formulas(lesson):
    """The TeX of each display formula (``$$...$$``) in the lesson's text."""
    return [m.group(1) for cell in student(lesson).cells if cell.cell_type == "markdown"
            for m in DISPLAY_MATHS.finditer(cell.source)]


def longest_formula_line(lesson):
    """The length of the TeX of the lesson's longest line of display maths (0 if it has none)."""
    return max((len(line.strip()) for formula in display_formulas(lesson)
                for line in re.split(r"\\\\|\n", formula)), default=0)


def cue_shown(block):
    """How much the scroll cue shows on ``block`` (a locator), scrolled as it is now: the largest
    difference of a colour channel (0-255) between the block as shown and the block without its
    background images, across its middle rows (the middle 40 % of its height, at most 24 px), over
    its 8 px at the left edge (``left``), at the right edge (``right``), and across it (``all``)."""
    block.scroll_into_view_if_needed()
    box = block.bounding_box()
    rows = min(0.4 * box["height"], 24)
    clip = {"x": box["x"], "y": box["y"] + (box["height"] - rows) / 2, "width": box["width"], "height": rows}

    def shot():
        png = block.page.screenshot(clip=clip)
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)

    shown = shot()
    block.evaluate("e => { e.style.backgroundImage = 'none'; }")
    try:
        bare = shot()
    finally:
        block.evaluate("e => { e.style.backgroundImage = ''; }")
    diff = np.abs(shown - bare).max(axis=2)
    edge = round(8 * diff.shape[1] / box["width"])
    return {"left": int(diff[:, :edge].max()), "right": int(diff[:, -edge:].max()), "all": int(diff.max())}


def open_lesson(context, server, lesson, theme):
    """The lesson's page in a new tab of ``context`` (a phone, a desktop), its maths typeset, in the
    theme's colours."""
    page = context.new_page()
    page.goto(server + f"notebooks/{lesson}.html", wait_until="load")
    page.evaluate("async theme => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise;"
                  " document.documentElement.dataset.theme = theme; }", theme)
    return page


# Of each block: is it on show (not in a folded cell) and wider than its column; by how much.
_WIDE = "es => es.map(e => e.checkVisibility() && e.scrollWidth > e.clientWidth + 1)"
_HIDDEN = "es => es.map(e => e.checkVisibility() ? e.scrollWidth - e.clientWidth : 0)"
#: What a reader sees as a shadow (at its darkest, 0.35 of black on white: 89), and as nothing.
SHOWS, NOTHING = 30, 3


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("kind", ["formula", "code"])
def test_on_a_phone_a_wide_block_shows_a_shadow_on_the_side_with_more_and_none_past_its_end(
        phone, server, kind, theme):
    lesson = max(LESSONS, key=longest_formula_line)
    page = open_lesson(phone, server, lesson, theme)
    try:
        blocks = page.locator(SCROLLING[kind])
        hidden = blocks.evaluate_all(_HIDDEN)
        assert max(hidden) > 0, f"{lesson}: no {kind} wider than a phone (the lesson of the longest formula)"
        block = blocks.nth(hidden.index(max(hidden)))
        assert block.evaluate("e => getComputedStyle(e).overflowX") in ("auto", "scroll")
        start = cue_shown(block)
        block.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
        end = cue_shown(block)
    finally:
        page.close()
    assert start["right"] >= SHOWS and start["left"] <= NOTHING, f"{lesson}, at its start: {start}"
    assert end["right"] <= NOTHING and end["left"] >= SHOWS, f"{lesson}, scrolled to its end: {end}"


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("width", ["phone", "desktop"])
def test_formulas_and_code_that_fit_look_as_they_would_without_the_cue(phone, context, server, width, theme):
    lesson = max(LESSONS, key=lambda lesson: len(display_formulas(lesson)))
    page = open_lesson(phone if width == "phone" else context, server, lesson, theme)
    try:
        fitting, changed = {}, []
        # (At a desktop's width nearly all code fits: forty screenshots a page. The colour of the
        # covers of every code block is checked below, without screenshots.)
        kinds = SCROLLING if width == "phone" else {"formula": SCROLLING["formula"]}
        for kind, selector in kinds.items():
            blocks = page.locator(selector)
            for i, wide in enumerate(blocks.evaluate_all(_WIDE)):
                block = blocks.nth(i)
                if wide or not block.evaluate("e => e.checkVisibility()"):
                    continue
                fitting[kind] = fitting.get(kind, 0) + 1
                shown = cue_shown(block)
                if shown["all"] > NOTHING:
                    changed.append(f"{kind} {i} ({block.text_content()[:40]!r}): {shown}")
    finally:
        page.close()
    assert fitting.get("formula"), f"{lesson}: no display formula that fits at a {width}'s width ({fitting})"
    assert not changed, f"{lesson}: blocks that fit but look changed by the cue: {changed}"


# Each formula and code block: has it the cue (two covers that ride with the content, two shadows
# that stay), and are its covers the colour behind it (its own background, else its box's or the
# page's)? Else a block that fits would show a stripe at each edge. In the theme's light and dark.
_CUES = """([selector, theme]) => {
  const root = document.documentElement, before = root.dataset.theme;
  root.dataset.theme = theme;
  const rgb = value => { const p = document.createElement('i');
                         p.style.color = value; document.body.append(p);
                         const c = getComputedStyle(p).color; p.remove(); return c; };
  const behind = e => { for (let a = e; a; a = a.parentElement) {
                          const c = getComputedStyle(a).backgroundColor;
                          if (c !== 'transparent' && !/^rgba\\(.*, 0\\)$/.test(c)) return c; }
                        return 'rgb(255, 255, 255)'; };
  const found = Array.from(document.querySelectorAll(selector)).map(e => { const s = getComputedStyle(e);
    return {what: e.tagName + ': ' + e.textContent.slice(0, 40), overflowX: s.overflowX,
            gradients: (s.backgroundImage.match(/gradient\\(/g) || []).length,
            attachment: s.backgroundAttachment,
            cover: rgb(s.getPropertyValue('--course-cue-cover').trim()), behind: behind(e)}; });
  if (before === undefined) delete root.dataset.theme; else root.dataset.theme = before;
  return found; }"""


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_formula_and_code_block_has_the_scroll_cue_in_the_colour_behind_it(open_page, lesson):
    path = f"notebooks/{lesson}.html"
    page = open_page(path)
    for theme in ("light", "dark"):
        blocks = page.evaluate(_CUES, [", ".join(SCROLLING.values()), theme])
        assert blocks, f"{path}: no formula or code block"
        without = [b["what"] for b in blocks if b["overflowX"] not in ("auto", "scroll")
                   or b["gradients"] != 4 or b["attachment"] != "local, local, scroll, scroll"]
        assert not without, f"{path} ({theme}): blocks without the scroll cue: {without[:3]}"
        stripes = [(b["what"], b["cover"], b["behind"]) for b in blocks if b["cover"] != b["behind"]]
        assert not stripes, f"{path} ({theme}): covers not the colour behind: {stripes[:3]}"


def test_on_a_phone_a_figure_enlarges_on_a_tap_and_closes_on_another(phone, server):
    page = phone.new_page()
    try:
        page.goto(server + f"notebooks/{LESSONS[1]}.html", wait_until="load")
        sizes = page.eval_on_selector_all(".cell_output img", "is => is.map(i => [i.naturalWidth, "
                                          "i.getBoundingClientRect().width])")
        at = next(i for i, (natural, shown) in enumerate(sizes) if natural > shown + 50)
        figure = page.locator(".cell_output img").nth(at)
        figure.scroll_into_view_if_needed()
        figure.tap()
        page.wait_for_timeout(300)
        zoomed = page.evaluate("""() => { const d = document.querySelector('dialog.course-zoom');
            return d && d.open ? d.querySelector('img').getBoundingClientRect().width : 0; }""")
        assert zoomed > sizes[at][1] + 50, f"enlarged to {zoomed} px from {sizes[at][1]:.0f}"
        page.locator("dialog.course-zoom").tap()
        page.wait_for_timeout(300)
        assert page.locator("dialog.course-zoom").count() == 0
    finally:
        page.close()


def test_search_snippets_show_the_text_without_tex_or_the_pages_buttons(context, server):
    page = context.new_page()
    try:
        page.goto(server + "search.html?q=softmax", wait_until="load")
        page.wait_for_function("() => document.querySelectorAll('#search-results li p.context').length >= 3",
                               timeout=60000)
        snippets = page.eval_on_selector_all("#search-results li p.context",
                                             "ps => ps.map(p => p.textContent)")
    finally:
        page.close()
    for snippet in snippets:
        assert not re.search(r"\\[()\[\]]|\\(?:frac|sqrt|mathrm|text)\b", snippet), snippet
        assert not re.search(r"\b(?:Light|Dark|System Settings|Toggle|Download|Launch)\b", snippet), snippet
    assert any("softmax" in s.lower() for s in snippets), snippets


NOTEBOOK_ONLY = ["Shift + Enter", "Shift+Enter", "Show the setup cell", "COURSE_REPOSITORY", "sys.path"]


@pytest.mark.parametrize("path", PAGES)
def test_no_page_carries_the_notebooks_plumbing(open_page, path):
    text = open_page(path).evaluate("() => document.querySelector('article').textContent")
    found = [phrase for phrase in NOTEBOOK_ONLY if phrase in text]
    assert not found, f"{path}: {found}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_numbers_measured_at_build_time_say_so(open_page, lesson):
    measures = any(c.cell_type == "code" and book.MEASURING.search(c.source) for c in student(lesson).cells)
    text = open_page(f"notebooks/{lesson}.html").inner_text("article")
    assert "on your machine" not in text and "this notebook's own measurement" not in text
    assert ("measured when this page was built, on " in text) == measures


def test_the_landing_table_names_each_lesson_as_the_sidebar_does(open_page):
    page = open_page("index.html")
    table = page.eval_on_selector_all("table a[href^='notebooks/']",
                                      "as => as.map(a => a.textContent.trim())")
    sidebar = page.eval_on_selector_all("#pst-primary-sidebar a.reference.internal",
                                        "as => as.map(a => a.textContent.trim())")
    assert table == sidebar == [book.page_title(ROOT / "notebooks" / f"{lesson}.ipynb") for lesson in LESSONS]


_ADDRESS = re.compile(r"(?:github\.com|colab\.research\.google\.com/github|mybinder\.org/v2/gh)"
                      r"/([\w.-]+/[\w.-]+)")


@pytest.mark.parametrize("path", PAGES)
def test_every_repository_address_on_the_site_is_the_courses(open_page, path):
    hrefs = open_page(path).eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
    named = {m.group(1).removesuffix(".git") for href in hrefs for m in _ADDRESS.finditer(href)}
    assert named == {course.github_path()}, f"{path}: {named}"


def png_dpi(data):
    """The dots per inch a PNG declares (its pHYs chunk), or None when it declares none."""
    at = 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"pHYs":
            x, y, unit = struct.unpack(">IIB", data[at + 8:at + 17])
            return round(min(x, y) * 0.0254) if unit == 1 else None
        at += 12 + length
    return None


def test_png_dpi_reads_what_matplotlib_writes(tmp_path):
    from matplotlib.figure import Figure
    for dpi in (72, 100):
        Figure(figsize=(2, 1)).savefig(tmp_path / f"{dpi}.png", dpi=dpi)
        assert png_dpi((tmp_path / f"{dpi}.png").read_bytes()) == dpi


@pytest.mark.parametrize("lesson", LESSONS)
def test_slider_images_are_sharp_and_never_enlarged(open_page, lesson, request, site):
    images = open_page(f"notebooks/{lesson}.html").eval_on_selector_all(
        "img.course-slider-figure", "is => is.map(i => ({src: i.getAttribute('src'), natural: i.naturalWidth,"
                                    " shown: i.getBoundingClientRect().width}))")
    if not images:
        pytest.skip(f"{lesson} has no slider")
    if lesson in LOW_DPI_SLIDERS_YET:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"{lesson}: slider figure below 100 dpi"))
    for image in images:
        src = image["src"]
        data = (base64.b64decode(src.split(",", 1)[1]) if src.startswith("data:")
                else (site / urllib.parse.urljoin(f"notebooks/{lesson}.html", src)).read_bytes())
        dpi = png_dpi(data)
        assert dpi is not None and dpi >= 100, f"{lesson}: a slider image at {dpi} dpi"
        assert image["shown"] <= image["natural"] + 1, \
            f"{lesson}: a slider image enlarged: {image['natural']} pixels shown {image['shown']:.0f} wide"


@pytest.mark.parametrize("path", PAGES)
def test_a_page_has_one_title_a_favicon_and_a_footer_with_the_licence(open_page, path, site):
    page = open_page(path)
    title = page.title()
    assert title.count(TITLE) == 1, title
    assert page.locator("article h1").count() == 1
    icon = page.eval_on_selector("link[rel~='icon']", "l => l.getAttribute('href')")
    assert (site / urllib.parse.urljoin(path, icon)).is_file(), f"{path}: no favicon at {icon}"
    footer = page.evaluate("() => Array.from(document.querySelectorAll('footer'))"
                           ".map(f => f.innerText).join(' ')")
    assert "MIT" in footer and "CC BY 4.0" in footer, footer
    assert "the course's authors" not in footer, footer


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_optional_pytorch_sections_show_their_numbers(open_page, lesson):
    printed = open_page(f"notebooks/{lesson}.html").eval_on_selector_all(
        ".cell_output", "os => os.map(o => o.innerText).join('\\n')")
    assert "PyTorch is not installed" not in printed     # the site's build installs CPU torch


def _local_targets(page_path, hrefs, server):
    """(file, anchor) of each link that stays on the site, from a page at ``page_path``."""
    base = server + page_path
    targets = set()
    for href in hrefs:
        url = urllib.parse.urljoin(base, href)
        if not url.startswith(server):
            continue
        parts = urllib.parse.urlsplit(url)
        path = urllib.parse.unquote(parts.path[len(urllib.parse.urlsplit(server).path):])
        if path == "" or path.endswith("/"):
            path += "index.html"
        targets.add((path, parts.fragment))
    return targets


@pytest.mark.parametrize("path", PAGES)
def test_every_link_to_the_site_resolves(open_page, path, site, server):
    page = open_page(path)
    hrefs = page.eval_on_selector_all("a[href]", "as => as.map(a => a.getAttribute('href'))")
    targets = _local_targets(path, hrefs, server)
    assert any(t.endswith(".html") and t != path for t, _ in targets), f"{path}: no link to another page"
    broken = []
    for target, anchor in sorted(targets):
        file = site / target
        if not file.is_file():
            broken.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".html" and not re.search(
                rf'\bid="{re.escape(anchor)}"', file.read_text(encoding="utf-8", errors="replace")):
            broken.append(f"{target}#{anchor} (no such anchor)")
    assert not broken, f"{path}: broken links: {broken}"
