"""Lesson 10: a residual attention layer's backward pass, and a stack with one update removed or patched.

Part of :mod:`helpers.reference` (see its docstring for the conventions).
"""

import numpy as np

from ..validation import as_float_array, positive_int, shape_str
from .backward import multi_head_attention_backward
from .multi_head import multi_head_attention


def residual_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    """Gradients of one residual attention layer, ``Y = X + multi_head_attention(X, ...)[0]``.

    ``Y`` depends on ``X`` twice: straight through the addition, and through the layer.
    So ``dX`` is ``d_out`` (the residual's gradient, one addition) plus the layer's own
    ``dX``; the four matrices' gradients are the layer's.

    Parameters
    ----------
    X, W_q, W_k, W_v, W_o, num_heads, mask
        As for :func:`multi_head_attention`.
    d_out : ndarray, shape (..., n, d_model)
        The gradient of the loss with respect to ``Y``.

    Returns
    -------
    dict with keys ``"X"``, ``"W_q"``, ``"W_k"``, ``"W_v"``, ``"W_o"``: the gradients of
    ``sum(Y * d_out)``.
    """
    grads = multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask)
    grads["X"] = grads["X"] + d_out                 # Y = X + ...: X's gradient gets d_out too
    return grads


def _check_stack(where, X, layers, layer, positions):
    X = as_float_array(where, "X", X, min_ndim=3)
    if not isinstance(layers, (list, tuple)) or not layers:
        raise TypeError(f"{where}: layers must be a non-empty list of (W_q, W_k, W_v, W_o) tuples, "
                        f"got {type(layers).__name__}")
    for i, matrices in enumerate(layers, start=1):
        if len(matrices) != 4:
            raise ValueError(f"{where}: layer {i} must be a tuple (W_q, W_k, W_v, W_o), "
                             f"got {len(matrices)} items")
    layer = positive_int(where, "layer", layer)
    if layer > len(layers):
        raise ValueError(f"{where}: layer={layer}, but there are {len(layers)} layers "
                         f"(counted from 1)")
    positions = np.asarray(positions)
    if positions.dtype.kind not in "iu" or positions.ndim != 2 or len(positions) != X.shape[0]:
        raise ValueError(f"{where}: positions must be whole numbers of shape (B, k) with "
                         f"B = {X.shape[0]} sentences, got dtype {positions.dtype}, shape "
                         f"{shape_str(positions.shape)}")
    n = X.shape[-2]
    if positions.size and (positions.min() < 0 or positions.max() >= n):
        raise ValueError(f"{where}: positions must be between 0 and n - 1 = {n - 1}, "
                         f"got {positions.min()} to {positions.max()}")
    return X, layer, positions


def ablated_stack(X, layers, num_heads, layer, positions, mask=None):
    """Run a stack of residual attention layers with one layer's update removed at some tokens.

    Every layer ``l`` does ``X = X + out_l`` (``out_l, w_l = multi_head_attention(X, *layers[l-1],
    num_heads, mask)``), except that layer ``layer`` adds nothing at the tokens
    ``positions[b]`` of sentence ``b``: there its update is removed (the stream keeps its
    input). The layer still runs, and every other token gets its update.

    Parameters
    ----------
    X : ndarray, shape (B, n, d_model)
        The embeddings (the stream before layer 1).
    layers : list of (W_q, W_k, W_v, W_o), each (d_model, d_model)
        Layer 1 first.
    num_heads : int
    layer : int, 1 .. len(layers)
        Which layer's update to remove (counted from 1).
    positions : int ndarray, shape (B, k)
        For each sentence, the k tokens where it is removed.
    mask : bool ndarray (n, n), optional
        The same attention mask in every layer.

    Returns
    -------
    X_out : ndarray, shape (B, n, d_model)
        The stream after the last layer.
    weights : ndarray, shape (B, num_heads, n, n)
        The last layer's attention weights (where a pointer reads).
    """
    where = "ablated_stack"
    X, layer, positions = _check_stack(where, X, layers, layer, positions)
    keep = np.ones(X.shape[:2], dtype=X.dtype)                  # (B, n)
    keep[np.arange(len(X))[:, None], positions] = 0
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number == layer:
            out = out * keep[..., None]                         # the update removed there
        X = X + out                                             # the residual connection
    return X, weights


def patched_stack(X, X_source, layers, num_heads, layer, positions, mask=None):
    """Run a stack of residual attention layers with one layer's update taken from another run.

    Activation patching (e.g. Meng et al., 2022; Heimersheim & Nanda, 2024): run the stack
    on the *source* sentences ``X_source`` and keep layer ``layer``'s update there; then run
    it on ``X``, where layer ``layer`` adds, at the tokens ``positions[b]`` of sentence ``b``,
    the source run's update at those tokens instead of its own. Every other token, and
    every other layer, is computed as usual (so later layers see the patched stream).

    Parameters
    ----------
    X, X_source : ndarray, shape (B, n, d_model)
        The embeddings of the sentences to run, and of the sentences to take the update from
        (sentence b of one is patched from sentence b of the other).
    layers, num_heads, layer, positions, mask
        As for :func:`ablated_stack`.

    Returns
    -------
    (X_out, weights) : as for :func:`ablated_stack`, for the run on ``X``.
    """
    where = "patched_stack"
    X, layer, positions = _check_stack(where, X, layers, layer, positions)
    X_source = as_float_array(where, "X_source", X_source, min_ndim=3)
    if X_source.shape != X.shape:
        raise ValueError(f"{where}: X_source must have the shape of X, {shape_str(X.shape)}; "
                         f"got {shape_str(X_source.shape)}")
    source = X_source                                            # the source run, up to `layer`
    for matrices in layers[:layer]:
        update = multi_head_attention(source, *matrices, num_heads, mask)[0]
        source = source + update
    chosen = np.zeros(X.shape[:2], dtype=bool)                   # (B, n)
    chosen[np.arange(len(X))[:, None], positions] = True
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number == layer:
            out = np.where(chosen[..., None], update, out)       # the source's update there
        X = X + out                                              # the residual connection
    return X, weights
