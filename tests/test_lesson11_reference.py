"""Lesson 11's references: grouped_query_attention, sliding_window_mask, attention_decode_step.

Expected values come from other computations: lesson 04's multi_head_attention (with the
key/value columns repeated for each group), a plain loop over heads written here, masks
written out by hand, and the projections of the tokens themselves for the cache.
"""

import numpy as np
import pytest

from helpers.reference import (
    attention_decode_step,
    causal_mask,
    empty_kv_cache,
    grouped_query_attention,
    multi_head_attention,
    sliding_window_mask,
)


def weights(rng, d_model, num_heads, num_kv_heads):
    """Random W_q, W_k, W_v, W_o with key/value matrices of num_kv_heads heads."""
    d_kv = num_kv_heads * (d_model // num_heads)
    return (rng.standard_normal((d_model, d_model)), rng.standard_normal((d_model, d_kv)),
            rng.standard_normal((d_model, d_kv)), rng.standard_normal((d_model, d_model)))


def repeat_kv_columns(W, num_heads, num_kv_heads):
    """(d_model, g * d_head) -> (d_model, h * d_head): query head i gets kv head i // group's columns."""
    d_head = W.shape[1] // num_kv_heads
    group = num_heads // num_kv_heads
    return np.concatenate([W[:, (i // group) * d_head:(i // group + 1) * d_head]
                           for i in range(num_heads)], axis=1)


def loop_attention(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask):
    """Grouped-query attention as a plain loop over query heads and rows (no batching)."""
    n, d_model = X.shape
    d_head = d_model // num_heads
    group = num_heads // num_kv_heads
    out = np.zeros((n, d_model))
    for i in range(num_heads):
        kv = i // group
        q = X @ W_q[:, i * d_head:(i + 1) * d_head]
        k = X @ W_k[:, kv * d_head:(kv + 1) * d_head]
        v = X @ W_v[:, kv * d_head:(kv + 1) * d_head]
        for r in range(n):
            seen = np.flatnonzero(mask[r])
            s = np.array([q[r] @ k[j] / np.sqrt(d_head) for j in seen])
            w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
            out[r, i * d_head:(i + 1) * d_head] = w @ v[seen]
    return out @ W_o


SIZES = [(5, 12, 4, 2), (6, 8, 8, 1), (4, 12, 6, 3), (3, 6, 2, 2), (7, 16, 4, 1)]


# ------------------------------------------------------------ grouped_query_attention
@pytest.mark.parametrize("n, d_model, h", [(5, 12, 3), (4, 8, 8), (3, 6, 1)])
def test_gqa_with_as_many_kv_heads_as_heads_is_multi_head_attention(n, d_model, h):
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, d_model))
    W = weights(rng, d_model, h, h)
    out, w = grouped_query_attention(X, *W, h, h, mask=causal_mask(n))
    out_mha, w_mha = multi_head_attention(X, *W, h, mask=causal_mask(n))
    np.testing.assert_allclose(out, out_mha, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w, w_mha, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n, d_model, h, g", SIZES)
def test_gqa_is_multi_head_attention_with_each_kv_head_repeated_for_its_group(n, d_model, h, g):
    rng = np.random.default_rng(d_model + g)
    X = rng.standard_normal((n, d_model))
    W_q, W_k, W_v, W_o = weights(rng, d_model, h, g)
    out, w = grouped_query_attention(X, W_q, W_k, W_v, W_o, h, g)
    out_mha, w_mha = multi_head_attention(X, W_q, repeat_kv_columns(W_k, h, g),
                                          repeat_kv_columns(W_v, h, g), W_o, h)
    np.testing.assert_allclose(out, out_mha, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w, w_mha, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n, d_model, h, g", SIZES)
def test_gqa_matches_a_loop_over_query_heads_with_a_sliding_window(n, d_model, h, g):
    rng = np.random.default_rng(n * g)
    X = rng.standard_normal((n, d_model))
    W = weights(rng, d_model, h, g)
    mask = sliding_window_mask(n, 2)
    out, _ = grouped_query_attention(X, *W, h, g, mask=mask)
    np.testing.assert_allclose(out, loop_attention(X, *W, h, g, mask), rtol=0, atol=1e-12)


def test_gqa_pairs_query_head_i_with_kv_head_i_over_the_group_size():
    # 4 query heads, 2 kv heads: heads 0, 1 use kv head 0 and heads 2, 3 kv head 1, so with
    # identical queries heads 0 and 1 have the same map, heads 1 and 2 do not.
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5, 8))
    W_q = np.tile(rng.standard_normal((8, 2)), 4)          # every query head the same
    W_k, W_v = rng.standard_normal((8, 4)), rng.standard_normal((8, 4))
    _, w = grouped_query_attention(X, W_q, W_k, W_v, np.eye(8), 4, 2)
    np.testing.assert_array_equal(w[0], w[1])
    np.testing.assert_array_equal(w[2], w[3])
    assert not np.allclose(w[1], w[2])


def test_gqa_batched_is_each_sequence_on_its_own():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((3, 5, 12))
    W = weights(rng, 12, 4, 2)
    out, w = grouped_query_attention(X, *W, 4, 2, mask=causal_mask(5))
    for b in range(3):
        out_b, w_b = grouped_query_attention(X[b], *W, 4, 2, mask=causal_mask(5))
        np.testing.assert_allclose(out[b], out_b, rtol=0, atol=1e-12)
        np.testing.assert_allclose(w[b], w_b, rtol=0, atol=1e-12)


def test_gqa_keeps_float32():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4, 8)).astype(np.float32)
    W = [A.astype(np.float32) for A in weights(rng, 8, 4, 2)]
    out, w = grouped_query_attention(X, *W, 4, 2)
    assert out.dtype == np.float32 and w.dtype == np.float32


