"""Lesson 11: attention at generation time: grouped-query attention, sliding windows, the KV cache.

Part of :mod:`helpers.reference` (see its docstring for the conventions).

- :func:`grouped_query_attention`: several query heads share one key/value head;
  ``num_kv_heads = num_heads`` is multi-head attention, ``num_kv_heads = 1`` multi-query.
- :func:`sliding_window_mask`: each token sees itself and the ``window - 1`` tokens before it.
- :func:`attention_decode_step`: one new token's attention, given the keys and values of the
  tokens before it (the KV cache); returns the cache with the new token's key and value added;
  with ``position=`` its query and key are rotated by RoPE (lesson 09) at that position.
- :func:`key_padding_mask`: which keys of a right-padded batch are real tokens.
"""

import numbers

import numpy as np

from ..validation import as_float_array, bool_mask, positive_int, shape_str
from .attention import _attention, _check_qkv, _softmax
from .multi_head import _check_heads
from .position import rope


def band(query_positions, key_positions, low, high):
    """Boolean ``(n_q, n_k)``: True where ``low <= i - j <= high`` for query i and key j.

    The one place the course builds a band of a mask: ``band(r, r, 0, window - 1)`` with
    ``r = np.arange(n)`` is the sliding-window mask; other bounds give its wrong versions.
    """
    offset = np.asarray(query_positions)[:, None] - np.asarray(key_positions)[None, :]   # i - j
    return (offset >= low) & (offset <= high)


def _check_kv_heads(where, num_heads, num_kv_heads):
    """``num_kv_heads`` as an int that divides ``num_heads``; return it and the group size."""
    num_kv_heads = positive_int(where, "num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(f"{where}: num_heads={num_heads} is not divisible by "
                         f"num_kv_heads={num_kv_heads} (each key/value head serves a group of "
                         f"num_heads // num_kv_heads query heads)")
    return num_kv_heads, num_heads // num_kv_heads


def _check_weights(where, d_model, d_kv, W_q, W_k, W_v, W_o, kv_note):
    """The four matrices as float arrays: W_q, W_o (d_model, d_model); W_k, W_v (d_model, d_kv)."""
    mats = {}
    for name, W, cols in (("W_q", W_q, d_model), ("W_k", W_k, d_kv), ("W_v", W_v, d_kv),
                          ("W_o", W_o, d_model)):
        W = as_float_array(where, name, W, min_ndim=2)
        if W.shape != (d_model, cols):
            note = kv_note if name in ("W_k", "W_v") else "(d_model, d_model)"
            raise ValueError(f"{where}: {name} must be {note} = {(d_model, cols)}, "
                             f"got {shape_str(W.shape)}")
        mats[name] = W
    return mats


def _grouped_attention(q, K, V, num_kv_heads, mask=None):
    """Attention of query heads grouped over shared key/value heads, without input checks.

    Parameters
    ----------
    q : ndarray, shape (..., num_heads, n_q, d_head)
    K, V : ndarray, shape (..., num_kv_heads, n_k, d_head)
        Query head i uses key/value head ``i // (num_heads // num_kv_heads)``.
    mask : bool ndarray broadcastable to (..., num_heads, n_q, n_k), optional
        An ``(n_q, n_k)`` mask is shared by every head and sequence; a per-sequence mask,
        e.g. ``(B, 1, n_q, n_k)``, by the heads of its sequence.

    Returns
    -------
    out : ndarray, shape (..., num_heads, n_q, d_head)
    weights : ndarray, shape (..., num_heads, n_q, n_k)
    """
    *batch, h, n_q, d_head = q.shape
    group = h // num_kv_heads
    # Heads kv*group ... kv*group + group - 1 form group kv: an axis of their own, of size
    # `group`, against which each key/value head broadcasts (no copy of K or V).
    q = q.reshape(*batch, num_kv_heads, group, n_q, d_head)        # (..., g, group, n_q, d_head)
    scale = q.dtype.type(1.0 / np.sqrt(d_head))                    # the HEAD size, as in lesson 04
    scores = (q * scale) @ np.swapaxes(K, -1, -2)[..., None, :, :]  # (..., g, group, n_q, n_k)
    if mask is not None:
        if mask.ndim > 2:   # (..., h or 1, n_q, n_k): split its head axis into (g, group) too
            mask = np.broadcast_to(mask, (*mask.shape[:-3], h, *mask.shape[-2:]))
            mask = mask.reshape(*mask.shape[:-3], num_kv_heads, group, *mask.shape[-2:])
        np.copyto(scores, -np.inf, where=~mask)
    weights = _softmax(scores, axis=-1, overwrite=True)             # rows sum to 1 (or 0)
    out = weights @ V[..., None, :, :]                              # (..., g, group, n_q, d_head)
    n_k = K.shape[-2]
    return (out.reshape(*batch, h, n_q, d_head),
            weights.reshape(*batch, h, n_q, n_k))


