"""Lesson 10, section 8: induction heads, trained by next-token prediction.

Read it top to bottom. The data: random tokens (24 kinds) in which a segment of 5 tokens
appears twice, the second time after a gap of 0 to 5 random tokens, at a place that varies::

    position  0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
    tokens    g c n a e h o b c n  a  e  h  k  d  c       "c n a e h" at 1, again at 8 (gap 2)
                                ^ at 9, "n": seen before at 2, followed by "a": predict "a"

The model: attention only, one head per layer, a residual stream and an unembedding::

    X_0    = tok[tokens] + pos                                  (B, n, d_model)
    X_l    = X_(l-1) + attention_l(X_(l-1))                     causal mask, l = 1 .. L
    logits = X_L @ W_U                                          (B, n, vocab): the next token
    loss   = mean over every position of -log softmax(logits)[the next token]

Nothing points: the answer is the token whose unembedding the last stream is closest to.
Accuracy is measured inside the repeat (from its first token to its second-last), the only
places where the next token can be known.

One head per layer, ``attention_l`` is lesson 04's ``multi_head_attention`` with
``num_heads=1`` (a test checks they agree) written out so that its backward can reuse
what the forward computed. Every array carries a leading axis of **runs** (seeds): five
seeds train together, one matrix product per run, instead of one Python loop each. The
training loop is lesson 08's ``fit`` (Adam is elementwise, so each run follows its own
gradient exactly as if it trained alone; a test checks it).
"""

import numpy as np

from ..l08_training.training import fit

VOCAB_SIZE = 24          # kinds of token; chance is 1 / 24
LENGTH = 16              # tokens per sequence
SEGMENT = 5              # the repeated segment's length
MAX_GAP = 5              # tokens between the two occurrences: 0 to MAX_GAP
BATCH_SIZE = 16          # sequences per step
STEPS = 1500
D_MODEL = 32
TEST_SIZE, TEST_SEED = 500, 10_000
PLACES = ("source", "query", "earlier")      # where ablate_at removes a layer's update


# ------------------------------------------------------------------------ the data
def sample(rng, count):
    """``count`` random sequences with a repeated segment.

    Returns
    -------
    tokens : int ndarray (count, LENGTH)
    first, second : int ndarray (count,)
        Where the segment starts, the first and the second time.
    """
    tokens = rng.integers(0, VOCAB_SIZE, (count, LENGTH))
    gap = rng.integers(0, MAX_GAP + 1, count)
    first = (rng.random(count) * (LENGTH - 2 * SEGMENT - gap + 1)).astype(int)
    second = first + SEGMENT + gap
    rows, j = np.arange(count)[:, None], np.arange(SEGMENT)
    tokens[rows, second[:, None] + j] = tokens[rows, first[:, None] + j]
    return tokens, first, second


def inside_repeat(first, second):
    """Every place inside the repeat where the next token can be known.

    Returns ``(rows, query, source)``, each (count * (SEGMENT - 1),): the sequence, the
    position whose next token is asked for, and the position that holds the answer (the
    token after the earlier occurrence of the query's token).
    """
    rows = np.repeat(np.arange(len(second)), SEGMENT - 1)
    offset = np.tile(np.arange(SEGMENT - 1), len(second))
    query = second[rows] + offset
    return rows, query, first[rows] + offset + 1


def test_set():
    """The held-out sequences (the same every time; drawn from their own seed)."""
    return sample(np.random.default_rng(TEST_SEED), TEST_SIZE)


