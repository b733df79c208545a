"""Lesson 07's gradients in helpers.reference, checked three independent ways.

1. Against a tiny reverse-mode automatic differentiation (tests/autodiff.py), which
   builds the softmax and attention from exp, sum, max, where, divide and matmul and
   gets gradients from the chain rule one operation at a time: agreement to 1e-10 in
   float64, on random shapes with batch dimensions, masks and fully masked rows.
2. Against central finite differences written here (a loop over the entries).
3. Against tiny cases worked out by hand in the comments.

The automatic differentiation is itself checked first, against finite differences
and by hand, so that a bug in it cannot hide a bug in the references.
"""

import warnings

import numpy as np
import pytest

import autodiff as ad
from helpers import reference as ref
from finite_differences import central_differences

TIGHT = dict(rtol=1e-10, atol=1e-10)          # reference vs automatic differentiation, float64


def random_mask(rng, shape, empty_rows=()):
    """A random boolean mask with at least one True per row, except the rows listed (all False)."""
    mask = rng.random(shape) < 0.6
    mask[..., np.arange(shape[-2]), rng.integers(0, shape[-1], shape[-2])] = True
    for r in empty_rows:
        mask[..., r, :] = False
    return mask


def make_mask(rng, kind, n_q, n_k):
    """None, a causal mask, or a random mask whose row 1 is empty (fully masked)."""
    if kind == "causal":
        return ref.causal_mask(n_q)
    if kind == "random with an empty row":
        return random_mask(rng, (n_q, n_k), empty_rows=[1])
    return None


# ----------------------------------------------------------------- the checker, checked
def test_autodiff_by_hand_exp_and_sum():
    # d/dx sum(exp(x)) = exp(x)
    x = np.array([0.0, 1.0, -2.0])
    (g,) = ad.grad(ad.sum_(ad.exp(v := ad.Var(x))), [v])
    np.testing.assert_allclose(g, np.exp(x), rtol=1e-15)


def test_autodiff_by_hand_matmul():
    # L = sum((A @ B) * C): dA = C @ B^T, dB = A^T @ C. A = [[1, 2]], B = [[3], [4]], C = [[5]]:
    # dA = [[15, 20]], dB = [[5], [10]]
    dA, dB = ad.gradients_of_weighted_sum(ad.matmul, [np.array([[1.0, 2.0]]),
                                                      np.array([[3.0], [4.0]])], np.array([[5.0]]))
    np.testing.assert_array_equal(dA, [[15.0, 20.0]])
    np.testing.assert_array_equal(dB, [[5.0], [10.0]])


def test_autodiff_by_hand_divide_by_row_sum():
    # y = x / sum(x) for x = [1, 3]: y = [1/4, 3/4]; L = y_0:
    # dL/dx_0 = 1/4 - 1/16 = 3/16, dL/dx_1 = -1/16
    x = ad.Var(np.array([1.0, 3.0]))
    y = ad.divide(x, ad.sum_(x, keepdims=True))
    (g,) = ad.grad(ad.sum_(ad.multiply_const(y, np.array([1.0, 0.0]))), [x])
    np.testing.assert_allclose(g, [3 / 16, -1 / 16], rtol=1e-15)


@pytest.mark.parametrize("masked", [False, True])
def test_autodiff_attention_matches_finite_differences(masked):
    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 2))
    mask = random_mask(rng, (3, 5), empty_rows=[1]) if masked else None
    d_out = rng.standard_normal((2, 3, 2))
    grads = ad.gradients_of_weighted_sum(lambda q, k, v: ad.attention(q, k, v, mask), [Q, K, V], d_out)
    for i, x in enumerate([Q, K, V]):
        def loss(z, i=i):
            args = [Q, K, V]
            args[i] = z
            return np.sum(ad.attention(*map(ad.Var, args), mask).value * d_out)
        np.testing.assert_allclose(grads[i], central_differences(loss, x), atol=1e-7)


def test_autodiff_forward_is_the_reference_forward():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2, 5, 6))
    W = [rng.standard_normal((6, 6)) for _ in range(4)]
    mask = random_mask(rng, (5, 5), empty_rows=[0])
    out = ad.multi_head_attention(*map(ad.Var, [X, *W]), 3, mask).value
    np.testing.assert_allclose(out, ref.multi_head_attention(X, *W, 3, mask)[0], atol=1e-12)