def _check_mask(where, mask, scores_shape):
    """A boolean mask that broadcasts to ``scores_shape`` ``(..., num_heads, n_q, n_k)``."""
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
        return bool_mask(where, mask, scores_shape[-2:])      # its message: not a boolean array
    try:
        fits = np.broadcast_shapes(mask.shape, scores_shape) == tuple(scores_shape)
    except ValueError:
        fits = False
    if not fits:
        *batch, h, n_q, n_k = scores_shape
        hint = ""
        if mask.ndim == 3 and batch and mask.shape[0] == batch[-1]:
            hint = (f"; a mask per sequence needs an axis for the heads: mask[:, None] is "
                    f"{shape_str((mask.shape[0], 1, *mask.shape[1:]))}")
        raise ValueError(f"{where}: mask {shape_str(mask.shape)} does not broadcast to the scores "
                         f"{shape_str(scores_shape)} (..., num_heads, n_q, n_k): give (n_q, n_k) "
                         f"for every sequence alike, or (B, 1, n_q, n_k) per sequence{hint}")
    return mask


def grouped_query_attention(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
    """Grouped-query attention: ``num_heads`` query heads share ``num_kv_heads`` key/value heads.

    Parameters
    ----------
    X : ndarray, shape (..., n, d_model)
    W_q, W_o : ndarray, shape (d_model, d_model)
    W_k, W_v : ndarray, shape (d_model, num_kv_heads * d_head), d_head = d_model // num_heads
        Key/value head k holds columns ``k*d_head:(k+1)*d_head``.
    num_heads : int, divides d_model
    num_kv_heads : int, divides num_heads
        ``num_heads``: multi-head attention (lesson 04); ``1``: multi-query attention.
    mask : bool ndarray broadcastable to (..., num_heads, n, n), optional
        True where a query may attend to a key. ``(n, n)`` (e.g. ``causal_mask(n)``) is
        shared by every sequence and head; a batch ``X (B, n, d_model)`` of sequences of
        different lengths takes a per-sequence mask ``(B, 1, n, n)``, shared by the heads
        of each sequence (as PyTorch's ``attn_mask`` broadcasts over heads, with the
        opposite polarity). ``(B, n, n)`` is read as ``(num_heads, n, n)``: add the head
        axis, ``mask[:, None]``.

    Returns
    -------
    out : ndarray, shape (..., n, d_model)
    weights : ndarray, shape (..., num_heads, n, n)
        Query head i attends with key/value head ``i // (num_heads // num_kv_heads)``;
        scores are scaled by ``1/sqrt(d_head)``.
    """
    where = "grouped_query_attention"
    X = as_float_array(where, "X", X, min_ndim=2)
    *batch, n, d_model = X.shape
    num_heads = _check_heads(where, d_model, num_heads)
    num_kv_heads, _ = _check_kv_heads(where, num_heads, num_kv_heads)
    d_head = d_model // num_heads
    mats = _check_weights(where, d_model, num_kv_heads * d_head, W_q, W_k, W_v, W_o,
                          "(d_model, num_kv_heads * d_head)")
    if mask is not None:
        mask = _check_mask(where, mask, (*batch, num_heads, n, n))

    def heads(A, count):            # (..., n, count * d_head) -> (..., count, n, d_head)
        return np.swapaxes(A.reshape(*batch, n, count, d_head), -3, -2)

    q = heads(X @ mats["W_q"], num_heads)          # (..., h, n, d_head)
    K = heads(X @ mats["W_k"], num_kv_heads)       # (..., g, n, d_head)
    V = heads(X @ mats["W_v"], num_kv_heads)       # (..., g, n, d_head)
    out, weights = _grouped_attention(q, K, V, num_kv_heads, mask)
    out = np.swapaxes(out, -3, -2).reshape(*batch, n, d_model)     # merge: (..., n, d_model)
    return out @ mats["W_o"], weights


def sliding_window_mask(n, window):
    """Boolean ``(n, n)`` mask, True where ``0 <= i - j < window``.

    Causal, and each token sees itself and the ``window - 1`` tokens before it; a
    ``window >= n`` gives the causal mask.

    Examples
    --------
    >>> sliding_window_mask(4, 2).astype(int)
    array([[1, 0, 0, 0],
           [1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """
    n = positive_int("sliding_window_mask", "n", n)
    window = positive_int("sliding_window_mask", "window", window)
    return band(np.arange(n), np.arange(n), 0, window - 1)       # (n, n)


def key_padding_mask(lengths, n):
    """Boolean ``(B, 1, n)``: True where key ``j < lengths[b]``, a real token of sequence b.

    A batch of B sequences of different lengths, each right-padded to ``n`` tokens: the
    keys ``lengths[b] ... n - 1`` of row b are padding. The mask broadcasts against
    ``(B, n_q, n)`` scores, and ``key_padding_mask(lengths, n) & causal_mask(n)`` is the
    ``(B, n, n)`` mask of causal attention over the batch. A real token's row then equals
    that sequence's attention on its own; the rows of padding queries are computed and
    ignored. A sequence of length 0 has no key at all: its rows get zero weights and zero
    outputs (never NaN).

    Parameters
    ----------
    lengths : sequence of ints, shape (B,), each ``0 <= lengths[b] <= n``
    n : int >= 1, the padded length

    Returns
    -------
    mask : ndarray of bool, shape (B, 1, n)

    Examples
    --------
    >>> key_padding_mask([3, 1], 4).astype(int)
    array([[[1, 1, 1, 0]],
    <BLANKLINE>
           [[1, 0, 0, 0]]])
    """
    where = "key_padding_mask"
    n = positive_int(where, "n", n)
    if isinstance(lengths, np.ndarray) and lengths.dtype.kind == "b":
        raise TypeError(f"{where}: lengths must be whole numbers, got a boolean array")
    values = np.asarray(lengths)
    if values.ndim != 1 or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                   for v in values.tolist()):
        raise TypeError(f"{where}: lengths must be a 1-D sequence of whole numbers (one per "
                        f"sequence), got {lengths!r}")
    if values.size and (values.min() < 0 or values.max() > n):
        raise ValueError(f"{where}: every length must be between 0 and n={n}, got {values.tolist()}")
    return (np.arange(n)[None, :] < values[:, None])[:, None, :]    # (B, 1, n)


