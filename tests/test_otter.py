"""Otter-Grader: `make otter`'s autograders grade every lesson as `helpers.grade` does.

`python -m helpers.instructor.otter` builds every lesson with exercises into a temporary
folder, in `.venv-otter` (`make otter-env`), with the hidden cases of ``SEED``. Then
`otter run` (Otter's local grading: the autograder zip's own tests, no Docker) grades
submissions made from Otter's student notebook of each lesson of ``RUN`` (one is enough for
the adapter: its hidden tests are the grader's own ``hidden_row``; lesson 02 has a version
that earns part of an exercise's points):

- untouched: the notebook as Otter wrote it, whole, with `--debug` (Otter stops at the
  first cell that raises: it runs top to bottom);
- solution: every exercise cell filled with the solution's code;
- wrong: the same, with the lesson's last exercise returning something else;
- partial (lesson 02 only): `score_std` ignoring sigma, right on some hidden cases.

The last three are handed in up to their last check cell (nothing after it changes a grade).
`helpers.grade --seed SEED` grades the same files in one run, and every question's Otter score
must equal the grader's points for that exercise.

The venv holds otter-grader and the course's requirements, not the course: the grading
kernels import `helpers` from the copy inside the zip. Without `.venv-otter` these tests are
skipped, or fail when ``REQUIRE_OTTER=1`` (as in CI); `make test-oldest` skips them.
"""

import concurrent.futures
import copy
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from helpers.exercises import LESSONS
from helpers.instructor.grading.notebook import exercise_cells
from helpers.instructor.grading.scoring import POINTS_PER_EXERCISE
from helpers.instructor.otter import runtime_requirements
from test_nbgrader import WRONG

ROOT = Path(__file__).resolve().parents[1]
# Many whole notebooks, each graded in its own `otter run`: scheduled first (conftest.py), and
# allowed more than pytest-timeout's 900 s for the module's fixtures on a busy 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
VENV = ROOT / ".venv-otter"
SEED = 12345
GRADED = [p.stem for p in sorted((ROOT / "solutions").glob("*.ipynb")) if LESSONS.get(p.stem)]
RUN = ["02_scaled_scores"]      # the lessons whose autograder `otter run` runs
WHO = ("untouched", "solution", "wrong")
PARTIAL = ("02_scaled_scores", "score_std", '''
def score_std(d_k, sigma=1.0):
    return np.sqrt(d_k)   # sigma ignored: right only where sigma = 1
''')


def names(lesson):
    return [e.name for e in LESSONS[lesson]]


@pytest.fixture(scope="module")
def otter_python():
    if os.environ.get("COURSE_OLDEST") == "1":
        pytest.skip("Otter is tested with `make test`, not `make test-oldest`")
    python = VENV / "bin" / "python"
    if not (VENV / "bin" / "otter").exists():
        message = f"otter-grader is not installed in {VENV.name}: run `make otter-env`"
        if os.environ.get("REQUIRE_OTTER") == "1":
            pytest.fail(message + " (REQUIRE_OTTER=1)")
        pytest.skip(message)
    return python


def otter_env(base):
    """The environment of Otter's commands: its venv's bin/ first (kernels start `python`)."""
    env = dict(base, PATH=f"{VENV / 'bin'}{os.pathsep}{base['PATH']}", MPLBACKEND="agg")
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    return env