# ----------------------------------------------------------------- softmax_backward
SOFTMAX_SHAPES = [((5,), -1), ((3, 4), -1), ((4, 3), 0), ((2, 3, 6), -1), ((2, 3, 6), 1), ((1, 1), -1)]


@pytest.mark.parametrize("shape, axis", SOFTMAX_SHAPES)
def test_softmax_backward_equals_autodiff(shape, axis):
    rng = np.random.default_rng(2)
    x, dy = rng.standard_normal(shape) * 3, rng.standard_normal(shape)
    (expected,) = ad.gradients_of_weighted_sum(lambda v: ad.softmax(v, axis=axis), [x], dy)
    got = ref.softmax_backward(ref.softmax(x, axis=axis), dy, axis=axis)
    np.testing.assert_allclose(got, expected, **TIGHT)


@pytest.mark.parametrize("shape, axis", SOFTMAX_SHAPES)
def test_softmax_backward_equals_finite_differences(shape, axis):
    rng = np.random.default_rng(3)
    x, dy = rng.standard_normal(shape), rng.standard_normal(shape)
    expected = central_differences(lambda z: np.sum(ref.softmax(z, axis=axis) * dy), x)
    np.testing.assert_allclose(ref.softmax_backward(ref.softmax(x, axis=axis), dy, axis=axis),
                               expected, atol=1e-8)


def test_softmax_backward_of_two_entries_by_hand():
    # y = softmax([0, ln 3]) = [1/4, 3/4]. Jacobian diag(y) - y y^T = [[3/16, -3/16], [-3/16, 3/16]].
    # dy = [1, 0] (the loss is y_0): dx = J^T dy = [3/16, -3/16].
    y = np.array([0.25, 0.75])
    np.testing.assert_allclose(ref.softmax_backward(y, np.array([1.0, 0.0])), [3 / 16, -3 / 16],
                               rtol=1e-15)
    # dy = [2, 5]: y . dy = 1/2 + 15/4 = 17/4; dx = y * (dy - 17/4) = [-9/16, 9/16]
    np.testing.assert_allclose(ref.softmax_backward(y, np.array([2.0, 5.0])), [-9 / 16, 9 / 16],
                               rtol=1e-15)


def test_softmax_backward_of_a_constant_upstream_gradient_is_zero():
    # softmax sums to 1 whatever x is, so L = c * sum(y) does not depend on x
    y = ref.softmax(np.random.default_rng(4).standard_normal((3, 5)))
    # atol: the rounding of sum(y) = 1
    np.testing.assert_allclose(ref.softmax_backward(y, np.full((3, 5), 7.0)), 0.0, atol=1e-13)


def test_softmax_backward_entries_sum_to_zero_along_the_axis():
    rng = np.random.default_rng(5)
    y = ref.softmax(rng.standard_normal((4, 6)), axis=0)
    dx = ref.softmax_backward(y, rng.standard_normal((4, 6)), axis=0)
    np.testing.assert_allclose(dx.sum(axis=0), 0.0, atol=1e-14)   # rounding


