"""Every lesson's learner-style versions, run through the checks in one table.

The versions live next to their lesson's other tests (``WRONG_BY_EXERCISE`` and
``RIGHT_BY_EXERCISE`` in ``test_checks_lessonNN.py``): a wrong version with the phrase its
message must contain, or a right one written differently from the solution. Here each wrong
one must get that message in the notebook and lose points on the hidden cases, and each
right one must pass both and be kept.
"""

import pytest

import test_checks_lesson01
import test_checks_lesson02
import test_checks_lesson03
from versions import fails_hidden, failing_message, passes_everywhere, table

LESSON_TESTS = [test_checks_lesson01, test_checks_lesson02, test_checks_lesson03]
WRONG = {name: versions for module in LESSON_TESTS for name, versions in module.WRONG_BY_EXERCISE.items()}
RIGHT = {name: versions for module in LESSON_TESTS for name, versions in module.RIGHT_BY_EXERCISE.items()}


@pytest.mark.parametrize("name, label", table(WRONG))
def test_wrong_version_gets_its_specific_message(name, label):
    fn, message = WRONG[name][label]
    assert message in failing_message(name, fn)


@pytest.mark.parametrize("name, label", table(WRONG))
def test_wrong_version_loses_points_on_the_hidden_cases(name, label):
    assert fails_hidden(name, WRONG[name][label][0])


@pytest.mark.parametrize("name, label", table(RIGHT))
def test_right_version_passes_everywhere_and_is_kept(name, label, capsys):
    assert passes_everywhere(name, RIGHT[name][label], capsys)


def test_every_exercise_of_lessons_01_to_03_has_wrong_and_right_versions():
    from helpers.exercises import EXERCISES
    mine = {n for n, e in EXERCISES.items() if e.lesson[:2] in ("01", "02", "03")}
    assert set(WRONG) == set(RIGHT) == mine
