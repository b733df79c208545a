"""Lesson 03 exercises: ``softmax``, ``causal_mask``, ``causal_mask_for_new_tokens``,
``scaled_dot_product_attention``.

How the cases make each known mistake show, in the order a check meets them:

softmax
    a *square* first case, so a sum taken without ``keepdims`` still broadcasts
    (dividing column j by the sum of row j) and can be named instead of raising a
    shape error; then scores of about 1000 (the naive ``exp`` overflows to
    inf/inf = NaN); then ``axis=0`` on a non-square input (a function that ignores
    ``axis``); then ±1e4 in different rows (subtracting the maximum of the whole
    array, not of each row, underflows a whole row to 0/0); ``-inf`` entries
    (masked scores) are in the cases too. An all ``-inf`` row is NOT asked of
    ``softmax``: the lesson handles it in the attention function.
causal_mask
    n = 4 first (upside down, without the diagonal, inverted, not boolean, an
    additive 0 / -inf mask all differ there), then n = 1 and larger n.
causal_mask_for_new_tokens
    the transfer exercise: the last n_q of n_k tokens as queries. The first case
    (n_q = 3, n_k = 5) tells apart a mask lined up with the first keys, one shifted
    by one either way, the whole (n_k, n_k) mask, all True and inverted.
scaled_dot_product_attention
    no mask and n_q != n_k first (no scaling, wrong softmax axis, outputs
    swapped); then a causal mask (mask after the softmax without renormalising,
    mask inverted, masked scores set to 0); then large scores under a causal mask
    (a naive softmax inside overflows; masking after the softmax underflows, and
    renormalising then divides 0 by 0); then a mask with a fully masked query row
    (NaN from ``-inf`` alone, a uniform row from a large negative number). The
    large scores come first: on the fully masked row alone, "masked after the
    softmax, renormalised" gives the same NaN as "-inf alone" and could not be named.
    A function that passes every case while the notebook's ``softmax`` is still the
    reference (which returns zeros for an all ``-inf`` row) is run once more with a plain
    softmax in its place (``inspect``): NaN there means it leaves that row to the softmax.

``softmax`` and ``scaled_dot_product_attention`` accept a float32 answer within
float32's precision (the lesson says so); the masks must be boolean.
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import chooser, distinct, sizer

LESSON = "03_softmax_and_attention"

#: The global d_k the lesson's notebook defines (lesson 01's size): an attention that reads
#: it instead of ``Q.shape[-1]`` scales by sqrt(4). tests/test_catalogue.py reads it from the
#: solution notebook and compares.
NOTEBOOK_D_K = 4
NOTEBOOK_GLOBALS = {"d_k": NOTEBOOK_D_K}


# ------------------------------------------------------------------ softmax
def make_softmax_cases(rng, hidden):
    s = 2.0 if not hidden else 3.0
    square = rng.standard_normal((4, 4)) * s
    if hidden:   # the grader's sizes are drawn afresh for each grading run
        k = int(rng.integers(3, 8))
        square = rng.standard_normal((k, k)) * s
    big = 1000.0 + rng.standard_normal((3, 5)) * 3
    if hidden:
        big = 1000.0 + rng.standard_normal(distinct(rng, 2, 7)) * 5
    tall = (rng.standard_normal((5, 3)) * s if not hidden
            else rng.standard_normal(sorted(distinct(rng, 2, 7), reverse=True)) * s)
    apart = np.array([[1e4, 1e4 - 1.0, 1e4 - 3.0],
                      [-1e4, -1e4 + 2.0, -1e4 + 0.5]])
    if hidden:
        apart = np.array([[-1e4, -1e4 + 1.0, -1e4 - 2.0, -1e4],
                          [1e4 - 2.0, 1e4, 1e4 - 1.0, 1e4 - 0.5]])
    rows, cols = (3, 4) if not hidden else sorted(distinct(rng, 2, 7))
    masked = rng.standard_normal((rows, cols)) * s
    masked[np.triu_indices(rows, k=1, m=cols)] = -np.inf    # some entries -inf, never a whole row
    vector = rng.standard_normal(6 if not hidden else int(rng.integers(3, 10))) * s
    return [
        Case((square,), label=f"scores {square.shape}"),
        Case((big,), label=f"large scores around 1000, {big.shape}"),
        Case((tall,), {"axis": 0}, label=f"axis=0 on {tall.shape} (each column sums to 1)"),
        Case((apart,), label="one row near +1e4, the other near -1e4"),
        Case((masked,), label=f"scores {masked.shape} with some -inf (masked) entries"),
        Case((vector,), label=f"a single row of scores {vector.shape}"),
    ]


def _naive_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_no_keepdims_sum(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis)


def _softmax_no_keepdims_max(x, axis=-1):
    e = np.exp(x - x.max(axis=axis))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_no_keepdims(x, axis=-1):
    e = np.exp(x - x.max(axis=axis))
    return e / e.sum(axis=axis)


def _naive_no_keepdims(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis)


def _other_axis(x, axis=-1):
    if x.ndim != 2:
        raise ValueError("only for 2-D inputs")
    return reference.softmax(x, axis=0 if axis in (-1, 1) else 1)


def _whole_array(x, axis=None):
    """A softmax whose default axis is None (NumPy's): the whole array sums to 1."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _global_max(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum(axis=axis, keepdims=True)


SOFTMAX_MISTAKES = [
    Mistake("overflow to NaN on large scores: exp(1000) is inf, and inf / inf is NaN. "
            "Subtract each row's maximum before exp (it cancels out, so the answer is "
            "the same, but every exp is then at most 1).",
            _naive_softmax),
    Mistake("missing keepdims: the sum has lost its axis, so it broadcasts the wrong way "
            "(row i gets divided by the sum of row j). Use keepdims=True. (Also subtract "
            "each row's maximum before exp, or large scores overflow to NaN.)",
            _naive_no_keepdims),
    Mistake("missing keepdims: the sum has lost its axis, so it broadcasts the wrong way "
            "(row i gets divided by the sum of row j). Use keepdims=True so each row is "
            "divided by its own sum.",
            _softmax_no_keepdims_sum),
    Mistake("missing keepdims in the maximum: x - x.max(axis) subtracts row j's maximum "
            "from column j. Use keepdims=True so each row loses its own maximum.",
            _softmax_no_keepdims_max),
    Mistake("missing keepdims (in both the maximum and the sum): the reduced values "
            "broadcast along the wrong axis. Use keepdims=True.",
            _softmax_no_keepdims),
    Mistake("the axis argument is ignored: softmax(x, axis=0) must make each *column* sum "
            "to 1. Pass axis on to the max and the sum.",
            lambda x, axis=-1: reference.softmax(x, axis=-1)),
    Mistake("wrong axis: the values are normalised along the other axis (columns sum to 1 "
            "instead of rows, or the other way round). Use the axis argument for the "
            "max and the sum.",
            _other_axis),
    Mistake("subtracted the maximum of the whole array instead of each row's maximum: a "
            "row whose scores all sit far below the overall maximum underflows to 0 / 0 "
            "= NaN. Use the maximum along axis, with keepdims=True.",
            _global_max),
    Mistake("normalised over the whole array: with axis=None (NumPy's default for max and sum) "
            "every entry of the array is pooled, so all of them together sum to 1. softmax's "
            "default is axis=-1: each row is normalised on its own.",
            _whole_array),
    Mistake("exp is missing: the scores were divided by their sum, so weights can be "
            "negative. Softmax is exp(x) / sum(exp(x)).",
            lambda x, axis=-1: x / x.sum(axis=axis, keepdims=True)),
]


# ------------------------------------------------------------------ causal_mask
def make_mask_cases(rng, hidden):
    sizes = [4, 1, 2, 7] if not hidden else [int(rng.integers(4, 8)), 1, int(rng.integers(2, 4)),
                                             int(rng.integers(8, 14))]
    return [Case((n,), label=f"n={n}") for n in sizes]


def _mask_must_be_bool(got, case):
    dtype = np.asarray(got).dtype
    if dtype != np.bool_:
        return (f"the values are right but the dtype is {dtype}: return a boolean array "
                f"(True = may attend), e.g. compare with >= or use dtype=bool.")
    return None


def _additive(mask, blocked=-np.inf):
    """The same mask written the additive way: 0 where allowed, ``blocked`` elsewhere."""
    return np.where(mask, 0.0, blocked)


_ADDITIVE = ("this is an additive mask (0 where attending is allowed, {} where it is "
             "blocked, to be added to the scores). This course's mask is boolean: True where "
             "query i may attend to key j. Return the comparison itself (dtype bool); the "
             "attention function turns False into -inf.")


MASK_MISTAKES = [
    Mistake("the mask is upside down: token i may attend to the tokens before it and "
            "itself (j <= i, on and below the diagonal), not to the ones after it.",
            lambda n: np.triu(np.ones((n, n), dtype=bool))),
    Mistake("the diagonal is excluded: a token may always attend to itself (j <= i, "
            "not j < i).",
            lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1)),
    Mistake("the mask is inverted (True above the diagonal, i.e. upside down and without "
            "the diagonal): that is PyTorch's convention (torch.triu(..., diagonal=1) as attn_mask, "
            "True = blocked). Here True must mean 'may attend', on and below the diagonal (j <= i).",
            lambda n: np.triu(np.ones((n, n), dtype=bool), k=1)),
    Mistake(_ADDITIVE.format("-inf"), lambda n: _additive(reference.causal_mask(n))),
    Mistake(_ADDITIVE.format("a large negative number"),
            lambda n: _additive(reference.causal_mask(n), -1e9)),
]


