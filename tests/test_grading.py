"""The grader (``python -m helpers.grade``): the pipeline, end to end.

Per-exercise verdicts -- every learner-style version of every exercise -- are tested at the
function level, once: tests/test_checks_versions.py runs the version tables of
tests/test_checks_lessonNN.py (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``). Here a few
whole notebooks per lesson go through the grader, built from the lessons' own student
notebooks with the solution's exercise cells (``solved``): a solved one, an untouched one, a
wrong version drawn from the tables, exercise cells written other ways (``CELLS``: shapes the
notebook's check accepts, routes into the course's own answer), and broken ones (a kernel that
dies, sys.exit, a syntax error, a missing function, an exercise that never ends). They are
graded in ONE command-line run (``--jobs 2``, ``--seed``, ``--json``, ``--csv``), cached for
the module; each test reads its own row. A hang (the time limit) and Ctrl-C get runs of their
own, watched for processes left behind.
"""

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import nbformat
import numpy as np
import pytest

from helpers.checking import evaluate
from helpers.exercises import EXERCISES, LESSONS
from helpers.instructor.grading import kernel, notebook, runner
from helpers.instructor.grading.scoring import FEEDBACK_COLUMN
from test_checking_time_limit import HANGING

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
pytestmark = pytest.mark.slow   # runs whole notebooks: scheduled first (conftest.py)
BATCH_TIMEOUT = 60   # seconds per notebook in the batch run: the lesson-07 one whose exercise never
                     # ends must finish well within it (5 hidden cases x 5 s; it took 121 s and
                     # scored 0 when grading it had no per-case limit)
SEED = 12345         # the batch run's --seed
L01, L03, L04, L07 = "01_qkv_projections", "03_softmax_and_attention", "04_multi_head", "07_backward"


def names(lesson):
    return [e.name for e in LESSONS[lesson]]


# ------------------------------------------------------------ building submissions
def read(path):
    return nbformat.read(str(path), as_version=4)


def student(lesson):
    return read(ROOT / "notebooks" / f"{lesson}.ipynb")


def exercise_cell(nb, name):
    """Index of the exercise cell of ``name`` (the one the grader grades)."""
    return notebook.exercise_cells(nb, [name])[name]


def check_cell(nb, name):
    return next(i for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and name in notebook.checked_names(c.source))


def solved(lesson):
    """The student notebook with every exercise cell the solution's: what a learner who solved it hands in."""
    nb, solution = student(lesson), read(ROOT / "solutions" / f"{lesson}.ipynb")
    ours, theirs = notebook.exercise_cells(nb, names(lesson)), notebook.exercise_cells(solution, names(lesson))
    for name in names(lesson):
        nb.cells[ours[name]].source = solution.cells[theirs[name]].source
    return nb


def from_the_tables(lesson, name, label):
    """An exercise cell binding a wrong version of ``name`` from tests/test_checks_lessonNN.py."""
    return textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from test_checks_lesson{lesson[:2]} import WRONG_BY_EXERCISE
        {name} = WRONG_BY_EXERCISE[{name!r}][{label!r}][0]
    """).strip()


def table_message(lesson, name, label):
    """The phrase the notebook's check must say about that version (the table says it)."""
    return __import__(f"test_checks_lesson{lesson[:2]}").WRONG_BY_EXERCISE[name][label][1]


def insert_code(nb, index, source):
    nb.cells.insert(index, nbformat.v4.new_code_cell(source))


#: (lesson, exercise, label) of the wrong version each lesson's "wrong" submission draws.
WRONG = {L01: ("project_qkv", "K from W_q"), L03: ("softmax", "naive exp overflows")}


class Cell:
    """A whole exercise cell as a learner might write it.

    ``expected``: for a shape, the notebook check's verdict ("pass" or "fail"); for a route,
    what the grader's feedback must name (None: allowed, full marks). ``after``: a cell the
    learner added right after the check cell.
    """

    def __init__(self, label, source, expected=None, after=None):
        self.label, self.expected, self.after = label, expected, after
        self.source = textwrap.dedent(source).strip() + "\n"


