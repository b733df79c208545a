"""Generate the student notebooks from the solution notebooks.

    python -m helpers.instructor.student            # write notebooks/ from solutions/
    python -m helpers.instructor.student --check    # exit 1 if notebooks/ is out of date

The solution notebooks are the single source of every lesson. A student notebook
is its solution with:

- every block between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (nbgrader's
  markers) replaced by a stub that raises ``NotImplementedError`` naming the
  exercise when the function is *called* (defining it raises nothing);
- every cell tagged ``instructor`` dropped;
- every output and execution count cleared;
- ``metadata.course`` stamped with the lesson, its exercises and ``"role": "student"``
  (the grader reads it to recognise a submission's lesson).
"""

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
INSTRUCTOR_TAG = "instructor"
ROOT = Path(__file__).resolve().parents[2]

_DEF = re.compile(r"^(\s*)def\s+([A-Za-z_]\w*)\s*\(")


def solution_blocks(source):
    """The solution blocks of a cell's source.

    Returns
    -------
    list of (function_name, begin_line, end_line, indent)
        Line numbers are 0-based and point at the marker lines.

    Raises
    ------
    ValueError
        For unbalanced markers, or a block that is not inside a function (a stub
        there would break "Run All").
    """
    lines = source.splitlines()
    blocks, begin = [], None
    for i, line in enumerate(lines):
        if line.strip() == BEGIN:
            if begin is not None:
                raise ValueError(f"line {i + 1}: {BEGIN} inside another solution block")
            begin = i
        elif line.strip() == END:
            if begin is None:
                raise ValueError(f"line {i + 1}: {END} without {BEGIN}")
            indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
            name = None
            for j in range(begin - 1, -1, -1):
                match = _DEF.match(lines[j])
                if match and len(match.group(1)) < len(indent):
                    name = match.group(2)
                    break
            if name is None:
                raise ValueError(f"line {begin + 1}: a solution block must sit inside a function")
            blocks.append((name, begin, i, indent))
            begin = None
    if begin is not None:
        raise ValueError(f"line {begin + 1}: {BEGIN} without {END}")
    return blocks


def stub_source(source):
    """Replace each solution block of ``source`` by a stub; return (new_source, names)."""
    lines = source.splitlines()
    blocks = solution_blocks(source)
    names = []
    for name, begin, end, indent in reversed(blocks):
        stub = [f"{indent}# YOUR CODE HERE",
                f'{indent}raise NotImplementedError("{name}: not written yet. '
                f'Replace this line with your code.")']
        lines[begin:end + 1] = stub
        names.append(name)
    return "\n".join(lines), list(reversed(names))


def make_student(solution, lesson):
    """Return the student version of a solution notebook (the input is not changed).

    Parameters
    ----------
    solution : nbformat.NotebookNode
    lesson : str
        The lesson's file stem, e.g. ``"01_qkv_projections"``.
    """
    nb = copy.deepcopy(solution)
    cells, exercises = [], []
    for cell in nb.cells:
        if INSTRUCTOR_TAG in cell.get("metadata", {}).get("tags", []):
            continue
        if cell.cell_type == "code":
            cell.source, names = stub_source(cell.source)
            exercises += names
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
        cells.append(cell)
    nb.cells = cells
    nb.metadata["course"] = {"lesson": lesson, "role": "student", "exercises": exercises}
    return nb


def student_text(solution_path):
    """The exact text of the student notebook generated from ``solution_path``."""
    solution = nbformat.read(str(solution_path), as_version=4)
    student = make_student(solution, Path(solution_path).stem)
    return nbformat.writes(student) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m helpers.instructor.student",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--solutions", type=Path, default=ROOT / "solutions")
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a student notebook is missing or out of date")
    args = parser.parse_args(argv)
    stale = []
    for path in sorted(args.solutions.glob("*.ipynb")):
        target = args.notebooks / path.name
        text = student_text(path)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale.append(target)
        if not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target}")
    if args.check and stale:
        print("out of date (run `make student`): " + ", ".join(str(p) for p in stale))
        return 1
    if not stale:
        print("student notebooks are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
