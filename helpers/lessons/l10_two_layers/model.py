"""Lesson 10: a stack of attention layers with residual connections, answering by pointing.

Read it top to bottom. The model::

    X_0 = tok[tokens] + pos                                        (B, n, d_model)
    for layer l = 1 .. L:
        out_l, w_l = multi_head_attention(X_{l-1}, W_q, W_k, W_v, W_o, h, mask)
        X_l = X_{l-1} + out_l                                      the residual connection
    p    = mean over heads of w_L[:, :, query, :]                  (B, n): where the query points
    loss = -log p[the right position]
    answer = argmax p

The answer is *where the query looks* in the last layer, nothing else: there is no
readout that names a word. So the model is right only if attention itself chose.

Forward and backward are the course's own functions (:mod:`helpers.reference`): lesson
04's ``multi_head_attention``, lesson 07's ``multi_head_attention_backward`` and
``attention_backward``. The residual's backward is one addition. The training loop
is lesson 08's (:func:`helpers.lessons.l08_training.fit`: its Adam, step sizes and weight decay).

The parameters: ``"tok"``, ``"pos"`` and ``"layers"``, a list of one dict per layer
(``params["layers"][l - 1]["W_q"]`` is layer l's). Entry points: :func:`train`,
:func:`evaluate`, :func:`ablate`, and :func:`train_word_readout` (lesson 08's model on this corpus).
"""

import functools

import numpy as np

from ... import reference
from ..l08_training import model as l08
from ..l08_training import training as l08_training
from . import adjective_corpus, induction

# ----------------------------------------------------------------- hyperparameters
TASKS = {
    # task: (corpus module, causal mask?, default number of steps)
    "adjective": (adjective_corpus, False, 300),
}
# The task "induction" is another model (next-token prediction, :mod:`.induction`): train,
# evaluate and ablate hand it on.
PLACES = ("pronoun", "nouns", "all")   # where ablate removes a layer's update


MATRICES = ("W_q", "W_k", "W_v", "W_o")   # each layer's


def flatten(params):
    """The same arrays, one name each: ``"tok"``, ``"pos"``, ``"W_q1"``, ``"W_k1"``, ... (layer 1 first)."""
    flat = {name: params[name] for name in ("tok", "pos")}
    for l, layer in enumerate(params["layers"], start=1):
        flat.update({f"{w}{l}": layer[w] for w in MATRICES})
    return flat


def unflatten(flat):
    """The inverse of :func:`flatten`."""
    num_layers = sum(name.startswith("W_q") for name in flat)
    return {"tok": flat["tok"], "pos": flat["pos"],
            "layers": [{w: flat[f"{w}{l}"] for w in MATRICES} for l in range(1, num_layers + 1)]}


# ----------------------------------------------------------------------- the model
def init_params(vocab_size, n, d_model, num_layers, rng, dtype="float64"):
    """Random starting parameters, scaled as lesson 08's (:func:`..l08_training.model.init_params`).

    Returns
    -------
    dict
        ``"tok"`` (vocab_size, d_model), ``"pos"`` (n, d_model), and ``"layers"``: a list of
        ``num_layers`` dicts, each with ``"W_q"``, ``"W_k"``, ``"W_v"``, ``"W_o"`` (d_model, d_model).
    """
    def normal(shape, std):
        return (std * rng.standard_normal(shape)).astype(dtype)

    params = {"tok": normal((vocab_size, d_model), np.sqrt(0.5)),
              "pos": normal((n, d_model), np.sqrt(0.5))}
    params["layers"] = [{w: normal((d_model, d_model), 1 / np.sqrt(d_model)) for w in MATRICES}
                        for _ in range(num_layers)]
    return params


def layer_matrices(params, layer, num_heads, scale=True):
    """Layer ``layer``'s ``(W_q, W_k, W_v, W_o)`` (from 1); ``W_q`` times lesson 08's ``query_factor``."""
    W_q, W_k, W_v, W_o = (params["layers"][layer - 1][w] for w in MATRICES)
    return W_q * l08.query_factor(W_q.shape[0], num_heads, scale), W_k, W_v, W_o


