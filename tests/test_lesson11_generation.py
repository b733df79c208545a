"""Lesson 11's new references and lab loops against computations written independently here.

The expected values come from plain loops: attention row by row and head by head, RoPE as
a rotation of each pair by its angle written out with cos and sin, masks written by hand.
Prefill + decode, RoPE under the cache and padded batches each equal their whole-sequence
counterparts to 1e-12.
"""

import numpy as np
import pytest

from helpers.lessons.l11_inference import generate
from helpers.lessons.l11_inference import costs
from helpers.reference import attention_decode_step, attention_flops, key_padding_mask

ATOL = 1e-12


def weights(rng, d_model, h, g):
    d_kv = g * (d_model // h)
    return (rng.standard_normal((d_model, d_model)), rng.standard_normal((d_model, d_kv)),
            rng.standard_normal((d_model, d_kv)), rng.standard_normal((d_model, d_model)))


def rotate(vector, position, base=10000.0):
    """RoPE by hand: pair (2i, 2i + 1) turned by the angle position * base**(-2i/d)."""
    d = len(vector)
    out = np.empty(d)
    for i in range(d // 2):
        angle = position * base ** (-2 * i / d)
        a, b = vector[2 * i], vector[2 * i + 1]
        out[2 * i] = a * np.cos(angle) - b * np.sin(angle)
        out[2 * i + 1] = a * np.sin(angle) + b * np.cos(angle)
    return out


def loop_attention(X, W, h, g, rope=False, base=10000.0):
    """Causal grouped-query attention, one query head, one row and one key at a time."""
    W_q, W_k, W_v, W_o = W
    n, d_model = X.shape
    d_head = d_model // h
    out = np.zeros((n, d_model))
    for i in range(h):
        kv = i // (h // g)
        for r in range(n):
            q = X[r] @ W_q[:, i * d_head:(i + 1) * d_head]
            q = rotate(q, r, base) if rope else q
            scores, values = [], []
            for j in range(r + 1):
                k = X[j] @ W_k[:, kv * d_head:(kv + 1) * d_head]
                k = rotate(k, j, base) if rope else k
                scores.append(q @ k / np.sqrt(d_head))
                values.append(X[j] @ W_v[:, kv * d_head:(kv + 1) * d_head])
            w = np.exp(np.array(scores) - max(scores))
            out[r, i * d_head:(i + 1) * d_head] = (w / w.sum()) @ np.array(values)
    return out @ W_o


SIZES = [(7, 8, 2, 1), (6, 16, 4, 2), (5, 16, 4, 4)]    # n, d_model, num_heads, num_kv_heads


# ------------------------------------------------------------ prefill, then decode
@pytest.mark.parametrize("n, d_model, h, g", SIZES)
@pytest.mark.parametrize("prompt", [1, 3])
def test_prefill_then_decode_equals_whole_sequence_attention(n, d_model, h, g, prompt):
    rng = np.random.default_rng(n + prompt)
    X, W = rng.standard_normal((n, d_model)), weights(rng, d_model, h, g)
    first, cache = generate.prefill(X[:prompt], W, h, g)
    rest, cache = generate.decode_sequence(attention_decode_step, X[prompt:], W, h, g, cache=cache)
    np.testing.assert_allclose(np.vstack([first, rest]), loop_attention(X, W, h, g), rtol=0, atol=ATOL)
    assert cache["K"].shape == (g, n, d_model // h)


def test_prefill_in_two_chunks_equals_one_pass():
    rng = np.random.default_rng(3)
    X, W = rng.standard_normal((6, 8)), weights(rng, 8, 2, 1)
    one, _ = generate.prefill(X, W, 2, 1)
    a, cache = generate.prefill(X[:4], W, 2, 1)
    b, _ = generate.prefill(X[4:], W, 2, 1, cache=cache)
    np.testing.assert_allclose(np.vstack([a, b]), one, rtol=0, atol=ATOL)


# ------------------------------------------------------------ RoPE under the cache
@pytest.mark.parametrize("n, d_model, h, g", SIZES)
def test_decoding_with_positions_equals_rope_on_the_whole_sequence(n, d_model, h, g):
    rng = np.random.default_rng(n)
    X, W = rng.standard_normal((n, d_model)), weights(rng, d_model, h, g)
    rows, _ = generate.decode_sequence(attention_decode_step, X, W, h, g, start=0)
    np.testing.assert_allclose(rows, loop_attention(X, W, h, g, rope=True), rtol=0, atol=ATOL)


def test_prefill_with_positions_then_decode_equals_rope_on_the_whole_sequence():
    rng = np.random.default_rng(5)
    X, W = rng.standard_normal((7, 16)), weights(rng, 16, 4, 2)
    first, cache = generate.prefill(X[:4], W, 4, 2, positions=np.arange(4), base=100.0)
    rest, _ = generate.decode_sequence(attention_decode_step, X[4:], W, 4, 2, cache=cache, start=4,
                                       base=100.0)
    expected = loop_attention(X, W, 4, 2, rope=True, base=100.0)
    np.testing.assert_allclose(np.vstack([first, rest]), expected, rtol=0, atol=ATOL)


def test_the_cached_key_is_stored_rotated_at_its_position():
    rng = np.random.default_rng(6)
    x, W = rng.standard_normal(4), weights(rng, 4, 1, 1)
    empty = {"K": np.zeros((1, 0, 4)), "V": np.zeros((1, 0, 4))}
    _, cache = attention_decode_step(x, empty, *W, 1, position=3)
    np.testing.assert_allclose(cache["K"][0, 0], rotate(x @ W[1], 3), rtol=0, atol=ATOL)
    np.testing.assert_allclose(cache["V"][0, 0], x @ W[2], rtol=0, atol=ATOL)   # values are not rotated


def test_positions_restarted_at_zero_give_other_outputs():
    rng = np.random.default_rng(7)
    X, W = rng.standard_normal((6, 8)), weights(rng, 8, 2, 2)
    _, cache = generate.prefill(X[:3], W, 2, 2, positions=np.arange(3))
    right, _ = generate.decode_sequence(attention_decode_step, X[3:], W, 2, 2, cache=cache, start=3)
    wrong = [attention_decode_step(x, cache, *W, 2, 2, position=0)[0] for x in X[3:4]]
    assert np.abs(wrong[0] - right[0]).max() > 1e-3


def test_position_zero_on_the_first_token_changes_nothing():
    rng = np.random.default_rng(8)
    x, W = rng.standard_normal(8), weights(rng, 8, 2, 1)
    empty = {"K": np.zeros((1, 0, 4)), "V": np.zeros((1, 0, 4))}
    plain, _ = attention_decode_step(x, empty, *W, 2, 1)
    rotated, _ = attention_decode_step(x, empty, *W, 2, 1, position=0)
    np.testing.assert_allclose(rotated, plain, rtol=0, atol=ATOL)


@pytest.mark.parametrize("position, error, message", [
    (-1, ValueError, r"position must be >= 0"),
    (1.5, TypeError, r"position must be the new token's index"),
    (True, TypeError, r"position must be the new token's index"),
])
def test_decode_step_rejects_a_bad_position(position, error, message):
    rng = np.random.default_rng(9)
    x, W = rng.standard_normal(8), weights(rng, 8, 2, 2)
    with pytest.raises(error, match=message):
        attention_decode_step(x, {"K": np.zeros((2, 0, 4)), "V": np.zeros((2, 0, 4))}, *W, 2,
                              position=position)


# ------------------------------------------------------------ key_padding_mask
def test_key_padding_mask_by_hand():
    expected = np.array([[[True, True, True, False]], [[False, False, False, False]], [[True] * 4]])
    got = key_padding_mask([3, 0, 4], 4)
    assert got.dtype == np.bool_ and got.shape == (3, 1, 4)
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("lengths, n, error, message", [
    ([5], 4, ValueError, r"between 0 and n=4"),
    ([-1, 2], 4, ValueError, r"between 0 and n=4"),
    ([1.5], 4, TypeError, r"whole numbers"),
    ([[1, 2]], 4, TypeError, r"1-D sequence"),
    ([1], 0, ValueError, r"n"),
])
def test_key_padding_mask_rejects_bad_lengths(lengths, n, error, message):
    with pytest.raises(error, match=message):
        key_padding_mask(lengths, n)


def one_head_loop(Q, K, V, allowed):
    """Attention row by row over the keys ``allowed(i)`` lets query i see; no key: zeros."""
    out = np.zeros((len(Q), V.shape[1]))
    for i in range(len(Q)):
        seen = [j for j in range(len(K)) if allowed(i, j)]
        if seen:
            s = np.array([Q[i] @ K[j] for j in seen]) / np.sqrt(Q.shape[1])
            w = np.exp(s - s.max())
            out[i] = (w / w.sum()) @ V[seen]
    return out


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "both ways"])
def test_a_right_padded_batch_gives_each_prompt_its_own_attention(causal):
    from helpers.reference import causal_mask, scaled_dot_product_attention
    rng = np.random.default_rng(10)
    prompts = [rng.standard_normal((length, 6)) for length in (5, 2, 0, 4)]
    Wq, Wk, Wv = (rng.standard_normal((6, 6)) for _ in range(3))
    Xb, lengths = generate.pad_batch(prompts)
    mask = key_padding_mask(lengths, 5) & (causal_mask(5) if causal else True)
    out, _ = scaled_dot_product_attention(Xb @ Wq, Xb @ Wk, Xb @ Wv, mask)
    assert not np.isnan(out).any()
    for b, p in enumerate(prompts):
        alone = one_head_loop(p @ Wq, p @ Wk, p @ Wv, lambda i, j: j <= i or not causal)
        np.testing.assert_allclose(out[b, :len(p)], alone, rtol=0, atol=ATOL)
    assert not out[2].any()                          # the empty prompt: zero outputs


def test_a_left_padded_batch_with_the_reversed_mask_gives_each_prompt_its_own_attention():
    from helpers.reference import causal_mask, scaled_dot_product_attention
    rng = np.random.default_rng(11)
    prompts = [rng.standard_normal((length, 4)) for length in (3, 5, 1)]
    Wq, Wk, Wv = (rng.standard_normal((4, 4)) for _ in range(3))
    Xl, lengths = generate.pad_batch(prompts, side="left")
    assert np.array_equal(Xl[0, 2:], prompts[0]) and not Xl[0, :2].any()
    mask = key_padding_mask(lengths, 5)[..., ::-1] & causal_mask(5)
    out, _ = scaled_dot_product_attention(Xl @ Wq, Xl @ Wk, Xl @ Wv, mask)
    for b, p in enumerate(prompts):
        alone = one_head_loop(p @ Wq, p @ Wk, p @ Wv, lambda i, j: j <= i)
        np.testing.assert_allclose(out[b, 5 - len(p):], alone, rtol=0, atol=ATOL)


# ------------------------------------------------------------ a stack, and its costs
def test_a_cached_stack_token_by_token_equals_the_stack_over_the_whole_sequence():
    rng = np.random.default_rng(12)
    X = rng.standard_normal((6, 8))
    layers = [weights(rng, 8, 2, 2) for _ in range(3)]
    whole = generate.stack_forward(X, layers, 2)
    caches = [{"K": np.zeros((2, 0, 4)), "V": np.zeros((2, 0, 4))} for _ in layers]
    rows = []
    for x in X:
        y, caches = generate.stack_decode_step(attention_decode_step, x, caches, layers, 2)
        rows.append(y)
    np.testing.assert_allclose(np.array(rows), whole, rtol=0, atol=1e-10)
    np.testing.assert_allclose(generate.stack_last_row(X, layers, 2), whole[-1], rtol=0, atol=1e-10)


def test_one_layer_recomputing_every_row_counts_lesson_05s_flops():
    for n, d in [(3, 2), (100, 16)]:
        every = sum(attention_flops(n + 1, d).values())
        assert costs.flops_per_token(n, d)[costs.ALL_ROWS] == every
        assert costs.flops_per_token(n, d, num_layers=4)[costs.ALL_ROWS] == 4 * every


def test_the_cached_step_counts_one_row_of_lesson_05s_layer():
    # one token's projections are a (1, d) layer's; its row of scores and blend, 4 (n + 1) d
    n, d = 9, 4
    one_token = attention_flops(1, d)
    expected = one_token["projections"] + one_token["output_projection"] + 4 * (n + 1) * d
    assert costs.flops_per_token(n, d)[costs.WITH_CACHE] == expected


def test_decode_step_with_a_position_rejects_an_odd_head_size():
    rng = np.random.default_rng(13)
    x, W = rng.standard_normal(6), weights(rng, 6, 2, 2)
    with pytest.raises(ValueError, match=r"attention_decode_step: RoPE .* even d_head, got d_head=3"):
        attention_decode_step(x, {"K": np.zeros((2, 0, 3)), "V": np.zeros((2, 0, 3))}, *W, 2, position=1)


@pytest.mark.parametrize("h, g, window", [(8, 2, None), (4, 4, None), (8, 1, 3)])
def test_the_copying_decode_step_gives_the_reference_step(h, g, window):
    rng = np.random.default_rng(9)
    d_model, d_head = 4 * h, 4
    W = costs.random_weights(d_model, h, g, seed=3)
    cache = {"K": rng.standard_normal((g, 5, d_head)), "V": rng.standard_normal((g, 5, d_head))}
    x = rng.standard_normal(d_model)
    out, new = generate.decode_step_repeating_kv(x, cache, *W, h, g, window=window)
    want, want_cache = attention_decode_step(x, cache, *W, h, g, window=window)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)
    for key in ("K", "V"):
        np.testing.assert_array_equal(new[key], want_cache[key])