@pytest.mark.parametrize("h, g, message", [
    (4, 3, "num_heads=4 is not divisible by num_kv_heads=3"),
    (4, 0, "num_kv_heads must be positive"),
])
def test_gqa_rejects_kv_heads_that_do_not_divide_the_heads(h, g, message):
    X = np.ones((3, 8))
    with pytest.raises(ValueError, match=f"grouped_query_attention: {message}"):
        grouped_query_attention(X, np.eye(8), np.ones((8, 6)), np.ones((8, 6)), np.eye(8), h, g)


def test_gqa_rejects_a_non_integer_kv_head_count():
    with pytest.raises(TypeError, match="grouped_query_attention: num_kv_heads must be a whole number"):
        grouped_query_attention(np.ones((3, 8)), np.eye(8), np.ones((8, 4)), np.ones((8, 4)),
                                np.eye(8), 4, 2.0)


def test_gqa_rejects_kv_matrices_of_the_wrong_width():
    with pytest.raises(ValueError, match=r"grouped_query_attention: W_k must be "
                                         r"\(d_model, num_kv_heads \* d_head\) = \(8, 4\), got \(8, 8\)"):
        grouped_query_attention(np.ones((3, 8)), np.eye(8), np.eye(8), np.ones((8, 4)),
                                np.eye(8), 4, 2)


# ------------------------------------------------------------ sliding_window_mask
@pytest.mark.parametrize("n, window, expected", [
    (4, 2, [[1, 0, 0, 0],
            [1, 1, 0, 0],
            [0, 1, 1, 0],
            [0, 0, 1, 1]]),
    (5, 3, [[1, 0, 0, 0, 0],
            [1, 1, 0, 0, 0],
            [1, 1, 1, 0, 0],
            [0, 1, 1, 1, 0],
            [0, 0, 1, 1, 1]]),
    (3, 1, [[1, 0, 0],
            [0, 1, 0],
            [0, 0, 1]]),
    (1, 1, [[1]]),
])
def test_sliding_window_mask_by_hand(n, window, expected):
    mask = sliding_window_mask(n, window)
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(mask, np.array(expected, dtype=bool))


@pytest.mark.parametrize("n, window", [(4, 4), (4, 9), (6, 6)])
def test_a_window_as_long_as_the_sequence_is_the_causal_mask(n, window):
    np.testing.assert_array_equal(sliding_window_mask(n, window), causal_mask(n))


@pytest.mark.parametrize("n, window", [(9, 3), (12, 5)])
def test_every_row_sees_at_most_window_tokens(n, window):
    counts = sliding_window_mask(n, window).sum(axis=1)
    np.testing.assert_array_equal(counts, np.minimum(np.arange(1, n + 1), window))


