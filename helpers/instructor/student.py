"""Generate the student notebooks from the solution notebooks.

    python -m helpers.instructor.student            # write notebooks/ from solutions/
    python -m helpers.instructor.student --check    # exit 1 if notebooks/ is out of date

The solution notebooks are the single source of every lesson. A student notebook
is its solution with:

- every block between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (nbgrader's
  markers) replaced by nbgrader's own stub, which raises ``NotImplementedError``
  when the function is *called* (defining it raises nothing);
- every block between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``
  removed, and the cells' nbgrader metadata dropped;
- every cell tagged ``instructor`` dropped;
- every output and execution count cleared;
- ``metadata.course`` stamped with the lesson, its exercises and ``"role": "student"``
  (the grader reads it to recognise a submission's lesson).

Both versions open the same way, written from the one repository address in
:mod:`helpers.course`: an "Open in Colab" badge in the first markdown cell (opening
the student notebook, from the solution too: nbgrader releases the solution
notebook to learners) and the setup cell as the first code cell, out of the reader's
way (collapsed in JupyterLab, a form in Colab). A lesson's closing "**Next:**" link
gets an "open it in Colab" link beside it. ``main`` refreshes all three in
``solutions/`` (in place, only where they differ) before it writes ``notebooks/``, so
changing the address is: edit ``helpers/course.py``, ``make student``.

The solution notebooks are also nbgrader source notebooks, and ``main`` keeps them
so (:func:`stamp_nbgrader`, computed from the exercise catalogue): each exercise
cell is an nbgrader solution cell, and each check cell an autograded test cell
worth :data:`~helpers.instructor.grading.scoring.POINTS_PER_EXERCISE` points whose
hidden tests (after the check line) grade the function on the grader's hidden
cases. ``nbgrader generate_assignment`` then releases exactly ``notebooks/``.

A learner's work is never overwritten: ``main`` rewrites a file of ``notebooks/`` only
when it holds exactly what the last commit or this tool itself last wrote there. A file
with any other edit (an answer, outputs, a note) is left as it is, named, and the run
exits 1 (:func:`edits_not_ours`). Learners work in ``my-notebooks/`` anyway (``make lab``),
which no command of the course writes to once a lesson is there.
"""

import argparse
import copy
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat

from helpers import course

from .grading.scoring import POINTS_PER_EXERCISE

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"
#: nbgrader's own stub (``ClearSolutions.code_stub``), so that its release matches ``notebooks/``.
STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]
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
        lines[begin:end + 1] = [indent + line for line in STUB]
        names.append(name)
    return "\n".join(lines), list(reversed(names))


def strip_hidden_tests(source):
    """``source`` without its ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` lines.

    Line for line what nbgrader's ``ClearHiddenTests`` does.
    """
    lines, hidden = [], False
    for line in source.split("\n"):
        if HIDDEN_BEGIN in line:
            hidden = True
        elif HIDDEN_END in line:
            hidden = False
        elif not hidden:
            lines.append(line)
    return "\n".join(lines)


