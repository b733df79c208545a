"""Lesson 06: tiled attention: the online softmax over key/value blocks, O(n) extra memory.

Part of :mod:`helpers.reference` (see its docstring for the conventions).
"""

import numpy as np

from ..validation import positive_int, shape_str
from .attention import _check_qkv, _scores


def _online_attention(Q, K, V, block_size, causal):
    """Online-softmax attention without input checks (see :func:`online_softmax_attention`)."""
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    dtype = np.result_type(Q, K, V)
    n_q, n_k = Q.shape[-2], K.shape[-2]

    # A view with the full batch shape (no copy), so every score block has it too and the
    # in-place updates below never need to broadcast into a bigger array.
    Q = np.broadcast_to(Q, batch + Q.shape[-2:])             # (..., n_q, d_k)
    m = np.full(batch + (n_q, 1), -np.inf, dtype=dtype)      # running row max
    l = np.zeros(batch + (n_q, 1), dtype=dtype)              # running sum of exp
    acc = np.zeros(batch + (n_q, V.shape[-1]), dtype=dtype)  # running sum of exp * V
    for start in range(0, n_k, block_size):
        K_b = K[..., start:start + block_size, :]            # (..., b, d_k); the last may be shorter
        V_b = V[..., start:start + block_size, :]            # (..., b, d_v)
        # Causal: queries before `start` may see none of this block's keys: skip their rows.
        rows = slice(start if causal else 0, None)
        s = _scores(Q[..., rows, :], K_b)                    # (..., rows, b): the only score block
        if causal:   # query start + i may see key start + j only when j <= i
            np.copyto(s, -np.inf, where=~np.tri(*s.shape[-2:], dtype=bool))
        m_old = m[..., rows, :]                              # views: updated in place below
        m_new = np.maximum(m_old, s.max(axis=-1, keepdims=True))  # (..., rows, 1): max so far
        rescale = np.exp(m_old - m_new)                      # exp(-inf) = 0 on a row's first block
        s -= m_new                                           # in place: every entry <= 0
        p = np.exp(s, out=s)                                 # in place: (..., rows, b), entries <= 1
        l[..., rows, :] *= rescale                           # old sum, moved to the new max ...
        l[..., rows, :] += p.sum(axis=-1, keepdims=True)     # ... plus this block's
        acc[..., rows, :] *= rescale                         # old weighted sum, moved to the new max ...
        acc[..., rows, :] += p @ V_b                         # ... plus this block's: (..., rows, d_v)
        m_old[...] = m_new
        del s, p                                             # free this block before the next is made
    acc /= l                                                 # the final division, in place
    return acc


def _check_online(where, Q, K, V, block_size):
    Q, K, V, _ = _check_qkv(where, Q, K, V)
    return Q, K, V, positive_int(where, "block_size", block_size)


def online_softmax_attention(Q, K, V, block_size=128):
    """Attention computed one key/value block at a time (the FlashAttention idea).

    Keeps a running row maximum ``m``, a running softmax denominator ``l`` and a
    running weighted sum ``acc``. When a new block raises the maximum, the old
    ``l`` and ``acc`` are rescaled by ``exp(m_old - m_new)``; at the end
    ``out = acc / l``. Never more than an ``(n_q, block_size)`` slice of scores
    exists at once, so the extra memory is O(n), not O(n^2).

    Parameters
    ----------
    Q : ndarray, shape (..., n_q, d_k)
    K : ndarray, shape (..., n_k, d_k)
    V : ndarray, shape (..., n_k, d_v)
    block_size : int > 0
        Keys per block; the last block may be shorter.

    Returns
    -------
    out : ndarray, shape (..., n_q, d_v)
        Equal to ``scaled_dot_product_attention(Q, K, V)[0]`` up to rounding.
    """
    Q, K, V, block_size = _check_online("online_softmax_attention", Q, K, V, block_size)
    return _online_attention(Q, K, V, block_size, causal=False)


def causal_online_softmax_attention(Q, K, V, block_size=128):
    """Causal attention one key/value block at a time (lesson 06's transfer exercise).

    Query i attends to keys 0..i only, as with ``mask=causal_mask(n)``. Each block's
    scores are masked where the key comes after the query, and the rows of queries
    that come before the whole block are skipped: they would see none of it.

    Parameters
    ----------
    Q : ndarray, shape (..., n, d_k)
    K : ndarray, shape (..., n, d_k)
    V : ndarray, shape (..., n, d_v)
    block_size : int > 0

    Returns
    -------
    out : ndarray, shape (..., n, d_v)
        Equal to ``scaled_dot_product_attention(Q, K, V, causal_mask(n))[0]`` up to rounding.
    """
    where = "causal_online_softmax_attention"
    Q, K, V, block_size = _check_online(where, Q, K, V, block_size)
    if Q.shape[-2] != K.shape[-2]:
        raise ValueError(f"{where}: causal attention needs as many queries as keys (one per token), "
                         f"got Q {shape_str(Q.shape)}, K {shape_str(K.shape)}")
    return _online_attention(Q, K, V, block_size, causal=True)
