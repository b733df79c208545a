"""Lesson 07 exercises, in the lesson's order: ``numerical_gradient``, ``softmax_backward``,
``attention_backward``, ``multi_head_attention_backward``.

How the cases make each known mistake show, in the order a check meets them:

softmax_backward
    a *square* first case (4 x 4), so a sum without ``keepdims`` or along the other
    axis still broadcasts and can be named instead of raising; the upstream gradient
    ``dy`` is random, so the diagonal-only ``y * (1 - y) * dy`` and the forgotten
    ``y *`` differ from the answer everywhere. Then a non-square case, ``axis=0``
    (a function that ignores ``axis``), a batch of rows (3-D), a row with masked
    (zero) weights and a fully masked row (zeros in, zeros out), a saturated row.
attention_backward
    the first case is self-attention shaped (``n_q = n_k = 4``, ``d_k = 3``,
    ``d_v = 2``) so that ``W @ d_out`` (instead of ``W^T @ d_out``), ``dS @ Q``
    (instead of ``dS^T @ Q``) and swapped ``dQ``/``dK`` all have the right shape
    and can be named; then ``n_q != n_k``, a causal mask, a mask with a fully
    masked row (weights recomputed from Q and K lose the mask), and a leading head
    axis ``(h, n, d)``, which the lesson's multi-head gradient needs (``A.T``
    reverses *all* axes of a 3-D array; ``np.swapaxes(A, -1, -2)`` swaps the last two).
numerical_gradient
    see :mod:`helpers.exercises._lesson07_numerical`.
multi_head_attention_backward
    the first case has 3 heads of 4 (``d_model = 12``) and 5 tokens, all different,
    with weights of moderate size (the softmax is not saturated, so the gradients
    through it are large enough to tell a missing scale apart); all four matrices are
    square, so a transposed weight gradient has the right shape. A causal mask, a mask
    with a fully masked row, one head and one token come later.
"""

import numpy as np

from .. import reference
from ..measure import format_bytes, traced_peak
from ..checking import Case, Exercise, Mistake
from ._cases import chooser, distinct, sizer
from ._lesson07_numerical import NUMERICAL_GRADIENT_MISTAKES, make_numerical_gradient_cases
from .lesson04 import _merge_no_transpose, _split_no_transpose

LESSON = "07_backward"
NOTEBOOK_D_K = 4       # the d_k of the notebook's sentence (section 5), a global there
#: tests/test_catalogue.py reads it from the solution notebook and compares.
NOTEBOOK_GLOBALS = {"d_k": NOTEBOOK_D_K}


def _swap(A):
    """The last two axes swapped (a matrix transpose that leaves batch axes alone)."""
    return np.swapaxes(A, -1, -2)


# ------------------------------------------------------------------ softmax_backward
def _softmax_backward_case(rng, shape, label, axis=-1, spread=2.0, mask=None):
    x = rng.standard_normal(shape) * spread
    if mask is not None:
        x = np.where(mask, x, -np.inf)
    y = reference.softmax(x, axis=axis)
    dy = rng.standard_normal(shape)
    kwargs = {} if axis == -1 else {"axis": axis}
    return Case((y, dy), kwargs, label=f"{label}: y and dy {shape}" + (f", axis={axis}" if kwargs else ""))


def make_softmax_backward_cases(rng, hidden):
    size = sizer(rng)
    n = size(4, 7) if hidden else 4
    masked = np.ones((3, 5), dtype=bool)
    masked[0] = False                                   # row 0: fully masked, y = 0 there
    masked[1, ::2] = False                              # row 1: some entries masked
    if hidden:
        masked = np.ones((size(3, 5), size(4, 7)), dtype=bool)
        masked[2] = False
        masked[0, 1::2] = False
    saturated = rng.standard_normal((2, size(4, 8) if hidden else 5))
    saturated[0] *= 40.0                                # row 0: nearly one-hot
    rows, tall = ((distinct(rng, 2, 7), sorted(distinct(rng, 2, 7), reverse=True)) if hidden
                  else ((3, 5), (5, 3)))
    return [
        _softmax_backward_case(rng, (n, n), "a square grid of weights"),
        _softmax_backward_case(rng, tuple(rows), "rows of weights"),
        _softmax_backward_case(rng, tuple(tall), "axis=0 (each column is one softmax)", axis=0),
        _softmax_backward_case(rng, (size(2, 4), size(2, 4), size(3, 6)) if hidden else (2, 3, 4),
                               "a batch of grids"),
        _softmax_backward_case(rng, masked.shape, "masked weights (0) and a fully masked row",
                               mask=masked),
        Case((reference.softmax(saturated), rng.standard_normal(saturated.shape)),
             label=f"a saturated (nearly one-hot) row and a soft one, {saturated.shape}"),
        _softmax_backward_case(rng, (size(3, 9),) if hidden else (6,), "a single row"),
    ]


