"""Lesson 09: a task for sequences longer than any seen in training, and per-relation accuracy.

**Two back.** A sequence of random tokens; at every position from 2 on, the model must
name the token two places back. Nothing but position can find it (the tokens are random),
and the offset is always the same, 2. The model is lesson 08's (embeddings, one causal
attention layer, a readout at every position), with any of the four ways to know position
(:mod:`.model`). It is trained on sequences of :data:`TRAIN_LENGTH` tokens and
then run on longer ones, up to 16x. ``"learned"`` has no vector for a position it never
trained, so it cannot even be run there. Under the causal mask a position's answer does not
depend on the tokens after it, so :func:`by_band` scores one long run by band of positions:
the trained ones apart from those never trained (:data:`BANDS`).
"""

import numpy as np

from ... import reference
from ...threads import on_one_thread
from ..l08_training import training as l08_training
from . import model

VOCAB = 16            # random tokens 0..15
TRAIN_LENGTH = 16     # tokens per training sequence
OFFSET = 2            # the answer at position p is the token at p - OFFSET
STEPS = 600
EVAL_TOKENS = 4096    # fresh tokens per measured length (so many sequences of that length)
#: Bands of positions ``(first, last + 1)``: the trained ones, then up to 1.5x, 4x and 16x TRAIN_LENGTH.
BANDS = ((OFFSET, TRAIN_LENGTH), (TRAIN_LENGTH, 24), (24, 64), (64, 256))


def init_params(d_model, rng, position):
    """``"tok"`` (VOCAB, d_model), ``"pos"`` for "learned", W_q..W_o, ``"W_out"`` (d_model, VOCAB)."""
    params = model.init_params(VOCAB, d_model, 1, rng, position=position, n=TRAIN_LENGTH)
    params["W_out"] = params["W_out"][0]                       # one readout
    return params


def forward(params, tokens, num_heads, position):
    """Logits from position OFFSET on, (B, n - OFFSET, VOCAB); the layer's input X, output and weights."""
    return _forward(params, tokens, num_heads, position)[:4]


def _forward(params, tokens, num_heads, position):
    """:func:`forward`, and the attention layer's cache for its backward pass."""
    n = tokens.shape[-1]
    if position == "learned" and n > len(params["pos"]):
        raise ValueError(f"two_back: position='learned' has vectors for {len(params['pos'])} "
                         f"positions only, not {n}")
    X = model.embedding(position)(params, tokens)             # (B, n, d_model)
    attend, _ = model.attention(position)
    out, weights, cache = attend(X, params["W_q"], params["W_k"], params["W_v"], params["W_o"], num_heads,
                                 reference.causal_mask(n))
    return out[:, OFFSET:] @ params["W_out"], X, out, weights, cache


def loss_and_grads(params, tokens, num_heads, position):
    """Mean cross-entropy of the answers, and the gradient of every parameter."""
    logits, X, out, _, cache = _forward(params, tokens, num_heads, position)
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
    g = backward(d_out, cache)                                # the forward's values: not computed again
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


def check_arguments(position, *, lengths=(16, 24, 64), num_heads=1, d_model=32, steps=STEPS, seed=0):
    """Raise a clear ValueError/TypeError for any bad argument of :func:`train_two_back` (its signature)."""
    where = "train_two_back"
    l08_training.check_arguments(where, num_heads, d_model, True, steps, seed, "float64")
    model.check_arguments(position, None, d_model, num_heads, where)
    try:
        values = list(lengths)
    except TypeError:
        raise TypeError(f"{where}: lengths must be a sequence of whole numbers, got {lengths!r}") from None
    if not values or not all(isinstance(L, (int, np.integer)) and not isinstance(L, bool) and L > OFFSET
                             for L in values):
        raise ValueError(f"{where}: lengths must be whole numbers > {OFFSET} (at least one), got {lengths!r}")


def train_two_back(position, *, lengths=(16, 24, 64), num_heads=1, d_model=32, steps=STEPS, seed=0):
    """Train on sequences of TRAIN_LENGTH tokens (lesson 08's loop); measure the accuracy at each length.

    Returns
    -------
    dict: ``"loss"`` (steps,), ``"accuracy_by_length"`` (length -> accuracy, or None where
    "learned" has no vectors), ``"params"``, ``"config"``.
    """
    check_arguments(position, lengths=lengths, num_heads=num_heads, d_model=d_model, steps=steps, seed=seed)
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


