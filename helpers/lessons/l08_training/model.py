"""Lesson 08's model: embeddings, one multi-head attention layer, a readout that names a word.

Read it top to bottom, like nanoGPT's ``model.py``. The model reads a ten-word sentence
(:mod:`.corpus`) and answers, at the pronoun, "which word do I refer to?" as a choice over
the whole vocabulary::

    X      = tok[tokens] + pos                        (B, n, d_model)   embeddings
    out, w = multi_head_attention(X, W_q, W_k, W_v, W_o, h)             one attention layer
    logits = out[pronoun] @ W_out[r]                  (B, vocab)        one readout per relation
    loss   = cross-entropy(logits, the right word)

There is no residual connection, no MLP and no layer norm: the pronoun's output is
*only* its attention blend of the sentence's values, so the model can name the right
noun only by attending to it. The forward pass is lesson 04's ``multi_head_attention``,
the backward pass lesson 07's ``multi_head_attention_backward`` (:mod:`helpers.reference`),
split in two so that a training step runs the forward pass once: the forward keeps what
the backward needs (a cache), the backward starts from it.

``forward``, ``loss_and_grads`` and ``accuracy_on`` take the embedding and the attention layer
as arguments (``embed=``, ``attention=``), with lesson 08's as defaults, so that a later
lesson can hand in its own. An attention layer is a pair of functions::

    out, weights, cache = forward(X, W_q, W_k, W_v, W_o, num_heads)
    grads = backward(d_out, cache)          # "X", "W_q", "W_k", "W_v", "W_o"
"""

import numpy as np

from ... import reference
from ...reference.multi_head import merge_heads, split_heads
from .corpus import SENTENCE_LENGTH


# ----------------------------------------------------------------- the training step's own twins
# A training step runs the forward pass, then the backward pass on the same inputs, and its
# loss has the readout's probabilities already. The three functions below reuse both: the
# same numbers as lesson 04's multi_head_attention, lesson 07's multi_head_attention_backward
# and lesson 08's loss_gradient (helpers.reference), bit for bit (tests check it), with no
# work done twice.
def multi_head_attention_with_cache(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """``reference.multi_head_attention``, keeping what its backward pass needs: ``(out, weights, cache)``.

    ``cache`` goes to :func:`multi_head_attention_backward_from_cache`, which then does not
    run the forward pass again.
    """
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))   # each (..., h, n, d_head)
    heads, weights = reference.scaled_dot_product_attention(Q, K, V, mask)   # (..., h, n, d_head)
    merged = merge_heads(heads)                                             # (..., n, d_model)
    cache = {"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o, "num_heads": num_heads,
             "Q": Q, "K": K, "V": V, "weights": weights, "merged": merged}
    return merged @ W_o, weights, cache


def multi_head_attention_backward_from_cache(d_out, cache):
    """``reference.multi_head_attention_backward``, from :func:`multi_head_attention_with_cache`'s cache."""
    X, W_q, W_k, W_v, W_o = (cache[name] for name in ("X", "W_q", "W_k", "W_v", "W_o"))
    if np.shape(d_out) != X.shape:
        raise ValueError(f"multi_head_attention_backward_from_cache: d_out must have the shape of the "
                         f"output, {tuple(X.shape)}; got {tuple(np.shape(d_out))}")
    d_heads = split_heads(d_out @ W_o.T, cache["num_heads"])              # (..., h, n, d_head)
    dQ, dK, dV = (merge_heads(d) for d in reference.attention_backward(
        cache["Q"], cache["K"], cache["V"], cache["weights"], d_heads))     # each (..., n, d_model)

    def summed(A, B):                                                       # sum over sentences of A.T @ B
        return A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])

    return {"X": dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T,                      # X fed all three projections
            "W_q": summed(X, dQ), "W_k": summed(X, dK), "W_v": summed(X, dV),
            "W_o": summed(cache["merged"], d_out)}


