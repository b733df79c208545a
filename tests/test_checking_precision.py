"""One verdict per function, whatever the inputs: the check and the grader agree for every dtype.

A function that computes in float32 somewhere is judged by that, on every case: within
float32's precision it is told that float32 is the problem (the one policy of
:mod:`helpers.checking`), on the visible cases, the fixed hidden
ones and freshly drawn ones alike. (Before, whether such a function passed depended on
how large the entries of that draw happened to be: a coin toss for the grade.)
"""

import numpy as np
import pytest

from helpers import reference
from helpers.checking import evaluate
from helpers.checking.compare import difference
from helpers.exercises import EXERCISES

SEEDS = range(12)     # fresh draws beside the visible and hidden cases: each draw has its own magnitudes


def rope_with_float32_angles(x, positions, base=10000.0):
    """Rotates the right pairs by the right angles, but works the angles out in float32."""
    x = np.asarray(x)
    d = x.shape[-1]
    p = np.asarray(positions, dtype=np.float32)[:, None]
    theta = p * np.float32(base) ** (-np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
    c, s = np.cos(theta), np.sin(theta)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


def rope_as_complex_numbers(x, positions, base=10000.0):
    """A right float64 rope written another way (complex multiplication)."""
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    theta = np.asarray(positions, dtype=float)[:, None] * base ** (-np.arange(0, d, 2) / d)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * theta)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def _verdicts(name, fn):
    exercise = EXERCISES[name]
    runs = [exercise.cases(False), exercise.cases(True)] + [exercise.cases(True, seed=s) for s in SEEDS]
    return [evaluate(exercise, fn, cases) for cases in runs]


def test_a_rope_computing_in_float32_gets_one_verdict_over_many_grading_seeds():
    reports = _verdicts("rope", rope_with_float32_angles)
    assert len(reports) == len(SEEDS) + 2
    assert not any(report.ok for report in reports)
    # Its first failure says float32: within float32's precision, or (where only positions in
    # the tens of thousands show it) the far positions' case, whose label names float32 angles.
    assert all("only to float32's precision" in report.failures[0]
               or ("far along" in report.failures[0] and "float32" in report.failures[0])
               for report in reports)


def test_a_right_float64_rope_written_another_way_passes_on_every_seed():
    assert all(report.ok for report in _verdicts("rope", rope_as_complex_numbers))


def project_qkv_in_float32(X, W_q, W_k, W_v):
    """Computes in float32 and returns float64: lesson 01 is judged like every other lesson."""
    return tuple((X.astype(np.float32) @ W.astype(np.float32)).astype(np.float64) for W in (W_q, W_k, W_v))


@pytest.mark.parametrize("name, fn", [("project_qkv", project_qkv_in_float32)], ids=["project_qkv"])
def test_float32_arithmetic_is_told_so_in_lesson_01_too_and_costs_one_case(name, fn):
    reports = _verdicts(name, fn)
    assert all("float32" in report.failures[0] and len(report.failures) == 1 for report in reports)
    assert all(report.passed == report.total - 1 for report in reports[1:])


def mha_in_float32(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    out, weights = reference.multi_head_attention(*(a.astype(np.float32) for a in (X, W_q, W_k, W_v, W_o)),
                                                  num_heads, mask)
    return out.astype(np.float64), weights.astype(np.float64)


def test_float32_arithmetic_is_told_so_on_every_seed_where_the_exercise_does_not_accept_it():
    reports = _verdicts("multi_head_attention", mha_in_float32)
    assert not any(report.ok for report in reports)
    assert all("float32" in report.failures[0] for report in reports)


def test_a_float32_array_is_told_its_dtype_without_claiming_the_inputs_are_float64():
    expected = np.array([0.5, 0.25, 0.125]) + 1e-9      # float64 from integer inputs, say
    message = difference(expected.astype(np.float32), expected, "table", 1e-6, 1e-10)
    assert "table is float32, but it should be float64" in message
    assert "the inputs are" not in message


@pytest.mark.parametrize("error", [1e-13, 1e-11])
def test_float64_rounding_differences_pass(error):
    expected = np.linspace(-2, 3, 12)
    assert difference(expected * (1 + error), expected, "x", 1e-6, 1e-10, float64_rtol=1e-9) is None


def test_float32_level_differences_in_float64_are_told_even_when_within_the_tolerance():
    expected = np.linspace(1, 3, 12)
    got = expected.astype(np.float32).astype(np.float64)           # within rtol 1e-6, float32 rounded
    assert np.allclose(got, expected, rtol=1e-6, atol=1e-10)
    message = difference(got, expected, "x", 1e-6, 1e-10, float64_rtol=1e-9)
    assert "only to float32's precision" in message
    assert difference(got, expected, "x", 1e-6, 1e-10, float32_ok=True, float64_rtol=1e-9) is None


def test_without_float64_rtol_the_tolerance_alone_decides():
    expected = np.linspace(1, 3, 12)
    got = expected.astype(np.float32).astype(np.float64)
    assert difference(got, expected, "x", 1e-6, 1e-10) is None


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_the_reference_is_never_judged_as_float32(name):
    exercise = EXERCISES[name]
    for hidden in (False, True):
        assert evaluate(exercise, exercise.reference, exercise.cases(hidden)).ok