def _other_axis(axis, ndim):
    if ndim != 2:
        raise ValueError("only for 2-D inputs")
    return 0 if axis in (-1, 1) else 1


SOFTMAX_BACKWARD_MISTAKES = [
    Mistake("it returns y - dy: that is the shortcut of softmax *followed by cross-entropy* (the "
            "logits' gradient p - onehot, with dy taken for the one-hot). Here dy is any upstream "
            "gradient and softmax stands alone: dx = y * (dy - sum(dy * y)) along the axis.",
            lambda y, dy, axis=-1: y - dy),
    Mistake("only the diagonal of the Jacobian was used: y * (1 - y) * dy is what you get "
            "if each weight depended on its own score only. But every score moves every "
            "weight of its row (the off-diagonal -y_i y_j): dx_i = y_i (dy_i - sum_j y_j dy_j).",
            lambda y, dy, axis=-1: y * (1 - y) * dy),
    Mistake("the diagonal's factor y * (1 - y) multiplies the whole bracket: "
            "y * (1 - y) * (dy - sum(dy * y)) has an extra factor (1 - y). The bracket, times y, "
            "already is the whole Jacobian diag(y) - y y^T applied to dy: multiply it by y alone.",
            lambda y, dy, axis=-1: y * (1 - y) * (dy - np.sum(dy * y, axis=axis, keepdims=True))),
    Mistake("the term subtracted is a mean, not a sum: mean(dy * y) divides by the length of the "
            "axis. The weights y already sum to 1, so sum(dy * y) along the axis is the average "
            "of dy that is needed (weighted by y).",
            lambda y, dy, axis=-1: y * (dy - np.mean(dy * y, axis=axis, keepdims=True))),
    Mistake("the factor y in front is missing: dx = y * (dy - sum(dy * y)), not "
            "dy - sum(dy * y). (A weight of 0, e.g. a masked entry, must get no gradient.)",
            lambda y, dy, axis=-1: dy - np.sum(dy * y, axis=axis, keepdims=True)),
    Mistake("the sum is sum(dy), not sum(dy * y): the term subtracted is the y-weighted "
            "average of dy along the axis.",
            lambda y, dy, axis=-1: y * (dy - np.sum(dy, axis=axis, keepdims=True))),
    Mistake("the sum is missing: y * dy is only the diag(y) part of the Jacobian "
            "diag(y) - y y^T. Subtract sum(dy * y) along the axis before multiplying by y.",
            lambda y, dy, axis=-1: y * dy),
    Mistake("the sign is flipped: dx = y * (dy - sum(dy * y)), not y * (sum(dy * y) - dy).",
            lambda y, dy, axis=-1: y * (np.sum(dy * y, axis=axis, keepdims=True) - dy)),
    Mistake("the axis argument is ignored: with axis=0 each *column* is one softmax, so "
            "the sum runs along axis 0. Pass axis on to the sum.",
            lambda y, dy, axis=-1: reference.softmax_backward(y, dy, axis=-1)),
    Mistake("the sum runs along the wrong axis: it must run along the softmax's own axis "
            "(the keys, axis=-1, for attention's rows), with keepdims=True.",
            lambda y, dy, axis=-1: reference.softmax_backward(y, dy, _other_axis(axis, y.ndim))),
    Mistake("missing keepdims: sum(dy * y, axis) has lost its axis, so it broadcasts the "
            "wrong way (row i gets row j's sum). Use keepdims=True.",
            lambda y, dy, axis=-1: y * (dy - np.sum(dy * y, axis=axis))),
    Mistake("the sum runs over the whole array: each softmax slice (each row) has its own "
            "sum(dy * y). Sum along axis, with keepdims=True.",
            lambda y, dy, axis=-1: y * (dy - np.sum(dy * y))),
]


