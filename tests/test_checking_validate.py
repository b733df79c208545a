"""Exercise.validate: a check beyond the values (e.g. a mask must be boolean)."""

import numpy as np

from helpers.checking import Case, Exercise, evaluate


def _exercise(calls):
    def validate(got, case):
        calls.append(case.label)
        return None if np.asarray(got).dtype == bool else "must be boolean"

    return Exercise(name="ones", lesson="test", reference=lambda n: np.ones(n, dtype=bool),
                    make_cases=lambda rng, hidden: [Case((2,), label="n=2"), Case((3,), label="n=3")],
                    validate=validate)


def test_validate_message_fails_a_case_whose_values_are_right():
    calls = []
    report = evaluate(_exercise(calls), lambda n: np.ones(n))
    assert report.passed == 0 and report.failures[0] == "on input n=2: must be boolean"
    assert calls == ["n=2", "n=3"]


def test_validate_passing_keeps_the_case_passed():
    report = evaluate(_exercise([]), lambda n: np.ones(n, dtype=bool))
    assert report.ok and report.passed == 2


def test_validate_is_not_asked_about_wrong_values():
    calls = []
    report = evaluate(_exercise(calls), lambda n: np.zeros(n, dtype=bool))
    assert calls == [] and "wrong values" in report.failures[0]


def test_exercise_without_validate_compares_values_only():
    exercise = _exercise([])
    exercise.validate = None
    assert evaluate(exercise, lambda n: np.ones(n)).ok


def test_a_mistake_that_is_right_on_the_case_is_not_told_to_a_right_valued_answer():
    # the 09-11 report: a key padding mask with right values in float32 was told "the slice
    # :-0 ..." on cases where that mistake happens to give the right mask
    from helpers.checking import Mistake

    exercise = _exercise([])
    exercise.mistakes = [Mistake("one too many", lambda n: np.ones(n, dtype=bool) if n == 3
                                 else np.ones(n + 1, dtype=bool))]
    report = evaluate(exercise, lambda n: np.ones(n, dtype=np.float32))
    assert report.failures == ["on input n=2: must be boolean", "on input n=3: must be boolean"]
