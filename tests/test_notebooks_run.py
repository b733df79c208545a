"""Every student notebook runs top to bottom, as a learner gets it: once per test run.

The notebooks run from a release (``python -m helpers.instructor.release``, for the
course's own address: the same notebooks as ``notebooks/``) with only the helpers that
ship to learners. So this one run shows both that each student lesson runs without an
error and that the release leaves out nothing it needs.

``make test`` runs ``solutions/`` with nbval (one test per cell) and ``notebooks/``
here (one test per lesson; a failure names the cell and shows its traceback).
``make test-lesson L=03`` and ``pytest notebooks/03_*.ipynb`` still run a student
notebook with nbval, cell by cell.

Lessons 08-10 train the same models here as in ``solutions/``: whichever kernel trains a
model first stores it for the other (``tests/run_cache.py``, ``conftest.py``).
"""

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import run_cache

from helpers import course

ROOT = Path(__file__).resolve().parents[1]
NAMES = [f"{lesson}.ipynb" for lesson in course.lessons()]


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    folder = tmp_path_factory.mktemp("release-as-is") / "course"
    proc = subprocess.run([sys.executable, "-m", "helpers.instructor.release", str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return folder


@pytest.mark.parametrize("name", NAMES)
def test_released_notebook_is_the_student_notebook(released, name):
    released_text = (released / "notebooks" / name).read_text(encoding="utf-8")
    assert released_text == (ROOT / "notebooks" / name).read_text(encoding="utf-8"), \
        f"the release of notebooks/{name} differs from it: the run below would not test it"


def test_released_helpers_share_training_with_the_courses(released):
    # The student notebooks train with the released helpers, the solutions with these: the
    # same code version, or nothing trained once would be shared (tests/run_cache.py).
    assert run_cache.code_version(released / "helpers") == run_cache.code_version(ROOT / "helpers")


def run_released(released, name, env):
    """Run the released ``notebooks/name`` top to bottom; a failure names the cell and its traceback."""
    nb = nbformat.read(str(released / "notebooks" / name), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        f"import helpers\nassert helpers.__file__.startswith({str(released)!r}), helpers.__file__"))
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(released / "notebooks")}}
                   ).execute(env=env)    # training shared with solutions/ (conftest.py)


def student_lesson(name):
    """A class of one test: lesson ``name`` runs. One class per lesson, so that pytest-xdist
    (``--dist loadscope``) gives each lesson to a worker of its own, not all eleven to one."""
    def test_student_notebook_runs_top_to_bottom_with_only_the_released_helpers(self, released,
                                                                               notebook_kernel_env):
        run_released(released, name, notebook_kernel_env)

    label = f"TestLesson{name.split('_', 1)[0]}"
    return label, type(label, (), {"__doc__": f"notebooks/{name}, as released",
                                   test_student_notebook_runs_top_to_bottom_with_only_the_released_helpers.__name__:
                                   test_student_notebook_runs_top_to_bottom_with_only_the_released_helpers})


globals().update(student_lesson(name) for name in NAMES)
