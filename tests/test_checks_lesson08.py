"""The lesson 08 checks: ``loss_gradient`` and ``embedding_gradient``, the model's backward glue.

Wrong versions are written here the way a learner might write them, independently of
the mistake catalogue in helpers/exercises/lesson08.py; each must get its specific
message, on the visible and on the hidden cases. Correct versions written in other
ways must pass. Both tables (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``) are run in
test_checks_versions.py. (That every catalogued mistake is named by its own message is
checked for the whole catalogue at once, in test_catalogue.py.) The references
themselves are checked against central differences and hand-worked cases here too.
"""

import numpy as np
import pytest

from helpers import reference
from helpers.exercises import EXERCISES, LESSONS, lesson08


# ----------------------------------------------------------------- loss_gradient: right
def loss_grad_loop(out, query, right, W_out):
    """Sentence by sentence, with an explicit softmax (right)."""
    d_out, dW_out = np.zeros_like(out), np.zeros_like(W_out)
    B = len(query)
    for b in range(B):
        h = out[b, query[b]]                                # (d_model,)
        z = h @ W_out
        p = np.exp(z - z.max())
        p /= p.sum()
        p[right[b]] -= 1
        d_out[b, query[b]] = W_out @ p / B
        dW_out += np.outer(h, p) / B
    return d_out, dW_out


def loss_grad_one_hot(out, query, right, W_out):
    """With a one-hot matrix of positions and of answers (right)."""
    B, n, _ = out.shape
    at = np.eye(n)[query]                                   # (B, n): 1 at each pronoun
    h = np.einsum("bn,bnd->bd", at, out)
    z = h @ W_out
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p = p / p.sum(axis=1, keepdims=True)
    d_logits = (p - np.eye(W_out.shape[1])[right]) / B
    return at[:, :, None] * (d_logits @ W_out.T)[:, None, :], h.T @ d_logits


LOSS_RIGHT = {"a loop over sentences": loss_grad_loop, "one-hot matrices": loss_grad_one_hot,
              "the lesson's own": reference.loss_gradient}


# ----------------------------------------------------------------- loss_gradient: wrong
def _softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def loss_no_mean(out, query, right, W_out):
    rows = np.arange(len(query))
    h = out[rows, query]
    d = _softmax(h @ W_out)
    d[rows, right] -= 1                                       # forgot the 1/B
    d_out = np.zeros_like(out)
    d_out[rows, query] = d @ W_out.T
    return d_out, h.T @ d


def loss_flipped(out, query, right, W_out):
    rows = np.arange(len(query))
    h = out[rows, query]
    onehot = np.zeros((len(query), W_out.shape[1]))
    onehot[rows, right] = 1
    d = (onehot - _softmax(h @ W_out)) / len(query)           # "target minus prediction"
    d_out = np.zeros_like(out)
    d_out[rows, query] = d @ W_out.T
    return d_out, h.T @ d


def loss_every_word(out, query, right, W_out):
    rows = np.arange(len(query))
    h = out[rows, query]
    d = _softmax(h @ W_out)
    d[rows, right] -= 1
    d /= len(query)
    d_out = np.repeat((d @ W_out.T)[:, None, :], out.shape[1], axis=1)   # every position
    return d_out, h.T @ d


def loss_colon_query(out, query, right, W_out):
    rows = np.arange(len(query))
    h = out[rows, query]
    d = _softmax(h @ W_out)
    d[rows, right] -= 1
    d /= len(query)
    d_out = np.zeros_like(out)
    d_out[:, query] = d @ W_out.T                             # pairs every sentence with every query
    return d_out, h.T @ d


def loss_mean_everything(out, query, right, W_out):
    rows = np.arange(len(query))
    h = out[rows, query]
    d = _softmax(h @ W_out)
    d[rows, right] -= 1
    d /= d.size                                               # "np.mean" over every logit
    d_out = np.zeros_like(out)
    d_out[rows, query] = d @ W_out.T
    return d_out, h.T @ d


def loss_prob_gradient(out, query, right, W_out):
    rows = np.arange(len(query))
    h = out[rows, query]
    p = _softmax(h @ W_out)
    d = np.zeros_like(p)
    d[rows, right] = -1 / p[rows, right] / len(query)         # d(-log p)/dp, not d/dlogits
    d_out = np.zeros_like(out)
    d_out[rows, query] = d @ W_out.T
    return d_out, h.T @ d