@pytest.fixture(scope="module")
def built(otter_python, tmp_path_factory, notebook_kernel_env):
    out = tmp_path_factory.mktemp("otter")
    start = time.perf_counter()
    proc = subprocess.run([str(otter_python), "-m", "helpers.instructor.otter", str(out),
                           "--seed", str(SEED)], cwd=ROOT, env=otter_env(notebook_kernel_env),
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    print(f"\nmake otter: {time.perf_counter() - start:.0f} s for {len(GRADED)} lessons")
    return out


def read(path):
    return nbformat.read(str(path), as_version=4)


def student_of(built, lesson):
    return read(built / lesson / "student" / f"{lesson}.ipynb")


def up_to_the_last_check(nb):
    """``nb`` without the cells after the last one Otter grades after (metadata ``otter.tests``)."""
    checked = [i for i, c in enumerate(nb.cells) if c.metadata.get("otter", {}).get("tests")]
    trimmed = copy.deepcopy(nb)
    trimmed.cells = trimmed.cells[:checked[-1] + 1]
    return trimmed


def submissions(built, lesson):
    """``{who: notebook}`` for the lesson's submissions."""
    student, solution = student_of(built, lesson), read(ROOT / "solutions" / f"{lesson}.ipynb")
    ours, theirs = exercise_cells(student, names(lesson)), exercise_cells(solution, names(lesson))
    right = copy.deepcopy(student)
    for name in names(lesson):
        right.cells[ours[name]].source = solution.cells[theirs[name]].source
    wrong = copy.deepcopy(right)
    last = names(lesson)[-1]
    wrong.cells[ours[last]].source += "\n" + WRONG.format(name=last)
    made = {"untouched": student, "solution": up_to_the_last_check(right),
            "wrong": up_to_the_last_check(wrong)}
    if lesson == PARTIAL[0]:
        partial = copy.deepcopy(right)
        partial.cells[ours[PARTIAL[1]]].source = PARTIAL[2].strip()
        made["partial"] = up_to_the_last_check(partial)
    return made


def otter_run(built, lesson, who, path, env):
    """Grade one submission with `otter run`; return ``{question: (score, output)}`` and the time."""
    out = path.parent / f"{path.stem}-results"
    out.mkdir()
    start = time.perf_counter()
    proc = subprocess.run([str(VENV / "bin" / "otter"), "run", "--no-logo",
                           *(["--debug"] if who == "untouched" else []),
                           "-a", str(built / lesson / "autograder.zip"), "-o", str(out), str(path)],
                          cwd=path.parent, env=env, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, f"otter run {path.name}:\n{proc.stdout}{proc.stderr}"
    tests = json.loads((out / "results.json").read_text(encoding="utf-8"))["tests"]
    return {t["name"]: (t["score"], t["output"]) for t in tests if "score" in t}, seconds


@pytest.fixture(scope="module")
def graded(built, tmp_path_factory, notebook_kernel_env):
    """Every submission graded by `otter run` (two at a time) and by one `helpers.grade` run."""
    folder = tmp_path_factory.mktemp("otter-submissions")
    jobs = []
    for lesson in RUN:
        for who, nb in submissions(built, lesson).items():
            path = folder / f"{lesson}-{who}.ipynb"
            nbformat.write(nb, str(path))
            jobs.append((lesson, who, path))
    jobs.sort(key=lambda job: (job[1] != "untouched", [-ord(c) for c in job[0]]))  # longest first
    env = otter_env(notebook_kernel_env)
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {(lesson, who): pool.submit(otter_run, built, lesson, who, path, env)
                   for lesson, who, path in jobs}
        otter = {key: future.result() for key, future in futures.items()}
    print(f"\notter run: {time.perf_counter() - start:.0f} s for {len(jobs)} submissions; slowest "
          + ", ".join(f"{k[0]} {k[1]} {v[1]:.0f} s" for k, v in
                      sorted(otter.items(), key=lambda kv: -kv[1][1])[:3]))
    report = folder / "grades.json"
    proc = subprocess.run([sys.executable, "-m", "helpers.grade", "--seed", str(SEED), "--jobs", "2",
                           "--json", str(report), *(str(job[2]) for job in jobs)],
                          cwd=ROOT, env=notebook_kernel_env, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {Path(row["submission"]).stem: row for row in json.loads(report.read_text())}
    grade = {(lesson, who): rows[f"{lesson}-{who}"] for lesson, who, _ in jobs}
    return {"otter": {key: value[0] for key, value in otter.items()}, "grade": grade}


def otter_points(graded, lesson, who):
    return {name: score for name, (score, _) in graded["otter"][(lesson, who)].items()}


# ----------------------------------------------------------------- what make otter writes
def test_every_lesson_with_exercises_gets_an_autograder_zip(built):
    assert sorted(p.parent.name for p in built.glob("*/autograder.zip")) == GRADED


@pytest.mark.parametrize("lesson", GRADED)
def test_the_zip_carries_the_helpers_the_requirements_and_one_test_file_per_exercise(built, lesson):
    with zipfile.ZipFile(built / lesson / "autograder.zip") as zf:
        files = set(zf.namelist())
        environment = zf.read("environment.yml").decode()
        shipped = {name[len("files/"):]: zf.read(name) for name in files
                   if name.startswith("files/helpers/")}
    assert {"run_autograder", "setup.sh", "otter_config.json"} <= files
    assert {n for n in files if n.startswith("tests/")} == {f"tests/{n}.py" for n in names(lesson)}
    course = {str(p.relative_to(ROOT)): p.read_bytes() for p in (ROOT / "helpers").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert shipped == course      # the whole package, as it is, and no bytecode
    python = f"python={sys.version_info.major}.{sys.version_info.minor}"
    for requirement in [python, "otter-grader", *runtime_requirements()]:
        assert requirement in environment


@pytest.mark.parametrize("lesson", GRADED)
def test_the_student_notebook_is_the_courses_cell_for_cell(built, lesson):
    student = student_of(built, lesson)
    course = read(ROOT / "notebooks" / f"{lesson}.ipynb")
    assert [(c.cell_type, c.source) for c in student.cells] == \
           [(c.cell_type, c.source) for c in course.cells]
    assert student.metadata["course"] == course.metadata["course"]


@pytest.mark.parametrize("lesson", GRADED)
def test_the_student_notebook_carries_no_hidden_test_and_no_seed(built, lesson):
    text = (built / lesson / "student" / f"{lesson}.ipynb").read_text(encoding="utf-8")
    assert "hidden_points" not in text
    assert str(SEED) not in text


# ----------------------------------------------------------------- grading
@pytest.mark.parametrize("lesson", RUN)
def test_the_untouched_student_notebook_runs_to_the_end_under_otter_and_scores_zero(graded, lesson):
    # otter run --debug returned 0: no cell raised
    assert otter_points(graded, lesson, "untouched") == {name: 0 for name in names(lesson)}
    for name, (_, output) in graded["otter"][(lesson, "untouched")].items():
        assert f"{name}: not attempted" in output


@pytest.mark.parametrize("lesson", RUN)
def test_the_solution_gets_full_marks(graded, lesson):
    points = otter_points(graded, lesson, "solution")
    assert points == pytest.approx({name: POINTS_PER_EXERCISE for name in names(lesson)})


@pytest.mark.parametrize("lesson", RUN)
def test_a_wrong_function_loses_its_exercises_points_only(graded, lesson):
    expected = {name: POINTS_PER_EXERCISE for name in names(lesson)}
    expected[names(lesson)[-1]] = 0
    assert otter_points(graded, lesson, "wrong") == pytest.approx(expected)


@pytest.mark.parametrize("lesson, who", [(lesson, who) for lesson in RUN for who in WHO]
                         + [(PARTIAL[0], "partial")])
def test_otter_gives_every_exercise_the_points_helpers_grade_gives(graded, lesson, who):
    row = graded["grade"][(lesson, who)]
    assert row["error"] is None
    expected = {name: e["points"] for name, e in row["exercises"].items()}
    assert otter_points(graded, lesson, who) == pytest.approx(expected, abs=1e-9)


def test_partial_credit_is_the_graders_fraction_of_hidden_cases(graded):
    lesson, name, _ = PARTIAL
    points = otter_points(graded, lesson, "partial")[name]
    assert 0 < points < POINTS_PER_EXERCISE
    assert points == pytest.approx(graded["grade"][(lesson, "partial")]["exercises"][name]["points"])


@pytest.mark.parametrize("lesson", RUN)
def test_the_wrong_exercises_feedback_is_the_graders(graded, lesson):
    name = names(lesson)[-1]
    feedback = graded["grade"][(lesson, "wrong")]["exercises"][name]["feedback"]
    output = graded["otter"][(lesson, "wrong")][name][1]
    assert re.sub(r"\s+", " ", feedback) in re.sub(r"\s+", " ", output)
