"""Shared by the lesson check tests: run a learner-style version of an exercise through its check.

Each lesson's test file keeps tables ``{exercise: {label: version}}`` of wrong versions
(with the phrase the message must contain) and right ones; these helpers do the rest.
"""

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
