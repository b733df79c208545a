"""Lesson 11's generation loops: prefill then decode, a stack of layers, RoPE, padded batches.

Small functions on top of :mod:`helpers.reference`; the lesson calls them in one line each.
Shapes: one sequence, ``X (n, d_model)``; a cache ``{"K", "V"}`` of ``(num_kv_heads, t, d_head)``.

    out, cache = prefill(X[:6], W, num_heads=4, num_kv_heads=2)          # the prompt, one pass
    rows, cache = decode_sequence(reference.attention_decode_step, X[6:], W, 4, 2, cache=cache)
"""

import numpy as np

from ... import reference


def _heads(A, count):
    """``(n, count * d_head) -> (count, n, d_head)``."""
    n = A.shape[0]
    return A.reshape(n, count, -1).transpose(1, 0, 2)


def prefill(X, W, num_heads, num_kv_heads=None, cache=None, positions=None, base=10000.0):
    """The attention of ``m`` new tokens in one pass, after the ``t`` tokens in ``cache``.

    The queries of the new tokens meet the keys of all ``t + m`` tokens under
    ``causal_mask_for_new_tokens(m, t + m)`` (lesson 03): the prompt at once (``t = 0``),
    or a chunk of it. With ``positions`` (``m`` ints), queries and keys are rotated by RoPE
    first and the keys are cached rotated, as :func:`helpers.reference.attention_decode_step`
    does with ``position=``.

    Returns
    -------
    out : ndarray, shape (m, d_model)
    new_cache : dict {"K", "V"} of ndarray, shape (num_kv_heads, t + m, d_head)
    """
    W_q, W_k, W_v, W_o = W
    m, d_model = X.shape
    g = num_heads if num_kv_heads is None else num_kv_heads
    d_head = d_model // num_heads
    if cache is None:
        cache = reference.empty_kv_cache(g, d_head, dtype=X.dtype)
    q, k, v = _heads(X @ W_q, num_heads), _heads(X @ W_k, g), _heads(X @ W_v, g)
    if positions is not None:
        q, k = reference.rope(q, positions, base), reference.rope(k, positions, base)
    K = np.concatenate([cache["K"], k], axis=1)                     # (g, t + m, d_head)
    V = np.concatenate([cache["V"], v], axis=1)
    mask = reference.causal_mask_for_new_tokens(m, K.shape[1])       # (m, t + m)
    group = num_heads // g                                           # query head i -> kv i // group
    out, _ = reference.scaled_dot_product_attention(q, np.repeat(K, group, axis=0),
                                                    np.repeat(V, group, axis=0), mask)
    return out.transpose(1, 0, 2).reshape(m, d_model) @ W_o, {"K": K, "V": V}


def decode_sequence(decode_step, X, W, num_heads, num_kv_heads=None, window=None, cache=None,
                    start=None, base=10000.0):
    """Feed the rows of ``X`` one at a time; the outputs ``(n, d_model)`` and the last cache.

    ``cache`` defaults to an empty one. With ``start`` (an int), row r is given
    ``position=start + r`` (RoPE); ``start`` is where the sequence continues.
    """
    g = num_heads if num_kv_heads is None else num_kv_heads
    if cache is None:
        cache = reference.empty_kv_cache(g, X.shape[-1] // num_heads, dtype=X.dtype)
    keywords = {} if window is None else {"window": window}
    outs = []
    for r, x in enumerate(X):                                        # one token at a time
        if start is not None:
            keywords.update(position=start + r, base=base)
        out, cache = decode_step(x, cache, *W, num_heads, g, **keywords)
        outs.append(out)
    return np.array(outs), cache


def decode_step_repeating_kv(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None):
    """The decode step with each key/value head COPIED for its group (``np.repeat``), no RoPE.

    The same outputs as :func:`helpers.reference.attention_decode_step`; it exists to be timed
    against it: the copy reads and writes ``num_heads`` heads' worth of cache at every step.
    """
    W_q, W_k, W_v, W_o = (np.asarray(W) for W in (W_q, W_k, W_v, W_o))
    g = num_heads if num_kv_heads is None else num_kv_heads
    d_head = x.shape[-1] // num_heads
    K = np.concatenate([cache["K"], (x @ W_k).reshape(g, 1, d_head)], axis=1)   # (g, t + 1, d_head)
    V = np.concatenate([cache["V"], (x @ W_v).reshape(g, 1, d_head)], axis=1)
    if window is not None:
        K, V = K[:, max(0, K.shape[1] - window):], V[:, max(0, V.shape[1] - window):]
    q = (x @ W_q).reshape(num_heads, 1, d_head)
    group = num_heads // g                                                       # head i -> kv i // group
    out, _ = reference.scaled_dot_product_attention(q, np.repeat(K, group, axis=0),
                                                    np.repeat(V, group, axis=0))
    return out.reshape(-1) @ W_o, {"K": K, "V": V}


def rope_attention(X, W, num_heads, num_kv_heads=None, base=10000.0):
    """Causal grouped-query attention of the whole sequence, RoPE on every head's Q and K."""
    g = num_heads if num_kv_heads is None else num_kv_heads
    return prefill(X, W, num_heads, g, positions=np.arange(len(X)), base=base)[0]


# ------------------------------------------------------------ a stack of layers
def stack_forward(X, layers, num_heads):
    """A stack of causal attention layers with residuals, ``X <- X + attention(X)``, all rows."""
    for W in layers:
        X = X + reference.multi_head_attention(X, *W, num_heads, mask=reference.causal_mask(len(X)))[0]
    return X


def stack_decode_step(decode_step, x, caches, layers, num_heads):
    """One new token through the stack, one cache per layer; returns ``(x_out, new_caches)``."""
    new = []
    for W, cache in zip(layers, caches):
        out, cache = decode_step(x, cache, *W, num_heads)
        x = x + out                                                  # the residual, as in lesson 10
        new.append(cache)
    return x, new


def last_row(X, W, num_heads):
    """One layer without a cache, computing only what the last token needs: its row.

    Keys and values of every token are projected again; only the last token's query is.
    """
    W_q, W_k, W_v, W_o = W
    q = _heads(X[-1:] @ W_q, num_heads)                               # (h, 1, d_head)
    out, _ = reference.scaled_dot_product_attention(q, _heads(X @ W_k, num_heads),
                                                    _heads(X @ W_v, num_heads))
    return out.reshape(-1) @ W_o                                      # (d_model,)


def stack_last_row(X, layers, num_heads):
    """The stack without a cache: every row of every layer but the last, then the last row."""
    X = stack_forward(X, layers[:-1], num_heads)
    return X[-1] + last_row(X, layers[-1], num_heads)


# ------------------------------------------------------------ a batch of prompts
def pad_batch(prompts, side="right"):
    """Stack sequences ``(n_b, d)`` into ``(B, n, d)`` with zero rows; returns ``(X, lengths)``.

    ``side="right"`` puts the padding after each sequence, ``"left"`` before it.
    """
    lengths = [len(p) for p in prompts]
    n, d = max(lengths), prompts[0].shape[-1]
    X = np.zeros((len(prompts), n, d))
    for b, p in enumerate(prompts):
        X[b, slice(0, len(p)) if side == "right" else slice(n - len(p), n)] = p
    return X, lengths