SHAPES = {   # the notebook's check and the grader agree, however the cell is written
    "softmax": [
        Cell("%%time on the first line", """
            %%time
            import numpy as np
            def softmax(x, axis=-1):
                e = np.exp(x - x.max(axis=axis, keepdims=True))
                return e / e.sum(axis=axis, keepdims=True)
            """, "pass"),
    ],
    "causal_mask": [
        Cell("functools.partial", """
            import functools
            import numpy as np
            causal_mask = functools.partial(np.tri, dtype=bool)
            """, "pass"),
        Cell("right, then rebound to a wrong one after the check", """
            import numpy as np
            def causal_mask(n):
                return np.tril(np.ones((n, n), dtype=bool))
            """, "pass", after="causal_mask = lambda n: np.triu(np.ones((n, n), dtype=bool))"),
    ],
    "scaled_dot_product_attention": [
        Cell("def inside with", """
            import numpy as np
            from helpers.reference import softmax as stable_softmax
            with np.errstate(all="ignore"):
                def scaled_dot_product_attention(Q, K, V, mask=None):
                    scores = Q @ K.T / np.sqrt(Q.shape[-1])
                    if mask is not None:
                        scores = np.where(mask, scores, -np.inf)
                    weights = stable_softmax(scores, axis=-1)
                    return weights @ V, weights
            """, "pass"),
        Cell("wrong, then rebound to the reference after the check", """
            import numpy as np
            from helpers.reference import softmax as stable_softmax
            def scaled_dot_product_attention(Q, K, V, mask=None):
                weights = stable_softmax(Q @ K.T)
                return weights @ V, weights
            """, "fail", after="from helpers.reference import scaled_dot_product_attention"),
    ],
}

ROUTES = {   # calls into the course's own answer: 0 points, the feedback names what was called
    "project_qkv": [
        Cell("from helpers.reference import", """
            from helpers.reference import project_qkv as _ref
            def project_qkv(X, W_q, W_k, W_v):
                return _ref(X, W_q, W_k, W_v)
            """, "helpers.reference.project_qkv"),
        Cell("import helpers.reference as r", """
            import helpers.reference as r
            def project_qkv(X, W_q, W_k, W_v):
                Q, K, V = r.project_qkv(X, W_q, W_k, W_v)
                return Q, K, V
            """, "helpers.reference.project_qkv"),
    ],
    "cross_project_qkv": [
        Cell("importlib", """
            import importlib
            def cross_project_qkv(X_q, X_kv, W_q, W_k, W_v):
                return importlib.import_module("helpers.reference").cross_project_qkv(X_q, X_kv, W_q, W_k, W_v)
            """, "helpers.reference.cross_project_qkv"),
    ],
    "softmax": [
        Cell("the function the check handed back", """
            from helpers.checks import check as _check
            _given = _check("softmax", lambda x, axis=-1: (_ for _ in ()).throw(NotImplementedError()))
            def softmax(x, axis=-1):
                return _given(x, axis=axis)
            """, "helpers.reference.softmax"),
        Cell("a helper of the checks", """
            from helpers.exercises.lesson03 import _plain_softmax
            def softmax(x, axis=-1):
                return _plain_softmax(x, axis)
            """, "helpers.exercises.lesson03._plain_softmax"),
    ],
    "causal_mask": [
        Cell("the reference bound to the name", """
            from helpers.reference import causal_mask
            """, "helpers.reference.causal_mask"),
    ],
    "causal_mask_for_new_tokens": [
        Cell("the catalogue's reference", """
            from helpers.exercises import EXERCISES
            def causal_mask_for_new_tokens(n_q, n_k):
                return EXERCISES["causal_mask_for_new_tokens"].reference(n_q, n_k)
            """, "helpers.reference.causal_mask_for_new_tokens"),
    ],
    "scaled_dot_product_attention": [
        Cell("a private helper of the reference", """
            from helpers.reference.attention import _attention
            def scaled_dot_product_attention(Q, K, V, mask=None):
                return _attention(Q, K, V, mask)
            """, "helpers.reference._attention"),
    ],
    "multi_head_attention": [
        Cell("scaled_dot_product_attention from the reference: allowed", """
            from helpers.reference import scaled_dot_product_attention as attend
            def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
                Qh, Kh, Vh = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))
                out, weights = attend(Qh, Kh, Vh, mask)
                return merge_heads(out) @ W_o, weights
            """),
    ],
}

CELLS = {name: SHAPES.get(name, []) + ROUTES.get(name, []) for name in {*SHAPES, *ROUTES}}


