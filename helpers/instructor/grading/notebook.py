"""Reading a submission: its lesson, its exercise cells, and the notebook the grader runs.

Nothing here runs the learner's code: the cells are only parsed.

Which cell is an exercise's cell
--------------------------------
The notebook's check cell (``softmax = check("softmax", softmax)``) checks whatever
the name is bound to when it runs. The grader grades the same thing: the
*exercise cell* of ``softmax`` is the last cell before the (last) check cell of
``softmax`` that binds the name -- by a ``def`` at any depth of ``if``/``try``/
``with``/``for`` blocks, an assignment (a lambda, ``functools.partial(...)``, a
tuple assignment), an import -- also under a first-line cell magic such as
``%%time``. Without a check cell, it is the first cell that binds the name. A
later cell that rebinds the name changes nothing.
"""

import ast
import functools
import re
import sys
from pathlib import Path

#: The tag of the cells the grader inserts (they never come from a submission).
GRADER_TAG = "course-grader"

_CHECK = "check"


def nbformat():
    """Import nbformat, without the URI grammar its schema validator never needs here.

    jsonschema imports ``rfc3987_syntax`` when it is installed (it comes with
    JupyterLab), which compiles a grammar at import: seconds of CPU for a format
    check nbformat does not use. Blocking it in this process makes jsonschema skip it.
    """
    if "nbformat" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)
    import nbformat as module
    return module


def lessons():
    """``{lesson: [exercise names]}`` from :data:`helpers.exercises.LESSONS`."""
    from helpers.exercises import LESSONS
    return {lesson: [ex.name for ex in exercises] for lesson, exercises in LESSONS.items()}


# ----------------------------------------------------------------- one cell
@functools.lru_cache(maxsize=4096)   # each cell is read several times, in up to hundreds of notebooks
def python_source(source):
    """A cell's source as plain Python, and whether it was a cell magic's body.

    Line magics and shell escapes (``%matplotlib``, ``!ls``) become Python calls.
    A cell that starts with a cell magic (``%%time``) is read as its body: magics
    like ``%%time`` and ``%%capture`` run the body in the notebook's namespace.
    """
    magic = source.lstrip().startswith("%%")
    if magic:
        source = source.lstrip().partition("\n")[2]
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        return TransformerManager().transform_cell(source), magic
    except Exception:
        return source, magic


