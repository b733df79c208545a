"""Lesson 08: train a one-layer attention model, in NumPy, to find what a pronoun refers to.

Read it top to bottom, like nanoGPT's ``train.py``: the hyperparameters, the model
(embeddings, one multi-head attention layer, a readout), its loss and gradients,
the optimizer (Adam), and one training loop. Nothing is hidden: the forward pass
is lesson 04's ``multi_head_attention`` and the backward pass lesson 07's
``multi_head_attention_backward`` (both from :mod:`helpers.reference`).

The model reads a ten-word sentence from :mod:`helpers.corpus` and answers, at the
pronoun, "which word do I refer to?" as a choice over the whole vocabulary::

    X      = tok[tokens] + pos                        (B, n, d_model)   embeddings
    out, w = multi_head_attention(X, W_q, W_k, W_v, W_o, h)             one attention layer
    logits = out[pronoun] @ W_out[r]                  (B, vocab)        one readout per relation
    loss   = cross-entropy(logits, the right word)

There is no residual connection, no MLP and no layer norm: the pronoun's output is
*only* its attention blend of the sentence's values, so the model can name the
right noun only by attending to it.

Entry point: :func:`train_attention` (the lesson, the tests and the benchmark use it).
Lesson 09 swaps ``+ pos`` for other ways to know word order (``position=``) and measures
the model on shifted sentences (``shifts=``): the pieces are in :mod:`helpers.positional`.
"""

import functools

import numpy as np

from . import corpus as corpus_module
from . import positional
from . import reference
from . import run_cache
from .threads import blas_threads

# ----------------------------------------------------------------- hyperparameters
BATCH_SIZE = 16            # sentences per step
LEARNING_RATE = 1e-2       # Adam's step size at d_model = 32 (see learning_rate)
WEIGHT_DECAY = 0.1         # each step multiplies every parameter by 1 - lr * WEIGHT_DECAY
CORPUS_SEED = 0            # the train/test split is the same for every run
TASKS = {
    # task: (the relations it asks about, default number of steps)
    "coreference": (corpus_module.RELATIONS[:1], 1000),     # the pronoun's noun
    "two_relations": (corpus_module.RELATIONS[:2], 1000),   # ... and the subject
}
DTYPES = ("float64", "float32")


# ----------------------------------------------------------------------- the model
def init_params(vocab_size, d_model, num_relations, rng, dtype="float64", position="learned",
                n=corpus_module.SENTENCE_LENGTH):
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
        ``"pos"`` only with ``position="learned"`` (lesson 09: n positions).
    """

    def normal(shape, std):
        return (std * rng.standard_normal(shape)).astype(dtype)

    params = {"tok": normal((vocab_size, d_model), np.sqrt(0.5))}
    if position == "learned":
        params["pos"] = normal((n, d_model), np.sqrt(0.5))
    for name in ("W_q", "W_k", "W_v", "W_o"):
        params[name] = normal((d_model, d_model), 1 / np.sqrt(d_model))
    params["W_out"] = normal((num_relations, d_model, vocab_size), 1 / np.sqrt(d_model))
    return params


def query_factor(d_model, num_heads, scale):
    """What ``W_q`` is multiplied by in the forward pass: 1, or ``sqrt(d_head)`` to undo the scaling.

    ``multi_head_attention`` divides every score by ``sqrt(d_head)``. Multiplying the
    queries by ``sqrt(d_head)`` first cancels it: the scores are then plain ``q . k``.
    """
    return 1.0 if scale else float(np.sqrt(d_model // num_heads))


def forward(params, tokens, num_heads, scale=True, position="learned"):
    """Embed the sentences and run the attention layer.

    Parameters
    ----------
    params : dict from :func:`init_params`
    tokens : int ndarray, shape (B, n)
    num_heads : int
    scale : bool
        False: scores are ``q . k``, not divided by ``sqrt(d_head)``.
    position : str
        How the model knows word order (lesson 09, :mod:`helpers.positional`).

    Returns
    -------
    X : ndarray, shape (B, n, d_model)     -- the layer's input
    out : ndarray, shape (B, n, d_model)   -- the layer's output
    weights : ndarray, shape (B, num_heads, n, n)
    """
    X = positional.embed(params, tokens, position)            # (B, n, d_model): tok + pos
    W_q = params["W_q"] * query_factor(X.shape[-1], num_heads, scale)
    attend, _ = positional.attention(position)                # multi_head_attention, or with RoPE
    out, weights = attend(X, W_q, params["W_k"], params["W_v"], params["W_o"], num_heads)
    return X, out, weights


def answers(split, num_relations):
    """The right words: ``tokens`` at each relation's target position, shape (B, num_relations)."""
    rows = np.arange(len(split.tokens))[:, None]              # (B, 1)
    return split.tokens[rows, split.targets[:, :num_relations]]