def _nbgrader(grade_id, *, solution=False, grade=False):
    meta = {"grade": grade, "grade_id": grade_id, "locked": grade, "schema_version": 3,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = POINTS_PER_EXERCISE
    return meta


def _hidden_tests(name):
    return [HIDDEN_BEGIN,
            "from helpers.instructor.grading.kernel import hidden_test",
            f"hidden_test({name!r}, {name})",
            HIDDEN_END]


def stamp_nbgrader(nb, lesson):
    """Mark a solution notebook (in place) as an nbgrader source notebook; return it.

    Every cell with a solution block becomes a solution cell (``grade_id``: its
    function's name). For each exercise of ``lesson`` in the catalogue, its check
    cell (the one calling ``check("name", ...)``) becomes a locked autograded test
    cell (``grade_id``: ``name_tests``) whose hidden tests, after the check line,
    grade the function on the grader's hidden cases. Other cells lose any nbgrader
    metadata, so the marking follows the notebook through any edit.

    Raises
    ------
    ValueError
        When an exercise of the lesson has no solution cell or no check cell.
    """
    from helpers.exercises import LESSONS
    from .grading.notebook import checked_names

    solution_cells, check_cells = {}, {}
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        if cell.cell_type != "code":
            continue
        blocks = solution_blocks(cell.source)
        if blocks:
            solution_cells.setdefault(blocks[0][0], cell)
        for name in checked_names(cell.source):
            check_cells.setdefault(name, cell)
    for name, cell in solution_cells.items():
        cell.metadata["nbgrader"] = _nbgrader(name, solution=True)
    for exercise in LESSONS.get(lesson, []):
        name = exercise.name
        if name not in solution_cells:
            raise ValueError(f"{lesson}: no cell holds a solution block of {name}")
        if name not in check_cells:
            raise ValueError(f'{lesson}: no check cell calls check("{name}", ...)')
        cell = check_cells[name]
        source = strip_hidden_tests(cell.source).rstrip("\n")
        cell.source = "\n".join([source, *_hidden_tests(name)])
        cell.metadata["nbgrader"] = _nbgrader(f"{name}_tests", grade=True)
    return nb


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
        cell.metadata.pop("nbgrader", None)
        if cell.cell_type == "code":
            cell.source, names = stub_source(strip_hidden_tests(cell.source))
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


def refresh_front_matter(nb, path, repository=course.REPOSITORY, branch=course.BRANCH):
    """Write the Colab badge and the setup cell into ``nb`` (in place); return ``nb``.

    Parameters
    ----------
    nb : nbformat.NotebookNode
    path : str
        The notebook's path inside the repository, e.g. ``"notebooks/01_qkv_projections.ipynb"``:
        the badge opens that file in Colab.
    repository, branch : str
        Where the course is published (default: :mod:`helpers.course`'s).

    The badge goes into the first markdown cell, replacing an existing badge line or,
    if there is none, right after the cell's first line (the lesson's title). The
    setup cell is the first code cell when it starts with the setup comment; its
    source is replaced. Otherwise a setup cell is inserted before the first code cell.
    Either way it gets :data:`helpers.course.SETUP_METADATA` (collapsed in JupyterLab,
    a form in Colab). Every "**Next:** [text](NN_name.ipynb)" line is rewritten by
    :func:`helpers.course.next_lesson_line`: the relative link and a Colab link.
    """
    badge = course.colab_badge(path, repository, branch)
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
    setup = course.setup_cell_source(repository)
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
                lambda m: course.next_lesson_line(m["text"], m["target"], folder,
                                                  repository, branch) + m["rest"],
                cell.source)
    return nb


def student_notebook_text(solution, lesson, repository=course.REPOSITORY, branch=course.BRANCH):
    """The exact text of the student notebook generated from the solution notebook ``solution``."""
    student = make_student(solution, lesson)
    refresh_front_matter(student, f"notebooks/{lesson}.ipynb", repository, branch)
    return nbformat.writes(student) + "\n"


def student_text(solution_path, repository=course.REPOSITORY, branch=course.BRANCH):
    """The exact text of the student notebook generated from ``solution_path``."""
    solution = nbformat.read(str(solution_path), as_version=4)
    return student_notebook_text(solution, Path(solution_path).stem, repository, branch)


def refreshed_solution_text(solution_path):
    """The text of ``solution_path`` with its badge, setup cell and nbgrader marks refreshed."""
    solution = nbformat.read(str(solution_path), as_version=4)
    # The badge opens the student version: nbgrader releases this very notebook.
    refresh_front_matter(solution, f"notebooks/{Path(solution_path).name}")
    stamp_nbgrader(solution, Path(solution_path).stem)
    return nbformat.writes(solution) + "\n"


#: What ``main`` last wrote into ``notebooks/``, by file name (sha256 of the text): a notebook
#: that still holds exactly that text is the generator's own, safe to regenerate. Git-ignored.
WRITTEN_RECORD = ROOT / "_build" / "student-written.json"


def _sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _committed_text(path, root=ROOT):
    """The text of ``path`` as the checkout's last commit has it, or None (no git, not committed)."""
    try:
        relative = Path(path).resolve().relative_to(Path(root).resolve())
        result = subprocess.run(["git", "show", f"HEAD:{relative.as_posix()}"], cwd=root,
                                capture_output=True, text=True, encoding="utf-8", timeout=30)
    except (ValueError, OSError, subprocess.SubprocessError):
        return None
    return result.stdout if result.returncode == 0 else None


