"""What a wrong answer looks like, said when no catalogued mistake matches it.

Each pattern of :mod:`helpers.checking.describe` fires on an answer that has it and
says what it sees; none fires on the reference's own answer, for any exercise, case
or pattern. The answers here are made by hand from the expected ones (transposed,
times a factor, complemented ...), so the expected sentences are known independently.
"""

import dataclasses

import numpy as np
import pytest

from helpers import reference
from helpers.checking import Case, Exercise, evaluate
from helpers.checking.describe import describe
from helpers.exercises import EXERCISES


def _expected(exercise, case):
    with np.errstate(all="ignore"):
        return exercise.reference(*case.args, **case.kwargs)


def _run_nothing(fn, case):
    return None


def _said(name, got, case=None, fn=None):
    """What describe says about ``got`` on ``case`` (the exercise's first visible case by default)."""
    exercise = EXERCISES[name]
    case = case or exercise.cases()[0]

    def run(other, trial):
        chosen = fn if other is None else other
        return None if chosen is None else chosen(*trial.args, **trial.kwargs)

    return describe(exercise, run, got, _expected(exercise, case), case)


# ------------------------------------------------------------ never on the reference
@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_no_description_of_the_references_own_answer(name, hidden):
    exercise = EXERCISES[name]

    def run(other, trial):
        return (other or exercise.reference)(*trial.args, **trial.kwargs)

    for case in exercise.cases(hidden):
        expected = _expected(exercise, case)
        assert describe(exercise, run, expected, expected, case, exercise.cases(hidden)) is None


# ------------------------------------------------------------ each pattern fires where it is true
def _first_float_output(exercise, case):
    """``(index or None, array)`` of the first float array the reference returns on ``case``."""
    expected = _expected(exercise, case)
    parts = list(expected) if isinstance(expected, tuple) else [expected]
    for i, part in enumerate(parts):
        if isinstance(part, np.ndarray) and part.dtype.kind == "f" and np.isfinite(part).all() \
                and np.abs(part).max() > 0 and part.size > 1:
            return (i if isinstance(expected, tuple) else None), part
    return None, None


def _replaced(exercise, case, index, value):
    expected = _expected(exercise, case)
    if index is None:
        return value
    return tuple(value if i == index else part for i, part in enumerate(expected))


SCALABLE = [(name, case) for name in sorted(EXERCISES) for case in EXERCISES[name].cases()
            if _first_float_output(EXERCISES[name], case)[1] is not None]


@pytest.mark.parametrize("name, case", SCALABLE, ids=[f"{n}-{c.label[:30]}" for n, c in SCALABLE])
def test_twice_the_answer_is_called_twice_for_every_exercise(name, case):
    exercise = EXERCISES[name]
    index, part = _first_float_output(exercise, case)
    said = _said(name, _replaced(exercise, case, index, 2 * part), case)
    assert said is not None and "every entry is 2 times the expected one" in said


def test_a_transposed_square_answer_is_called_transposed():
    case = Case((np.arange(9.0).reshape(3, 3) / 7, np.eye(3)))
    got = reference.attention_scores(*case.args).T
    assert "is the transpose of the expected array" in _said("attention_scores", got, case)


def test_an_answer_with_its_axes_swapped_is_called_transposed():
    exercise = EXERCISES["merge_heads"]
    case = exercise.cases()[0]
    got = _expected(exercise, case).T
    assert "is the transpose of the expected array" in _said("merge_heads", got, case)


@pytest.mark.parametrize("factor, words", [
    (2.0, "every entry is 2 times"),
    (0.5, "every entry is 1/2 times"),
    (-1.0, "has the wrong sign"),
    (3.7, "every entry is 3.7 times"),
])
def test_a_constant_factor_is_named(factor, words):
    case = EXERCISES["attention_scores"].cases()[0]
    got = factor * _expected(EXERCISES["attention_scores"], case)
    assert words in _said("attention_scores", got, case)


def test_a_factor_that_is_the_root_of_a_size_is_named_by_that_size():
    case = EXERCISES["attention_scores"].cases()[0]
    Q, K = case.args
    got = (Q @ K.T)                                     # not divided: sqrt(d_k) times too large
    d_k = Q.shape[1]
    said = _said("attention_scores", got, case)
    assert f"√{d_k} (the square root of Q.shape[1] = {d_k})" in said


def test_the_complement_of_a_mask_is_called_so():
    case = EXERCISES["causal_mask"].cases()[0]
    got = ~reference.causal_mask(*case.args)
    assert "is the complement of the expected mask" in _said("causal_mask", got, case)


@pytest.mark.parametrize("blocked", [-np.inf, -1e9, -1e10, np.finfo(float).min, -1e4])
def test_an_additive_mask_where_a_boolean_one_is_asked_is_called_additive(blocked):
    case = EXERCISES["causal_mask"].cases()[0]
    got = np.where(reference.causal_mask(*case.args), 0.0, blocked)
    said = _said("causal_mask", got, case)
    assert "is an additive mask" in said and "must return a boolean mask" in said


