"""helpers.data: deterministic toy sentences, embeddings and weights."""

import numpy as np
import pytest

from helpers import data


def test_tokens_lowercases_and_splits():
    assert data.tokens("The cat  sat") == ["the", "cat", "sat"]


@pytest.mark.parametrize("bad, error", [("   ", ValueError), (None, TypeError)])
def test_tokens_rejects_empty_or_non_text(bad, error):
    with pytest.raises(error, match="tokens:"):
        data.tokens(bad)


def test_same_word_gets_same_embedding_everywhere():
    X = data.embed(["the", "cat", "the"], d_model=6)
    assert X.shape == (3, 6)
    np.testing.assert_array_equal(X[0], X[2])
    np.testing.assert_array_equal(data.embed(["cat"], d_model=6)[0], X[1])
    assert not np.allclose(X[0], X[1])


def test_seed_changes_every_embedding():
    assert not np.allclose(data.embed(["cat"], seed=0), data.embed(["cat"], seed=1))


def test_weight_matrix_keeps_unit_variance_through_projection():
    X = np.random.default_rng(0).standard_normal((4000, 64))
    W = data.weight_matrix(64, 16, seed=3)
    assert W.shape == (64, 16)
    assert (X @ W).var() == pytest.approx(1.0, rel=0.1)


def test_qkv_weights_are_three_different_matrices():
    W_q, W_k, W_v = data.qkv_weights(8, 4, d_v=3)
    assert (W_q.shape, W_k.shape, W_v.shape) == ((8, 4), (8, 4), (8, 3))
    assert not np.allclose(W_q, W_k)