def forward(params, tokens, num_heads, scale=True, mask=None, keep=None, replace=None):
    """Embed, then run every layer, each adding its output to its input.

    Parameters
    ----------
    params : dict from :func:`init_params`
    tokens, num_heads, scale : as lesson 08's ``forward``
    mask : bool ndarray (n, n) or None
        The same mask in every layer (the induction task's is causal).
    keep : dict {layer: ndarray (B, n)} or None
        For an ablation: layer l's update at token i is multiplied by ``keep[l][:, i]``
        (0 removes it there).
    replace : dict {layer: (where (B, n) bool, update (B, n, d_model))} or None
        For patching: where ``where`` is True, layer l adds ``update`` instead of its own.

    Returns
    -------
    states : list of L + 1 ndarrays (B, n, d_model)
        ``X_0`` (the embeddings), then the residual stream after each layer.
    weights : list of L ndarrays (B, num_heads, n, n)
        Each layer's attention maps.
    """
    X = params["tok"][tokens] + params["pos"]                     # (B, n, d_model)
    states, weights = [X], []
    for layer in range(1, len(params["layers"]) + 1):
        out, w = reference.multi_head_attention(X, *layer_matrices(params, layer, num_heads, scale),
                                                num_heads, mask)
        if keep is not None and layer in keep:
            out = out * keep[layer][..., None]                    # the ablation
        if replace is not None and layer in replace:
            where, update = replace[layer]
            out = np.where(where[..., None], update, out)         # patching
        X = X + out                                               # the residual connection
        states.append(X)
        weights.append(w)
    return states, weights


def pointer(weights, query):
    """Where each query points: its row of the last layer's weights, mean over heads.

    weights (B, h, n, n), query (B,) ints -> (B, n), each row sums to 1.
    """
    rows = np.arange(len(query))
    return weights[rows, :, query].mean(axis=1)


def pointer_backward(X, W_q, W_k, num_heads, weights, d_weights):
    """Gradients for ``X``, ``W_q`` and ``W_k`` of a loss that reads a layer's *weights* only.

    The weights are what attention outputs when the values are the identity matrix
    (``weights @ I = weights``), so lesson 07's ``attention_backward`` with ``V = I`` and
    ``d_out = d_weights`` gives dQ and dK (its dV is not needed).

    Returns
    -------
    dict with ``"X"`` (like X), ``"W_q"``, ``"W_k"`` (d_model, d_model)
    """
    Q, K = (reference.split_heads(X @ W, num_heads) for W in (W_q, W_k))   # (B, h, n, d_head)
    identity = np.broadcast_to(np.eye(X.shape[-2], dtype=X.dtype), weights.shape)
    dQ, dK, _ = reference.attention_backward(Q, K, identity, weights, d_weights)
    dQ, dK = reference.merge_heads(dQ), reference.merge_heads(dK)           # (B, n, d_model)
    flat = X.reshape(-1, X.shape[-1])
    return {"X": dQ @ W_q.T + dK @ W_k.T,
            "W_q": flat.T @ dQ.reshape(flat.shape), "W_k": flat.T @ dK.reshape(flat.shape)}


def loss_and_grads(params, batch, num_heads, scale=True, mask=None):
    """The pointer loss, ``mean of -log p[right position]``, and its gradient for every parameter.

    Parameters
    ----------
    params : dict from :func:`init_params`
    batch : corpus.Split (B sentences); ``targets[:, 0]`` is the right position
    num_heads : int
    scale : bool
    mask : bool ndarray (n, n) or None

    Returns
    -------
    loss : float
    grads : dict, the same keys and shapes as ``params``
    """
    L, B, rows = len(params["layers"]), len(batch.tokens), np.arange(len(batch.tokens))
    right = batch.targets[:, 0]
    # forward
    states, weights = forward(params, batch.tokens, num_heads, scale, mask)
    p = pointer(weights[-1], batch.query)                        # (B, n)
    loss = float(-np.mean(np.log(p[rows, right])))
    # backward: the pointer reads the last layer's weights at the query row only
    d_weights = np.zeros_like(weights[-1])                        # (B, h, n, n)
    d_weights[rows, :, batch.query, right] = -1 / (B * num_heads * p[rows, right])[:, None]
    layer_grads = [None] * L
    factor = l08.query_factor(params["tok"].shape[1], num_heads, scale)
    W_q, W_k, W_v, W_o = layer_matrices(params, L, num_heads, scale)
    g = pointer_backward(states[L - 1], W_q, W_k, num_heads, weights[-1], d_weights)
    layer_grads[L - 1] = {"W_q": g["W_q"] * factor, "W_k": g["W_k"],
                          "W_v": np.zeros_like(W_v), "W_o": np.zeros_like(W_o)}   # W_v, W_o: not read
    dX = g["X"]                                                   # gradient of X_{L-1}
    for layer in range(L - 1, 0, -1):
        # X_l = X_{l-1} + out_l: the gradient reaches X_{l-1} twice, straight through the
        # addition (the residual) and through the layer.
        g = reference.multi_head_attention_backward(
            states[layer - 1], *layer_matrices(params, layer, num_heads, scale), num_heads, dX, mask)
        layer_grads[layer - 1] = {"W_q": g["W_q"] * factor, "W_k": g["W_k"], "W_v": g["W_v"],
                                  "W_o": g["W_o"]}
        dX = dX + g["X"]                                          # the residual: one addition
    # the embeddings, as in lesson 08
    one_hot = np.eye(len(params["tok"]), dtype=dX.dtype)[batch.tokens.ravel()]   # (B * n, V)
    return loss, {"tok": one_hot.T @ dX.reshape(-1, dX.shape[-1]), "pos": dX.sum(axis=0),
                  "layers": layer_grads}