def test_softmax_backward_fully_masked_and_masked_entries_get_zero():
    y = ref.softmax(np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0]]))   # row 0: all masked
    dx = ref.softmax_backward(y, np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    assert np.all(np.isfinite(dx))
    np.testing.assert_array_equal(dx[0], 0.0)
    assert dx[1, 1] == 0.0


def test_softmax_backward_saturated_row_has_almost_no_gradient():
    # scores 0 and 40: y ≈ [e^-40, 1], every entry of the Jacobian is at most e^-40 ≈ 4e-18
    y = ref.softmax(np.array([0.0, 40.0]))
    assert np.abs(ref.softmax_backward(y, np.array([1.0, -1.0]))).max() < 1e-17


def test_softmax_backward_keeps_float32():
    y = ref.softmax(np.ones((2, 3), np.float32))
    assert ref.softmax_backward(y, np.ones((2, 3), np.float32)).dtype == np.float32


# ----------------------------------------------------------------- attention_backward
def _attention_grads_by_autodiff(Q, K, V, d_out, mask):
    return ad.gradients_of_weighted_sum(lambda q, k, v: ad.attention(q, k, v, mask), [Q, K, V], d_out)


ATTENTION_SHAPES = [  # (batch, n_q, n_k, d_k, d_v, mask kind)
    ((), 4, 4, 3, 2, None),
    ((), 3, 6, 5, 4, None),
    ((), 5, 5, 4, 3, "causal"),
    ((), 4, 6, 2, 3, "random with an empty row"),
    ((2,), 3, 5, 4, 2, "random with an empty row"),
    ((2, 3), 4, 4, 8, 1, "causal"),
    ((), 1, 1, 3, 2, None),
]


@pytest.mark.parametrize("batch, n_q, n_k, d_k, d_v, kind", ATTENTION_SHAPES)
def test_attention_backward_equals_autodiff(batch, n_q, n_k, d_k, d_v, kind):
    rng = np.random.default_rng(6)
    Q = rng.standard_normal((*batch, n_q, d_k)) * 2
    K = rng.standard_normal((*batch, n_k, d_k)) * 2
    V = rng.standard_normal((*batch, n_k, d_v))
    d_out = rng.standard_normal((*batch, n_q, d_v))
    mask = make_mask(rng, kind, n_q, n_k)
    _, weights = ref.scaled_dot_product_attention(Q, K, V, mask)
    got = ref.attention_backward(Q, K, V, weights, d_out)
    for g, e, name in zip(got, _attention_grads_by_autodiff(Q, K, V, d_out, mask), "QKV"):
        np.testing.assert_allclose(g, e, **TIGHT, err_msg=f"d{name}")


@pytest.mark.parametrize("masked", [False, True])
def test_attention_backward_equals_finite_differences(masked):
    rng = np.random.default_rng(7)
    Q, K, V = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
    d_out = rng.standard_normal((2, 4, 2))
    mask = random_mask(rng, (4, 5), empty_rows=[2]) if masked else None
    got = ref.attention_backward(Q, K, V, ref.scaled_dot_product_attention(Q, K, V, mask)[1], d_out)
    for i, x in enumerate([Q, K, V]):
        def loss(z, i=i):
            args = [Q, K, V]
            args[i] = z
            return np.sum(ref.scaled_dot_product_attention(*args, mask)[0] * d_out)
        np.testing.assert_allclose(got[i], central_differences(loss, x), atol=1e-7)


def test_attention_backward_one_query_two_keys_by_hand():
    # d_k = 4, q = [2 ln 3, 0, 0, 0], keys k_1 = [1, 0, 0, 0], k_2 = 0: scores [2 ln 3 / 2, 0] =
    # [ln 3, 0], weights w = [3/4, 1/4]. Values v_1 = 1, v_2 = 0 (d_v = 1), d_out = 1, so L = out.
    # dV = W^T d_out = [[3/4], [1/4]].  dW = d_out V^T = [1, 0].
    # dS = w * (dW - w . dW) = [3/4 * 1/4, 1/4 * (-3/4)] = [3/16, -3/16].
    # dQ = dS @ K / sqrt(4) = [3/32, 0, 0, 0];  dK = dS^T Q / 2: dk_1 = 3/16 * q / 2, dk_2 = -3/16 * q / 2.
    q = np.array([[2 * np.log(3), 0.0, 0.0, 0.0]])
    K = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    V = np.array([[1.0], [0.0]])
    weights = np.array([[0.75, 0.25]])
    dQ, dK, dV = ref.attention_backward(q, K, V, weights, np.array([[1.0]]))
    np.testing.assert_allclose(dV, [[0.75], [0.25]], rtol=1e-14)
    np.testing.assert_allclose(dQ, [[3 / 32, 0.0, 0.0, 0.0]], rtol=1e-14)
    np.testing.assert_allclose(dK, [[3 / 16 * np.log(3), 0, 0, 0], [-3 / 16 * np.log(3), 0, 0, 0]],
                               rtol=1e-14, atol=1e-16)


def test_attention_backward_dV_is_W_transposed_times_d_out_on_2x2():
    # W = [[3/4, 1/4], [1/2, 1/2]] (not symmetric), d_out = I: dV = W^T = [[3/4, 1/2], [1/4, 1/2]]
    # (dV = W @ d_out would be W itself). Q = [[ln 3], [0]], K = [[1], [0]], d_k = 1 give this W.
    Q, K = np.array([[np.log(3)], [0.0]]), np.array([[1.0], [0.0]])
    V = np.array([[1.0, 2.0], [3.0, 4.0]])
    W = np.array([[0.75, 0.25], [0.5, 0.5]])
    np.testing.assert_allclose(ref.scaled_dot_product_attention(Q, K, V)[1], W, rtol=1e-15)
    _, _, dV = ref.attention_backward(Q, K, V, W, np.eye(2))
    np.testing.assert_allclose(dV, [[0.75, 0.5], [0.25, 0.5]], rtol=1e-15)


def test_attention_backward_with_one_token_passes_d_out_to_V_only():
    # n = 1: the single weight is 1 whatever q and k are, so out = v:
    # dV = d_out, dQ = dK = 0
    rng = np.random.default_rng(8)
    Q, K, V = rng.standard_normal((1, 3)), rng.standard_normal((1, 3)), rng.standard_normal((1, 2))
    d_out = np.array([[2.0, -5.0]])
    dQ, dK, dV = ref.attention_backward(Q, K, V, np.ones((1, 1)), d_out)
    np.testing.assert_array_equal(dV, d_out)
    np.testing.assert_array_equal(dQ, 0.0)
    np.testing.assert_array_equal(dK, 0.0)


def test_attention_backward_fully_masked_row_gives_zeros_not_nan_without_warning():
    rng = np.random.default_rng(9)
    Q, K, V = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    mask = random_mask(rng, (3, 5), empty_rows=[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, weights = ref.scaled_dot_product_attention(Q, K, V, mask)
        dQ, dK, dV = ref.attention_backward(Q, K, V, weights, rng.standard_normal((3, 2)))
    np.testing.assert_array_equal(dQ[0], 0.0)
    assert all(np.all(np.isfinite(g)) for g in (dQ, dK, dV))


def test_attention_backward_key_nobody_may_see_gets_no_gradient():
    # key 3 is masked for every query: its k and v take no part in the output
    rng = np.random.default_rng(10)
    Q, K, V = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    mask = np.ones((4, 5), dtype=bool)
    mask[:, 3] = False
    _, weights = ref.scaled_dot_product_attention(Q, K, V, mask)
    _, dK, dV = ref.attention_backward(Q, K, V, weights, rng.standard_normal((4, 2)))
    np.testing.assert_array_equal(dK[3], 0.0)
    np.testing.assert_array_equal(dV[3], 0.0)


def test_attention_backward_keeps_float32():
    a = np.random.default_rng(11).standard_normal((3, 4)).astype(np.float32)
    _, w = ref.scaled_dot_product_attention(a, a, a)
    assert all(g.dtype == np.float32 for g in ref.attention_backward(a, a, a, w, a))


def test_attention_backward_shared_keys_sum_the_batch():
    # K and V without the batch axis are shared by both batch entries: their gradient is the sum
    rng = np.random.default_rng(12)
    Q, K, V = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    d_out = rng.standard_normal((2, 3, 2))
    _, w = ref.scaled_dot_product_attention(Q, K, V)
    _, dK, dV = ref.attention_backward(Q, K, V, w, d_out)
    singles = [ref.attention_backward(Q[b], K, V, w[b], d_out[b]) for b in range(2)]
    np.testing.assert_allclose(dK, singles[0][1] + singles[1][1], atol=1e-14)
    np.testing.assert_allclose(dV, singles[0][2] + singles[1][2], atol=1e-14)


# ----------------------------------------------------------------- numerical_gradient
def test_numerical_gradient_of_a_quadratic_is_exact_up_to_rounding():
    # f = sum(a * x^2): (f(x+e) - f(x-e)) / 2e = a * 4 x e / 2e = 2 a x exactly (no O(eps^2) term)
    a = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    x = np.array([[0.3, -1.2, 2.0], [5.0, 0.0, -0.7]])
    got = ref.numerical_gradient(lambda z: np.sum(a * z ** 2), x, eps=1e-3)
    np.testing.assert_allclose(got, 2 * a * x, atol=1e-9)


def test_numerical_gradient_error_is_eps_squared_on_a_cubic():
    # f = sum(x^3): the central difference is 3 x^2 + eps^2 exactly; a forward one would be off by 3 x eps
    x = np.array([1.0, 2.0, -3.0])
    got = ref.numerical_gradient(lambda z: np.sum(z ** 3), x, eps=1e-2)
    np.testing.assert_allclose(got, 3 * x ** 2 + 1e-4, rtol=1e-10)


def test_numerical_gradient_leaves_x_as_it_was_and_keeps_its_shape():
    x = np.random.default_rng(13).standard_normal((2, 3, 4))
    before = x.copy()
    got = ref.numerical_gradient(lambda z: np.sum(np.sin(z)), x)
    np.testing.assert_array_equal(x, before)
    assert got.shape == x.shape
    np.testing.assert_allclose(got, np.cos(x), atol=1e-8)


def test_numerical_gradient_sees_each_entry_separately():
    # f looks at entry (1, 0) only: every other entry's gradient is exactly 0
    x = np.arange(6.0).reshape(3, 2)
    got = ref.numerical_gradient(lambda z: 5.0 * z[1, 0], x)
    expected = np.zeros((3, 2))
    expected[1, 0] = 5.0
    np.testing.assert_allclose(got, expected, atol=1e-9)


def test_numerical_gradient_of_a_single_number_and_of_float32():
    # d/dx x^2 at x = 3 is 6; a float32 x gives a float32 gradient
    np.testing.assert_allclose(ref.numerical_gradient(lambda z: z ** 2, np.array(3.0)), 6.0, rtol=1e-8)
    x32 = np.array([1.0, 2.0], dtype=np.float32)
    assert ref.numerical_gradient(lambda z: float(np.sum(z)), x32, eps=1e-2).dtype == np.float32


def test_numerical_gradient_agrees_with_attention_backward():
    rng = np.random.default_rng(14)
    Q, K, V = rng.standard_normal((3, 4)), rng.standard_normal((4, 4)), rng.standard_normal((4, 2))
    d_out = rng.standard_normal((3, 2))
    dQ, _, _ = ref.attention_backward(Q, K, V, ref.scaled_dot_product_attention(Q, K, V)[1], d_out)
    num = ref.numerical_gradient(lambda q: np.sum(ref.scaled_dot_product_attention(q, K, V)[0] * d_out), Q)
    np.testing.assert_allclose(num, dQ, atol=1e-8)


# ----------------------------------------------------------------- multi_head_attention_backward
MHA_SHAPES = [  # (batch, n, d_model, num_heads, mask kind)
    ((), 4, 6, 2, None),
    ((), 5, 6, 3, "causal"),
    ((), 3, 4, 1, None),
    ((), 4, 4, 4, "random with an empty row"),
    ((2,), 5, 8, 2, "random with an empty row"),
    ((2,), 3, 6, 3, "causal"),
    ((), 1, 4, 2, None),
]
KEYS = ["X", "W_q", "W_k", "W_v", "W_o"]


def _mha_inputs(rng, batch, n, d_model, kind):
    X = rng.standard_normal((*batch, n, d_model))
    W = [rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) * 2 for _ in range(4)]
    d_out = rng.standard_normal((*batch, n, d_model))
    mask = make_mask(rng, kind, n, n)
    return X, W, d_out, mask


@pytest.mark.parametrize("batch, n, d_model, h, kind", MHA_SHAPES)
def test_multi_head_backward_equals_autodiff(batch, n, d_model, h, kind):
    rng = np.random.default_rng(15)
    X, W, d_out, mask = _mha_inputs(rng, batch, n, d_model, kind)
    got = ref.multi_head_attention_backward(X, *W, h, d_out, mask)
    expected = ad.gradients_of_weighted_sum(
        lambda *v: ad.multi_head_attention(*v, h, mask), [X, *W], d_out)
    assert sorted(got) == sorted(KEYS)
    for key, e in zip(KEYS, expected):
        np.testing.assert_allclose(got[key], e, **TIGHT, err_msg=key)


def test_multi_head_backward_equals_finite_differences():
    rng = np.random.default_rng(16)
    X, W, d_out, mask = _mha_inputs(rng, (2,), 4, 6, "random with an empty row")
    got = ref.multi_head_attention_backward(X, *W, 3, d_out, mask)
    for i, key in enumerate(KEYS):
        def loss(z, i=i):
            args = [X, *W]
            args[i] = z
            return np.sum(ref.multi_head_attention(*args, 3, mask)[0] * d_out)
        np.testing.assert_allclose(got[key], central_differences(loss, [X, *W][i]), atol=1e-7,
                                   err_msg=key)


def test_multi_head_backward_with_one_head_is_single_head_attention_backward():
    # one head: d_merged = d_out @ W_o^T flows into attention_backward unchanged, then
    # dW_q = X^T dQ and dX sums the three paths (written out here with plain matrices)
    rng = np.random.default_rng(17)
    X, (W_q, W_k, W_v, W_o), d_out, _ = _mha_inputs(rng, (), 4, 3, None)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    heads, w = ref.scaled_dot_product_attention(Q, K, V)
    dQ, dK, dV = ref.attention_backward(Q, K, V, w, d_out @ W_o.T)
    got = ref.multi_head_attention_backward(X, W_q, W_k, W_v, W_o, 1, d_out)
    np.testing.assert_allclose(got["W_o"], heads.T @ d_out, atol=1e-13)
    np.testing.assert_allclose(got["W_q"], X.T @ dQ, atol=1e-13)
    np.testing.assert_allclose(got["X"], dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T, atol=1e-13)


def test_multi_head_backward_weights_sum_over_the_batch():
    rng = np.random.default_rng(18)
    X, W, d_out, _ = _mha_inputs(rng, (3,), 4, 4, None)
    got = ref.multi_head_attention_backward(X, *W, 2, d_out)
    singles = [ref.multi_head_attention_backward(X[b], *W, 2, d_out[b]) for b in range(3)]
    for key in KEYS[1:]:
        np.testing.assert_allclose(got[key], sum(s[key] for s in singles), atol=1e-12)
    np.testing.assert_allclose(got["X"], np.stack([s["X"] for s in singles]), atol=1e-13)


def test_multi_head_backward_keeps_float32():
    rng = np.random.default_rng(19)
    X = rng.standard_normal((3, 4)).astype(np.float32)
    W = [np.eye(4, dtype=np.float32)] * 4
    got = ref.multi_head_attention_backward(X, *W, 2, X)
    assert all(g.dtype == np.float32 for g in got.values())



# ----------------------------------------------------------------- errors
E = np.ones
BACKWARD_ERRORS = [
    (lambda: ref.softmax_backward(E((2, 3)), E((3, 2))), ValueError,
     "softmax_backward: y and dy must have the same shape, got y (2, 3), dy (3, 2)"),
    (lambda: ref.softmax_backward(E((2, 3)), E((2, 3)), axis=2), ValueError,
     "softmax_backward: axis=2 is out of range"),
    (lambda: ref.softmax_backward(E((2, 3)), E((2, 3)), axis=1.0), TypeError,
     "softmax_backward: axis must be an int"),
    (lambda: ref.attention_backward(E((4, 8)), E((5, 6)), E((5, 2)), E((4, 5)), E((4, 2))),
     ValueError, "attention_backward: Q has d_k=8 but K has d_k=6"),
    (lambda: ref.attention_backward(E((4, 3)), E((5, 3)), E((5, 2)), E((5, 4)), E((4, 2))),
     ValueError, "attention_backward: weights must have shape (4, 5)"),
    (lambda: ref.attention_backward(E((4, 3)), E((5, 3)), E((5, 2)), E((4, 5)), E((4, 3))),
     ValueError, "attention_backward: d_out must have shape (4, 2)"),
    (lambda: ref.attention_backward(E((4, 3)), E((5, 3)), E((6, 2)), E((4, 5)), E((4, 2))),
     ValueError, "attention_backward: K has n_k=5 but V has n_k=6"),
    (lambda: ref.numerical_gradient(3.0, E(3)), TypeError, "numerical_gradient: f must be a function"),
    (lambda: ref.numerical_gradient(np.sum, E(3), eps=0), ValueError,
     "numerical_gradient: eps must be a positive number"),
    (lambda: ref.numerical_gradient(lambda z: z, E(3)), ValueError,
     "numerical_gradient: f must return a single number"),
    (lambda: ref.multi_head_attention_backward(E((3, 6)), *[E((6, 6))] * 4, 4, E((3, 6))), ValueError,
     "multi_head_attention_backward: d_model=6 is not divisible by num_heads=4"),
    (lambda: ref.multi_head_attention_backward(E((3, 6)), *[E((6, 6))] * 4, 2, E((6, 3))), ValueError,
     "multi_head_attention_backward: d_out must have the shape of the output, (3, 6)"),
    (lambda: ref.multi_head_attention_backward(E((3, 6)), E((6, 5)), *[E((6, 6))] * 3, 2, E((3, 6))),
     ValueError, "multi_head_attention_backward: W_q must be (d_model, d_model)"),
]


@pytest.mark.parametrize("call, error, message", BACKWARD_ERRORS)
def test_backward_bad_input_raises_clear_error(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)
