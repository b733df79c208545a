"""What `make student` writes around every lesson: the setup cell out of the reader's way
(collapsed in JupyterLab, a form in Colab) and "Next:" links that also open in Colab."""

import re
from pathlib import Path

import nbformat
import pytest

from helpers import course
from helpers.instructor import student

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [(folder, p.name) for folder in ("solutions", "notebooks")
             for p in sorted((ROOT / folder).glob("*.ipynb"))]
COLAB = "https://colab.research.google.com/github/"


def read(folder, name):
    return nbformat.read(str(ROOT / folder / name), as_version=4)


def first_code(nb):
    return next(c for c in nb.cells if c.cell_type == "code")


# --- the setup cell -------------------------------------------------------------------------

def test_setup_cell_starts_with_a_colab_form_title():
    first_line = course.setup_cell_source().splitlines()[0]
    assert re.fullmatch(r"# @title \S.*", first_line)


@pytest.mark.parametrize("folder, name", NOTEBOOKS)
def test_setup_cell_is_collapsed_in_jupyterlab(folder, name):
    assert first_code(read(folder, name)).metadata.get("jupyter", {}).get("source_hidden") is True


@pytest.mark.parametrize("folder, name", NOTEBOOKS)
def test_setup_cell_is_a_form_in_colab(folder, name):
    assert first_code(read(folder, name)).metadata.get("cellView") == "form"


def _tiny(setup_source="# Setup: the old setup cell\nimport sys", next_line="**Next:** [Lesson 2](02_b.ipynb)."):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Lesson 1"),
                nbformat.v4.new_code_cell(setup_source),
                nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_markdown_cell(f"## Summary\n\n{next_line}")]
    return nb


def test_an_old_setup_cell_is_replaced_and_gets_the_metadata():
    nb = student.refresh_front_matter(_tiny(), "notebooks/01_a.ipynb")
    setup = first_code(nb)
    assert setup.source == course.setup_cell_source()
    assert setup.metadata["jupyter"]["source_hidden"] is True and setup.metadata["cellView"] == "form"
    assert [c.source for c in nb.cells if c.cell_type == "code"][1] == "x = 1"


def test_a_notebook_without_a_setup_cell_gets_one_with_the_metadata():
    nb = student.refresh_front_matter(_tiny(setup_source="import sys"), "notebooks/01_a.ipynb")
    codes = [c for c in nb.cells if c.cell_type == "code"]
    assert codes[0].source == course.setup_cell_source() and codes[1].source == "import sys"
    assert codes[0].metadata["cellView"] == "form"


# --- "Next:" ------------------------------------------------------------------------------

def test_next_line_keeps_the_relative_link_and_adds_colab():
    nb = student.refresh_front_matter(_tiny(), "notebooks/01_a.ipynb")
    last = nb.cells[-1].source.splitlines()[-1]
    assert last.startswith("**Next:** [Lesson 2](02_b.ipynb) ")
    assert f"({course.colab_url('notebooks/02_b.ipynb')})" in last


def test_next_line_keeps_what_follows_the_link():
    nb = student.refresh_front_matter(_tiny(next_line="**Next:** [Lesson 2](02_b.ipynb): gradients,\nby hand."),
                                      "notebooks/01_a.ipynb")
    assert nb.cells[-1].source.endswith(")): gradients,\nby hand.")


def test_next_line_in_a_solution_opens_the_next_solution():
    nb = student.refresh_front_matter(_tiny(), "solutions/01_a.ipynb")
    assert course.colab_url("solutions/02_b.ipynb") in nb.cells[-1].source


def test_refreshing_twice_changes_nothing():
    once = student.refresh_front_matter(_tiny(), "notebooks/01_a.ipynb")
    twice = student.refresh_front_matter(nbformat.from_dict(once), "notebooks/01_a.ipynb")
    assert nbformat.writes(once) == nbformat.writes(twice)


def test_a_line_that_only_mentions_next_is_left_alone():
    text = "Next: we will see masks."
    nb = student.refresh_front_matter(_tiny(next_line=text), "notebooks/01_a.ipynb")
    assert nb.cells[-1].source.endswith(text)


def next_lines(nb):
    return [line for c in nb.cells if c.cell_type == "markdown"
            for line in c.source.splitlines() if line.startswith("**Next:**")]


@pytest.mark.parametrize("folder, name", NOTEBOOKS)
def test_every_next_link_also_opens_the_same_lesson_in_colab(folder, name):
    for line in next_lines(read(folder, name)):
        link = re.search(r"\]\(([\w.-]+\.ipynb)\)", line)
        if link is None:   # "**Next:** this is the last lesson ..."
            continue
        target = link.group(1)
        assert f"({course.colab_url(f'{folder}/{target}')})" in line, line
