"""Unit tests of helpers.reference.

Expected values are worked out by hand on tiny inputs (written out in the
comments) or by a plainly different method (loops, per-head slices), never copied
from the code under test.
"""

import warnings

import numpy as np
import pytest

from helpers import reference as ref


# ----------------------------------------------------------------- project_qkv
def test_project_qkv_by_hand():
    X = np.array([[1.0, 2.0], [0.0, 1.0]])          # (n=2, d_model=2)
    W_q = np.array([[1.0], [0.0]])                  # picks column 0 of X
    W_k = np.array([[0.0], [1.0]])                  # picks column 1 of X
    W_v = np.array([[1.0, 1.0], [1.0, -1.0]])       # (sum, difference)
    Q, K, V = ref.project_qkv(X, W_q, W_k, W_v)
    np.testing.assert_array_equal(Q, [[1.0], [0.0]])
    np.testing.assert_array_equal(K, [[2.0], [1.0]])
    np.testing.assert_array_equal(V, [[3.0, -1.0], [1.0, -1.0]])


def test_project_qkv_row_by_row_equals_matrix_product():
    rng = np.random.default_rng(1)
    X, W = rng.standard_normal((5, 3)), rng.standard_normal((3, 2))
    Q, K, V = ref.project_qkv(X, W, W, W)
    loop = np.array([[sum(X[i, m] * W[m, j] for m in range(3)) for j in range(2)] for i in range(5)])
    np.testing.assert_allclose(Q, loop)


# ----------------------------------------------------------------- attention_scores
def test_attention_scores_by_hand():
    Q = np.array([[1.0, 0.0], [0.0, 1.0]])
    K = np.array([[1.0, 1.0], [2.0, 0.0], [0.0, 3.0]])
    # Q @ K.T = [[1, 2, 0], [1, 0, 3]], divided by sqrt(d_k) = sqrt(2)
    expected = np.array([[1.0, 2.0, 0.0], [1.0, 0.0, 3.0]]) / np.sqrt(2)
    np.testing.assert_allclose(ref.attention_scores(Q, K), expected)


def test_attention_scores_uses_d_k_not_n_or_d_v():
    Q, K = np.ones((3, 4)), np.ones((5, 4))          # q.k = 4, sqrt(d_k) = 2
    np.testing.assert_allclose(ref.attention_scores(Q, K), np.full((3, 5), 2.0))