def test_an_additive_mask_the_wrong_way_round_says_that_too():
    case = EXERCISES["causal_mask"].cases()[0]
    got = np.where(reference.causal_mask(*case.args), -np.inf, 0.0)
    assert "the wrong way round" in _said("causal_mask", got, case)


def test_a_float_mask_with_the_wrong_pattern_is_told_it_must_be_boolean():
    case = EXERCISES["causal_mask"].cases()[0]
    got = (~reference.causal_mask(*case.args)).astype(float)
    assert "must be boolean" in _said("causal_mask", got, case)


def test_an_attention_wrong_only_in_its_fully_masked_rows_is_told_so():
    exercise = EXERCISES["scaled_dot_product_attention"]
    case = next(c for c in exercise.cases() if "attend to nothing" in c.label)
    out, weights = _expected(exercise, case)
    empty = ~case.kwargs["mask"].any(axis=-1)
    out, weights = out.copy(), weights.copy()
    out[empty], weights[empty] = np.nan, np.nan
    said = _said("scaled_dot_product_attention", (out, weights), case)
    assert "right except in the rows of the queries that may attend to no key" in said
    assert "query 1" in said and "NaN" in said


@pytest.mark.parametrize("normalise, words", [
    (lambda e: e / e.sum(axis=0, keepdims=True), "sums to 1 down each column"),
    (lambda e: e / e.sum(), "sums to 1 over the whole array"),
    (lambda e: e, "but its sums there go from"),
])
def test_weights_normalised_the_wrong_way_are_told_how(normalise, words):
    case = EXERCISES["softmax"].cases()[0]
    got = normalise(np.exp(case.args[0]))
    said = _said("softmax", got, case)
    assert words in said and "along the last axis" in said


def test_right_on_consecutive_positions_only_is_told_so():
    exercise = dataclasses.replace(EXERCISES["rope"], mistakes=[])   # no catalogued mistake to match first

    def rope_by_index(x, positions, base=10000.0):
        return reference.rope(x, np.arange(np.shape(x)[-2]), base)

    report = evaluate(exercise, rope_by_index, stop_at_first_failure=True)
    assert "right when the positions are 0, 1, 2, ... (each token's index)" in report.failures[0]


def test_right_on_an_earlier_size_only_is_told_so():
    first = EXERCISES["merge_heads"].cases()[0].args[0]
    n = first.shape[1]

    def merge_for_the_first_size(H):
        return H.transpose(1, 0, 2).reshape(n, -1)      # n typed in from the first input

    report = evaluate(EXERCISES["merge_heads"], merge_for_the_first_size, stop_at_first_failure=True)
    assert "it was right on an input of other sizes" in report.failures[0]


def test_a_nan_answer_is_not_blamed_on_a_fixed_size():
    exercise = Exercise(name="halve", lesson="00", reference=lambda x: x / 2,
                        make_cases=lambda rng, hidden: [Case((np.ones(3),)), Case((np.ones(4),))])

    def nan_on_the_second(x):
        return x / 2 if len(x) == 3 else x * np.nan

    report = evaluate(exercise, nan_on_the_second)
    assert "NaN" in report.failures[0] and "other sizes" not in report.failures[0]


# ------------------------------------------------------------ where it sits among the messages
def test_a_catalogued_mistake_is_still_named_before_any_description():
    # K @ Q.T is the transpose of the right scores on a square case: the catalogue's message wins.
    case = Case((np.arange(9.0).reshape(3, 3) / 7, np.eye(3)[::-1]))
    report = evaluate(EXERCISES["attention_scores"], lambda Q, K: K @ Q.T / np.sqrt(Q.shape[-1]),
                      [case])
    assert "is the transpose of the expected array" not in report.failures[0]
    assert any(m.message in report.failures[0] for m in EXERCISES["attention_scores"].mistakes)


def test_without_a_pattern_the_generic_difference_is_kept():
    case = EXERCISES["attention_scores"].cases()[0]
    got = _expected(EXERCISES["attention_scores"], case).copy()
    got[0, 0] += 1.0
    assert _said("attention_scores", got, case) is None


# ------------------------------------------------------------ inputs that hold lists and dicts of arrays
def _stack_like(rng, n, cache_len):
    """A case shaped like patched_stack's and attention_decode_step's: a list of per-layer
    weight tuples and a cache dict of arrays, next to an array whose leading size is n."""
    layers = [(rng.standard_normal((4, 4)), rng.standard_normal((4, 4))) for _ in range(2)]
    cache = {"K": rng.standard_normal((2, cache_len, 3)), "V": rng.standard_normal((2, cache_len, 3))}
    return Case((rng.standard_normal((n, 4)), layers, cache))


def _sum_of_everything(X, layers, cache):
    return X.sum(axis=1) + sum(a.sum() + b.sum() for a, b in layers) + cache["K"].sum()


STACK_LIKE = Exercise(
    name="stack_like", lesson="00", reference=_sum_of_everything,
    make_cases=lambda rng, hidden: [_stack_like(rng, 5, 3), _stack_like(rng, 5, 4), _stack_like(rng, 6, 3)])


