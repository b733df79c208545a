"""The course's website (``make book``): built once, then read in a real browser.

The build (``helpers.instructor.book.build``) runs once per test run, into a temporary
folder: Sphinx + MyST-NB execute every student lesson (about two minutes). The site is
then served on a free port of 127.0.0.1 and opened in headless Chromium (Playwright), the
same browser as tests/test_browser.py: the landing page lists every lesson, each lesson
page loads, shows its figures (images that decoded), a note where a slider would be
live, its Colab and Binder links, no traceback and no solution code, and every link
to a page of the site resolves (anchors included).

Without Playwright, Chromium or the book's requirements (``make book-deps``) these tests
are skipped with the reason -- unless ``REQUIRE_BROWSER=1`` (``.ci/run``): then that is a
failure. ``make test-oldest`` (``COURSE_OLDEST=1``) skips them: the site is built with
the newest versions only, once per CI run, by ``make test``.

The first tests (the landing page's table, the badges, the staging) need none of that.
"""

import functools
import http.server
import os
import re
import threading
import time
import urllib.parse
from pathlib import Path

import nbformat
import pytest

import lab_browser
from helpers import course
from helpers.instructor import book

pytestmark = pytest.mark.slow   # builds the whole site: scheduled first (conftest.py)

ROOT = Path(__file__).resolve().parents[1]
LESSONS = course.lessons()
# A cell that builds a slider (as in tests/test_browser.py): a *_slider or *_explorer maker,
# or an ipywidgets *Slider; figure_slider only puts a figure under a slider made elsewhere.
SLIDER_CALL = re.compile(r"\b(?!figure_slider\()\w*(?:_slider|_explorer|Slider)\(")
BOOK_PACKAGES = ("sphinx", "myst_nb", "sphinx_book_theme")


# --- the pages' sources, without a build -------------------------------------------------------

def write_lesson(path, title):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\nSome text.")]
    nbformat.write(nb, str(path))


def test_the_landing_page_takes_each_lessons_row_from_the_readme(tmp_path):
    readme = ("intro\n\n| # | notebook | what | |\n|---|---|---|---|\n"
              "| 01 | [Queries](notebooks/01_q.ipynb) | projections | badge |\n"
              "| 02 | [Scores](notebooks/02_s.ipynb) | grids | badge |\n")
    table = book.lesson_table(["01_q", "02_s"], readme, tmp_path).splitlines()
    assert table[2:] == ["| 01 | [Queries](notebooks/01_q.ipynb) | projections | badge |",
                         "| 02 | [Scores](notebooks/02_s.ipynb) | grids | badge |"]


def test_a_lesson_the_readme_does_not_list_yet_gets_a_row_with_its_title(tmp_path):
    write_lesson(tmp_path / "09_position.ipynb", "Lesson 09 — Position")
    readme = "| 01 | [Queries](notebooks/01_q.ipynb) | projections | badge |\n"
    rows = book.lesson_table(["01_q", "09_position"], readme, tmp_path).splitlines()[2:]
    assert len(rows) == 2
    assert rows[1].startswith("| 09 | [Lesson 09 — Position](notebooks/09_position.ipynb) |")
    assert course.colab_url("notebooks/09_position.ipynb") in rows[1]


def test_a_readme_row_of_a_lesson_that_no_longer_exists_is_left_out(tmp_path):
    readme = ("| 01 | [Queries](notebooks/01_q.ipynb) | a | b |\n"
              "| 02 | [Old](notebooks/02_old.ipynb) | a | b |\n")
    rows = book.lesson_table(["01_q"], readme, tmp_path).splitlines()[2:]
    assert rows == ["| 01 | [Queries](notebooks/01_q.ipynb) | a | b |"]


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
    assert setup and "hide-input" in setup[0].metadata["tags"]


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
    """Build the site once per test run, also when pytest-xdist spreads these tests over workers."""
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
    context = browser.new_context(viewport={"width": 1280, "height": 800})
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
    assert heading == book.lesson_title(ROOT / "notebooks" / f"{lesson}.ipynb")
    figures = page.evaluate(_FIGURES)
    assert figures, f"{lesson}: no figure on the page"
    undecoded = [f["src"] for f in figures if not (f["complete"] and f["width"] > 0)]
    assert not undecoded, f"{lesson}: figures that did not load: {undecoded}"


@pytest.mark.parametrize("path", PAGES)
def test_no_page_shows_a_traceback(open_page, path):
    found = open_page(path).evaluate(_ERRORS)
    assert found == {"traceback": False, "outputs": 0}, f"{path}: {found}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_slider_becomes_a_note_with_its_figure(open_page, lesson):
    built = sum(1 for cell in student(lesson).cells
                if cell.cell_type == "code" and SLIDER_CALL.search(cell.source))
    page = open_page(f"notebooks/{lesson}.html")
    notes = page.locator(".course-slider-note")
    assert (notes.count() >= built) and (notes.count() > 0) == (built > 0), \
        f"{lesson}: {built} cell(s) build a slider, {notes.count()} note(s)"
    for i in range(notes.count()):
        links = notes.nth(i).locator("a").evaluate_all("as => as.map(a => a.href)")
        assert links == [course.colab_url(f"notebooks/{lesson}.ipynb"),
                         course.binder_url(f"notebooks/{lesson}.ipynb")]
    assert page.locator("img.course-slider-figure").count() >= built
    assert page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count() == 0


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
    text = open_page(f"notebooks/{lesson}.html").inner_text("article")
    for block in _solution_blocks(lesson):
        assert block not in text, f"{lesson}: solution code is published:\n{block}"
    for name in student(lesson).metadata.get("course", {}).get("exercises", []):
        assert f"{name}: not attempted yet" in text, f"{lesson}: no 'not attempted' notice for {name}"


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
