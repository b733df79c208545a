"""Reference implementations of every exercise in the course.

One function per exercise, with the exact name and signature the lessons use
(see the exercise contract in CONTRIBUTING.md). They are what the checks compare a
learner's function against, what the lessons fall back on before an exercise is
solved, and what the grader uses.

Unlike the learner's versions they also accept leading batch dimensions
(``(..., n, d)``), keep the input's floating dtype (float32 in, float32 out) and
raise a ``ValueError``/``TypeError`` that names the argument and its shape when
the input is wrong. There is no Python loop over heads or rows anywhere; the
online-softmax attention loops over key blocks only.

Read top to bottom, this file is the whole of scaled dot-product and multi-head
attention in NumPy; the input checks it calls are in :mod:`helpers.validation`.
"""

import numpy as np

from .validation import (
    as_float_array,
    batch_shape,
    bool_mask,
    positive_int,
    same_size,
    shape_str,
)

__all__ = [
    "project_qkv",
    "cross_project_qkv",
    "attention_scores",
    "score_std",
    "softmax",
    "causal_mask",
    "causal_mask_for_new_tokens",
    "scaled_dot_product_attention",
    "split_heads",
    "split_heads_batched",
    "merge_heads",
    "multi_head_attention",
    "attention_flops",
    "fit_power_law",
    "flops_crossing",
    "online_softmax_attention",
    "causal_online_softmax_attention",
    "softmax_backward",
    "attention_backward",
    "numerical_gradient",
    "multi_head_attention_backward",
    "adam_step",
]


# --------------------------------------------------------------------------- 01
def project_qkv(X, W_q, W_k, W_v):
    """Project token embeddings to queries, keys and values.

    Parameters
    ----------
    X : ndarray, shape (..., n, d_model)
        One embedding row per token.
    W_q, W_k : ndarray, shape (d_model, d_k)
        Learned query and key matrices.
    W_v : ndarray, shape (d_model, d_v)
        Learned value matrix.

    Returns
    -------
    Q : ndarray, shape (..., n, d_k)    -- "what I look for"
    K : ndarray, shape (..., n, d_k)    -- "what I offer"
    V : ndarray, shape (..., n, d_v)    -- "what I pass on"
    """
    where = "project_qkv"
    X = as_float_array(where, "X", X, min_ndim=2)
    weights = {name: as_float_array(where, name, W, min_ndim=2)
               for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v))}
    for name, W in weights.items():
        if W.ndim != 2:
            raise ValueError(f"{where}: {name} must be a 2-D (d_model, d) matrix, "
                             f"got shape {shape_str(W.shape)}")
        if W.shape[0] != X.shape[-1]:
            raise ValueError(
                f"{where}: X has d_model={X.shape[-1]} but {name} has {W.shape[0]} rows "
                f"(X {shape_str(X.shape)}, {name} {shape_str(W.shape)})")
    same_size(where, "W_q", weights["W_q"].shape[1], "W_k", weights["W_k"].shape[1], "d_k",
              f"W_q {shape_str(weights['W_q'].shape)}, W_k {shape_str(weights['W_k'].shape)}")
    Q = X @ weights["W_q"]   # (..., n, d_k)
    K = X @ weights["W_k"]   # (..., n, d_k)
    V = X @ weights["W_v"]   # (..., n, d_v)
    return Q, K, V


