"""Lesson 11 exercises: ``grouped_query_attention``, ``sliding_window_mask``,
``attention_decode_step`` and ``key_padding_mask``.

How the cases tell the mistakes apart:

- ``grouped_query_attention``'s first case has 4 query heads of size 3 sharing 2 key/value
  heads (d_model = 12, 5 tokens): pairing head i with kv head ``i % 2`` (``np.tile``)
  differs from ``i // 2`` (``np.repeat``), and the scales sqrt(12) (the model width),
  sqrt(6) (the keys' width) and sqrt(3) (the head size) all differ; one head per kv head,
  multi-query and masked cases follow. Pairing by ``i // num_kv_heads`` (the count taken for
  the group size) is right where num_heads = num_kv_heads² (4 and 2): the second case (6 and
  3) shows it, and the first hidden case always has num_kv_heads² > num_heads, where it gives
  wrong values instead of raising. Labels name the group size, so that a raise on a later
  case (8 query heads, 2 kv heads) reads in groups;
- ``sliding_window_mask``'s first case has a window of 2 in 7 tokens: one token more or
  less, both sides of the diagonal, the diagonal left out and the notebook's global
  ``window = 4`` all give masks of their own;
- ``attention_decode_step``'s first case has 5 cached tokens, 4 query heads and 2 kv
  heads, no window: attending before appending (5 keys instead of 6), the scale, the
  pairing and a missing ``W_o`` show there. The second leaves ``num_kv_heads`` out; its
  label says that None means num_heads, since a step that takes None for 1 raises a reshape
  error there, which no simulated mistake can match. The first case with a window passes a cache
  *longer* than the window (t = 5, window = 3), so a cache that is never cut (6 tokens),
  one cut before appending (4), one cut after attending (right cache, output over all 6
  tokens) and one cut to ``window - 1`` (2) all differ; a full cache (t = window), an
  empty one (the first token), a window not yet full (t + 1 < window: a start index
  ``t + 1 - window`` without ``max(0, ...)`` counts from the end) and a window of 1 (where
  ``[:, -(window - 1):]`` is ``[:, -0:]``) follow. The contract keeps the cache in order,
  oldest first: a cache with the right tokens in another order (the new one first, or a
  rolling buffer's slots) is told so. Four cases pass ``position=`` (RoPE under the cache),
  with head sizes of 4 and more (split halves differ from interleaved pairs there, and
  ``d_model`` from ``d_head``): after a prefill (position = t), with a window (position 10,
  so that the cache's length 3 and ``10 % 3`` both differ from it), with GQA and a base of
  500 (a base not passed on shows), and the first token at position 0. Hidden cases draw
  their sizes, positions and base afresh;
- a simulated mistake that gives the reference's own answer on a case stays silent there
  (:func:`_only_where_wrong`), so a right-valued answer of the wrong dtype is told its dtype;
- ``key_padding_mask``'s first case has lengths ``[3, 0, 5, 1]`` in 5 tokens: True and False
  both occur, the inverted mask (PyTorch's True = blocked), one key too many, left padding,
  the padding of queries instead of keys, the shapes ``(B, n)`` and ``(B, n, n)`` and a key
  given to the empty sequence all differ (an empty sequence in the first case, so that a
  mask right but for its dtype is told so, not taken for that last mistake); a batch of one
  follows.

Each mistake's simulator, with nothing switched on, is the reference (a test says so).
The mistakes are written out here with NumPy; the tests (``tests/test_checks_lesson11.py``)
feed the checks independently written wrong versions and assert these messages.
"""

import copy

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ..checking.compare import agrees
from ..reference.inference import band
from ..reference.position import rope_split_halves
from ._cases import sizer

LESSON = "11_inference"

#: The notebook's global window (set in section 4), read by tests/test_catalogue.py from the solution.
NOTEBOOK_WINDOW = 4
NOTEBOOK_GLOBALS = {"window": NOTEBOOK_WINDOW}