def loss_empty_like(out, query, right, W_out):
    """Right at the pronouns, but d_out starts as np.empty_like: the other rows are leftovers
    (an older learner set's version, which scored full marks when the memory came back zeroed)."""
    rows = np.arange(len(query))
    h = out[rows, query]
    d = _softmax(h @ W_out)
    d[rows, right] -= 1
    d /= len(query)
    d_out = np.empty_like(out)
    d_out[rows, query] = d @ W_out.T
    return d_out, h.T @ d


LOSS_WRONG = {
    "d_out from np.empty_like": (loss_empty_like, "never writes"),
    "no 1/B": (loss_no_mean, "the mean's 1/B is missing"),
    "onehot - p": (loss_flipped, "the sign is flipped"),
    "gradient at every word": (loss_every_word, "every position got a gradient"),
    "d_out[:, query]": (loss_colon_query, "pairs all sentences with all positions"),
    "divided by B * V": (loss_mean_everything, "divided by B * V"),
    "-1/p at the right word": (loss_prob_gradient, "the gradient for the probabilities"),
}


# ----------------------------------------------------------------- embedding_gradient
def emb_one_hot(tokens, dX, vocab_size):
    """The one-hot product of the lesson's text (right)."""
    one_hot = np.eye(vocab_size)[tokens.ravel()]              # (B * n, V)
    return one_hot.T @ dX.reshape(-1, dX.shape[-1]), dX.sum(axis=0)


def emb_loop(tokens, dX, vocab_size):
    """Place by place, adding (right)."""
    d_tok = np.zeros((vocab_size, dX.shape[-1]))
    d_pos = np.zeros(dX.shape[1:])
    for b in range(tokens.shape[0]):
        for i in range(tokens.shape[1]):
            d_tok[tokens[b, i]] += dX[b, i]
            d_pos[i] += dX[b, i]
    return d_tok, d_pos


def emb_bincount(tokens, dX, vocab_size):
    """One np.bincount per coordinate (right)."""
    flat = tokens.ravel()
    rows = dX.reshape(-1, dX.shape[-1])
    d_tok = np.stack([np.bincount(flat, weights=rows[:, k], minlength=vocab_size)
                      for k in range(rows.shape[1])], axis=1)
    return d_tok, np.sum(dX, axis=0)


EMB_RIGHT = {"one-hot product": emb_one_hot, "loop": emb_loop, "bincount": emb_bincount,
             "the lesson's own": reference.embedding_gradient}


def emb_fancy_plus(tokens, dX, vocab_size):
    d_tok = np.zeros((vocab_size, dX.shape[-1]))
    d_tok[tokens] += dX                                       # repeated words: one write wins
    return d_tok, dX.sum(axis=0)


def emb_pos_mean(tokens, dX, vocab_size):
    d_tok = np.zeros((vocab_size, dX.shape[-1]))
    np.add.at(d_tok, tokens, dX)
    return d_tok, dX.mean(axis=0)


def emb_pos_wrong_axis(tokens, dX, vocab_size):
    d_tok = np.zeros((vocab_size, dX.shape[-1]))
    np.add.at(d_tok, tokens, dX)
    return d_tok, dX.sum(axis=1)


def emb_average_per_word(tokens, dX, vocab_size):
    d_tok = np.zeros((vocab_size, dX.shape[-1]))
    counts = np.zeros(vocab_size)
    for b, i in np.ndindex(tokens.shape):
        d_tok[tokens[b, i]] += dX[b, i]
        counts[tokens[b, i]] += 1
    return d_tok / np.maximum(counts, 1)[:, None], dX.sum(axis=0)


EMB_WRONG = {
    "d_tok[tokens] += dX": (emb_fancy_plus, "d_tok[tokens] += dX writes each row once"),
    "d_pos averaged": (emb_pos_mean, "d_pos is the mean over the sentences"),
    "d_pos over positions": (emb_pos_wrong_axis, "d_pos was summed over the positions"),
    "each word's rows averaged": (emb_average_per_word, "the *mean* over the places"),
}


WRONG_BY_EXERCISE = {"loss_gradient": LOSS_WRONG, "embedding_gradient": EMB_WRONG}
RIGHT_BY_EXERCISE = {"loss_gradient": LOSS_RIGHT, "embedding_gradient": EMB_RIGHT}


