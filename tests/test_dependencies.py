"""The dependency rule of helpers/ (helpers/lessons/__init__.py, CONTRIBUTING.md), read from every import.

- ``lessons/lNN_*`` imports the toolbox, ``reference`` and earlier lessons, never a later one;
- the toolbox, ``reference/``, ``checking/`` and ``exercises/`` never import ``lessons/``;
- nothing outside ``instructor/`` (and ``grade.py``, the instructors' command) imports ``instructor/``;
- no circle of imports.

Every ``import`` statement counts, at the top of a module or inside a function. The grader's
hidden-test lines live in notebooks, not in modules, so they are not read here. The planted
trees below show that each rule catches what it forbids.
"""

import ast
import textwrap
from pathlib import Path

import pytest

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
CONTRACTS = ("toolbox", "reference", "checking", "exercises")


def module_names(root):
    """``{"helpers.lessons.l08_training.model": path, ...}`` for every .py file under ``root``."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(name, path, known):
    """``(target module, line)`` for every import of a helpers module in the file ``path``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = name.split(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:       # helpers.x.function -> helpers.x
                target = target.rpartition(".")[0]
            if target.split(".")[0] == top and target != name:
                yield target, node.lineno


def kind(name):
    """"lessonNN", "lessons", "instructor", "reference", "checking", "exercises" or "toolbox"."""
    parts = name.split(".")[1:]
    if parts and parts[0] in ("instructor", "grade"):
        return "instructor"
    if parts and parts[0] == "lessons":
        return f"lesson{parts[1][1:3]}" if len(parts) > 1 else "lessons"
    if parts and parts[0] in ("reference", "checking", "exercises"):
        return parts[0]
    return "toolbox"


def edges(root):
    known = module_names(root)
    return [(name, target, line) for name, path in known.items() for target, line in
            imports_of(name, path, known)]


def circles(graph):
    """Every strongly connected set of two or more modules (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while not group or w != v:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def violations(root):
    """Every import that breaks the rule, as a sentence naming the two modules and the line."""
    found = []
    for source, target, line in edges(root):
        a, b = kind(source), kind(target)
        where = f"{source} imports {target} (line {line})"
        if a.startswith("lesson") and b.startswith("lesson") and a != "lessons" and b > a:
            found.append(f"{where}: a lesson imports only earlier lessons")
        elif a in CONTRACTS and b.startswith("lesson"):
            found.append(f"{where}: the toolbox, reference/, checking/ and exercises/ never import lessons/")
        if a != "instructor" and b == "instructor":
            found.append(f"{where}: nothing learner-facing imports instructor/")
    graph = {}
    for source, target, _ in edges(root):
        graph.setdefault(source, set()).add(target)
    found += [f"a circle of imports: {' -> '.join(group)}" for group in circles(graph)]
    return found


# ----------------------------------------------------------------- the course's own helpers/
def test_helpers_keep_the_dependency_rule():
    assert violations(HELPERS) == []


def test_the_reader_sees_the_lesson_imports_the_course_has():
    found = {(s, t) for s, t, _ in edges(HELPERS)}
    assert ("helpers.lessons.l10_two_layers.model", "helpers.lessons.l08_training.training") in found
    assert ("helpers.lessons.l09_position.model", "helpers.lessons.l08_training.model") in found
    assert ("helpers.lessons.l08_training.model", "helpers.reference") in found


# ----------------------------------------------------------------- planted imports
CLEAN = {
    "__init__.py": "",
    "data.py": "import numpy as np\n",
    "plots.py": "from . import data\n",
    "checking.py": "from .comparing import difference\n",
    "comparing.py": "def difference(): pass\n",
    "reference/__init__.py": "from .attention import softmax\n",
    "reference/attention.py": "def softmax(): pass\n",
    "exercises/__init__.py": "from .. import checking\n",
    "lessons/__init__.py": "",
    "lessons/l08_training/__init__.py": "from . import model\n",
    "lessons/l08_training/model.py": "from ... import reference\nfrom ...plots import data\n",
    "lessons/l10_two_layers/__init__.py": "",
    "lessons/l10_two_layers/model.py": "from ..l08_training import model as l08\n",
    "instructor/__init__.py": "from ..lessons.l10_two_layers import model\nfrom .. import checking\n",
    "grade.py": "from .instructor import grading\n",
    "instructor/grading.py": "",
}


def plant(tmp_path, **changes):
    root = tmp_path / "helpers"
    for relative, text in {**CLEAN, **changes}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_a_clean_tree_has_no_violation(tmp_path):
    assert violations(plant(tmp_path)) == []


PLANTED = {
    "a later lesson": ("lessons/l08_training/model.py", "from ..l10_two_layers import model\n",
                       "a lesson imports only earlier lessons"),
    "a later lesson, lazily": ("lessons/l08_training/model.py",
                               "def train():\n    from helpers.lessons.l10_two_layers import model\n",
                               "a lesson imports only earlier lessons"),
    "toolbox to lessons": ("plots.py", "from .lessons.l08_training import model\n", "never import lessons/"),
    "reference to lessons": ("reference/attention.py", "import helpers.lessons.l08_training\n",
                             "never import lessons/"),
    "checking to lessons": ("checking.py", "def blame():\n    from .lessons import l10_two_layers\n",
                            "never import lessons/"),
    "exercises to lessons": ("exercises/__init__.py", "from ..lessons.l08_training.model import forward\n",
                             "never import lessons/"),
    "toolbox to instructor": ("data.py", "from .instructor import grading\n", "nothing learner-facing"),
    "a lesson to instructor": ("lessons/l10_two_layers/model.py", "from ...instructor import grading\n",
                               "nothing learner-facing"),
    "a circle": ("data.py", "from . import plots\n", "a circle of imports: helpers.data -> helpers.plots"),
}


@pytest.mark.parametrize("name", list(PLANTED))
def test_a_planted_forbidden_import_is_found_and_named(tmp_path, name):
    relative, text, message = PLANTED[name]
    found = violations(plant(tmp_path, **{relative: text}))
    assert message in found[0], found          # (a planted import may close a circle as well)


def test_a_circle_through_a_lazy_import_is_found(tmp_path):
    root = plant(tmp_path, **{"reference/attention.py": "def softmax():\n    from .. import reference\n"})
    assert violations(root) == ["a circle of imports: helpers.reference -> helpers.reference.attention"]