@pytest.mark.parametrize("second", [1, 2], ids=["same n, a longer cache", "another n"])
def test_right_on_an_earlier_case_of_lists_and_dicts_of_arrays_is_judged_without_raising(second):
    # the crash of issue 37: comparing the layouts of two such cases with != raised
    # "the truth value of an array ... is ambiguous", and the grader gave 0 points.
    cases = STACK_LIKE.cases()
    first = cases[0]

    def right_on_the_first_only(X, layers, cache):
        got = _sum_of_everything(X, layers, cache)
        return got if cache["K"].shape == first.args[2]["K"].shape and len(X) == 5 else got + 1

    report = evaluate(STACK_LIKE, right_on_the_first_only, [first, cases[second]])
    assert report.passed == 1 and "it was right on an input of other sizes" in report.failures[0]


def test_a_size_is_blamed_on_a_notebook_variable_only_when_the_function_reads_one():
    first = EXERCISES["merge_heads"].cases()[0].args[0]
    namespace = {"n": first.shape[1], "np": np}
    exec("def merge_with_the_notebooks_n(H):\n    return H.transpose(1, 0, 2).reshape(n, -1)\n", namespace)
    report = evaluate(EXERCISES["merge_heads"], namespace["merge_with_the_notebooks_n"],
                      stop_at_first_failure=True)
    assert f"the notebook variable `n` (= {first.shape[1]})" in report.failures[0]


def test_without_evidence_of_a_fixed_size_the_plain_difference_is_said():
    # the size comes from another input (here: the first case's lengths), not from a variable
    exercise = Exercise(name="ones", lesson="00", reference=lambda lengths, n: np.ones((len(lengths), n)),
                        make_cases=lambda rng, hidden: [Case(([1, 3], 3)), Case(([1, 2], 3))])

    def as_wide_as_the_longest(lengths, n):
        return np.ones((len(lengths), max(lengths)))

    report = evaluate(exercise, as_wide_as_the_longest)
    message = report.failures[0]
    assert "has shape (2, 2), expected (2, 3)" in message and "notebook variable" not in message


def test_an_additive_minus_inf_mask_with_a_wrong_band_is_told_boolean_first():
    # mistral-inference's log(tril/triu): 0 / -inf, one diagonal wider than asked
    expected = np.tril(np.ones((5, 5), dtype=bool)) & np.triu(np.ones((5, 5), dtype=bool), -1)
    wider = np.tril(np.ones((5, 5), dtype=bool)) & np.triu(np.ones((5, 5), dtype=bool), -2)
    with np.errstate(divide="ignore"):
        got = np.log(wider.astype(float))
    exercise = Exercise(name="band_mask", lesson="00", reference=lambda n: expected,
                        make_cases=lambda rng, hidden: [Case((5,))])
    message = evaluate(exercise, lambda n: got).failures[0]
    assert "must return a boolean mask" in message and "finite" not in message
    assert "3 entries differ" in message


def test_an_output_made_with_the_shape_of_one_input_is_told_so():
    # damek's FlashAttention port: O = zeros_like(Q), which has d_k columns where d_v belongs
    exercise = EXERCISES["online_softmax_attention"]

    def out_like_Q(Q, K, V, block_size=128):
        return np.zeros_like(Q)

    message = evaluate(exercise, out_like_Q, stop_at_first_failure=True).failures[0]
    assert "the shape of the input Q" in message and "np.zeros_like(Q)" in message


def _patched_without_the_source_residual(X, X_source, layers, num_heads, layer, positions, mask=None):
    """Learner set 911's patched_stack wrong#2: the source run keeps only the last update."""
    source = X_source
    for W in layers[:layer]:
        update = reference.multi_head_attention(source, *W, num_heads, mask)[0]
        source = update                                       # forgot: source + update
    chosen = np.zeros(X.shape[:2], dtype=bool)
    chosen[np.arange(len(X))[:, None], positions] = True
    for number, W in enumerate(layers, start=1):
        out, weights = reference.multi_head_attention(X, *W, num_heads, mask)
        X = X + (np.where(chosen[..., None], update, out) if number == layer else out)
    return X, weights


def _decode_with_the_cache_cut(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None):
    """Learner set 911's decode wrong#13: the returned cache cut to window - 1 tokens."""
    out, new = reference.attention_decode_step(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, window)
    if window is not None:
        new = {k: v[..., -(window - 1):, :] if window > 1 else v[..., :0, :] for k, v in new.items()}
    return out, new


# grading seeds on which describe's comparison of list and dict inputs raised (before the fix)
@pytest.mark.parametrize("name, fn, seeds", [
    ("patched_stack", _patched_without_the_source_residual, [3, 5, 31]),
    ("attention_decode_step", _decode_with_the_cache_cut, [2, 5, 6]),
], ids=["patched_stack", "attention_decode_step"])
def test_grading_a_wrong_version_on_list_and_dict_inputs_never_raises(name, fn, seeds):
    from helpers.instructor.grading.kernel import exercise_seed

    exercise = EXERCISES[name]
    for seed in seeds:
        report = evaluate(exercise, fn, exercise.cases(hidden=True, seed=exercise_seed(seed, name)))
        assert 0 < report.passed < report.total
        assert not any("ambiguous" in message for message in report.failures)