# ----------------------------------------------------------------- softmax
@pytest.mark.parametrize("x, expected", [
    ([0.0, np.log(3.0)], [0.25, 0.75]),                  # e^0 : e^ln3 = 1 : 3
    ([1000.0, 1000.0], [0.5, 0.5]),                      # naive exp(1000) overflows
    ([-1e4, 1e4], [0.0, 1.0]),
    ([0.0, -np.inf], [1.0, 0.0]),                        # -inf means "masked"
    ([np.log(1.0), np.log(2.0), np.log(5.0)], [0.125, 0.25, 0.625]),
])
def test_softmax_by_hand(x, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(ref.softmax(np.array(x)), expected, atol=1e-15)


def test_softmax_all_minus_inf_row_is_zero_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ref.softmax(np.array([[-np.inf, -np.inf], [0.0, 0.0]]))
    np.testing.assert_array_equal(out, [[0.0, 0.0], [0.5, 0.5]])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_sums_to_one_along_axis(axis):
    x = np.random.default_rng(2).standard_normal((3, 4)) * 50
    np.testing.assert_allclose(ref.softmax(x, axis=axis).sum(axis=axis), 1.0)


def test_softmax_axis_zero_is_softmax_of_transpose():
    x = np.random.default_rng(3).standard_normal((3, 4))
    np.testing.assert_allclose(ref.softmax(x, axis=0), ref.softmax(x.T).T)


# ----------------------------------------------------------------- causal_mask
def test_causal_mask_by_hand():
    expected = np.array([[True, False, False],
                         [True, True, False],
                         [True, True, True]])
    np.testing.assert_array_equal(ref.causal_mask(3), expected)
    assert ref.causal_mask(3).dtype == bool


# ----------------------------------------------------------------- attention
def _paper_example():
    # d_k = 1, so the scale 1/sqrt(d_k) is 1.
    Q = np.array([[1.0], [0.0], [1.0]])
    K = np.array([[0.0], [np.log(2.0)], [np.log(5.0)]])
    V = np.array([[8.0, 0.0], [0.0, 8.0], [8.0, 8.0]])
    return Q, K, V


def test_attention_three_tokens_on_paper():
    Q, K, V = _paper_example()
    out, weights = ref.scaled_dot_product_attention(Q, K, V)
    # query 0: scores (0, ln2, ln5) -> e^s = (1, 2, 5) -> weights (1/8, 2/8, 5/8)
    # query 1: scores (0, 0, 0)     -> weights 1/3 each
    np.testing.assert_allclose(weights[0], [1 / 8, 2 / 8, 5 / 8])
    np.testing.assert_allclose(weights[1], [1 / 3, 1 / 3, 1 / 3])
    # out0 = 1/8*(8,0) + 2/8*(0,8) + 5/8*(8,8) = (1+5, 2+5) = (6, 7)
    np.testing.assert_allclose(out[0], [6.0, 7.0])
    np.testing.assert_allclose(out[1], [16 / 3, 16 / 3])


def test_attention_three_tokens_causal_on_paper():
    Q, K, V = _paper_example()
    out, weights = ref.scaled_dot_product_attention(Q, K, V, mask=ref.causal_mask(3))
    # query 0 sees only key 0; query 1 sees keys 0, 1 (scores 0, 0 -> 1/2 each)
    np.testing.assert_allclose(weights[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(weights[1], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(weights[2], [1 / 8, 2 / 8, 5 / 8])
    np.testing.assert_allclose(out[1], [4.0, 4.0])


def test_causal_weights_are_zero_above_diagonal():
    rng = np.random.default_rng(4)
    Q, K, V = (rng.standard_normal((6, 3)) for _ in range(3))
    _, weights = ref.scaled_dot_product_attention(Q, K, V, mask=ref.causal_mask(6))
    assert np.all(weights[np.triu_indices(6, k=1)] == 0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)


def test_fully_masked_row_gives_zero_weights_and_output_without_warning():
    Q, K, V = _paper_example()
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, weights = ref.scaled_dot_product_attention(Q, K, V, mask=mask)
    np.testing.assert_array_equal(weights[1], 0.0)
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_allclose(out[0], [6.0, 7.0])


def test_attention_rows_sum_to_one_for_large_scores():
    Q = np.array([[100.0, 100.0]])
    K = np.array([[100.0, 100.0], [-100.0, 0.0]])
    _, weights = ref.scaled_dot_product_attention(Q, K, np.eye(2))
    np.testing.assert_allclose(weights, [[1.0, 0.0]])


# ----------------------------------------------------------------- heads
def test_split_heads_by_hand():
    X = np.arange(12.0).reshape(2, 6)    # 2 tokens, d_model 6
    H = ref.split_heads(X, 3)            # 3 heads of 2 columns
    np.testing.assert_array_equal(H[0], [[0, 1], [6, 7]])
    np.testing.assert_array_equal(H[1], [[2, 3], [8, 9]])
    np.testing.assert_array_equal(H[2], [[4, 5], [10, 11]])


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
def test_split_then_merge_is_identity(num_heads):
    X = np.random.default_rng(5).standard_normal((5, 8))
    np.testing.assert_array_equal(ref.merge_heads(ref.split_heads(X, num_heads)), X)


def test_merge_heads_by_hand():
    H = np.array([[[1.0], [2.0]], [[3.0], [4.0]]])   # 2 heads, 2 tokens, d_head 1
    np.testing.assert_array_equal(ref.merge_heads(H), [[1.0, 3.0], [2.0, 4.0]])


def _mha_by_slices(X, W_q, W_k, W_v, W_o, h, mask=None):
    """Multi-head attention written as a loop over heads, each using a column slice."""
    d_head = X.shape[1] // h
    outs, maps = [], []
    for i in range(h):
        cols = slice(i * d_head, (i + 1) * d_head)
        Q, K, V = X @ W_q[:, cols], X @ W_k[:, cols], X @ W_v[:, cols]
        s = Q @ K.T / np.sqrt(d_head)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(axis=1, keepdims=True))
        w = w / w.sum(axis=1, keepdims=True)
        outs.append(w @ V)
        maps.append(w)
    return np.concatenate(outs, axis=1) @ W_o, np.stack(maps)


@pytest.mark.parametrize("h", [1, 2, 3, 6])
@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_equals_loop_over_head_slices(h, causal):
    rng = np.random.default_rng(6)
    X = rng.standard_normal((7, 6))
    W = [rng.standard_normal((6, 6)) for _ in range(4)]
    mask = ref.causal_mask(7) if causal else None
    out, weights = ref.multi_head_attention(X, *W, num_heads=h, mask=mask)
    out2, weights2 = _mha_by_slices(X, *W, h, mask)
    np.testing.assert_allclose(out, out2, atol=1e-12)
    np.testing.assert_allclose(weights, weights2, atol=1e-12)
    assert weights.shape == (h, 7, 7)


# ----------------------------------------------------------------- cost
def test_attention_flops_by_hand():
    # n = 2, d = 3: projections 3 * 2*n*d^2 = 3*2*2*9 = 108; scores 2*n^2*d = 24;
    # weighted sum 24; output projection 2*n*d^2 = 36
    assert ref.attention_flops(2, 3) == {
        "projections": 108, "scores": 24, "weighted_sum": 24, "output_projection": 36}


def test_attention_flops_doubling_n_quadruples_the_grid():
    a, b = ref.attention_flops(100, 64), ref.attention_flops(200, 64)
    assert b["scores"] == 4 * a["scores"]
    assert b["projections"] == 2 * a["projections"]


@pytest.mark.parametrize("k", [1.0, 2.0, 1.5, 3.0])
def test_fit_power_law_recovers_exponent(k):
    sizes = np.array([1.0, 2.0, 4.0, 8.0])
    assert ref.fit_power_law(sizes, 3.0 * sizes ** k) == pytest.approx(k)


def test_fit_power_law_by_hand():
    # points (1, 3), (2, 12), (4, 48): every doubling of size multiplies cost by 4 -> k = 2
    assert ref.fit_power_law([1, 2, 4], [3, 12, 48]) == pytest.approx(2.0)


# ----------------------------------------------------------------- online softmax
@pytest.mark.parametrize("n_k, block", [(10, 3), (10, 10), (10, 64), (9, 1), (128, 32), (130, 128)])
def test_online_attention_equals_naive(n_k, block):
    rng = np.random.default_rng(7)
    Q = rng.standard_normal((6, 4)) * 3
    K = rng.standard_normal((n_k, 4)) * 3
    V = rng.standard_normal((n_k, 5))
    expected, _ = ref.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(ref.online_softmax_attention(Q, K, V, block), expected,
                               rtol=0, atol=1e-10)


def test_online_attention_survives_huge_scores():
    Q = np.array([[1000.0]])
    K = np.array([[1.0], [2.0], [3.0]])                    # scores 1000, 2000, 3000
    V = np.array([[1.0], [2.0], [3.0]])
    np.testing.assert_allclose(ref.online_softmax_attention(Q, K, V, 1), [[3.0]])


# ----------------------------------------------------------------- adam_step
def test_adam_first_step_moves_every_entry_by_lr_downhill():
    # t = 1, m = v = 0: m_hat = grad and v_hat = grad**2, so the step is lr * grad / (|grad| + eps).
    param, grad = np.array([1.0, -2.0, 0.5]), np.array([0.5, -4.0, 1e-3])
    new, m, v = ref.adam_step(param, grad, np.zeros(3), np.zeros(3), t=1, lr=0.01)
    np.testing.assert_allclose(new, param - 0.01 * grad / (np.abs(grad) + 1e-8), rtol=1e-12)
    np.testing.assert_allclose(m, [0.05, -0.4, 1e-4])         # 0.1 * grad
    np.testing.assert_allclose(v, [0.00025, 0.016, 1e-9])     # 0.001 * grad**2


def test_adam_second_step_by_hand():
    # m1 = 0.1 g1 = 0.2, v1 = 0.001 g1^2 = 0.004 (g1 = 2); g2 = 1:
    # m2 = 0.9*0.2 + 0.1*1 = 0.28, v2 = 0.999*0.004 + 0.001*1 = 0.004996,
    # m_hat = 0.28 / 0.19, v_hat = 0.004996 / (1 - 0.999**2) = 0.004996 / 0.001999
    new, m, v = ref.adam_step(np.array([3.0]), np.array([1.0]), np.array([0.2]),
                                   np.array([0.004]), t=2, lr=0.1, eps=0.0)
    expected = 3.0 - 0.1 * (0.28 / 0.19) / np.sqrt(0.004996 / 0.001999)
    assert new[0] == pytest.approx(expected, rel=1e-12)
    assert m[0] == pytest.approx(0.28) and v[0] == pytest.approx(0.004996)


def test_adam_leaves_its_inputs_alone():
    arrays = [np.array([1.0, 2.0]), np.array([0.3, -0.2]), np.array([0.1, 0.1]), np.array([0.2, 0.3])]
    before = [a.copy() for a in arrays]
    ref.adam_step(*arrays, t=4)
    assert all(np.array_equal(a, b) for a, b in zip(arrays, before))


# ----------------------------------------------------------------- dtype and batches
FLOAT32_CALLS = {
    "project_qkv": lambda a: ref.project_qkv(a, *[np.ones((3, 3), np.float32)] * 3)[0],
    "attention_scores": lambda a: ref.attention_scores(a, a),
    "softmax": lambda a: ref.softmax(a),
    "scaled_dot_product_attention": lambda a: ref.scaled_dot_product_attention(a, a, a)[0],
    "split_heads": lambda a: ref.split_heads(a, 3),
    "merge_heads": lambda a: ref.merge_heads(a[None]),
    "multi_head_attention": lambda a: ref.multi_head_attention(
        a, *[np.eye(3, dtype=np.float32)] * 4, num_heads=3)[0],
    "online_softmax_attention": lambda a: ref.online_softmax_attention(a, a, a, 2),
    "adam_step": lambda a: ref.adam_step(a, a, a, a * a, t=3)[0],
}


@pytest.mark.parametrize("name", sorted(FLOAT32_CALLS))
def test_float32_in_float32_out(name):
    a = np.random.default_rng(8).standard_normal((4, 3)).astype(np.float32)
    assert FLOAT32_CALLS[name](a).dtype == np.float32


def test_batched_attention_equals_each_batch_alone():
    rng = np.random.default_rng(9)
    Q, K, V = rng.standard_normal((2, 3, 5, 4)), rng.standard_normal((2, 3, 6, 4)), \
        rng.standard_normal((2, 3, 6, 2))
    out, weights = ref.scaled_dot_product_attention(Q, K, V)
    online = ref.online_softmax_attention(Q, K, V, 4)
    for b in range(2):
        for c in range(3):
            o, w = ref.scaled_dot_product_attention(Q[b, c], K[b, c], V[b, c])
            np.testing.assert_allclose(out[b, c], o)
            np.testing.assert_allclose(weights[b, c], w)
            np.testing.assert_allclose(online[b, c], o, atol=1e-12)


def test_batched_multi_head_equals_each_sentence_alone():
    rng = np.random.default_rng(10)
    X = rng.standard_normal((3, 5, 8))
    W = [rng.standard_normal((8, 8)) for _ in range(4)]
    out, weights = ref.multi_head_attention(X, *W, num_heads=4)
    assert weights.shape == (3, 4, 5, 5)
    for b in range(3):
        o, w = ref.multi_head_attention(X[b], *W, num_heads=4)
        np.testing.assert_allclose(out[b], o)
        np.testing.assert_allclose(weights[b], w)


# ----------------------------------------------------------------- errors
E = np.ones
ERRORS = [
    (lambda: ref.attention_scores(E((4, 8)), E((5, 6))), ValueError,
     "attention_scores: Q has d_k=8 but K has d_k=6 (Q (4, 8), K (5, 6))"),
    (lambda: ref.split_heads(E((3, 10)), 3), ValueError,
     "split_heads: d_model=10 is not divisible by num_heads=3"),
    (lambda: ref.split_heads(E((3, 10)), 0), ValueError, "split_heads: num_heads must be positive"),
    (lambda: ref.split_heads(E((3, 10)), 2.0), TypeError, "split_heads: num_heads must be a whole number"),
    (lambda: ref.project_qkv(E((4, 5)), E((4, 2)), E((5, 2)), E((5, 2))), ValueError,
     "project_qkv: X has d_model=5 but W_q has 4 rows (X (4, 5), W_q (4, 2))"),
    (lambda: ref.project_qkv(E((4, 5)), E((5, 2)), E((5, 3)), E((5, 2))), ValueError,
     "project_qkv: W_q has d_k=2 but W_k has d_k=3"),
    (lambda: ref.project_qkv([[1, 2]], "W", E((2, 1)), E((2, 1))), TypeError,
     "project_qkv: W_q must be a NumPy array, got str"),
    (lambda: ref.attention_scores(E(4), E((4, 4))), ValueError,
     "attention_scores: Q must have at least 2 dimensions, got shape (4,)"),
    (lambda: ref.scaled_dot_product_attention(E((3, 2)), E((4, 2)), E((5, 2))), ValueError,
     "scaled_dot_product_attention: K has n_k=4 but V has n_k=5"),
    (lambda: ref.scaled_dot_product_attention(E((3, 2)), E((4, 2)), E((4, 2)), mask=E((3, 4))),
     TypeError, "scaled_dot_product_attention: mask must be boolean"),
    (lambda: ref.scaled_dot_product_attention(E((3, 2)), E((4, 2)), E((4, 2)),
                                              mask=E((4, 3), dtype=bool)),
     ValueError, "scaled_dot_product_attention: mask (4, 3) does not broadcast to the scores (3, 4)"),
    (lambda: ref.softmax(np.array([1.0, np.nan])), ValueError, "softmax: x contains NaN"),
    (lambda: ref.softmax(E((2, 2)), axis=2), ValueError, "softmax: axis=2 is out of range"),
    (lambda: ref.softmax(np.array(["a"])), TypeError, "softmax: x must hold real numbers"),
    (lambda: ref.causal_mask(0), ValueError, "causal_mask: n must be positive, got n=0"),
    (lambda: ref.causal_mask(2.5), TypeError, "causal_mask: n must be a whole number"),
    (lambda: ref.merge_heads(E((3, 4))), ValueError, "merge_heads: H must have at least 3 dimensions"),
    (lambda: ref.multi_head_attention(E((3, 4)), E((4, 4)), E((4, 4)), E((4, 3)), E((4, 4)), 2),
     ValueError, "multi_head_attention: W_v must be (d_model, d_model) = (4, 4)"),
    (lambda: ref.multi_head_attention(E((3, 4)), *[E((4, 4))] * 4, num_heads=3), ValueError,
     "multi_head_attention: d_model=4 is not divisible by num_heads=3"),
    (lambda: ref.multi_head_attention(E((3, 4)), *[E((4, 4))] * 4, num_heads=-2), ValueError,
     "multi_head_attention: num_heads must be positive"),
    (lambda: ref.attention_flops(0, 8), ValueError, "attention_flops: n must be positive"),
    (lambda: ref.attention_flops(8, -1), ValueError, "attention_flops: d_model must be positive"),
    (lambda: ref.fit_power_law([1, 2, 3], [1, 2]), ValueError,
     "fit_power_law: sizes has 3 values but costs has 2"),
    (lambda: ref.fit_power_law([1, 2], [1, 0]), ValueError,
     "fit_power_law: costs must be positive and finite"),
    (lambda: ref.fit_power_law([-1, 2], [1, 2]), ValueError,
     "fit_power_law: sizes must be positive and finite"),
    (lambda: ref.fit_power_law([2, 2], [1, 2]), ValueError, "fit_power_law: all sizes are equal"),
    (lambda: ref.fit_power_law([2], [1]), ValueError, "fit_power_law: need at least 2 points"),
    (lambda: ref.online_softmax_attention(E((3, 2)), E((4, 2)), E((4, 2)), block_size=0),
     ValueError, "online_softmax_attention: block_size must be positive"),
    (lambda: ref.online_softmax_attention(E((3, 2)), E((4, 3)), E((4, 2))), ValueError,
     "online_softmax_attention: Q has d_k=2 but K has d_k=3"),
    (lambda: ref.scaled_dot_product_attention(E((2, 3, 2)), E((4, 4, 2)), E((4, 4, 2))),
     ValueError, "scaled_dot_product_attention: the leading (batch) dimensions do not match"),
    (lambda: ref.adam_step(E((2, 3)), E((3, 2)), E((2, 3)), E((2, 3)), 1), ValueError,
     "adam_step: grad must have the shape of param (2, 3), got (3, 2)"),
    (lambda: ref.adam_step(E(3), E(3), E(3), E(3), 0), ValueError, "adam_step: t must be positive"),
    (lambda: ref.adam_step(E(3), E(3), E(3), E(3), 1.0), TypeError,
     "adam_step: t must be a whole number"),
]


@pytest.mark.parametrize("call, error, message", ERRORS, ids=[m[:60] for _, _, m in ERRORS])
def test_bad_input_raises_clear_error(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)
