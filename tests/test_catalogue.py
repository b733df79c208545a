"""The whole exercise catalogue, as tables: one row per exercise (or per catalogued mistake).

What every lesson's catalogue (``helpers/exercises/lessonNN.py``) must do, checked the
same way for all of them, so a new lesson's catalogue is held to it without a new test:

- each catalogued mistake, fed to the check, is named by its own message, on the
  visible cases (what the notebook's check shows) and on the hidden ones (what the
  grader shows first) -- unless a learner-style wrong version of the tables gets that
  message (tests/test_checks_versions.py shows it then, on both);
- each exercise belongs to a lesson with a notebook in solutions/ and notebooks/, and
  helpers.reference exports its reference under the exercise's name;
- the notebook globals a catalogue relies on (a learner's function that reads the
  notebook's ``d_k`` instead of its input's) are the ones the solution notebook has at
  the checks that follow their definition: read from the notebook's cells here, and compared.

What is particular to one lesson (wrong versions written the way a learner would, and
the messages they must get) stays in ``tests/test_checks_lessonNN.py``.
"""

import ast
import re
from pathlib import Path

import nbformat
import pytest

from helpers import course, exercises, reference
from helpers.checking import evaluate
from helpers.checks import check
from helpers.exercises import EXERCISES
from versions import named_by_a_wrong_version

ROOT = Path(__file__).resolve().parents[1]
NAMES = list(EXERCISES)
MISTAKES = [(name, index) for name in NAMES for index in range(len(EXERCISES[name].mistakes))
            if not named_by_a_wrong_version(name, index)]


# ------------------------------------------------------------ every catalogued mistake
@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("name, index", MISTAKES)
def test_a_catalogued_mistake_is_named_by_its_own_message(name, index, hidden):
    exercise = EXERCISES[name]
    mistake = exercise.mistakes[index]
    report = evaluate(exercise, mistake.fn, exercise.cases(hidden), stop_at_first_failure=True)
    assert report.failures, "the mistake passes every case: the cases cannot tell it from the reference"
    assert mistake.message in report.failures[0], \
        f"mistake {index} ({mistake.message[:50]}...) was reported as: {report.failures[0]}"


# ------------------------------------------------------------ every exercise
@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
@pytest.mark.parametrize("name", NAMES)
def test_an_exercise_belongs_to_a_lesson_notebook(name, folder):
    lesson = EXERCISES[name].lesson
    assert (ROOT / folder / f"{lesson}.ipynb").exists(), f"{name}: no {folder}/{lesson}.ipynb"


@pytest.mark.parametrize("module", exercises.lesson_modules(), ids=lambda m: m.__name__)
def test_a_lesson_module_declares_its_lesson_and_numbers_it_alike(module):
    number = module.__name__[-2:]                       # helpers.exercises.lesson03 -> "03"
    assert module.LESSON in course.lessons()
    assert module.LESSON.startswith(f"{number}_")
    assert {exercise.lesson for exercise in module.EXERCISES} == {module.LESSON}


def test_lessons_are_the_solution_notebooks_in_order(tmp_path):
    for name in ["02_b.ipynb", "10_c.ipynb", "01_a.ipynb", "notes.md"]:
        (tmp_path / name).write_text("{}")
    assert course.lessons(tmp_path) == ["01_a", "02_b", "10_c"]


def test_the_registry_lists_the_lessons_with_exercises_in_lesson_order():
    assert list(exercises.LESSONS) == [lesson for lesson in course.lessons() if lesson in exercises.LESSONS]


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_is_exported_under_the_exercise_name(name):
    assert name in reference.__all__
    assert EXERCISES[name].reference is getattr(reference, name)


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("name", NAMES)
def test_the_reference_passes_its_own_cases(name, hidden):
    exercise = EXERCISES[name]
    report = evaluate(exercise, exercise.reference, exercise.cases(hidden))
    assert report.ok, report.failures


@pytest.mark.parametrize("name", NAMES)
def test_the_hidden_cases_differ_from_the_visible_ones(name):
    exercise = EXERCISES[name]
    assert [c.label for c in exercise.cases(True)] != [c.label for c in exercise.cases(False)]


@pytest.mark.parametrize("name", NAMES)
def test_not_attempted_gives_a_notice_and_the_reference(name, capsys):
    def stub(*args, **kwargs):
        raise NotImplementedError(f"{name}: not written yet")

    assert check(name, stub) is EXERCISES[name].reference
    assert "not attempted yet" in capsys.readouterr().out


