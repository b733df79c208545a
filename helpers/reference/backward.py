"""Lesson 07: gradients through attention by hand (softmax, attention, multi-head) and
central finite differences to check them.

Part of :mod:`helpers.reference` (see its docstring for the conventions).
"""

import numpy as np

from ..validation import as_float_array, shape_str
from .attention import _attention, _check_qkv
from .multi_head import _check_mha, merge_heads, split_heads


def _softmax_backward(y, dy, axis=-1):
    """``dx = y * (dy - sum(dy * y))`` along ``axis``, without input checks."""
    return y * (dy - np.sum(dy * y, axis=axis, keepdims=True))


def softmax_backward(y, dy, axis=-1):
    """Gradient through a softmax, without building its Jacobian.

    The Jacobian of ``y = softmax(x)`` along one slice is ``diag(y) - y y^T``, so
    ``dx = J^T dy = y * dy - y * (y . dy)``: one product and one sum per slice.

    Parameters
    ----------
    y : ndarray, any shape
        The softmax's output, ``y = softmax(x, axis)``.
    dy : ndarray, same shape as ``y``
        The gradient of the loss with respect to ``y``.
    axis : int
        The axis the softmax was taken along.

    Returns
    -------
    dx : ndarray, same shape as ``y``
        The gradient of the loss with respect to ``x``. A slice where ``y`` is all
        zero (a fully masked row) gets zeros.
    """
    where = "softmax_backward"
    y = as_float_array(where, "y", y, min_ndim=1)
    dy = as_float_array(where, "dy", dy, min_ndim=1)
    if y.shape != dy.shape:
        raise ValueError(f"{where}: y and dy must have the same shape, got y {shape_str(y.shape)}, "
                         f"dy {shape_str(dy.shape)}")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{where}: axis must be an int, got {axis!r}")
    if not -y.ndim <= axis < y.ndim:
        raise ValueError(f"{where}: axis={axis} is out of range for y {shape_str(y.shape)}")
    return _softmax_backward(y, dy, axis)


def _sum_to_shape(grad, shape):
    """Sum a broadcast gradient back down to ``shape`` (the shape of the input it flows to)."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    ones = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=ones, keepdims=True) if ones else grad


def _attention_backward(Q, K, V, weights, d_out):
    """``(dQ, dK, dV)`` of scaled dot-product attention, without input checks (batched)."""
    scale = Q.dtype.type(1.0 / np.sqrt(Q.shape[-1]))   # a float64 scalar would make float32 float64
    dV = np.swapaxes(weights, -1, -2) @ d_out               # (..., n_k, d_v)   out = W @ V
    dW = d_out @ np.swapaxes(V, -1, -2)                     # (..., n_q, n_k)
    dS = _softmax_backward(weights, dW, axis=-1)            # (..., n_q, n_k)   W = softmax(S); 0 where masked
    dQ = (dS @ K) * scale                                   # (..., n_q, d_k)   S = Q @ K.T / sqrt(d_k)
    dK = (np.swapaxes(dS, -1, -2) @ Q) * scale              # (..., n_k, d_k)
    return (_sum_to_shape(dQ, Q.shape), _sum_to_shape(dK, K.shape), _sum_to_shape(dV, V.shape))


def attention_backward(Q, K, V, weights, d_out):
    """Gradients of scaled dot-product attention, backwards through its three steps.

    For ``out, weights = scaled_dot_product_attention(Q, K, V, mask)``:
    ``out = W @ V``, ``W = softmax(S)`` (row-wise, masked entries 0),
    ``S = Q @ K.T / sqrt(d_k)``.

    Parameters
    ----------
    Q : ndarray, shape (..., n_q, d_k)
    K : ndarray, shape (..., n_k, d_k)
    V : ndarray, shape (..., n_k, d_v)
    weights : ndarray, shape (..., n_q, n_k)
        The attention weights the forward pass returned (the mask is in them:
        a masked entry has weight 0 and so gets no gradient).
    d_out : ndarray, shape (..., n_q, d_v)
        The gradient of the loss with respect to ``out``.

    Returns
    -------
    dQ, dK, dV : ndarrays shaped like Q, K and V
        The gradients of ``sum(out * d_out)``. A fully masked row (all-zero
        weights) contributes zeros, never NaN.
    """
    where = "attention_backward"
    Q, K, V, batch = _check_qkv(where, Q, K, V)
    weights = as_float_array(where, "weights", weights, min_ndim=2)
    d_out = as_float_array(where, "d_out", d_out, min_ndim=2)
    for name, array, last in (("weights", weights, (Q.shape[-2], K.shape[-2])),
                              ("d_out", d_out, (Q.shape[-2], V.shape[-1]))):
        if array.shape != batch + last:
            raise ValueError(f"{where}: {name} must have shape {shape_str(batch + last)} for "
                             f"Q {shape_str(Q.shape)}, K {shape_str(K.shape)}, V {shape_str(V.shape)}; "
                             f"got {shape_str(array.shape)}")
    return _attention_backward(Q, K, V, weights, d_out)


def numerical_gradient(f, x, eps=1e-6):
    """Central finite differences: ``(f(x + eps e_i) - f(x - eps e_i)) / (2 eps)`` for each entry i.

    Slow (two calls of ``f`` per entry) but independent of any derivation: the
    check every hand-written gradient is held to. Its error is O(eps^2).

    Parameters
    ----------
    f : callable, ndarray -> float
        A scalar function of an array shaped like ``x``.
    x : ndarray of floats, any shape
        Where to take the gradient. It is left as it was (the function works on
        a copy).
    eps : float > 0
        The step.

    Returns
    -------
    ndarray, same shape and float dtype as ``x``
    """
    where = "numerical_gradient"
    if not callable(f):
        raise TypeError(f"{where}: f must be a function of an array, got {type(f).__name__}")
    x = as_float_array(where, "x", x, min_ndim=0)
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating, np.integer)) \
            or not np.isfinite(eps) or eps <= 0:
        raise ValueError(f"{where}: eps must be a positive number, got {eps!r}")
    work = x.copy()                       # perturbed one entry at a time; x itself is never touched
    grad = np.empty_like(work)
    flat, grad_flat = work.reshape(-1), grad.reshape(-1)    # views of work and grad
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        f_plus = f(work)
        flat[i] = old - eps
        f_minus = f(work)
        flat[i] = old                     # put it back before the next entry
        if np.ndim(f_plus) != 0:
            raise ValueError(f"{where}: f must return a single number, got shape "
                             f"{shape_str(np.shape(f_plus))}")
        grad_flat[i] = (f_plus - f_minus) / (2 * eps)
    return grad


def _sum_over_batch(A, B):
    """``sum over every leading index of A^T @ B``: a weight's gradient, ``(d_in, d_out)``."""
    return A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])


def multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    """Gradients of multi-head attention for X and all four matrices.

    Recomputes the forward pass, then goes backwards through it: ``@ W_o``, merge
    (whose backward is a split), attention in every head at once, split (whose
    backward is a merge), and the three projections, whose gradients for X add up.

    Parameters
    ----------
    X, W_q, W_k, W_v, W_o, num_heads, mask
        As for :func:`multi_head_attention`.
    d_out : ndarray, shape (..., n, d_model)
        The gradient of the loss with respect to ``out``.

    Returns
    -------
    dict with keys ``"X"`` (shaped like X) and ``"W_q"``, ``"W_k"``, ``"W_v"``,
    ``"W_o"`` (each ``(d_model, d_model)``): the gradients of ``sum(out * d_out)``.
    """
    where = "multi_head_attention_backward"
    X, mats, num_heads = _check_mha(where, X, W_q, W_k, W_v, W_o, num_heads, mask)
    W_q, W_k, W_v, W_o = mats["W_q"], mats["W_k"], mats["W_v"], mats["W_o"]
    d_out = as_float_array(where, "d_out", d_out, min_ndim=2)
    if d_out.shape != X.shape:
        raise ValueError(f"{where}: d_out must have the shape of the output, {shape_str(X.shape)} "
                         f"for X {shape_str(X.shape)}; got {shape_str(d_out.shape)}")
    return _mha_backward(d_out, _mha_forward(X, W_q, W_k, W_v, W_o, num_heads, mask))


# The backward pass in two halves: the first keeps what the second needs (a "cache", as in
# CS231n's layers); multi_head_attention_backward above is the two in a row.
def _mha_forward(X, W_q, W_k, W_v, W_o, num_heads, mask):
    """The forward pass up to the merged heads, as a cache for :func:`_mha_backward` (no checks)."""
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))   # each (..., h, n, d_head)
    heads, weights = _attention(Q, K, V, mask)                            # (..., h, n, d_head), (..., h, n, n)
    return {"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o, "num_heads": num_heads,
            "Q": Q, "K": K, "V": V, "weights": weights, "merged": merge_heads(heads)}   # merged: (..., n, d_model)


def _mha_backward(d_out, cache):
    """The gradients of ``sum(out * d_out)`` from the forward pass's ``cache`` (no checks)."""
    X, W_q, W_k, W_v, W_o = (cache[name] for name in ("X", "W_q", "W_k", "W_v", "W_o"))
    merged, num_heads = cache["merged"], cache["num_heads"]
    d_merged = d_out @ W_o.T                                              # (..., n, d_model)
    dQ, dK, dV = _attention_backward(cache["Q"], cache["K"], cache["V"], cache["weights"],
                                     split_heads(d_merged, num_heads))
    dQ, dK, dV = merge_heads(dQ), merge_heads(dK), merge_heads(dV)        # each (..., n, d_model)
    return {
        "X": dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T,                        # X fed all three projections
        "W_q": _sum_over_batch(X, dQ),
        "W_k": _sum_over_batch(X, dK),
        "W_v": _sum_over_batch(X, dV),
        "W_o": _sum_over_batch(merged, d_out),
    }
