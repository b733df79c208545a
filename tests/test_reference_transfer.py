"""The reference versions of lessons 04-06's transfer exercises, against values worked out
another way: a loop over sentences, the counts solved by hand, the naive masked attention."""

import numpy as np
import pytest

from helpers import reference


def test_split_heads_batched_is_split_heads_of_each_sentence():
    X = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)        # 2 sentences, 3 tokens, d_model 4
    H = reference.split_heads_batched(X, 2)
    assert H.shape == (2, 2, 3, 2)
    # sentence 1, head 1 = columns 2:4 of sentence 1
    np.testing.assert_array_equal(H[1, 1], X[1][:, 2:4])


@pytest.mark.parametrize("bad, message", [(np.zeros((3, 4)), r"at least 3 dimensions"),
                                          (np.zeros((1, 2, 3, 4)), r"must be \(B, n, d_model\)")])
def test_split_heads_batched_wants_three_axes(bad, message):
    with pytest.raises(ValueError, match=message):
        reference.split_heads_batched(bad, 2)


def test_split_heads_batched_names_itself_when_heads_do_not_divide():
    with pytest.raises(ValueError, match=r"split_heads_batched: d_model=10 is not divisible by num_heads=3"):
        reference.split_heads_batched(np.zeros((2, 3, 10)), 3)


@pytest.mark.parametrize("d_model, with_wo, n", [(128, False, 192), (128, True, 256), (1, True, 2)])
def test_flops_crossing_is_where_the_two_counts_meet(d_model, with_wo, n):
    f = reference.attention_flops(n, d_model)
    projections = f["projections"] + (f["output_projection"] if with_wo else 0)
    assert projections == f["scores"] + f["weighted_sum"]
    assert reference.flops_crossing(d_model, with_wo) == n


def _naive_causal(Q, K, V):
    n = len(Q)
    out = np.zeros((n, V.shape[1]))
    for i in range(n):                                   # query i sees keys 0..i
        s = Q[i] @ K[:i + 1].T / np.sqrt(Q.shape[1])
        w = np.exp(s - s.max())
        out[i] = (w / w.sum()) @ V[:i + 1]
    return out


@pytest.mark.parametrize("n, block_size", [(1, 4), (7, 1), (10, 4), (9, 3), (5, 16)])
def test_causal_online_attention_matches_a_loop_over_queries(n, block_size):
    rng = np.random.default_rng(n)
    Q, K, V = rng.standard_normal((n, 3)), rng.standard_normal((n, 3)), rng.standard_normal((n, 2))
    got = reference.causal_online_softmax_attention(Q, K, V, block_size)
    np.testing.assert_allclose(got, _naive_causal(Q, K, V), rtol=0, atol=1e-12)


def test_causal_online_attention_takes_a_batch_and_keeps_float32():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((2, 6, 3)).astype(np.float32) for _ in range(3))
    got = reference.causal_online_softmax_attention(Q, K, V, block_size=4)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got[1], _naive_causal(*(a[1].astype(float) for a in (Q, K, V))),
                               atol=1e-5)


def test_causal_online_attention_wants_one_key_per_query():
    with pytest.raises(ValueError, match=r"causal_online_softmax_attention: causal attention needs "
                                         r"as many queries as keys"):
        reference.causal_online_softmax_attention(np.zeros((3, 2)), np.zeros((4, 2)), np.zeros((4, 2)))
