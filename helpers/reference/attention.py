"""Lessons 01-03: queries, keys and values; the score grid; softmax; masks; attention.

Part of :mod:`helpers.reference` (see its docstring for the conventions).
Read top to bottom, this module is the whole of scaled dot-product attention in NumPy.
"""

import numpy as np

from ..validation import as_float_array, batch_shape, bool_mask, positive_int, same_size, shape_str


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
