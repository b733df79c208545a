"""Real browser: every student lesson in JupyterLab, in headless Chromium.

For each ``notebooks/*.ipynb`` (on a temporary copy of the course): open it in a real
JupyterLab server on localhost, Run All, assert that every code cell ran with no error
output, move every slider with the keyboard and assert that its figure changed, and save
screenshots to ``screenshots/`` (git-ignored): ``NAME.png`` at a normal window size
(1280 x 800, scrolled to the last slider) and ``NAME-full.png`` with the whole notebook.

A tiny notebook written here (two sliders, one figure) checks the slider mechanism
itself on both slider kinds the lessons use, whatever lessons exist yet.

Without Playwright or Chromium the tests are skipped with the reason -- unless
``REQUIRE_BROWSER=1`` (set by ``.ci/run``): then a missing browser is a failure.
"""

import os
import re
import shutil
import sys
import time
from pathlib import Path

import nbformat
import pytest

import lab_browser
from helpers import course

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow   # runs many whole notebooks: scheduled first (conftest.py)
SCREENSHOTS = Path(os.environ.get("SCREENSHOTS_DIR", ROOT / "screenshots"))
LESSONS = [f"{lesson}.ipynb" for lesson in course.lessons()]
PROBE = "slider_probe.ipynb"
# A call that builds one slider: a helpers.widgets maker named *_slider or *_explorer (not
# figure_slider, which puts a figure under a slider made elsewhere), or an ipywidgets *Slider.
SLIDER_CALL = re.compile(r"\b(?!figure_slider\()\w*(?:_slider|_explorer|Slider)\(")

PROBE_CELL = '''\
import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from helpers.widgets import choice_slider, powers_of_two

d_k = choice_slider(powers_of_two(1, 64), 8, "d_k")                    # SelectionSlider
heads = widgets.IntSlider(value=2, min=1, max=8, description="heads", continuous_update=False)


def draw(d_k, heads):
    fig, ax = plt.subplots(figsize=(4, 2.5))
    ax.plot(np.arange(10) ** (np.log2(d_k) / 3) / heads, color="#0072B2")
    ax.set(title=f"d_k = {d_k}, heads = {heads}", xlabel="i", ylabel="value")
    plt.show()


display(widgets.VBox([d_k, heads, widgets.interactive_output(draw, {"d_k": d_k, "heads": heads})]))'''


def sliders_built(name):
    """How many slider-building calls the student notebook ``name`` makes: each must move."""
    nb = nbformat.read(str(ROOT / "notebooks" / name), as_version=4)
    return sum(len(SLIDER_CALL.findall(cell.source)) for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.parametrize("source, count", [
    ("s = widgets.dk_slider(value=64)\nbox, redraw = widgets.figure_slider(s, draw)", 1),
    ("a=widgets.choice_slider(steps, 1, 'a'), b=choice_slider(steps, 2, 'b')", 2),
    ("heads = widgets.IntSlider(value=2)\nslider = head_count_slider(64)", 2),
    ("box, redraw = widgets.head_count_explorer(multi_head_attention, X, *weights, tokens)", 1),
    ("def dk_slider_help():\n    return 'no slider here'", 0),
])
def test_slider_calls_are_counted_and_a_figure_around_a_slider_is_not(source, count):
    assert len(SLIDER_CALL.findall(source)) == count


def write_probe(path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Slider probe"),
                nbformat.v4.new_code_cell(course.setup_cell_source()),
                nbformat.v4.new_code_cell(PROBE_CELL)]
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, str(path))


@pytest.fixture(scope="module")
def browser_ready():
    reason = lab_browser.unavailable_reason()
    if reason:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but the browser test cannot run: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def course_copy(tmp_path_factory, browser_ready):
    """A scratch copy of the course (notebooks/ and helpers/): saving never touches the repo."""
    root = tmp_path_factory.mktemp("lab") / "course"
    shutil.copytree(ROOT / "helpers", root / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "notebooks").mkdir()
    for name in LESSONS:
        shutil.copy(ROOT / "notebooks" / name, root / "notebooks" / name)
    (root / "probe").mkdir()
    write_probe(root / "probe" / PROBE)
    return root


@pytest.fixture(scope="module")
def lab(course_copy, tmp_path_factory):
    with lab_browser.JupyterLab(course_copy, tmp_path_factory.mktemp("lab-state"),
                                python=sys.executable) as server:
        yield server


@pytest.fixture(scope="module")
def browser(lab):
    with lab_browser.launched_chromium() as chromium:
        yield chromium


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        yield lab_browser.LabPage(context.new_page(), lab)
    finally:
        context.close()


def run_and_move_sliders(page, path, shot_name):
    """Open, Run All, check errors, move every slider; return the number of sliders moved."""
    started = time.perf_counter()
    page.open(path)
    opened = time.perf_counter()
    errors = page.run_all()
    ran = time.perf_counter()
    assert not errors, f"{path}: Run All raised: {errors}"
    assert not page.rendered_errors(), f"{path}: a traceback is shown: {page.rendered_errors()}"
    handles = page.sliders()
    count = handles.count()
    for i in range(count):
        handle = handles.nth(i)
        value, new_value, before, after = page.move(handle, "ArrowRight")
        if new_value == value:             # already at its right end: go left instead
            value, new_value, before, after = page.move(handle, "ArrowLeft")
        assert new_value != value, f"{path}: slider {i} did not move (readout {value!r})"
        assert before, f"{path}: slider {i} has no figure next to it"
        assert after != before, f"{path}: slider {i} moved ({value} -> {new_value}) but its figure did not change"
        assert not page.rendered_errors(), f"{path}: moving slider {i} showed: {page.rendered_errors()}"
    moved = time.perf_counter()
    page.screenshot(SCREENSHOTS / f"{shot_name}.png")
    page.screenshot(SCREENSHOTS / f"{shot_name}-full.png", full=True)
    page.save()
    page.shutdown_kernel()
    print(f"{path}: open {opened - started:.1f} s, run all {ran - opened:.1f} s, "
          f"{count} slider(s) {moved - ran:.1f} s, screenshots+save {time.perf_counter() - moved:.1f} s")
    return count


def test_the_slider_mechanism_works_on_a_probe_notebook(page):
    assert run_and_move_sliders(page, f"probe/{PROBE}", "probe") == 2


@pytest.mark.parametrize("name", LESSONS)
def test_student_lesson_runs_in_jupyterlab_and_its_sliders_redraw(page, name, course_copy):
    moved = run_and_move_sliders(page, f"notebooks/{name}", Path(name).stem)
    built = sliders_built(name)
    assert moved >= built, f"{name} builds {built} slider(s) but only {moved} moved"
    saved = nbformat.read(str(course_copy / "notebooks" / name), as_version=4)
    errors = [o for c in saved.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors, f"{name}: the saved notebook holds errors: {errors}"