def empty_kv_cache(num_kv_heads, d_head, dtype=np.float64):
    """A KV cache holding no token yet: ``{"K", "V"}`` of shape ``(num_kv_heads, 0, d_head)``."""
    num_kv_heads = positive_int("empty_kv_cache", "num_kv_heads", num_kv_heads)
    d_head = positive_int("empty_kv_cache", "d_head", d_head)
    return {"K": np.zeros((num_kv_heads, 0, d_head), dtype=dtype),
            "V": np.zeros((num_kv_heads, 0, d_head), dtype=dtype)}


def _check_cache(where, cache, batch, num_kv_heads, d_head):
    """The cache's K and V as float arrays of shape ``batch + (num_kv_heads, t, d_head)``."""
    if not isinstance(cache, dict) or set(cache) != {"K", "V"}:
        got = sorted(cache) if isinstance(cache, dict) else type(cache).__name__
        raise TypeError(f"{where}: cache must be a dict with the keys 'K' and 'V', got {got}")
    K = as_float_array(where, "cache['K']", cache["K"], min_ndim=3)
    V = as_float_array(where, "cache['V']", cache["V"], min_ndim=3)
    for name, A in (("cache['K']", K), ("cache['V']", V)):
        if A.shape[:-3] != tuple(batch) or A.shape[-3] != num_kv_heads or A.shape[-1] != d_head:
            want = ", ".join([*(str(b) for b in batch), str(num_kv_heads), "t", str(d_head)])
            raise ValueError(f"{where}: {name} must be (num_kv_heads, t, d_head) = ({want}) "
                             f"(x's leading dimensions first), got {shape_str(A.shape)}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"{where}: cache['K'] holds t={K.shape[-2]} tokens but cache['V'] holds "
                         f"t={V.shape[-2]} (K {shape_str(K.shape)}, V {shape_str(V.shape)})")
    return K, V