def cross_project_qkv(X_q, X_kv, W_q, W_k, W_v):
    """Cross-attention's projections: queries from one sequence, keys and values from another.

    Parameters
    ----------
    X_q : ndarray, shape (..., n_q, d_model)
        The tokens that ask (e.g. a translation being written).
    X_kv : ndarray, shape (..., n_k, d_model)
        The tokens that are looked at (e.g. the sentence being translated).
    W_q, W_k : ndarray, shape (d_model, d_k)
    W_v : ndarray, shape (d_model, d_v)

    Returns
    -------
    Q : ndarray, shape (..., n_q, d_k)   -- ``X_q @ W_q``
    K : ndarray, shape (..., n_k, d_k)   -- ``X_kv @ W_k``
    V : ndarray, shape (..., n_k, d_v)   -- ``X_kv @ W_v``
    """
    where = "cross_project_qkv"
    X_q = as_float_array(where, "X_q", X_q, min_ndim=2)
    X_kv = as_float_array(where, "X_kv", X_kv, min_ndim=2)
    same_size(where, "X_q", X_q.shape[-1], "X_kv", X_kv.shape[-1], "d_model",
              f"X_q {shape_str(X_q.shape)}, X_kv {shape_str(X_kv.shape)}")
    Q, _, _ = project_qkv(X_q, W_q, W_k, W_v)      # (..., n_q, d_k)
    _, K, V = project_qkv(X_kv, W_q, W_k, W_v)     # (..., n_k, d_k), (..., n_k, d_v)
    return Q, K, V


# --------------------------------------------------------------------------- 02
def _check_qk(where, Q, K):
    Q = as_float_array(where, "Q", Q, min_ndim=2)
    K = as_float_array(where, "K", K, min_ndim=2)
    same_size(where, "Q", Q.shape[-1], "K", K.shape[-1], "d_k",
              f"Q {shape_str(Q.shape)}, K {shape_str(K.shape)}")
    batch_shape(where, {"Q": Q, "K": K})
    return Q, K


def _check_qkv(where, Q, K, V):
    """Check an attention's Q, K and V; return them as float arrays, and their batch shape."""
    Q, K = _check_qk(where, Q, K)
    V = as_float_array(where, "V", V, min_ndim=2)
    same_size(where, "K", K.shape[-2], "V", V.shape[-2], "n_k",
              f"K {shape_str(K.shape)}, V {shape_str(V.shape)}")
    return Q, K, V, batch_shape(where, {"Q": Q, "K": K, "V": V})


def _scores(Q, K):
    """``Q @ K.T / sqrt(d_k)`` without input checks (batched)."""
    d_k = Q.shape[-1]
    scale = Q.dtype.type(1.0 / np.sqrt(d_k))
    # Scale the (n_q, d_k) queries rather than the (n_q, n_k) grid: the same numbers (up to
    # rounding), n_k / d_k times fewer multiplications, and no second grid-sized array.
    return (Q * scale) @ np.swapaxes(K, -1, -2)   # (..., n_q, n_k)


def attention_scores(Q, K):
    """Scaled dot-product scores: entry (i, j) is how much token i cares about token j.

    Parameters
    ----------
    Q : ndarray, shape (..., n_q, d_k)
    K : ndarray, shape (..., n_k, d_k)

    Returns
    -------
    scores : ndarray, shape (..., n_q, n_k)
        ``Q @ K.T / sqrt(d_k)`` with ``d_k = Q.shape[-1]``.
    """
    Q, K = _check_qk("attention_scores", Q, K)
    return _scores(Q, K)


def score_std(d_k, sigma=1.0):
    """The standard deviation of an unscaled score ``q · k``, before any training.

    For ``q`` and ``k`` with ``d_k`` independent entries of mean 0 and standard
    deviation ``sigma``: each product ``q_m k_m`` has variance ``sigma**4``, the
    ``d_k`` variances add up, so ``Var(q · k) = d_k * sigma**4``.

    Parameters
    ----------
    d_k : int or ndarray
        The size of each query and key (positive).
    sigma : float or ndarray
        The standard deviation of every entry of q and k (>= 0).

    Returns
    -------
    float (or ndarray, broadcast): ``sqrt(d_k) * sigma**2``
    """
    d_k, sigma = np.asarray(d_k, dtype=float), np.asarray(sigma, dtype=float)
    if (d_k <= 0).any():
        raise ValueError(f"score_std: d_k must be positive, got d_k={d_k.tolist()}")
    if (sigma < 0).any():
        raise ValueError(f"score_std: sigma must be >= 0, got sigma={sigma.tolist()}")
    result = np.sqrt(d_k) * sigma ** 2
    return float(result) if result.ndim == 0 else result