def loss_gradient_from_probabilities(out, query, right, W_out, p):
    """``reference.loss_gradient``, given the readout's probabilities ``p = softmax(h @ W_out)``, (B, V).

    A training step has them already, from its loss: they are not computed twice. No input
    checks, and ``p`` is overwritten (it becomes ``d_logits``).
    """
    B = len(out)
    rows = np.arange(B)
    h = out[rows, query]                                   # (B, d_model): each pronoun's output
    d_logits = p                                           # (B, V): p ...
    d_logits[rows, right] -= 1                             # ... - onehot(right)
    d_logits /= B                                          # the loss is a mean over B sentences
    d_out = np.zeros_like(out)                             # (B, n, d_model): 0 at every word ...
    d_out[rows, query] = d_logits @ W_out.T                # ... but each sentence's pronoun
    return d_out, (h.T @ d_logits).astype(out.dtype, copy=False)


#: Lesson 08's attention layer: its forward function (which keeps a cache) and its backward function.
MULTI_HEAD = (multi_head_attention_with_cache, multi_head_attention_backward_from_cache)


def init_params(vocab_size, d_model, num_relations, rng, dtype="float64", n=SENTENCE_LENGTH):
    """Random starting parameters.

    The embeddings have variance 1/2 each, so ``X = tok + pos`` has unit variance per
    coordinate (what a layer norm gives a real transformer); every matrix is scaled by
    ``1/sqrt(d_model)`` (as ``helpers.data.weight_matrix``), so ``q`` and ``k`` start
    with unit variance too: lesson 02's setting.

    Returns
    -------
    dict of str -> ndarray
        ``"tok"`` (vocab_size, d_model), ``"pos"`` (n, d_model), ``"W_q"``, ``"W_k"``,
        ``"W_v"``, ``"W_o"`` (d_model, d_model), ``"W_out"`` (num_relations, d_model, vocab_size).
        No ``"pos"`` when ``n`` is None (a model that learns no position vectors).
    """

    def normal(shape, std):
        return (std * rng.standard_normal(shape)).astype(dtype)

    params = {"tok": normal((vocab_size, d_model), np.sqrt(0.5))}
    if n is not None:
        params["pos"] = normal((n, d_model), np.sqrt(0.5))
    for name in ("W_q", "W_k", "W_v", "W_o"):
        params[name] = normal((d_model, d_model), 1 / np.sqrt(d_model))
    params["W_out"] = normal((num_relations, d_model, vocab_size), 1 / np.sqrt(d_model))
    return params


def embed(params, tokens):
    """Lesson 08's embedding: ``tok[tokens] + pos``, shape (B, n, d_model)."""
    return params["tok"][tokens] + params["pos"][: tokens.shape[-1]]


