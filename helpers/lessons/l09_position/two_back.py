"""Lesson 09: a task for sequences longer than any seen in training, and per-relation accuracy.

**Two back.** A sequence of random tokens; at every position from 2 on, the model must
name the token two places back. Nothing but position can find it (the tokens are random),
and the offset is always the same, 2. The model is lesson 08's (embeddings, one causal
attention layer, a readout at every position), with any of the four ways to know position
(:mod:`.model`). It is trained on sequences of :data:`TRAIN_LENGTH` tokens and
then run on longer ones: 1.5x and 4x. ``"learned"`` has no vector for a position it never
trained, so it cannot even be run there.
"""

import numpy as np

from ... import reference
from ..l08_training import training as l08_training
from . import model

VOCAB = 16            # random tokens 0..15
TRAIN_LENGTH = 16     # tokens per training sequence
OFFSET = 2            # the answer at position p is the token at p - OFFSET
STEPS = 600
EVAL_TOKENS = 4096    # fresh tokens per measured length (so many sequences of that length)


def init_params(d_model, rng, position):
    """``"tok"`` (VOCAB, d_model), ``"pos"`` for "learned", W_q..W_o, ``"W_out"`` (d_model, VOCAB)."""
    params = model.init_params(VOCAB, d_model, 1, rng, position=position, n=TRAIN_LENGTH)
    params["W_out"] = params["W_out"][0]                       # one readout
    return params


def forward(params, tokens, num_heads, position):
    """Logits from position OFFSET on, (B, n - OFFSET, VOCAB); the layer's input X, output and weights."""
    n = tokens.shape[-1]
    if position == "learned" and n > len(params["pos"]):
        raise ValueError(f"two_back: position='learned' has vectors for {len(params['pos'])} "
                         f"positions only, not {n}")
    X = model.embedding(position)(params, tokens)             # (B, n, d_model)
    attend, _ = model.attention(position)
    out, weights = attend(X, params["W_q"], params["W_k"], params["W_v"], params["W_o"], num_heads,
                          reference.causal_mask(n))
    return out[:, OFFSET:] @ params["W_out"], X, out, weights


def loss_and_grads(params, tokens, num_heads, position):
    """Mean cross-entropy of the answers, and the gradient of every parameter."""
    logits, X, out, _ = forward(params, tokens, num_heads, position)
    probs = reference.softmax(logits)                         # (B, m, VOCAB), m = n - OFFSET
    B, m = probs.shape[:2]
    right = tokens[:, :-OFFSET]                               # (B, m)
    b, t = np.meshgrid(np.arange(B), np.arange(m), indexing="ij")
    loss = float(-np.mean(np.log(probs[b, t, right])))
    d_logits = probs.copy()
    d_logits[b, t, right] -= 1
    d_logits /= B * m
    h = out[:, OFFSET:]                                       # (B, m, d_model)
    grads = {"W_out": h.reshape(-1, h.shape[-1]).T @ d_logits.reshape(-1, VOCAB)}
    d_out = np.zeros_like(out)
    d_out[:, OFFSET:] = d_logits @ params["W_out"].T
    _, backward = model.attention(position)
    g = backward(X, params["W_q"], params["W_k"], params["W_v"], params["W_o"], num_heads, d_out,
                 reference.causal_mask(tokens.shape[-1]))
    grads.update({name: g[name] for name in ("W_q", "W_k", "W_v", "W_o")})
    one_hot = np.eye(VOCAB)[tokens.ravel()]                   # (B * n, VOCAB)
    grads["tok"] = one_hot.T @ g["X"].reshape(-1, X.shape[-1])
    if "pos" in params:
        grads["pos"] = g["X"].sum(axis=0)
    return loss, grads


def accuracy(params, num_heads, position, length, seed=1):
    """Share of positions (from OFFSET on) whose token two back is named right, on fresh sequences."""
    sequences = max(1, EVAL_TOKENS // length)
    tokens = np.random.default_rng(seed).integers(0, VOCAB, size=(sequences, length))
    logits = forward(params, tokens, num_heads, position)[0]
    return float(np.mean(np.argmax(logits, axis=-1) == tokens[:, :-OFFSET]))


def train_two_back(position, *, lengths=(16, 24, 64), num_heads=1, d_model=32, steps=STEPS, seed=0):
    """Train on sequences of TRAIN_LENGTH tokens (lesson 08's loop); measure the accuracy at each length.

    Returns
    -------
    dict: ``"loss"`` (steps,), ``"accuracy_by_length"`` (length -> accuracy, or None where
    "learned" has no vectors), ``"params"``, ``"config"``.
    """
    rng = np.random.default_rng(seed)
    params = init_params(d_model, rng, position)
    losses = l08_training.fit(
        params, lambda p, tokens: loss_and_grads(p, tokens, num_heads, position),
        lambda: rng.integers(0, VOCAB, size=(l08_training.BATCH_SIZE, TRAIN_LENGTH)), steps, d_model)
    by_length = {L: (None if position == "learned" and L > TRAIN_LENGTH
                     else accuracy(params, num_heads, position, L)) for L in lengths}
    config = l08_training.make_config("two_back", seed=seed, steps=steps, d_model=d_model,
                                      num_heads=num_heads, scale=True, dtype="float64", position=position)
    return {"loss": losses, "accuracy_by_length": by_length, "params": params, "config": config}
