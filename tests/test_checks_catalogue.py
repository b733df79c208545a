"""Over the whole catalogue of lessons 04-06 and 08: each known mistake is told apart from the others.

Running a catalogued mistake's own function through the check must give that mistake's
message (not an earlier one's), on the visible cases and on the grader's hidden cases;
and the reference passes both. (The wrong versions a learner would write, independent of
the catalogue, are in the per-lesson test files.)
"""

import pytest

from helpers.checking import evaluate
from helpers.exercises import LESSONS

LESSONS_HERE = ["04_multi_head", "05_complexity", "06_tiled_attention", "08_training"]
EXERCISES = [e for lesson in LESSONS_HERE for e in LESSONS[lesson]]


def _mistakes():
    return [pytest.param(e, i, id=f"{e.name}-{i}") for e in EXERCISES for i in range(len(e.mistakes))]


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("exercise, index", _mistakes())
def test_every_catalogued_mistake_gets_its_own_message(exercise, index, hidden):
    mistake = exercise.mistakes[index]
    report = evaluate(exercise, mistake.fn, exercise.cases(hidden), stop_at_first_failure=True)
    assert report.failures, "the mistake passes every case: no case tells it from the right answer"
    assert mistake.message in report.failures[0]


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_the_reference_passes_every_case(exercise, hidden):
    assert evaluate(exercise, exercise.reference, exercise.cases(hidden)).ok


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_hidden_cases_differ_from_the_visible_ones(exercise):
    visible = [c.label for c in exercise.cases(False)]
    hidden = [c.label for c in exercise.cases(True)]
    assert visible != hidden