def packed_notebooks():
    """``{(exercise, label): file}`` and ``{file: notebook}`` for ``CELLS``.

    Notebook k of a lesson holds cell k of each of its exercises in ``CELLS`` (as few
    notebooks as the longest list); its other exercises are solved.
    """
    where, notebooks = {}, {}
    for lesson in LESSONS:
        count = max((len(CELLS.get(n, [])) for n in names(lesson)), default=0)
        for k in range(count):
            nb, file = solved(lesson), f"cells_{lesson}_{k}.ipynb"
            for name in names(lesson):
                cells = CELLS.get(name, [])
                if k < len(cells):
                    nb.cells[exercise_cell(nb, name)].source = cells[k].source
                    if cells[k].after:
                        insert_code(nb, check_cell(nb, name) + 1, cells[k].after)
                    where[(name, cells[k].label)] = file
            notebooks[file] = nb
    return where, notebooks


def special_notebooks():
    """The solved, untouched, wrong and broken submissions: ``{file: notebook}``."""
    out = {"untouched.ipynb": student(L03)}
    for lesson, (name, label) in WRONG.items():
        nb = solved(lesson)
        nb.cells[exercise_cell(nb, name)].source = from_the_tables(lesson, name, label)
        out[f"wrong_{lesson}.ipynb"] = nb
    nb = out[f"wrong_{L03}.ipynb"]   # also: a cell that raises before the exercises, and the
    insert_code(nb, check_cell(nb, "softmax") + 1,       # name rebound to the course's after the check
                "from helpers.reference import softmax   # rebinds the name")
    insert_code(nb, 2, "1 / 0   # a cell that raises, before the exercises")

    nb = solved(L01)
    insert_code(nb, exercise_cell(nb, "project_qkv"), "import sys\nsys.exit(3)   # before the exercise")
    del nb.cells[exercise_cell(nb, "cross_project_qkv")]
    out["exits_and_misses_a_function.ipynb"] = nb
    nb = solved(L01)
    insert_code(nb, check_cell(nb, "cross_project_qkv") + 1,
                "import sys\nsys.exit(3)   # after the last exercise")
    out["exits_after_the_last_exercise.ipynb"] = nb
    nb = solved(L01)
    nb.cells[exercise_cell(nb, "project_qkv")].source = (
        "def project_qkv(X, W_q, W_k, W_v):\n    return X @ W_q, X @ W_k X @ W_v\n")
    out["syntax_error.ipynb"] = nb
    nb = solved(L03)
    insert_code(nb, check_cell(nb, "softmax") + 1, "import os\nos._exit(1)   # the kernel dies")
    out["kernel_dies.ipynb"] = nb
    nb = solved(L07)   # cs231n's gradient check with `it.iternext()` inside `if verbose:`
    nb.cells[exercise_cell(nb, "numerical_gradient")].source = HANGING.strip()
    out["never_ends.ipynb"] = nb
    return out


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def run(tmp_path_factory, notebook_kernel_env):
    """Grade every test submission in one command-line run; cache the gradebook."""
    folder = tmp_path_factory.mktemp("class")    # outside the repository
    where, packed = packed_notebooks()
    files = {}
    for name, nb in {**special_notebooks(), **packed}.items():
        nbformat.write(nb, str(folder / name))
        files[name] = folder / name
    renamed = folder / "downloads" / "Copy of 01_qkv_projections (2).ipynb"   # course metadata kept
    renamed.parent.mkdir()
    nbformat.write(solved(L01), str(renamed))
    files["renamed"] = renamed
    before = {key: sha256(path) for key, path in files.items()}

    json_out, csv_out = folder.parent / "gradebook.json", folder.parent / "gradebook.csv"
    first = str(folder / "never_ends.ipynb")   # the longest first
    proc = subprocess.run(
        [sys.executable, "-m", "helpers.grade", "--json", str(json_out), "--csv", str(csv_out),
         "--jobs", "2", "--timeout", str(BATCH_TIMEOUT), "--seed", str(SEED), first, str(folder)],
        cwd=ROOT, env=notebook_kernel_env, capture_output=True, text=True, timeout=900)
    rows = json.loads(json_out.read_text()) if json_out.exists() else []
    by_file = {Path(row["submission"]).relative_to(folder).as_posix(): row for row in rows}
    by_file["renamed"] = by_file.get("downloads/Copy of 01_qkv_projections (2).ipynb")
    with open(csv_out, newline="") as f:
        csv_rows = list(csv.DictReader(f)) if csv_out.exists() else []
    return {"proc": proc, "rows": rows, "by_file": by_file, "where": where, "files": files,
            "before": before, "csv": csv_rows, "folder": folder}


def row_of(run, file):
    assert run["proc"].returncode == 0, run["proc"].stderr
    return run["by_file"][file]