# ----------------------------------------------------------------- the cases and references
def test_the_lesson_is_registered_with_its_two_exercises_in_order():
    assert [e.name for e in LESSONS[lesson08.LESSON]] == ["loss_gradient", "embedding_gradient"]


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_the_first_embedding_case_repeats_a_word_in_a_sentence_and_across_sentences(hidden):
    tokens = EXERCISES["embedding_gradient"].cases(hidden)[0].args[0]
    assert any(len(set(row)) < len(row) for row in tokens.tolist())
    assert set(tokens[0].tolist()) & set(tokens[1].tolist())


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_the_first_loss_case_has_pronouns_at_different_places(hidden):
    out, query, right, W_out = EXERCISES["loss_gradient"].cases(hidden)[0].args
    assert len(set(query.tolist())) == len(query) > 1
    assert len({out.shape[0], out.shape[1], W_out.shape[1]}) == 3     # B, n, V all differ


def test_loss_gradient_by_hand_on_one_sentence():
    # out: one sentence of 2 words, d_model = 1; the pronoun is word 1 with h = 2;
    # W_out = [[1, 0]] gives logits (2, 0), p = (e^2, 1) / (e^2 + 1); the right word is 1.
    out = np.array([[[5.0], [2.0]]])
    W_out = np.array([[1.0, 0.0]])
    d_out, dW_out = reference.loss_gradient(out, np.array([1]), np.array([1]), W_out)
    p0 = np.e ** 2 / (np.e ** 2 + 1)
    d_logits = np.array([p0, (1 - p0) - 1])                 # p - onehot(1)
    np.testing.assert_allclose(d_out, [[[0.0], [d_logits @ W_out[0]]]])
    np.testing.assert_allclose(dW_out, 2.0 * d_logits[None, :])


def test_embedding_gradient_by_hand_adds_every_place():
    tokens = np.array([[1, 1], [0, 1]])
    dX = np.array([[[1.0], [2.0]], [[4.0], [8.0]]])
    d_tok, d_pos = reference.embedding_gradient(tokens, dX, 3)
    np.testing.assert_array_equal(d_tok, [[4.0], [11.0], [0.0]])   # word 1: 1 + 2 + 8
    np.testing.assert_array_equal(d_pos, [[5.0], [10.0]])


def test_the_references_agree_with_central_differences():
    rng = np.random.default_rng(3)
    out, W_out = rng.standard_normal((3, 4, 2)), rng.standard_normal((2, 5))
    query, right = np.array([0, 3, 3]), np.array([4, 0, 2])

    def loss(o, W):
        rows = np.arange(3)
        return -np.mean(np.log(_softmax(o[rows, query] @ W)[rows, right]))

    d_out, dW_out = reference.loss_gradient(out, query, right, W_out)
    np.testing.assert_allclose(d_out, reference.numerical_gradient(lambda Z: loss(Z, W_out), out),
                               atol=1e-8)
    np.testing.assert_allclose(dW_out, reference.numerical_gradient(lambda Z: loss(out, Z), W_out),
                               atol=1e-8)


@pytest.mark.parametrize("call, error, message", [
    (lambda: reference.loss_gradient(np.ones((2, 3)), np.array([0, 1]), np.array([0, 1]), np.ones((3, 4))),
     ValueError, "loss_gradient: out must have at least 3 dimensions"),
    (lambda: reference.loss_gradient(np.ones((2, 3, 4)), np.array([0, 3]), np.array([0, 1]), np.ones((4, 5))),
     ValueError, "loss_gradient: every entry of query must be in 0..2"),
    (lambda: reference.loss_gradient(np.ones((2, 3, 4)), np.array([0.0, 1.0]), np.array([0, 1]),
                                     np.ones((4, 5))), TypeError, "query must hold whole numbers"),
    (lambda: reference.loss_gradient(np.ones((2, 3, 4)), np.array([0, 1]), np.array([0, 1]), np.ones((3, 5))),
     ValueError, "W_out must have d_model=4 rows"),
    (lambda: reference.embedding_gradient(np.array([[0, 5]]), np.ones((1, 2, 3)), 5),
     ValueError, "embedding_gradient: every token must be in 0..4"),
    (lambda: reference.embedding_gradient(np.array([[0, 1, 2]]), np.ones((1, 2, 3)), 5),
     ValueError, "tokens must be (B, n) and dX (B, n, d_model)"),
])
def test_bad_input_gets_a_clear_error(call, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        call()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_references_keep_the_dtype(dtype):
    out, W_out = np.ones((2, 3, 4), dtype=dtype), np.ones((4, 5), dtype=dtype)
    d_out, dW_out = reference.loss_gradient(out, np.array([0, 1]), np.array([0, 1]), W_out)
    d_tok, d_pos = reference.embedding_gradient(np.array([[0, 1, 1], [2, 2, 0]]), out, 3)
    assert {a.dtype for a in (d_out, dW_out, d_tok, d_pos)} == {np.dtype(dtype)}
