"""The lesson 07 checks (softmax_backward, attention_backward, numerical_gradient,
multi_head_attention_backward).

Wrong versions are written here the way a learner might write them (loops over rows
and heads, explicit Jacobians, einsum, in-place nudges), independently of the mistake
catalogue in helpers/exercises/lesson07.py; each must get its specific message, on
the visible and on the hidden cases. Correct versions written in other ways must pass.
Both tables (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``) are run in test_checks_versions.py.
(That every catalogued mistake is named by its own message is checked for the whole
catalogue at once, not here.)
"""

import numpy as np
import pytest

from helpers import reference
from helpers.exercises import EXERCISES


# ---------------------------------------------------------------- softmax_backward
def _rows(a, axis):
    """The slices along axis as the rows of a 2-D array, and how to put them back."""
    moved = np.moveaxis(a, axis, -1)
    return moved.reshape(-1, moved.shape[-1]), lambda rows: np.moveaxis(rows.reshape(moved.shape), -1, axis)


def jacobian_rows(y, dy, axis=-1, sign=1.0):
    """Build each slice's Jacobian diag(y) - y y^T (times sign) and multiply: correct but slow."""
    Y, back = _rows(y, axis)
    D, _ = _rows(dy, axis)
    out = np.array([sign * (np.diag(r) - np.outer(r, r)) @ d for r, d in zip(Y, D)])
    return back(out)


SOFTMAX_WRONG = {
    "y - dy (the softmax + cross-entropy shortcut)": (lambda y, dy, axis=-1: y - dy,
                                                      "followed by cross-entropy"),
    "diagonal only": (lambda y, dy, axis=-1: y * (1 - y) * dy, "only the diagonal of the Jacobian"),
    "y * (1 - y) times the whole bracket": (
        lambda y, dy, axis=-1: y * (1 - y) * (dy - (dy * y).sum(axis=axis, keepdims=True)),
        "multiplies the whole bracket"),
    "mean instead of sum": (lambda y, dy, axis=-1: y * (dy - (dy * y).mean(axis=axis, keepdims=True)),
                            "a mean, not a sum"),
    "no factor y": (lambda y, dy, axis=-1: dy - (dy * y).sum(axis=axis, keepdims=True),
                    "the factor y in front is missing"),
    "sum of dy alone": (lambda y, dy, axis=-1: y * (dy - dy.sum(axis=axis, keepdims=True)),
                        "the sum is sum(dy), not sum(dy * y)"),
    "no subtraction": (lambda y, dy, axis=-1: dy * y, "the sum is missing"),
    "Jacobian with the wrong sign": (lambda y, dy, axis=-1: jacobian_rows(y, dy, axis, sign=-1.0),
                                     "the sign is flipped"),
    "axis hard-coded to -1": (lambda y, dy, axis=-1: y * (dy - (y * dy).sum(-1, keepdims=True)),
                              "the axis argument is ignored"),
    "axis hard-coded to 0": (lambda y, dy, axis=-1: y * (dy - (y * dy).sum(0, keepdims=True)),
                             "the sum runs along the wrong axis"),
    "no keepdims": (lambda y, dy, axis=-1: y * (dy - np.sum(y * dy, axis=axis)), "missing keepdims"),
    "sum over everything": (lambda y, dy, axis=-1: y * (dy - np.sum(y * dy)),
                            "the sum runs over the whole array"),
    "Jacobian per slice (right values, but the exercise forbids it)":
        (jacobian_rows, "without building the Jacobian"),
}

SOFTMAX_RIGHT = {
    "the formula": lambda y, dy, axis=-1: y * (dy - np.sum(dy * y, axis=axis, keepdims=True)),
    "expanded": lambda y, dy, axis=-1: y * dy - y * np.sum(y * dy, axis=axis, keepdims=True),
    "einsum on moved axes": lambda y, dy, axis=-1: np.moveaxis(
        np.moveaxis(y, axis, -1) * (np.moveaxis(dy, axis, -1) - np.einsum(
            "...i,...i->...", np.moveaxis(y, axis, -1), np.moveaxis(dy, axis, -1))[..., None]),
        -1, axis),
}


