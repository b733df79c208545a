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
is lesson 08's (its Adam, step sizes and weight decay, from :mod:`helpers.training`).

Entry points: :func:`train` (``helpers.training.train_attention`` calls it for the tasks
``"adjective"`` and ``"induction"``) and :func:`ablate`.
"""

import functools

import numpy as np

from . import corpus_adjective, corpus_induction, reference, run_cache, training
from .threads import blas_threads

# ----------------------------------------------------------------- hyperparameters
TASKS = {
    # task: (corpus module, causal mask?, default number of steps)
    "adjective": (corpus_adjective, False, 300),
    "induction": (corpus_induction, True, 1000),
}
POSITIONS = ("learned",)       # the position embedding these tasks support
PLACES = ("pronoun", "nouns", "all")   # where ablate removes a layer's update


def layer_names(layer):
    """The parameter names of layer ``layer`` (counted from 1): ``"W_q1"``, ``"W_k1"``, ..."""
    return [f"{w}{layer}" for w in ("W_q", "W_k", "W_v", "W_o")]


def num_layers_of(params):
    """How many layers ``params`` has (lesson 08's one-layer params count as 1)."""
    return max(1, sum(name.startswith("W_q") and name != "W_q" for name in params))


# ----------------------------------------------------------------------- the model
def init_params(vocab_size, n, d_model, num_layers, rng, dtype="float64"):
    """Random starting parameters, scaled as lesson 08's (:func:`helpers.training.init_params`).

    Returns
    -------
    dict of str -> ndarray
        ``"tok"`` (vocab_size, d_model), ``"pos"`` (n, d_model), and for each layer l
        ``"W_ql"``, ``"W_kl"``, ``"W_vl"``, ``"W_ol"`` (d_model, d_model).
    """
    def normal(shape, std):
        return (std * rng.standard_normal(shape)).astype(dtype)

    params = {"tok": normal((vocab_size, d_model), np.sqrt(0.5)),
              "pos": normal((n, d_model), np.sqrt(0.5))}
    for layer in range(1, num_layers + 1):
        for name in layer_names(layer):
            params[name] = normal((d_model, d_model), 1 / np.sqrt(d_model))
    return params


def layer_matrices(params, layer, num_heads, scale=True):
    """Layer ``layer``'s ``(W_q, W_k, W_v, W_o)``; ``W_q`` times lesson 08's :func:`query_factor`."""
    W_q, W_k, W_v, W_o = (params[name] for name in layer_names(layer))
    return W_q * training.query_factor(W_q.shape[0], num_heads, scale), W_k, W_v, W_o


def forward(params, tokens, num_heads, scale=True, mask=None, keep=None):
    """Embed, then run every layer, each adding its output to its input.

    Parameters
    ----------
    params : dict from :func:`init_params`
    tokens : int ndarray, shape (B, n)
    num_heads : int
    scale : bool
    mask : bool ndarray (n, n) or None
        The same mask in every layer (the induction task's is causal).
    keep : dict {layer: ndarray (B, n)} or None
        For an ablation: layer l's update at token i is multiplied by ``keep[l][:, i]``
        (0 removes it there).

    Returns
    -------
    states : list of L + 1 ndarrays (B, n, d_model)
        ``X_0`` (the embeddings), then the residual stream after each layer.
    weights : list of L ndarrays (B, num_heads, n, n)
        Each layer's attention maps.
    """
    X = params["tok"][tokens] + params["pos"]                     # (B, n, d_model)
    states, weights = [X], []
    for layer in range(1, num_layers_of(params) + 1):
        out, w = reference.multi_head_attention(X, *layer_matrices(params, layer, num_heads, scale),
                                                num_heads, mask)
        if keep is not None and layer in keep:
            out = out * keep[layer][..., None]                    # the ablation
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
    L, B, rows = num_layers_of(params), len(batch.tokens), np.arange(len(batch.tokens))
    right = batch.targets[:, 0]
    # forward
    states, weights = forward(params, batch.tokens, num_heads, scale, mask)
    p = pointer(weights[-1], batch.query)                        # (B, n)
    loss = float(-np.mean(np.log(p[rows, right])))
    # backward: the pointer reads the last layer's weights at the query row only
    d_weights = np.zeros_like(weights[-1])                        # (B, h, n, n)
    d_weights[rows, :, batch.query, right] = -1 / (B * num_heads * p[rows, right])[:, None]
    grads = {}
    factor = training.query_factor(params["tok"].shape[1], num_heads, scale)
    W_q, W_k, W_v, W_o = layer_matrices(params, L, num_heads, scale)
    g = pointer_backward(states[L - 1], W_q, W_k, num_heads, weights[-1], d_weights)
    grads[f"W_q{L}"], grads[f"W_k{L}"] = g["W_q"] * factor, g["W_k"]
    grads[f"W_v{L}"], grads[f"W_o{L}"] = np.zeros_like(W_v), np.zeros_like(W_o)   # not read
    dX = g["X"]                                                   # gradient of X_{L-1}
    for layer in range(L - 1, 0, -1):
        # X_l = X_{l-1} + out_l: the gradient reaches X_{l-1} twice, straight through the
        # addition (the residual) and through the layer.
        g = reference.multi_head_attention_backward(
            states[layer - 1], *layer_matrices(params, layer, num_heads, scale), num_heads, dX, mask)
        grads[f"W_q{layer}"] = g["W_q"] * factor
        for w in ("W_k", "W_v", "W_o"):
            grads[f"{w}{layer}"] = g[w]
        dX = dX + g["X"]                                          # the residual: one addition
    # the embeddings, as in lesson 08
    one_hot = np.eye(len(params["tok"]), dtype=dX.dtype)[batch.tokens.ravel()]   # (B * n, V)
    grads["tok"] = one_hot.T @ dX.reshape(-1, dX.shape[-1])
    grads["pos"] = dX.sum(axis=0)
    return loss, grads


# ------------------------------------------------------------- data and evaluation
@functools.lru_cache(maxsize=None)
def load_corpus(task):
    """The task's corpus (built once, then shared: do not change its arrays)."""
    return TASKS[task][0].make_corpus(seed=training.CORPUS_SEED)


def task_mask(task, n):
    """The task's attention mask: causal for "induction", none (None) for "adjective"."""
    return reference.causal_mask(n) if TASKS[task][1] else None


def evaluate(params, split, num_heads, scale=True, mask=None, keep=None):
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
    result : dict from ``train_attention("adjective" or "induction", ...)``
    layer : int, 1 .. num_layers
    at : {"pronoun", "nouns", "all"}
        "pronoun": the query position ("it"); "nouns": the two nouns (for "induction":
        the answer and the earlier occurrence of the query's letter); "all": every position.

    Returns
    -------
    float
        The accuracy on the held-out split. ``ablate(result, num_layers, at)`` removes
        nothing the pointer reads: it returns ``result["accuracy"]``.
    """
    config = result.get("config", {})
    if config.get("task") not in TASKS:
        raise ValueError("ablate: result must come from train_attention('adjective' or "
                         "'induction', ...); this one has no such task")
    L = num_layers_of(result["params"])
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
    return evaluate(result["params"], test, config["num_heads"], config["scale"], mask,
                    keep={layer: keep})[0]


# ------------------------------------------------------------------ training
def _whole(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_arguments(task, num_heads, d_model, scale, steps, seed, num_layers, position, dtype):
    """A clear ValueError/TypeError for a bad argument of ``train_attention`` (lesson 10's tasks)."""
    where = "train_attention"
    if task not in TASKS:
        raise ValueError(f"{where}: num_layers={num_layers} needs a pointer task, one of "
                         f"{sorted(TASKS)}; got task {task!r} (its readout names a word)")
    training.check_model_arguments(where, num_heads, d_model, scale, steps, seed)
    if str(dtype) not in training.DTYPES and dtype not in (np.float64, np.float32):
        raise ValueError(f"{where}: dtype must be one of {training.DTYPES}, got {dtype!r}")
    if not (_whole(num_layers) and num_layers >= 1):
        raise ValueError(f"{where}: num_layers must be a whole number >= 1, got {num_layers!r}")
    if position not in POSITIONS:
        raise ValueError(f"{where}: task {task!r} supports position={POSITIONS[0]!r} only, "
                         f"got position={position!r}")


@blas_threads()       # small matrices: one BLAS thread is fastest (helpers/threads.py)
def train(task, *, num_heads=1, d_model=32, scale=True, steps=None, seed=0, num_layers=1,
          position="learned", dtype="float64"):
    """Train the pointer model on "adjective" or "induction"; evaluate it on held-out data.

    Lesson 08's loop: draw a batch, forward and backward, one Adam step per parameter,
    weight decay. Arguments as :func:`helpers.training.train_attention`.

    Returns
    -------
    dict
        ``"loss"`` (steps,), ``"accuracy"`` (held-out), ``"attention_to_targets"``
        (1, num_heads), ``"params"``, ``"corpus"``, and ``"config"`` (the task, num_heads,
        num_layers, scale: what :func:`ablate` needs).
    """
    check_arguments(task, num_heads, d_model, scale, steps, seed, num_layers, position, dtype)
    steps = TASKS[task][2] if steps is None else int(steps)
    data = load_corpus(task)
    n = data.train.tokens.shape[1]
    mask = task_mask(task, n)
    rng = np.random.default_rng(seed)
    params = init_params(len(data.vocab), n, d_model, num_layers, rng, dtype)
    m = {name: np.zeros_like(p) for name, p in params.items()}
    v = {name: np.zeros_like(p) for name, p in params.items()}
    losses = []
    for step in range(1, steps + 1):
        batch = training.sample_batch(data.train, rng)
        loss, grads = loss_and_grads(params, batch, num_heads, scale, mask)
        lr = training.learning_rate(step, steps, d_model)
        for name in params:
            params[name], m[name], v[name] = reference.adam_step(params[name], grads[name],
                                                                 m[name], v[name], step, lr)
            params[name] *= 1 - lr * training.WEIGHT_DECAY
        losses.append(loss)
    accuracy, attention = evaluate(params, data.test, num_heads, scale, mask)
    return {"loss": np.array(losses), "accuracy": accuracy, "attention_to_targets": attention,
            "params": params, "corpus": data,
            "config": {"task": task, "num_heads": num_heads, "num_layers": num_layers,
                       "scale": scale}}


# ------------------------------------------------- lesson 08's model on lesson 10's corpus
@run_cache.shared     # tests only: computed once per test run (helpers/run_cache.py)
@blas_threads()       # small matrices: one BLAS thread is fastest (helpers/threads.py)
def train_word_readout(task="adjective", *, steps=1000, seed=0, d_model=32):
    """Lesson 08's one-layer model *with its word-naming readout*, trained on ``task``'s corpus.

    The same loop as :func:`train`, with lesson 08's :func:`helpers.training.loss_and_grads`
    (a readout at the query that scores every word). Its answer is the word the readout
    scores highest, which can use the *values* the query blends in, not only where it looks.

    Returns
    -------
    dict
        ``"accuracy"`` (held-out), ``"attention"`` (N, n): the query's weights on each
        held-out sentence, ``"params"``.
    """
    data = load_corpus(task)
    rng = np.random.default_rng(seed)
    params = training.init_params(len(data.vocab), d_model, 1, rng)
    m = {name: np.zeros_like(p) for name, p in params.items()}
    v = {name: np.zeros_like(p) for name, p in params.items()}
    for step in range(1, steps + 1):
        _, grads = training.loss_and_grads(params, training.sample_batch(data.train, rng), 1)
        lr = training.learning_rate(step, steps, d_model)
        for name in params:
            params[name], m[name], v[name] = reference.adam_step(params[name], grads[name],
                                                                 m[name], v[name], step, lr)
            params[name] *= 1 - lr * training.WEIGHT_DECAY
    accuracy, _ = training.evaluate(params, data.test, 1)
    _, _, weights = training.forward(params, data.test.tokens, 1)
    return {"accuracy": accuracy, "attention": weights[np.arange(len(data.test)), 0, data.test.query],
            "params": params}
