"""Build the course as a static website: every student lesson executed, as a web page.

    python -m helpers.instructor.book [OUT]        (make book: OUT = _build/book)

writes ``OUT/html/index.html`` -- open it in a browser -- from:

- ``OUT/source/index.md``: the landing page, the README's lesson table (a lesson the
  README does not list yet gets a row with its notebook's title: lessons are found by
  :func:`helpers.course.lessons`, never listed here);
- ``OUT/source/notebooks/NAME.ipynb``: copies of the **student** notebooks (no solution
  code), each with a Binder badge next to its Colab badge and its setup cell folded.
  The repository's notebooks are never touched.

Sphinx with MyST-NB (the engine of Jupyter Book 1) executes every copy in a fresh kernel,
so each figure and printed number shows, and stops with an error if any cell raises.
Its settings are in ``book/conf.py``; ``book/widgets.py`` turns each slider into the
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

from helpers import course, run_cache

from .release import lesson_title
from .student import ROOT

#: Where ``make book`` writes: ``source/`` (what Sphinx reads) and ``html/`` (the site).
DEFAULT_OUT = ROOT / "_build" / "book"
#: Sphinx's settings (``conf.py``) and the course's small Sphinx extension.
CONF_DIR = ROOT / "book"

INTRO = """\
# Self-Attention & Multi-Head

A hands-on course on how attention actually works: from the query/key/value projections,
through the score grid, the √d_k scaling, softmax and multi-head attention, to its cost,
its gradients and a model trained with them. NumPy, matplotlib and ipywidgets only: no
deep-learning framework.

Each page below is a lesson, run from top to bottom: every figure and number on it was
computed when this site was built. The exercises are left for you (their checks say
"not attempted yet", and the lesson goes on with the course's own answer). To do them,
and to move the sliders, open a lesson in Colab or Binder (the badges on each page), or
on your machine: `make lab` in a clone of the course.

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
    """The landing page's table: the README's row for each lesson, or one made from its title.

    The README's links point at ``notebooks/NAME.ipynb``: on the site, MyST turns them
    into links to the lesson's page.
    """
    rows = readme_rows(readme_text)
    lines = ["| # | lesson | what you learn | |", "|---|---|---|---|"]
    for lesson in lessons:
        if lesson in rows:
            lines.append(rows[lesson])
        else:
            where = f"notebooks/{lesson}.ipynb"
            lines.append(f"| {lesson.split('_')[0]} | [{lesson_title(notebooks / f'{lesson}.ipynb')}]"
                         f"({where}) | | {course.colab_badge(where)} |")
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


def with_setup_folded(nb):
    """``nb`` with its setup cell folded on the page ("Show code cell source"), as in JupyterLab."""
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith(course.SETUP_TITLE):
            tags = cell.metadata.setdefault("tags", [])
            if "hide-input" not in tags:
                tags.append("hide-input")
    return nb


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
    for lesson in lessons:
        path = f"notebooks/{lesson}.ipynb"
        nb = nbformat.read(str(root / path), as_version=4)
        nbformat.write(with_setup_folded(with_binder_badge(nb, path)), str(source / path))
    readme = (root / "README.md").read_text(encoding="utf-8")
    (source / "index.md").write_text(index_page(lessons, readme, root / "notebooks"), encoding="utf-8")
    return lessons


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
    env.pop(run_cache.ENV, None)   # the website trains for real, even inside a test run: lesson 09 prints how long
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