def query_factor(d_model, num_heads, scale):
    """What ``W_q`` is multiplied by in the forward pass: 1, or ``sqrt(d_head)`` to undo the scaling.

    ``multi_head_attention`` divides every score by ``sqrt(d_head)``. Multiplying the
    queries by ``sqrt(d_head)`` first cancels it: the scores are then plain ``q . k``.
    """
    return 1.0 if scale else float(np.sqrt(d_model // num_heads))


def forward(params, tokens, num_heads, scale=True, embed=embed, attention=MULTI_HEAD):
    """Embed the sentences and run the attention layer.

    Parameters
    ----------
    params : dict from :func:`init_params`
    tokens : int ndarray, shape (B, n)
    num_heads : int
    scale : bool
        False: scores are ``q . k``, not divided by ``sqrt(d_head)``.
    embed : function (params, tokens) -> X (B, n, d_model), default :func:`embed`
    attention : (forward, backward) pair, default :data:`MULTI_HEAD`

    Returns
    -------
    X : ndarray, shape (B, n, d_model)     -- the layer's input
    out : ndarray, shape (B, n, d_model)   -- the layer's output
    weights : ndarray, shape (B, num_heads, n, n)
    """
    X, out, weights, _ = _forward(params, tokens, num_heads, scale, embed, attention)
    return X, out, weights


def _forward(params, tokens, num_heads, scale, embed, attention):
    """:func:`forward`, and the attention layer's cache for its backward pass."""
    X = embed(params, tokens)                                 # (B, n, d_model)
    W_q = params["W_q"] * query_factor(X.shape[-1], num_heads, scale)
    out, weights, cache = attention[0](X, W_q, params["W_k"], params["W_v"], params["W_o"], num_heads)
    return X, out, weights, cache


def answers(split, num_relations):
    """The right words: ``tokens`` at each relation's target position, shape (B, num_relations)."""
    rows = np.arange(len(split.tokens))[:, None]              # (B, 1)
    return split.tokens[rows, split.targets[:, :num_relations]]


def loss_and_grads(params, batch, num_heads, scale=True, embed=embed, attention=MULTI_HEAD):
    """Cross-entropy of the readout at the pronoun, and its gradient for every parameter.

    Parameters
    ----------
    params : dict from :func:`init_params`
    batch : corpus.Split
        The sentences to learn from (B of them).
    num_heads : int
    scale : bool
    embed, attention : as :func:`forward`

    Returns
    -------
    loss : float
        Mean over the sentences and the relations of ``-log p(right word)``.
    grads : dict of str -> ndarray, the same keys and shapes as ``params``.
    """
    W_out = params["W_out"]                                   # (R, d_model, V)
    R, B = W_out.shape[0], len(batch.tokens)
    rows = np.arange(B)
    # forward
    X, out, _, cache = _forward(params, batch.tokens, num_heads, scale, embed, attention)
    h = out[rows, batch.query]                                # (B, d_model): the pronoun's output
    probs = reference.softmax(h @ W_out)                      # (R, B, V)
    right = answers(batch, R).T                               # (R, B): index of the right word
    p_right = probs[np.arange(R)[:, None], rows, right]       # (R, B)
    loss = float(-np.mean(np.log(p_right)))
    # backward: the readout (lesson 08's loss_gradient, once per relation: the loss is
    # their mean; from the probabilities above), then the attention layer (lesson 07),
    # then the embeddings (lesson 08)
    d_out, grads = np.zeros_like(out), {"W_out": np.zeros_like(W_out)}
    for r in range(R):
        d_out_r, grads["W_out"][r] = loss_gradient_from_probabilities(out, batch.query, right[r], W_out[r],
                                                                      probs[r])
        d_out += d_out_r / R
    grads["W_out"] /= R
    factor = query_factor(X.shape[-1], num_heads, scale)
    g = attention[1](d_out, cache)                            # the forward's values: not computed again
    grads["W_q"] = g["W_q"] * factor                          # chain rule through W_q * factor
    grads["W_k"], grads["W_v"], grads["W_o"] = g["W_k"], g["W_v"], g["W_o"]
    grads["tok"], d_pos = reference.embedding_gradient(batch.tokens, g["X"], len(params["tok"]))
    if "pos" in params:                                       # learned position vectors
        grads["pos"] = d_pos                                  # (n, d_model)
    return loss, grads


def accuracy_on(params, split, num_heads, scale=True, embed=embed, attention=MULTI_HEAD):
    """Accuracy and attention on ``split`` (the held-out sentences, in the lesson).

    Returns
    -------
    accuracy : float
        Share of sentences where the readout names the right word for every relation.
    attention_to_targets : ndarray, shape (num_relations, num_heads)
        Mean weight the pronoun puts, in each head, on the token each relation should find.
    """
    R = params["W_out"].shape[0]
    rows = np.arange(len(split))
    _, out, weights = forward(params, split.tokens, num_heads, scale, embed, attention)
    predicted = np.argmax(out[rows, split.query] @ params["W_out"], axis=-1)   # (R, N)
    accuracy = float(np.mean(np.all(predicted.T == answers(split, R), axis=1)))
    w_query = weights[rows, :, split.query]                   # (N, h, n): the pronoun's rows
    to_targets = np.stack([w_query[rows, :, split.targets[:, r]].mean(axis=0) for r in range(R)])
    return accuracy, to_targets                               # to_targets: (R, h)