# --------------------------------------------------------------------------- 03
def _softmax(x, axis=-1, overwrite=False):
    """Stable softmax without input checks. Rows that are all ``-inf`` give zeros.

    With ``overwrite=True`` the result is written into ``x`` itself (which must be
    a float array we own): attention's score grid is the biggest array there is,
    and reusing it saves allocating and filling two more of the same size.
    """
    x_max = np.max(x, axis=axis, keepdims=True)          # (..., 1): each row's maximum
    # A row with no finite entry (all -inf) would give -inf - -inf = nan: shift it by 0.
    x_max[~np.isfinite(x_max)] = 0
    e = np.subtract(x, x_max, out=x if overwrite else None)   # same shape as x, every entry <= 0
    np.exp(e, out=e)                                      # in place; every entry now <= 1: no overflow
    total = np.sum(e, axis=axis, keepdims=True)           # (..., 1): each row's sum, >= 1 ...
    total[total == 0] = 1                                 # ... or 0 for an all -inf row: 0 / 1 = 0
    e /= total                                            # in place: each row now sums to 1
    return e


def softmax(x, axis=-1):
    """Numerically stable softmax along ``axis``.

    Subtracting the row maximum before ``exp`` changes nothing mathematically
    (the factor ``exp(-max)`` cancels between numerator and denominator) but keeps
    every ``exp`` at most 1, so scores of 1e4 do not overflow to ``inf``/``nan``.

    Parameters
    ----------
    x : ndarray, any shape
        Scores; ``-inf`` entries are allowed and get weight 0. A slice that is
        ``-inf`` everywhere gets all-zero weights.
    axis : int
        The axis that sums to 1.

    Returns
    -------
    ndarray, same shape and float dtype as ``x``.
    """
    where = "softmax"
    x = as_float_array(where, "x", x, min_ndim=1)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{where}: axis must be an int, got {axis!r}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"{where}: axis={axis} is out of range for x {shape_str(x.shape)}")
    if np.isnan(x).any():
        raise ValueError(f"{where}: x contains NaN")
    if np.isposinf(x).any():
        raise ValueError(f"{where}: x contains +inf (only -inf, meaning 'masked', is allowed)")
    return _softmax(x, axis=axis)


def causal_mask(n):
    """Boolean ``(n, n)`` mask, True where token i may attend to token j (j <= i).

    Examples
    --------
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    n = positive_int("causal_mask", "n", n)
    return np.tril(np.ones((n, n), dtype=bool))


def causal_mask_for_new_tokens(n_q, n_k):
    """Causal mask for the last ``n_q`` tokens of a sequence of ``n_k``, as queries.

    Query ``i`` is the token at position ``n_k - n_q + i``: it may attend to the keys
    ``j <= n_k - n_q + i`` (all the earlier tokens and itself). With ``n_q == n_k``
    this is :func:`causal_mask`; with ``n_q == 1`` (one new token) every key is allowed.

    Returns
    -------
    mask : ndarray of bool, shape (n_q, n_k)
    """
    n_q = positive_int("causal_mask_for_new_tokens", "n_q", n_q)
    n_k = positive_int("causal_mask_for_new_tokens", "n_k", n_k)
    if n_q > n_k:
        raise ValueError(f"causal_mask_for_new_tokens: n_q={n_q} new tokens cannot be more than "
                         f"the n_k={n_k} tokens they belong to")
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)


def _attention(Q, K, V, mask=None):
    """Scaled dot-product attention without input checks."""
    scores = _scores(Q, K)                       # (..., n_q, n_k), a fresh array
    if mask is not None:
        np.copyto(scores, -np.inf, where=~mask)  # masked entries get weight exactly 0
    weights = _softmax(scores, axis=-1, overwrite=True)   # the same array, rows sum to 1 (or 0)
    return weights @ V, weights                  # (..., n_q, d_v)


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Attention: each query's output is a softmax-weighted blend of the values.

    Parameters
    ----------
    Q : ndarray, shape (..., n_q, d_k)
    K : ndarray, shape (..., n_k, d_k)
    V : ndarray, shape (..., n_k, d_v)
    mask : bool ndarray broadcastable to (n_q, n_k), optional
        True where query i may attend to key j. A query whose mask row is all
        False gets all-zero weights and an all-zero output (never NaN).

    Returns
    -------
    out : ndarray, shape (..., n_q, d_v)
    weights : ndarray, shape (..., n_q, n_k)
    """
    where = "scaled_dot_product_attention"
    Q, K, V, batch = _check_qkv(where, Q, K, V)
    if mask is not None:
        bool_mask(where, mask, batch + (Q.shape[-2], K.shape[-2]))
    return _attention(Q, K, V, mask)