# ---------------------------------------------------------------- attention_backward
d_k_of_notebook = 4     # what a function reading the notebook's global d_k would use
def attention_by_einsum(Q, K, V, W, d_out, *, scale="sqrt", scale_dQ=True, dV_from="W.T",
                        dK_from="dS.T", swap=False, softmax="full", recompute=False):
    """A learner's attention backward with einsum, one switch per mistake."""
    d_k = Q.shape[-1]
    c = {"sqrt": 1 / np.sqrt(d_k), "none": 1.0, "d_k": 1 / d_k,
         "global": 1 / np.sqrt(d_k_of_notebook)}[scale]
    if recompute:
        S = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(d_k)
        E = np.exp(S - S.max(axis=-1, keepdims=True))
        W = E / E.sum(axis=-1, keepdims=True)
    if dV_from == "W.T":
        dV = np.einsum("...qk,...qv->...kv", W, d_out)
    else:                                           # W @ d_out
        dV = np.einsum("...kq,...qv->...kv", W, d_out)
    dW = np.einsum("...qv,...kv->...qk", d_out, V)
    if softmax == "full":
        dS = W * (dW - np.einsum("...qk,...qk->...q", dW, W)[..., None])
    else:                                           # diagonal only
        dS = W * (1 - W) * dW
    dQ = np.einsum("...qk,...kd->...qd", dS, K) * (c if scale_dQ else 1.0)
    if dK_from == "dS.T":
        dK = np.einsum("...qk,...qd->...kd", dS, Q) * c
    else:                                           # dS @ Q
        dK = np.einsum("...kq,...qd->...kd", dS, Q) * c
    return (dK, dQ, dV) if swap else (dQ, dK, dV)


def attention_by_matmul(Q, K, V, W, d_out):
    """Right, with matrix products, swapaxes and the reference softmax_backward."""
    T = lambda A: np.swapaxes(A, -1, -2)   # noqa: E731 - a transpose of the last two axes
    dS = reference.softmax_backward(W, d_out @ T(V))
    return dS @ K / np.sqrt(Q.shape[-1]), T(dS) @ Q / np.sqrt(Q.shape[-1]), T(W) @ d_out


def attention_by_loops(Q, K, V, W, d_out):
    """Right, one query and one key at a time (a leading head axis handled by recursion)."""
    if Q.ndim == 3:
        parts = [attention_by_loops(*(a[i] for a in (Q, K, V, W, d_out))) for i in range(len(Q))]
        return tuple(np.stack(p) for p in zip(*parts))
    n_q, n_k = W.shape
    dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
    for i in range(n_q):
        dw = np.array([d_out[i] @ V[j] for j in range(n_k)])           # d out_i / d w_ij
        ds = W[i] * (dw - W[i] @ dw)
        for j in range(n_k):
            dV[j] += W[i, j] * d_out[i]
            dQ[i] += ds[j] * K[j] / np.sqrt(Q.shape[1])
            dK[j] += ds[j] * Q[i] / np.sqrt(Q.shape[1])
    return dQ, dK, dV


ATTENTION_WRONG = {
    "no 1/sqrt(d_k)": (lambda *a: attention_by_einsum(*a, scale="none"),
                       "the 1/sqrt(d_k) is missing in dQ and dK"),
    "no 1/sqrt(d_k) in dQ": (lambda *a: attention_by_einsum(*a, scale_dQ=False),
                             "the 1/sqrt(d_k) is missing in dQ (dK has it)"),
    "divided by d_k": (lambda *a: attention_by_einsum(*a, scale="d_k"), "divided by d_k instead"),
    "the notebook's d_k": (lambda *a: attention_by_einsum(*a, scale="global"),
                           "scaled by 1/sqrt(4), a fixed size, but this input's d_k"),
    "dV with W": (lambda *a: attention_by_einsum(*a, dV_from="W"),
                  "dV was computed with the weights P instead"),
    "dK = dS @ Q": (lambda *a: attention_by_einsum(*a, dK_from="dS"), "dK is transposed"),
    "dQ and dK swapped": (lambda *a: attention_by_einsum(*a, swap=True), "dQ and dK are swapped"),
    "diagonal softmax backward": (lambda *a: attention_by_einsum(*a, softmax="diagonal"),
                                  "only the diagonal of its Jacobian"),
    "weights recomputed (mask lost)": (lambda *a: attention_by_einsum(*a, recompute=True),
                                       "which loses the mask"),
}

