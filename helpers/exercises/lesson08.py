"""Lesson 08 exercises: the model's backward glue, ``loss_gradient`` and ``embedding_gradient``.

The references are :func:`helpers.reference.loss_gradient` and
:func:`helpers.reference.embedding_gradient` (the ones ``helpers.training`` uses).

How the cases make each known mistake show, in the order a check meets them:

loss_gradient
    the first case has three sentences whose pronouns sit at different positions, and
    ``n``, ``V`` and ``B`` all different, so that a loss gradient put at *every* position,
    or at every sentence's pronoun in every sentence (``d_out[:, query] = ...``), or
    divided by ``B * n`` or ``B * V`` instead of ``B``, each gives its own numbers. The
    readout is moderately confident (logits of spread about 2), so ``p`` without the
    one-hot, the one-hot without ``p`` (the gradient for the probabilities, ``-1 / p``
    at the right word) and a flipped sign all differ. Then a batch where two sentences
    share a pronoun position, a single sentence and a confident readout.
embedding_gradient
    the first case has a word twice in one sentence and a word in both sentences, so
    ``d_tok[tokens] += dX`` (which keeps only one of the repeated places) shows; the
    vocabulary has a word that never appears (its row must be 0). Then more sentences,
    a case where every word appears once (there the fancy-index ``+=`` happens to be
    right), and a single sentence (``d_pos`` is then ``dX[0]``).

Tolerances: ``rtol=1e-6, atol=1e-12``; every right way of writing them agrees to about 1e-15.
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import distinct, sizer

LESSON = "08_training"


# ------------------------------------------------------------------ loss_gradient
def _loss_case(rng, B, n, d_model, V, label, query=None, spread=1.0):
    out = rng.standard_normal((B, n, d_model)) * spread
    W_out = rng.standard_normal((d_model, V)) / np.sqrt(d_model) * 2.0   # logits of spread ~2
    query = rng.permutation(n)[:B] if query is None else np.asarray(query)
    right = rng.integers(0, V, size=B)
    return Case((out, query, right, W_out),
                label=f"{label}: out {out.shape}, query {query.tolist()}, right {right.tolist()}, "
                      f"W_out {W_out.shape}")


def make_loss_gradient_cases(rng, hidden):
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        B = size(3, 5)
        n, V = distinct(rng, 6, 11, 2)
        n2 = size(4, 7)
        return [
            _loss_case(rng, B, n, size(2, 5), V, f"{B} sentences, pronouns at different places"),
            _loss_case(rng, 3, n2, size(2, 4), size(3, 8), "two pronouns at the same place",
                       query=[n2 - 1, 1, n2 - 1]),
            _loss_case(rng, 1, size(3, 6), size(2, 5), size(3, 8), "a single sentence"),
            _loss_case(rng, size(2, 5), 7, 3, size(4, 9), "a confident readout", spread=4.0),
        ]
    return [
        _loss_case(rng, 3, 5, 4, 7, "3 sentences, pronouns at different places", query=[1, 4, 2]),
        _loss_case(rng, 4, 6, 3, 5, "two pronouns at the same place", query=[5, 2, 5, 0]),
        _loss_case(rng, 1, 4, 3, 6, "a single sentence", query=[3]),
        _loss_case(rng, 2, 5, 4, 8, "a confident readout", query=[0, 3], spread=4.0),
    ]


def _loss_grads(out, query, right, W_out, *, divide="B", sign=1.0, subtract_one_hot=True,
                keep_p=True, softmax_axis=-1, place="pronoun"):
    """loss_gradient with one step done wrong (all defaults: the right answer)."""
    B, n, _ = out.shape
    rows = np.arange(B)
    h = out[rows, query]                                             # (B, d_model)
    p = reference.softmax(h @ W_out, axis=softmax_axis)              # (B, V)
    one_hot = np.zeros_like(p)
    one_hot[rows, right] = 1.0
    if keep_p:
        d_logits = p - one_hot if subtract_one_hot else p.copy()
    else:                                # the gradient for the probabilities: -1/p at the right word
        d_logits = -one_hot / np.where(one_hot > 0, p, 1.0)
    d_logits = sign * d_logits / {"B": B, "none": 1, "B*n": B * n, "B*V": p.size}[divide]
    d_h = d_logits @ W_out.T                                         # (B, d_model)
    d_out = np.zeros_like(out)
    if place == "pronoun":
        d_out[rows, query] = d_h
    elif place == "everywhere":
        d_out[:] = d_h[:, None, :]
    else:                                                            # "all pronouns": d_out[:, query]
        d_out[:, query] = d_h
    return d_out, h.T @ d_logits


LOSS_GRADIENT_MISTAKES = [
    Mistake("the mean's 1/B is missing: the loss is the *mean* of the B sentences' "
            "cross-entropies, so every gradient is divided by B.",
            lambda *a: _loss_grads(*a, divide="none")),
    Mistake("divided by B * n: the loss averages over the B sentences only (one pronoun each), "
            "not over every word; divide by B.",
            lambda *a: _loss_grads(*a, divide="B*n")),
    Mistake("divided by B * V: the loss is a mean over the B sentences, not over every "
            "logit; divide by B.",
            lambda *a: _loss_grads(*a, divide="B*V")),
    Mistake("the sign is flipped: the gradient of -log p_right for the logits is p - onehot(right), "
            "not onehot(right) - p.",
            lambda *a: _loss_grads(*a, sign=-1.0)),
    Mistake("the one-hot was not subtracted: the gradient for the logits is p - onehot(right); "
            "p alone pushes every word down, the right one too.",
            lambda *a: _loss_grads(*a, subtract_one_hot=False)),
    Mistake("that is the gradient for the probabilities (-1/p at the right word), not for the "
            "logits: the softmax's backward pass turns it into p - onehot(right).",
            lambda *a: _loss_grads(*a, keep_p=False)),
    Mistake("the softmax ran along the wrong axis (over the sentences): each sentence's logits "
            "over the vocabulary (the last axis) are one softmax.",
            lambda *a: _loss_grads(*a, softmax_axis=0)),
    Mistake("every position got a gradient: only the pronoun's output is read, so d_out is 0 "
            "at every other word of the sentence.",
            lambda *a: _loss_grads(*a, place="everywhere")),
    Mistake("each sentence got a gradient at *every* sentence's pronoun position: d_out[:, query] "
            "pairs all sentences with all positions. Pair sentence b with its own query[b]: "
            "d_out[rows, query] with rows = np.arange(B).",
            lambda *a: _loss_grads(*a, place="all pronouns")),
]


# ------------------------------------------------------------------ embedding_gradient
def _embedding_case(rng, tokens, vocab_size, d_model, label):
    tokens = np.asarray(tokens)
    dX = rng.standard_normal((*tokens.shape, d_model))
    return Case((tokens, dX, vocab_size),
                label=f"{label}: tokens {tokens.tolist()}, dX {dX.shape}, vocab_size={vocab_size}")


def make_embedding_gradient_cases(rng, hidden):
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        n, V = size(4, 6), size(8, 11)
        repeated = rng.integers(0, V - 1, size=(2, n))            # word V - 1 never appears
        repeated[0, :2] = repeated[1, -1] = int(rng.integers(0, V - 1))   # twice, and in both
        B = size(3, 5)
        once = rng.permutation(V + 3)[:B * 2].reshape(B, 2)
        return [
            _embedding_case(rng, repeated, V, size(2, 4),
                            "a word twice in a sentence and in both sentences"),
            _embedding_case(rng, rng.integers(0, 4, size=(B, n)), 4, size(2, 4),
                            f"{B} sentences, 4 words"),
            _embedding_case(rng, once, V + 3, size(2, 3), "every word at most once"),
            _embedding_case(rng, rng.integers(0, 5, size=(1, n)), 5, size(2, 4), "one sentence"),
        ]
    return [
        _embedding_case(rng, [[0, 2, 2, 3, 1], [4, 2, 0, 5, 3]], 7, 3,
                        "a word twice in a sentence and in both sentences"),
        _embedding_case(rng, [[1, 0, 1, 2], [2, 2, 0, 3], [3, 1, 1, 1]], 4, 2,
                        "3 sentences, 4 words"),
        _embedding_case(rng, [[5, 0, 3], [1, 6, 2]], 8, 2, "every word at most once"),
        _embedding_case(rng, [[0, 3, 0, 1, 4]], 5, 3, "one sentence"),
    ]


def _embedding_grads(tokens, dX, vocab_size, *, tok="add", pos="sum"):
    """embedding_gradient with one step done wrong (all defaults: the right answer)."""
    d_model = dX.shape[-1]
    d_tok = np.zeros((vocab_size, d_model))
    flat, rows = tokens.ravel(), dX.reshape(-1, d_model)
    if tok == "add":
        np.add.at(d_tok, flat, rows)
    elif tok == "fancy":                                             # d_tok[tokens] += dX
        d_tok[flat] += rows
    elif tok == "mean":
        np.add.at(d_tok, flat, rows)
        d_tok /= np.maximum(np.bincount(flat, minlength=vocab_size), 1)[:, None]
    else:                                                            # "transposed"
        np.add.at(d_tok, flat, rows)
        d_tok = d_tok.T
    d_pos = {"sum": lambda: dX.sum(axis=0), "mean": lambda: dX.mean(axis=0),
             "positions": lambda: dX.sum(axis=1), "all": lambda: dX.sum(axis=(0, 1))}[pos]()
    return d_tok, d_pos


EMBEDDING_GRADIENT_MISTAKES = [
    Mistake("a word that appears more than once got the gradient of only one of its places: "
            "with repeated indices, d_tok[tokens] += dX writes each row once (the last write "
            "wins), it does not add up. Every place a word appears must add to its row: "
            "np.add.at, or the product one_hot(tokens).T @ dX.",
            lambda *a: _embedding_grads(*a, tok="fancy")),
    Mistake("each word's row is the *mean* over the places it appears: it must be the sum "
            "(tok[w] is used at every one of them, and each use adds its gradient).",
            lambda *a: _embedding_grads(*a, tok="mean")),
    Mistake("d_tok is transposed: it has the shape of tok, (vocab_size, d_model), one row per word.",
            lambda *a: _embedding_grads(*a, tok="transposed")),
    Mistake("d_pos is the mean over the sentences: pos is added to every sentence, so its "
            "gradient is the *sum* of dX over the sentences (axis 0).",
            lambda *a: _embedding_grads(*a, pos="mean")),
    Mistake("d_pos was summed over the positions (axis 1): pos has one row per position, "
            "shape (n, d_model), so sum dX over the sentences (axis 0).",
            lambda *a: _embedding_grads(*a, pos="positions")),
    Mistake("d_pos was summed over the sentences and the positions: pos has one row per "
            "position, shape (n, d_model); sum dX over the sentences (axis 0) only.",
            lambda *a: _embedding_grads(*a, pos="all")),
]


EXERCISES = [
    Exercise(
        name="loss_gradient",
        lesson=LESSON,
        reference=reference.loss_gradient,
        make_cases=make_loss_gradient_cases,
        mistakes=LOSS_GRADIENT_MISTAKES,
        outputs=("d_out", "dW_out"),
        rtol=1e-6,
        atol=1e-12,
    ),
    Exercise(
        name="embedding_gradient",
        lesson=LESSON,
        reference=reference.embedding_gradient,
        make_cases=make_embedding_gradient_cases,
        mistakes=EMBEDDING_GRADIENT_MISTAKES,
        outputs=("d_tok", "d_pos"),
        rtol=1e-6,
        atol=1e-12,
    ),
]