# ------------------------------------------------------------------------ the model
def init_params(num_layers, seeds, d_model=D_MODEL, dtype="float32"):
    """Starting parameters for one run per seed, scaled as lesson 08's.

    Returns
    -------
    dict
        ``"tok"`` (R, vocab, d_model), ``"pos"`` (R, n, d_model), ``"W_U"`` (R, d_model, vocab),
        ``"layers"``: a list of num_layers dicts ``"W_q"``, ``"W_k"``, ``"W_v"``, ``"W_o"``,
        each (R, d_model, d_model). R = len(seeds).
    """
    rngs = [np.random.default_rng(seed) for seed in seeds]

    def normal(shape, std):
        return np.stack([std * rng.standard_normal(shape) for rng in rngs]).astype(dtype)

    return {"tok": normal((VOCAB_SIZE, d_model), np.sqrt(0.5)),
            "pos": normal((LENGTH, d_model), np.sqrt(0.5)),
            "layers": [{name: normal((d_model, d_model), 1 / np.sqrt(d_model))
                        for name in ("W_q", "W_k", "W_v", "W_o")} for _ in range(num_layers)],
            "W_U": normal((d_model, VOCAB_SIZE), 1 / np.sqrt(d_model))}


def _times(X, W):
    """(R, B, n, d) @ (R, d, e) -> (R, B, n, e): one matrix product per run."""
    R, B, n, d = X.shape
    return (X.reshape(R, B * n, d) @ W).reshape(R, B, n, W.shape[-1])


def _T(a):
    return np.swapaxes(a, -1, -2)


def forward(params, tokens, keep=None, cache=False, reads=None):
    """Embed, run every layer (each adds its output to its input), unembed.

    Parameters
    ----------
    params : dict from :func:`init_params` (R runs)
    tokens : int ndarray (R, B, n), or (B, n) for the same sequences in every run
    keep : dict {layer: ndarray (B, n)} or None
        For an ablation: layer l's update at token i is multiplied by ``keep[l][:, i]``.
    reads : dict or None
        For an ablation seen by some projections only: ``{"layer": l, "keep": (B, n),
        "sides": ("K",)}`` removes layer l's update (multiplied by ``keep``) from the stream
        that the *later* layers' listed projections ("Q", "K", "V") read; every other
        projection, and the stream itself, keep it. ``sides=("Q", "K", "V")`` is the same as
        ``keep={l: ...}`` for what the later layers compute.

    Returns
    -------
    logits : ndarray (R, B, n, vocab)
    weights : list of L ndarrays (R, B, n, n), each layer's attention
    (and, with ``cache=True``, what the backward pass needs)
    """
    R = params["tok"].shape[0]
    tokens = np.broadcast_to(tokens, (R,) + np.shape(tokens)[-2:])
    X = params["tok"][np.arange(R)[:, None, None], tokens] + params["pos"][:, None]
    n, d = X.shape[-2:]
    causal = np.tril(np.ones((n, n), dtype=bool))
    saved, weights = [], []
    stripped = None                     # the stream without layer reads["layer"]'s update there
    for layer, W in enumerate(params["layers"], start=1):
        seen = {side: (stripped if stripped is not None and side in reads["sides"] else X)
                for side in ("Q", "K", "V")}
        Q, K, V = (_times(seen[side], W["W_" + side.lower()]) for side in ("Q", "K", "V"))
        scores = np.where(causal, Q @ _T(K) / np.sqrt(d).astype(X.dtype), -np.inf)
        A = np.exp(scores - scores.max(axis=-1, keepdims=True))
        A /= A.sum(axis=-1, keepdims=True)                          # (R, B, n, n)
        Z = A @ V
        out = _times(Z, W["W_o"])                                   # the layer's update
        if keep is not None and layer in keep:
            out = out * keep[layer][..., None]                      # an ablation
        saved.append((X, Q, K, V, A, Z))
        weights.append(A)
        if reads is not None and layer == reads["layer"]:
            stripped = X + out * reads["keep"][..., None]
        elif stripped is not None:
            stripped = stripped + out
        X = X + out                                                 # the residual connection
    logits = _times(X, params["W_U"])
    if cache:
        return logits, weights, {"saved": saved, "X": X}
    return logits, weights