# ------------------------------------------------------------------ causal_mask_for_new_tokens
def make_new_token_cases(rng, hidden):
    sizes = [(3, 5), (1, 4), (4, 4), (2, 7)]
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        n = size(4, 7)
        # the first case has n_q >= 3: with 2 queries "one too far" would be all True
        sizes = [(size(3, 4), size(6, 9)), (1, 1), (n, n), (2, size(8, 12))]
    return [Case((n_q, n_k), label=f"n_q={n_q}, n_k={n_k}") for n_q, n_k in sizes]


def _shifted(n_q, n_k, shift):
    """True where j <= i + shift: the causal mask moved ``shift`` keys to the right."""
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=shift)


_POSITION = ("query i is the token at position n_k - n_q + i (the new tokens come last), so "
             "it may attend to the keys j <= n_k - n_q + i.")

NEW_TOKEN_MISTAKES = [
    Mistake("the mask is lined up with the *first* keys (j <= i). The new tokens are the "
            "*last* n_q of the n_k: " + _POSITION,
            lambda n_q, n_k: _shifted(n_q, n_k, 0)),
    Mistake("that is the mask of all n_k tokens, shape (n_k, n_k). The queries are only "
            "the last n_q tokens: keep the last n_q rows.",
            lambda n_q, n_k: reference.causal_mask(n_k)),
    Mistake("off by one: each new token may not see itself this way. " + _POSITION,
            lambda n_q, n_k: _shifted(n_q, n_k, n_k - n_q - 1)),
    Mistake("off by one: each new token also sees the token right after it. " + _POSITION,
            lambda n_q, n_k: _shifted(n_q, n_k, n_k - n_q + 1)),
    Mistake("every query may see every key, also the tokens after it (that is right only "
            "for n_q = 1, a single new token). " + _POSITION,
            lambda n_q, n_k: np.ones((n_q, n_k), dtype=bool)),
    Mistake("the mask is inverted: True must mean 'may attend' (not PyTorch's True = blocked). "
            + _POSITION,
            lambda n_q, n_k: ~_shifted(n_q, n_k, n_k - n_q)),
    Mistake(_ADDITIVE.format("-inf"),
            lambda n_q, n_k: _additive(_shifted(n_q, n_k, n_k - n_q))),
]


