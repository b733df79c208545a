"""The frame of every lesson: numbered sections without a gap, and every exercise introduced.

Two defects a lesson can get from an edit that deletes or moves a markdown cell, and that no
other test sees (lesson 09 lost its section 2, and with it the cell that introduced its first
exercise):

- the section headings ``## 1. ...``, ``## 2. ...`` must count 1, 2, 3, ... with no number
  skipped and none repeated (in the solution and in the student notebook);
- in the student notebook, every exercise stub (a code cell that defines a function whose
  body raises ``NotImplementedError``) must come after a markdown cell that names it as an
  exercise: the last markdown cell before the stub says "Exercise" and names the function
  in code, e.g. ``### Exercise: `rope```.

The rules are plain functions (``section_problems``, ``exercise_problems``), tested here on
notebooks with a planted gap, a planted repeat and an exercise whose introduction is gone.
"""

import ast
import re
from pathlib import Path

import nbformat
import pytest

from helpers import course

ROOT = Path(__file__).resolve().parents[1]
HEADING = re.compile(r"^## (\d+)\.\s", re.MULTILINE)


def section_numbers(nb):
    """The numbers of the ``## N. ...`` headings, in the order the notebook shows them."""
    return [int(m.group(1)) for cell in nb.cells if cell.cell_type == "markdown"
            for m in HEADING.finditer(cell.source)]


def section_problems(nb):
    """What is wrong with the section numbering: a list of sentences, empty when it counts 1, 2, 3, ..."""
    numbers, problems = section_numbers(nb), []
    for expected, (index, got) in zip(range(1, len(numbers) + 1), enumerate(numbers)):
        if got != expected:
            before = f"after section {numbers[index - 1]}" if index else "first"
            problems.append(f"section {got} comes {before}: expected section {expected}")
            break                                            # one message: the rest follows from it
    return problems


def _raises_not_implemented(statement):
    return (isinstance(statement, ast.Raise) and statement.exc is not None
            and "NotImplementedError" in ast.unparse(statement.exc))


def exercise_stubs(nb):
    """``(cell index, function name)`` of every function whose body raises NotImplementedError."""
    stubs = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:                                  # a cell with IPython magics: no stub
            continue
        stubs += [(index, node.name) for node in tree.body if isinstance(node, ast.FunctionDef)
                  and any(_raises_not_implemented(statement) for statement in node.body)]
    return stubs


def names_exercise(markdown, name):
    """Whether a markdown text marks an exercise ("Exercise") and names ``name`` in code."""
    return (re.search(r"\bexercises?\b", markdown, re.IGNORECASE) is not None
            and re.search(rf"`{re.escape(name)}[`(]", markdown) is not None)


def exercise_problems(nb):
    """Every stub whose last markdown cell before it does not name it as an exercise."""
    problems = []
    for index, name in exercise_stubs(nb):
        before = [c for c in nb.cells[:index] if c.cell_type == "markdown"]
        if not before or not names_exercise(before[-1].source, name):
            problems.append(f"cell {index}: the stub `{name}` has no markdown cell before it that "
                            f"names it as an exercise (e.g. \"### Exercise: `{name}`\")")
    return problems


def read(folder, lesson):
    return nbformat.read(ROOT / folder / f"{lesson}.ipynb", as_version=4)


# ------------------------------------------------------------------ every lesson
@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
@pytest.mark.parametrize("lesson", course.lessons())
def test_section_headings_count_up_from_one_without_a_gap(lesson, folder):
    nb = read(folder, lesson)
    assert section_numbers(nb), f"{folder}/{lesson}: no '## 1. ...' heading at all"
    assert section_problems(nb) == [], f"{folder}/{lesson}: {section_problems(nb)}"


#: Lessons whose student notebook breaks the exercise rule (none today). Strict: a listed lesson
#: that is fixed fails the test, so that its entry is removed here.
UNINTRODUCED_TODAY = {}


def lessons_with_known_defects(known):
    return [pytest.param(lesson, marks=pytest.mark.xfail(strict=True, reason=known[lesson]))
            if lesson in known else lesson for lesson in course.lessons()]


@pytest.mark.parametrize("lesson", lessons_with_known_defects(UNINTRODUCED_TODAY))
def test_every_exercise_stub_is_introduced_as_an_exercise(lesson):
    nb = read("notebooks", lesson)
    assert exercise_problems(nb) == [], f"notebooks/{lesson}: {exercise_problems(nb)}"


@pytest.mark.parametrize("lesson", course.lessons())
def test_the_student_notebook_has_the_solution_headings(lesson):
    assert section_numbers(read("notebooks", lesson)) == section_numbers(read("solutions", lesson))


# ------------------------------------------------------------------ the rules themselves
def notebook(*cells):
    """A notebook from ``("md" | "code", source)`` pairs."""
    make = {"md": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    return nbformat.v4.new_notebook(cells=[make[kind](source) for kind, source in cells])


STUB_SOURCE = 'def rope(x, positions):\n    """Rotate."""\n    raise NotImplementedError()\n'


def test_continuous_headings_pass():
    nb = notebook(("md", "# Lesson\n## 1. One"), ("md", "## 2. Two\n### 2.1 not counted"),
                  ("md", "## 3. Three"))
    assert section_problems(nb) == []


@pytest.mark.parametrize("numbers, expected", [
    ((1, 3, 4), "section 3 comes after section 1: expected section 2"),     # lesson 09's gap
    ((1, 2, 2, 3), "section 2 comes after section 2: expected section 3"),  # a repeat
    ((2, 3), "section 2 comes first: expected section 1"),
])
def test_a_planted_gap_or_repeat_is_reported(numbers, expected):
    nb = notebook(*[("md", f"## {k}. Part {k}") for k in numbers])
    assert section_problems(nb) == [expected]


def test_lesson_09_with_a_section_deleted_fails_the_rule():
    nb = read("solutions", "09_position")
    nb.cells = [c for c in nb.cells if not (c.cell_type == "markdown" and "## 2. " in c.source)]
    assert section_problems(nb), "deleting section 2's cell went unnoticed"


def test_an_introduced_stub_passes():
    nb = notebook(("md", "### Exercise: `rope`\n\nWrite it."), ("code", STUB_SOURCE))
    assert exercise_stubs(nb) == [(1, "rope")]
    assert exercise_problems(nb) == []


@pytest.mark.parametrize("markdown", [
    "Some text about rotations.",                         # the introduction is gone
    "### Exercise: `rotary_attention`",                   # it introduces another exercise
    "The `rope` function rotates pairs.",                 # names it, not as an exercise
])
def test_a_stub_without_its_introduction_is_reported(markdown):
    nb = notebook(("md", markdown), ("code", STUB_SOURCE))
    assert len(exercise_problems(nb)) == 1


def test_a_stub_with_no_markdown_before_it_is_reported():
    assert len(exercise_problems(notebook(("code", STUB_SOURCE)))) == 1


def test_a_function_that_raises_only_on_bad_input_is_not_a_stub():
    source = "def f(x):\n    if x < 0:\n        raise ValueError(x)\n    return x\n"
    assert exercise_stubs(notebook(("code", source))) == []