#: The memory probe's rows and row length: one row's (n, n) Jacobian is 8 MiB in float64 (1 MiB
#: even at one byte per entry), where the formula's arrays are the size of y, 16 KiB.
PROBE_ROWS, PROBE_N = 2, 1024


def jacobian_message(fn, rows=PROBE_ROWS, n=PROBE_N):
    """Say so when ``fn(y, dy)`` holds an ``(n, n)`` array (a row's Jacobian) on rows of ``n``.

    Traces the peak memory of ``fn`` on ``rows`` softmax rows of length ``n``. The formula
    ``y * (dy - sum(dy * y))`` needs a few arrays the size of ``y`` (``rows * n * 8``
    bytes each); the Jacobian ``diag(y) - y y^T`` of one row is ``n * n`` entries, more
    than ``n * n`` bytes whatever its dtype.

    Returns
    -------
    str or None
        A message for the learner, or None when the peak stays below ``n * n`` bytes.
    """
    rng = np.random.default_rng(0)
    y = reference.softmax(rng.standard_normal((rows, n)))    # (rows, n), made before tracing
    dy = rng.standard_normal((rows, n))
    peak = traced_peak(lambda: fn(y, dy))
    if peak < n * n:
        return None
    return (f"it gives the right numbers, but on y and dy of shape ({rows}, {n}) it allocated "
            f"{format_bytes(peak)} at its peak: at least what one row's ({n}, {n}) Jacobian takes "
            f"({format_bytes(n * n * 8)} in float64), where y itself is {format_bytes(rows * n * 8)}. "
            f"The exercise asks for dx without building the Jacobian: use the formula from the "
            f"text, one product and one sum per row.")


# ------------------------------------------------------------------ attention_backward
def _attention_backward_case(rng, shape, label, mask=None, spread=1.0):
    batch, n_q, n_k, d_k, d_v = shape
    Q = rng.standard_normal((*batch, n_q, d_k)) * spread
    K = rng.standard_normal((*batch, n_k, d_k)) * spread
    V = rng.standard_normal((*batch, n_k, d_v))
    d_out = rng.standard_normal((*batch, n_q, d_v))
    _, weights = reference.scaled_dot_product_attention(Q, K, V, mask)
    return Case((Q, K, V, weights, d_out),
                label=f"{label}: Q {Q.shape}, K {K.shape}, V {V.shape}, weights {weights.shape}, "
                      f"d_out {d_out.shape}")


def make_attention_backward_cases(rng, hidden):
    empty = np.array([[True, False, True, True, False, True],
                      [False, False, False, False, False, False],
                      [True, True, False, True, True, True],
                      [False, True, True, False, True, False]])
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        # d_k is never 1, 2 or the notebook's 4, where one mistaken scale looks like another.
        d_k = chooser(rng, [3, 5, 6, 7])
        n, n_causal, n_heads = size(4, 7), size(4, 8), size(3, 6)
        n_q, n_k = distinct(rng, 2, 7)
        empty = rng.random((size(3, 5), size(4, 7))) < 0.7
        empty[0] = False                                 # query 0 may attend to nothing
        empty[1:, 0] = True                              # every other query to something
        return [
            _attention_backward_case(rng, ((), n, n, d_k(), size(2, 4)), f"self-attention, n = {n}"),
            _attention_backward_case(rng, ((), n_q, n_k, d_k(), size(2, 4)), "n_q != n_k"),
            _attention_backward_case(rng, ((), n_causal, n_causal, d_k(), size(2, 4)),
                                     "causal mask", reference.causal_mask(n_causal)),
            _attention_backward_case(rng, ((), *empty.shape, d_k(), size(2, 5)),
                                     "query 0 may attend to nothing", empty),
            _attention_backward_case(rng, ((size(2, 4),), n_heads, n_heads, d_k(), size(2, 4)),
                                     "a leading head axis (h, n, d): swap the last two axes only",
                                     reference.causal_mask(n_heads)),
            _attention_backward_case(rng, ((), size(2, 5), size(2, 5), d_k(), 1),
                                     "d_v = 1, larger scores", spread=2.0),
        ]
    return [
        _attention_backward_case(rng, ((), 4, 4, 3, 2), "self-attention, n = 4"),
        _attention_backward_case(rng, ((), 3, 5, 4, 2), "n_q != n_k"),
        _attention_backward_case(rng, ((), 5, 5, 4, 3), "causal mask", reference.causal_mask(5)),
        _attention_backward_case(rng, ((), 4, 6, 3, 2), "query 1 may attend to nothing", empty),
        _attention_backward_case(rng, ((2,), 4, 4, 3, 2),
                                 "a leading head axis (h, n, d): swap the last two axes only",
                                 reference.causal_mask(4)),
        _attention_backward_case(rng, ((), 1, 1, 3, 2), "a single token"),
    ]