# ------------------------------------------------------------------ attention
def _plain_softmax(x, axis=-1):
    """Stable softmax with nothing special for an all -inf row (which gives NaN)."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _attend(Q, K, V, mask=None, *, scale=True, fill=-np.inf, after=False, axis=-1,
            zero_empty=True, naive=False, swap=False):
    """Attention with one thing changed: used to reproduce each mistake."""
    scores = Q @ K.T
    if scale is True:
        scores = scores / np.sqrt(Q.shape[-1])
    elif scale:                                      # a wrong number to divide by
        scores = scores / scale(Q) if callable(scale) else scores / scale
    if mask is not None and not after:
        scores = np.where(mask, scores, fill)
    soft = _naive_softmax if naive else _plain_softmax
    if mask is not None and zero_empty and not after:
        empty = ~mask.any(axis=-1, keepdims=True)
        weights = soft(np.where(empty, 0.0, scores), axis=axis) * ~empty
    else:
        weights = soft(scores, axis=axis)
    if mask is not None and after:
        weights = weights * mask
        if after in ("zero", "nan"):                 # renormalised afterwards
            total = weights.sum(axis=-1, keepdims=True)
            if after == "nan":
                weights = weights / total
            else:
                weights = np.divide(weights, total, out=np.zeros_like(weights),
                                    where=total > 0)
    out = weights @ V
    return (weights, out) if swap else (out, weights)


def _attention_case(rng, n_q, n_k, d_k, d_v, mask, label, scale=1.0):
    Q = rng.standard_normal((n_q, d_k)) * scale
    K = rng.standard_normal((n_k, d_k)) * scale
    V = rng.standard_normal((n_k, d_v))
    if scale > 1:   # make the first query's best key a masked (future) one: a large gap
        K[-1] = 3 * Q[0]
    kwargs = {} if mask is None else {"mask": mask}
    return Case((Q, K, V), kwargs,
                label=f"{label}: Q {Q.shape}, K {K.shape}, V {V.shape}"
                      + ("" if mask is None else f", mask {mask.shape}"))


def make_attention_cases(rng, hidden):
    if not hidden:
        empty_row = np.array([[True, False, True, True, False],
                              [False, False, False, False, False],
                              [True, True, True, True, True]])
        return [
            _attention_case(rng, 3, 5, 4, 2, None, "no mask, n_q != n_k"),
            _attention_case(rng, 4, 4, 3, 5, reference.causal_mask(4), "causal mask"),
            _attention_case(rng, 4, 4, 8, 2, reference.causal_mask(4),
                            "large scores (q, k entries ~30), causal mask", scale=30.0),
            _attention_case(rng, 3, 5, 6, 3, empty_row, "query 1 may attend to nothing"),
            _attention_case(rng, 1, 6, 2, 4, None, "a single query"),
        ]
    # The grader's sizes, drawn afresh for each grading run. d_k is never 1, 2 or the
    # notebook's d_k = 4, where one mistaken scale would look like another.
    size = sizer(rng)
    d_k = chooser(rng, [3, 5, 6, 7, 9])
    n_q, n_k = distinct(rng, 2, 7)
    n, n_large = size(4, 7), size(5, 8)
    empty_rows = np.ones((size(3, 6), size(4, 8)), dtype=bool)
    empty_rows[0] = False
    empty_rows[2, ::2] = False
    return [
        _attention_case(rng, n_q, n_k, d_k(), size(2, 5), None, "no mask, n_q != n_k"),
        _attention_case(rng, n, n, d_k(), size(2, 5), reference.causal_mask(n), "causal mask"),
        _attention_case(rng, n_large, n_large, int(rng.choice([12, 20, 24])), size(2, 4),
                        reference.causal_mask(n_large), "large scores, causal mask", scale=40.0),
        _attention_case(rng, *empty_rows.shape, d_k(), size(2, 5), empty_rows,
                        "query 0 may attend to nothing"),
        _attention_case(rng, size(1, 3), size(2, 5), d_k(), 1, None, "d_v = 1"),
    ]


_RENORMALISED = (
    "the mask was applied after the softmax, then the rows renormalised. That is the same "
    "in exact arithmetic, but when a masked score is much larger than the allowed ones, "
    "every allowed weight underflows to 0 before you renormalise (0 / 0). Mask the *scores* "
    "(masked entries -> -inf) before the softmax.")
_INVERTED = ("the mask is inverted: True means 'may attend' (the opposite of PyTorch's attn_mask, "
             "where True = blocked), so keep the scores where the mask is True and set them to "
             "-inf where it is False.")

_CAUSAL_ANYWAY = ("a causal mask was applied although none was given: with mask=None every query "
                  "attends to every key. Apply a mask only when one is passed in.")


def _causal_if_none(mask, Q, K, shift=None):
    """The given mask, or a causal one (the last query sees every key; or, shift=0, tril)."""
    if mask is not None:
        return mask
    n_q, n_k = Q.shape[0], K.shape[0]
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q if shift is None else shift)


ATTENTION_MISTAKES = [
    Mistake("the scores are not scaled: divide Q @ K.T by sqrt(d_k) before the softmax.",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, scale=False)),
    Mistake("divided the scores by d_k instead of sqrt(d_k).",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, scale=lambda Q: Q.shape[-1])),
    Mistake(f"scaled by sqrt({NOTEBOOK_D_K}): that is the notebook's global d_k, not this "
            f"input's. Read d_k from the input inside the function: d_k = Q.shape[-1].",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, scale=np.sqrt(NOTEBOOK_D_K))),
    Mistake("the softmax runs down the columns (axis 0): each query's row of weights must "
            "sum to 1, so normalise along the last axis.",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, axis=0)),
    Mistake("the two results are swapped: return (out, weights), in that order.",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, swap=True)),
    Mistake(_RENORMALISED, lambda Q, K, V, mask=None: _attend(Q, K, V, mask, after="zero")),
    Mistake("the mask was applied after the softmax without renormalising: zeroing "
            "weights afterwards leaves rows that no longer sum to 1. Mask the *scores* "
            "(masked entries -> -inf) and then take the softmax.",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, after=True)),
    Mistake("the mask is ignored: where the mask is False the weight must be exactly 0.",
            lambda Q, K, V, mask=None: _attend(Q, K, V, None)),
    Mistake(_INVERTED, lambda Q, K, V, mask=None: _attend(Q, K, V, None if mask is None else ~mask)),
    Mistake(_INVERTED, lambda Q, K, V, mask=None: _attend(Q, K, V, None if mask is None else ~mask,
                                                         zero_empty=False)),
    Mistake("masked scores were set to 0, but exp(0) = 1 still gives them weight. Set "
            "them to -inf (or remove them) so that their weight is exactly 0.",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, fill=0.0, zero_empty=False)),
    Mistake("a fully masked row is NaN, not zero: when every score of a row is -inf, "
            "the softmax computes -inf - (-inf) = NaN. The contract: a query that may "
            "attend to nothing gets all-zero weights and an all-zero output.",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, zero_empty=False)),
    Mistake("a fully masked row is not zero: with a large negative number instead of "
            "-inf, a row where everything is masked becomes uniform (it attends to "
            "every token equally). The contract: zero weights and zero output there.",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, fill=-1e9, zero_empty=False)),
    Mistake(_RENORMALISED, lambda Q, K, V, mask=None: _attend(Q, K, V, mask, after="nan")),
    Mistake("overflow to NaN on large scores: the softmax inside must subtract each row's "
            "maximum before exp (use your stable softmax).",
            lambda Q, K, V, mask=None: _attend(Q, K, V, mask, naive=True)),
    Mistake(_CAUSAL_ANYWAY, lambda Q, K, V, mask=None: _attend(Q, K, V, _causal_if_none(mask, Q, K))),
    Mistake(_CAUSAL_ANYWAY, lambda Q, K, V, mask=None: _attend(Q, K, V, _causal_if_none(mask, Q, K, 0))),
    Mistake("out is transposed: it needs one row per query, shape (n_q, d_v), which is "
            "what weights @ V gives.",
            lambda Q, K, V, mask=None: (lambda out, w: (out.T, w))(*_attend(Q, K, V, mask))),
]


_LEANS_ON_REFERENCE = (
    "a query that may attend to nothing is left to the softmax: with every score -inf, "
    "the notebook's softmax (still the reference one, which returns zeros for such a row) "
    "hides it, but a plain softmax, like the one you write in this lesson, gives NaN there "
    "(-inf - (-inf)), so once your own softmax is in use this function returns NaN. Handle "
    "that row in the attention function itself: all-zero weights and an all-zero output.")


def fully_masked_row_message(fn):
    """Whether ``fn`` handles a fully masked row itself, or leans on the reference softmax.

    A learner's attention usually calls the notebook's global ``softmax``. Until the
    learner's own softmax has passed its check, that name is the reference, which returns
    zeros for an all ``-inf`` row, so ``np.where(mask, s, -inf)`` then ``softmax`` passes
    every case. Here ``fn`` runs once more, on a case with a fully masked query row, with
    ``softmax`` bound to a plain stable softmax (NaN on an all ``-inf`` row, as the
    learner's will be); NaN in the answer names the mistake. Only when the global
    ``softmax`` is the reference: a learner whose own softmax handles such rows is right.

    Returns
    -------
    str or None
    """
    import types

    namespace = getattr(fn, "__globals__", None)
    if not isinstance(fn, types.FunctionType) or namespace is None \
            or namespace.get("softmax") is not reference.softmax:
        return None
    plain = types.FunctionType(fn.__code__, {**namespace, "softmax": _plain_softmax},
                               fn.__name__, fn.__defaults__, fn.__closure__)
    plain.__kwdefaults__ = fn.__kwdefaults__
    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False                                  # query 1 may attend to nothing
    with np.errstate(all="ignore"):
        got = plain(Q, K, V, mask=mask)
    try:
        bad = any(np.isnan(np.asarray(part, dtype=float)).any() for part in got)
    except (TypeError, ValueError):
        return None
    return _LEANS_ON_REFERENCE if bad else None


EXERCISES = [
    Exercise(
        name="softmax",
        lesson=LESSON,
        reference=reference.softmax,
        make_cases=make_softmax_cases,
        mistakes=SOFTMAX_MISTAKES,
        outputs=("weights",),
    ),
    Exercise(
        name="causal_mask",
        lesson=LESSON,
        reference=reference.causal_mask,
        make_cases=make_mask_cases,
        mistakes=MASK_MISTAKES,
        outputs=("mask",),
        validate=_mask_must_be_bool,
    ),
    Exercise(
        name="scaled_dot_product_attention",
        lesson=LESSON,
        reference=reference.scaled_dot_product_attention,
        make_cases=make_attention_cases,
        mistakes=ATTENTION_MISTAKES,
        outputs=("out", "weights"),
        inspect=fully_masked_row_message,
    ),
    Exercise(
        name="causal_mask_for_new_tokens",
        lesson=LESSON,
        reference=reference.causal_mask_for_new_tokens,
        make_cases=make_new_token_cases,
        mistakes=NEW_TOKEN_MISTAKES,
        outputs=("mask",),
        validate=_mask_must_be_bool,
    ),
]
