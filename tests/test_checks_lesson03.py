"""The lesson 03 checks (softmax, causal_mask, scaled_dot_product_attention, causal_mask_for_new_tokens):
specific messages for wrong versions, a pass for any right one."""

import numpy as np
import pytest

from helpers import reference
from helpers.exercises import EXERCISES
from versions import failing_message


# ------------------------------------------------------------------ softmax
def naive(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def no_keepdims(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis)


def no_keepdims_max(x, axis=-1):
    e = np.exp(x - x.max(axis=axis))
    return e / e.sum(axis=axis, keepdims=True)


def naive_no_keepdims(x, axis=-1):
    return np.exp(x) / np.exp(x).sum(axis=axis)


def columns(x, axis=-1):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def axis_ignored(x, axis=-1):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def global_max(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / e.sum(axis=axis, keepdims=True)


SOFTMAX_WRONG = {
    "naive exp overflows": (naive, "overflow to NaN on large scores"),
    "sum without keepdims": (no_keepdims, "missing keepdims"),
    "max without keepdims": (no_keepdims_max, "missing keepdims in the maximum"),
    "naive and no keepdims": (naive_no_keepdims, "missing keepdims"),
    "wrong axis (columns)": (columns, "wrong axis"),
    "axis argument ignored": (axis_ignored, "axis argument is ignored"),
    "whole-array maximum": (global_max, "maximum of the whole array"),
    "no exp": (lambda x, axis=-1: x / x.sum(axis=axis, keepdims=True), "exp is missing"),
    "no return": (lambda x, axis=-1: None, "forget to `return`"),
    "shifted in place (x -= max)": (
        lambda x, axis=-1: (lambda e: e / e.sum(axis=axis, keepdims=True))(
            np.exp(x.__isub__(x.max(axis=axis, keepdims=True)))),
        "changed its input x in place"),
    "nested lists": (lambda x, axis=-1: reference.softmax(x, axis).tolist(), "not a NumPy array"),
    "axis=None as the default (NumPy's)": (
        lambda x, axis=None: (lambda e: e / np.sum(e, axis=axis, keepdims=True))(
            np.exp(x - np.max(x, axis=axis, keepdims=True))), "normalised over the whole array"),
}


def logsumexp_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.exp(x - lse)


def loop_softmax(x, axis=-1):
    moved = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.empty_like(moved)
    for idx in np.ndindex(moved.shape[:-1]):
        row = moved[idx]
        e = [np.exp(v - max(row)) for v in row]
        out[idx] = [v / sum(e) for v in e]
    return np.moveaxis(out, -1, axis)


def apply_along(x, axis=-1):
    def one(row):
        e = np.exp(row - row.max())
        return e / e.sum()
    return np.apply_along_axis(one, axis, x)


SOFTMAX_RIGHT = {
    "max subtraction": lambda x, axis=-1: (lambda e: e / e.sum(axis, keepdims=True))(
        np.exp(x - x.max(axis, keepdims=True))),
    "log-sum-exp": logsumexp_softmax,
    "loops": loop_softmax,
    "apply_along_axis": apply_along,
}


# ------------------------------------------------------------------ causal_mask
MASK_WRONG = {
    "upside down (triu)": (lambda n: np.triu(np.ones((n, n), dtype=bool)), "upside down"),
    "j >= i by comparison": (lambda n: np.arange(n)[:, None] <= np.arange(n)[None, :],
                             "upside down"),
    "diagonal excluded": (lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1),
                          "diagonal is excluded"),
    "strict comparison": (lambda n: np.arange(n)[None, :] < np.arange(n)[:, None],
                          "diagonal is excluded"),
    "inverted (True = masked)": (lambda n: np.triu(np.ones((n, n), dtype=bool), k=1),
                                 "mask is inverted"),
    "PyTorch's torch.triu(ones, diagonal=1) (True = blocked)": (
        lambda n: np.triu(np.ones((n, n)), k=1).astype(bool), "PyTorch's convention"),
    "floats, not booleans": (lambda n: np.tril(np.ones((n, n))), "dtype is float64"),
    "ints, not booleans": (lambda n: np.tril(np.ones((n, n), dtype=int)), "return a boolean array"),
    "wrong size": (lambda n: np.tril(np.ones((n + 1, n + 1), dtype=bool)), "has shape"),
    "nested list": (lambda n: [[j <= i for j in range(n)] for i in range(n)], "not a NumPy array"),
    "additive 0 / -inf": (lambda n: np.where(np.tril(np.ones((n, n), dtype=bool)), 0.0, -np.inf),
                          "additive mask"),
    "additive 0 / -1e9": (lambda n: np.triu(np.full((n, n), -1e9), k=1), "additive mask"),
    "additive 0 / -1e10": (lambda n: np.triu(np.full((n, n), -1e10), k=1), "is an additive mask"),
    "additive 0 / float min": (lambda n: np.triu(np.full((n, n), np.finfo(float).min), k=1),
                               "is an additive mask"),
}


MASK_RIGHT = {
    "tril": lambda n: np.tril(np.ones((n, n), dtype=bool)),
    "comparison": lambda n: np.arange(n)[None, :] <= np.arange(n)[:, None],
    "loops": lambda n: np.array([[j <= i for j in range(n)] for i in range(n)], dtype=bool),
    "not triu": lambda n: ~np.triu(np.ones((n, n), dtype=bool), k=1),
}


def test_a_float_mask_message_names_the_input_once():
    message = failing_message("causal_mask", MASK_WRONG["floats, not booleans"][0])
    assert message.startswith("causal_mask on input n=4: the values are right")
    assert message.count("n=4") == 1


# ------------------------------------------------------------------ causal_mask_for_new_tokens
def shifted(n_q, n_k, k):
    """Hand-made: True where j <= i + k (i, j counted from 0)."""
    return np.array([[j <= i + k for j in range(n_k)] for i in range(n_q)], dtype=bool)


def test_new_token_mask_by_hand():
    # 3 new tokens at positions 2, 3, 4 of 5: they see keys 0..2, 0..3, 0..4
    expected = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=bool)
    assert np.array_equal(reference.causal_mask_for_new_tokens(3, 5), expected)
    assert reference.causal_mask_for_new_tokens(1, 4).all()
    assert np.array_equal(reference.causal_mask_for_new_tokens(4, 4), reference.causal_mask(4))


