"""The solution notebooks are nbgrader source notebooks: nbgrader releases and autogrades them.

Every lesson goes into one nbgrader assignment, in a course folder outside the
repository (with the course's ``nbgrader_config.py``). ``nbgrader
generate_assignment`` releases it (every lesson: it runs no notebook). For the lessons
of ``AUTOGRADED`` three learners submit it: one filled in every exercise cell with the
solution's code, one handed the release back untouched, one made the lesson's last
exercise wrong (its function returns something else); the last two hand in their
notebook up to its last graded cell. ``nbgrader autograde`` grades them, with the hidden
cases of ``SEED``, and ``helpers.grade --seed SEED`` grades the same files: both give every
exercise the same verdict. One lesson is enough for the adapter (the hidden tests are
the grader's own :func:`~helpers.instructor.grading.kernel.hidden_row`, and every
solution notebook runs whole, hidden tests included, under nbval in ``make test``);
lesson 03 has four exercises, one (the attention) calling another (the softmax).

nbgrader 0.9 needs JupyterLab 4 / Notebook 7, so it lives in its own environment,
``.venv-nbgrader`` (``make nbgrader``). Without it these tests are skipped, or
fail when ``REQUIRE_NBGRADER=1`` (as in CI). ``make test-oldest`` skips them: its
versions are not nbgrader's.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from helpers.exercises import LESSONS
from helpers.instructor.grading.scoring import POINTS_PER_EXERCISE

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow   # runs many whole notebooks: scheduled first (conftest.py)
VENV = ROOT / ".venv-nbgrader"
ASSIGNMENT = "course"
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
AUTOGRADED = ["03_softmax_and_attention"]
SEED = 12345       # the hidden cases of nbgrader's run (COURSE_GRADER_SEED) and helpers.grade's

# The wrong learner: the last exercise's function returns its right answer, changed.
WRONG = '''
import numpy as _np
_right = {name}

def _changed(value):
    if isinstance(value, (tuple, list)):
        return type(value)(_changed(v) for v in value)
    if isinstance(value, dict):
        return {{key: _changed(v) for key, v in value.items()}}
    value = _np.asarray(value)
    return ~value if value.dtype == bool else 2 * value + 1

def {name}(*args, **kwargs):
    return _changed(_right(*args, **kwargs))
'''

# Run in nbgrader's environment: every grade, as {student: {notebook: {grade_id: score}}}.
SCORES = textwrap.dedent('''
    import json, sys
    from nbgrader.api import Gradebook
    scores = {}
    with Gradebook("sqlite:///gradebook.db") as gb:
        for submission in gb.assignment_submissions(sys.argv[1]):
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    scores.setdefault(submission.student.id, {}).setdefault(
                        notebook.name, {})[grade.name] = grade.score
    print(json.dumps(scores))
''')


@pytest.fixture(scope="module")
def nbgrader_bin():
    if os.environ.get("COURSE_OLDEST") == "1":
        pytest.skip("nbgrader needs JupyterLab 4: `make test` runs these, not `make test-oldest`")
    nbgrader = VENV / "bin" / "nbgrader"
    if not nbgrader.exists():
        message = f"nbgrader is not installed in {VENV.name}: run `make nbgrader`"
        if os.environ.get("REQUIRE_NBGRADER") == "1":
            pytest.fail(message + " (REQUIRE_NBGRADER=1)")
        pytest.skip(message)
    return VENV / "bin"


def run(bin_dir, cwd, *args):
    """Run a command of nbgrader's environment (its bin/ first on PATH: nbgrader calls alembic)."""
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=str(ROOT), MPLBACKEND="agg", COURSE_GRADER_SEED=str(SEED))
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def read(path):
    return nbformat.read(str(path), as_version=4)


def solution_cells(nb):
    """``{grade_id: cell}`` of the nbgrader solution cells."""
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def up_to_the_last_graded_cell(nb):
    """``nb`` without the cells after its last nbgrader cell: they cannot change a grade.

    The untouched and wrong learners hand these in (the solution learner hands in the
    whole notebook, so each lesson still runs whole under nbgrader once): nbgrader's
    grades come from its grade cells only, and a learner may delete other cells. It
    saves a second and third run of lessons 08-10's training cells.
    """
    graded = [i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade")]
    trimmed = nbformat.from_dict(json.loads(json.dumps(nb)))
    trimmed.cells = trimmed.cells[:graded[-1] + 1]
    return trimmed


def submit(course, student, lesson, nb):
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(folder / f"{lesson}.ipynb"))
    return folder / f"{lesson}.ipynb"


