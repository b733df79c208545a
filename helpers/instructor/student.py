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

Both versions open the same way, written from the one repository address in
:mod:`helpers.course`: an "Open in Colab" badge in the first markdown cell (opening
that very notebook) and the setup cell as the first code cell, out of the reader's
way (collapsed in JupyterLab, a form in Colab). A lesson's closing "**Next:**" link
gets an "open it in Colab" link beside it. ``main`` refreshes all three in
``solutions/`` (in place, only where they differ) before it writes ``notebooks/``, so
changing the address is: edit ``helpers/course.py``, ``make student``.
"""

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

from helpers import course

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
INSTRUCTOR_TAG = "instructor"
ROOT = course.ROOT

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


_BADGE = re.compile(r"^\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)[ \t]*$", re.MULTILINE)
# "**Next:** [Lesson 02 — ...](02_scaled_scores.ipynb)", with or without the Colab link that
# follows it once refreshed; whatever comes after (": the backward pass ...") is kept
_NEXT = re.compile(r"^\*\*Next:\*\* \[(?P<text>[^\]]+)\]\((?P<target>[\w.-]+\.ipynb)\)"
                   r"(?: \(\[open it in Colab\]\([^)]*\)\))?(?P<rest>.*)$", re.MULTILINE)
_SETUP_STARTS = ("# Setup", "# @title Setup")   # the setup cell, as written now or before


def refresh_front_matter(nb, path):
    """Write the Colab badge and the setup cell into ``nb`` (in place); return ``nb``.

    Parameters
    ----------
    nb : nbformat.NotebookNode
    path : str
        The notebook's path inside the repository, e.g. ``"notebooks/01_qkv_projections.ipynb"``:
        the badge opens that file in Colab.

    The badge goes into the first markdown cell, replacing an existing badge line or,
    if there is none, right after the cell's first line (the lesson's title). The
    setup cell is the first code cell when it starts with the setup comment; its
    source is replaced. Otherwise a setup cell is inserted before the first code cell.
    Either way it gets :data:`helpers.course.SETUP_METADATA` (collapsed in JupyterLab,
    a form in Colab). Every "**Next:** [text](NN_name.ipynb)" line is rewritten by
    :func:`helpers.course.next_lesson_line`: the relative link and a Colab link.
    """
    badge = course.colab_badge(path)
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    markdown = next((c for c in nb.cells[:first_code] if c.cell_type == "markdown"), None)
    if markdown is None:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(badge))
        nb.cells[0]["id"] = "colab-badge"
        first_code += 1
    elif _BADGE.search(markdown.source):
        markdown.source = _BADGE.sub(lambda _: badge, markdown.source, count=1)
    else:
        title, _, rest = markdown.source.partition("\n")
        markdown.source = f"{title}\n\n{badge}" + (f"\n\n{rest.lstrip(chr(10))}" if rest.strip() else "")
    setup = course.setup_cell_source()
    if first_code < len(nb.cells) and nb.cells[first_code].source.startswith(_SETUP_STARTS):
        nb.cells[first_code].source = setup
    else:
        cell = nbformat.v4.new_code_cell(setup)
        cell["id"] = "setup"
        nb.cells.insert(first_code, cell)
    nb.cells[first_code].metadata.update(copy.deepcopy(course.SETUP_METADATA))
    folder = path.rsplit("/", 1)[0] if "/" in path else "."
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _NEXT.sub(
                lambda m: course.next_lesson_line(m["text"], m["target"], folder) + m["rest"],
                cell.source)
    return nb


def student_text(solution_path):
    """The exact text of the student notebook generated from ``solution_path``."""
    solution = nbformat.read(str(solution_path), as_version=4)
    student = make_student(solution, Path(solution_path).stem)
    refresh_front_matter(student, f"notebooks/{Path(solution_path).name}")
    return nbformat.writes(student) + "\n"


def refreshed_solution_text(solution_path):
    """The text of ``solution_path`` with its badge and setup cell refreshed."""
    solution = nbformat.read(str(solution_path), as_version=4)
    refresh_front_matter(solution, f"solutions/{Path(solution_path).name}")
    return nbformat.writes(solution) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m helpers.instructor.student",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--solutions", type=Path, default=ROOT / "solutions")
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a student notebook is missing or out of date, "
                             "or a solution's badge or setup cell is")
    args = parser.parse_args(argv)
    stale = []
    for lesson in course.lessons(args.solutions):
        path = args.solutions / f"{lesson}.ipynb"
        text, current = refreshed_solution_text(path), path.read_text(encoding="utf-8")
        if text != current:
            stale.append(path)
            if not args.check:
                path.write_text(text, encoding="utf-8")
                print(f"refreshed the Colab badge and setup cell of {path}")
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
