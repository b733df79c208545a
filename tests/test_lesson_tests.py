"""``make test-lesson L=NN`` finds every test of lesson NN: each helpers module of that lesson is used by a
test file its glob (``tests/test_*lessonNN*.py``) finds.

A lesson's modules: its lab code (``helpers/lessons/lNN_*/``), its catalogue
(``helpers/exercises/lessonNN.py``) and the reference module that only its exercises use.
"Used" is read from each test file's AST: a module it imports, or that holds what it
imports or reaches by attribute (``reference.softmax``) or by a literal key
(``EXERCISES["softmax"]``, whose cases live in the lesson's catalogue).
"""

import ast
import importlib
import types
from pathlib import Path

import pytest

from helpers import course
from helpers.exercises import LESSONS

ROOT = Path(__file__).resolve().parents[1]


def homes(obj):
    """The helpers modules an object of a test file stands for."""
    if isinstance(obj, types.ModuleType):
        return {obj.__name__}
    if isinstance(obj, (list, tuple)):
        return set().union(*(homes(o) for o in obj)) if obj else set()
    found = {getattr(obj, "__module__", None)}
    for part in ("make_cases", "reference"):                  # an Exercise of the catalogue
        found.add(getattr(getattr(obj, part, None), "__module__", None))
    return {name for name in found if isinstance(name, str) and name.startswith("helpers")}


def used_modules(path):
    """Every helpers module the test file ``path`` imports or reaches from what it imports."""
    tree = ast.parse(path.read_text())
    bound, used = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("helpers"):
                    module = importlib.import_module(alias.name)
                    bound[alias.asname or "helpers"] = module if alias.asname else importlib.import_module(
                        "helpers")
                    used.add(module.__name__)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers"):
            module = importlib.import_module(node.module)
            used.add(module.__name__)
            for alias in node.names:
                try:
                    obj = getattr(module, alias.name)
                except AttributeError:                        # a submodule not imported yet
                    obj = importlib.import_module(f"{node.module}.{alias.name}")
                bound[alias.asname or alias.name] = obj
                used |= homes(obj)

    def value(node):                                          # a name, an attribute or a literal key
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        inner = value(node.value) if isinstance(node, (ast.Attribute, ast.Subscript)) else None
        if inner is None:
            return None
        try:
            if isinstance(node, ast.Attribute):
                return getattr(inner, node.attr)
            if isinstance(node.slice, ast.Constant):
                return inner[node.slice.value]
        except (AttributeError, KeyError, TypeError, IndexError):
            return None
        return None

    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            obj = value(node)
            if obj is not None:
                used |= homes(obj)
    return used


def lesson_modules(lesson):
    """The helpers modules that belong to ``lesson`` ("08_training")."""
    number = lesson[:2]
    names = set()
    for folder in (ROOT / "helpers" / "lessons").glob(f"l{number}_*"):
        for path in folder.rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    if (ROOT / "helpers" / "exercises" / f"lesson{number}.py").exists():
        names.add(f"helpers.exercises.lesson{number}")
    users = {}
    for name, exercises in LESSONS.items():
        for exercise in exercises:
            users.setdefault(exercise.reference.__module__, set()).add(name)
    names |= {module for module, lessons in users.items() if lessons == {lesson}}
    return names


def test_every_lesson_has_modules_to_look_for():
    assert lesson_modules("10_two_layers") >= {"helpers.lessons.l10_two_layers.model",
                                               "helpers.exercises.lesson10", "helpers.reference.layers"}
    assert "helpers.reference.attention" not in lesson_modules("03_softmax_and_attention")   # 01-03 share it


def table_modules(path):
    """The catalogue modules whose exercises ``path``'s version tables exercise.

    A ``test_checks_lessonNN.py`` keeps tables of wrong and right versions
    (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``); ``tests/test_checks_versions.py`` runs them
    through the checks, and ``make test-lesson L=NN`` runs that file for lesson NN's rows.
    """
    tree = ast.parse(path.read_text())
    names = {target.id for node in tree.body if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name)}
    if "WRONG_BY_EXERCISE" not in names:
        return set()
    from helpers.exercises import EXERCISES
    tables = importlib.import_module(path.stem)
    exercises = set(tables.WRONG_BY_EXERCISE) | set(getattr(tables, "RIGHT_BY_EXERCISE", {}))
    return set().union(*(homes(EXERCISES[name]) for name in exercises))


@pytest.mark.parametrize("lesson", course.lessons())
def test_the_lessons_glob_finds_a_test_of_each_of_its_modules(lesson):
    files = sorted((ROOT / "tests").glob(f"test_*lesson{lesson[:2]}*.py"))
    used = set().union(*(used_modules(path) | table_modules(path) for path in files)) if files else set()
    missing = sorted(lesson_modules(lesson) - used)
    assert not missing, (f"make test-lesson L={lesson[:2]} runs {[p.name for p in files]}, which use none of "
                         f"{missing}: name their tests tests/test_lesson{lesson[:2]}_*.py")


def test_the_version_tables_are_run_for_their_lesson_by_make_test_lesson():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("\ntest-lesson:"):].split("\n\n")[0]
    assert "tests/test_checks_versions.py" in recipe
    assert '-k "lesson$(L) or not test_checks_versions"' in recipe
