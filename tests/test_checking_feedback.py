"""Feedback every check shares, tested over the whole catalogue and on small hand-made inputs:

- a result that should be an array but is a (nested) list is refused: "return a NumPy array";
- a float32 answer is told that float32 is the problem (one policy: helpers.checking's
  docstring), never "got 2.9154, expected 2.9154", and costs one case in the grader;
- -inf where a finite number belongs is not called "an overflow";
- values returned in the wrong order are named as such;
- a learner's helper that is wrong (their softmax inside their attention) is named,
  instead of blaming the function that calls it.
"""

import copy

import numpy as np
import pytest

from helpers import reference
from helpers.checking import difference, evaluate
from helpers.checking.blame import blame_helper, called_names, with_global
from helpers.exercises import EXERCISES

ALL = sorted(EXERCISES)


def _reference_result(name):
    exercise = EXERCISES[name]
    case = exercise.cases()[0]
    return exercise.reference(*copy.deepcopy(case.args), **copy.deepcopy(case.kwargs))


def _array_outputs(name):
    result = _reference_result(name)
    values = result if isinstance(result, tuple) else (result,)
    return all(isinstance(v, np.ndarray) and v.ndim > 0 for v in values)


ARRAY_RESULTS = [n for n in ALL if _array_outputs(n)]


def _as_lists(result):
    return tuple(v.tolist() for v in result) if isinstance(result, tuple) else result.tolist()


# --- lists ---------------------------------------------------------------------------------

def test_there_are_exercises_with_array_results():
    assert {"causal_mask", "softmax", "project_qkv"} <= set(ARRAY_RESULTS)


@pytest.mark.parametrize("name", ARRAY_RESULTS)
def test_the_right_values_as_nested_lists_fail_asking_for_a_numpy_array(name):
    exercise = EXERCISES[name]

    def as_lists(*args, **kwargs):
        return _as_lists(exercise.reference(*args, **kwargs))

    report = evaluate(exercise, as_lists, stop_at_first_failure=True)
    assert not report.ok and not report.not_attempted
    assert "not a NumPy array" in report.failures[0]


def test_a_tuple_of_arrays_may_come_back_as_a_list_of_arrays():
    got = [np.ones(2), np.zeros(3)]
    assert difference(got, (np.ones(2), np.zeros(3)), ("a", "b"), 1e-6, 1e-9) is None


# --- float32 -------------------------------------------------------------------------------

def _in_float32(exercise):
    def in_float32(a):       # float64 arrays, also inside lists and tuples (lesson 10's layers)
        if isinstance(a, (list, tuple)):
            return type(a)(in_float32(x) for x in a)
        return a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64 else a

    def computed_in_float32(*args, **kwargs):
        return exercise.reference(*[in_float32(a) for a in args], **kwargs)
    return computed_in_float32


FLOAT_INPUTS = [n for n in ARRAY_RESULTS
                if any(isinstance(a, np.ndarray) and a.dtype == np.float64
                       for a in EXERCISES[n].cases()[0].args)]


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("name", FLOAT_INPUTS)
def test_a_float32_answer_is_told_so_and_costs_one_case(name, hidden):
    """Every message names float32, on every exercise, visible or hidden: never accepted on one
    case and rejected for its values on another. Where float32 is the only fault, the grader
    takes one case off, however many show it (where float32 arithmetic makes the values
    really wrong, as finite differences with a small eps, each such case counts)."""
    exercise = EXERCISES[name]
    report = evaluate(exercise, _in_float32(exercise), exercise.cases(hidden=hidden),
                      blame_helpers=False)
    if report.ok:             # float32 arithmetic happened to reproduce float64 on every case
        return
    assert all("float32" in message for message in report.failures), report.failures
    if all("precision" in message for message in report.failures):   # right but for float32
        assert len(report.failures) == 1 and report.passed == report.total - 1


def test_the_value_message_names_the_entry_outside_the_tolerance_not_the_largest_difference():
    expected = np.array([1000.0, 1.0])
    got = np.array([1000.0005, 1.00001])          # first: within rtol 1e-6 of 1000; second: not
    message = difference(got, expected, "m", 1e-6, 1e-12)
    assert "at index (1,)" in message and "1 of 2 entries" in message


def test_float32_that_only_rounding_separates_is_told_dtype_when_not_accepted():
    expected = np.array([2.91540001234, 1.0])
    got = (expected + np.array([2e-5, 0.0])).astype(np.float32)   # off by 7e-6 relative
    message = difference(got, expected, "scores", 1e-6, 1e-9, float32_ok=False)
    assert "scores is float32, but it should be float64" in message and "conversion to float32" in message


def test_float32_that_is_really_wrong_gets_the_value_message():
    got = np.array([3.5, 1.0], dtype=np.float32)
    message = difference(got, np.array([2.9154, 1.0]), "scores", 1e-6, 1e-9, float32_ok=True)
    assert "wrong values" in message