def test_an_unknown_exercise_name_is_a_clear_error():
    with pytest.raises(ValueError, match="no exercise called 'projectqkv'"):
        check("projectqkv", lambda *args: None)


# ------------------------------------------------------------ the notebook globals
#: Marks a global bound in a way these tests do not evaluate (a loop, an import, a call ...).
UNREADABLE = "unreadable"


def _bindings(statements):
    """``(target, value)`` for each statement binding names at module level, in order.

    Descends into ``if``/``for``/``while``/``with``/``try`` blocks (they bind globals
    too) but not into functions or classes. ``value`` is the expression assigned, or
    None when the statement binds something else (a loop variable, an import ...).
    """
    for node in statements:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield target, node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            yield node.target, None
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    yield item.optional_vars, None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                yield ast.Name((alias.asname or alias.name).split(".")[0]), None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield ast.Name(node.name), None
            continue                                   # its body binds local names only
        for block in ("body", "orelse", "handlers", "finalbody"):
            yield from _bindings(getattr(node, block, []))


def _assign(target, value, known):
    """Record in ``known`` what ``target = value`` binds (UNREADABLE where it cannot tell)."""
    if isinstance(target, ast.Name):
        readable = {k: v for k, v in known.items() if v is not UNREADABLE}
        try:   # the course's own solution notebook: numbers and arithmetic on those read so far
            known[target.id] = eval(compile(ast.Expression(value), "<cell>", "eval"),
                                    {"__builtins__": {}}, readable)
        except Exception:   # None (not an assignment), a call, a name not read ...
            known[target.id] = UNREADABLE
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [None] * len(target.elts)
        for part, part_value in zip(target.elts, values):
            _assign(part, part_value, known)
    elif isinstance(target, ast.Starred):
        _assign(target.value, None, known)


def globals_before_check(lesson, name):
    """The module-level names the solution notebook binds before the cell checking ``name``."""
    nb = nbformat.read(str(ROOT / "solutions" / f"{lesson}.ipynb"), as_version=4)
    check_call = re.compile(rf"""\bcheck\(\s*["']{name}["']""")
    known = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if check_call.search(cell.source):
            return known
        code = "\n".join(line for line in cell.source.splitlines()
                         if not line.lstrip().startswith(("%", "!")))   # IPython magics
        for target, value in _bindings(ast.parse(code).body):
            _assign(target, value, known)
    raise AssertionError(f"solutions/{lesson}.ipynb has no cell that calls check({name!r}, ...)")


GLOBALS = [(module.LESSON, variable, value) for module in exercises.lesson_modules()
           for variable, value in getattr(module, "NOTEBOOK_GLOBALS", {}).items()]


def test_some_catalogues_rely_on_notebook_globals():
    assert {variable for _, variable, _ in GLOBALS} >= {"d_k", "d_model", "num_heads", "d_head"}


@pytest.mark.parametrize("lesson, variable, value", GLOBALS)
def test_a_notebook_global_the_catalogue_relies_on_is_the_notebooks(lesson, variable, value):
    # At the check of every exercise of the lesson that comes after the notebook defines it.
    seen = {}
    for exercise in exercises.LESSONS[lesson]:
        found = globals_before_check(lesson, exercise.name)
        if variable in found:
            seen[exercise.name] = found[variable]
    assert seen, f"solutions/{lesson}.ipynb defines no {variable} before any exercise's check"
    wrong = {name: found for name, found in seen.items() if found != value}
    assert not wrong, (f"solutions/{lesson}.ipynb has {variable} = {wrong} at those checks; "
                       f"the catalogue's NOTEBOOK_GLOBALS says {value!r}")


@pytest.mark.parametrize("source, expected", [
    ("d_model, d_k = 8, 4", {"d_model": 8, "d_k": 4}),
    ("d_model, num_heads = 512, 8\nd_head = d_model // num_heads", {"d_model": 512, "num_heads": 8,
                                                                     "d_head": 64}),
    ("d_k = 4\nfor d_k in dks:\n    pass", {"d_k": UNREADABLE}),
    ("d_k = 4\ndef f(Q):\n    d_k = Q.shape[-1]\n    return d_k", {"d_k": 4, "f": UNREADABLE}),
    ("d_k = X.shape[1]", {"d_k": UNREADABLE}),
    ("import numpy as np\nif True:\n    n = 3", {"np": UNREADABLE, "n": 3}),
])
def test_notebook_globals_are_read_from_module_level_bindings_only(source, expected):
    known = {}
    for target, value in _bindings(ast.parse(source).body):
        _assign(target, value, known)
    assert known == expected