# --------------------------------------------------------------------------- 04
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
        bool_mask(where, mask, (X.shape[-2], X.shape[-2]))
    return X, mats, num_heads


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Multi-head self-attention: project, split, attend per head, merge, project.

    Parameters
    ----------
    X : ndarray, shape (..., n, d_model)
    W_q, W_k, W_v, W_o : ndarray, shape (d_model, d_model)
    num_heads : int, divides d_model
    mask : bool ndarray broadcastable to (n, n), optional
        The same mask for every head.

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
    # Move "which of Q/K/V" to the front and heads before tokens, and copy once so that
    # each head's (n, d_head) matrix is contiguous (the per-head products run faster).
    QKV = np.ascontiguousarray(np.moveaxis(QKV, (-3, -4), (0, -2)))   # (3, ..., h, n, d_head)
    Q, K, V = QKV                                           # each (..., h, n, d_head)

    out, weights = _attention(Q, K, V, mask)                # (..., h, n, d_head), (..., h, n, n)
    out = np.swapaxes(out, -3, -2).reshape(*batch, n, d_model)   # merge: (..., n, d_model)
    return out @ mats["W_o"], weights                       # (..., n, d_model)


# --------------------------------------------------------------------------- 05
def attention_flops(n, d_model):
    """Floating-point operations of one single-sequence attention layer.

    A multiply-add counts as 2 operations; softmax and scaling are left out
    (they are O(n^2), not O(n^2 d)).

    Returns
    -------
    dict
        ``"projections"``: Q, K and V, ``3 * 2*n*d^2``;
        ``"scores"``: ``Q @ K.T``, ``2*n^2*d``;
        ``"weighted_sum"``: ``weights @ V``, ``2*n^2*d``;
        ``"output_projection"``: ``@ W_o``, ``2*n*d^2``.
    """
    n = positive_int("attention_flops", "n", n)
    d = positive_int("attention_flops", "d_model", d_model)
    return {
        "projections": 6 * n * d * d,
        "scores": 2 * n * n * d,
        "weighted_sum": 2 * n * n * d,
        "output_projection": 2 * n * d * d,
    }


def fit_power_law(sizes, costs):
    """Exponent k of ``cost ~ c * size**k``, by least squares on log-log axes.

    Parameters
    ----------
    sizes, costs : 1-D array_like of positive numbers, same length >= 2

    Returns
    -------
    float
        The slope of ``log(cost)`` against ``log(size)``.
    """
    where = "fit_power_law"
    sizes = as_float_array(where, "sizes", sizes, min_ndim=1)
    costs = as_float_array(where, "costs", costs, min_ndim=1)
    if sizes.ndim != 1 or costs.ndim != 1:
        raise ValueError(f"{where}: sizes and costs must be 1-D, got sizes "
                         f"{shape_str(sizes.shape)}, costs {shape_str(costs.shape)}")
    if len(sizes) != len(costs):
        raise ValueError(f"{where}: sizes has {len(sizes)} values but costs has {len(costs)}")
    if len(sizes) < 2:
        raise ValueError(f"{where}: need at least 2 points to fit a line, got {len(sizes)}")
    for name, values in (("sizes", sizes), ("costs", costs)):
        if not np.all(np.isfinite(values)) or np.any(values <= 0):
            raise ValueError(f"{where}: {name} must be positive and finite to take logs, "
                             f"got min {np.min(values)!r}")
    log_s, log_c = np.log(sizes), np.log(costs)
    spread = log_s - log_s.mean()
    if not np.any(spread):
        raise ValueError(f"{where}: all sizes are equal ({sizes[0]!r}): no slope to fit")
    return float(np.sum(spread * (log_c - log_c.mean())) / np.sum(spread ** 2))