def test_numbers_in_a_message_never_print_the_same():
    got, expected = np.array([2.91540001]), np.array([2.91540002])
    message = difference(got, expected, "x", 1e-12, 0.0)
    assert "got 2.9154, expected 2.9154" not in message
    assert "2.91540001" in message and "2.91540002" in message


# --- -inf, order ---------------------------------------------------------------------------

def test_minus_inf_where_a_number_belongs_is_not_called_an_overflow():
    message = difference(np.array([0.0, -np.inf]), np.array([1.0, 0.0]), "mask", 1e-6, 1e-9)
    assert "-inf" in message and "overflow" not in message


def test_plus_inf_is_still_called_an_overflow():
    message = difference(np.array([np.inf, 0.0]), np.array([1.0, 0.0]), "w", 1e-6, 1e-9)
    assert "overflow" in message


@pytest.mark.parametrize("order", [(1, 0, 2), (2, 1, 0), (1, 2, 0)])
def test_values_in_the_wrong_order_are_named(order):
    expected = (np.zeros((2, 3)), np.ones((2, 2)), np.full(4, 7.0))
    names = ("Q", "K", "V")
    got = tuple(expected[i] for i in order)
    message = difference(got, expected, names, 1e-6, 1e-9)
    assert "wrong order" in message
    assert f"it returned ({', '.join(names[i] for i in order)})" in message


TUPLE_RESULTS = [n for n in ALL if len(EXERCISES[n].outputs) > 1]


@pytest.mark.parametrize("name", TUPLE_RESULTS)
def test_the_right_values_in_reverse_order_are_called_swapped_or_in_the_wrong_order(name):
    exercise = EXERCISES[name]

    def reversed_results(*args, **kwargs):
        return tuple(reversed(exercise.reference(*args, **kwargs)))

    message = evaluate(exercise, reversed_results, stop_at_first_failure=True).failures[0]
    assert "wrong order" in message or "swapped" in message, message


# --- a wrong helper ------------------------------------------------------------------------

def _define(source, **namespace):
    """Define a function in its own namespace (like a notebook's), with ``namespace`` as globals."""
    namespace = {"np": np, **namespace}
    exec(source, namespace)
    return namespace


ATTENTION = '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
        has_key = mask.any(axis=-1, keepdims=True)
        scores = np.where(has_key, scores, 0.0)
        weights = softmax(scores) * has_key
    else:
        weights = softmax(scores)
    return weights @ V, weights
'''


def naive_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def test_called_names_finds_the_helpers_a_function_uses():
    fn = _define(ATTENTION)["scaled_dot_product_attention"]
    assert {"attention_scores", "softmax"} <= set(called_names(fn))


def test_with_global_swaps_one_name_only_in_the_copy():
    namespace = _define("def f(x):\n    return g(x) + 1\n", g=lambda x: 10 * x)
    f = namespace["f"]
    assert with_global(f, "g", lambda x: x)(2) == 3
    assert f(2) == 21


def test_right_attention_with_a_wrong_softmax_names_the_softmax():
    namespace = _define(ATTENTION, softmax=naive_softmax,
                        attention_scores=reference.attention_scores)
    report = evaluate(EXERCISES["scaled_dot_product_attention"],
                      namespace["scaled_dot_product_attention"],
                      stop_at_first_failure=True, catalogue=EXERCISES)
    message = report.failures[0]
    assert message.startswith("is right itself, but the softmax it calls is not")
    assert "overflow to NaN" in message


def test_right_attention_with_a_right_softmax_is_not_blamed():
    namespace = _define(ATTENTION, softmax=reference.softmax,
                        attention_scores=reference.attention_scores)
    fn = namespace["scaled_dot_product_attention"]
    assert evaluate(EXERCISES["scaled_dot_product_attention"], fn).ok
    assert blame_helper(EXERCISES["scaled_dot_product_attention"], fn,
                        EXERCISES["scaled_dot_product_attention"].cases(), EXERCISES, evaluate) is None


def test_wrong_attention_with_a_wrong_softmax_says_both():
    unscaled = ATTENTION.replace("scores = attention_scores(Q, K)", "scores = Q @ K.T")
    namespace = _define(unscaled, softmax=naive_softmax)
    report = evaluate(EXERCISES["scaled_dot_product_attention"],
                      namespace["scaled_dot_product_attention"],
                      stop_at_first_failure=True, catalogue=EXERCISES)
    message = report.failures[0]
    assert "not scaled" in message and "the softmax it calls fails its own check" in message


def test_a_wrong_causal_mask_used_inside_is_named():
    source = '''
def causal_mask_for_new_tokens(n_q, n_k):
    return causal_mask(n_k)[n_k - n_q:]
'''
    namespace = _define(source, causal_mask=lambda n: [[j <= i for j in range(n)] for i in range(n)])
    report = evaluate(EXERCISES["causal_mask_for_new_tokens"],
                      namespace["causal_mask_for_new_tokens"],
                      stop_at_first_failure=True, catalogue=EXERCISES)
    assert "the causal_mask it calls is not" in report.failures[0]
    assert "not a NumPy array" in report.failures[0]