def _attention_grads(Q, K, V, W, d_out, *, scale_q="sqrt", scale_k="sqrt", softmax="right",
                     dV="right", dK="right", dQ="right", dW="right", recompute=False):
    """attention_backward with one step (or more) done wrong, for the mistakes below."""
    d_k = Q.shape[-1]
    scales = {"sqrt": 1 / np.sqrt(d_k), "none": 1.0, "d_k": 1 / d_k,
              "notebook": 1 / np.sqrt(NOTEBOOK_D_K)}
    if recompute:                                          # weights rebuilt from Q, K: no mask
        W = reference.softmax(Q @ _swap(K) / np.sqrt(d_k))
    dV_ = _swap(W) @ d_out if dV == "right" else W @ d_out     # "W": square cases only
    dW_ = d_out @ _swap(V) if dW == "right" else V @ _swap(d_out)   # "transposed": (n_k, n_q)
    if softmax == "right":
        dS = reference.softmax_backward(W, dW_)
    elif softmax == "diagonal":
        dS = W * (1 - W) * dW_
    elif softmax == "no y":
        dS = dW_ - np.sum(dW_ * W, axis=-1, keepdims=True)
    elif softmax == "skipped":
        dS = dW_
    else:                                                  # "axis -2"
        dS = W * (dW_ - np.sum(dW_ * W, axis=-2, keepdims=True))
    dQ_ = (dS @ K if dQ == "right" else dS @ Q) * scales[scale_q]           # "self": dS @ Q
    dK_ = {"right": lambda: _swap(dS) @ Q, "not transposed": lambda: dS @ Q,
           "self": lambda: _swap(dS) @ K, "transposed": lambda: _swap(_swap(dS) @ Q)}[dK]()
    dK_ = dK_ * scales[scale_k]
    return dQ_, dK_, dV_


_SCALE = ("the forward pass divides the scores by sqrt(d_k), and that factor comes back in the "
          "backward pass, in dQ and in dK alike.")

