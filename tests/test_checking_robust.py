"""Judging a learner's answer never raises, whatever the function returns or leaves unwritten.

A return value the comparison cannot take is a wrong answer with a message naming what came
back; a fresh ``np.empty_like`` whose entries are not all written does not pass by luck (the
memory it reuses was left filled: :mod:`helpers.checking.explain`); a function that raises is
told which input made it when running it again on that input changed finds it.
"""

import numpy as np
import pytest

from helpers import reference
from helpers.checking import Case, Exercise, evaluate
from helpers.exercises import EXERCISES

ODD_RETURNS = {
    "a list of arrays": lambda *a, **k: [np.ones(2), np.ones(3)],
    "a dict of arrays": lambda *a, **k: {"out": np.ones(2), 1: np.zeros(1)},
    "an object array": lambda *a, **k: np.array([None, np.ones(2)], dtype=object),
    "a generator": lambda *a, **k: (i for i in range(3)),
    "a string": lambda *a, **k: "done",
    "a complex array": lambda *a, **k: np.ones((2, 2), dtype=complex),
    "a ragged tuple": lambda *a, **k: (np.ones(2), [np.ones(2), np.ones(3)], None),
    "a class": lambda *a, **k: Exercise,
}
SHAPES = ["softmax", "project_qkv", "multi_head_attention_backward", "key_padding_mask",
          "attention_decode_step", "patched_stack"]


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("odd", sorted(ODD_RETURNS))
def test_an_odd_return_value_is_a_failure_with_a_message_never_an_error(name, odd):
    exercise = EXERCISES[name]
    for hidden in (False, True):
        report = evaluate(exercise, ODD_RETURNS[odd], exercise.cases(hidden=hidden), catalogue={})
        assert report.passed == 0 and len(report.failures) == report.total
        assert all(isinstance(message, str) and message for message in report.failures)


def test_a_function_that_raises_on_the_inspections_larger_input_is_told_so():
    exercise = EXERCISES["online_softmax_attention"]

    def right_on_small_inputs_only(Q, K, V, block_size=128):
        if len(K) > 100:
            raise MemoryError("too big")
        return reference.online_softmax_attention(Q, K, V, block_size)

    report = evaluate(exercise, right_on_small_inputs_only)
    assert not report.ok and "larger input" in report.failures[0] and "MemoryError" in report.failures[0]


# ------------------------------------------------------------ memory that is never written
def _half_written(x):
    out = np.empty_like(x)                 # only the first row is written
    out[0] = 2 * x[0]
    return out


HALF = Exercise(name="double_first_row", lesson="00", reference=lambda x: np.where(
    np.arange(len(x))[:, None] == 0, 2 * x, 0.0),
    make_cases=lambda rng, hidden: [Case((rng.standard_normal((4, 3)),)),
                                    Case((rng.standard_normal((6, 5)),))])


def test_entries_left_unwritten_by_empty_like_are_named_and_never_pass():
    for seed in range(5):
        report = evaluate(HALF, _half_written, HALF.cases(seed=seed))
        assert report.passed == 0, seed
        assert "never writes" in report.failures[0] and "np.zeros_like" in report.failures[0]


def test_a_function_that_writes_every_entry_of_empty_like_passes():
    def written(x):
        out = np.empty_like(x)
        out[:] = 0.0
        out[0] = 2 * x[0]
        return out

    assert evaluate(HALF, written).ok


# ------------------------------------------------------------ the input that made it raise
def test_a_list_input_that_an_array_fixes_is_named():
    exercise = Exercise(name="take", lesson="00", reference=lambda x, positions: np.asarray(x)[positions],
                        make_cases=lambda rng, hidden: [Case((np.arange(5.0), [0, 2, 4]))])

    def with_array_arithmetic(x, positions):
        return x[positions + 0]             # a list + 0 raises TypeError; an array + 0 is itself

    report = evaluate(exercise, with_array_arithmetic)
    assert "positions came as a list" in report.failures[0] and "np.asarray(positions)" in report.failures[0]


def test_dot_T_on_a_leading_axis_is_named():
    exercise = Exercise(name="scores", lesson="00", reference=lambda Q, K: Q @ np.swapaxes(K, -1, -2),
                        make_cases=lambda rng, hidden: [Case((rng.standard_normal((2, 4, 3)),
                                                              rng.standard_normal((2, 5, 3))))])
    report = evaluate(exercise, lambda Q, K: Q @ K.T)
    assert "raised ValueError" in report.failures[0] and "`.T` reverses every axis" in report.failures[0]


def _rope_from_a_table(x, positions, base=10000.0, rows=None):
    """LLaMA-style: angles precomputed for positions 0 .. rows - 1, then indexed."""
    d = np.shape(x)[-1]
    positions = np.asarray(positions)
    rows = 2048 if rows is None else rows
    table = np.arange(rows)[:, None] * base ** (-np.arange(0, d, 2) / d)
    if rows != 2048 and (positions < 0).any():
        raise IndexError("position out of the table")      # e.g. torch's index_select
    theta = table[positions]
    c, s = np.cos(theta), np.sin(theta)
    out = np.empty_like(x, dtype=float)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


@pytest.mark.parametrize("rows", [None, 64], ids=["wraps around", "raises"])
def test_a_rope_indexing_a_table_by_position_is_told_negative_positions_are_allowed(rows):
    exercise = EXERCISES["rope"]
    def rope(x, positions, base=10000.0):
        return _rope_from_a_table(x, positions, base, rows)

    report = evaluate(exercise, rope, stop_at_first_failure=True)
    assert "negative positions" in report.failures[0].lower() and "allowed" in report.failures[0]
    assert "use the positions it is given" not in report.failures[0]


def _added_onto_empty_like(x):
    out = np.empty_like(x)                 # every entry written, but by += onto unset memory
    out[0] += 2 * x[0]
    out[1:] += 0.0
    return out


def test_entries_added_onto_empty_like_are_told_apart_from_entries_never_written():
    for seed in range(5):
        report = evaluate(HALF, _added_onto_empty_like, HALF.cases(seed=seed))
        assert report.passed == 0, seed
        assert "adds onto memory it never set" in report.failures[0], report.failures[0]
        assert "never writes" not in report.failures[0]
