"""The lesson 11 checks (grouped_query_attention, sliding_window_mask, attention_decode_step,
key_padding_mask).

Wrong versions are written here the way a learner might write them (np.tile, loops over
heads, comparisons, slicing the cache), independently of the mistake catalogue in
helpers/exercises/lesson11.py; each must get its specific message. Correct versions written
in other ways must pass. Both tables (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``) are run
in test_checks_versions.py.
"""

import functools

import numpy as np
import pytest

from helpers import reference
from helpers.exercises import EXERCISES


def _softmax(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


# ------------------------------------------------------- grouped_query_attention
def gqa_repeat(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None, *, tile=False,
               scale="head", use_mask=True, use_W_o=True):
    """Repeat each kv head for its group (np.repeat), then lesson 04's batched attention."""
    n, d_model = X.shape
    d_head = d_model // num_heads
    group = num_heads // num_kv_heads
    Q = (X @ W_q).reshape(n, num_heads, d_head).transpose(1, 0, 2)          # (h, n, d_head)
    K = (X @ W_k).reshape(n, num_kv_heads, d_head).transpose(1, 0, 2)       # (g, n, d_head)
    V = (X @ W_v).reshape(n, num_kv_heads, d_head).transpose(1, 0, 2)
    if tile:
        K, V = np.tile(K, (group, 1, 1)), np.tile(V, (group, 1, 1))
    else:
        K, V = np.repeat(K, group, axis=0), np.repeat(V, group, axis=0)    # (h, n, d_head)
    S = Q @ K.transpose(0, 2, 1) / {"head": np.sqrt(d_head), "model": np.sqrt(d_model),
                                    "kv": np.sqrt(num_kv_heads * d_head)}[scale]
    if mask is not None and use_mask:
        S = np.where(mask, S, -np.inf)
    A = _softmax(S)
    out = (A @ V).transpose(1, 0, 2).reshape(n, d_model)
    return (out @ W_o if use_W_o else out), A


def gqa_loop(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
    """A loop over query heads, each taking its kv head's columns."""
    d_head = X.shape[1] // num_heads
    group = num_heads // num_kv_heads
    outs, maps = [], []
    for i in range(num_heads):
        j = i // group
        q = X @ W_q[:, i * d_head:(i + 1) * d_head]
        k = X @ W_k[:, j * d_head:(j + 1) * d_head]
        v = X @ W_v[:, j * d_head:(j + 1) * d_head]
        out, w = reference.scaled_dot_product_attention(q, k, v, mask)
        outs.append(out)
        maps.append(w)
    return np.hstack(outs) @ W_o, np.array(maps)


def gqa_groups_axis(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
    """A group axis: queries (g, group, n, d_head) against keys (g, 1, n, d_head), einsum."""
    n, d_model = X.shape
    d_head, group = d_model // num_heads, num_heads // num_kv_heads
    Q = (X @ W_q).reshape(n, num_kv_heads, group, d_head)
    K = (X @ W_k).reshape(n, num_kv_heads, d_head)
    V = (X @ W_v).reshape(n, num_kv_heads, d_head)
    S = np.einsum("igrd,jgd->grij", Q, K) / np.sqrt(d_head)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = _softmax(S)
    out = np.einsum("grij,jgd->igrd", A, V).reshape(n, d_model)
    return out @ W_o, A.reshape(num_heads, n, n)


def gqa_reshape_without_transpose(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
    """Lesson 04's trap: (n, width) reshaped straight to (heads, n, d_head), and back."""
    n, d_model = X.shape
    group = num_heads // num_kv_heads
    Q = (X @ W_q).reshape(num_heads, n, -1)
    K = np.repeat((X @ W_k).reshape(num_kv_heads, n, -1), group, axis=0)
    V = np.repeat((X @ W_v).reshape(num_kv_heads, n, -1), group, axis=0)
    out, A = reference.scaled_dot_product_attention(Q, K, V, mask)
    return out.reshape(n, d_model) @ W_o, A


def gqa_loop_pairing_by_count(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
    """A loop over query heads that picks kv head i // num_kv_heads (the count, not the group size)."""
    n, d_model = X.shape
    d_head = d_model // num_heads
    Q = (X @ W_q).reshape(n, num_heads, d_head).transpose(1, 0, 2)
    K = (X @ W_k).reshape(n, num_kv_heads, d_head).transpose(1, 0, 2)
    V = (X @ W_v).reshape(n, num_kv_heads, d_head).transpose(1, 0, 2)
    outs, maps = [], []
    for i in range(num_heads):
        j = i // num_kv_heads
        out, w = reference.scaled_dot_product_attention(Q[i], K[j], V[j], mask)
        outs.append(out)
        maps.append(w)
    return np.hstack(outs) @ W_o, np.array(maps)


def gqa_split_by_reshape_merged_by_transpose(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
    """Split with a plain reshape to (heads, n, d_head), merged back with the right transpose."""
    n, d_model = X.shape
    group = num_heads // num_kv_heads
    Q = (X @ W_q).reshape(num_heads, n, -1)
    K = np.repeat((X @ W_k).reshape(num_kv_heads, n, -1), group, axis=0)
    V = np.repeat((X @ W_v).reshape(num_kv_heads, n, -1), group, axis=0)
    out, A = reference.scaled_dot_product_attention(Q, K, V, mask)
    return out.transpose(1, 0, 2).reshape(n, d_model) @ W_o, A


GQA_WRONG = {
    "np.tile instead of np.repeat": (lambda *a, mask=None: gqa_repeat(*a, mask, tile=True),
                                     "i % num_kv_heads"),
    "scaled by sqrt(d_model)": (lambda *a, mask=None: gqa_repeat(*a, mask, scale="model"),
                                "scaled by sqrt(d_model), the model width"),
    "scaled by the width of K": (lambda *a, mask=None: gqa_repeat(*a, mask, scale="kv"),
                                 "the width of K"),
    "mask ignored": (lambda *a, mask=None: gqa_repeat(*a, mask, use_mask=False), "mask was ignored"),
    "W_o left out": (lambda *a, mask=None: gqa_repeat(*a, mask, use_W_o=False), "W_o was left out"),
    "one map per kv head": (
        lambda *a, mask=None: (gqa_loop(*a, mask)[0],
                               gqa_loop(*a, mask)[1].reshape(a[-1], -1, len(a[0]), len(a[0])).mean(1)),
        "one map per QUERY head"),
    "reshape without a transpose (lesson 04's trap)": (gqa_reshape_without_transpose,
                                                        "split with a reshape and no transpose"),
    "split by a reshape, merged by a transpose": (gqa_split_by_reshape_merged_by_transpose,
                                                  "SPLIT with a reshape and no transpose, though merged"),
    "kv head i // num_kv_heads": (gqa_loop_pairing_by_count, "divides by the number of kv heads"),
    "always causal (is_causal=True)": (
        lambda X, *a, mask=None: gqa_repeat(X, *a, np.tril(np.ones((len(X), len(X)), bool))
                                            if mask is None else mask),
        "a causal mask was applied although none was given"),
    "masked_fill(mask, -inf): True = blocked": (
        lambda *a, mask=None: gqa_repeat(*a, None if mask is None else np.logical_not(mask)),
        "the mask was applied the wrong way round"),
}

GQA_RIGHT = {
    "np.repeat": lambda *a, mask=None: gqa_repeat(*a, mask),
    "loop over query heads": gqa_loop,
    "a group axis and einsum": gqa_groups_axis,
    "lesson 04 with the kv columns repeated": lambda X, W_q, W_k, W_v, W_o, h, g, mask=None:
        reference.multi_head_attention(
            X, W_q, *(np.repeat(W.reshape(len(W), g, -1), h // g, axis=1).reshape(len(W), -1)
                      for W in (W_k, W_v)), W_o, h, mask),
}


# ------------------------------------------------------------ sliding_window_mask
def _ij(n):
    return np.arange(n)[:, None], np.arange(n)[None, :]


WINDOW_WRONG = {
    "i - j <= window": (lambda n, window: (_ij(n)[0] - _ij(n)[1] >= 0) & (_ij(n)[0] - _ij(n)[1] <= window),
                        "window + 1 tokens"),
    "tril minus tril, one short": (
        lambda n, window: np.tril(np.ones((n, n), bool)) & ~np.tril(np.ones((n, n), bool), -(window - 1)),
        "only window - 1 tokens"),
    "both ways": (lambda n, window: np.abs(_ij(n)[0] - _ij(n)[1]) < window, "reaches both ways"),
    "upside down (triu)": (
        lambda n, window: np.triu(np.ones((n, n), bool)) & ~np.triu(np.ones((n, n), bool), window),
        "upside down"),
    "notebook's window": (lambda n, w: np.tril(np.ones((n, n), bool)) & ~np.tril(np.ones((n, n), bool), -4),
                          "the notebook's global `window`, set in section 4"),
    "excludes itself": (lambda n, window: (_ij(n)[0] - _ij(n)[1] > 0) & (_ij(n)[0] - _ij(n)[1] <= window),
                        "the token itself is left out"),
    "ints, not booleans": (lambda n, window: reference.sliding_window_mask(n, window).astype(int),
                           "return a boolean array"),
    "True = blocked (PyTorch's convention)": (
        lambda n, window: (_ij(n)[0] < _ij(n)[1]) | (_ij(n)[0] - _ij(n)[1] >= window),
        "the mask is inverted"),
    "an additive mask of -inf": (
        lambda n, window: np.where((_ij(n)[0] >= _ij(n)[1]) & (_ij(n)[0] - _ij(n)[1] < window), 0.0, -np.inf),
        "this is an additive mask"),
    "log of a band of window + 1 (Mistral's reference code)": (
        lambda n, window: np.where(np.triu(np.tril(np.ones((n, n))), -window) > 0, 0.0, -np.inf),
        "this is an additive mask (0 where a token may attend, a large negative number where it "
        "may not, to be added to the scores). Return the boolean mask itself: True where 0 <= i - j "
        "< window, False elsewhere. Besides, each token sees window + 1 tokens"),
    "an additive mask of -1e9": (
        lambda n, window: -1e9 * ~((_ij(n)[0] >= _ij(n)[1]) & (_ij(n)[0] - _ij(n)[1] < window)),
        "this is an additive mask"),
}

WINDOW_RIGHT = {
    "tril minus tril":
        lambda n, window: np.tril(np.ones((n, n), bool)) & ~np.tril(np.ones((n, n), bool), -window),
    "comparisons": lambda n, window: (_ij(n)[0] >= _ij(n)[1]) & (_ij(n)[0] - _ij(n)[1] < window),
    "loops": lambda n, window: np.array([[0 <= i - j < window for j in range(n)] for i in range(n)]),
    "causal mask and a band":
        lambda n, window: reference.causal_mask(n) & np.triu(np.ones((n, n), bool), 1 - window),
}


# ------------------------------------------------------------ attention_decode_step
def my_rope(x, p, base=10000.0, *, halves=False, width=None):
    """A learner's RoPE of x (..., d) at one position p: pairs (2i, 2i+1) turned by p * base**(-2i/d).

    ``halves``: Hugging Face's rotate_half pairs (i, i + d/2); ``width``: the d in the exponent.
    """
    d = x.shape[-1]
    theta = p * base ** (-np.arange(0, d, 2) / (width or d))         # (d/2,)
    c, s_ = np.cos(theta), np.sin(theta)
    if halves:
        a, b = x[..., :d // 2], x[..., d // 2:]
        return np.concatenate([a * c - b * s_, a * s_ + b * c], axis=-1)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s_
    out[..., 1::2] = x[..., 0::2] * s_ + x[..., 1::2] * c
    return out


def decode(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None,
           position=None, base=10000.0, *, attend_first=False, scale="head", tile=False,
           trim="after", use_W_o=True, in_place=False, new_first=False, ring=False,
           rope="q, k", pos=lambda position, t, window: position, halves=False, model_width=False,
           own_base=None, merge_T=False, full_width=False, none_is=None):
    """The decode step as a learner writes it, with switches for the usual slips."""
    g = (num_heads if none_is is None else none_is) if num_kv_heads is None else num_kv_heads
    d_model = len(x)
    d_head = d_model // num_heads
    q = (x @ W_q).reshape(num_heads, 1, d_head)
    k = (x @ W_k).reshape(g, 1, d_head)
    v = (x @ W_v).reshape(g, 1, d_head)
    K, V = cache["K"], cache["V"]
    t = K.shape[1]
    k_store = k
    if position is not None and full_width:             # rotate x @ W_q and x @ W_k whole, then split
        q = my_rope(x @ W_q, position, base).reshape(num_heads, 1, d_head)
        k = k_store = my_rope(x @ W_k, position, base).reshape(g, 1, d_head)
    elif position is not None and rope == "q; every key at attend time":
        q = my_rope(q, position, base)                  # k stays unrotated, in the cache too
    elif position is not None and rope:
        p = pos(position, t, window)
        turn = functools.partial(my_rope, p=p, base=own_base or base, halves=halves,
                                 width=d_model if model_width else None)
        q = turn(q)
        if "k" in rope:
            k = k_store = turn(k)
        if rope == "q, k for attention only":
            k_store = (x @ W_k).reshape(g, 1, d_head)
        if "v" in rope:
            v = turn(v)
        if rope == "q, k and the cache again":
            K = turn(K)
    if k_store is not k:                    # attends with the rotated key, keeps the other
        out = decode(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, window, position, base)[0]
        new = decode(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, window)[1]
        return out, new
    if window is not None and trim == "before":
        K, V = K[:, -window:], V[:, -window:]
    if window is not None and trim == "keep window - 1, then append":
        K, V = K[:, -(window - 1):], V[:, -(window - 1):]
    if ring and window is not None and t == window:        # full: overwrite the oldest slot
        K, V = K.copy(), V.copy()
        K[:, 0], V[:, 0] = k[:, 0], v[:, 0]
    elif new_first:
        K, V = np.concatenate([k, K], axis=1), np.concatenate([v, V], axis=1)
    elif not attend_first:
        K, V = np.concatenate([K, k], axis=1), np.concatenate([V, v], axis=1)
    if window is not None and trim == "after":
        K, V = K[:, -window:], V[:, -window:]
    if window is not None and trim == "start index":       # the first index kept, no max(0, ...)
        start = t + 1 - window
        K, V = K[:, start:], V[:, start:]
    K_att = K
    if position is not None and rope == "q; every key at attend time":   # key j at its own position
        K_att = my_rope(K, np.arange(position - K.shape[1] + 1, position + 1)[:, None], base)
    heads = np.repeat(np.arange(g), num_heads // g) if not tile else np.tile(np.arange(g), num_heads // g)
    d = {"head": np.sqrt(d_head), "model": np.sqrt(d_model)}[scale]
    if K.shape[1] == 0:
        out = np.zeros((num_heads, 1, d_head))
    else:
        A = _softmax(q @ K_att[heads].transpose(0, 2, 1) / d)   # (h, 1, t)
        out = A @ V[heads]                                     # (h, 1, d_head)
    if attend_first:
        K, V = np.concatenate([K, k], axis=1), np.concatenate([V, v], axis=1)
    out = out[:, 0].T.reshape(d_model) if merge_T else out.reshape(d_model)
    if use_W_o:
        out = out @ W_o
    if in_place:
        cache["K"], cache["V"] = K, V
        return out, cache
    return out, {"K": K, "V": V}


def decode_loop(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None,
                position=None, base=10000.0):
    """Right: a loop over query heads, the cache cut with an explicit start index; RoPE with
    the course's rope on each (1, d_head) head."""
    g = num_kv_heads or num_heads
    d_head = len(x) // num_heads
    k = (x @ W_k).reshape(g, 1, d_head)
    q = (x @ W_q).reshape(num_heads, 1, d_head)
    if position is not None:
        k, q = reference.rope(k, [position], base), reference.rope(q, [position], base)
    K = np.concatenate([cache["K"], k], axis=1)
    V = np.concatenate([cache["V"], (x @ W_v).reshape(g, 1, d_head)], axis=1)
    if window is not None:
        start = max(0, K.shape[1] - window)
        K, V = K[:, start:], V[:, start:]
    q = q.reshape(-1)
    parts = []
    for i in range(num_heads):
        j = i // (num_heads // g)
        s = K[j] @ q[i * d_head:(i + 1) * d_head] / np.sqrt(d_head)     # (t,)
        w = np.exp(s - s.max())
        parts.append(w / w.sum() @ V[j])
    return np.concatenate(parts) @ W_o, {"K": K, "V": V}


def decode_via_gqa(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None,
                   position=None, base=10000.0):
    """Right: the single token as a one-row query against the cached keys, lesson 03's attention;
    RoPE as complex numbers (each pair a + ib times e^(i p theta))."""
    g = num_kv_heads or num_heads
    d_head = len(x) // num_heads

    def turn(a):                                                   # a (..., d_head)
        if position is None:
            return a
        angles = position * base ** (-np.arange(0, d_head, 2) / d_head)
        z = (a[..., 0::2] + 1j * a[..., 1::2]) * np.exp(1j * angles)
        return np.stack([z.real, z.imag], axis=-1).reshape(a.shape)
    new = {name: np.concatenate([cache[name], f((x @ W).reshape(g, 1, d_head))], axis=1)
           for name, W, f in (("K", W_k, turn), ("V", W_v, lambda a: a))}
    if window:
        new = {name: A[:, -window:] for name, A in new.items()}
    Qh = turn((x @ W_q).reshape(g, num_heads // g, d_head))      # (g, group, d_head)
    out, _ = reference.scaled_dot_product_attention(Qh, new["K"], new["V"])   # per kv head
    return out.reshape(-1) @ W_o, new


DECODE_WRONG = {
    "attends before appending": (lambda *a, **k: decode(*a, **k, attend_first=True),
                                 "appended AFTER attending"),
    "scaled by sqrt(d_model)": (lambda *a, **k: decode(*a, **k, scale="model"),
                                "scaled by sqrt(d_model), the model width"),
    "np.tile for the kv heads": (lambda *a, **k: decode(*a, **k, tile=True), "i % num_kv_heads"),
    "never cut to the window": (lambda *a, **k: decode(*a, **k, trim="never"),
                                "the cache grows past the window"),
    "cut before appending": (lambda *a, **k: decode(*a, **k, trim="before"),
                             "BEFORE the new token was appended"),
    "W_o left out": (lambda *a, **k: decode(*a, **k, use_W_o=False), "W_o was left out"),
    "writes into the given cache": (lambda *a, **k: decode(*a, **k, in_place=True),
                                    "it changed the cache it was given"),
    "returns the old cache": (lambda *a, **k: (decode(*a, **k)[0], a[1]),
                              "the returned cache is the one given"),
    "a negative start index": (lambda *a, **k: decode(*a, **k, trim="start index"),
                               "NumPy counts a negative start from the END"),
    "the new token first": (lambda *a, **k: decode(*a, **k, new_first=True),
                            "holds its tokens in another order"),
    "a ring buffer": (lambda *a, **k: decode(*a, **k, ring=True), "A ring buffer that overwrites slot"),
    "zeros for the first token": (
        lambda x, cache, *a, **k: (np.zeros(len(x)) if cache["K"].shape[1] == 0
                                   else decode(x, cache, *a, **k)[0], decode(x, cache, *a, **k)[1]),
        "the first token (an empty cache) got an output of zeros"),
    "heads merged with .T": (lambda *a, **k: decode(*a, **k, merge_T=True), "merged in the wrong order"),
    "K[:, -(window - 1):], then append": (
        lambda *a, **k: decode(*a, **k, trim="keep window - 1, then append"), "-0 is 0"),
    # RoPE under the cache (position=, base=): the course's "most common cache bug" and its kin
    "position accepted and ignored (**kwargs)":
        (lambda *a, position=None, base=10000.0, **k: decode(*a, **k), "the position was not used"),
    "positions restarted at 0 every step (section 6's bug)":
        (lambda *a, position=None, **k: decode(*a, **k, position=None if position is None else 0),
         "rotated at position 0 every step"),
    "key rotated for attention, cached unrotated":
        (lambda *a, **k: decode(*a, **k, rope="q, k for attention only"), "cached UNROTATED"),
    "only q rotated": (lambda *a, **k: decode(*a, **k, rope="q"), "only the query was rotated"),
    "the whole cache rotated again each step":
        (lambda *a, **k: decode(*a, **k, rope="q, k and the cache again"),
         "every cached key was rotated again"),
    "v rotated too": (lambda *a, **k: decode(*a, **k, rope="q, k, v"), "the values were rotated too"),
    "positions from 1": (lambda *a, **k: decode(*a, **k, pos=lambda p, t, w: p + 1), "position + 1"),
    "the cache's length as the position":
        (lambda *a, **k: decode(*a, **k, pos=lambda p, t, w: t), "the cache's length as the position"),
    "position % window": (lambda *a, **k: decode(*a, **k, pos=lambda p, t, w: p % w if w else p),
                          "position % window"),
    "HF's rotate_half (split halves)": (lambda *a, **k: decode(*a, **k, halves=True), "rotate_half"),
    "frequencies over d_model": (lambda *a, **k: decode(*a, **k, model_width=True),
                                 "frequencies were computed over d_model"),
    "base not passed on": (lambda *a, **k: decode(*a, **k, own_base=10000.0), "ignored the `base`"),
    "RoPE on x @ W_q and x @ W_k before the split into heads":
        (lambda *a, **k: decode(*a, **k, full_width=True), "before the split into heads"),
    "an unrotated cache, every key rotated at attend time (StreamingLLM-style)":
        (lambda *a, **k: decode(*a, **k, rope="q; every key at attend time"),
         "the cache holds the keys UNROTATED"),
    "num_kv_heads=None taken as 1 (num_kv_heads or 1)":
        (lambda *a, **k: decode(*a, **k, none_is=1), "None, which means num_heads"),
}

DECODE_RIGHT = {
    "concatenate, slice, repeat": lambda *a, **k: decode(*a, **k),
    "loop over query heads": decode_loop,
    "a group axis and lesson 03's attention": decode_via_gqa,
}


# ------------------------------------------------------------ key_padding_mask
def padding_loop(lengths, n, *, blocked=False, upto=0, left=False, negative_slice=False):
    """One sequence at a time, filling a (B, 1, n) array, with switches for the usual slips."""
    mask = np.zeros((len(lengths), 1, n), dtype=bool)
    for b, length in enumerate(lengths):
        if negative_slice:
            mask[b, 0, :-(n - length)] = True
        elif left:
            mask[b, 0, n - length:n] = length > 0
        else:
            mask[b, 0, :length + upto] = True
    return ~mask if blocked else mask


PADDING_WRONG = {
    "True = padding (PyTorch's key_padding_mask)": (
        lambda lengths, n: np.arange(n)[None, None, :] >= np.asarray(lengths)[:, None, None],
        "the mask is inverted"),
    "batch and query axes swapped, (1, B, n)": (
        lambda lengths, n: (np.arange(n)[None, :] < np.asarray(lengths)[:, None])[None],
        "batch and query axes are swapped"),
    "no query axis, (B, n)": (lambda lengths, n: np.arange(n)[None, :] < np.asarray(lengths)[:, None],
                              "Add an axis for the queries"),
    "j <= length": (lambda lengths, n: padding_loop(lengths, n, upto=1), "one key too many"),
    "left padding": (lambda lengths, n: padding_loop(lengths, n, left=True), "this is LEFT padding"),
    "slice :-(n - length)": (lambda lengths, n: padding_loop(lengths, n, negative_slice=True), ":-0"),
    "floats, not booleans": (lambda lengths, n: padding_loop(lengths, n).astype(float),
                             "return a boolean array"),
    "the queries' padding, (B, n, 1)": (
        lambda lengths, n: (np.arange(n)[None, :, None] < np.asarray(lengths)[:, None, None]),
        "marks the padding QUERIES"),
    "combined with the causal mask": (
        lambda lengths, n: padding_loop(lengths, n) & np.tril(np.ones((n, n), bool)),
        "the causal mask is already combined in"),
    "key 0 for an empty sequence, against NaN": (
        lambda lengths, n: np.arange(n)[None, None, :] < np.maximum(np.asarray(lengths), 1)[:, None, None],
        "a sequence of length 0 was given key 0"),
    "an additive mask": (lambda lengths, n: np.where(padding_loop(lengths, n), 0, -1e9).astype(float),
                         "this is an additive mask"),
    "max(lengths) wide": (lambda lengths, n: (np.arange(max(lengths)) < np.array(lengths)[:, None])[:, None],
                          "max(lengths) wide, not n"),
}

PADDING_RIGHT = {
    "a loop over the sequences": padding_loop,
    "positions against lengths": lambda lengths, n: (np.arange(n) < np.array(lengths)[:, None])[:, None, :],
    "nested comprehensions":
        lambda lengths, n: np.array([[[j < L for j in range(n)]] for L in lengths], bool),
    "rows of a triangle":
        lambda lengths, n: np.tril(np.ones((n + 1, n), bool), -1)[np.asarray(lengths)][:, None],
}


WRONG_BY_EXERCISE = {"grouped_query_attention": GQA_WRONG, "sliding_window_mask": WINDOW_WRONG,
                     "attention_decode_step": DECODE_WRONG, "key_padding_mask": PADDING_WRONG}
RIGHT_BY_EXERCISE = {"grouped_query_attention": GQA_RIGHT, "sliding_window_mask": WINDOW_RIGHT,
                     "attention_decode_step": DECODE_RIGHT, "key_padding_mask": PADDING_RIGHT}


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_first_gqa_case_has_groups_of_several_heads_and_several_groups(hidden):
    case = EXERCISES["grouped_query_attention"].cases(hidden)[0]
    h, g = case.args[-2:]
    assert 1 < g < h


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_the_first_decode_case_with_a_window_passes_a_cache_longer_than_it(hidden):
    case = next(c for c in EXERCISES["attention_decode_step"].cases(hidden) if "window" in c.kwargs)
    assert case.args[1]["K"].shape[1] > case.kwargs["window"]


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_decode_cases_include_an_empty_cache(hidden):
    cases = EXERCISES["attention_decode_step"].cases(hidden)
    assert any(c.args[1]["K"].shape[1] == 0 for c in cases)


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_decode_cases_include_a_window_not_yet_full_where_a_negative_start_wraps(hidden):
    # t + 1 < window (not full) and window < 2 (t + 1): a start t + 1 - window counts from the end
    cases = EXERCISES["attention_decode_step"].cases(hidden)
    kept = [(c.args[1]["K"].shape[1] + 1, c.kwargs["window"]) for c in cases if "window" in c.kwargs]
    assert any(t < window < 2 * t for t, window in kept)


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_padding_cases_include_an_empty_sequence_and_one_as_long_as_n(hidden):
    cases = EXERCISES["key_padding_mask"].cases(hidden)
    assert any(0 in c.args[0] for c in cases)
    assert any(c.args[1] in c.args[0] for c in cases)