# ------------------------------------------------------------ solved, untouched, wrong
def test_a_solved_notebook_gets_full_marks_even_renamed_outside_the_repository(run):
    row = row_of(run, "renamed")
    assert row["lesson"] == L01 and row["error"] is None
    assert row["score"] == row["max_score"] == 10 * len(LESSONS[L01])
    assert all(e["passed"] for e in row["exercises"].values())


def test_an_untouched_student_notebook_gets_zero_without_error(run):
    row = row_of(run, "untouched.ipynb")
    assert row["lesson"] == L03 and row["error"] is None and row["score"] == 0
    assert set(row["exercises"]) == set(names(L03))
    for exercise in row["exercises"].values():
        assert exercise["points"] == 0 and "not attempted" in exercise["feedback"]


@pytest.mark.parametrize("lesson", list(WRONG))
def test_a_wrong_version_loses_its_exercises_points_only_with_the_checks_message(run, lesson):
    name, label = WRONG[lesson]
    row = row_of(run, f"wrong_{lesson}.ipynb")
    graded = row["exercises"][name]
    assert graded["points"] < 10 and not graded["passed"]
    assert table_message(lesson, name, label) in graded["feedback"]
    others = {other: e["points"] for other, e in row["exercises"].items() if other != name}
    assert others == {other: 10 for other in names(lesson) if other != name}


def test_the_learners_function_is_graded_even_when_a_later_cell_rebinds_the_name(run):
    # wrong_03: softmax rebound to the course's right after its check: the learner's is graded
    assert row_of(run, f"wrong_{L03}.ipynb")["exercises"]["softmax"]["points"] < 10


def test_a_cell_that_raises_does_not_stop_grading_nor_count_as_an_error(run):
    row = row_of(run, f"wrong_{L03}.ipynb")     # 1 / 0 in its third cell
    assert row["error"] is None
    assert row["exercises"]["scaled_dot_product_attention"]["points"] == 10


# ------------------------------------------------------------ the notebook's check agrees
def check_verdict(name, cell):
    """The notebook check's verdict on the function ``cell`` binds, run as a kernel runs it."""
    from IPython.core.interactiveshell import InteractiveShell

    from helpers.checking import ExerciseError
    from helpers.checks import check

    shell = InteractiveShell.instance()
    shell.user_ns.pop(name, None)
    assert shell.run_cell(cell.source).success
    fn = shell.user_ns[name]
    try:
        given = check(name, fn)
    except ExerciseError:
        return "fail"
    return "pass" if given is fn else "not attempted"


def _params(table):
    return [pytest.param(name, cell, id=f"{name}-{cell.label}") for name, cells in table.items()
            for cell in cells]


def graded(run, name, cell):
    return row_of(run, run["where"][(name, cell.label)])["exercises"][name]


@pytest.mark.parametrize("name, cell", _params(SHAPES))
def test_grade_agrees_with_the_notebooks_check_however_the_cell_is_written(run, name, cell):
    verdict = check_verdict(name, cell)
    assert verdict == cell.expected            # the table says what it means to
    result = graded(run, name, cell)
    if verdict == "pass":
        assert result["passed"] and result["points"] == 10, result["feedback"]
    else:
        assert not result["passed"] and result["points"] < 10


@pytest.mark.parametrize("name, cell", [p for p in _params(ROUTES) if p.values[1].expected])
def test_calling_the_course_answer_to_the_exercise_by_any_route_earns_zero_and_says_so(run, name, cell):
    result = graded(run, name, cell)
    assert result["points"] == 0 and not result["passed"]
    assert cell.expected in result["feedback"] and "own answer" in result["feedback"]


@pytest.mark.parametrize("name, cell", [p for p in _params(ROUTES) if not p.values[1].expected])
def test_the_lessons_functions_for_other_steps_may_be_used(run, name, cell):
    result = graded(run, name, cell)
    assert result["passed"] and result["points"] == 10, result["feedback"]


def test_a_tripped_exercise_costs_only_its_own_points(run):
    routed = {}   # file -> the exercises written another way in it (the others are solved)
    for (name, _), file in run["where"].items():
        routed.setdefault(file, set()).add(name)
    for file, written in routed.items():
        for other, result in row_of(run, file)["exercises"].items():
            if other not in written:
                assert result["passed"], (file, other, result["feedback"])