def attention_with_dot_T(Q, K, V, W, d_out):
    """Right in 2-D, but .T reverses every axis of a (h, n, d) array."""
    dV = W.T @ d_out
    dW = d_out @ V.T
    dS = W * (dW - (dW * W).sum(axis=-1, keepdims=True))
    scale = 1 / np.sqrt(Q.shape[-1])
    return dS @ K * scale, dS.T @ Q * scale, dV


ATTENTION_WRONG[".T instead of swapaxes"] = (attention_with_dot_T, "`.T` reverses every axis")

ATTENTION_RIGHT = {
    "einsum": attention_by_einsum,
    "matmul and swapaxes": attention_by_matmul,
    "loops": attention_by_loops,
}


# ---------------------------------------------------------------- numerical_gradient
def nudged_copies(f, x, eps=1e-6, *, step=None, divide=2.0, at_once=False, flat=False):
    """A learner's central differences on copies of x, one switch per mistake."""
    h = eps if step is None else step
    if at_once:
        return np.ones_like(x) * (f(x + h) - f(x - h)) / (divide * h)
    g = np.zeros(x.size)
    for i in range(x.size):
        up, down = x.copy().ravel(), x.copy().ravel()
        up[i] += h
        down[i] -= h
        g[i] = (f(up.reshape(x.shape)) - f(down.reshape(x.shape))) / (divide * h)
    return g if flat else g.reshape(x.shape)


def forward_difference(f, x, eps=1e-6):
    g = np.zeros_like(x)
    fx = f(x)
    for i in np.ndindex(x.shape):
        z = x.copy()
        z[i] += eps
        g[i] = (f(z) - fx) / eps
    return g


def nudges_x_itself(f, x, eps=1e-6, restore=False):
    """Nudges x in place; with restore=True it saves each entry and puts it back exactly."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        up = f(x)
        x[i] = old - eps
        down = f(x)
        if restore:
            x[i] = old
        g[i] = (up - down) / (2 * eps)
    return g


def five_point_stencil(f, x, eps=1e-6):
    """Fourth order: more accurate than asked (the check names it, not "eps ignored")."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        values = []
        for k in (2, 1, -1, -2):
            z = x.copy()
            z[i] += k * eps
            values.append(f(z))
        g[i] = (-values[0] + 8 * values[1] - 8 * values[2] + values[3]) / (12 * eps)
    return g


def with_basis_vectors(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = 0.5 * (f(x + e) - f(x - e)) / eps
    return g


NUMERICAL_WRONG = {
    "forward difference": (forward_difference, "a one-sided (forward) difference"),
    "divided by eps": (lambda f, x, eps=1e-6: nudged_copies(f, x, eps, divide=1.0),
                       "divided by eps instead of 2 * eps"),
    "all entries at once": (lambda f, x, eps=1e-6: nudged_copies(f, x, eps, at_once=True),
                            "every entry of x was nudged at once"),
    "step fixed at 1e-5": (lambda f, x, eps=1e-6: nudged_copies(f, x, eps, step=1e-5),
                           "Either the eps argument is ignored"),
    "a five-point stencil": (five_point_stencil, "a more accurate formula (five points)"),
    "flattened": (lambda f, x, eps=1e-6: nudged_copies(f, x, eps, flat=True),
                  "the gradient was flattened"),
    "x nudged in place, never put back": (nudges_x_itself, "changed its input x in place"),
}

NUMERICAL_RIGHT = {
    "copies of x, flat index": nudged_copies,
    "basis vectors": with_basis_vectors,
    "x nudged in place and put back exactly": lambda f, x, eps=1e-6: nudges_x_itself(
        f, x, eps, restore=True),
    "the lesson's nditer-free loop": lambda f, x, eps=1e-6: np.array(
        [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size).reshape(-1, *x.shape)]
    ).reshape(x.shape),
}


