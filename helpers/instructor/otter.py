"""Otter-Grader exports: one Gradescope autograder per lesson, written from ``solutions/``.

    python -m helpers.instructor.otter [OUT] [--seed N] [--lesson NN_topic ...]
    make otter                     # OUT = _build/otter, in .venv-otter (make otter-env)

For every lesson that has exercises, ``OUT/NN_topic/`` receives:

- ``master/NN_topic.ipynb``: the lesson as an Otter-Grader 7 master notebook, with
  ``master/helpers/`` (a copy of the course's package: the checks, the hidden cases, the
  grader) and ``master/requirements.txt`` (the package's own requirements) beside it;
- ``autograder.zip``: what ``otter assign`` built from it, the file Gradescope takes;
- ``student/NN_topic.ipynb``: Otter's student notebook (the lesson's student notebook, cell
  for cell) and ``autograder/``: the rest of Otter's output.

Everything there is generated: edit ``solutions/`` and build again. A lesson without
exercises is skipped, with a line saying so.

The master notebook is the solution notebook (without its ``instructor`` cells and
nbgrader's hidden tests) plus Otter's raw boundary cells. Each exercise is one question
worth :data:`~.grading.scoring.POINTS_PER_EXERCISE` points: its exercise cell is the
solution (Otter's ``# BEGIN SOLUTION NO PROMPT`` markers, and nbgrader's stub as the
prompt, so the student version raises ``NotImplementedError`` as ``notebooks/`` does), and
its check cell stays what it is, the question's last cell: Otter grades the question right
after it, as nbgrader does. Otter adds no cell of its own (no ``grader.check``, no init
or export cell), so the student notebook needs nothing but the course to run.

The tests (Otter's exception-based format) are the course's own: the public test is the
notebook's check (0 points: feedback only), and the hidden tests grade the function on the
hidden cases drawn from ``--seed``, with the grader's watch for calls into the course's own
answer (:func:`helpers.instructor.grading.kernel.hidden_row`). Otter gives partial credit per
test case, so the hidden cases' points are cut into one test per hidden case: test ``j`` of
``k`` passes when the function earned at least ``round(10 * j / k, 1)`` points. Otter's
score then equals ``helpers.grade --seed N``'s on the same notebook.
"""

import argparse
import copy
import importlib.util
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

from helpers import course

from .grading.kernel import exercise_seed, hidden_row
from .grading.notebook import checked_names
from .grading.scoring import POINTS_PER_EXERCISE
from .student import INSTRUCTOR_TAG, STUB, make_student, solution_blocks, strip_hidden_tests

ROOT = course.ROOT
DEFAULT_OUT = ROOT / "_build" / "otter"


# ----------------------------------------------------------------- the master notebook
def otter_solution_source(source):
    """An exercise cell's source with Otter's solution markers in place of nbgrader's.

    Each ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` block becomes Otter's
    ``# BEGIN SOLUTION NO PROMPT`` ... ``# END SOLUTION``, followed by a prompt (Otter's
    ``\"\"\" # BEGIN PROMPT`` string) holding nbgrader's stub: Otter's student version of the
    cell is then the cell of ``notebooks/``. In the solution the prompt is a string that
    never runs.
    """
    lines = source.splitlines()
    for _, begin, end, indent in reversed(solution_blocks(source)):
        lines[end:end + 1] = [indent + "# END SOLUTION", indent + '""" # BEGIN PROMPT',
                              *(indent + line for line in STUB), indent + '"""; # END PROMPT']
        lines[begin] = indent + "# BEGIN SOLUTION NO PROMPT"
    return "\n".join(lines)


def hidden_thresholds(total):
    """``[(at_least, points)]`` of the hidden tests of an exercise with ``total`` hidden cases.

    Test ``j`` (from 1) passes when the function earned at least the grader's points for
    ``j`` passed cases, ``round(10 * j / total, 1)``, and is worth what that ``j``-th case
    adds: passing the first ``p`` tests earns exactly the grader's points for ``p`` cases.
    """
    earned = [round(POINTS_PER_EXERCISE * j / total, 1) for j in range(total + 1)]
    return [(earned[j], round(earned[j] - earned[j - 1], 1)) for j in range(1, total + 1)]


def _test_cell(config, test_name, name, call):
    """An exception-based test cell: its config, and a test function given the name ``name``."""
    function = call.split("(")[0]
    return "\n".join(['""" # BEGIN TEST CONFIG', yaml.safe_dump(config, sort_keys=False).strip(),
                      '""" # END TEST CONFIG',
                      f"def test_{test_name}({name}):",
                      f"    from helpers.instructor.otter import {function}",
                      f"    {call}"])