@pytest.mark.parametrize("n_q, n_k, error", [(5, 3, ValueError), (0, 3, ValueError),
                                             (2.0, 3, TypeError)])
def test_new_token_mask_rejects_bad_sizes(n_q, n_k, error):
    with pytest.raises(error, match="causal_mask_for_new_tokens"):
        reference.causal_mask_for_new_tokens(n_q, n_k)


NEW_WRONG = {
    "lined up with the first keys": (lambda n_q, n_k: shifted(n_q, n_k, 0), "first* keys"),
    "the whole (n_k, n_k) mask": (lambda n_q, n_k: np.tril(np.ones((n_k, n_k), dtype=bool)),
                                  "mask of all n_k tokens"),
    "first n_q rows of the whole mask": (
        lambda n_q, n_k: np.tril(np.ones((n_k, n_k), dtype=bool))[:n_q], "first* keys"),
    "diagonal excluded": (lambda n_q, n_k: shifted(n_q, n_k, n_k - n_q - 1), "may not see itself"),
    "one too far": (lambda n_q, n_k: shifted(n_q, n_k, n_k - n_q + 1), "right after it"),
    "all True": (lambda n_q, n_k: np.ones((n_q, n_k), dtype=bool), "every query may see every key"),
    "inverted": (lambda n_q, n_k: ~shifted(n_q, n_k, n_k - n_q), "inverted"),
    "additive": (lambda n_q, n_k: np.where(shifted(n_q, n_k, n_k - n_q), 0.0, -np.inf),
                 "additive mask"),
    "ints": (lambda n_q, n_k: shifted(n_q, n_k, n_k - n_q).astype(int), "return a boolean array"),
    "nested list": (lambda n_q, n_k: shifted(n_q, n_k, n_k - n_q).tolist(), "not a NumPy array"),
}


NEW_RIGHT = {
    "comparison": lambda n_q, n_k: (np.arange(n_k)[None, :]
                                    <= np.arange(n_k - n_q, n_k)[:, None]),
    "last rows of the whole mask": lambda n_q, n_k: np.tril(np.ones((n_k, n_k), dtype=bool))[n_k - n_q:],
    "tril with an offset": lambda n_q, n_k: np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q),
    "loops": lambda n_q, n_k: shifted(n_q, n_k, n_k - n_q),
}


