"""helpers.reference.multi_head_attention with one mask per sentence.

A right-padded batch with a ``(B, 1, n, n)`` padding-and-causal mask gives, on every real
token, what each sentence gives alone with its own causal mask (to 1e-12); ``(n, n)`` still
works; a mask that does not broadcast to ``(..., num_heads, n, n)`` gets a clear error.
"""

import numpy as np
import pytest

from helpers import reference as ref

LENGTHS = [5, 3, 1]
N, D_MODEL, HEADS = 5, 8, 2


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((len(LENGTHS), N, D_MODEL))
    W = [rng.standard_normal((D_MODEL, D_MODEL)) / np.sqrt(D_MODEL) for _ in range(4)]
    return X, W


def _padding_and_causal(lengths, n):
    """(B, 1, n, n): query i of sentence b may see key j <= i when j is a real token."""
    real = np.arange(n)[None, :] < np.asarray(lengths)[:, None]             # (B, n)
    return (np.tril(np.ones((n, n), dtype=bool))[None] & real[:, None, :])[:, None]


def test_a_right_padded_batch_gives_each_sentence_alone_on_its_real_tokens():
    X, W = _batch()
    out, weights = ref.multi_head_attention(X, *W, HEADS, mask=_padding_and_causal(LENGTHS, N))
    assert out.shape == (3, N, D_MODEL) and weights.shape == (3, HEADS, N, N)
    for b, L in enumerate(LENGTHS):
        alone, alone_weights = ref.multi_head_attention(X[b, :L], *W, HEADS, mask=ref.causal_mask(L))
        np.testing.assert_allclose(out[b, :L], alone, rtol=0, atol=1e-12)
        np.testing.assert_allclose(weights[b, :, :L, :L], alone_weights, rtol=0, atol=1e-12)
        assert not weights[b, :, :L, L:].any()                 # no weight on a padded key


def test_one_n_by_n_mask_still_serves_every_sentence():
    X, W = _batch(1)
    out, _ = ref.multi_head_attention(X, *W, HEADS, mask=ref.causal_mask(N))
    for b in range(len(X)):
        alone, _ = ref.multi_head_attention(X[b], *W, HEADS, mask=ref.causal_mask(N))
        np.testing.assert_allclose(out[b], alone, rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape, words", [
    ((2, 1, N, N), "does not broadcast to the heads' scores (3, 2, 5, 5)"),
    ((3, N, N), "mask[:, None] of shape (3, 1, 5, 5)"),
    ((N, N + 1), "does not broadcast"),
])
def test_a_mask_that_does_not_fit_gets_a_clear_error(shape, words):
    X, W = _batch()
    with pytest.raises(ValueError, match="multi_head_attention: mask") as info:
        ref.multi_head_attention(X, *W, HEADS, mask=np.ones(shape, dtype=bool))
    assert words in str(info.value)