@pytest.mark.parametrize("n, window, error, message", [
    (4, 0, ValueError, "window must be positive"),
    (4, -2, ValueError, "window must be positive"),
    (0, 2, ValueError, "n must be positive"),
    (4, 2.5, TypeError, "window must be a whole number"),
    (4.0, 2, TypeError, "n must be a whole number"),
    (4, True, TypeError, "window must be a whole number"),
])
def test_sliding_window_mask_rejects_bad_sizes(n, window, error, message):
    with pytest.raises(error, match=f"sliding_window_mask: {message}"):
        sliding_window_mask(n, window)


# ------------------------------------------------------------ attention_decode_step
def decode_all(X, W, h, g, window=None):
    """Feed X one token at a time from an empty cache; the outputs, and every cache."""
    cache = empty_kv_cache(g, X.shape[1] // h)
    outs, caches = [], []
    for x in X:
        out, cache = attention_decode_step(x, cache, *W, h, g, window=window)
        outs.append(out)
        caches.append(cache)
    return np.array(outs), caches


@pytest.mark.parametrize("n, d_model, h, g", SIZES)
def test_decoding_token_by_token_gives_the_rows_of_causal_attention(n, d_model, h, g):
    rng = np.random.default_rng(10 + n)
    X = rng.standard_normal((n, d_model))
    W = weights(rng, d_model, h, g)
    outs, _ = decode_all(X, W, h, g)
    expected = loop_attention(X, *W, h, g, causal_mask(n))   # the whole sequence at once
    np.testing.assert_allclose(outs, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("window", [1, 2, 3, 10])
def test_decoding_with_a_window_gives_the_rows_of_sliding_window_attention(window):
    rng = np.random.default_rng(window)
    X = rng.standard_normal((8, 12))
    W = weights(rng, 12, 4, 2)
    outs, _ = decode_all(X, W, 4, 2, window=window)
    expected = loop_attention(X, *W, 4, 2, sliding_window_mask(8, window))
    np.testing.assert_allclose(outs, expected, rtol=0, atol=1e-12)


def test_num_kv_heads_none_means_as_many_as_query_heads():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((5, 8))
    W = weights(rng, 8, 2, 2)
    cache = empty_kv_cache(2, 4)
    for x, row in zip(X, multi_head_attention(X, *W, 2, mask=causal_mask(5))[0]):
        out, cache = attention_decode_step(x, cache, *W, 2)
        np.testing.assert_allclose(out, row, rtol=0, atol=1e-12)


def test_the_cache_holds_every_token_key_and_value_per_kv_head():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((6, 12))
    W = weights(rng, 12, 4, 2)
    _, caches = decode_all(X, W, 4, 2)
    assert [c["K"].shape for c in caches] == [(2, t, 3) for t in range(1, 7)]
    # kv head 1's keys are columns 3:6 of X @ W_k, token by token
    np.testing.assert_allclose(caches[-1]["K"][1], X @ W[1][:, 3:6], rtol=0, atol=1e-12)
    np.testing.assert_allclose(caches[-1]["V"][0], X @ W[2][:, 0:3], rtol=0, atol=1e-12)


def test_a_window_keeps_only_the_last_window_tokens():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((7, 12))
    W = weights(rng, 12, 4, 2)
    _, caches = decode_all(X, W, 4, 2, window=3)
    assert [c["K"].shape[1] for c in caches] == [1, 2, 3, 3, 3, 3, 3]
    np.testing.assert_allclose(caches[-1]["K"][0], X[4:] @ W[1][:, 0:3], rtol=0, atol=1e-12)


def test_a_cache_longer_than_the_window_is_cut_to_the_window():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((6, 8))
    W = weights(rng, 8, 2, 1)
    _, caches = decode_all(X[:5], W, 2, 1)                  # 5 tokens kept, no window
    out, cache = attention_decode_step(X[5], caches[-1], *W, 2, 1, window=2)
    expected, _ = decode_all(X, W, 2, 1, window=2)
    assert cache["K"].shape == (1, 2, 4)
    np.testing.assert_allclose(out, expected[-1], rtol=0, atol=1e-12)


def test_the_given_cache_is_not_modified():
    rng = np.random.default_rng(8)
    W = weights(rng, 8, 2, 2)
    cache = {"K": rng.standard_normal((2, 3, 4)), "V": rng.standard_normal((2, 3, 4))}
    before = {key: value.copy() for key, value in cache.items()}
    _, new = attention_decode_step(rng.standard_normal(8), cache, *W, 2, window=2)
    assert set(cache) == {"K", "V"}
    for key in cache:
        np.testing.assert_array_equal(cache[key], before[key])
        assert not np.shares_memory(new[key], cache[key])


def test_decode_step_batched_is_each_sequence_on_its_own():
    rng = np.random.default_rng(9)
    W = weights(rng, 12, 4, 2)
    x = rng.standard_normal((3, 12))
    cache = {"K": rng.standard_normal((3, 2, 4, 3)), "V": rng.standard_normal((3, 2, 4, 3))}
    out, new = attention_decode_step(x, cache, *W, 4, 2)
    for b in range(3):
        out_b, new_b = attention_decode_step(x[b], {k: v[b] for k, v in cache.items()}, *W, 4, 2)
        np.testing.assert_allclose(out[b], out_b, rtol=0, atol=1e-12)
        np.testing.assert_allclose(new["K"][b], new_b["K"], rtol=0, atol=1e-12)


def test_decode_step_keeps_float32():
    rng = np.random.default_rng(10)
    W = [A.astype(np.float32) for A in weights(rng, 8, 2, 1)]
    cache = empty_kv_cache(1, 4, dtype=np.float32)
    out, new = attention_decode_step(np.ones(8, dtype=np.float32), cache, *W, 2, 1)
    assert out.dtype == np.float32 and new["K"].dtype == np.float32


def _step(cache, num_kv_heads=2, window=None, num_heads=4):
    W = weights(np.random.default_rng(0), 8, 4, 2)
    return attention_decode_step(np.ones(8), cache, *W, num_heads, num_kv_heads, window=window)


@pytest.mark.parametrize("cache, error, message", [
    ({"K": np.ones((2, 3, 4)), "V": np.ones((2, 3, 4))}, ValueError,
     r"cache\['K'\] must be \(num_kv_heads, t, d_head\) = \(2, t, 2\)(.*)got \(2, 3, 4\)"),
    ({"K": np.ones((4, 3, 2)), "V": np.ones((4, 3, 2))}, ValueError,
     r"cache\['K'\] must be \(num_kv_heads, t, d_head\) = \(2, t, 2\)(.*)got \(4, 3, 2\)"),
    ({"K": np.ones((2, 3, 2)), "V": np.ones((2, 2, 2))}, ValueError,
     r"cache\['K'\] holds t=3 tokens but cache\['V'\] holds t=2"),
    ({"K": np.ones((2, 3, 2))}, TypeError, r"cache must be a dict with the keys 'K' and 'V'"),
    ((np.ones((2, 3, 2)), np.ones((2, 3, 2))), TypeError, r"cache must be a dict"),
    ({"K": np.ones((3, 2)), "V": np.ones((3, 2))}, ValueError, r"cache\['K'\] must have at least 3"),
])
def test_decode_step_rejects_a_cache_of_the_wrong_shape(cache, error, message):
    with pytest.raises(error, match=f"attention_decode_step: {message}"):
        _step(cache)


@pytest.mark.parametrize("num_kv_heads, window, error, message", [
    (3, None, ValueError, "num_heads=4 is not divisible by num_kv_heads=3"),
    (2, 0, ValueError, "window must be positive"),
    (2, 1.5, TypeError, "window must be a whole number"),
    (2.0, None, TypeError, "num_kv_heads must be a whole number"),
])
def test_decode_step_rejects_bad_head_counts_and_windows(num_kv_heads, window, error, message):
    with pytest.raises(error, match=f"attention_decode_step: {message}"):
        _step(empty_kv_cache(2, 2), num_kv_heads=num_kv_heads, window=window)


def test_decode_step_rejects_kv_matrices_for_another_number_of_kv_heads():
    W_q, W_k, W_v, W_o = weights(np.random.default_rng(0), 8, 4, 2)    # W_k (8, 4): 2 kv heads
    with pytest.raises(ValueError, match=r"attention_decode_step: W_k must be "
                                         r"\(d_model, num_kv_heads \* d_head\) = \(8, 2\)"):
        attention_decode_step(np.ones(8), empty_kv_cache(1, 2), W_q, W_k, W_v, W_o, 4, 1)


# ------------------------------------------------------------ sliding_window_attention
@pytest.mark.parametrize("n, window", [(10, 3), (7, 1), (5, 5), (4, 9), (13, 4)])
def test_banded_attention_equals_attention_with_the_window_mask(n, window):
    from helpers.reference import scaled_dot_product_attention, sliding_window_attention
    rng = np.random.default_rng(n + window)
    Q, K, V = rng.standard_normal((3, 2, n, 4))             # a batch of 2
    expected = scaled_dot_product_attention(Q, K, V, sliding_window_mask(n, window))[0]
    np.testing.assert_allclose(sliding_window_attention(Q, K, V, window), expected, rtol=0, atol=1e-12)


def test_banded_attention_rejects_a_window_below_one():
    from helpers.reference import sliding_window_attention
    with pytest.raises(ValueError, match="sliding_window_attention: window must be positive"):
        sliding_window_attention(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), 0)


# ------------------------------------------------------------ mean_pool_kv_heads
def test_mean_pooling_to_as_many_kv_heads_changes_nothing():
    from helpers.reference import mean_pool_kv_heads
    W = np.random.default_rng(0).standard_normal((6, 8))
    np.testing.assert_array_equal(mean_pool_kv_heads(W, 4, 4), W)


def test_mean_pooling_averages_the_heads_of_each_group_by_hand():
    from helpers.reference import mean_pool_kv_heads
    # 4 heads of 1 column: [1, 3, 5, 7] -> 2 kv heads: [(1 + 3) / 2, (5 + 7) / 2]
    W = np.array([[1.0, 3.0, 5.0, 7.0]])
    np.testing.assert_array_equal(mean_pool_kv_heads(W, 4, 2), [[2.0, 6.0]])
    np.testing.assert_array_equal(mean_pool_kv_heads(W, 4, 1), [[4.0]])


def test_mean_pooling_rejects_kv_heads_that_do_not_divide():
    from helpers.reference import mean_pool_kv_heads
    message = "mean_pool_kv_heads: num_heads=4 is not divisible by num_kv_heads=3"
    with pytest.raises(ValueError, match=message):
        mean_pool_kv_heads(np.ones((2, 8)), 4, 3)


# ------------------------------------------------------------ per-sequence masks
@pytest.mark.parametrize("h, g", [(4, 2), (4, 4), (6, 1)])
def test_gqa_right_padded_batch_with_a_per_sequence_mask_gives_each_sequence_alone(h, g):
    rng = np.random.default_rng(5)
    d_model, n, lengths = 4 * h, 6, [6, 4, 1]
    W = weights(rng, d_model, h, g)
    seqs = [rng.standard_normal((length, d_model)) for length in lengths]
    X = np.zeros((len(seqs), n, d_model))
    for b, s in enumerate(seqs):
        X[b, :len(s)] = s                                       # right padding with zero rows
    keys = np.arange(n)[None, :] < np.array(lengths)[:, None]   # (B, n), written here
    mask = (keys[:, None, :] & np.tril(np.ones((n, n), bool)))[:, None]     # (B, 1, n, n)
    out, weights_ = grouped_query_attention(X, *W, h, g, mask=mask)
    assert weights_.shape == (len(seqs), h, n, n)
    for b, s in enumerate(seqs):
        alone, _ = grouped_query_attention(s, *W, h, g, mask=causal_mask(len(s)))
        np.testing.assert_allclose(out[b, :len(s)], alone, rtol=0, atol=1e-12)


def test_gqa_per_head_mask_reaches_each_head():
    rng = np.random.default_rng(6)
    n, d_model, h, g = 5, 8, 4, 2
    X, W = rng.standard_normal((n, d_model)), weights(rng, d_model, 4, 2)
    masks = np.array([np.tril(np.ones((n, n), bool), -k) | np.eye(n, dtype=bool) for k in range(h)])
    _, together = grouped_query_attention(X, *W, h, g, mask=masks)          # (h, n, n) mask
    for i in range(h):
        _, alone = grouped_query_attention(X, *W, h, g, mask=masks[i])
        np.testing.assert_allclose(together[i], alone[i], rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape, message", [
    ((3, 6, 6), r"does not broadcast to the scores \(3, 4, 6, 6\).*mask\[:, None\] is \(3, 1, 6, 6\)"),
    ((2, 1, 6, 6), r"does not broadcast to the scores \(3, 4, 6, 6\)"),
    ((6, 5), r"does not broadcast"),
])
def test_gqa_rejects_a_mask_that_does_not_broadcast_to_the_scores(shape, message):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((3, 6, 8))
    with pytest.raises(ValueError, match=message):
        grouped_query_attention(X, *weights(rng, 8, 4, 2), 4, 2, mask=np.ones(shape, bool))
