"""Lesson 04 exercises: ``split_heads``, ``merge_heads``, ``multi_head_attention`` and the
transfer exercise ``split_heads_batched``.

How the cases tell the mistakes apart:

- the number of tokens ``n``, the number of heads ``h`` and the head size ``d_head``
  are all different in the first case of each exercise (3 tokens, 2 heads of 4), so a
  reshape without a transpose keeps the right shape but scrambles the values, and an
  axis left in the wrong place gives a shape of its own;
- ``multi_head_attention``'s first case has several heads (3 heads of 4, d_model = 12),
  so scaling by sqrt(d_model) differs from sqrt(d_head), the averaged map differs
  from every single head's map, and a random ``W_o`` makes leaving it out visible;
- a case with one head (where every split is the identity) and one with ``d_head = 1``
  come later: they catch code that only works for the first shapes;
- one case passes a causal mask, to catch a mask that is not passed on to the heads;
- ``split_heads_batched``'s first case has four different sizes (2 sentences, 3 tokens,
  4 heads of 5), so every misplaced axis gives a shape or values of its own.

A wrong ``split_heads`` or ``merge_heads`` that a learner reuses inside
``multi_head_attention`` gives the answer of the matching mistake below, whose message
names the helper at fault.

The mistakes are written out here with the reference's building blocks; the tests
(``tests/test_checks_lesson04.py``) feed the checks independently written wrong
versions and assert these messages.
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import distinct, sizer

LESSON = "04_multi_head"


# ------------------------------------------------------------------- split_heads
def _split_case(rng, n, d_model, num_heads, label):
    X = rng.standard_normal((n, d_model))
    return Case((X, num_heads), label=f"{label}: X {X.shape}, num_heads={num_heads}")


def split_cases(rng, hidden):
    shapes = [  # (n, d_model, num_heads)
        (3, 8, 2, "3 tokens, 2 heads of 4"),
        (5, 12, 3, "5 tokens, 3 heads of 4"),
        (4, 6, 6, "6 heads of size 1"),
        (2, 5, 1, "one head"),
        (1, 8, 4, "a single token"),
        (10, 64, 8, "10 tokens, 8 heads of 8"),
    ]
    if hidden:
        shapes = [(n, h * d_head, h, label) for n, h, d_head, label in _hidden_heads(rng)]
    return [_split_case(rng, *shape) for shape in shapes]


def _hidden_heads(rng):
    """The grader's sizes, ``(n, num_heads, d_head, label)``, drawn afresh for each grading run.

    As in the visible cases: n, the number of heads and d_head all different first
    (a reshape without a transpose keeps the shape but scrambles the values), with
    d_model a multiple of the notebook's 8 heads (so a split into 8 heads runs and is
    named); then heads of size 1, one head, a single token, and more heads.
    """
    size = sizer(rng)
    # d_head is never 8 either: dividing by it would look like the notebook's sqrt(64).
    h, d_head = [(2, 4), (4, 2), (4, 6), (6, 4), (2, 12), (4, 10)][int(rng.integers(6))]
    n = int(rng.choice([k for k in range(2, 8) if k not in (h, d_head)]))
    h2, d2 = distinct(rng, 2, 5, 2)
    h_many = size(3, 5)
    return [(n, h, d_head, f"{n} tokens, {h} heads of {d_head}"),
            (size(3, 7), h2, d2, f"{h2} heads of {d2}"),
            (size(2, 5), h_many, 1, f"{h_many} heads of size 1"),
            (size(2, 6), 1, size(2, 5), "one head"),
            (1, h2, d2, "a single token"),
            (size(6, 9), h_many, int(rng.choice([5, 6, 7, 9])), f"{h_many} heads, longer"),
            ]


def _dims(X, num_heads):
    n, d_model = X.shape
    return n, d_model // num_heads


#: The sizes the lesson notebook defines globally before its exercises (section 2): a
#: function that reads them instead of its own input gives the answer for these sizes.
#: tests/test_catalogue.py reads them from the solution notebook and compares.
NOTEBOOK_D_MODEL = 512
NOTEBOOK_NUM_HEADS = 8
NOTEBOOK_D_HEAD = 64
NOTEBOOK_GLOBALS = {"d_model": NOTEBOOK_D_MODEL, "num_heads": NOTEBOOK_NUM_HEADS,
                    "d_head": NOTEBOOK_D_HEAD}

SPLIT_MISTAKES = [
    Mistake("the heads were reshaped without transposing: reshaping (n, d_model) straight to "
            "(num_heads, n, d_head) cuts the row-major data in order, so a 'head' gets pieces of "
            "several tokens (head 0's second row is token 0's second block of columns). "
            "Cut each token's row into heads first, then bring the head axis to the front "
            "(section 3).",
            lambda X, h: X.reshape(h, _dims(X, h)[0], _dims(X, h)[1])),
    Mistake("the result has shape (n, num_heads, d_head): the columns are cut into heads, but "
            "the head axis must come first, (num_heads, n, d_head). Move it to the front.",
            lambda X, h: X.reshape(_dims(X, h)[0], h, _dims(X, h)[1])),
    Mistake("head i got every num_heads-th column (i, i + num_heads, ...) instead of one "
            "contiguous block of columns i*d_head : (i+1)*d_head. Cut each row into "
            "(num_heads, d_head), in that order.",
            lambda X, h: X.reshape(_dims(X, h)[0], _dims(X, h)[1], h).transpose(2, 0, 1)),
    Mistake("each head came out transposed, (num_heads, d_head, n): a head must keep one row "
            "per token, (num_heads, n, d_head).",
            lambda X, h: X.reshape(_dims(X, h)[0], h, _dims(X, h)[1]).transpose(1, 2, 0)),
    Mistake(f"the split used {NOTEBOOK_NUM_HEADS} heads: that is the notebook's global num_heads "
            f"(section 2), not the argument. Use the num_heads the function is given.",
            lambda X, h: reference.split_heads(X, NOTEBOOK_NUM_HEADS)),
]


# ------------------------------------------------------------------- merge_heads
def _merge_case(rng, num_heads, n, d_head, label):
    H = rng.standard_normal((num_heads, n, d_head))
    return Case((H,), label=f"{label}: H {H.shape}")


def merge_cases(rng, hidden):
    shapes = [  # (num_heads, n, d_head)
        (2, 3, 4, "2 heads, 3 tokens, d_head 4"),
        (3, 5, 2, "3 heads, 5 tokens, d_head 2"),
        (6, 4, 1, "6 heads of size 1"),
        (1, 2, 5, "one head"),
        (4, 1, 2, "a single token"),
        (8, 10, 8, "8 heads, 10 tokens, d_head 8"),
    ]
    if hidden:
        shapes = [(h, n, d_head, label) for n, h, d_head, label in _hidden_heads(rng)]
    return [_merge_case(rng, *shape) for shape in shapes]


MERGE_MISTAKES = [
    Mistake("the heads were merged without transposing: reshaping (num_heads, n, d_head) "
            "straight to (n, d_model) reads the heads in order, so a token's row gets pieces "
            "of other tokens. Bring the token axis to the front first, then join each "
            "token's heads side by side (section 3, read backwards).",
            lambda H: H.reshape(H.shape[1], H.shape[0] * H.shape[2])),
    Mistake("the result has shape (n, num_heads, d_head): the axes are in the right order, "
            "but each token's heads must still be joined into one row of num_heads * d_head.",
            lambda H: H.transpose(1, 0, 2)),
    Mistake("the heads were stacked under each other, (num_heads * n, d_head). They go side "
            "by side: one row per token, head 0's columns first, then head 1's, ...",
            lambda H: np.concatenate(list(H), axis=0)),
    Mistake("the heads' columns were interleaved (head 0's first column, head 1's first "
            "column, ...). Each head must keep one contiguous block: columns "
            "i*d_head : (i+1)*d_head belong to head i.",
            lambda H: H.transpose(1, 2, 0).reshape(H.shape[1], H.shape[0] * H.shape[2])),
]


# ---------------------------------------------------------- multi_head_attention
def _mha_case(rng, n, d_model, num_heads, label, masked=False):
    X = rng.standard_normal((n, d_model))
    W_q, W_k, W_v, W_o = (rng.standard_normal((d_model, d_model)) for _ in range(4))
    kwargs = {"mask": reference.causal_mask(n)} if masked else {}
    label = f"{label}: X {X.shape}, four ({d_model}, {d_model}) weights, num_heads={num_heads}"
    return Case((X, W_q, W_k, W_v, W_o, num_heads), kwargs,
                label + (", causal mask" if masked else ""))


def mha_cases(rng, hidden):
    shapes = [  # (n, d_model, num_heads, label, masked)
        (5, 12, 3, "3 heads of 4", False),
        (4, 8, 2, "2 heads of 4", False),
        (6, 8, 8, "8 heads of size 1", False),
        (3, 6, 1, "one head", False),
        (5, 12, 4, "4 heads of 3", True),
        (1, 4, 2, "a single token", False),
    ]
    if hidden:
        heads = _hidden_heads(rng)
        shapes = [(n, h * d_head, h, label, False) for n, h, d_head, label in heads]
        n, h, d_head, _ = heads[1]
        shapes.append((n, h * d_head, h, f"{h} heads of {d_head}", True))   # with a causal mask
    return [_mha_case(rng, *shape) for shape in shapes]


def _split_no_transpose(A, h):
    n, d_model = A.shape
    return A.reshape(h, n, d_model // h)


def _merge_no_transpose(H):
    h, n, d_head = H.shape
    return H.reshape(n, h * d_head)


def _split_interleaved(A, h):
    n, d_model = A.shape
    return A.reshape(n, d_model // h, h).transpose(2, 0, 1)


def _merge_interleaved(H):
    h, n, d_head = H.shape
    return H.transpose(1, 2, 0).reshape(n, h * d_head)


#: Ends the message of a split or merge mistake found inside multi_head_attention: the
#: learner's own split_heads / merge_heads, reused here, is the likely culprit.
_AT_FAULT = ("If your multi_head_attention calls your {helper}, the mistake is there: "
             "its own check, above, names it; fix it, run its cell and its check, then this "
             "cell and this check again.")


def _mha(X, W_q, W_k, W_v, W_o, h, mask=None, *, split=None, merge=None, scale="d_head",
         use_mask=True, use_W_o=True, W_o_T=False, weights_out="all", fill=-np.inf):
    """Multi-head attention with one thing (or more) done wrong, for the mistakes below."""
    split = split or reference.split_heads
    merge = merge or reference.merge_heads
    d_model = X.shape[-1]
    Qh, Kh, Vh = (split(X @ W, h) for W in (W_q, W_k, W_v))          # (h, n, d_head)
    d = {"d_head": np.sqrt(d_model // h), "d_model": np.sqrt(d_model), "none": 1.0,
         "d_head plain": d_model // h,
         "d_model and d_head": np.sqrt(d_model) * np.sqrt(d_model // h)}.get(scale, scale)
    scores = Qh @ np.swapaxes(Kh, -1, -2) / d                          # (h, n, n)
    if mask is not None and use_mask:
        scores = np.where(mask, scores, fill)
    weights = reference.softmax(scores, axis=-1)
    out = merge(weights @ Vh)                                          # (n, d_model)
    if use_W_o:
        out = out @ (W_o.T if W_o_T else W_o)
    if weights_out == "mean":
        weights = weights.mean(axis=0)
    elif weights_out == "last":
        weights = weights[-1]
    return out, weights


_INVERTED = ("the mask is inverted: True means 'may attend' (the opposite of PyTorch's attn_mask, "
             "where True means blocked). Pass the mask on as it is: each head keeps the scores "
             "where it is True.")

MHA_MISTAKES = [
    Mistake("W_o was left out: after the heads are merged back to (n, d_model), the result "
            "must still be multiplied by W_o, which mixes what the heads found.",
            lambda *a, mask=None: _mha(*a, mask, use_W_o=False)),
    Mistake("the scores were scaled by sqrt(d_model) instead of sqrt(d_head). Each head takes "
            "dot products of vectors of size d_head = d_model // num_heads, so that is the "
            "size whose square root divides its scores.",
            lambda *a, mask=None: _mha(*a, mask, scale="d_model")),
    Mistake("the scores were not scaled: in every head divide Q_h @ K_h.T by sqrt(d_head).",
            lambda *a, mask=None: _mha(*a, mask, scale="none")),
    Mistake("the scores were scaled twice: divided by d_head = sqrt(d_head) * sqrt(d_head). "
            "scaled_dot_product_attention already divides by sqrt(d_head) (it reads d_head "
            "from its input): do not also scale Q, K or the scores yourself. (Or, if you wrote "
            "the attention yourself, divide by sqrt(d_head), not d_head.)",
            lambda *a, mask=None: _mha(*a, mask, scale="d_head plain")),
    Mistake("the scores were scaled twice: by sqrt(d_model) and again by sqrt(d_head). "
            "scaled_dot_product_attention already divides each head's scores by sqrt(d_head): "
            "do not scale Q, K or the scores yourself.",
            lambda *a, mask=None: _mha(*a, mask, scale="d_model and d_head")),
    Mistake(f"the scores were scaled by sqrt({NOTEBOOK_D_HEAD}): that is the notebook's global "
            f"d_head (section 2), not this input's. Work d_head out inside the function, "
            f"d_head = d_model // num_heads (scaled_dot_product_attention does it for you).",
            lambda *a, mask=None: _mha(*a, mask, scale=np.sqrt(NOTEBOOK_D_HEAD))),
    Mistake(f"the scores were scaled by sqrt({NOTEBOOK_D_MODEL}), the notebook's global d_model, "
            f"and a head's scale is sqrt(d_head) anyway: d_head = d_model // num_heads of this "
            f"input.",
            lambda *a, mask=None: _mha(*a, mask, scale=np.sqrt(NOTEBOOK_D_MODEL))),
    Mistake("the weights were averaged over the heads, giving one (n, n) map. Return every "
            "head's own map: weights of shape (num_heads, n, n).",
            lambda *a, mask=None: _mha(*a, mask, weights_out="mean")),
    Mistake("only one head's weights (the last) were returned. Return every head's own map: "
            "weights of shape (num_heads, n, n).",
            lambda *a, mask=None: _mha(*a, mask, weights_out="last")),
    Mistake("the heads were split without transposing (a reshape straight to "
            "(num_heads, n, d_head)), so each head mixes pieces of several tokens. "
            + _AT_FAULT.format(helper="split_heads"),
            lambda *a, mask=None: _mha(*a, mask, split=_split_no_transpose)),
    Mistake("the heads were split column by column: head i got every num_heads-th column "
            "instead of one block of d_head columns. " + _AT_FAULT.format(helper="split_heads"),
            lambda *a, mask=None: _mha(*a, mask, split=_split_interleaved)),
    Mistake("the heads were merged without transposing (a reshape straight from "
            "(num_heads, n, d_head) to (n, d_model)), so a token's output row holds pieces of "
            "other tokens. " + _AT_FAULT.format(helper="merge_heads"),
            lambda *a, mask=None: _mha(*a, mask, merge=_merge_no_transpose)),
    Mistake("the heads were merged with their columns interleaved (head 0's first column, "
            "head 1's first column, ...) instead of side by side. "
            + _AT_FAULT.format(helper="merge_heads"),
            lambda *a, mask=None: _mha(*a, mask, merge=_merge_interleaved)),
    Mistake("the heads were reshaped without transposing, both when splitting and when "
            "merging: the two scrambles undo each other's shapes, but each 'head' attended "
            "over pieces of several tokens. " + _AT_FAULT.format(helper="split_heads and merge_heads"),
            lambda *a, mask=None: _mha(*a, mask, split=_split_no_transpose,
                                       merge=_merge_no_transpose)),
    Mistake("the mask was ignored: pass it on to the attention of every head (with a causal "
            "mask, no token may attend to a later one).",
            lambda *a, mask=None: _mha(*a, mask, use_mask=False)),
    Mistake(_INVERTED, lambda *a, mask=None: _mha(*a, None if mask is None else ~mask)),
    Mistake(_INVERTED, lambda *a, mask=None: _mha(*a, None if mask is None else ~mask, fill=-1e30)),
    Mistake("a causal mask was applied although none was given: with mask=None every token "
            "attends to every token. Pass on the mask you are given, and only that.",
            lambda *a, mask=None: _mha(*a, reference.causal_mask(a[0].shape[0]) if mask is None
                                       else mask)),
    Mistake("W_o was used transposed: the merged heads (n, d_model) are multiplied by W_o "
            "as it is.",
            lambda *a, mask=None: _mha(*a, mask, W_o_T=True)),
]

# ------------------------------------------------------------ split_heads_batched
def batched_cases(rng, hidden):
    shapes = [  # (B, n, d_model, num_heads, label)
        (2, 3, 20, 4, "2 sentences, 3 tokens, 4 heads of 5"),
        (3, 5, 12, 2, "3 sentences, 5 tokens, 2 heads of 6"),
        (1, 4, 6, 3, "one sentence"),
        (4, 2, 5, 1, "one head"),
        (2, 6, 4, 4, "4 heads of size 1"),
        (3, 1, 8, 2, "one token per sentence"),
    ]
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        B, n, h, d_head = distinct(rng, 2, 6, 4)
        h2, h5 = size(2, 4), size(3, 6)
        shapes = [(B, n, h * d_head, h, f"{B} sentences, {n} tokens, {h} heads of {d_head}"),
                  (size(2, 4), size(3, 6), h2 * size(2, 6), h2, "more sentences and tokens"),
                  (1, size(2, 5), 2 * size(2, 5), 2, "one sentence"),
                  (size(2, 4), size(2, 5), size(3, 8), 1, "one head"),
                  (size(2, 3), size(2, 4), h5, h5, f"{h5} heads of size 1"),
                  (size(2, 5), 1, 3 * size(1, 3), 3, "one token per sentence")]
    cases = []
    for B, n, d_model, h, label in shapes:
        X = rng.standard_normal((B, n, d_model))
        cases.append(Case((X, h), label=f"{label}: X {X.shape}, num_heads={h}"))
    return cases


def _bdims(X, h):
    B, n, d_model = X.shape
    return B, n, h, d_model // h


BATCHED_MISTAKES = [
    Mistake("the heads were reshaped without transposing: reshaping (B, n, d_model) straight "
            "to (B, num_heads, n, d_head) cuts each sentence's numbers in storage order, so a "
            "'head' gets pieces of several tokens. Cut each token's row into heads first, "
            "(B, n, num_heads, d_head), then swap the two middle axes.",
            lambda X, h: X.reshape(_bdims(X, h)[0], h, _bdims(X, h)[1], _bdims(X, h)[3])),
    Mistake("the result has shape (B, n, num_heads, d_head): the columns are cut into heads, "
            "but the head axis must come before the tokens, (B, num_heads, n, d_head).",
            lambda X, h: X.reshape(_bdims(X, h))),
    Mistake("the head axis came first and the sentence axis second, (num_heads, B, n, d_head): "
            "the batch axis stays in front, (B, num_heads, n, d_head). (split_heads's "
            "transpose(1, 0, 2) moves the head axis to the very front; here it goes to "
            "position 1.)",
            lambda X, h: X.reshape(_bdims(X, h)).transpose(2, 0, 1, 3)),
    Mistake("head i got every num_heads-th column (i, i + num_heads, ...) instead of one "
            "contiguous block of columns i*d_head : (i+1)*d_head. Cut each row into "
            "(num_heads, d_head), in that order.",
            lambda X, h: X.reshape(*_bdims(X, h)[:2], _bdims(X, h)[3], h).transpose(0, 3, 1, 2)),
    Mistake("each head came out transposed, (B, num_heads, d_head, n): a head keeps one row "
            "per token, (B, num_heads, n, d_head).",
            lambda X, h: X.reshape(_bdims(X, h)).transpose(0, 2, 3, 1)),
    Mistake("the sentences and the tokens were swapped: the result is (n, num_heads, B, "
            "d_head) or a reshape of it. Keep the sentence axis first and only move the head "
            "axis: (B, n, num_heads, d_head) -> (B, num_heads, n, d_head).",
            lambda X, h: X.reshape(_bdims(X, h)).transpose(1, 2, 0, 3).reshape(
                _bdims(X, h)[0], h, _bdims(X, h)[1], _bdims(X, h)[3])),
]


EXERCISES = [
    Exercise(
        name="split_heads",
        lesson=LESSON,
        reference=reference.split_heads,
        make_cases=split_cases,
        mistakes=SPLIT_MISTAKES,
    ),
    Exercise(
        name="merge_heads",
        lesson=LESSON,
        reference=reference.merge_heads,
        make_cases=merge_cases,
        mistakes=MERGE_MISTAKES,
    ),
    Exercise(
        name="multi_head_attention",
        lesson=LESSON,
        reference=reference.multi_head_attention,
        make_cases=mha_cases,
        mistakes=MHA_MISTAKES,
        outputs=("out", "weights"),
        rtol=1e-6,
        atol=1e-8,
    ),
    Exercise(
        name="split_heads_batched",
        lesson=LESSON,
        reference=reference.split_heads_batched,
        make_cases=batched_cases,
        mistakes=BATCHED_MISTAKES,
    ),
]