@pytest.fixture(scope="module")
def graded(nbgrader_bin, tmp_path_factory):
    """Release every lesson, submit three learners' notebooks of AUTOGRADED, grade them both ways."""
    course = tmp_path_factory.mktemp("nbgrader-course")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for path in SOLUTIONS:
        shutil.copy(path, source)
    run(nbgrader_bin, course, nbgrader_bin / "nbgrader", "generate_assignment", ASSIGNMENT, "--force")
    releases = {p.stem: read(course / "release" / ASSIGNMENT / p.name) for p in SOLUTIONS}
    submitted = {}
    for lesson in AUTOGRADED:
        release, solution = releases[lesson], solution_cells(read(source / f"{lesson}.ipynb"))
        submitted["untouched", lesson] = submit(course, "untouched", lesson,
                                                up_to_the_last_graded_cell(release))
        right = nbformat.from_dict(json.loads(json.dumps(release)))
        for grade_id, cell in solution_cells(right).items():
            cell.source = solution[grade_id].source
        submitted["solution", lesson] = submit(course, "solution", lesson, right)
        last = LESSONS[lesson][-1].name
        solution_cells(right)[last].source += "\n" + WRONG.format(name=last)
        submitted["wrong", lesson] = submit(course, "wrong", lesson, up_to_the_last_graded_cell(right))
    run(nbgrader_bin, course, nbgrader_bin / "nbgrader", "autograde", ASSIGNMENT, "--create",
        "--force", "--ExecutePreprocessor.timeout=600")
    scores = json.loads(run(nbgrader_bin, course, nbgrader_bin / "python", "-c", SCORES, ASSIGNMENT))
    report = course / "grades.json"
    proc = subprocess.run([sys.executable, "-m", "helpers.grade", "--seed", str(SEED), "--json",
                           str(report), *map(str, submitted.values())],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = dict(zip(submitted, json.loads(report.read_text())))
    return {"releases": releases, "scores": scores, "grade": rows}


def test_every_lesson_is_released(graded):
    assert set(graded["releases"]) == {p.stem for p in SOLUTIONS}


@pytest.mark.parametrize("lesson", [p.stem for p in SOLUTIONS])
def test_release_matches_the_student_notebook_in_every_cell_a_learner_sees(graded, lesson):
    release = graded["releases"][lesson]
    student = read(ROOT / "notebooks" / f"{lesson}.ipynb")
    assert [(c.cell_type, c.source) for c in release.cells] == \
           [(c.cell_type, c.source) for c in student.cells]


def lesson_scores(graded, student, lesson):
    return graded["scores"][student][lesson]


@pytest.mark.parametrize("lesson", AUTOGRADED)
def test_solution_gets_full_marks(graded, lesson):
    scores = lesson_scores(graded, "solution", lesson)
    assert scores == {f"{e.name}_tests": POINTS_PER_EXERCISE for e in LESSONS[lesson]}


@pytest.mark.parametrize("lesson", AUTOGRADED)
def test_untouched_release_gets_zero(graded, lesson):
    scores = lesson_scores(graded, "untouched", lesson)
    assert scores == {f"{e.name}_tests": 0 for e in LESSONS[lesson]}


@pytest.mark.parametrize("lesson", AUTOGRADED)
def test_a_wrong_function_loses_its_exercise_points_only(graded, lesson):
    scores = lesson_scores(graded, "wrong", lesson)
    last = LESSONS[lesson][-1].name
    expected = {f"{e.name}_tests": POINTS_PER_EXERCISE for e in LESSONS[lesson]}
    expected[f"{last}_tests"] = 0
    assert scores == expected


@pytest.mark.parametrize("student", ["solution", "untouched", "wrong"])
@pytest.mark.parametrize("lesson", AUTOGRADED)
def test_nbgrader_and_helpers_grade_give_every_exercise_the_same_verdict(graded, lesson, student):
    # nbgrader's hidden test is all or nothing: its points where helpers.grade's verdict is "passed"
    row = graded["grade"][student, lesson]
    assert row["lesson"] == lesson
    expected = {f"{name}_tests": POINTS_PER_EXERCISE if e["passed"] else 0
                for name, e in row["exercises"].items()}
    assert lesson_scores(graded, student, lesson) == expected