# ------------------------------------------------------------ broken submissions
def test_an_exercise_that_never_ends_costs_only_its_own_points(run):
    row = row_of(run, "never_ends.ipynb")
    assert row["error"] is None          # stopped case by case: the notebook's limit never hit
    assert row["score"] == 30 and row["max_score"] == 40
    feedback = row["exercises"]["numerical_gradient"]["feedback"]
    assert "did not return within" in feedback and "iternext()" in feedback
    assert "the rest of the notebook ran with the course's numerical_gradient" in feedback


def test_a_kernel_that_dies_keeps_what_it_earned(run):
    row = row_of(run, "kernel_dies.ipynb")
    assert "kernel died" in row["error"]
    assert row["exercises"]["softmax"]["points"] == 10
    assert "never reached" in row["exercises"]["causal_mask"]["feedback"]


def test_sys_exit_is_reported_and_grading_goes_on(run):
    row = row_of(run, "exits_and_misses_a_function.ipynb")
    assert "sys.exit" in row["error"]
    assert row["exercises"]["project_qkv"]["points"] == 10


def test_a_missing_exercise_function_is_reported_and_scores_zero(run):
    row = row_of(run, "exits_and_misses_a_function.ipynb")
    assert "cross_project_qkv is not defined" in row["error"]
    assert row["exercises"]["cross_project_qkv"]["points"] == 0


def test_cells_after_the_last_exercise_do_not_run_by_default(run):
    row = row_of(run, "exits_after_the_last_exercise.ipynb")
    assert row["error"] is None and row["score"] == 20


def test_run_all_reports_a_crash_after_the_last_exercise_with_the_same_grade(run):
    path = run["files"]["exits_after_the_last_exercise.ipynb"]
    row = runner.grade_one(path, timeout=BATCH_TIMEOUT, seed=SEED, run_all=True)
    assert "sys.exit" in row["error"]
    assert row["exercises"] == row_of(run, "exits_after_the_last_exercise.ipynb")["exercises"]


def test_a_syntax_error_in_the_exercise_cell_is_reported_and_scores_zero(run):
    row = row_of(run, "syntax_error.ipynb")
    assert "SyntaxError" in row["error"]
    assert row["exercises"]["project_qkv"]["points"] == 0
    assert "syntax error" in row["exercises"]["project_qkv"]["feedback"]
    assert row["exercises"]["cross_project_qkv"]["points"] == 10


def test_submission_files_are_byte_for_byte_unchanged(run):
    assert {key: sha256(path) for key, path in run["files"].items()} == run["before"]


def test_no_scratch_files_are_left_next_to_the_submissions(run):
    assert {p for p in run["folder"].rglob("*") if p.is_file()} == set(run["files"].values())


# ------------------------------------------------------------ outputs
def test_every_submission_gets_a_row_in_the_order_given_and_exit_status_zero(run):
    assert run["proc"].returncode == 0, run["proc"].stderr
    assert len(run["rows"]) == len(run["files"])
    assert Path(run["rows"][0]["submission"]).name == "never_ends.ipynb"   # named first


def test_every_row_records_the_runs_seed(run):
    assert {row["seed"] for row in run["rows"]} == {SEED}


def test_json_rows_have_the_contract_keys(run):
    for row in run["rows"]:
        assert set(row) == {"submission", "lesson", "score", "max_score", "error", "seed", "exercises"}
        for exercise in row["exercises"].values():
            assert set(exercise) == {"points", "max_points", "passed", "feedback"}


def test_csv_has_one_row_per_submission_and_each_exercises_points_and_feedback(run):
    assert len(run["csv"]) == len(run["rows"])
    header = list(run["csv"][0])
    present = [name for lesson in LESSONS for name in names(lesson)
               if any(name in row["exercises"] for row in run["rows"])]
    beside = [column for name in present for column in (name, FEEDBACK_COLUMN.format(name=name))]
    assert header == ["submission", "lesson", *beside, "score", "max_score", "error"]
    for line, row in zip(run["csv"], run["rows"]):
        assert line["submission"] == row["submission"] and float(line["score"]) == row["score"]
        for name in present:
            exercise = row["exercises"].get(name)
            assert line[name] == ("" if exercise is None else str(exercise["points"]))
            assert line[FEEDBACK_COLUMN.format(name=name)] == ("" if exercise is None
                                                               else exercise["feedback"])


def test_terminal_shows_a_summary_table_and_progress(run):
    out, err = run["proc"].stdout, run["proc"].stderr
    assert out.splitlines()[0].split() == ["submission", "lesson", "score", "notes"]
    for row in run["rows"]:
        assert Path(row["submission"]).name[:30] in out
    total = len(run["rows"])
    assert f"[{total}/{total}]" in err