# ------------------------------------------------------------- data and evaluation
@functools.lru_cache(maxsize=None)
def load_corpus(task):
    """The task's corpus (built once, then shared: do not change its arrays)."""
    return TASKS[task][0].make_corpus(seed=l08_training.CORPUS_SEED)


def task_mask(task, n):
    """The task's attention mask: causal for "induction", none (None) for "adjective"."""
    return reference.causal_mask(n) if TASKS[task][1] else None


def accuracy_on(params, split, num_heads, scale=True, mask=None, keep=None):
    """Accuracy (the pointer's largest weight is on the right position) and attention.

    Returns
    -------
    accuracy : float
    attention_to_targets : ndarray (1, num_heads)
        The query's mean weight, in each head of the last layer, on the right position.
    """
    rows = np.arange(len(split))
    _, weights = forward(params, split.tokens, num_heads, scale, mask, keep)
    right = split.targets[:, 0]
    accuracy = float(np.mean(np.argmax(pointer(weights[-1], split.query), axis=1) == right))
    attention = weights[-1][rows, :, split.query, right].mean(axis=0)     # (num_heads,)
    return accuracy, attention[None]


def ablate(result, layer, at):
    """Held-out accuracy with layer ``layer``'s update removed at some positions.

    The layer still runs, but at those positions its output is not added to the residual
    stream: what it gathered there never reaches the later layers.

    Parameters
    ----------
    result : dict from :func:`train`
    layer : int, 1 .. num_layers
    at : {"pronoun", "nouns", "all"}
        "pronoun": the query position ("it"); "nouns": the two nouns; "all": every position.
        For "induction": {"source", "query", "earlier"} (:func:`.induction.ablate_at`).

    Returns
    -------
    float
        The accuracy on the held-out split. ``ablate(result, num_layers, at)`` removes
        nothing the pointer reads: it returns ``result["accuracy"]``.
    """
    config = result.get("config", {})
    if config.get("task") == "induction":
        if at not in induction.PLACES:
            raise ValueError(f"ablate: for 'induction', at must be one of {induction.PLACES}, got {at!r}")
        return float(induction.ablate_at(result, layer, at)[0])
    if config.get("readout") != "pointer":
        raise ValueError("ablate: result must come from lesson 10's train('adjective' or 'induction', "
                         f"...); this one was trained on {config.get('task')!r} with a word readout")
    L = config["num_layers"]
    if not (_whole(layer) and 1 <= layer <= L):
        raise ValueError(f"ablate: layer must be a whole number from 1 to {L} (the model has "
                         f"{L} layer{'s' * (L > 1)}), got {layer!r}")
    if at not in PLACES:
        raise ValueError(f"ablate: at must be one of {PLACES}, got {at!r}")
    test = result["corpus"].test
    keep = np.ones(test.tokens.shape)                             # (N, n)
    rows = np.arange(len(test))
    if at == "pronoun":
        keep[rows, test.query] = 0
    elif at == "nouns":
        keep[rows[:, None], test.nouns] = 0
    else:
        keep[:] = 0
    mask = task_mask(config["task"], test.tokens.shape[1])
    return accuracy_on(result["params"], test, config["num_heads"], config["scale"], mask,
                   keep={layer: keep})[0]


# ------------------------------------------------------------------ patching
OPPOSITE = {"tired": "wet", "wet": "tired", "hungry": "dirty", "dirty": "hungry"}


def twins(result):
    """For each held-out sentence, the index of its twin: the same sentence with the adjective
    of the other class in its place (tired <-> wet, hungry <-> dirty), so "it" means the other noun.

    Returns int ndarray (N,).
    """
    corpus = result["corpus"]
    test = corpus.test
    index = {tuple(tokens): i for i, tokens in enumerate(test.tokens)}
    found = []
    for i, tokens in enumerate(test.tokens):
        words = test.sentences[i].split()
        at = test.targets[i, 1]                                   # the adjective's position
        twin = tokens.copy()
        twin[at] = corpus.encode(OPPOSITE[words[at]])[0]
        found.append(index[tuple(twin)])
    return np.array(found)


