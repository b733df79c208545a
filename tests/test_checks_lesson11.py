"""The lesson 11 checks (grouped_query_attention, sliding_window_mask, attention_decode_step).

Wrong versions are written here the way a learner might write them (np.tile, loops over
heads, comparisons, slicing the cache), independently of the mistake catalogue in
helpers/exercises/lesson11.py; each must get its specific message. Correct versions written
in other ways must pass. Both tables (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``) are run
in test_checks_versions.py.
"""

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
                          "the notebook's global window"),
    "excludes itself": (lambda n, window: (_ij(n)[0] - _ij(n)[1] > 0) & (_ij(n)[0] - _ij(n)[1] <= window),
                        "the token itself is left out"),
    "ints, not booleans": (lambda n, window: reference.sliding_window_mask(n, window).astype(int),
                           "return a boolean array"),
}

WINDOW_RIGHT = {
    "tril minus tril": lambda n, window: np.tril(np.ones((n, n), bool)) & ~np.tril(np.ones((n, n), bool), -window),
    "comparisons": lambda n, window: (_ij(n)[0] >= _ij(n)[1]) & (_ij(n)[0] - _ij(n)[1] < window),
    "loops": lambda n, window: np.array([[0 <= i - j < window for j in range(n)] for i in range(n)]),
    "causal mask and a band": lambda n, window: reference.causal_mask(n) & np.triu(np.ones((n, n), bool), 1 - window),
}


# ------------------------------------------------------------ attention_decode_step
def decode(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None, *,
           attend_first=False, scale="head", tile=False, trim="after", use_W_o=True,
           in_place=False):
    """The decode step as a learner writes it, with switches for the usual slips."""
    g = num_heads if num_kv_heads is None else num_kv_heads
    d_model = len(x)
    d_head = d_model // num_heads
    q = (x @ W_q).reshape(num_heads, 1, d_head)
    k = (x @ W_k).reshape(g, 1, d_head)
    v = (x @ W_v).reshape(g, 1, d_head)
    K, V = cache["K"], cache["V"]
    if window is not None and trim == "before":
        K, V = K[:, -window:], V[:, -window:]
    if not attend_first:
        K, V = np.concatenate([K, k], axis=1), np.concatenate([V, v], axis=1)
    if window is not None and trim == "after":
        K, V = K[:, -window:], V[:, -window:]
    heads = np.repeat(np.arange(g), num_heads // g) if not tile else np.tile(np.arange(g), num_heads // g)
    d = {"head": np.sqrt(d_head), "model": np.sqrt(d_model)}[scale]
    if K.shape[1] == 0:
        out = np.zeros((num_heads, 1, d_head))
    else:
        A = _softmax(q @ K[heads].transpose(0, 2, 1) / d)       # (h, 1, t)
        out = A @ V[heads]                                     # (h, 1, d_head)
    if attend_first:
        K, V = np.concatenate([K, k], axis=1), np.concatenate([V, v], axis=1)
    out = out.reshape(d_model)
    if use_W_o:
        out = out @ W_o
    if in_place:
        cache["K"], cache["V"] = K, V
        return out, cache
    return out, {"K": K, "V": V}


def decode_loop(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None):
    """Right: a loop over query heads, the cache cut with an explicit start index."""
    g = num_kv_heads or num_heads
    d_head = len(x) // num_heads
    K = np.concatenate([cache["K"], (x @ W_k).reshape(g, 1, d_head)], axis=1)
    V = np.concatenate([cache["V"], (x @ W_v).reshape(g, 1, d_head)], axis=1)
    if window is not None:
        start = max(0, K.shape[1] - window)
        K, V = K[:, start:], V[:, start:]
    q = x @ W_q
    parts = []
    for i in range(num_heads):
        j = i // (num_heads // g)
        s = K[j] @ q[i * d_head:(i + 1) * d_head] / np.sqrt(d_head)     # (t,)
        w = np.exp(s - s.max())
        parts.append(w / w.sum() @ V[j])
    return np.concatenate(parts) @ W_o, {"K": K, "V": V}


def decode_via_gqa(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None):
    """Right: the single token as a one-row query against the cached keys, lesson 03's attention."""
    g = num_kv_heads or num_heads
    d_head = len(x) // num_heads
    new = {name: np.concatenate([cache[name], (x @ W).reshape(g, 1, d_head)], axis=1)
           for name, W in (("K", W_k), ("V", W_v))}
    if window:
        new = {name: A[:, -window:] for name, A in new.items()}
    Qh = (x @ W_q).reshape(g, num_heads // g, d_head)            # (g, group, d_head)
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
    "returns the old cache": (lambda *a, **k: (decode(*a, **k)[0], a[1]), "the returned cache is the one given"),
}

DECODE_RIGHT = {
    "concatenate, slice, repeat": lambda *a, **k: decode(*a, **k),
    "loop over query heads": decode_loop,
    "a group axis and lesson 03's attention": decode_via_gqa,
}


WRONG_BY_EXERCISE = {"grouped_query_attention": GQA_WRONG, "sliding_window_mask": WINDOW_WRONG,
                     "attention_decode_step": DECODE_WRONG}
RIGHT_BY_EXERCISE = {"grouped_query_attention": GQA_RIGHT, "sliding_window_mask": WINDOW_RIGHT,
                     "attention_decode_step": DECODE_RIGHT}


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
