"""One source of truth: the student notebooks are generated from the solutions.

Fails when a committed student notebook is out of date, leaks solution text or
instructor-only cells, or when any notebook was committed with outputs.
"""

import ast
from pathlib import Path

import nbformat
import pytest

from helpers import course
from helpers.exercises import LESSONS
from helpers.instructor import student

ROOT = Path(__file__).resolve().parents[1]
NAMES = [f"{lesson}.ipynb" for lesson in course.lessons()]


def read(path):
    return nbformat.read(str(path), as_version=4)


def test_there_are_solution_notebooks():
    assert NAMES, "no notebooks in solutions/"


def test_every_lesson_has_a_student_notebook():
    assert {p.name for p in (ROOT / "notebooks").glob("*.ipynb")} == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_is_up_to_date(name):
    committed = (ROOT / "notebooks" / name).read_text(encoding="utf-8")
    expected = student.student_text(ROOT / "solutions" / name)
    if committed != expected:
        cells = student.differing_cells(committed, expected)
        pytest.fail(f"notebooks/{name} is not what solutions/{name} generates: cells "
                    f"{', '.join(map(str, cells[:10]))}{' ...' if len(cells) > 10 else ''} differ "
                    f"(source, outputs or count). A maintainer who edited solutions/ regenerates it "
                    f"with `make student`, which never overwrites a notebook holding someone's edits; "
                    f"a learner's lessons are in my-notebooks/ (make lab), which this test does not read.",
                    pytrace=False)


@pytest.mark.parametrize("folder", ["notebooks", "solutions"])
@pytest.mark.parametrize("name", NAMES)
def test_notebook_has_no_outputs(folder, name):
    nb = read(ROOT / folder / name)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert not dirty, f"{folder}/{name}: cells {dirty} have outputs (clear them before committing)"


def _solution_lines(nb):
    lines = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        src = cell.source.splitlines()
        for _, begin, end, _ in student.solution_blocks(cell.source):
            lines += [l.strip() for l in src[begin + 1:end]
                      if l.strip() and not l.strip().startswith("#")]
    return lines


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_carries_no_solution_text(name):
    solution, stud = read(ROOT / "solutions" / name), read(ROOT / "notebooks" / name)
    exercise_cells = [c.source for c in stud.cells if "NotImplementedError" in c.source]
    text = "\n".join(c.source for c in stud.cells)
    assert student.BEGIN not in text and student.END not in text
    for line in _solution_lines(solution):
        for cell in exercise_cells:
            assert line not in cell, f"solution line {line!r} leaked into notebooks/{name}"
    for cell in solution.cells:
        if student.INSTRUCTOR_TAG in cell.metadata.get("tags", []):
            assert cell.source not in text, "an instructor-only cell leaked"


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_stubs_every_exercise_of_its_lesson(name):
    nb = read(ROOT / "notebooks" / name)
    expected = [e.name for e in LESSONS.get(Path(name).stem, [])]   # a lesson may have none
    assert nb.metadata["course"] == {"lesson": Path(name).stem, "role": "student",
                                     "exercises": expected}


@pytest.mark.parametrize("name", NAMES)
def test_stubs_define_silently_and_raise_when_called(name):
    nb = read(ROOT / "notebooks" / name)
    for exercise in nb.metadata["course"]["exercises"]:
        cell = next(c for c in nb.cells if f"def {exercise}(" in c.source)
        namespace = {}
        exec(compile(cell.source, name, "exec"), namespace)   # defining raises nothing
        n_args = len(ast.parse(cell.source).body[0].args.args)
        with pytest.raises(NotImplementedError):   # nbgrader's own stub: no message
            namespace[exercise](*[None] * n_args)


SOURCE = '''def f(x):
    """doc"""
    ### BEGIN SOLUTION
    y = x + 1
    return y
    ### END SOLUTION
'''


def test_stub_source_replaces_block_and_keeps_signature():
    new, names = student.stub_source(SOURCE)
    assert names == ["f"]
    assert "y = x + 1" not in new and new.startswith('def f(x):\n    """doc"""')
    # nbgrader's stub (ClearSolutions.code_stub), so that its release matches notebooks/
    assert new.endswith('\n    # YOUR CODE HERE\n    raise NotImplementedError()')


@pytest.mark.parametrize("bad, message", [
    ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "must sit inside a function"),
    ("def f():\n    ### BEGIN SOLUTION\n    pass", "without ### END SOLUTION"),
    ("def f():\n    pass\n    ### END SOLUTION", "without ### BEGIN SOLUTION"),
])
def test_malformed_solution_blocks_are_reported(bad, message):
    with pytest.raises(ValueError, match=message):
        student.stub_source(bad)


def test_generation_drops_instructor_cells_and_outputs():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("secret = 42", metadata={"tags": ["instructor"]}),
                nbformat.v4.new_code_cell("print(1)", execution_count=3,
                                          outputs=[nbformat.v4.new_output("stream", text="1")])]
    out = student.make_student(nb, "01_qkv_projections")
    assert [c.source for c in out.cells] == ["print(1)"]
    assert out.cells[0].outputs == [] and out.cells[0].execution_count is None
    assert len(nb.cells) == 2, "the solution notebook itself must not change"