def test_sources(name, seed):
    """The test cells of exercise ``name``: the notebook's check, then one per hidden case."""
    from helpers.exercises import EXERCISES

    cases = EXERCISES[name].cases(hidden=True, seed=exercise_seed(seed, name))
    cells = [_test_cell({"points": 0, "success_message": f"the notebook's check of {name} passed"},
                        f"{name}_check", name, f"public_check({name!r}, {name})")]
    for j, (at_least, points) in enumerate(hidden_thresholds(len(cases)), start=1):
        cells.append(_test_cell({"hidden": True, "points": points}, f"{name}_hidden_{j}", name,
                                f"hidden_points({name!r}, {name}, at_least={at_least}, "
                                f"seed={int(seed)})"))
    return cells


def _raw(source):
    return nbformat.v4.new_raw_cell(source)


def _yaml_cell(comment, config):
    return _raw(f"# {comment}\n" + yaml.safe_dump(config, sort_keys=False).strip())


def assignment_config(python_version):
    """The master notebook's ``# ASSIGNMENT CONFIG`` (paths relative to the master)."""
    return {"requirements": "requirements.txt",
            "autograder_files": ["helpers"],
            "python_version": python_version,
            "init_cell": False, "check_all_cell": False, "export_cell": False,
            "run_tests": False,
            "tests": {"files": False, "ok_format": False},
            "generate": {"pdf": False, "show_stdout": False, "show_hidden": False}}


def question_cells(nb, lesson):
    """``[(name, first cell, last cell)]``: each exercise's cell and its check cell, in order.

    Raises
    ------
    ValueError
        When an exercise has no solution cell or no check cell after it, or when two
        exercises' cells interleave (a question must be one run of cells).
    """
    from helpers.exercises import LESSONS

    solutions, checks = {}, {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for name, *_ in solution_blocks(cell.source):
            solutions.setdefault(name, i)
        for name in checked_names(cell.source):
            checks.setdefault(name, i)
    spans = []
    for exercise in LESSONS.get(lesson, []):
        name = exercise.name
        if name not in solutions or checks.get(name, -1) < solutions[name]:
            raise ValueError(f"{lesson}: {name} needs a solution cell and, after it, "
                             f'a check cell calling check("{name}", ...)')
        spans.append((name, solutions[name], checks[name]))
    spans.sort(key=lambda span: span[1])
    for (a, _, a_end), (b, b_start, _) in zip(spans, spans[1:]):
        if b_start <= a_end:
            raise ValueError(f"{lesson}: the cells of {b} start before the check of {a}")
    return spans


def master_notebook(solution, lesson, seed, python_version):
    """The Otter master notebook of a lesson (``solution`` is not changed).

    Parameters
    ----------
    solution : nbformat.NotebookNode
        The lesson's solution notebook.
    lesson : str
        Its file stem, e.g. ``"03_softmax_and_attention"``.
    seed : int
        The seed of the hidden cases written into the hidden tests.
    python_version : str
        Gradescope's Python, e.g. ``"3.11"``.
    """
    nb = copy.deepcopy(solution)
    nb.cells = [c for c in nb.cells if INSTRUCTOR_TAG not in c.metadata.get("tags", [])]
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        if cell.cell_type == "code":
            cell.source = strip_hidden_tests(cell.source).rstrip("\n")
            cell.outputs, cell.execution_count = [], None
    spans = question_cells(nb, lesson)
    starts = {first: (name, last) for name, first, last in spans}
    cells, i = [_yaml_cell("ASSIGNMENT CONFIG", assignment_config(python_version))], 0
    while i < len(nb.cells):
        if i not in starts:
            cells.append(nb.cells[i])
            i += 1
            continue
        name, last = starts[i]
        exercise = nb.cells[i]
        exercise.source = otter_solution_source(exercise.source)
        cells += [_yaml_cell("BEGIN QUESTION", {"name": name, "check_cell": False}),
                  _raw("# BEGIN SOLUTION"), exercise, _raw("# END SOLUTION"),
                  _raw("# BEGIN TESTS"),
                  *(nbformat.v4.new_code_cell(s) for s in test_sources(name, seed)),
                  _raw("# END TESTS"),
                  *nb.cells[i + 1:last + 1],       # up to the check cell: Otter grades after it
                  _raw("# END QUESTION")]
        i = last + 1
    for n, cell in enumerate(cells):
        cell["id"] = cell.get("id") or f"otter-{n}"
    nb.cells = cells
    nb.metadata["course"] = make_student(solution, lesson).metadata["course"]
    return nb


# ----------------------------------------------------------------- building
def runtime_requirements(pyproject=ROOT / "pyproject.toml"):
    """The course package's own requirements (``[project] dependencies`` of pyproject.toml)."""
    text = Path(pyproject).read_text(encoding="utf-8")
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.MULTILINE | re.DOTALL)
    if block is None:
        raise ValueError(f"{pyproject}: no [project] dependencies list")
    return re.findall(r'"([^"]+)"', block.group(1))