def loss_and_grads(params, batch, num_heads, scale=True, position="learned"):
    """Cross-entropy of the readout at the pronoun, and its gradient for every parameter.

    Parameters
    ----------
    params : dict from :func:`init_params`
    batch : corpus.Split
        The sentences to learn from (B of them).
    num_heads : int
    scale : bool

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
    X, out, _ = forward(params, batch.tokens, num_heads, scale, position)
    h = out[rows, batch.query]                                # (B, d_model): the pronoun's output
    probs = reference.softmax(h @ W_out)                      # (R, B, V)
    right = answers(batch, R).T                               # (R, B): index of the right word
    p_right = probs[np.arange(R)[:, None], rows, right]       # (R, B)
    loss = float(-np.mean(np.log(p_right)))
    # backward: the readout (lesson 08's loss_gradient, once per relation: the loss is
    # their mean), then the attention layer (lesson 07), then the embeddings (lesson 08)
    d_out, grads = np.zeros_like(out), {"W_out": np.zeros_like(W_out)}
    for r in range(R):
        d_out_r, grads["W_out"][r] = reference.loss_gradient(out, batch.query, right[r], W_out[r])
        d_out += d_out_r / R
    grads["W_out"] /= R
    factor = query_factor(X.shape[-1], num_heads, scale)
    _, attention_backward = positional.attention(position)
    g = attention_backward(X, params["W_q"] * factor, params["W_k"], params["W_v"], params["W_o"],
                           num_heads, d_out)
    grads["W_q"] = g["W_q"] * factor                          # chain rule through W_q * factor
    grads["W_k"], grads["W_v"], grads["W_o"] = g["W_k"], g["W_v"], g["W_o"]
    grads["tok"], d_pos = reference.embedding_gradient(batch.tokens, g["X"], len(params["tok"]))
    if "pos" in params:                                       # position="learned"
        grads["pos"] = d_pos                                  # (n, d_model)
    return loss, grads


# ------------------------------------------------------------------- the optimizer
# Adam is ``reference.adam_step(param, grad, m, v, t, lr)``, five lines (lesson 08 reads
# them): running averages m of the gradient and v of its square (rates 0.9 and 0.999),
# bias-corrected, then a step of ``lr * m_hat / (sqrt(v_hat) + 1e-8)``. It returns the new
# ``(param, m, v)``. Below: the step size it is given at each step.
def learning_rate(step, steps, d_model):
    """The step size at ``step`` (1 to ``steps``): it falls linearly from its start towards 0.

    It starts at ``LEARNING_RATE * 32 / d_model``. Adam moves every entry of a matrix by
    about the step size, so a score, a sum over d_model products, can move up to
    d_model times that: a wider model needs smaller steps for the same change.
    """
    return LEARNING_RATE * 32 / d_model * (1 - (step - 1) / steps)


# ------------------------------------------------------------- data and evaluation
def sample_batch(split, rng, batch_size=BATCH_SIZE):
    """``batch_size`` sentences of ``split``, drawn at random (with replacement)."""
    pick = rng.integers(0, len(split), size=batch_size)
    return corpus_module.Split([split.sentences[i] for i in pick], split.tokens[pick],
                               split.query[pick], split.targets[pick], split.nouns[pick])


def evaluate(params, split, num_heads, scale=True, position="learned"):
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
    _, out, weights = forward(params, split.tokens, num_heads, scale, position)
    predicted = np.argmax(out[rows, split.query] @ params["W_out"], axis=-1)   # (R, N)
    accuracy = float(np.mean(np.all(predicted.T == answers(split, R), axis=1)))
    w_query = weights[rows, :, split.query]                   # (N, h, n): the pronoun's rows
    attention = np.stack([w_query[rows, :, split.targets[:, r]].mean(axis=0) for r in range(R)])
    return accuracy, attention                                # attention: (R, h)


# ------------------------------------------------------------------ training
@functools.lru_cache(maxsize=None)
def load_corpus():
    """The corpus every run trains on (built once, then shared: do not change its arrays)."""
    return corpus_module.make_corpus(seed=CORPUS_SEED)


def _whole(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_model_arguments(where, num_heads, d_model, scale, steps, seed):
    """Raise a clear ValueError/TypeError for a bad size, scale, step count or seed."""
    for name, value in (("num_heads", num_heads), ("d_model", d_model)):
        if not _whole(value):
            raise TypeError(f"{where}: {name} must be a whole number, got {value!r}")
        if value <= 0:
            raise ValueError(f"{where}: {name} must be positive, got {name}={value}")
    if d_model % num_heads:
        raise ValueError(f"{where}: d_model={d_model} is not divisible by num_heads={num_heads}")
    if not isinstance(scale, (bool, np.bool_)):
        raise TypeError(f"{where}: scale must be True or False, got {scale!r}")
    if steps is not None and not (_whole(steps) and steps > 0):
        raise ValueError(f"{where}: steps must be a positive whole number or None, got {steps!r}")
    if not (_whole(seed) and seed >= 0):
        raise ValueError(f"{where}: seed must be a whole number >= 0, got {seed!r}")


def check_arguments(task, num_heads, d_model, scale, steps, seed, dtype):
    """Raise a clear ValueError/TypeError for a bad argument of :func:`train_attention`."""
    where = "train_attention"
    if task not in TASKS:
        raise ValueError(f"{where}: unknown task {task!r}; the tasks are {sorted(TASKS)}")
    check_model_arguments(where, num_heads, d_model, scale, steps, seed)
    if str(dtype) not in DTYPES and dtype not in (np.float64, np.float32):
        raise ValueError(f"{where}: dtype must be one of {DTYPES}, got {dtype!r}")


@run_cache.shared     # tests only: computed once per test run (helpers/run_cache.py)
@blas_threads()       # small matrices: one BLAS thread is fastest (helpers/threads.py)
def train_attention(task, *, num_heads=1, d_model=32, scale=True, steps=None, seed=0,
                    dtype="float64", position="learned", shifts=None, num_layers=1):
    """Train the one-layer attention model on a task; evaluate it on held-out sentences.

    Parameters
    ----------
    task : {"coreference", "two_relations"}
        "coreference": name the pronoun's noun. "two_relations": name it, and the sentence's subject.
    num_heads : int, divides d_model
    d_model : int
    scale : bool
        Divide the scores by ``sqrt(d_head)`` (True) or not.
    steps : int or None
        Training steps (one batch each); None means the task's default (:data:`TASKS`).
    seed : int
        Sets the starting parameters and the batches: the same seed gives the same run.
    dtype : "float64" or "float32"
        The floating type of every parameter and computation.
    position : {"learned", "none", "sinusoidal", "rope"}
        How the model knows word order (lesson 09; :mod:`helpers.positional`).
    shifts : sequence of ints >= 0, or None
        Lesson 09: also measure the held-out accuracy with every sentence moved right by
        each shift (filler words before it). Training then pads each sentence with filler
        to ``n + max(shifts)`` words, so every position is trained.

    Returns
    -------
    dict
        ``"loss"``: ndarray (steps,), the training loss at each step;
        ``"accuracy"``: float, on the held-out sentences;
        ``"attention_to_targets"``: ndarray (num_relations, num_heads), on the held-out
        sentences: the pronoun's mean weight, in each head, on each relation's word;
        ``"params"``: the trained parameters; ``"corpus"``: the corpus (vocabulary, splits);
        with ``shifts``, ``"accuracy_by_shift"``: dict shift -> held-out accuracy.

    Lesson 10: the tasks ``"adjective"`` and ``"induction"``, and ``num_layers`` (a stack
    of layers with residual connections, answering by pointing), are in :mod:`helpers.layers`.
    """
    if task in ("adjective", "induction") or num_layers != 1:       # lesson 10
        from . import layers
        return layers.train(task, num_heads=num_heads, d_model=d_model, scale=scale, steps=steps,
                            seed=seed, num_layers=num_layers, dtype=dtype, position=position)
    check_arguments(task, num_heads, d_model, scale, steps, seed, dtype)
    positional.check_arguments(position, shifts, d_model, num_heads)
    relations, default_steps = TASKS[task]
    steps = default_steps if steps is None else int(steps)
    data = load_corpus() if shifts is None else positional.padded_corpus(load_corpus(), max(shifts))
    n = data.train.tokens.shape[1]                            # 10 words, or 10 + max(shifts)
    rng = np.random.default_rng(seed)
    params = init_params(len(data.vocab), d_model, len(relations), rng, dtype, position, n)
    m = {name: np.zeros_like(p) for name, p in params.items()}
    v = {name: np.zeros_like(p) for name, p in params.items()}
    losses = []
    for step in range(1, steps + 1):
        batch = sample_batch(data.train, rng)
        loss, grads = loss_and_grads(params, batch, num_heads, scale, position)
        lr = learning_rate(step, steps, d_model)
        for name in params:
            params[name], m[name], v[name] = reference.adam_step(params[name], grads[name],
                                                                 m[name], v[name], step, lr)
            params[name] *= 1 - lr * WEIGHT_DECAY             # weight decay (as AdamW)
        losses.append(loss)
    accuracy, attention = evaluate(params, data.test, num_heads, scale, position)
    result = {"loss": np.array(losses), "accuracy": accuracy, "attention_to_targets": attention,
              "params": params, "corpus": data}
    if shifts is not None:                                    # lesson 09: off the trained positions
        result["accuracy_by_shift"] = {
            int(k): accuracy if k == 0 else evaluate(params, positional.shift_test(data, load_corpus(), k),
                                                     num_heads, scale, position)[0] for k in shifts}
    return result


def ablate(result, layer, at):
    """Lesson 10: held-out accuracy with a layer's update removed at "pronoun" or "nouns".

    See :func:`helpers.layers.ablate`.
    """
    from . import layers
    return layers.ablate(result, layer, at)