ATTENTION_BACKWARD_MISTAKES = [
    Mistake("the 1/sqrt(d_k) is missing in dQ and dK: " + _SCALE,
            lambda *a: _attention_grads(*a, scale_q="none", scale_k="none")),
    Mistake("the 1/sqrt(d_k) is missing in dQ (dK has it): " + _SCALE,
            lambda *a: _attention_grads(*a, scale_q="none")),
    Mistake("the 1/sqrt(d_k) is missing in dK (dQ has it): " + _SCALE,
            lambda *a: _attention_grads(*a, scale_k="none")),
    Mistake("dQ and dK were divided by d_k instead of sqrt(d_k): " + _SCALE,
            lambda *a: _attention_grads(*a, scale_q="d_k", scale_k="d_k")),
    Mistake(f"dQ and dK were scaled by 1/sqrt({NOTEBOOK_D_K}), a fixed size, but this input's d_k "
            f"(Q's last axis) is not {NOTEBOOK_D_K}. Read d_k from the input inside the function: "
            f"d_k = Q.shape[-1]. (The notebook's section 5 has a global d_k = {NOTEBOOK_D_K}: "
            f"was it used here?)",
            lambda *a: _attention_grads(*a, scale_q="notebook", scale_k="notebook")),
    Mistake("dV was computed with the weights P instead of their transpose: out = P @ V, so "
            "key j's value receives from every query that looked at it (column j of P), shape (n_k, d_v).",
            lambda *a: _attention_grads(*a, dV="W")),
    Mistake("dK is transposed: dS @ Q uses dS the wrong way round. Row i of dS holds query i's "
            "scores, but key j's gradient must collect column j of dS (every query's score with "
            "key j). It has the right shape here only because n_q = n_k.",
            lambda *a: _attention_grads(*a, dK="not transposed")),
    Mistake("dK came out transposed, shape (d_k, n_k): it must have K's shape (n_k, d_k), one "
            "row per key. Check which matrix of the product is transposed.",
            lambda *a: _attention_grads(*a, dK="transposed")),
    Mistake("dQ and dK are swapped: return (dQ, dK, dV) in that order. dQ has Q's shape "
            "and is built from K; dK has K's shape and is built from Q.",
            lambda *a: (lambda dq, dk, dv: (dk, dq, dv))(*_attention_grads(*a))),
    Mistake("dQ was built from Q and dK from K: each comes from the *other* one (a score is "
            "a product of a query and a key, so moving the query moves it by the key, and the "
            "other way round).",
            lambda *a: _attention_grads(*a, dQ="self", dK="self")),
    Mistake("the softmax's backward used only the diagonal of its Jacobian: P * (1 - P) * dP. "
            "Use your softmax_backward(P, dP), which keeps the off-diagonal terms.",
            lambda *a: _attention_grads(*a, softmax="diagonal")),
    Mistake("the softmax's backward is missing the factor P (the weights) in front. "
            "Without it, masked entries (weight 0) get a gradient.",
            lambda *a: _attention_grads(*a, softmax="no y")),
    Mistake("the softmax was skipped in the backward pass: dP is the gradient of the "
            "weights P, not of the scores; the scores' gradient goes through softmax_backward.",
            lambda *a: _attention_grads(*a, softmax="skipped")),
    Mistake("the softmax's backward summed along the wrong axis: each query's row of weights "
            "is one softmax, so sum along the keys (axis=-1).",
            lambda *a: _attention_grads(*a, softmax="axis -2")),
    Mistake("dP (the weights' gradient) is transposed: it must have the weights' shape (n_q, n_k), "
            "one row per query.",
            lambda *a: _attention_grads(*a, dW="transposed")),
    Mistake("the weights were recomputed from Q and K, which loses the mask: use the "
            "weights you are given (a masked entry has weight 0 there and gets no gradient).",
            lambda *a: _attention_grads(*a, recompute=True)),
]


# ------------------------------------------------------------------ multi_head_attention_backward
def _mha_backward_case(rng, n, d_model, num_heads, label, mask=None):
    X = rng.standard_normal((n, d_model))
    # weights of moderate size: the softmax is soft, so gradients through it are not tiny
    W_q, W_k, W_v, W_o = (rng.standard_normal((d_model, d_model)) * 1.5 / np.sqrt(d_model)
                          for _ in range(4))
    d_out = rng.standard_normal((n, d_model))
    kwargs = {} if mask is None else {"mask": mask}
    return Case((X, W_q, W_k, W_v, W_o, num_heads, d_out), kwargs,
                label=f"{label}: X {X.shape}, four ({d_model}, {d_model}) matrices, "
                      f"num_heads={num_heads}, d_out {d_out.shape}" + ("" if mask is None else ", mask"))


def make_mha_backward_cases(rng, hidden):
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        n_empty, n_causal = size(3, 6), size(4, 7)
        empty = reference.causal_mask(n_empty) & (np.arange(n_empty) > 0)   # row 0 empty
        h1, d1 = distinct(rng, 2, 4)
        h2, d2 = distinct(rng, 2, 4)
        specs = [(size(3, 7), h1 * d1, h1, f"{h1} heads of {d1}", None),
                 (size(3, 6), h2 * d2, h2, f"{h2} heads of {d2}", None),
                 (n_causal, 3 * size(2, 4), 3, "3 heads, causal mask", reference.causal_mask(n_causal)),
                 (n_empty, 2 * size(2, 4), 2, "2 heads, the first token may attend to nothing", empty),
                 (size(2, 5), size(3, 6), 1, "one head", None),
                 (1, 2 * size(2, 4), 2, "a single token", None)]
    else:
        empty = reference.causal_mask(5) & np.array([False, True, True, True, True])
        specs = [(5, 12, 3, "3 heads of 4", None), (4, 8, 2, "2 heads of 4", None),
                 (6, 8, 4, "4 heads of 2, causal mask", reference.causal_mask(6)),
                 (5, 6, 3, "3 heads, the first token may attend to nothing", empty),
                 (3, 4, 1, "one head", None), (1, 4, 2, "a single token", None)]
    return [_mha_backward_case(rng, *spec) for spec in specs]