# ---------------------------------------------------------------- multi_head_attention_backward
def mha_backward_loop(X, W_q, W_k, W_v, W_o, h, d_out, mask=None, *, W_o_T=True, dW_o_T=False,
                      dW_T=False, dX_paths="qkv", heads="sum", scale=True, use_mask=True, dX_W=True,
                      dX_empty=False):
    """A learner's multi-head backward: a loop over heads with column slices."""
    dX = np.empty_like(X) if dX_empty else None         # the learner's accumulator, never zeroed
    n, d_model = X.shape
    d_head = d_model // h
    merged, cache = np.zeros((n, d_model)), []
    for i in range(h):
        c = slice(i * d_head, (i + 1) * d_head)
        Q, K, V = X @ W_q[:, c], X @ W_k[:, c], X @ W_v[:, c]
        S = Q @ K.T / np.sqrt(d_head)
        allowed = np.ones((n, n), bool) if mask is None or not use_mask else mask
        E = np.where(allowed, np.exp(S - np.where(allowed, S, -np.inf).max(axis=1, keepdims=True,
                                                                           initial=-1e300)), 0.0)
        A = E / np.maximum(E.sum(axis=1, keepdims=True), 1e-300)
        merged[:, c] = A @ V
        cache.append((c, Q, K, V, A))
    grads = {"W_o": d_out.T @ merged if dW_o_T else merged.T @ d_out}
    d_merged = d_out @ (W_o.T if W_o_T else W_o)
    for key in ("W_q", "W_k", "W_v"):
        grads[key] = np.zeros((d_model, d_model))
    dX_heads = []
    for c, Q, K, V, A in cache:
        dA = d_merged[:, c] @ V.T
        dS = A * (dA - (dA * A).sum(axis=1, keepdims=True))
        s = 1 / np.sqrt(d_head) if scale else 1.0
        dQ, dK, dV = dS @ K * s, dS.T @ Q * s, A.T @ d_merged[:, c]
        dX_h = np.zeros_like(X)
        for key, W, d in (("W_q", W_q, dQ), ("W_k", W_k, dK), ("W_v", W_v, dV)):
            if dW_T:                                    # the head's rows instead of its columns
                grads[key][c, :] = d.T @ X
            else:
                grads[key][:, c] = X.T @ d
            if key[-1] in dX_paths:
                dX_h += d @ W[:, c].T if dX_W else np.zeros_like(X)
        if not dX_W:                                    # uesina15's grad_q + grad_k + grad_v
            dX_h[:, c] = dQ + dK + dV
        dX_heads.append(dX_h)
    grads["X"] = {"sum": sum(dX_heads), "mean": sum(dX_heads) / h, "last": dX_heads[-1]}[heads]
    if dX_empty:                                        # np.empty_like first, then += every head's part
        for dX_h in dX_heads:
            dX += dX_h
        grads["X"] = dX
    return grads


def mha_backward_reshapes(X, W_q, W_k, W_v, W_o, h, d_out, mask=None, *, split_T=True, merge_T=True):
    """A learner's multi-head backward with plain reshapes, optionally without the transposes."""
    n, d_model = X.shape
    d_head = d_model // h

    def split(A, transpose=True):
        return A.reshape(n, h, d_head).transpose(1, 0, 2) if transpose else A.reshape(h, n, d_head)

    def merge(H, transpose=True):
        return H.transpose(1, 0, 2).reshape(n, d_model) if transpose else H.reshape(n, d_model)

    Qh, Kh, Vh = split(X @ W_q), split(X @ W_k), split(X @ W_v)
    heads, A = reference.scaled_dot_product_attention(Qh, Kh, Vh, mask)
    d_heads = split(d_out @ W_o.T, split_T)
    dQ, dK, dV = (merge(g, merge_T) for g in reference.attention_backward(Qh, Kh, Vh, A, d_heads))
    return {"X": dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T, "W_q": X.T @ dQ, "W_k": X.T @ dK,
            "W_v": X.T @ dV, "W_o": merge(heads).T @ d_out}