def attention_decode_step(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None,
                          window=None, position=None, base=10000.0):
    """One generated token's attention, using the keys and values kept from earlier tokens.

    The new token's key and value are appended to the cache first, so that it attends to
    itself as well as to every earlier token (or to the last ``window`` tokens, itself
    included). Fed a sequence one token at a time, starting from an empty cache, the outputs
    are the rows of ``grouped_query_attention(X, ..., mask=causal_mask(n))`` (or
    ``mask=sliding_window_mask(n, window)``).

    Parameters
    ----------
    x : ndarray, shape (..., d_model)
        The new token's embedding.
    cache : dict {"K", "V"} of ndarray, shape (..., num_kv_heads, t, d_head)
        Keys and values of the t tokens before it (t may be 0). Not modified.
    W_q, W_o : ndarray, shape (d_model, d_model)
    W_k, W_v : ndarray, shape (d_model, num_kv_heads * d_head), d_head = d_model // num_heads
    num_heads : int, divides d_model
    num_kv_heads : int dividing num_heads, or None (= num_heads)
    window : int >= 1 or None
        Keep only the last ``window`` tokens (the new one included).
    position : int >= 0 or None
        The new token's index in the sequence. When given, its query and key are rotated
        by :func:`helpers.reference.rope` at that position (``d_head`` even) and the key is
        cached already rotated: token by token with positions 0, 1, ... the outputs are
        the rows of causal attention with ``rope`` applied to every head's Q and K.
    base : float > 1
        RoPE's base (used only with ``position``).

    Returns
    -------
    out : ndarray, shape (..., d_model)
    new_cache : dict {"K", "V"} of ndarray, shape (..., num_kv_heads, t', d_head)
        New arrays with ``t' = t + 1`` (at most ``window``).
    """
    where = "attention_decode_step"
    x = as_float_array(where, "x", x, min_ndim=1)
    *batch, d_model = x.shape
    num_heads = _check_heads(where, d_model, num_heads)
    num_kv_heads, _ = _check_kv_heads(where, num_heads,
                                      num_heads if num_kv_heads is None else num_kv_heads)
    if window is not None:
        window = positive_int(where, "window", window)
    d_head = d_model // num_heads
    mats = _check_weights(where, d_model, num_kv_heads * d_head, W_q, W_k, W_v, W_o,
                          "(d_model, num_kv_heads * d_head)")
    K_old, V_old = _check_cache(where, cache, batch, num_kv_heads, d_head)
    if position is not None:
        if not isinstance(position, numbers.Integral) or isinstance(position, bool):
            raise TypeError(f"{where}: position must be the new token's index, a whole number, "
                            f"got {position!r}")
        if position < 0:
            raise ValueError(f"{where}: position must be >= 0 (the first token is 0), got {position}")
        if d_head % 2:
            raise ValueError(f"{where}: RoPE (position=...) needs an even d_head, got d_head={d_head}")

    q = (x @ mats["W_q"]).reshape(*batch, num_heads, 1, d_head)     # (..., h, 1, d_head)
    k = (x @ mats["W_k"]).reshape(*batch, num_kv_heads, 1, d_head)  # (..., g, 1, d_head)
    v = (x @ mats["W_v"]).reshape(*batch, num_kv_heads, 1, d_head)  # (..., g, 1, d_head)
    if position is not None:             # rotate at the token's own position; the cache holds
        q = rope(q, [position], base)    # keys already rotated at theirs
        k = rope(k, [position], base)
    t = K_old.shape[-2]
    keep = t if window is None else min(t, window - 1)   # earlier tokens still in the window
    K = np.concatenate([K_old[..., t - keep:, :], k], axis=-2)   # (..., g, keep + 1, d_head), new
    V = np.concatenate([V_old[..., t - keep:, :], v], axis=-2)
    out, _ = _grouped_attention(q, K, V, num_kv_heads)   # (..., h, 1, d_head): sees itself too
    out = out.reshape(*batch, d_model) @ mats["W_o"]     # merge the heads, then W_o
    return out, {"K": K, "V": V}


