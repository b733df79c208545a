"""Shared by the lesson check tests: run a learner-style version of an exercise through its check.

Each lesson's test file keeps tables ``{exercise: {label: version}}`` of wrong versions
(with the phrase the message must contain) and right ones; these helpers do the rest.
"""

import functools
import importlib
from pathlib import Path

import pytest

from helpers.checking import ExerciseError, evaluate
from helpers.checks import check
from helpers.exercises import EXERCISES


def table(by_exercise):
    """pytest parameters ``(exercise name, label)`` for every version in the tables.

    Each id starts with the exercise's lesson (``lesson04-split_heads-...``): ``make test-lesson``
    selects a lesson's rows of ``tests/test_checks_versions.py`` by it.
    """
    return [pytest.param(name, label, id=f"lesson{EXERCISES[name].lesson[:2]}-{name}-{label}")
            for name, versions in by_exercise.items() for label in sorted(versions)]


def failing_message(name, fn):
    """The notebook check's message for a wrong ``fn`` (fails the test if the check passes)."""
    with pytest.raises(ExerciseError) as info:
        check(name, fn)
    return str(info.value)


def hidden_report(name, fn):
    """What the grader finds when it runs ``fn`` on the exercise's hidden cases."""
    exercise = EXERCISES[name]
    return evaluate(exercise, fn, exercise.cases(hidden=True))



@functools.lru_cache(maxsize=None)
def lesson_tests():
    """Every lesson's test file of versions (tests/test_checks_lessonNN.py), imported, in lesson order.

    Imported when first asked for, not with this module: those files import this one.
    """
    return [importlib.import_module(path.stem)
            for path in sorted(Path(__file__).parent.glob("test_checks_lesson[0-9][0-9].py"))]


def wrong():
    """``{exercise: {label: (wrong version, phrase of its message)}}``, every lesson's."""
    return {name: v for module in lesson_tests() for name, v in module.WRONG_BY_EXERCISE.items()}


def right():
    """``{exercise: {label: right version}}``, every lesson's."""
    return {name: v for module in lesson_tests() for name, v in module.RIGHT_BY_EXERCISE.items()}


def named_by_a_wrong_version(name, index):
    """True if a wrong version of the tables gets catalogued mistake ``index``'s message, and no other's.

    tests/test_checks_versions.py then shows that message named, on the visible cases and
    first on the hidden ones: the catalogue's own test of that mistake would repeat it.
    """
    messages = [mistake.message for mistake in EXERCISES[name].mistakes]
    return any(phrase in messages[index] and sum(phrase in m for m in messages) == 1
               for _, phrase in wrong().get(name, {}).values())
