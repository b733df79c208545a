"""Lesson 12: the new gradients of a GPT (LayerNorm, the MLP) and the sampling step.

Part of :mod:`helpers.reference` (see its docstring for the conventions).

- :func:`layer_norm_backward`: the gradient through LayerNorm (Ba et al., 2016) over the last axis,
  ``y = gamma * (x - mean) / sqrt(var + eps) + beta`` (``var`` without Bessel's correction);
- :func:`mlp_backward`: the gradient through GPT-2's MLP, ``gelu(x @ W_1 + b_1) @ W_2 + b_2``,
  with GELU's tanh form (Hendrycks & Gimpel, 2016);
- :func:`next_token_probabilities`: the distribution a sampler draws the next token from, with a
  temperature and top-k.
"""

import numbers

import numpy as np

from ..validation import as_float_array, shape_str
from .attention import _softmax

GELU_C = float(np.sqrt(2.0 / np.pi))      # GELU's tanh form: 0.5 x (1 + tanh(c (x + 0.044715 x^3)))


def _check_same(where, names, arrays):
    first = arrays[0]
    for name, a in zip(names[1:], arrays[1:]):
        if a.shape != first.shape:
            raise ValueError(f"{where}: {name} must have the shape of {names[0]} "
                             f"{shape_str(first.shape)}, got {shape_str(a.shape)}")


def layer_norm_backward(d_out, x, gamma, eps=1e-5):
    """The gradients of ``sum(LN(x) * d_out)`` for ``x``, ``gamma`` and ``beta``.

    ``LN(x) = gamma * xhat + beta`` with ``xhat = (x - mean) / sqrt(var + eps)``, the mean and
    the (biased) variance taken over the last axis. ``xhat`` depends on every entry of its row
    through the mean and the variance, so ``dx`` is not just ``gamma * d_out / std``: with
    ``dxhat = gamma * d_out`` (the gradient reaching ``xhat``),
    ``dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sqrt(var + eps)``.

    Parameters
    ----------
    d_out : ndarray, shape (..., d)
        The gradient of the loss with respect to ``LN(x)``.
    x : ndarray, shape (..., d)
    gamma : ndarray, shape (d,)
    eps : float > 0

    Returns
    -------
    dx : ndarray, shape (..., d)
    dgamma, dbeta : ndarray, shape (d,), summed over every leading axis
    """
    where = "layer_norm_backward"
    d_out = as_float_array(where, "d_out", d_out)
    x = as_float_array(where, "x", x)
    gamma = as_float_array(where, "gamma", gamma)
    _check_same(where, ("x", "d_out"), (x, d_out))
    if gamma.shape != x.shape[-1:]:
        raise ValueError(f"{where}: gamma must have shape ({x.shape[-1]},) for x {shape_str(x.shape)}, "
                         f"got {shape_str(gamma.shape)}")
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    rstd = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)   # (..., 1)
    xhat = centred * rstd                                                          # (..., d)
    dxhat = d_out * gamma                                                          # reaching xhat
    dx = (dxhat - dxhat.mean(axis=-1, keepdims=True)
          - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)) * rstd
    lead = tuple(range(x.ndim - 1))
    return dx, (d_out * xhat).sum(axis=lead), d_out.sum(axis=lead)


def gelu(x):
    """GELU, tanh form (GPT-2's): ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * (x * x * x))))   # x * x * x: x ** 3 is slow


def gelu_derivative(x):
    """d gelu / dx, the tanh form: the product rule on ``0.5 x * (1 + tanh(u(x)))``."""
    t = np.tanh(GELU_C * (x + 0.044715 * (x * x * x)))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3 * 0.044715 * x * x)


def mlp_backward(d_out, x, W_1, b_1, W_2, b_2):
    """The gradients of ``sum(mlp(x) * d_out)``, ``mlp(x) = gelu(x @ W_1 + b_1) @ W_2 + b_2``.

    Backwards through the four steps: ``@ W_2 + b_2``, GELU (its derivative, element by
    element, at the pre-activation ``h = x @ W_1 + b_1``), ``@ W_1 + b_1``. A bias is added to
    every row, so its gradient is summed over every leading axis, as the matrices' are.

    Parameters
    ----------
    d_out : ndarray, shape (..., d)
    x : ndarray, shape (..., d)
    W_1 : ndarray, shape (d, d_ff); b_1 : shape (d_ff,)
    W_2 : ndarray, shape (d_ff, d); b_2 : shape (d,)

    Returns
    -------
    dict with keys ``"x"`` (shaped like x), ``"W_1"``, ``"b_1"``, ``"W_2"``, ``"b_2"`` (shaped like
    each parameter)
    """
    where = "mlp_backward"
    d_out = as_float_array(where, "d_out", d_out)
    x = as_float_array(where, "x", x)
    W_1, b_1, W_2, b_2 = (as_float_array(where, name, a) for name, a in
                          (("W_1", W_1), ("b_1", b_1), ("W_2", W_2), ("b_2", b_2)))
    d, d_ff = x.shape[-1], W_1.shape[-1]
    for name, a, shape in (("W_1", W_1, (d, d_ff)), ("b_1", b_1, (d_ff,)), ("W_2", W_2, (d_ff, d)),
                           ("b_2", b_2, (d,)), ("d_out", d_out, x.shape)):
        if a.shape != shape:
            raise ValueError(f"{where}: {name} must have shape {shape_str(shape)} for x "
                             f"{shape_str(x.shape)} and W_1 {shape_str(W_1.shape)}, got {shape_str(a.shape)}")
    h = x @ W_1 + b_1                                        # (..., d_ff)  the pre-activation
    dg = d_out @ W_2.T                                       # (..., d_ff)  d gelu(h)
    dh = dg * gelu_derivative(h)                             # (..., d_ff)
    rows = (-1, d_ff)
    return {"x": dh @ W_1.T,
            "W_1": x.reshape(-1, d).T @ dh.reshape(rows),
            "b_1": dh.reshape(rows).sum(axis=0),
            "W_2": gelu(h).reshape(rows).T @ d_out.reshape(-1, d),
            "b_2": d_out.reshape(-1, d).sum(axis=0)}


def next_token_probabilities(logits, temperature=1.0, top_k=None):
    """The distribution to draw the next token from: ``softmax(logits / temperature)``, top-k.

    With ``top_k = k``, only the k tokens with the largest logits keep a probability (the
    rest get exactly 0) and the kept ones are renormalised to sum to 1. Where logits tie
    at the k-th place, the lower token ids are kept: exactly k tokens, never more.

    Parameters
    ----------
    logits : ndarray, shape (..., V)
    temperature : float > 0
        Below 1 sharpens the distribution, above 1 flattens it.
    top_k : int >= 1 or None
        None keeps every token (as does any k >= V).

    Returns
    -------
    ndarray, shape (..., V), the float dtype of ``logits``: each row sums to 1
    """
    where = "next_token_probabilities"
    logits = as_float_array(where, "logits", logits)
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
            or not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"{where}: temperature must be a number > 0, got {temperature!r}")
    scaled = logits / logits.dtype.type(temperature)
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1:
            raise ValueError(f"{where}: top_k must be a whole number >= 1 or None, got {top_k!r}")
        if top_k < logits.shape[-1]:
            order = np.argsort(-scaled, axis=-1, kind="stable")      # largest first, lower id on ties
            drop = order[..., top_k:]
            scaled = scaled.copy()
            np.put_along_axis(scaled, drop, -np.inf, axis=-1)
    return _softmax(scaled, axis=-1)