MHA_WRONG = {
    "W_o not transposed": (lambda *a, mask=None: mha_backward_loop(*a, mask, W_o_T=False),
                           "W_o's transpose is missing"),
    "dW_o transposed": (lambda *a, mask=None: mha_backward_loop(*a, mask, dW_o_T=True),
                        "the gradient of W_o is transposed"),
    "dW_q, dW_k, dW_v transposed": (lambda *a, mask=None: mha_backward_loop(*a, mask, dW_T=True),
                                    "the gradients of W_q, W_k, W_v are transposed"),
    "all four weight gradients transposed": (
        lambda *a, mask=None: mha_backward_loop(*a, mask, dW_T=True, dW_o_T=True),
        "all four weight gradients are transposed"),
    "dX = dQ + dK + dV, no weight matrices": (
        lambda *a, mask=None: mha_backward_loop(*a, mask, dX_W=False), "without the weight matrices"),
    "dX through Q only": (lambda *a, mask=None: mha_backward_loop(*a, mask, dX_paths="q"),
                          "dX only has the path through Q"),
    "dX not summed over heads (last head)": (
        lambda *a, mask=None: mha_backward_loop(*a, mask, heads="last"), "only the last head's"),
    "dX averaged over heads": (lambda *a, mask=None: mha_backward_loop(*a, mask, heads="mean"),
                               "were averaged"),
    "dX = np.empty_like(X), then += each head's part": (
        lambda *a, mask=None: mha_backward_loop(*a, mask, dX_empty=True), "adds onto memory it never set"),
    "no 1/sqrt(d_head)": (lambda *a, mask=None: mha_backward_loop(*a, mask, scale=False),
                          "1/sqrt(d_head) is missing"),
    "mask ignored": (lambda *a, mask=None: mha_backward_loop(*a, mask, use_mask=False),
                     "the mask was ignored"),
    "split without transpose": (lambda *a, mask=None: mha_backward_reshapes(*a, mask, split_T=False),
                                "split without transposing"),
    "merge without transpose": (lambda *a, mask=None: mha_backward_reshapes(*a, mask, merge_T=False),
                                "merged without transposing"),
}

MHA_RIGHT = {
    "loop over heads": lambda *a, mask=None: mha_backward_loop(*a, mask),
    "split and merge by reshapes": lambda *a, mask=None: mha_backward_reshapes(*a, mask),
}


WRONG_BY_EXERCISE = {"softmax_backward": SOFTMAX_WRONG, "attention_backward": ATTENTION_WRONG,
                     "numerical_gradient": NUMERICAL_WRONG, "multi_head_attention_backward": MHA_WRONG}
RIGHT_BY_EXERCISE = {"softmax_backward": SOFTMAX_RIGHT, "attention_backward": ATTENTION_RIGHT,
                     "numerical_gradient": NUMERICAL_RIGHT, "multi_head_attention_backward": MHA_RIGHT}


@pytest.mark.parametrize("hidden", [False, True])
def test_numerical_gradient_cases_make_a_forward_difference_visibly_wrong(hidden):
    # the stated tolerance (rtol 1e-6, atol 1e-8) against a forward difference's error:
    # on every case with an explicit eps it must be at least 1e-4
    exercise = EXERCISES["numerical_gradient"]
    for case in exercise.cases(hidden):
        if "eps" in case.kwargs:
            f, x = case.args
            error = np.abs(forward_difference(f, x, **case.kwargs) - reference.numerical_gradient(
                f, x, **case.kwargs)).max()
            assert error >= 1e-4, case.label


@pytest.mark.parametrize("hidden", [False, True])
def test_attention_backward_first_case_is_square_with_distinct_sizes(hidden):
    Q, K, V, W, d_out = EXERCISES["attention_backward"].cases(hidden)[0].args
    n_q, d_k = Q.shape
    assert n_q == K.shape[0] and len({n_q, d_k, V.shape[1]}) == 3


@pytest.mark.parametrize("hidden", [False, True])
def test_every_exercise_has_a_case_with_a_fully_masked_row(hidden):
    # softmax_backward: an all-zero slice of y; the attention gradients: an all-False mask row
    sm = EXERCISES["softmax_backward"].cases(hidden)
    assert any((c.args[0] == 0).all(axis=-1).any() for c in sm)
    att = EXERCISES["attention_backward"].cases(hidden)
    assert any((c.args[3] == 0).all(axis=-1).any() for c in att)
    mha = EXERCISES["multi_head_attention_backward"].cases(hidden)
    assert any("mask" in c.kwargs and (~c.kwargs["mask"]).all(axis=-1).any() for c in mha)