def _mha_grads(X, W_q, W_k, W_v, W_o, h, d_out, mask=None, *, W_o_T=True, dW_T=False,
               dW_o_T=False, dX_paths="QKV", dX_W_T=True, dX_W=True, heads="sum", one_head=False,
               scale=True, split_back=None, merge_back=None, use_mask=True):
    """multi_head_attention_backward with one thing (or more) done wrong, for the mistakes below."""
    split_back = split_back or reference.split_heads
    merge_back = merge_back or reference.merge_heads
    mask = mask if use_mask else None
    h_att = 1 if one_head else h                             # one_head: attention on the merged Q, K, V
    Qh, Kh, Vh = (reference.split_heads(X @ W, h_att) for W in (W_q, W_k, W_v))   # (h, n, d_head)
    out_h, weights = reference.scaled_dot_product_attention(Qh, Kh, Vh, mask)
    merged = reference.merge_heads(out_h)                                        # (n, d_model)
    d_merged = d_out @ (W_o.T if W_o_T else W_o)                                 # (n, d_model)
    d_heads = split_back(d_merged, h_att)                                       # (h, n, d_head)
    dQh, dKh, dVh = reference.attention_backward(Qh, Kh, Vh, weights, d_heads)
    if not scale:                                          # the 1/sqrt(d_head) left out of dQ, dK
        dQh, dKh = dQh * np.sqrt(Qh.shape[-1]), dKh * np.sqrt(Qh.shape[-1])
    grads = {"W_o": d_out.T @ merged if dW_o_T else merged.T @ d_out}
    dX = np.zeros_like(X)
    for name, W, dH in (("W_q", W_q, dQh), ("W_k", W_k, dKh), ("W_v", W_v, dVh)):
        d = merge_back(dH)                                                       # (n, d_model)
        grads[name] = d.T @ X if dW_T else X.T @ d
        if name[-1].upper() not in dX_paths:
            continue
        if not dX_W:                                       # dQ + dK + dV, no weight matrix at all
            dX = dX + d
        elif heads == "sum":
            dX = dX + d @ (W.T if dX_W_T else W)
        else:                                              # per head, with the head's columns of W
            d_head = X.shape[1] // h
            parts = [dH[i] @ W[:, i * d_head:(i + 1) * d_head].T for i in range(h)]
            dX = dX + (parts[-1] if heads == "last" else sum(parts) / h)
    grads["X"] = dX
    return grads


