"""Lesson 09's references: sinusoidal_encoding, rope, rope_backward (helpers/reference/position.py).

Expected values are worked out independently: the formula by hand on tiny cases (with
math.sin and math.cos, entry by entry), RoPE as a multiplication of complex numbers,
the relative property and the two conventions from their definitions, the backward
pass by central differences.
"""

import math

import numpy as np
import pytest

from helpers.reference import numerical_gradient, rope, rope_backward, sinusoidal_encoding
from helpers.reference.position import interleave_order, rope_split_halves

RNG = np.random.default_rng(9)


# ------------------------------------------------------------------ sinusoidal_encoding
def test_sinusoidal_encoding_by_hand_for_two_positions_and_four_columns():
    # d_model = 4: pair 0 turns at 1 radian per position, pair 1 at 1 / 10000**(2/4) = 0.01.
    expected = np.array([[0.0, 1.0, 0.0, 1.0],
                         [math.sin(1.0), math.cos(1.0), math.sin(0.01), math.cos(0.01)]])
    assert np.allclose(sinusoidal_encoding(2, 4), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("n, d_model, base", [(5, 6, 10000.0), (3, 2, 100.0), (7, 8, 10.0)])
def test_sinusoidal_encoding_entry_by_entry(n, d_model, base):
    PE = sinusoidal_encoding(n, d_model, base)
    for p in range(n):
        for i in range(d_model // 2):
            angle = p / base ** (2 * i / d_model)
            assert PE[p, 2 * i] == pytest.approx(math.sin(angle), abs=1e-14)
            assert PE[p, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-14)


def test_sinusoidal_encoding_is_float64_of_shape_n_by_d_model():
    PE = sinusoidal_encoding(11, 16)
    assert PE.shape == (11, 16) and PE.dtype == np.float64


def test_sinusoidal_dot_products_depend_only_on_the_offset():
    # sum_i cos(w_i (p - q)): the same for every pair of positions with the same offset.
    PE = sinusoidal_encoding(20, 16)
    G = PE @ PE.T
    for offset in range(-5, 6):
        diagonal = np.diagonal(G, offset)
        assert np.ptp(diagonal) < 1e-12


@pytest.mark.parametrize("args, error, words", [
    ((4, 5), ValueError, "d_model=5 must be even"),
    ((0, 4), ValueError, "n must be positive"),
    ((4.0, 4), TypeError, "n must be a whole number"),
    ((4, 4, 0.5), ValueError, "base must be a number > 1"),
])
def test_sinusoidal_encoding_bad_input_is_named(args, error, words):
    with pytest.raises(error, match="sinusoidal_encoding: " + words):
        sinusoidal_encoding(*args)


# ------------------------------------------------------------------ rope
def rope_as_complex(x, positions, base=10000.0):
    """Each pair (x[2i], x[2i+1]) as the complex number x[2i] + 1j x[2i+1], times exp(1j angle)."""
    d = x.shape[-1]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    angles = np.array([[p / base ** (2 * i / d) for i in range(d // 2)] for p in positions])
    z = z * np.exp(1j * angles)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


@pytest.mark.parametrize("shape, positions, base", [
    ((4, 6), [0, 1, 2, 3], 10000.0),
    ((3, 2), [5, -2, 7], 10.0),
    ((2, 3, 5, 8), [9, 0, 3, 3, 1], 10000.0),
])
def test_rope_is_a_complex_multiplication_per_pair(shape, positions, base):
    x = RNG.standard_normal(shape)
    assert np.allclose(rope(x, positions, base), rope_as_complex(x, positions, base),
                       rtol=0, atol=1e-12)


def test_rope_by_hand_on_one_pair():
    # (1, 0) at position 1 with d = 2 turns by 1 radian: (cos 1, sin 1).
    assert np.allclose(rope(np.array([[1.0, 0.0]]), [1]), [[math.cos(1), math.sin(1)]], atol=1e-15)


def test_rope_at_position_zero_changes_nothing():
    x = RNG.standard_normal((3, 8))
    assert np.array_equal(rope(x, [0, 0, 0]), x)


def test_rope_keeps_each_pairs_length():
    x = RNG.standard_normal((5, 6))
    y = rope(x, [1, 20, 300, 4000, 5])
    assert np.allclose(np.hypot(y[:, 0::2], y[:, 1::2]), np.hypot(x[:, 0::2], x[:, 1::2]), atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rope_keeps_shape_and_dtype(dtype):
    x = RNG.standard_normal((2, 4, 6)).astype(dtype)
    y = rope(x, np.arange(4))
    assert y.shape == x.shape and y.dtype == dtype


def test_rope_leaves_its_input_as_it_was():
    x = RNG.standard_normal((4, 4))
    before = x.copy()
    rope(x, [1, 2, 3, 4])
    assert np.array_equal(x, before)


@pytest.mark.parametrize("offset", [-7, -1, 0, 2, 13])
def test_rope_score_depends_only_on_the_offset(offset):
    q, k = RNG.standard_normal((1, 16)), RNG.standard_normal((1, 16))
    scores = [(rope(q, [m]) @ rope(k, [m - offset]).T).item() for m in (0, 3, 10, 57, 400)]
    assert np.ptp(scores) < 1e-12


def test_rope_score_changes_with_the_offset():
    q, k = RNG.standard_normal((1, 16)), RNG.standard_normal((1, 16))
    scores = [(rope(q, [m]) @ rope(k, [0]).T).item() for m in range(5)]
    assert np.ptp(scores) > 0.1


# ------------------------------------------------------------------ the two conventions
def rope_halves_by_loop(x, positions, base=10000.0):
    """Split-halves RoPE written directly: pair i is (x[i], x[i + d/2])."""
    d = x.shape[-1]
    out = x.copy()
    for row, p in enumerate(positions):
        for i in range(d // 2):
            a = p / base ** (2 * i / d)
            u, w = x[row, i], x[row, i + d // 2]
            out[row, i], out[row, i + d // 2] = u * math.cos(a) - w * math.sin(a), \
                u * math.sin(a) + w * math.cos(a)
    return out


def test_split_halves_matches_its_definition():
    x, positions = RNG.standard_normal((4, 8)), [0, 3, 1, 9]
    assert np.allclose(rope_split_halves(x, positions), rope_halves_by_loop(x, positions), atol=1e-13)


def test_the_two_conventions_give_different_scores_with_the_same_weights():
    X, W_q, W_k = RNG.standard_normal((6, 8)), RNG.standard_normal((8, 8)), RNG.standard_normal((8, 8))
    p = np.arange(6)
    inter = rope(X @ W_q, p) @ rope(X @ W_k, p).T
    halves = rope_split_halves(X @ W_q, p) @ rope_split_halves(X @ W_k, p).T
    assert np.abs(inter - halves).max() > 0.1


def test_the_two_conventions_are_one_model_up_to_a_column_permutation_within_each_head():
    d_model, num_heads, n = 12, 3, 7
    d_head = d_model // num_heads
    X = RNG.standard_normal((n, d_model))
    W_q, W_k = RNG.standard_normal((d_model, d_model)), RNG.standard_normal((d_model, d_model))
    p = np.arange(n)
    # Reorder the columns of each head's block so that split-halves pairs become interleaved ones.
    perm = np.concatenate([h * d_head + interleave_order(d_head) for h in range(num_heads)])
    for h in range(num_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        halves = rope_split_halves(X @ W_q[:, cols], p) @ rope_split_halves(X @ W_k[:, cols], p).T
        inter = rope(X @ W_q[:, perm][:, cols], p) @ rope(X @ W_k[:, perm][:, cols], p).T
        assert np.allclose(halves, inter, rtol=0, atol=1e-12)


def test_interleave_order_by_hand():
    assert interleave_order(6).tolist() == [0, 3, 1, 4, 2, 5]


# ------------------------------------------------------------------ the backward pass
@pytest.mark.parametrize("shape, positions", [((4, 6), [0, 1, 2, 3]), ((2, 3, 4), [7, -1, 30])])
def test_rope_backward_matches_central_differences(shape, positions):
    x, d_out = RNG.standard_normal(shape), RNG.standard_normal(shape)
    numeric = numerical_gradient(lambda z: np.sum(rope(z, positions) * d_out), x)
    assert np.allclose(rope_backward(d_out, positions), numeric, rtol=1e-6, atol=1e-9)


def test_rope_backward_undoes_rope():
    x = RNG.standard_normal((5, 8))
    positions = [3, 1, 4, 1, 5]
    assert np.allclose(rope_backward(rope(x, positions), positions), x, atol=1e-13)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("fn", [rope, rope_backward])
@pytest.mark.parametrize("x, positions, error, words", [
    (np.zeros((3, 5)), [0, 1, 2], ValueError, "d=5 must be even"),
    (np.zeros((3, 4)), [0, 1], ValueError,
     r"positions must have one entry per row of x \(n=3\), got shape \(2,\)"),
    (np.zeros((3, 4)), [[0, 1, 2]], ValueError, "positions must have one entry per row"),
    (np.zeros((3, 4)), [0.0, 1.5, 2.0], TypeError, "positions must be whole numbers"),
    (np.zeros(4), [0], ValueError, "x must have at least 2 dimensions"),
    (np.array([["a", "b"]]), [0], TypeError, "x must hold real numbers"),
])
def test_rope_bad_input_is_named(fn, x, positions, error, words):
    with pytest.raises(error, match=f"{fn.__name__}: {words}"):
        fn(x, positions)


def test_rope_bad_base_is_named():
    with pytest.raises(ValueError, match="rope: base must be a number > 1"):
        rope(np.zeros((2, 2)), [0, 1], base=-3)