def loss_and_grads(params, tokens):
    """Next-token loss (one per run) and its gradient for every parameter.

    tokens : int ndarray (R, B, n). Returns ``(loss (R,), grads shaped as params)``.
    """
    R, B, n = tokens.shape
    logits, _, cache = forward(params, tokens, cache=True)
    d = cache["X"].shape[-1]
    # the loss at positions 0 .. n-2, each predicting the token after it
    z = logits[:, :, :-1]
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)                              # (R, B, n-1, vocab)
    r, b, i = np.ix_(np.arange(R), np.arange(B), np.arange(n - 1))
    nxt = tokens[:, :, 1:]
    loss = -np.log(p[r, b, i, nxt]).mean(axis=(1, 2))              # (R,)
    p[r, b, i, nxt] -= 1                                            # softmax minus one-hot
    d_logits = np.zeros_like(logits)
    d_logits[:, :, :-1] = p / (B * (n - 1))

    def flat(a):
        return a.reshape(R, -1, a.shape[-1])

    grads = {"W_U": _T(flat(cache["X"])) @ flat(d_logits), "layers": [None] * len(params["layers"])}
    dX = _times(d_logits, _T(params["W_U"]))
    for layer in range(len(params["layers"]), 0, -1):               # down the stack
        W = params["layers"][layer - 1]
        X, Q, K, V, A, Z = cache["saved"][layer - 1]
        dZ = _times(dX, _T(W["W_o"]))
        dA = dZ @ _T(V)
        dS = A * (dA - (dA * A).sum(axis=-1, keepdims=True)) / np.sqrt(d).astype(X.dtype)
        dQ, dK, dV = dS @ K, _T(dS) @ Q, _T(A) @ dZ
        grads["layers"][layer - 1] = {"W_q": _T(flat(X)) @ flat(dQ), "W_k": _T(flat(X)) @ flat(dK),
                                      "W_v": _T(flat(X)) @ flat(dV), "W_o": _T(flat(Z)) @ flat(dX)}
        # X_l = X_(l-1) + out_l: the residual passes dX on, the layer adds its own
        dX = dX + _times(dQ, _T(W["W_q"])) + _times(dK, _T(W["W_k"])) + _times(dV, _T(W["W_v"]))
    one_hot = (tokens[..., None] == np.arange(VOCAB_SIZE)).astype(dX.dtype)   # (R, B, n, vocab)
    grads["tok"] = _T(flat(one_hot)) @ flat(dX)
    grads["pos"] = dX.sum(axis=1)
    return loss, grads


# ------------------------------------------------------------------------ measuring
def predictions(runs, data=None, **patches):
    """For every place inside the repeat: each run's guess and the right answer.

    Parameters
    ----------
    runs : a result of :func:`train_runs`, a list of them, or parameters with a run axis
    data : ``(tokens, first, second)``; None means the held-out sequences (:func:`test_set`)
    patches : ``keep=``, passed on to :func:`forward`

    Returns
    -------
    guess : int ndarray (R, count)
    right : int ndarray (count,)
    """
    tokens, first, second = test_set() if data is None else data
    logits, _ = forward(_stacked(runs), tokens, **patches)
    rows, query, _ = inside_repeat(first, second)
    return logits[:, rows, query].argmax(axis=-1), tokens[rows, query + 1]


def accuracy(runs, data=None, **patches):
    """Accuracy inside the repeat, one number per run (held out, unless ``data`` is given)."""
    guess, right = predictions(runs, data, **patches)
    return (guess == right).mean(axis=1)


def determined(data=None):
    """(count,) bool: the places inside the repeat where the query's token occurred once before.

    Tokens are drawn at random, so the query's token may also occur elsewhere before it;
    there two tokens followed it, and a model that copies "what followed my token" cannot
    know which one to give. Where it occurred only once (in the earlier copy), the next
    token is determined.
    """
    tokens, first, second = test_set() if data is None else data
    rows, query, _ = inside_repeat(first, second)
    before = np.arange(tokens.shape[1]) < query[:, None]                      # (count, n)
    return ((tokens[rows] == tokens[rows, query][:, None]) & before).sum(axis=1) == 1


