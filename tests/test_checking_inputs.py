"""Two behaviours every exercise check shares, tested over the whole catalogue:

- a function that gives the right values but changes an input array in place fails,
  and the message names that argument;
- a function that raises NotImplementedError on some inputs only is checked on what it
  does (a failure that says a case is not written yet), not treated as "not attempted";
  the untouched stub, which raises on every input, is still "not attempted".
"""

import copy

import numpy as np
import pytest

from helpers.checking import evaluate
from helpers.exercises import EXERCISES

ALL = sorted(EXERCISES)


def _first_array(args):
    """Index of the first float-array positional argument, or None."""
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size:
            return i
    return None


def _with_array_input(name):
    exercise = EXERCISES[name]
    return _first_array(exercise.cases()[0].args) is not None


@pytest.mark.parametrize("name", [n for n in ALL if _with_array_input(n)])
def test_right_values_but_an_input_changed_in_place_fails_naming_the_argument(name):
    exercise = EXERCISES[name]
    index = _first_array(exercise.cases()[0].args)

    def scribbles_on_its_input(*args, **kwargs):
        result = copy.deepcopy(exercise.reference(*args, **kwargs))   # the right answer ...
        args[index][...] = args[index] * 2 + 1                        # ... then the input is overwritten
        return result

    report = evaluate(exercise, scribbles_on_its_input, stop_at_first_failure=True)
    assert not report.ok and not report.not_attempted
    argument = list(__import__("inspect").signature(exercise.reference).parameters)[index]
    assert f"changed its input {argument} in place" in report.failures[0]


@pytest.mark.parametrize("name", ALL)
def test_the_reference_changes_no_input(name):
    assert evaluate(EXERCISES[name], EXERCISES[name].reference).ok


@pytest.mark.parametrize("name", ALL)
def test_not_implemented_on_some_inputs_is_a_failure_not_not_attempted(name):
    exercise = EXERCISES[name]
    cases = exercise.cases()
    first = cases[0]
    calls = []

    def half_written(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:   # the first case only (cases are run in order)
            raise NotImplementedError("the masked case is left for later")
        return exercise.reference(*args, **kwargs)

    report = evaluate(exercise, half_written, cases)
    assert not report.not_attempted
    assert report.passed == len(cases) - 1
    assert len(report.failures) == 1
    assert "NotImplementedError" in report.failures[0] and "not written yet" in report.failures[0]
    assert first.label in report.failures[0] or first.label == ""


@pytest.mark.parametrize("name", ALL)
def test_a_stub_that_always_raises_is_not_attempted(name):
    def stub(*args, **kwargs):
        raise NotImplementedError(name)

    report = evaluate(EXERCISES[name], stub)
    assert report.not_attempted and not report.failures


# ------------------------------------------------------------ inputs inside dicts
def _dict_exercise():
    from helpers.checking import Case, Exercise
    return Exercise(name="grow", lesson="00", outputs=("grown",),
                    reference=lambda cache, x: {"K": np.concatenate([cache["K"], x[None]])},
                    make_cases=lambda rng, hidden: [Case(({"K": np.ones((2, 3))}, np.arange(3.0)))])


def _assigns_into_the_dict(cache, x):
    cache["K"] = np.concatenate([cache["K"], x[None]])     # right values, written into the caller's dict
    return cache


def _writes_into_an_array_in_the_dict(cache, x):
    grown = {"K": np.concatenate([cache["K"], x[None]])}
    cache["K"][0] = 0.0
    return grown


def _adds_a_key(cache, x):
    cache["count"] = 1
    return {"K": np.concatenate([cache["K"], x[None]])}


@pytest.mark.parametrize("fn", [_assigns_into_the_dict, _writes_into_an_array_in_the_dict, _adds_a_key])
def test_a_dict_argument_changed_in_place_fails_naming_it(fn):
    report = evaluate(_dict_exercise(), fn)
    assert not report.ok
    assert "changed its input cache in place" in report.failures[0]
    assert "caller's dict" in report.failures[0]


def test_a_dict_argument_left_alone_passes():
    def copies(cache, x):
        return {**cache, "K": np.concatenate([cache["K"], x[None]])}

    assert evaluate(_dict_exercise(), copies).ok


def test_the_decode_step_writing_into_the_callers_cache_is_caught():
    def decode_updates_cache(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None):
        from helpers.reference import attention_decode_step
        out, new = attention_decode_step(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, window)
        cache["K"], cache["V"] = new["K"], new["V"]
        return out, cache

    report = evaluate(EXERCISES["attention_decode_step"], decode_updates_cache, stop_at_first_failure=True)
    assert not report.ok and "cache" in report.failures[0] and "changed" in report.failures[0]
