"""Lesson 04: split into heads, attend in each, merge, project with W_O.

Part of :mod:`helpers.reference` (see its docstring for the conventions).
"""

import numpy as np

from ..validation import as_float_array, bool_mask, positive_int, shape_str
from .attention import _attention


def _check_heads(where, d_model, num_heads):
    num_heads = positive_int(where, "num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(f"{where}: d_model={d_model} is not divisible by num_heads={num_heads}")
    return num_heads


def split_heads(X, num_heads):
    """Cut the model dimension into heads: head i holds columns ``i*d_head:(i+1)*d_head``.

    Parameters
    ----------
    X : ndarray, shape (..., n, d_model)
    num_heads : int, divides d_model

    Returns
    -------
    ndarray, shape (..., num_heads, n, d_head) with d_head = d_model // num_heads
    """
    where = "split_heads"
    X = as_float_array(where, "X", X, min_ndim=2)
    *batch, n, d_model = X.shape
    num_heads = _check_heads(where, d_model, num_heads)
    d_head = d_model // num_heads
    H = X.reshape(*batch, n, num_heads, d_head)   # (..., n, h, d_head): columns cut into h pieces
    return np.swapaxes(H, -3, -2)                 # (..., h, n, d_head): heads first


def split_heads_batched(X, num_heads):
    """:func:`split_heads` on a batch of sentences (lesson 04's transfer exercise).

    Parameters
    ----------
    X : ndarray, shape (B, n, d_model)
        B sentences of n tokens each.
    num_heads : int, divides d_model

    Returns
    -------
    ndarray, shape (B, num_heads, n, d_head): sentence b's head i holds columns
    ``i*d_head:(i+1)*d_head`` of ``X[b]``.
    """
    X = as_float_array("split_heads_batched", "X", X, min_ndim=3)
    if X.ndim != 3:
        raise ValueError(f"split_heads_batched: X must be (B, n, d_model), got shape "
                         f"{shape_str(X.shape)}")
    _check_heads("split_heads_batched", X.shape[-1], num_heads)
    return split_heads(X, num_heads)


def merge_heads(H):
    """Concatenate the heads back side by side: the inverse of :func:`split_heads`.

    Parameters
    ----------
    H : ndarray, shape (..., num_heads, n, d_head)

    Returns
    -------
    ndarray, shape (..., n, num_heads * d_head)
    """
    H = as_float_array("merge_heads", "H", H, min_ndim=3)
    *batch, h, n, d_head = H.shape
    X = np.swapaxes(H, -3, -2)                    # (..., n, h, d_head)
    return X.reshape(*batch, n, h * d_head)       # (..., n, d_model)


def _check_mha(where, X, W_q, W_k, W_v, W_o, num_heads, mask):
    """Check multi-head attention's inputs; return ``X``, the four matrices by name, ``num_heads``."""
    X = as_float_array(where, "X", X, min_ndim=2)
    d_model = X.shape[-1]
    mats = {}
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_o", W_o)):
        W = as_float_array(where, name, W, min_ndim=2)
        if W.shape != (d_model, d_model):
            raise ValueError(f"{where}: {name} must be (d_model, d_model) = {(d_model, d_model)} "
                             f"for X {shape_str(X.shape)}, got {shape_str(W.shape)}")
        mats[name] = W
    num_heads = _check_heads(where, d_model, num_heads)
    if mask is not None:
        _check_heads_mask(where, mask, X, num_heads)
    return X, mats, num_heads


def _check_heads_mask(where, mask, X, num_heads):
    """A boolean mask that broadcasts to the heads' scores ``(..., num_heads, n, n)``.

    ``(n, n)`` is one mask for every sentence and head; ``(B, 1, n, n)`` one per sentence
    (padding and causal together), broadcast over the heads, as torch's ``attn_mask`` is.
    A mask with as many axes as ``X`` (``(B, n, n)`` for ``X (B, n, d_model)``) is refused:
    its first axis would line up with the heads.
    """
    *batch, n, _ = X.shape
    target = (*batch, num_heads, n, n)
    if isinstance(mask, np.ndarray) and mask.ndim == X.ndim >= 3:
        raise ValueError(f"{where}: mask {shape_str(mask.shape)} has as many axes as X "
                         f"{shape_str(X.shape)}, so its first axis would line up with the heads: give "
                         f"a per-sentence mask an axis for the heads, mask[:, None] of shape "
                         f"{shape_str((*mask.shape[:-2], 1, *mask.shape[-2:]))}")
    try:
        bool_mask(where, mask, target)
    except ValueError:
        raise ValueError(f"{where}: mask {shape_str(mask.shape)} does not broadcast to the heads' "
                         f"scores {shape_str(target)} (..., num_heads, n, n) for X "
                         f"{shape_str(X.shape)}: use (n, n) for every sentence, or (B, 1, n, n) "
                         f"for one mask per sentence") from None


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Multi-head self-attention: project, split, attend per head, merge, project.

    Parameters
    ----------
    X : ndarray, shape (..., n, d_model)
    W_q, W_k, W_v, W_o : ndarray, shape (d_model, d_model)
    num_heads : int, divides d_model
    mask : bool ndarray broadcastable to (..., num_heads, n, n), optional
        True where a query may attend to a key, the same for every head unless it has a heads
        axis: ``(n, n)`` for every sentence, ``(B, 1, n, n)`` for one mask per sentence (a
        padded batch's padding-and-causal mask). A query with no key allowed gets zeros.

    Returns
    -------
    out : ndarray, shape (..., n, d_model)
    weights : ndarray, shape (..., num_heads, n, n), one attention map per head.
        Each head scales its scores by 1/sqrt(d_head), not 1/sqrt(d_model).
    """
    X, mats, num_heads = _check_mha("multi_head_attention", X, W_q, W_k, W_v, W_o, num_heads, mask)
    d_model = X.shape[-1]
    d_head = d_model // num_heads
    *batch, n, _ = X.shape

    # The three projections as ONE matrix product (one big product runs faster than
    # three thin ones): W_qkv = [W_q | W_k | W_v] is (d_model, 3 * d_model).
    W_qkv = np.concatenate([mats["W_q"], mats["W_k"], mats["W_v"]], axis=-1)
    QKV = X @ W_qkv                                         # (..., n, 3 * d_model) = [Q | K | V]
    QKV = QKV.reshape(*batch, n, 3, num_heads, d_head)      # (..., n, 3, h, d_head): split Q/K/V, then heads
    # Move "which of Q/K/V" to the front and heads before tokens: a view, nothing copied.
    # (Copying it first, so that each head's matrix is contiguous, gives the same numbers
    # and was slower at every size measured: matmul reads the strided view just as well.)
    QKV = np.moveaxis(QKV, (-3, -4), (0, -2))               # (3, ..., h, n, d_head)
    Q, K, V = QKV                                           # each (..., h, n, d_head)

    out, weights = _attention(Q, K, V, mask)                # (..., h, n, d_head), (..., h, n, n)
    out = np.swapaxes(out, -3, -2).reshape(*batch, n, d_model)   # merge: (..., n, d_model)
    return out @ mats["W_o"], weights                       # (..., n, d_model)