def test_new_token_first_case_tells_the_mistakes_apart():
    exercise = EXERCISES["causal_mask_for_new_tokens"]
    case = exercise.cases()[0]
    answers = [np.asarray(m.fn(*case.args), dtype=float) for m in exercise.mistakes]
    answers.append(exercise.reference(*case.args).astype(float))
    distinct = {(a.shape, a.tobytes()) for a in answers}
    assert len(distinct) == len(answers)


# ------------------------------------------------------------------ attention
def stable(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(Q, K, V, mask=None, *, scale=True, fill=-np.inf, after=False, renorm=False,
              axis=-1, fix_empty=True, soft=stable, swap=False):
    """A hand-written attention with switches for each mistake (independent of the module)."""
    s = Q @ K.T
    if scale is True:
        s = s / np.sqrt(Q.shape[1])
    elif scale:
        s = s / scale
    if mask is not None and not after:
        s = np.where(mask, s, fill)
        if fix_empty:
            empty = ~mask.any(axis=1, keepdims=True)
            s = np.where(empty, 0.0, s)
    if axis == 0:
        w = soft(s.T).T
    else:
        w = soft(s)
    if mask is not None:
        if after:
            w = w * mask
            if renorm:
                total = w.sum(axis=1, keepdims=True)
                w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
        elif fix_empty:
            w = w * mask.any(axis=1, keepdims=True)
    out = w @ V
    return (w, out) if swap else (out, w)


softmax = reference.softmax   # the notebook's name until the learner's own softmax passes its check


def where_then_notebook_softmax(Q, K, V, mask=None):
    """-inf where masked, then the notebook's softmax: nothing for a fully masked row."""
    s = Q @ K.T / np.sqrt(Q.shape[1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = softmax(s)
    return w @ V, w


def attention_causal_anyway(Q, K, V, mask=None):
    """Masks causally when no mask is given (a decoder's attention, reused)."""
    if mask is None:
        mask = np.arange(K.shape[0])[None, :] <= np.arange(Q.shape[0])[:, None] + K.shape[0] - Q.shape[0]
    return attention(Q, K, V, mask)


ATTENTION_WRONG = {
    "a causal mask when none is given": (attention_causal_anyway,
                                         "a causal mask was applied although none was given"),
    "fully masked row left to the reference softmax": (where_then_notebook_softmax,
                                                       "still the reference one"),
    "no scaling": (lambda Q, K, V, mask=None: attention(Q, K, V, mask, scale=False), "not scaled"),
    "divided by d_k": (lambda Q, K, V, mask=None: attention(Q, K, V, mask, scale=Q.shape[1]),
                       "by d_k instead of sqrt(d_k)"),
    "scaled by the global d_k": (lambda Q, K, V, mask=None: attention(Q, K, V, mask, scale=2.0),
                                 "the notebook's global d_k"),
    "softmax over columns": (lambda Q, K, V, mask=None: attention(Q, K, V, mask, axis=0),
                             "runs down the columns"),
    "outputs swapped": (lambda Q, K, V, mask=None: attention(Q, K, V, mask, swap=True), "swapped"),
    "mask after softmax, not renormalised": (
        lambda Q, K, V, mask=None: attention(Q, K, V, mask, after=True),
        "applied after the softmax without renormalising"),
    "mask inverted": (lambda Q, K, V, mask=None: attention(Q, K, V, None if mask is None else ~mask),
                      "the opposite of PyTorch's attn_mask"),
    "mask inverted, no empty-row fix": (
        lambda Q, K, V, mask=None: attention(Q, K, V, None if mask is None else ~mask,
                                             fix_empty=False), "mask is inverted"),
    "masked scores set to 0": (lambda Q, K, V, mask=None: attention(Q, K, V, mask, fill=0.0,
                                                                     fix_empty=False),
                               "masked scores were set to 0"),
    "-inf only: fully masked row NaN": (
        lambda Q, K, V, mask=None: attention(Q, K, V, mask, fix_empty=False),
        "a fully masked row is NaN"),
    "-1e9: fully masked row uniform": (
        lambda Q, K, V, mask=None: attention(Q, K, V, mask, fill=-1e9, fix_empty=False),
        "fully masked row is not zero"),
    "naive softmax inside": (lambda Q, K, V, mask=None: attention(Q, K, V, mask, soft=naive),
                             "overflow to NaN on large scores"),
    "out transposed": (lambda Q, K, V, mask=None: (attention(Q, K, V, mask)[0].T,
                                                   attention(Q, K, V, mask)[1]), "out is transposed"),
    "mask ignored": (lambda Q, K, V, mask=None: attention(Q, K, V), "the mask is ignored"),
    "mask after softmax, renormalised (underflows)": (
        lambda Q, K, V, mask=None: attention(Q, K, V, mask, after=True, renorm=True),
        "then the rows renormalised"),
    "Q scaled in place (Q /= sqrt(d_k))": (
        lambda Q, K, V, mask=None: attention(Q.__itruediv__(np.sqrt(Q.shape[1])), K, V, mask,
                                             scale=False),
        "changed its input Q in place"),
    "nested lists": (lambda Q, K, V, mask=None: tuple(a.tolist() for a in attention(Q, K, V, mask)),
                     "not a NumPy array"),
    "mask case not written yet": (lambda Q, K, V, mask=None: attention(Q, K, V) if mask is None
                                  else (_ for _ in ()).throw(NotImplementedError("mask: later")),
                                  "this case is not written yet"),
}


def einsum_attention(Q, K, V, mask=None):
    s = np.einsum("id,jd->ij", Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return np.einsum("ij,jd->id", w, V), w


def loop_attention(Q, K, V, mask=None):
    n_q, n_k = Q.shape[0], K.shape[0]
    w = np.zeros((n_q, n_k))
    for i in range(n_q):
        allowed = [j for j in range(n_k) if mask is None or mask[i, j]]
        if not allowed:
            continue
        s = {j: float(Q[i] @ K[j]) / np.sqrt(Q.shape[1]) for j in allowed}
        top = max(s.values())
        z = sum(np.exp(v - top) for v in s.values())
        for j in allowed:
            w[i, j] = np.exp(s[j] - top) / z
    return w @ V, w


def large_negative_then_zero(Q, K, V, mask=None):
    s = Q @ K.T / np.sqrt(Q.shape[1])
    if mask is None:
        mask = np.ones(s.shape, dtype=bool)
    w = stable(np.where(mask, s, -1e30))
    w = np.where(mask.any(axis=-1, keepdims=True), w, 0.0)
    return w @ V, w


ATTENTION_RIGHT = {
    "where -inf with empty-row fix": lambda Q, K, V, mask=None: attention(Q, K, V, mask),
    "einsum and log-free stable softmax": einsum_attention,
    "loops": loop_attention,
    "large negative then zero empty rows": large_negative_then_zero,
    "reference pieces": lambda Q, K, V, mask=None: (
        lambda w: (w @ V, w))(reference.softmax(
            np.where(True if mask is None else mask, reference.attention_scores(Q, K), -np.inf))),
}


# ------------------------------------------------------------------ all four, table-driven
WRONG_BY_EXERCISE = {"softmax": SOFTMAX_WRONG, "causal_mask": MASK_WRONG,
                     "scaled_dot_product_attention": ATTENTION_WRONG,
                     "causal_mask_for_new_tokens": NEW_WRONG}
RIGHT_BY_EXERCISE = {"softmax": SOFTMAX_RIGHT, "causal_mask": MASK_RIGHT,
                     "scaled_dot_product_attention": ATTENTION_RIGHT,
                     "causal_mask_for_new_tokens": NEW_RIGHT}



def test_attention_cases_include_a_fully_masked_query_row():
    for hidden in (False, True):
        cases = EXERCISES["scaled_dot_product_attention"].cases(hidden)
        masks = [c.kwargs["mask"] for c in cases if "mask" in c.kwargs]
        assert any((~m).all(axis=-1).any() for m in masks)


def test_softmax_cases_never_ask_for_an_all_minus_inf_row():
    for hidden in (False, True):
        for case in EXERCISES["softmax"].cases(hidden):
            x = np.moveaxis(case.args[0], case.kwargs.get("axis", -1), -1)
            assert not np.isneginf(x).all(axis=-1).any()


# One float32 policy for every exercise (helpers.checking): told so, one case off in the grader.
SOFTMAX_WRONG["in float32"] = (
    lambda x, axis=-1: reference.softmax(np.asarray(x, dtype=np.float32), axis), "float32")


# One float32 policy for every exercise (helpers.checking): told so, one case off in the grader.
ATTENTION_WRONG["in float32"] = (lambda Q, K, V, mask=None: reference.scaled_dot_product_attention(
        Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32), mask), "float32")