def updates(params, tokens, num_heads, scale=True, mask=None):
    """Every layer's update (what it adds to the stream) on ``tokens``: a list of (B, n, d_model)."""
    states, _ = forward(params, tokens, num_heads, scale, mask)
    return [after - before for before, after in zip(states[:-1], states[1:])]


def patch(result, layer, at):
    """Held-out accuracy with layer ``layer``'s update at some positions taken from the twin sentence.

    Activation patching (Meng et al., 2022; Heimersheim & Nanda, 2024): each held-out sentence
    runs as usual, except that at the positions ``at`` layer ``layer`` adds what it added in
    its twin (the same sentence with the adjective of the other class, :func:`twins`). The
    accuracy is against the sentence's own answer: it falls below one half when the answer
    follows the twin's, that is when the model *uses* what that layer put there.

    Parameters
    ----------
    result : dict from :func:`train` on "adjective"
    layer : int, 1 .. num_layers
    at : {"pronoun", "nouns", "both"}
        "it", the two nouns, or all three.

    Returns
    -------
    float
    """
    config = result.get("config", {})
    if config.get("task") != "adjective" or config.get("readout") != "pointer":
        raise ValueError("patch: result must come from lesson 10's train('adjective', ...)")
    L = config["num_layers"]
    if not (_whole(layer) and 1 <= layer <= L):
        raise ValueError(f"patch: layer must be a whole number from 1 to {L}, got {layer!r}")
    if at not in ("pronoun", "nouns", "both"):
        raise ValueError(f"patch: at must be 'pronoun', 'nouns' or 'both', got {at!r}")
    test, h, scale = result["corpus"].test, config["num_heads"], config["scale"]
    rows = np.arange(len(test))
    where = np.zeros(test.tokens.shape, dtype=bool)               # (N, n)
    if at in ("pronoun", "both"):
        where[rows, test.query] = True
    if at in ("nouns", "both"):
        where[rows[:, None], test.nouns] = True
    lent = updates(result["params"], test.tokens[twins(result)], h, scale)[layer - 1]
    _, weights = forward(result["params"], test.tokens, h, scale, replace={layer: (where, lent)})
    return float(np.mean(np.argmax(pointer(weights[-1], test.query), axis=1) == test.targets[:, 0]))


# ------------------------------------------------------------------ two heads, one layer
def two_head_example(corpus, score=10.0, sink=13.0):
    """A hand-set one-layer, two-head pointer model that resolves the adjective task.

    A construction by hand: head 0's query of "it" scores every animal ``score`` and each
    object adjective ``sink``; head 1 scores every object ``score`` and each animal adjective
    ``sink``. With "tired", head 1 puts its weight on "tired" (a sink) and head 0 on the
    animal: the mean over heads points at the animal. With "wet", the other way round. The
    ratio argument holds in each head; the *mean* of two heads escapes it.

    Returns
    -------
    dict of parameters (d_model 6: three dimensions per head; no position embedding needed)
    """
    from .adjective_corpus import ANIMAL_ADJECTIVES, ANIMALS, OBJECT_ADJECTIVES, OBJECTS
    vocab = list(corpus.vocab)
    d, d_head = 6, 3
    tok = np.zeros((len(vocab), d))
    features = {"it": 0, **{w: 1 for w in ANIMALS}, **{w: 2 for w in OBJECTS},
                **{w: 3 for w in ANIMAL_ADJECTIVES}, **{w: 4 for w in OBJECT_ADJECTIVES}}
    for word, f in features.items():
        tok[vocab.index(word), f] = 1.0
    W_q, W_k = np.zeros((d, d)), np.zeros((d, d))
    W_q[0, 0] = W_q[0, d_head] = np.sqrt(d_head)                 # "it" asks in both heads
    W_k[1, 0], W_k[4, 0] = score, sink                             # head 0: animals; object adjectives sink
    W_k[2, d_head], W_k[3, d_head] = score, sink                   # head 1: objects; animal adjectives sink
    n = corpus.test.tokens.shape[1]
    return {"tok": tok, "pos": np.zeros((n, d)),
            "layers": [{"W_q": W_q, "W_k": W_k, "W_v": np.eye(d), "W_o": np.eye(d)}]}