def attention_summary(runs, data=None):
    """Where the two layers look, held out: mean weights, one per run.

    Returns
    -------
    dict of ndarray (R,)
        ``"previous"``: layer 1's weight from each answer position (source) on the token
        before it; ``"previous, every position"``: the same from every position 1 .. n-1;
        ``"induction"``: the last layer's weight from the query on the source.
    """
    tokens, first, second = test_set() if data is None else data
    _, weights = forward(_stacked(runs), tokens)
    rows, query, source = inside_repeat(first, second)
    i = np.arange(1, tokens.shape[1])
    return {"previous": weights[0][:, rows, source, source - 1].mean(axis=1),
            "previous, every position": weights[0][:, :, i, i - 1].mean(axis=(1, 2)),
            "induction": weights[-1][:, rows, query, source].mean(axis=1)}


def ablate_at(runs, layer, where, data=None, sides=None):
    """Accuracy (one per run) with layer ``layer``'s update removed at one place per question.

    where : {"source", "query", "earlier"}
        "source": the token after the earlier occurrence (where the answer is);
        "query": the token whose next one is asked for; "earlier": the earlier occurrence
        of the query's token.
    sides : None, or a tuple of "Q", "K", "V"
        None removes the update from the stream itself (every later layer loses it there,
        through its queries, keys and values alike). A tuple removes it only from what the
        later layers' listed projections read: ``("K",)`` takes it from the keys alone and
        so isolates K-composition; ``("V",)`` from the values alone (V-composition).

    Each question (a sequence and a place in its repeat) gets its own copy of the
    sequence, since each removes the update somewhere else.
    """
    tokens, first, second = test_set() if data is None else data
    rows, query, source = inside_repeat(first, second)
    at = {"source": source, "query": query, "earlier": source - 1}[where]
    params = _stacked(runs)
    copies = tokens[rows]                                           # (count, n)
    keep = np.ones(copies.shape, dtype=params["tok"].dtype)
    keep[np.arange(len(rows)), at] = 0
    if sides is None:
        logits, _ = forward(params, copies, keep={layer: keep})
    else:
        logits, _ = forward(params, copies, reads={"layer": layer, "keep": keep, "sides": tuple(sides)})
    guess = logits[:, np.arange(len(rows)), query].argmax(axis=-1)
    return (guess == copies[np.arange(len(rows)), query + 1]).mean(axis=1)


def by_position(runs, data=None):
    """Layer 1's previous-token weight, and the accuracy, position by position (held out).

    Returns
    -------
    dict
        ``"previous"`` (R, n): the mean weight that position i puts on i - 1 in layer 1,
        over every held-out sequence (NaN at 0); ``"accuracy"`` (R, n): the accuracy at the
        determined places (:func:`determined`) whose answer sits at position j (NaN where
        none does); ``"answers"`` (n,): how many determined places have their answer at j.
    """
    tokens, first, second = test_set() if data is None else data
    params = _stacked(runs)
    logits, weights = forward(params, tokens)
    n = tokens.shape[1]
    i = np.arange(1, n)
    previous = np.full((len(weights[0]), n), np.nan)
    previous[:, 1:] = weights[0][:, :, i, i - 1].mean(axis=1)
    rows, query, source = inside_repeat(first, second)
    once = determined(data)
    right = logits[:, rows, query].argmax(axis=-1) == tokens[rows, query + 1]       # (R, count)
    answers = np.bincount(source[once], minlength=n)
    accuracy = np.full((len(weights[0]), n), np.nan)
    for j in np.flatnonzero(answers):
        accuracy[:, j] = right[:, once & (source == j)].mean(axis=1)
    return {"previous": previous, "accuracy": accuracy, "answers": answers}


def determined_example(data=None, answer_before=8):
    """A held-out place for the induction maps: ``(sequence, query)``, determined (the query's
    token occurred once before) and with its answer before position ``answer_before``."""
    tokens, first, second = test_set() if data is None else data
    rows, query, source = inside_repeat(first, second)
    index = np.flatnonzero(determined(data) & (source < answer_before) & (query > source + 2))[0]
    return int(rows[index]), int(query[index])