def copy_package(target):
    """Copy ``helpers/`` (without bytecode) to ``target``: what the autograder imports."""
    shutil.copytree(ROOT / "helpers", target,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"))


def otter_assign(master, result):
    """Run ``otter assign`` (of this interpreter) on ``master``, writing ``result``."""
    command = [sys.executable, "-m", "otter", "assign", "--no-run-tests", "--no-pdfs",
               str(master), str(result)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"otter assign failed on {master}:\n{proc.stdout}{proc.stderr}")


def build_lesson(lesson, out, seed, solutions=ROOT / "solutions"):
    """Write ``out/lesson/`` (replaced): the master, Otter's output and ``autograder.zip``.

    Returns the path of the autograder zip.
    """
    folder = Path(out) / lesson
    if folder.exists():
        shutil.rmtree(folder)
    master_dir = folder / "master"
    master_dir.mkdir(parents=True)
    solution = nbformat.read(str(Path(solutions) / f"{lesson}.ipynb"), as_version=4)
    python_version = f"{sys.version_info.major}.{sys.version_info.minor}"
    master = master_notebook(solution, lesson, seed, python_version)
    nbformat.write(master, str(master_dir / f"{lesson}.ipynb"))
    copy_package(master_dir / "helpers")
    (master_dir / "requirements.txt").write_text("\n".join(runtime_requirements()) + "\n",
                                                 encoding="utf-8")
    otter_assign(master_dir / f"{lesson}.ipynb", folder)
    built = sorted((folder / "autograder").glob("*.zip"))
    if len(built) != 1:
        raise RuntimeError(f"otter assign wrote {len(built)} zip files in {folder / 'autograder'}")
    return built[0].rename(folder / "autograder.zip")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m helpers.instructor.otter",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT,
                        help=f"the folder to write (default: {DEFAULT_OUT.relative_to(ROOT)})")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the hidden cases (default: a fresh one, printed); the same "
                             "seed gives `python -m helpers.grade --seed` the same hidden cases")
    parser.add_argument("--lesson", action="append", default=None,
                        help="build only this lesson (repeatable), e.g. 03_softmax_and_attention")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("otter") is None:
        parser.error(f"otter-grader is not installed for {sys.executable}: "
                     "run `make otter`, which uses .venv-otter")
    from helpers.exercises import LESSONS

    known = course.lessons(ROOT / "solutions")
    unknown = sorted(set(args.lesson or []) - set(known))
    if unknown:
        parser.error(f"--lesson: no lesson {', '.join(unknown)}; the lessons are {', '.join(known)}")
    seed = secrets.randbelow(2**31) if args.seed is None else args.seed
    print(f"hidden cases drawn with --seed {seed}")
    for lesson in args.lesson or known:
        if not LESSONS.get(lesson):
            print(f"{lesson}: skipped (no exercises, nothing to grade)")
            continue
        zip_path = build_lesson(lesson, args.out, seed)
        print(f"{lesson}: {zip_path}")
    return 0


# ----------------------------------------------------------------- in the grading kernel
# The test files in autograder.zip call these, with the function the notebook's name holds
# right after its check cell (None when the notebook never defined it).
_graded = {}   # (name, seed) -> (fn, row): a question's hidden tests grade its function once


def public_check(name, fn):
    """The notebook's own check of ``fn``, on its visible cases: raises with the check's message."""
    from helpers.checking import evaluate
    from helpers.exercises import EXERCISES

    exercise = EXERCISES[name]
    if fn is None:
        raise AssertionError(f"{name} is not defined in the notebook")
    report = None if fn is exercise.reference else evaluate(
        exercise, fn, stop_at_first_failure=True, catalogue=EXERCISES, time_limit=exercise.time_limit)
    if report is None or report.not_attempted:
        raise AssertionError(f"{name}: not attempted yet (fill in its exercise cell)")
    if report.failures:
        raise AssertionError(f"{name} {report.failures[0]}")


def hidden_points(name, fn, at_least, seed):
    """Raise, with the grader's feedback, unless ``fn`` earns ``at_least`` points on the hidden cases."""
    cached = _graded.get((name, seed))
    if cached is None or cached[0] is not fn:
        cached = _graded[(name, seed)] = (fn, hidden_row(name, fn, seed))
    row = cached[1]
    if row["points"] < at_least - 1e-9:
        raise AssertionError(row["feedback"])


if __name__ == "__main__":
    sys.exit(main())