def _read_record(record):
    try:
        return json.loads(Path(record).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _shown(path):
    """``path`` relative to the working folder when it is inside it (as a learner typed it)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def differing_cells(current_text, expected_text):
    """The 1-based numbers of the cells whose source (or outputs) differ between two notebooks.

    A cell present in one and missing in the other counts as differing; outputs and
    execution counts count (a generated notebook has none).
    """
    def cells(text):
        nb = nbformat.reads(text, as_version=4)
        return [(c.cell_type, c.source, len(c.get("outputs", []) or []) > 0
                 or c.get("execution_count") is not None) for c in nb.cells]

    try:
        mine, ours = cells(current_text), cells(expected_text)
    except Exception:              # not a notebook any more: every cell differs
        return [1]
    return [i + 1 for i in range(max(len(mine), len(ours)))
            if i >= len(mine) or i >= len(ours) or mine[i] != ours[i]]


def looks_generated(text):
    """Whether a student notebook's text still looks as generated: no outputs or execution counts,
    and each exercise of its ``metadata.course`` still the stub."""
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception:
        return False
    code = [c for c in nb.cells if c.cell_type == "code"]
    if any(c.get("outputs") or c.get("execution_count") is not None for c in code):
        return False
    stub = "\n".join(STUB)
    for name in nb.metadata.get("course", {}).get("exercises", []):
        cell = next((c for c in code if re.search(rf"^\s*def {re.escape(name)}\(", c.source, re.M)), None)
        if cell is None or stub not in "\n".join(line.strip() for line in cell.source.splitlines()):
            return False
    return True


def edits_not_ours(target, solution, record, root=ROOT):
    """Whether ``target`` (a file of ``notebooks/``) holds edits that ``make student`` did not write.

    It is the generator's own when its text is the one this tool last wrote there
    (:data:`WRITTEN_RECORD`), or what it generates from the committed ``solution``, or the
    committed text of ``target`` itself while that still looks generated (no outputs, every
    exercise a stub: a learner may commit an answer too). Anything else -- a learner's answer,
    a run's outputs -- is someone's work, and is never overwritten.
    Returns None when it is ours, else the text it was compared with ("" when there is none).
    """
    current = target.read_text(encoding="utf-8")
    if record.get(target.name) == _sha256(current):
        return None
    committed_solution = _committed_text(solution, root)
    generated = None
    if committed_solution is not None:
        try:
            generated = student_notebook_text(nbformat.reads(committed_solution, as_version=4),
                                              Path(solution).stem)
        except Exception:
            generated = None
        if generated == current:
            return None
    committed = _committed_text(target, root)
    if committed == current and looks_generated(current):
        return None
    return generated or committed or ""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m helpers.instructor.student",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--solutions", type=Path, default=ROOT / "solutions")
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a student notebook is missing or out of date, "
                             "or a solution's badge, setup cell or nbgrader marks are")
    args = parser.parse_args(argv)
    record_path = WRITTEN_RECORD if args.notebooks.resolve() == (ROOT / "notebooks").resolve() \
        else args.notebooks.parent / "_build" / "student-written.json"
    record = _read_record(record_path)
    stale, kept = [], []
    for lesson in course.lessons(args.solutions):
        path = args.solutions / f"{lesson}.ipynb"
        text, current = refreshed_solution_text(path), path.read_text(encoding="utf-8")
        if text != current:
            stale.append(path)
            if not args.check:
                path.write_text(text, encoding="utf-8")
                print(f"refreshed the Colab badge, setup cell and nbgrader marks of {path}")
        target = args.notebooks / path.name
        text = student_text(path)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            record[target.name] = _sha256(text)
            continue
        stale.append(target)
        if args.check:
            continue
        if current is not None:
            compared = edits_not_ours(target, path, record, args.notebooks.parent)
            if compared is not None:
                cells = differing_cells(current, compared) if compared else []
                listed = ", ".join(map(str, cells[:8])) + (" ..." if len(cells) > 8 else "")
                kept.append(f"{_shown(target)}" + (
                    f": cell{'s' * (len(cells) > 1)} {listed} differ{'s' * (len(cells) == 1)} from what "
                    f"the committed solution generates" if cells else ""))
                continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        record[target.name] = _sha256(text)
        print(f"wrote {target}")
    if not args.check:
        try:
            record_path.parent.mkdir(parents=True, exist_ok=True)
            record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        except OSError:
            pass
    if kept:
        print("make student left these as they are: they hold edits it did not write (a learner's "
              "answers, outputs or notes):\n  " + "\n  ".join(kept) + "\n"
              "Nothing was overwritten. A learner's own copies of the lessons belong in my-notebooks/ "
              "(make lab makes them). To regenerate such a file, first move it out of notebooks/ (the "
              "edits stay in the moved copy), then run make student again.", file=sys.stderr)
        return 1
    if args.check and stale:
        print("out of date (run `make student`): " + ", ".join(str(p) for p in stale))
        return 1
    if not stale:
        print("student notebooks are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
