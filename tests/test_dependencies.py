"""The dependency rule of helpers/ (helpers/lessons/__init__.py, CONTRIBUTING.md), read from every import.

- ``lessons/lNN_*`` imports the toolbox, ``reference`` and earlier lessons, never a later one;
- the toolbox, ``reference/``, ``checking/`` and ``exercises/`` never import ``lessons/``;
- ``checking/`` (the machinery) never imports ``exercises/`` (the catalogue is handed to it);
- nothing outside ``instructor/`` (and ``grade.py``, the instructors' command) imports ``instructor/``
  or the tests' plumbing (``run_cache``);
- no circle of imports.

Every ``import`` statement counts, at the top of a module or inside a function, and so does
every call of ``importlib.import_module(...)`` or ``__import__(...)`` whose name can be read:
a string, or an f-string that starts with ``{__name__}.`` or ``{__package__}.`` (a module
that loads its own submodules by name may import any of them). The grader's hidden-test
lines live in notebooks, not in modules, so they are not read here. The planted trees below
show that each rule catches what it forbids.
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


IMPORT_CALLS = ("import_module", "__import__")      # importlib.import_module(...), __import__(...)


def called_names(node, name, package, known):
    """The modules a call ``importlib.import_module(...)``/``__import__(...)`` may import, if readable."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called not in IMPORT_CALLS or not node.args:
        return []
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        target = arg.value
        dots = len(target) - len(target.lstrip("."))
        if dots:                                      # import_module(".x", __package__)
            anchor = package.split(".")[: len(package.split(".")) - (dots - 1)]
            target = ".".join(anchor + [target[dots:]]).rstrip(".")
        return [target]
    if (isinstance(arg, ast.JoinedStr) and len(arg.values) >= 2
            and isinstance(arg.values[0], ast.FormattedValue)
            and getattr(arg.values[0].value, "id", None) in ("__name__", "__package__")
            and isinstance(arg.values[1], ast.Constant) and str(arg.values[1].value).startswith(".")):
        base = name if arg.values[0].value.id == "__name__" else package
        return [other for other in known if other.startswith(base + ".")]   # any of its submodules
    return []


def imports_of(name, path, known):
    """``(target module, line)`` for every import of a helpers module in the file ``path``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = name.split(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            targets = called_names(node, name, package, known)
        elif isinstance(node, ast.Import):
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
    """"lessonNN", "lessons", "instructor", "plumbing", "reference", "checking", "exercises" or "toolbox"."""
    parts = name.split(".")[1:]
    if parts and parts[0] in ("instructor", "grade"):
        return "instructor"
    if parts and parts[0] == "run_cache":
        return "plumbing"
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
        if a == "checking" and b == "exercises":
            found.append(f"{where}: checking/ never imports exercises/ (the catalogue is handed to it)")
        if a != "instructor" and b == "instructor":
            found.append(f"{where}: nothing learner-facing imports instructor/")
        if a != "instructor" and b == "plumbing":
            found.append(f"{where}: nothing learner-facing imports the tests' plumbing")
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
    assert ("helpers.exercises", "helpers.exercises.lesson01") in found      # importlib.import_module(f"...")


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
    "run_cache.py": "ENV = 'COURSE_RUN_CACHE'\n",
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
    "checking to exercises": ("checking.py", "def evaluate():\n    from .exercises import EXERCISES\n",
                              "checking/ never imports exercises/"),
    "a lesson to the tests' plumbing": ("lessons/l08_training/__init__.py", "from ... import run_cache\n",
                                        "nothing learner-facing imports the tests' plumbing"),
    "import_module, by name": ("plots.py",
                               "import importlib\nLAB = importlib.import_module('helpers.lessons')\n",
                               "never import lessons/"),
    "import_module, relative": ("reference/attention.py",
                                "from importlib import import_module\n"
                                "def f():\n    return import_module('..lessons.l08_training', __package__)\n",
                                "never import lessons/"),
    "__import__": ("data.py", "def f():\n    return __import__('helpers.instructor.grading')\n",
                   "nothing learner-facing imports instructor/"),
}


@pytest.mark.parametrize("name", list(PLANTED))
def test_a_planted_forbidden_import_is_found_and_named(tmp_path, name):
    relative, text, message = PLANTED[name]
    found = violations(plant(tmp_path, **{relative: text}))
    assert message in found[0], found          # (a planted import may close a circle as well)


def test_a_module_that_loads_its_submodules_by_name_imports_each_of_them(tmp_path):
    # helpers.exercises loads its lessonNN modules so: a lesson's module that imports the
    # catalogue back closes a circle the import statements alone do not show
    root = plant(tmp_path, **{
        "exercises/__init__.py": "import importlib\n"
                                 "MODULES = [importlib.import_module(f'{__name__}.{n}') for n in ['a']]\n",
        "exercises/lesson01.py": "from .. import plots\nfrom ..exercises import MODULES\n"})
    assert violations(root) == ["a circle of imports: helpers.exercises -> helpers.exercises.lesson01"]


def test_a_name_built_at_run_time_is_not_read(tmp_path):
    root = plant(tmp_path, **{"plots.py": "import importlib\nNAME = 'helpers.lessons'\n"
                                          "M = importlib.import_module(NAME)\n"})
    assert violations(root) == []


def test_a_circle_through_a_lazy_import_is_found(tmp_path):
    root = plant(tmp_path, **{"reference/attention.py": "def softmax():\n    from .. import reference\n"})
    assert violations(root) == ["a circle of imports: helpers.reference -> helpers.reference.attention"]


# ----------------------------------------------------------------- reference/ holds the answers
# Besides one answer per exercise, reference/ holds what the answers are built from or shown
# beside; a faster twin for training belongs to the lesson that trains (lessons/l08_training).
NOT_AN_EXERCISE = {
    "adam_step": "lesson 08's Adam, read in the lesson",
    "band": "the one band of a mask that the window and cache answers build on",
    "empty_kv_cache": "the cache the decode answer starts from",
    "sliding_window_attention": "the band-by-band window, shown beside the mask version",
    "mean_pool_kv_heads": "GQA's conversion of trained heads, shown in lesson 11",
    "frequencies": "RoPE's angles, which rope and the encodings share",
    "rope_split_halves": "RoPE's other convention, compared in lesson 09",
    "interleave_order": "the reordering between the two RoPE conventions",
}


def test_reference_holds_the_exercises_answers_and_what_they_are_built_from():
    import importlib
    import inspect
    import pkgutil

    from helpers import reference
    from helpers.exercises import EXERCISES

    public = set()
    for module in pkgutil.iter_modules(reference.__path__):
        members = vars(importlib.import_module(f"helpers.reference.{module.name}"))
        public |= {name for name, f in members.items() if inspect.isfunction(f) and not name.startswith("_")
                   and f.__module__ == f"helpers.reference.{module.name}"}
    assert sorted(public - set(EXERCISES) - set(NOT_AN_EXERCISE)) == [], \
        "reference/ holds the answers: a twin for speed goes to the lesson that uses it"
    assert sorted(set(NOT_AN_EXERCISE) - public) == []