def _target_names(target):
    """Names bound by an assignment target: ``a``, ``a, (b, *c)``, ``[a, b]``."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    return []   # an attribute or a subscript binds no name


def _is_check_call(node, name=None):
    """Whether ``node`` is ``check("name", ...)`` (any name when ``name`` is None)."""
    if not (isinstance(node, ast.Call) and node.args):
        return False
    func = node.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    first = node.args[0]
    return (called == _CHECK and isinstance(first, ast.Constant) and isinstance(first.value, str)
            and (name is None or first.value == name))


def _bound_in(statements):
    """Names bound at module level by ``statements``, looking inside compound blocks."""
    names = []
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
            continue   # a function's or class's body binds nothing in the notebook
        if isinstance(node, ast.Assign) and not _is_check_call(node.value):
            names += [n for t in node.targets for n in _target_names(t)]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            names += _target_names(node.target)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            names += _target_names(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            names += [n for item in node.items if item.optional_vars is not None
                      for n in _target_names(item.optional_vars)]
        for block in ("body", "orelse", "finalbody"):
            names += _bound_in(getattr(node, block, []))
        for handler in getattr(node, "handlers", []):
            names += _bound_in(handler.body)
        for case in getattr(node, "cases", []):   # match statements
            names += _bound_in(case.body)
    return names


_DEF_OR_ASSIGN = re.compile(r"^\s*(?:def\s+([A-Za-z_]\w*)\s*\(|([A-Za-z_]\w*)\s*=[^=])", re.MULTILINE)


def bound_names(source):
    """Names a cell binds in the notebook's namespace, and its syntax error.

    Returns
    -------
    (names, error) : (list of str, str or None)
        ``error`` is None, or a one-line description of the syntax error; then
        ``names`` comes from a plain-text scan for ``def name(`` and ``name =``.
        The body of a cell magic that is not Python (``%%bash``) binds nothing and
        is no syntax error.
    """
    code, magic = python_source(source)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        if magic:
            return [], None
        names = [a or b for a, b in _DEF_OR_ASSIGN.findall(code)]
        return names, f"SyntaxError: {exc.msg} (line {exc.lineno})"
    return list(dict.fromkeys(_bound_in(tree.body))), None


def checked_names(source):
    """The exercise names a cell passes to ``check("name", ...)``."""
    code, _ = python_source(source)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return [node.args[0].value for node in ast.walk(tree) if _is_check_call(node)]


# ----------------------------------------------------------------- the notebook
def exercise_cells(nb, names):
    """``{name: index of its exercise cell}`` (see the module doc); missing names are left out."""
    binders, checks = {}, {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for name in bound_names(cell.source)[0]:
            binders.setdefault(name, []).append(index)
        for name in checked_names(cell.source):
            checks[name] = index   # the last check cell wins
    found = {}
    for name in names:
        cells = binders.get(name, [])
        before_check = [i for i in cells if i < checks.get(name, -1)]
        if before_check:
            found[name] = before_check[-1]
        elif cells:
            found[name] = cells[0]
    return found


def recognise_lesson(nb, path=None):
    """The lesson a notebook belongs to, or None.

    In order: the metadata ``course.lesson`` stamped into every student (and
    solution) notebook; the lesson whose exercises the code cells pass to
    ``check("name", ...)`` most often, then (on a tie) whose exercise functions they
    bind most of (a later lesson imports earlier lessons' functions: its own checks
    decide); a lesson name in the file name.
    """
    known = lessons()
    stamped = nb.get("metadata", {}).get("course") or {}
    if isinstance(stamped, dict) and stamped.get("lesson") in known:
        return stamped["lesson"]
    bound, checked = set(), set()
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            bound.update(bound_names(cell.get("source", ""))[0])
            checked.update(checked_names(cell.get("source", "")))
    best, best_count = None, (0, 0)
    for lesson, names in known.items():
        count = (len(checked & set(names)), len(bound & set(names)))
        if count > best_count:
            best, best_count = lesson, count
    if best:
        return best
    if path is not None:
        for lesson in known:
            if lesson in Path(path).name:
                return lesson
    return None


def syntax_errors(nb):
    """``{cell number (1-based): "SyntaxError: ..."}`` for every code cell that does not parse."""
    errors = {}
    for number, cell in enumerate(nb.cells, start=1):
        if cell.cell_type == "code":
            error = bound_names(cell.source)[1]
            if error:
                errors[number] = error
    return errors


def instrument(nb, names, capture_source, run_all=False):
    """The notebook to run: the submission with a grader cell after each exercise cell.

    Parameters
    ----------
    nb : NotebookNode
        The submission (not changed).
    names : list of str
        The lesson's exercise names.
    capture_source : callable (name, cell_number) -> str
        The source of the grader cell that grades ``name`` right after its
        exercise cell (number ``cell_number``, 1-based) has run.
    run_all : bool
        Keep every cell. Otherwise the notebook stops after the last grader cell:
        nothing later can change a grade, and the rest of a lesson (figures,
        measurements) is most of its run time.

    Returns
    -------
    (run_nb, numbers)
        ``numbers[i]`` is the 1-based number in the submission of cell i of
        ``run_nb``, or None for a grader cell.
    """
    nbf = nbformat()
    after = {}
    for name, index in exercise_cells(nb, names).items():
        after.setdefault(index, []).append(name)
    cells, numbers, last = [], [], 0
    for index, cell in enumerate(nb.cells):
        cells.append(cell)
        numbers.append(index + 1)
        for name in after.get(index, []):
            grader = nbf.v4.new_code_cell(capture_source(name, index + 1))
            grader.metadata["tags"] = [GRADER_TAG]
            cells.append(grader)
            numbers.append(None)
            last = len(cells)
    if not run_all:
        cells, numbers = cells[:last], numbers[:last]
    out = nbf.v4.new_notebook(metadata=nb.metadata)
    out.cells = cells
    return out, numbers