MHA_BACKWARD_MISTAKES = [
    Mistake("all four weight gradients are transposed: Q = X @ W_q gives dW_q = X.T @ dQ, "
            "shape (d_model, d_model) like W_q (rows: W_q's input side), and out = merged @ W_o "
            "gives dW_o = merged.T @ d_out (the same for K and V).",
            lambda *a, mask=None: _mha_grads(*a, mask, dW_T=True, dW_o_T=True)),
    Mistake("dX is dQ + dK + dV without the weight matrices: Q = X @ W_q, so the gradient "
            "reaching X through Q is dQ @ W_q.T (the Linear layer's backward), and the same for "
            "K and V: dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T.",
            lambda *a, mask=None: _mha_grads(*a, mask, dX_W=False)),
    Mistake("W_o's transpose is missing: out = merged @ W_o, so the gradient flowing back "
            "into the merged heads is d_out @ W_o.T.",
            lambda *a, mask=None: _mha_grads(*a, mask, W_o_T=False)),
    Mistake("the gradient of W_o is transposed: out = merged @ W_o gives "
            "dW_o = merged.T @ d_out (rows: W_o's input side).",
            lambda *a, mask=None: _mha_grads(*a, mask, dW_o_T=True)),
    Mistake("the gradients of W_q, W_k, W_v are transposed: Q = X @ W_q gives "
            "dW_q = X.T @ dQ, shape (d_model, d_model) like W_q (and the same for K and V).",
            lambda *a, mask=None: _mha_grads(*a, mask, dW_T=True)),
    Mistake("dX only has the path through Q: X feeds Q, K *and* V, so its gradient is the "
            "sum of all three, dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T.",
            lambda *a, mask=None: _mha_grads(*a, mask, dX_paths="Q")),
    Mistake("dX is missing the path through V: X feeds Q, K and V, so its gradient is "
            "dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T.",
            lambda *a, mask=None: _mha_grads(*a, mask, dX_paths="QK")),
    Mistake("dX used the weight matrices without transposing them: Q = X @ W_q gives "
            "dX = dQ @ W_q.T (and the same for K and V).",
            lambda *a, mask=None: _mha_grads(*a, mask, dX_W_T=False)),
    Mistake("dX has only the last head's contribution: every head read from X, so the "
            "heads' contributions must be summed (merging the heads' dQ and then "
            "multiplying by W_q.T does that for you).",
            lambda *a, mask=None: _mha_grads(*a, mask, heads="last")),
    Mistake("the heads' contributions to dX were averaged: they must be summed (every head "
            "read from X in full, so each adds its own gradient).",
            lambda *a, mask=None: _mha_grads(*a, mask, heads="mean")),
    Mistake("the backward pass ran on the merged Q, K, V as one single head (one softmax "
            "over d_model): split them into heads, as the forward pass does, and run "
            "attention_backward on each head's (n, d_head) arrays.",
            lambda *a, mask=None: _mha_grads(*a, mask, one_head=True)),
    Mistake("the heads' 1/sqrt(d_head) is missing from dQ and dK: attention_backward on each "
            "head's arrays puts it in (it reads d_head from the head's Q).",
            lambda *a, mask=None: _mha_grads(*a, mask, scale=False)),
    Mistake("the gradient of the merged heads was split without transposing (a plain "
            "reshape to (num_heads, n, d_head)): the backward of merge_heads is split_heads.",
            lambda *a, mask=None: _mha_grads(*a, mask, split_back=_split_no_transpose)),
    Mistake("the heads' dQ, dK, dV were merged without transposing (a plain reshape to "
            "(n, d_model)): the backward of split_heads is merge_heads.",
            lambda *a, mask=None: _mha_grads(*a, mask, merge_back=_merge_no_transpose)),
    Mistake("the mask was ignored: recompute the forward pass with the same mask (a masked "
            "weight is 0 and passes no gradient).",
            lambda *a, mask=None: _mha_grads(*a, mask, use_mask=False)),
]


EXERCISES = [
    Exercise(
        name="numerical_gradient",
        lesson=LESSON,
        reference=reference.numerical_gradient,
        make_cases=make_numerical_gradient_cases,
        mistakes=NUMERICAL_GRADIENT_MISTAKES,
        outputs=("gradient",),
        rtol=1e-6,
        atol=1e-8,
    ),
    Exercise(
        name="softmax_backward",
        lesson=LESSON,
        reference=reference.softmax_backward,
        make_cases=make_softmax_backward_cases,
        mistakes=SOFTMAX_BACKWARD_MISTAKES,
        outputs=("dx",),
        rtol=1e-6,
        atol=1e-10,
        inspect=jacobian_message,
    ),
    Exercise(
        name="attention_backward",
        lesson=LESSON,
        reference=reference.attention_backward,
        make_cases=make_attention_backward_cases,
        mistakes=ATTENTION_BACKWARD_MISTAKES,
        outputs=("dQ", "dK", "dV"),
        rtol=1e-6,
        atol=1e-10,
    ),
    Exercise(
        name="multi_head_attention_backward",
        lesson=LESSON,
        reference=reference.multi_head_attention_backward,
        make_cases=make_mha_backward_cases,
        mistakes=MHA_BACKWARD_MISTAKES,
        outputs=("gradients",),
        rtol=1e-6,
        atol=1e-10,
    ),
]