# ------------------------------------------------------------------ training
def _whole(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_arguments(task, num_heads, d_model, scale, steps, seed, num_layers, dtype):
    """A clear ValueError/TypeError for a bad argument of :func:`train`."""
    where = "train"
    if task not in (*TASKS, "induction"):
        raise ValueError(f"{where}: lesson 10's model answers by pointing: task must be one of "
                         f"{sorted(TASKS)} (or 'induction', next-token prediction), got {task!r}")
    l08_training.check_arguments(where, num_heads, d_model, scale, steps, seed, dtype)
    if not (_whole(num_layers) and num_layers >= 1):
        raise ValueError(f"{where}: num_layers must be a whole number >= 1, got {num_layers!r}")


def train(task, *, num_layers=1, num_heads=1, d_model=32, scale=True, steps=None, seed=0, dtype="float64"):
    """Train the pointer model on "adjective", or the next-token model on "induction"; evaluate it.

    "induction" is :func:`.induction.train_runs` for one seed (one head per layer; ``num_heads``
    must be 1; ``steps=None`` means :data:`.induction.STEPS`).

    Lesson 08's loop (:func:`helpers.lessons.l08_training.fit`) with this model's loss.
    Arguments as lesson 08's ``train``, and ``num_layers``.

    Returns
    -------
    dict
        ``"loss"`` (steps,), ``"accuracy"`` (held-out), ``"attention_to_targets"``
        (1, num_heads), ``"params"``, ``"corpus"``, and ``"config"`` (``readout="pointer"``).
    """
    check_arguments(task, num_heads, d_model, scale, steps, seed, num_layers, dtype)
    if task == "induction":
        if num_heads != 1 or not scale:
            raise ValueError("train: the induction model has one head per layer and scaled scores "
                             f"(num_heads=1, scale=True), got num_heads={num_heads}, scale={scale}")
        return induction.train_runs(num_layers, [seed], induction.STEPS if steps is None else int(steps),
                                    d_model, dtype)[0]
    steps = TASKS[task][2] if steps is None else int(steps)
    data = load_corpus(task)
    n = data.train.tokens.shape[1]
    mask = task_mask(task, n)
    rng = np.random.default_rng(seed)
    params = init_params(len(data.vocab), n, d_model, num_layers, rng, dtype)
    losses = l08_training.fit(params, lambda p, batch: loss_and_grads(p, batch, num_heads, scale, mask),
                              lambda: l08_training.sample_batch(data.train, rng), steps, d_model)
    accuracy, attention = accuracy_on(params, data.test, num_heads, scale, mask)
    config = l08_training.make_config(task, seed=seed, steps=steps, d_model=d_model, num_heads=num_heads,
                                      scale=scale, dtype=dtype, num_layers=num_layers, readout="pointer")
    return {"loss": losses, "accuracy": accuracy, "attention_to_targets": attention,
            "params": params, "corpus": data, "config": config}


def evaluate(result, params=None):
    """The held-out accuracy of a :func:`train` result (with ``params`` in place of its own, if given)."""
    if result["config"]["task"] == "induction":
        return float(induction.accuracy({"params": result["params"] if params is None else params})[0])
    config, test = result["config"], result["corpus"].test
    params = result["params"] if params is None else params
    mask = task_mask(config["task"], test.tokens.shape[1])
    return accuracy_on(params, test, config["num_heads"], config["scale"], mask)[0]


# ------------------------------------------------- lesson 08's model on lesson 10's corpus
def train_word_readout(task="adjective", *, steps=1000, seed=0, d_model=32):
    """Lesson 08's one-layer model *with its word-naming readout*, trained on ``task``'s corpus.

    Lesson 08's loop and loss (:mod:`helpers.lessons.l08_training.model`: a readout at the
    query that scores every word). Its answer is the word the readout scores highest, which
    can use the *values* the query blends in, not only where it looks.

    Returns
    -------
    dict
        ``"accuracy"`` (held-out), ``"attention"`` (N, n): the query's weights on each
        held-out sentence, ``"params"``, ``"loss"``, ``"corpus"``, ``"config"`` (``readout="word"``).
    """
    data = load_corpus(task)
    rng = np.random.default_rng(seed)
    params = l08.init_params(len(data.vocab), d_model, 1, rng)
    losses = l08_training.fit(params, lambda p, batch: l08.loss_and_grads(p, batch, 1),
                              lambda: l08_training.sample_batch(data.train, rng), steps, d_model)
    accuracy, _ = l08.accuracy_on(params, data.test, 1)
    _, _, weights = l08.forward(params, data.test.tokens, 1)
    config = l08_training.make_config(task, seed=seed, steps=steps, d_model=d_model, num_heads=1,
                                      scale=True, dtype="float64")
    return {"accuracy": accuracy, "attention": weights[np.arange(len(data.test)), 0, data.test.query],
            "params": params, "loss": losses, "corpus": data, "config": config}