def _softmax_rows(S):
    """Softmax over the last axis; a row with no finite entry (or no entry) gives zeros."""
    if S.shape[-1] == 0:
        return S
    m = np.max(S, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    E = np.exp(S - m)
    total = E.sum(axis=-1, keepdims=True)
    return E / np.where(total == 0, 1.0, total)


def _weights(rng, d_model, h, g):
    d_kv = g * (d_model // h)
    return (rng.standard_normal((d_model, d_model)), rng.standard_normal((d_model, d_kv)),
            rng.standard_normal((d_model, d_kv)), rng.standard_normal((d_model, d_model)))


def _kv_of(h, g, pair):
    """Which key/value head each query head uses: ``i // group`` (right), ``i % g`` or ``i // g``."""
    return {"div": np.arange(h) // (h // g), "mod": np.arange(h) % g, "div g": np.arange(h) // g}[pair]


def _scale(d_model, d_head, g, scale):
    return {"d_head": np.sqrt(d_head), "d_model": np.sqrt(d_model),
            "d_kv": np.sqrt(g * d_head), "none": 1.0}[scale]


# ------------------------------------------------------- grouped_query_attention
def _gqa_case(rng, n, h, g, d_head, label, mask=None):
    d_model = h * d_head
    X = rng.standard_normal((n, d_model))
    W = _weights(rng, d_model, h, g)
    kwargs, note = {}, ""
    if mask == "causal":
        kwargs, note = {"mask": reference.causal_mask(n)}, ", causal mask"
    elif mask is not None:
        kwargs, note = {"mask": reference.sliding_window_mask(n, mask)}, f", window of {mask}"
    return Case((X, *W, h, g), kwargs,
                f"{label}: X {X.shape}, W_k and W_v {W[1].shape}, num_heads={h}, "
                f"num_kv_heads={g} (groups of {h // g} query head{'s' if h // g > 1 else ''}){note}")


def gqa_cases(rng, hidden):
    shapes = [  # (n, num_heads, num_kv_heads, d_head, label, mask)
        (5, 4, 2, 3, "4 query heads of 3 sharing 2 kv heads", None),
        (4, 6, 3, 2, "6 query heads sharing 3 kv heads", None),
        (6, 4, 1, 2, "multi-query: one kv head", None),
        (3, 2, 2, 4, "as many kv heads as query heads", None),
        (5, 4, 2, 3, "4 query heads, 2 kv heads", "causal"),
        (6, 8, 2, 2, "8 query heads, 2 kv heads", 3),
        (1, 2, 1, 3, "a single token", None),
    ]
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        # the first case: groups of 2 or more, 3 or more of them, and num_kv_heads² > num_heads,
        # so that pairing by i // num_kv_heads gives wrong values there instead of raising
        h1, g1 = [(6, 3), (8, 4), (12, 4), (10, 5)][int(rng.integers(4))]
        h, g = [(4, 2), (6, 2), (6, 3), (8, 2), (8, 4)][int(rng.integers(5))]
        h2 = int(rng.choice([4, 6, 8]))
        shapes = [(size(3, 7), h1, g1, int(rng.choice([2, 3, 5])), f"{h1} query heads, {g1} kv heads", None),
                  (size(3, 6), h2, 1, size(2, 4), "multi-query", None),
                  (size(2, 5), 3, 3, size(2, 4), "as many kv heads as query heads", None),
                  (size(4, 7), h, g, size(2, 4), f"{h} query heads, {g} kv heads", "causal"),
                  (size(5, 8), 4, 2, size(2, 3), "4 query heads, 2 kv heads", size(2, 3)),
                  (1, 4, 2, size(2, 3), "a single token", None)]
    return [_gqa_case(rng, *shape) for shape in shapes]


def _plain_softmax(S):
    """Softmax over the last axis as most code writes it: a row with no allowed key gives NaN."""
    with np.errstate(invalid="ignore"):
        E = np.exp(S - S.max(axis=-1, keepdims=True))
        return E / E.sum(axis=-1, keepdims=True)


def _gqa(X, W_q, W_k, W_v, W_o, h, g, mask=None, *, pair="div", scale="d_head", use_mask=True,
         use_W_o=True, weights_out="all", softmax=_softmax_rows):
    """Grouped-query attention as a loop over query heads, with one thing done wrong."""
    n, d_model = X.shape
    d_head = d_model // h
    kv_of = _kv_of(h, g, pair)
    outs, maps = [], []
    for i in range(h):
        c, kv = slice(i * d_head, (i + 1) * d_head), slice(kv_of[i] * d_head, (kv_of[i] + 1) * d_head)
        S = (X @ W_q[:, c]) @ (X @ W_k[:, kv]).T / _scale(d_model, d_head, g, scale)
        if mask is not None and use_mask:
            S = np.where(mask, S, -np.inf)
        A = softmax(S)
        outs.append(A @ (X @ W_v[:, kv]))
        maps.append(A)
    out = np.concatenate(outs, axis=1)
    maps = np.array(maps)
    if weights_out == "per kv head":
        maps = maps.reshape(g, h // g, n, n).mean(axis=1)
    return (out @ W_o if use_W_o else out), maps


def _gqa_reshaped(X, W_q, W_k, W_v, W_o, h, g, mask=None, *, merge="reshape"):
    """Heads split by a reshape without a transpose; merged back the same way, or (``merge=
    "transpose"``) the right way, with the head axis moved back behind the tokens'."""
    n, d_model = X.shape
    d_head = d_model // h
    Q = (X @ W_q).reshape(h, n, d_head)                      # pieces of several tokens per "head"
    K = np.repeat((X @ W_k).reshape(g, n, d_head), h // g, axis=0)
    V = np.repeat((X @ W_v).reshape(g, n, d_head), h // g, axis=0)
    S = Q @ np.swapaxes(K, 1, 2) / np.sqrt(d_head)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = _softmax_rows(S)
    out = A @ V                                              # (h, n, d_head)
    merged = out.transpose(1, 0, 2).reshape(n, d_model) if merge == "transpose" else out.reshape(n, d_model)
    return merged @ W_o, A


_PAIRING = ("query head i used key/value head i % num_kv_heads (heads 0, 1, 2, 3 on kv heads "
            "0, 1, 0, 1): that is what np.tile does. The heads of a group are neighbours: query "
            "head i uses kv head i // (num_heads // num_kv_heads) (0, 0, 1, 1), which is what "
            "np.repeat(..., axis=0) gives.")
_PAIRING_BY_COUNT = (
    "query head i used key/value head i // num_kv_heads: that divides by the number of kv "
    "heads, not by the size of a group. A group holds num_heads // num_kv_heads neighbouring "
    "query heads (6 query heads, 3 kv heads: groups of 2, so heads 0-5 use kv heads 0, 0, 1, 1, "
    "2, 2, not 0, 0, 0, 1, 1, 1). The two agree only when num_heads = num_kv_heads² (4 and 2); "
    "where num_heads is larger (8 query heads, 2 kv heads) i // num_kv_heads even asks for kv "
    "heads that do not exist (2 and 3), and the code raises an IndexError or a shape error.")
_SCALE_D_MODEL = ("the scores were scaled by sqrt(d_model), the model width, instead of "
                  "sqrt(d_head), the head size: each head's dot products are sums of d_head "
                  "products, whatever the number of heads.")

GQA_MISTAKES = [
    Mistake(_PAIRING, lambda *a, mask=None: _gqa(*a, mask, pair="mod")),
    Mistake(_PAIRING_BY_COUNT, lambda *a, mask=None: _gqa(*a, mask, pair="div g")),
    Mistake(_SCALE_D_MODEL, lambda *a, mask=None: _gqa(*a, mask, scale="d_model")),
    Mistake("the scores were scaled by sqrt(num_kv_heads * d_head), the width of K, instead of "
            "sqrt(d_head): one head's dot products are sums of d_head products.",
            lambda *a, mask=None: _gqa(*a, mask, scale="d_kv")),
    Mistake("the scores were not scaled: in every head divide q @ k.T by sqrt(d_head).",
            lambda *a, mask=None: _gqa(*a, mask, scale="none")),
    Mistake("the mask was ignored: pass it on to every head's attention.",
            lambda *a, mask=None: _gqa(*a, mask, use_mask=False)),
    Mistake("a causal mask was applied although none was given (mask=None): without a mask every "
            "query attends to every key, the later ones too. Apply only the mask you are given "
            "(a PyTorch habit: scaled_dot_product_attention(..., is_causal=True) always masks).",
            lambda *a, mask=None: _gqa(*a, reference.causal_mask(len(a[0])) if mask is None else mask)),
    Mistake("the mask was applied the wrong way round: the scores were blocked where the mask is "
            "True (PyTorch's masked_fill(mask, -inf) convention, True = blocked). In this course "
            "True means 'may attend': block the scores where the mask is False.",
            lambda *a, mask=None: _gqa(*a, None if mask is None else ~mask, softmax=_plain_softmax)),
    Mistake("W_o was left out: after the heads are merged back to (n, d_model), multiply by W_o.",
            lambda *a, mask=None: _gqa(*a, mask, use_W_o=False)),
    Mistake("the weights have one map per key/value head (averaged over each group): return "
            "one map per QUERY head, (num_heads, n, n). The heads of a group share keys but "
            "not queries, so their maps differ.",
            lambda *a, mask=None: _gqa(*a, mask, weights_out="per kv head")),
    Mistake("the heads were split with a reshape and no transpose: reshaping (n, width) straight "
            "to (heads, n, d_head) cuts the row-major data in order, so a 'head' gets pieces of "
            "several tokens (lesson 04's trap). Cut each token's row into heads first, "
            "(n, heads, d_head), then bring the head axis to the front; merge back the same way.",
            _gqa_reshaped),
    Mistake("the heads were SPLIT with a reshape and no transpose, though merged back the right way: "
            "reshaping (n, width) straight to (heads, n, d_head) cuts the row-major data in order, "
            "so a 'head' gets pieces of several tokens (lesson 04's trap), and the merge then undoes "
            "a split that never happened. Split the way you merge: each token's row into heads "
            "first, (n, heads, d_head), then bring the head axis to the front.",
            lambda *a, mask=None: _gqa_reshaped(*a, mask, merge="transpose")),
]


# ------------------------------------------------------------ sliding_window_mask
def window_cases(rng, hidden):
    sizes = [(7, 2), (6, 3), (5, 1), (3, 7), (4, 4), (1, 1)]
    if hidden:
        n = int(rng.integers(7, 11))
        sizes = [(n, 2), (int(rng.integers(8, 12)), int(rng.choice([3, 5]))), (int(rng.integers(3, 6)), 1),
                 (int(rng.integers(2, 4)), int(rng.integers(5, 9))), (6, 6), (1, int(rng.integers(1, 4)))]
    return [Case((n, w), label=f"n={n}, window={w}") for n, w in sizes]


def _band(n, low, high):
    """True where low <= i - j <= high."""
    return band(np.arange(n), np.arange(n), low, high)


def _must_be_bool(got, case):
    dtype = np.asarray(got).dtype
    if dtype != np.bool_:
        return (f"the values are right but the dtype is {dtype}: return a boolean array "
                f"(True = may attend), e.g. the comparison itself.")
    return None


_INVERTED = ("the mask is inverted: it is True where a token may NOT attend (PyTorch's convention "
             "for nn.MultiheadAttention's masks: True = blocked). In this course True means 'may "
             "attend': True where {rule}, False elsewhere.")
_ADDITIVE = ("this is an additive mask (0 where a token may attend, a large negative number where "
             "it may not, to be added to the scores). Return the boolean mask itself: True where "
             "{rule}, False elsewhere.")

WINDOW_MISTAKES = [
    Mistake("each token sees window + 1 tokens (i - j <= window): the window counts the token "
            "itself, so it sees itself and the window - 1 before it: 0 <= i - j < window.",
            lambda n, w: _band(n, 0, w)),
    Mistake("each token sees only window - 1 tokens (itself and window - 2 before it): the "
            "window counts the token itself plus the window - 1 before it, 0 <= i - j < window.",
            lambda n, w: _band(n, 0, w - 2)),
    Mistake("the token itself is left out (0 < i - j): a token always sees itself, and the "
            "window - 1 tokens before it.",
            lambda n, w: _band(n, 1, w)),
    Mistake("the token itself is left out and the window is one short (0 < i - j < window): "
            "a token sees itself and the window - 1 tokens before it.",
            lambda n, w: _band(n, 1, w - 1)),
    Mistake("the band reaches both ways (|i - j| < window): a token may not see the tokens "
            "after it. Keep it causal: 0 <= i - j.",
            lambda n, w: _band(n, 1 - w, w - 1)),
    Mistake("the band is upside down: token i sees the tokens after it (0 <= j - i < window). "
            "It should see itself and the ones before it: 0 <= i - j < window.",
            lambda n, w: _band(n, 1 - w, 0)),
    Mistake(f"the mask used window={NOTEBOOK_WINDOW}: that is the notebook's global `window`, set "
            f"in section 4, not the argument. Use the window the function is given.",
            lambda n, w: reference.sliding_window_mask(n, NOTEBOOK_WINDOW)),
    Mistake("this is the causal mask: the window is not applied (a token sees every earlier "
            "token). Also require i - j < window.",
            lambda n, w: reference.causal_mask(n)),
    Mistake(_INVERTED.format(rule="0 <= i - j < window"),
            lambda n, w: ~reference.sliding_window_mask(n, w)),
    Mistake(_ADDITIVE.format(rule="0 <= i - j < window"),
            lambda n, w: np.where(reference.sliding_window_mask(n, w), 0.0, -np.inf)),
    Mistake(_ADDITIVE.format(rule="0 <= i - j < window"),
            lambda n, w: np.where(reference.sliding_window_mask(n, w), 0.0, -1e9)),
]
# An additive mask (0 / -inf or 0 / -1e9) of a band of the wrong width, as Mistral's reference
# code writes it (log of a 0/1 band of window + 1 tokens): both things named, the boolean first.
WINDOW_MISTAKES += [
    Mistake(_ADDITIVE.format(rule="0 <= i - j < window") + " Besides, " + wrong.message[0].lower()
            + wrong.message[1:], (lambda f, fill: lambda n, w: np.where(f(n, w), 0.0, fill))(wrong.fn, fill))
    for wrong in WINDOW_MISTAKES[:6] for fill in (-np.inf, -1e9)]


# ------------------------------------------------------------ attention_decode_step
def _decode_case(rng, h, g, d_head, t, window, label, pass_g=True, position=None, base=None):
    d_model = h * d_head
    x = rng.standard_normal(d_model)
    cache = {"K": rng.standard_normal((g, t, d_head)), "V": rng.standard_normal((g, t, d_head))}
    kwargs = {"num_kv_heads": g} if pass_g else {}
    if window is not None:
        kwargs["window"] = window
    note = "" if window is None else f", window={window}"
    if position is not None:
        kwargs["position"] = position
        note += f", position={position}"
    if base is not None:
        kwargs["base"] = base
        note += f", base={base:g}"
    return Case((x, cache, *_weights(rng, d_model, h, g), h), kwargs,
                f"{label}: x ({d_model},), cache K and V ({g}, {t}, {d_head}), num_heads={h}"
                + (f", num_kv_heads={g}" if pass_g else "") + note)


def decode_cases(rng, hidden):
    shapes = [  # (num_heads, num_kv_heads, d_head, t, window, label, pass num_kv_heads[, position, base])
        (4, 2, 3, 5, None, "5 cached tokens, 4 query heads, 2 kv heads", True),
        (2, 2, 4, 3, None, "num_kv_heads not passed (None, which means num_heads)", False),
        (4, 2, 2, 5, 3, "a cache longer than the window", True),
        (4, 1, 2, 3, 3, "a full window (multi-query)", True),
        (2, 1, 3, 2, 4, "a window not yet full", True),
        (4, 2, 3, 0, None, "the first token: an empty cache", True),
        (2, 2, 2, 3, 1, "a window of 1: the token sees only itself", True),
        (6, 3, 2, 4, None, "6 query heads, 3 kv heads", True),
        # RoPE (lesson 09) under the cache: head sizes of 4 and more, where the interleaved
        # pairs differ from split halves; positions that differ from the cache's length and
        # from position % window; a base other than 10000
        (4, 2, 4, 5, None, "RoPE after a prefill of 5 tokens (positions 0-4)", True, 5),
        (4, 2, 4, 3, 3, "RoPE with a window: 3 cached tokens, the new one at position 10", True, 10),
        (8, 2, 4, 4, None, "RoPE, 8 query heads sharing 2 kv heads, base 500", True, 4, 500.0),
        (2, 2, 6, 0, None, "RoPE, the first token (position 0)", True, 0),
    ]
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        h, g = [(4, 2), (6, 2), (6, 3), (8, 2), (8, 4)][int(rng.integers(5))]
        w, t_short = size(2, 4), size(3, 5)
        t_rope, w_rope = size(5, 9), size(3, 5)
        shapes = [(h, g, size(2, 4), size(3, 7), None, f"{h} query heads, {g} kv heads", True),
                  (3, 3, size(2, 4), size(1, 4), None,
                   "num_kv_heads not passed (None, which means num_heads)", False),
                  (4, 2, size(2, 3), w + size(2, 3), w, "a cache longer than the window", True),
                  (h, 1, 2, w, w, "a full window (multi-query)", True),
                  (2, 2, size(2, 3), t_short, t_short + size(2, 3), "a window not yet full", True),
                  (4, 2, 2, 0, None, "the first token", True),
                  (2, 1, size(2, 4), size(2, 4), 1, "a window of 1", True),
                  (h, g, 2 * size(2, 4), t_rope, None, "RoPE after a prefill", True, t_rope),
                  (4, 2, 2 * size(2, 3), w_rope, w_rope, "RoPE with a full window", True,
                   size(3, 5) * w_rope + size(1, w_rope - 1)),
                  (8, 2, 2 * size(2, 3), size(3, 6), None, "RoPE with GQA, another base", True,
                   size(12, 40), float(rng.choice([100.0, 500.0, 2000.0])))]
    return [_decode_case(rng, *shape) for shape in shapes]


def _rotated(x, positions, base, d_model, convention):
    """x (..., n, d) rotated by RoPE at ``positions`` (n,), in one of the conventions learners use."""
    if convention == "interleaved":                  # the course's (lesson 09)
        return reference.rope(x, positions, base)
    if convention == "split halves":                 # Hugging Face's rotate_half
        return rope_split_halves(x, positions, base)
    d = x.shape[-1]                                  # "d_model": base**(-2i / d_model), not d_head
    angles = np.asarray(positions, float)[:, None] * base ** (-2 * np.arange(d // 2) / d_model)
    cos, sin = np.cos(angles), np.sin(angles)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out


def _decode(x, cache, W_q, W_k, W_v, W_o, h, num_kv_heads=None, window=None, position=None,
            base=10000.0, *, pair="div", scale="d_head", append="before", cut="after append",
            use_W_o=True, return_old=False, start="max(0, .)", order="kept", rotate="q and k",
            at="position", convention="interleaved", base_used="given", first_token="attends",
            merge="heads in order"):
    """The decode step with one thing done wrong (a loop over query heads); none: the reference.

    RoPE's switches: ``rotate`` (what is rotated: "q and k", "q only", "q, k and v", "none",
    "key cached unrotated", "cache again", "every key at attend time": the cache keeps keys
    unrotated and every key the token attends to is rotated at its own position then),
    ``at`` (the angle's position: "position", "position + 1", "cache length", "position %
    window"), ``convention`` ("interleaved", "split halves", "d_model", "full width": ``x @
    W_q`` and ``x @ W_k`` rotated whole, before the split into heads) and ``base_used``
    ("given", "10000").
    """
    g = h if num_kv_heads is None else num_kv_heads
    d_model = x.shape[0]
    d_head = d_model // h
    q = (x @ W_q).reshape(h, 1, d_head)
    k, v = (x @ W_k).reshape(g, 1, d_head), (x @ W_v).reshape(g, 1, d_head)
    K_old, V_old = cache["K"], cache["V"]
    k_cached = k
    if position is not None and rotate != "none":
        p = {"position": position, "position + 1": position + 1, "cache length": K_old.shape[1],
             "position % window": position if window is None else position % window}[at]
        b = base if base_used == "given" else 10000.0

        def rot(A, count=1):
            return _rotated(A, [p] * count, b, d_model, convention)
        if convention == "full width":                     # rotated whole, then split
            q = reference.rope((x @ W_q)[None], [p], b).reshape(h, 1, d_head)
            k = reference.rope((x @ W_k)[None], [p], b).reshape(g, 1, d_head)
            k_cached = k
        else:
            q = rot(q)
        if rotate not in ("q only", "every key at attend time") and convention != "full width":
            k = rot(k)                # ("every key at attend time": stored as it is, see below)
            k_cached = k if rotate != "key cached unrotated" else k_cached
        if rotate == "q, k and v":
            v = rot(v)
        if rotate == "cache again":                         # every cached key rotated at p again
            K_old = rot(K_old, K_old.shape[1])
    q = q[:, 0]

    def arrange(K_old, V_old, k, v):
        """What the token attends to, and what is returned, as the switches say."""
        if window is not None and cut == "before append":
            first = max(0, K_old.shape[1] - window)
            K_old, V_old = K_old[:, first:], V_old[:, first:]
        if window is not None and cut == "-(window - 1) before append":   # -0 keeps everything
            K_old, V_old = K_old[:, -(window - 1):], V_old[:, -(window - 1):]
        K, V = np.concatenate([K_old, k], axis=1), np.concatenate([V_old, v], axis=1)
        K_keep, V_keep = K, V                                  # what is returned
        if window is not None and cut in ("after append", "after attending", "window - 1"):
            keep = window - 1 if cut == "window - 1" else window
            first = K.shape[1] - keep if start == "negative" else max(0, K.shape[1] - keep)
            K_keep, V_keep = K[:, first:], V[:, first:]
        K_seen, V_seen = (K_keep, V_keep) if cut != "after attending" else (K, V)
        if append == "after":                                 # attends to the earlier tokens only
            K_seen, V_seen = K_seen[:, :-1], V_seen[:, :-1]
        if order == "new first":                               # the same tokens, the new one first
            K_keep, V_keep = np.roll(K_keep, 1, axis=1), np.roll(V_keep, 1, axis=1)
        elif order == "rolling" and window is not None and K_old.shape[1] == window:
            # a full ring buffer of `window` slots: the new token overwrites slot t % window = 0
            K_keep, V_keep = K_old.copy(), V_old.copy()
            K_keep[:, 0], V_keep[:, 0] = k[:, 0], v[:, 0]
        return K_seen, V_seen, K_keep, V_keep

    K_seen, V_seen, K_keep, V_keep = arrange(K_old, V_old, k, v)
    if position is not None and rotate == "every key at attend time":   # key j at its position
        count = K_seen.shape[1]
        K_seen = _rotated(K_seen, np.arange(position - count + 1, position + 1),
                          base if base_used == "given" else 10000.0, d_model, convention)
    if k_cached is not k:
        K_keep = arrange(K_old, V_old, k_cached, v)[2]
    kv_of = _kv_of(h, g, pair)
    heads = np.array([_softmax_rows(K_seen[kv_of[i]] @ q[i] / _scale(d_model, d_head, g, scale))
                      @ V_seen[kv_of[i]] for i in range(h)])                # (h, d_head)
    out = heads.T.reshape(-1) if merge == "transposed" else heads.reshape(-1)
    if first_token == "zero" and cache["K"].shape[1] == 0:
        out = np.zeros_like(out)
    if use_W_o:
        out = out @ W_o
    return out, ({"K": cache["K"], "V": cache["V"]} if return_old else {"K": K_keep, "V": V_keep})


_CHANGES_CACHE = ("it gives the right numbers, but it changed the cache it was given (after the "
                  "call the caller's cache['K'] no longer holds what it held). Leave the given "
                  "cache as it was: build new arrays with np.concatenate and return them in a "
                  "new dict {'K': ..., 'V': ...}.")


def _decode_in_place(x, cache, *rest, **kwargs):
    """Right numbers, but writes the new arrays into the caller's dict."""
    out, new = reference.attention_decode_step(x, cache, *rest, **kwargs)
    cache["K"], cache["V"] = new["K"], new["V"]
    return out, cache


def cache_changed_message(fn):
    """Say so when ``fn`` changes the cache dict it is given (its arrays or its entries)."""
    case = _decode_case(np.random.default_rng(11), 4, 2, 3, 5, 3, "probe")
    given = copy.deepcopy(case.args[1])
    fn(case.args[0], given, *case.args[2:], **case.kwargs)
    unchanged = (isinstance(given, dict) and set(given) == {"K", "V"} and all(
        isinstance(given[key], np.ndarray) and given[key].shape == case.args[1][key].shape
        and np.array_equal(given[key], case.args[1][key]) for key in ("K", "V")))
    return None if unchanged else _CHANGES_CACHE


_UNORDERED = ("the output is right, but new_cache holds its tokens in another order: the new "
              "token's key and value must be the LAST entry, after the earlier tokens in their "
              "order (oldest first). Attention alone does not care about the order, but the next "
              "step's window cut does (it drops the oldest, at the front).")

DECODE_MISTAKES = [
    Mistake("the first token (an empty cache) got an output of zeros: it has its own key and "
            "value to attend to, appended to the cache before attending, so its output is its "
            "own value mixed by W_o, as row 0 of causal attention is.",
            lambda *a, **k: _decode(*a, **k, first_token="zero")),
    Mistake("the new token's key and value were appended AFTER attending, so the token could "
            "not see itself (and the first token, with an empty cache, saw nothing). Append "
            "its key and value to the cache first, then attend over all of it: token t's row "
            "of causal attention includes key t.",
            lambda *a, **k: _decode(*a, **k, append="after")),
    Mistake(_SCALE_D_MODEL, lambda *a, **k: _decode(*a, **k, scale="d_model")),
    Mistake(_PAIRING, lambda *a, **k: _decode(*a, **k, pair="mod")),
    Mistake("the heads were merged in the wrong order: the output must be head 0's d_head numbers, "
            "then head 1's, and so on (a reshape of the (num_heads, d_head) outputs), not the "
            "transpose's, which interleaves the heads.",
            lambda *a, **k: _decode(*a, **k, merge="transposed")),
    Mistake("with window=1 the cache grows past the window: the slice [:, -(window - 1):] is "
            "[:, -0:], and -0 is 0, so it keeps every token. Keep the last window - 1 earlier "
            "tokens with a start index that cannot be -0 (max(0, t - (window - 1))), or append "
            "first and keep [:, -window:].",
            lambda *a, **k: _decode(*a, **k, cut="-(window - 1) before append")),
    Mistake("the cache grows past the window: with a window, keep only the last `window` "
            "tokens (the new one included), in what you attend to and in what you return. "
            "Otherwise its memory grows with every token.",
            lambda *a, **k: _decode(*a, **k, cut="never")),
    Mistake("the cache was cut to `window` tokens BEFORE the new token was appended, so it "
            "holds window + 1 tokens and the token sees window + 1: cut after appending.",
            lambda *a, **k: _decode(*a, **k, cut="before append")),
    Mistake("the returned cache is right, but the token attended to every token it was given "
            "(all the cached ones and itself), more than the window allows: it attended before "
            "the cache was cut. Cut to the last `window` tokens first (the token itself and the "
            "window - 1 before it), then attend.",
            lambda *a, **k: _decode(*a, **k, cut="after attending")),
    Mistake("only window - 1 tokens were kept (the token and window - 2 before it): a token "
            "sees itself and the window - 1 tokens before it, `window` in all.",
            lambda *a, **k: _decode(*a, **k, cut="window - 1")),
    Mistake("W_o was left out: merge the heads' outputs to (d_model,) and multiply by W_o.",
            lambda *a, **k: _decode(*a, **k, use_W_o=False)),
    Mistake("the returned cache is the one given, without the new token: return a new dict "
            "whose K and V have the token's key and value appended.",
            lambda *a, **k: _decode(*a, **k, return_old=True)),
    Mistake(_CHANGES_CACHE, _decode_in_place),
    Mistake("while the window is not yet full, too few tokens were kept: the first index to keep, "
            "t + 1 - window, is negative then, and NumPy counts a negative start from the END "
            "(K[:, -2:] keeps 2 tokens). Keep everything while the cache is shorter than the "
            "window: start at max(0, t + 1 - window).",
            lambda *a, **k: _decode(*a, **k, start="negative")),
    Mistake(_UNORDERED + " A ring buffer that overwrites slot t % window, as Mistral's code does, "
            "needs the position of each slot as well; this exercise's contract keeps the order.",
            lambda *a, **k: _decode(*a, **k, order="rolling")),
    Mistake(_UNORDERED, lambda *a, **k: _decode(*a, **k, order="new first")),
] + [Mistake(message, (lambda switches: lambda *a, **k: _decode(*a, **k, **switches))(switches))
     for message, switches in [
    ("the position was not used: with position=... the query and key must be rotated by RoPE "
     "(lesson 09's rope) at that position before attending. (The same output comes from "
     "rotating the query and every key at the new token's position: q . k then only sees a "
     "difference of 0, as if there were no RoPE.)", {"rotate": "none"}),
    ("the key was rotated for attending, but cached UNROTATED: the cache must hold every key "
     "already rotated at its own position, because the next steps never rotate it again "
     "(they do not know where it stood). Store the rotated key.", {"rotate": "key cached unrotated"}),
    ("only the query was rotated: RoPE rotates the new token's key too, at the same position, "
     "before it is cached (the cached keys were rotated at theirs).", {"rotate": "q only"}),
    ("every cached key was rotated again at the new token's position: the keys in the cache "
     "were already rotated at their own positions when they were stored. Rotate only the new "
     "token's query and key; leave the cached keys as they are.", {"rotate": "cache again"}),
    ("the values were rotated too: RoPE rotates queries and keys only (it shapes the scores); "
     "the values are mixed as they are.", {"rotate": "q, k and v"}),
    ("the rotation used position + 1: positions count from 0 (the first token is position 0, "
     "where RoPE rotates by nothing). Rotate at `position` itself.", {"at": "position + 1"}),
    ("the rotation used the cache's length as the position: that is the token's position only "
     "while nothing has been dropped. With a window (or a cache that does not start at token 0) "
     "they differ: rotate at the `position` you are given.", {"at": "cache length"}),
    ("the rotation used position % window: with a window the positions go on counting, because "
     "RoPE needs the true distance between the query and each cached key (rotated at their own, "
     "true positions). Rotate at `position` itself.", {"at": "position % window"}),
    ("the rotation pairs split halves (x[i], x[i + d_head/2]), Hugging Face's rotate_half: "
     "this course's rope (lesson 09) rotates interleaved pairs (x[2i], x[2i+1]). Use rope.",
     {"convention": "split halves"}),
    ("the rotation's frequencies were computed over d_model: RoPE rotates each head's d_head "
     "numbers, so pair i turns by position * base**(-2i / d_head), with d_head = d_model // "
     "num_heads. Rotate each head's (…, 1, d_head) query and key.", {"convention": "d_model"}),
    ("the rotation ignored the `base` it was given (it used 10000): pass base on to rope.",
     {"base_used": "10000"}),
    ("RoPE was applied to the whole x @ W_q (and x @ W_k) before the split into heads: its pairs "
     "then run across the heads, and its frequencies over the full width, so head 1 is turned "
     "by other angles than head 0. RoPE rotates each head's d_head numbers alike (pair i by "
     "position * base**(-2i / d_head) in every head): split into heads first, then rotate each "
     "head's (…, 1, d_head) query and key.", {"convention": "full width"}),
    ("the cache holds the keys UNROTATED and every key is rotated at its position when the token "
     "attends. That is consistent with itself (StreamingLLM-style caches do it), but this "
     "exercise's contract is a cache of keys ALREADY rotated at their own positions: the cache "
     "you are given holds rotated keys (from the earlier steps, or from a prefill, as in section "
     "6, where generate.prefill fills the cache for your step), and yours rotates them a second "
     "time; the next steps and the lesson's later cells read rotated keys from the cache you "
     "return. Rotate only the new token's query and key, at `position`, and store the rotated key.",
     {"rotate": "every key at attend time"}),
]]


# ------------------------------------------------------------ key_padding_mask
def padding_cases(rng, hidden):
    batches = [([3, 0, 5, 1], 5), ([2, 0, 4], 4), ([6], 6), ([1, 2], 3)]
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        n = int(rng.integers(4, 8))
        batches = [([int(v) for v in rng.integers(1, n, size=2)] + [0, n], n),
                   ([0, int(rng.integers(1, 4))], 4),
                   ([n + 1], n + 1), ([int(v) for v in rng.integers(1, 5, size=3)], 5)]
    return [Case((lengths, n), label=f"lengths={lengths}, n={n}") for lengths, n in batches]


def _padding(lengths, n, *, low=0, high="length", side="right", axis="keys", slice_end=False,
             empty="no key"):
    """The key padding mask written one sequence at a time, with one thing done wrong."""
    mask = np.zeros((len(lengths), 1, n), dtype=bool)
    for b, length in enumerate(lengths):
        if empty == "key 0":                               # an empty sequence "may see" key 0
            length = max(length, 1)
        if slice_end:                                      # mask[..., :-(n - length)]: -0 is 0
            mask[b, 0, :-(n - length)] = True
        elif side == "left":
            mask[b, 0, n - length:] = True if length else mask[b, 0, n:]
        else:
            mask[b, 0, low:length + (1 if high == "length + 1" else 0)] = True
    if axis == "queries":
        return np.swapaxes(mask, 1, 2)                     # (B, n, 1): rows, not columns
    if axis == "none":
        return mask[:, 0]                                  # (B, n)
    if axis == "causal":
        return mask & reference.causal_mask(n)             # (B, n, n)
    if axis == "both":
        return mask & np.swapaxes(mask, 1, 2)              # (B, n, n)
    return mask


PADDING_MISTAKES = [
    Mistake(_INVERTED.format(rule="j < lengths[b]"), lambda lengths, n: ~_padding(lengths, n)),
    Mistake("each sequence keeps one key too many (j <= lengths[b]): a sequence of length L has "
            "the keys 0 ... L - 1, so True where j < lengths[b].",
            lambda lengths, n: _padding(lengths, n, high="length + 1")),
    Mistake("this is LEFT padding (the real tokens at the end of each row). The contract pads on "
            "the right: sequence b's real tokens are 0 ... lengths[b] - 1, then padding.",
            lambda lengths, n: _padding(lengths, n, side="left")),
    Mistake("a sequence as long as n got no True at all: the slice :-(n - lengths[b]) is :-0, "
            "which is :0 and selects nothing. Slice by the length itself (:lengths[b]) or compare "
            "positions with the lengths.",
            lambda lengths, n: _padding(lengths, n, slice_end=True)),
    Mistake("the mask is (B, n, 1): it marks the padding QUERIES (rows) instead of the padding "
            "keys (columns). What must not be attended to is a padding key: shape (B, 1, n), "
            "True in column j where j < lengths[b].",
            lambda lengths, n: _padding(lengths, n, axis="queries")),
    Mistake("the mask is (B, n): against scores (B, n_q, n) it would broadcast along the wrong "
            "axis (the batch axis lined up with the queries). Add an axis for the queries: "
            "(B, 1, n).",
            lambda lengths, n: _padding(lengths, n, axis="none")),
    Mistake("the causal mask is already combined in: return the padding mask alone, (B, 1, n), and "
            "combine it with causal_mask(n) by & where you attend (a model without a causal "
            "mask uses it too).",
            lambda lengths, n: _padding(lengths, n, axis="causal")),
    Mistake("the padding queries' rows are blocked too, (B, n, n): that is not needed (their rows "
            "are computed and ignored) and it is not the key mask. Return (B, 1, n), True where "
            "key j < lengths[b].",
            lambda lengths, n: _padding(lengths, n, axis="both")),
    Mistake("a sequence of length 0 was given key 0 (a padding token) to attend to. Its row must be "
            "all False: it has no real key. That does not give NaN here: the course's attention "
            "gives a row with no allowed key zero weights and a zero output.",
            lambda lengths, n: _padding(lengths, n, empty="key 0")),
    Mistake("the mask is max(lengths) wide, not n: the batch is padded to n tokens (here no "
            "sequence fills all n), so the scores have n columns. Take the width from the "
            "argument n.",
            lambda lengths, n: _padding(lengths, max(lengths))),
    Mistake(_ADDITIVE.format(rule="j < lengths[b]"),
            lambda lengths, n: np.where(_padding(lengths, n), 0.0, -np.inf)),
    Mistake(_ADDITIVE.format(rule="j < lengths[b]"),
            lambda lengths, n: np.where(_padding(lengths, n), 0.0, -1e9)),
]


def _only_where_wrong(mistakes, reference_fn):
    """Each mistake, simulated only where it differs from the reference.

    Where a mistake gives the reference's own answer (a slice ``:-0`` when no sequence is
    as long as n, ``i - j <= window`` when the window covers every token), it says nothing
    about an answer: the check then tries the next mistake, or says what else is wrong
    (e.g. the dtype). There the simulator returns an empty array of a shape of its own,
    ``(index + 1, 0)``, which no answer matches but the mistake itself.
    """
    def only_where_wrong(fn, index):
        def simulated(*args, **kwargs):
            expected = reference_fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            got = fn(*args, **kwargs)
            return np.zeros((index + 1, 0)) if agrees(got, expected, 1e-12, 1e-12) else got
        return simulated
    return [m if m.fn is _decode_in_place else Mistake(m.message, only_where_wrong(m.fn, index))
            for index, m in enumerate(mistakes)]


GQA_MISTAKES = _only_where_wrong(GQA_MISTAKES, reference.grouped_query_attention)
WINDOW_MISTAKES = _only_where_wrong(WINDOW_MISTAKES, reference.sliding_window_mask)
DECODE_MISTAKES = _only_where_wrong(DECODE_MISTAKES, reference.attention_decode_step)
PADDING_MISTAKES = _only_where_wrong(PADDING_MISTAKES, reference.key_padding_mask)


EXERCISES = [
    Exercise(
        name="grouped_query_attention",
        lesson=LESSON,
        reference=reference.grouped_query_attention,
        make_cases=gqa_cases,
        mistakes=GQA_MISTAKES,
        outputs=("out", "weights"),
        rtol=1e-6,
        atol=1e-8,
    ),
    Exercise(
        name="sliding_window_mask",
        lesson=LESSON,
        reference=reference.sliding_window_mask,
        make_cases=window_cases,
        mistakes=WINDOW_MISTAKES,
        outputs=("mask",),
        validate=_must_be_bool,
    ),
    Exercise(
        name="attention_decode_step",
        lesson=LESSON,
        reference=reference.attention_decode_step,
        make_cases=decode_cases,
        mistakes=DECODE_MISTAKES,
        outputs=("out", "new_cache"),
        rtol=1e-6,
        atol=1e-8,
        inspect=cache_changed_message,
    ),
    Exercise(
        name="key_padding_mask",
        lesson=LESSON,
        reference=reference.key_padding_mask,
        make_cases=padding_cases,
        mistakes=PADDING_MISTAKES,
        outputs=("mask",),
        validate=_must_be_bool,
    ),
]