@on_one_thread       # a measurement on thousands of tokens: one BLAS thread is fastest
def by_band(result, bands=BANDS, seed=1):
    """Accuracy, and the weight on the right key, in each band of positions of fresh sequences.

    Parameters
    ----------
    result : dict, a :func:`train_two_back` result
    bands : sequence of (first, end) position ranges, ``OFFSET <= first < end``
    seed : int, the fresh sequences (EVAL_TOKENS tokens, as long as the last band's end)

    Returns
    -------
    dict ``"first-last"`` -> ``{"accuracy": float, "weight": float}``: the share of positions
    in the band answered right, and the mean weight (over heads) they put on the token two back.
    """
    config = result["config"]
    length = max(end for _, end in bands)
    tokens = np.random.default_rng(seed).integers(0, VOCAB, size=(max(1, EVAL_TOKENS // length), length))
    logits, _, _, weights = forward(result["params"], tokens, config["num_heads"], config["position"])
    p = np.arange(OFFSET, length)                             # the query positions scored
    right = np.argmax(logits, axis=-1) == tokens[:, :-OFFSET]  # (B, length - OFFSET)
    on_target = weights[:, :, p, p - OFFSET].mean(axis=1)     # (B, length - OFFSET), mean over heads
    return {f"{first}-{end - 1}": {"accuracy": float(right[:, (p >= first) & (p < end)].mean()),
                                   "weight": float(on_target[:, (p >= first) & (p < end)].mean())}
            for first, end in bands}


# ------------------------------------------------------------------ why the weight falls with length
def _scores_and_values(params, tokens, num_heads, position):
    """The layer's masked scores (B, h, n, n) (-inf above the diagonal) and values (B, h, n, d_head)."""
    X = model.embedding(position)(params, tokens)                          # (B, n, d_model)
    n = tokens.shape[-1]
    Q, K, V = (reference.split_heads(X @ params[name], num_heads) for name in ("W_q", "W_k", "W_v"))
    if position == "rope":
        Q, K = reference.rope(Q, np.arange(n)), reference.rope(K, np.arange(n))
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return np.where(reference.causal_mask(n), S, -np.inf), V


def log_n_factor(length, trained=TRAIN_LENGTH):
    """Query p's factor on its scores under log-n scaling, ``max(1, ln(p + 1) / ln(trained))``, (length,).

    A query at position p has p + 1 keys; training saw at most ``trained``. Multiplying the
    scores by the log of the number of keys (relative to training) keeps the softmax about
    as sharp as in training when the keys multiply (Chiang & Cholak 2022; YaRN's attention
    temperature is a fixed version of it).
    """
    return np.maximum(1.0, np.log(np.arange(1, length + 1)) / np.log(trained))


def _fresh_tokens(bands, seed):
    length = max(end for _, end in bands)
    return np.random.default_rng(seed).integers(0, VOCAB, size=(max(1, EVAL_TOKENS // length), length))


@on_one_thread       # a measurement on thousands of tokens: one BLAS thread is fastest
def by_band_scaled(result, bands=BANDS, seed=1, trained=TRAIN_LENGTH):
    """:func:`by_band`'s accuracy, each query's scores multiplied by :func:`log_n_factor` (no retraining).

    ``trained``: the number of keys up to which the factor is 1 (the training length).

    Returns
    -------
    dict ``"first-last"`` -> accuracy, on the same fresh sequences as :func:`by_band`.
    """
    config, params = result["config"], result["params"]
    tokens = _fresh_tokens(bands, seed)
    S, V = _scores_and_values(params, tokens, config["num_heads"], config["position"])
    length = tokens.shape[-1]
    weights = reference.softmax(S * log_n_factor(length, trained)[:, None])   # row p scaled
    out = reference.merge_heads(weights @ V) @ params["W_o"]
    right = np.argmax(out[:, OFFSET:] @ params["W_out"], axis=-1) == tokens[:, :-OFFSET]
    p = np.arange(OFFSET, length)
    return {f"{first}-{end - 1}": float(right[:, (p >= first) & (p < end)].mean()) for first, end in bands}


@on_one_thread
def weight_by_offset(result, bands=BANDS, seed=1):
    """Where each band's queries put their attention: the right key, other trained offsets, untrained ones.

    Offsets ``p - r`` of a query at p and a key at r: ``OFFSET`` is the right key; the others
    up to ``TRAIN_LENGTH - 1`` occurred in training, those beyond never did.

    Returns
    -------
    dict ``"first-last"`` -> dict with
        ``"target"``, ``"other_trained"``, ``"untrained"``: the mean weight on the right key,
        on the other keys at trained offsets, on the keys at untrained offsets (the three sum to 1);
        ``"per_key_trained"``, ``"per_key_untrained"``: the mean weight of one such key
        relative to the right key's, ``exp(s - s_target)``;
        ``"target_among_trained"``: the right key's weight renormalised over the trained offsets.
    (Mean over heads, sequences and the band's queries.)
    """
    config, params = result["config"], result["params"]
    tokens = _fresh_tokens(bands, seed)
    S, _ = _scores_and_values(params, tokens, config["num_heads"], config["position"])
    weights = reference.softmax(S)                                          # (B, h, n, n)
    length = tokens.shape[-1]
    p, r = np.arange(length)[:, None], np.arange(length)[None, :]
    offset = np.where(r <= p, p - r, -1)                                    # -1: masked
    target, trained = offset == OFFSET, (offset >= 0) & (offset < TRAIN_LENGTH) & (offset != OFFSET)
    untrained = offset >= TRAIN_LENGTH
    rows = np.arange(length)
    s_target = S[..., rows, np.maximum(rows - OFFSET, 0)][..., None]       # (B, h, n, 1)
    relative = np.exp(np.where(offset >= 0, S - s_target, -np.inf))         # exp(s - s_target)
    out = {}
    for first, end in bands:
        q = np.zeros(length, bool)
        q[first:end] = True
        sel = lambda keys: keys & q[:, None]                                # (n, n) of this band's queries

        def mean_per_query(mask):                                           # sum over keys, mean over queries
            return float((weights * mask).sum(-1)[..., q].mean())

        def per_key(mask):
            m = sel(mask)
            return float(relative[..., m].mean()) if m.any() else float("nan")
        w_target, w_trained, w_untrained = mean_per_query(sel(target)), mean_per_query(sel(trained)), \
            mean_per_query(sel(untrained))
        among = (weights * sel(target)).sum(-1)[..., q] / (weights * sel(target | trained)).sum(-1)[..., q]
        out[f"{first}-{end - 1}"] = {
            "target": w_target, "other_trained": w_trained, "untrained": w_untrained,
            "per_key_trained": per_key(trained), "per_key_untrained": per_key(untrained),
            "target_among_trained": float(among.mean())}
    return out