def sliding_window_attention(Q, K, V, window):
    """Sliding-window self-attention computed band by band: O(n * window) time and memory.

    The same ``out`` as ``scaled_dot_product_attention(Q, K, V, sliding_window_mask(n,
    window))[0]``, without the ``(n, n)`` grid: queries go in blocks of ``window``, and a
    block starting at token ``s`` only needs the keys ``s - window + 1 ... s + window - 1``.
    The biggest score array is ``(window, 2 * window - 1)``.

    Parameters
    ----------
    Q, K : ndarray, shape (..., n, d_k)
    V : ndarray, shape (..., n, d_v)
    window : int >= 1

    Returns
    -------
    out : ndarray, shape (..., n, d_v)
    """
    where = "sliding_window_attention"
    Q, K, V, _ = _check_qkv(where, Q, K, V)
    window = positive_int(where, "window", window)
    n = Q.shape[-2]
    if K.shape[-2] != n:
        raise ValueError(f"{where}: self-attention needs as many queries as keys, got "
                         f"Q {shape_str(Q.shape)}, K {shape_str(K.shape)}")
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    out = np.empty(batch + (n, V.shape[-1]), dtype=np.result_type(Q, K, V))
    for start in range(0, n, window):
        stop = min(n, start + window)
        first = max(0, start - window + 1)                       # the oldest key any query here sees
        mask = band(np.arange(start, stop), np.arange(first, stop), 0, window - 1)   # (b, keys)
        out[..., start:stop, :] = _attention(Q[..., start:stop, :], K[..., first:stop, :],
                                             V[..., first:stop, :], mask)[0]   # (..., b, d_v)
    return out


def mean_pool_kv_heads(W, num_heads, num_kv_heads):
    """Turn multi-head key (or value) columns into grouped ones: each group's heads averaged.

    How Ainslie et al. (2023, *GQA*) convert a trained multi-head model before a short
    further training: key/value head k is the mean of the columns of query heads
    ``k*group ... (k+1)*group - 1``, with ``group = num_heads // num_kv_heads``.

    Parameters
    ----------
    W : ndarray, shape (d_model, num_heads * d_head)
    num_heads : int
    num_kv_heads : int, divides num_heads

    Returns
    -------
    ndarray, shape (d_model, num_kv_heads * d_head)
    """
    where = "mean_pool_kv_heads"
    W = as_float_array(where, "W", W, min_ndim=2)
    d_model, width = W.shape
    num_heads = positive_int(where, "num_heads", num_heads)
    if width % num_heads:
        raise ValueError(f"{where}: W has {width} columns, not divisible by num_heads={num_heads}")
    num_kv_heads, group = _check_kv_heads(where, num_heads, num_kv_heads)
    d_head = width // num_heads
    blocks = W.reshape(d_model, num_kv_heads, group, d_head)      # head i = (i // group, i % group)
    return blocks.mean(axis=2).reshape(d_model, num_kv_heads * d_head)
