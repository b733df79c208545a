"""The reference's in-place work (helpers.reference): inputs untouched, memory as promised.

The reference reuses the score grid for the softmax and updates the online-softmax
sums in place. These tests pin what that must not change: the caller's arrays, the
results of every batch layout, and the memory bounds (memory is counted, not timed).
"""

import numpy as np
import pytest

from helpers import reference as ref
from helpers.measure import traced_peak


def arrays(rng, *shapes):
    return [rng.standard_normal(s) for s in shapes]


def test_softmax_leaves_its_input_unchanged():
    x = np.array([[1.0, 2.0, -np.inf], [0.5, 0.5, 0.5]])
    before = x.copy()
    ref.softmax(x)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("function", ["scaled_dot_product_attention", "online_softmax_attention"])
def test_attention_leaves_q_k_v_unchanged(function):
    Q, K, V = arrays(np.random.default_rng(0), (4, 3), (6, 3), (6, 2))
    copies = [a.copy() for a in (Q, K, V)]
    getattr(ref, function)(Q, K, V)
    for a, b in zip((Q, K, V), copies):
        np.testing.assert_array_equal(a, b)


def test_masked_attention_leaves_the_mask_unchanged():
    Q, K, V = arrays(np.random.default_rng(1), (3, 2), (3, 2), (3, 2))
    mask = ref.causal_mask(3)
    ref.scaled_dot_product_attention(Q, K, V, mask=mask)
    np.testing.assert_array_equal(mask, np.tril(np.ones((3, 3), dtype=bool)))


def test_multi_head_leaves_its_inputs_unchanged():
    rng = np.random.default_rng(2)
    X, *W = arrays(rng, (5, 8), (8, 8), (8, 8), (8, 8), (8, 8))
    copies = [a.copy() for a in (X, *W)]
    ref.multi_head_attention(X, *W, 2)
    for a, b in zip((X, *W), copies):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("q_shape, k_shape, v_shape", [
    ((5, 4), (7, 4), (2, 7, 3)),        # only V has a batch
    ((5, 4), (2, 7, 4), (7, 3)),        # only K has a batch
    ((2, 5, 4), (1, 7, 4), (7, 3)),     # Q's batch, K broadcast
    ((3, 1, 5, 4), (2, 7, 4), (7, 3)),  # batches broadcast against each other
])
def test_online_attention_broadcasts_batches_like_the_naive_one(q_shape, k_shape, v_shape):
    Q, K, V = arrays(np.random.default_rng(3), q_shape, k_shape, v_shape)
    expected = ref.scaled_dot_product_attention(Q, K, V)[0]
    got = ref.online_softmax_attention(Q, K, V, block_size=3)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_online_attention_never_holds_the_score_grid(dtype):
    # n_q = n_k = 1024, blocks of 64: the grid would be 1024 * 1024 numbers; the online
    # version may hold a few (1024, 64) blocks and (1024, 16) sums, far below half a grid
    Q, K, V = (a.astype(dtype) for a in arrays(np.random.default_rng(4), *[(1024, 16)] * 3))
    grid_bytes = 1024 * 1024 * np.dtype(dtype).itemsize
    peak = traced_peak(lambda: ref.online_softmax_attention(Q, K, V, block_size=64))
    assert peak < grid_bytes / 8


def test_naive_attention_holds_one_grid_not_three():
    # the weights (returned) are the grid itself: softmax reuses the scores' memory
    Q, K, V = arrays(np.random.default_rng(5), *[(512, 8)] * 3)
    grid_bytes = 512 * 512 * 8
    peak = traced_peak(lambda: ref.scaled_dot_product_attention(Q, K, V))
    assert grid_bytes <= peak < 1.5 * grid_bytes