def positional_baseline(data=None, seed=1):
    """Accuracy of the best guess from positions alone.

    For each query position, the commonest answer position in 20000 fresh training-like
    sequences; the guess is the token found there.
    """
    _, first, second = sample(np.random.default_rng(seed), 20_000)
    _, query, source = inside_repeat(first, second)
    best = {q: np.bincount(source[query == q]).argmax() for q in np.unique(query)}
    tokens, first, second = test_set() if data is None else data
    rows, query, _ = inside_repeat(first, second)
    guess = tokens[rows, [best.get(q, q) for q in query]]
    return float(np.mean(guess == tokens[rows, query + 1]))


def circuits(run):
    """Elhage et al.'s (2021) circuits of one trained model, as (vocab, vocab) matrices.

    Returns
    -------
    dict
        ``"OV"``: ``W_E W_v W_o W_U`` of the last layer: entry (a, b) is how much attending
        to a token a raises the logit of b. ``"QK"``: ``(W_E W_q) (W_E W_v1 W_o1 W_k)^T``,
        the last layer's query of a token a against the key of a position whose *previous*
        token was b, through layer 1's OV (K-composition; the position terms left out).
    """
    p = run["params"]
    E, U, first, last = p["tok"], p["W_U"], p["layers"][0], p["layers"][-1]
    return {"OV": E @ last["W_v"] @ last["W_o"] @ U,
            "QK": (E @ last["W_q"]) @ (E @ first["W_v"] @ first["W_o"] @ last["W_k"]).T}


# ------------------------------------------------------------------------ training
def train_runs(num_layers, seeds=range(5), steps=STEPS, d_model=D_MODEL, dtype="float32"):
    """Train one model per seed, all at once (each seed draws its own batches).

    Returns
    -------
    list of dict, one per seed
        ``"params"`` (``"tok"``, ``"pos"``, ``"W_U"`` and ``"layers"``, a list of per-layer
        dicts, without the run axis), ``"loss"`` (steps,), ``"accuracy"`` (inside the repeat,
        held out), and ``"config"`` (task, seed, sizes, steps, number of layers and heads).
    """
    seeds = [int(seed) for seed in seeds]
    params = init_params(num_layers, seeds, d_model, dtype)
    rngs = [np.random.default_rng([seed, 1]) for seed in seeds]     # the batches' own streams

    def next_batch():
        return np.stack([sample(rng, BATCH_SIZE)[0] for rng in rngs])

    losses = fit(params, loss_and_grads, next_batch, steps, d_model)   # (steps, R)
    held_out = accuracy(params)
    return [{"params": _run(params, r), "loss": losses[:, r], "accuracy": float(held_out[r]),
             "config": {"task": "induction", "seed": seed, "steps": int(steps), "d_model": int(d_model),
                        "num_heads": 1, "num_layers": int(num_layers), "scale": True,
                        "position": "learned", "readout": "next token", "dtype": str(np.dtype(dtype)),
                        "vocab_size": VOCAB_SIZE, "length": LENGTH, "segment": SEGMENT,
                        "max_gap": MAX_GAP, "batch_size": BATCH_SIZE}}
            for r, seed in enumerate(seeds)]


def _run(params, r):
    """Run ``r``'s parameters, without the run axis."""
    return {"tok": params["tok"][r], "pos": params["pos"][r], "W_U": params["W_U"][r],
            "layers": [{name: W[name][r] for name in W} for W in params["layers"]]}


def stack(runs):
    """The parameters of a list of results (or of one result) with a leading run axis."""
    runs = [runs] if isinstance(runs, dict) else list(runs)
    every = [run["params"] for run in runs]
    return {"tok": np.stack([p["tok"] for p in every]), "pos": np.stack([p["pos"] for p in every]),
            "W_U": np.stack([p["W_U"] for p in every]),
            "layers": [{name: np.stack([p["layers"][i][name] for p in every]) for name in layer}
                       for i, layer in enumerate(every[0]["layers"])]}


def _stacked(runs):
    """``runs`` (one result, a list of them, or parameters with a run axis) as stacked parameters."""
    return stack(runs) if isinstance(runs, list) or "params" in runs else runs