def flops_crossing(d_model, with_output_projection=True):
    """The sentence length n at which the score grid costs as many FLOPs as the projections.

    The grid (scores and weighted sum) costs ``4*n^2*d``; the projections ``6*n*d^2``
    (Q, K, V) or ``8*n*d^2`` with the output projection W_o. They are equal at
    ``n = 1.5*d`` or ``n = 2*d``: the grid's share of the two is ``n / (1.5*d)`` or ``n / (2*d)``.

    Returns
    -------
    float
    """
    d = positive_int("flops_crossing", "d_model", d_model)
    matrices = 4 if with_output_projection else 3     # (n, d) @ (d, d) products, 2*n*d^2 each
    return 2 * matrices * d / 4                         # 2*matrices*n*d^2 = 4*n^2*d


# --------------------------------------------------------------------------- 06
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


# --------------------------------------------------------------------------- 07
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
    # Forward again, keeping what the backward pass needs.
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))   # each (..., h, n, d_head)
    heads, weights = _attention(Q, K, V, mask)                            # (..., h, n, d_head), (..., h, n, n)
    merged = merge_heads(heads)                                           # (..., n, d_model)
    # Backward, step by step.
    d_merged = d_out @ W_o.T                                              # (..., n, d_model)
    dQ, dK, dV = _attention_backward(Q, K, V, weights, split_heads(d_merged, num_heads))
    dQ, dK, dV = merge_heads(dQ), merge_heads(dK), merge_heads(dV)        # each (..., n, d_model)
    return {
        "X": dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T,                        # X fed all three projections
        "W_q": _sum_over_batch(X, dQ),
        "W_k": _sum_over_batch(X, dK),
        "W_v": _sum_over_batch(X, dV),
        "W_o": _sum_over_batch(merged, d_out),
    }


# --------------------------------------------------------------------------- 08
def adam_step(param, grad, m, v, t, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8):
    """One Adam update of one parameter array (Kingma & Ba, 2015).

    ``m`` and ``v`` are running averages of the gradient and of its square; dividing
    one by the square root of the other gives every entry a step of about ``lr``,
    whatever the size of its gradient. The corrections ``1 - beta**t`` undo the
    averages' start at zero.

    Parameters
    ----------
    param, grad, m, v : ndarray, all the same shape
        The parameter, its gradient, and the two running averages (zeros at first).
    t : int >= 1
        The step number, counted from 1.
    lr, beta1, beta2, eps : float
        Step size, the averages' decay rates, and what keeps the division finite.

    Returns
    -------
    (param, m, v) : new arrays, the same shape and float dtype; the inputs are left as they were.
    """
    where = "adam_step"
    arrays = {name: as_float_array(where, name, a, min_ndim=0)
              for name, a in (("param", param), ("grad", grad), ("m", m), ("v", v))}
    for name, a in arrays.items():
        if a.shape != arrays["param"].shape:
            raise ValueError(f"{where}: {name} must have the shape of param "
                             f"{shape_str(arrays['param'].shape)}, got {shape_str(a.shape)}")
    t = positive_int(where, "t", t)
    param, grad, m, v = arrays.values()
    m = beta1 * m + (1 - beta1) * grad                       # average gradient
    v = beta2 * v + (1 - beta2) * grad ** 2                  # average squared gradient
    m_hat = m / (1 - beta1 ** t)                             # bias corrections
    v_hat = v / (1 - beta2 ** t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