# ------------------------------------------------------------ fresh hidden cases
def _arguments(cases):
    return [(case.args, case.kwargs) for case in cases]


def _same(a, b):
    if callable(a):   # a function argument (lesson 07's f): the same code and captured data
        inside = lambda f: [c.cell_contents for c in f.__closure__ or ()]
        return callable(b) and a.__qualname__ == b.__qualname__ and _same(inside(a), inside(b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(map(_same, a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def _hidden(name, seed):
    return EXERCISES[name].cases(hidden=True, seed=kernel.exercise_seed(seed, name))


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_hidden_cases_are_the_same_for_a_seed_and_differ_between_seeds(name):
    draw = lambda seed: _arguments(_hidden(name, seed))
    assert _same(draw(7), draw(7))
    assert not _same(draw(7), draw(8))


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_every_seeds_hidden_cases_pass_the_reference_and_name_every_catalogued_mistake(name):
    # (tests/test_catalogue.py: the same on the fixed hidden cases; here, on five runs' draws)
    exercise = EXERCISES[name]
    for seed in range(5):
        cases = _hidden(name, seed)
        report = evaluate(exercise, exercise.reference, cases)
        assert report.passed == report.total == len(cases), (seed, report.failures)
        for mistake in exercise.mistakes:
            report = evaluate(exercise, mistake.fn, cases, stop_at_first_failure=True)
            assert report.failures and mistake.message in report.failures[0], (seed, mistake.message)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_hidden_shapes_vary_between_seeds(name):
    def shape(a):       # arrays by shape; a dict (a KV cache) or a list of arrays by their shapes
        if isinstance(a, dict):
            return tuple(sorted((key, shape(value)) for key, value in a.items()))
        if isinstance(a, (list, tuple)):
            return tuple(shape(x) for x in a)
        return np.shape(a) if isinstance(a, np.ndarray) else a

    def shapes(seed):   # array arguments by shape, numbers (sizes, head counts) by value
        return tuple(shape(a) for case in _hidden(name, seed) for a in case.args)
    assert len({shapes(seed) for seed in range(10)}) > 1


def test_the_same_seed_grades_the_same_and_another_seed_draws_other_cases():
    def wrong(X, W_q, W_k, W_v):   # off by one in Q: the feedback quotes the numbers
        return X @ W_q + 1, X @ W_k, X @ W_v

    first = kernel.grade_function("project_qkv", wrong, seed=1)
    assert kernel.grade_function("project_qkv", wrong, seed=1) == first
    assert kernel.grade_function("project_qkv", wrong, seed=2)["failures"] != first["failures"]


def test_without_seed_each_run_draws_a_fresh_one_and_prints_it(tmp_path):
    submission = tmp_path / "nothing.ipynb"   # no lesson: graded without a kernel
    nbformat.write(_nb("x = 1"), str(submission))
    seeds = []
    for i in range(2):
        out = tmp_path / f"{i}.json"
        proc = grade_cli("--json", str(out), str(submission))
        seeds.append(json.loads(out.read_text())[0]["seed"])
        assert f"--seed {seeds[-1]}" in proc.stderr
    assert seeds[0] != seeds[1]


# ------------------------------------------------------------ a hang, Ctrl-C: nothing left behind
def _tagged(tag):
    """Process ids whose environment carries ``tag`` (the grader's children inherit it)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if tag.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:   # gone meanwhile
            pass
    return found


def _sleeping(tag):
    """Whether the notebook's child process (``sleep 1000``) runs."""
    for pid in _tagged(tag):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep"):
                return True
        except OSError:
            pass
    return False


def _wait_until(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


# A killed process is gone within milliseconds on a quiet machine; on a loaded one it may
# wait seconds for a core. What a leak leaves behind (``sleep 1000``) lives far longer.
GRACE_SECONDS = 30


def _left_behind(tag):
    """``pid state command`` for each process still carrying ``tag``."""
    lines = []
    for pid in _tagged(tag):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:   # gone meanwhile
            continue
        lines.append(f"{pid} {state} {command.strip()[:120]}")
    return lines


def _all_gone(tag):
    """Whether every process carrying ``tag`` is gone within the grace period (else say which)."""
    if _wait_until(lambda: not _tagged(tag), GRACE_SECONDS):
        return True
    left = _left_behind(tag)
    assert not left, "processes left behind:\n" + "\n".join(left)
    return True


@pytest.fixture
def spawning_notebook(tmp_path):
    """Lesson 01, solved, with a cell after the first check that starts a child process, then hangs."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("needs /proc to find the processes left behind")
    nb = solved(L01)
    spawned = tmp_path / "spawned"            # written once the child process is running
    insert_code(nb, check_cell(nb, "project_qkv") + 1,
                "import subprocess, time\nsubprocess.Popen(['sleep', '1000'])\n"
                f"open({str(spawned)!r}, 'w').close()\ntime.sleep(1000)")
    path = tmp_path / "spawns.ipynb"
    nbformat.write(nb, str(path))
    tag = f"COURSE_GRADER_TEST={uuid.uuid4().hex}"
    env = dict(os.environ, COURSE_GRADER_TEST=tag.split("=", 1)[1])
    return path, tag, env


def test_a_hang_times_out_kills_the_kernel_and_all_it_started_and_keeps_what_it_earned(spawning_notebook):
    path, tag, env = spawning_notebook
    out = path.parent / "grades.json"
    proc = subprocess.run([sys.executable, "-m", "helpers.grade", "--timeout", "15", "--json",
                           str(out), str(path)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (path.parent / "spawned").exists(), "the notebook timed out before it started its child"
    [row] = json.loads(out.read_text())
    assert "timed out after 15 s" in row["error"]
    assert row["exercises"]["project_qkv"]["points"] == 10
    assert "never reached" in row["exercises"]["cross_project_qkv"]["feedback"]
    assert _all_gone(tag)


def _ctrl_c_as_in_a_terminal():
    """In the grader's process: SIGINT's default action, even when the test run ignores it.

    A command started in the background by a shell without job control (``make test &``
    in a script) ignores SIGINT, and so would the grader it starts.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_the_run_and_kills_every_kernel(spawning_notebook):
    path, tag, env = spawning_notebook
    second = path.with_name("spawns too.ipynb")     # two kernels at once
    second.write_bytes(path.read_bytes())
    grader = subprocess.Popen([sys.executable, "-m", "helpers.grade", "--jobs", "2", str(path), str(second)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, preexec_fn=_ctrl_c_as_in_a_terminal)
    try:
        # wait for the notebook's child process: then the kernel is deep in the notebook
        assert _wait_until(lambda: _sleeping(tag), 120)
        grader.send_signal(signal.SIGINT)
        _, err = grader.communicate(timeout=60)
    finally:
        grader.kill()
    assert grader.returncode == 130 and "interrupted" in err
    assert _all_gone(tag)


# Ctrl-C's SIGINT goes to whichever thread the operating system picks; this sends it to
# a thread of the pool that runs the notebook, not to the main thread.
SIGINT_TO_A_POOL_THREAD = textwrap.dedent('''
    import signal, sys, threading
    from helpers.instructor.grading import runner

    def press_ctrl_c_in_a_pool_thread():
        sys.stdin.readline()          # the test says when the notebook is deep in its run
        grader = next(t for t in threading.enumerate() if t.name.startswith("grader"))
        signal.pthread_kill(grader.ident, signal.SIGINT)

    threading.Thread(target=press_ctrl_c_in_a_pool_thread, daemon=True).start()
    try:
        runner.grade_many([sys.argv[1]], timeout=600)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
''')


def test_ctrl_c_received_by_a_pool_thread_still_stops_the_run(spawning_notebook):
    path, tag, env = spawning_notebook
    grader = subprocess.Popen([sys.executable, "-c", SIGINT_TO_A_POOL_THREAD, str(path)],
                              cwd=ROOT, env=env, stdin=subprocess.PIPE, text=True,
                              preexec_fn=_ctrl_c_as_in_a_terminal)
    try:
        assert _wait_until(lambda: _sleeping(tag), 120)
        grader.stdin.write("go\n")
        grader.stdin.flush()
        grader.wait(timeout=60)
    finally:
        grader.kill()
    assert grader.returncode == 130
    assert _all_gone(tag)


# ------------------------------------------------------------ reading a submission, no kernel
def grade_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "helpers.grade", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, message", [
    ((), "no submissions given"),
    (("no/such/file.ipynb",), "no such file or folder"),
    (("README.md",), "not a notebook"),
    (("--jobs", "0", "notebooks"), "--jobs must be at least 1"),
    (("--timeout", "0", "notebooks"), "--timeout must be positive"),
    (("--json", "no/such/folder/grades.json", "notebooks"), "does not exist"),
])
def test_usage_errors_exit_nonzero_with_a_clear_message(args, message):
    proc = grade_cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_empty_folder_is_a_usage_error(tmp_path):
    proc = grade_cli(str(tmp_path))
    assert proc.returncode == 2 and "holds no notebooks" in proc.stderr


def _nb(*sources, lesson=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    if lesson:
        nb.metadata["course"] = {"lesson": lesson}
    return nb


@pytest.mark.parametrize("nb, path, expected", [
    (_nb("x = 1", lesson=L01), "anything.ipynb", L01),
    (_nb("%matplotlib inline\ndef project_qkv(X, W_q, W_k, W_v):\n    pass"), "a.ipynb", L01),
    (_nb("x = 1"), "Copy of 01_qkv_projections (2).ipynb", L01),
    (_nb("x = 1"), "untitled.ipynb", None),
    (_nb("x = 1", lesson="99_not_a_lesson"), "untitled.ipynb", None),
], ids=["metadata", "defined functions", "file name", "nothing", "unknown metadata"])
def test_recognise_lesson(nb, path, expected):
    assert notebook.recognise_lesson(nb, path) == expected


BINDINGS = [  # (cell source, names it binds in the notebook)
    ("def f(x):\n    return x", ["f"]),
    ("!ls\n%matplotlib inline\ndef f(x):\n    return x\nclass C: pass", ["f", "C"]),
    ("try:\n    def f(x):\n        return x\nexcept ImportError:\n    f = None", ["f"]),
    ("if True:\n    def f(x):\n        return x\nelse:\n    def g(x):\n        return x", ["f", "g"]),
    ("with open('x') as fh:\n    def f(x):\n        return x", ["fh", "f"]),
    ("def outer():\n    def inner():\n        pass\n    local = 1", ["outer"]),
    ("g = lambda x: x\nf = check('f', f)", ["g"]),
    ("import functools\nf = functools.partial(max, 0)", ["functools", "f"]),
    ("f, (g, *h) = 1, (2, 3)", ["f", "g", "h"]),
    ("from helpers.reference import softmax as f\nimport numpy.linalg", ["f", "numpy"]),
    ("%%time\ndef f(x):\n    return x", ["f"]),
    ("%%bash\necho $((1 + 1))", []),
    ("x: int = 3\ny: int", ["x"]),
]


@pytest.mark.parametrize("source, names_", BINDINGS, ids=[s.split("\n")[0] for s, _ in BINDINGS])
def test_bound_names_finds_every_binding_at_notebook_level(source, names_):
    assert notebook.bound_names(source) == (names_, None)


def test_bound_names_reports_a_syntax_error_and_still_finds_the_def():
    found, error = notebook.bound_names("def g(x):\n    return x x")
    assert found == ["g"] and error.startswith("SyntaxError")


@pytest.mark.parametrize("sources, expected", [
    (["def f(): pass", "f = check('f', f)", "def f(): return 1"], {"f": 0}),
    (["def f(): pass", "def f(): return 1", "f = check('f', f)"], {"f": 1}),
    (["def f(): pass", "f = check('f', f)", "def f(): return 1", "f = check('f', f)"], {"f": 2}),
    (["x = 1", "def f(): pass", "def f(): return 1"], {"f": 1}),
    (["x = 1"], {}),
], ids=["rebound after the check", "two drafts before the check", "checked again",
        "no check cell: the first", "not bound"])
def test_the_exercise_cell_is_the_last_binding_before_the_last_check(sources, expected):
    assert notebook.exercise_cells(_nb(*sources), ["f"]) == expected


@pytest.mark.parametrize("folder", ["notebooks", "solutions"])
@pytest.mark.parametrize("lesson", [lesson for lesson in LESSONS if LESSONS[lesson]])
def test_every_lessons_exercise_is_graded_right_after_its_cell_before_its_check(folder, lesson):
    nb = read(ROOT / folder / f"{lesson}.ipynb")
    found = notebook.exercise_cells(nb, names(lesson))
    assert set(found) == set(names(lesson))
    run_nb, numbers = notebook.instrument(nb, names(lesson), lambda name, number: f"# {name} {number}")
    graders = [i for i, n in enumerate(numbers) if n is None]
    assert [run_nb.cells[i].source for i in graders] == [
        f"# {name} {found[name] + 1}" for name in sorted(found, key=found.get)]
    for i in graders:
        name = run_nb.cells[i].source.split()[1]
        assert numbers[i - 1] == found[name] + 1 < check_cell(nb, name) + 1
