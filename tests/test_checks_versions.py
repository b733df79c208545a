"""Every lesson's learner-style versions, run through the checks in one table.

The versions live next to their lesson's other tests (``WRONG_BY_EXERCISE`` and
``RIGHT_BY_EXERCISE`` in ``test_checks_lessonNN.py``, found here by their file name, so
a new lesson's file joins the table without an edit here): a wrong version with the
phrase its message must contain, or a right one written differently from the solution.
Each wrong one must get that message in the notebook and the same message first on the
hidden cases (a failure there is points lost); each right one must pass both and be kept.
"""

import pytest

from helpers.checks import check
from helpers.exercises import EXERCISES
from versions import failing_message, hidden_report, lesson_tests, right, table, wrong

LESSON_TESTS = lesson_tests()
WRONG = wrong()
RIGHT = right()


@pytest.mark.parametrize("name, label", table(WRONG))
def test_wrong_version_gets_its_specific_message(name, label):
    fn, message = WRONG[name][label]
    assert message in failing_message(name, fn)


@pytest.mark.parametrize("name, label", table(WRONG))
def test_wrong_version_gets_the_same_message_first_on_the_hidden_cases(name, label):
    fn, message = WRONG[name][label]
    report = hidden_report(name, fn)
    assert report.failures and message in report.failures[0]


@pytest.mark.parametrize("name, label", table(RIGHT))
def test_right_version_passes_the_check_and_is_kept(name, label, capsys):
    fn = RIGHT[name][label]
    assert check(name, fn) is fn
    assert "passed all" in capsys.readouterr().out


@pytest.mark.parametrize("name, label", table(RIGHT))
def test_right_version_passes_the_hidden_cases(name, label):
    report = hidden_report(name, RIGHT[name][label])
    assert report.ok, report.failures


@pytest.mark.parametrize("module", LESSON_TESTS, ids=lambda module: module.__name__)
def test_a_lesson_file_holds_versions_of_its_own_lesson_only(module):
    number = module.__name__[-2:]                       # test_checks_lesson03 -> "03"
    names = set(module.WRONG_BY_EXERCISE) | set(module.RIGHT_BY_EXERCISE)
    assert names and {EXERCISES[name].lesson[:2] for name in names} == {number}


def test_every_exercise_has_wrong_and_right_versions():
    assert set(WRONG) == set(RIGHT) == set(EXERCISES)
