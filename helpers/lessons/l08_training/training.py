"""Lesson 08: train the model of :mod:`.model`: the hyperparameters, AdamW, one loop, the entry point.

Read it top to bottom, like nanoGPT's ``train.py``. :func:`fit` is the course's one
training loop (lessons 09 and 10 call it with their own model and loss); :func:`train`
is lesson 08's entry point, :func:`evaluate` measures what it returns.
"""

import functools

import numpy as np

from ...threads import blas_threads
from . import corpus as corpus_module
from . import model

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


# ------------------------------------------------------------------- the optimizer
# Adam is ``reference.adam_step(param, grad, m, v, t, lr)``, five lines (lesson 08 reads
# them): running averages m of the gradient and v of its square (rates 0.9 and 0.999),
# bias-corrected, then a step of ``lr * m_hat / (sqrt(v_hat) + 1e-8)``. It returns the new
# ``(param, m, v)``; the loop uses its twin ``adam_step_in_place``, which writes them into
# the arrays it is given (the same numbers). Below: that twin, the step size at each step, the loop.
def adam_step_in_place(param, grad, m, v, t, lr, work, beta1=0.9, beta2=0.999, eps=1e-8):
    """``reference.adam_step``, writing the new values into ``param``, ``m`` and ``v`` themselves.

    The same operations in the same order, so the same numbers, bit for bit (a test checks
    it), but no new array: ``work`` is two scratch arrays shaped like ``param``. For
    :func:`fit`, which updates every entry of every parameter at once, a thousand times.
    No input checks.
    """
    scaled_grad, squared = work
    m *= beta1                                               # m = beta1 * m + (1 - beta1) * grad
    m += np.multiply(1 - beta1, grad, out=scaled_grad)
    v *= beta2                                               # v = beta2 * v + (1 - beta2) * grad ** 2
    np.square(grad, out=squared)
    squared *= 1 - beta2
    v += squared
    m_hat = np.divide(m, 1 - beta1 ** t, out=scaled_grad)    # bias corrections
    v_hat = np.divide(v, 1 - beta2 ** t, out=squared)
    np.sqrt(v_hat, out=v_hat)                                # param -= lr * m_hat / (sqrt(v_hat) + eps)
    v_hat += eps
    m_hat *= lr
    m_hat /= v_hat
    param -= m_hat


def learning_rate(step, steps, d_model):
    """The step size at ``step`` (1 to ``steps``): it falls linearly from its start towards 0.

    It starts at ``LEARNING_RATE * 32 / d_model``. Adam moves every entry of a matrix by
    about the step size, so a score, a sum over d_model products, can move up to
    d_model times that: a wider model needs smaller steps for the same change.
    """
    return LEARNING_RATE * 32 / d_model * (1 - (step - 1) / steps)


def _paths(tree, prefix=()):
    """The place of every array in ``tree`` (a dict of arrays, whose values may be lists of dicts)."""
    for key, value in (enumerate(tree) if isinstance(tree, list) else tree.items()):
        if isinstance(value, (dict, list)):
            yield from _paths(value, prefix + (key,))
        else:
            yield prefix + (key,)


def _at(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def fit(params, loss_and_grads, next_batch, steps, d_model):
    """Train ``params`` in place with AdamW: ``steps`` steps of one batch each.

    Adam treats every entry of every parameter on its own. So the loop keeps all the
    entries in one vector, ``flat`` (each array of ``params`` is then a view of its piece),
    and makes one Adam step per training step for all of them, in place
    (``adam_step_in_place``): the same numbers as one ``adam_step`` per array, with less
    work per step.

    Parameters
    ----------
    params : dict of ndarrays (a stack's ``"layers"`` may be a list of dicts of ndarrays)
    loss_and_grads : function (params, batch) -> (loss, grads), grads shaped as params
    next_batch : function () -> batch, called once per step (it draws from its own rng)
    steps : int
    d_model : int, sets the step size (:func:`learning_rate`)

    Returns
    -------
    ndarray, shape (steps,): the loss at each step (before that step's update)
    """
    paths = list(_paths(params))
    shapes = [_at(params, path).shape for path in paths]
    flat = np.concatenate([_at(params, path).ravel() for path in paths])   # every parameter's entries
    ends = np.cumsum([int(np.prod(shape)) for shape in shapes])[:-1]       # where each one's piece ends
    for path, shape, piece in zip(paths, shapes, np.split(flat, ends)):
        _at(params, path[:-1])[path[-1]] = piece.reshape(shape)   # params see flat's values, always
    m, v = np.zeros_like(flat), np.zeros_like(flat)           # Adam's running averages, entry by entry
    work = (np.empty_like(flat), np.empty_like(flat))         # Adam's scratch space
    losses = []
    with blas_threads():      # small matrices: one BLAS thread is fastest, busy machine or not
        for step in range(1, steps + 1):
            loss, grads = loss_and_grads(params, next_batch())
            grad = np.concatenate([_at(grads, path).ravel() for path in paths])   # in the order of flat
            lr = learning_rate(step, steps, d_model)
            adam_step_in_place(flat, grad, m, v, step, lr, work)    # adam_step, into flat itself
            flat *= 1 - lr * WEIGHT_DECAY                         # weight decay (as AdamW)
            losses.append(loss)
    return np.array(losses)


# ------------------------------------------------------------------- data
def sample_batch(split, rng, batch_size=BATCH_SIZE):
    """``batch_size`` sentences of ``split``, drawn at random (with replacement)."""
    pick = rng.integers(0, len(split), size=batch_size)
    return corpus_module.Split([split.sentences[i] for i in pick], split.tokens[pick],
                               split.query[pick], split.targets[pick], split.nouns[pick])


@functools.lru_cache(maxsize=None)
def load_corpus():
    """The corpus every run trains on (built once, then shared: do not change its arrays)."""
    return corpus_module.make_corpus(seed=CORPUS_SEED)


# ------------------------------------------------------------------- arguments
def _whole(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_arguments(where, num_heads, d_model, scale, steps, seed, dtype):
    """Raise a clear ValueError/TypeError for a bad size, scale, step count, seed or dtype."""
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
    if str(dtype) not in DTYPES and dtype not in (np.float64, np.float32):
        raise ValueError(f"{where}: dtype must be one of {DTYPES}, got {dtype!r}")


def make_config(task, *, seed, steps, d_model, num_heads, scale, dtype, position="learned",
                shifts=None, num_layers=1, readout="word"):
    """What a result records of how it was trained: everything needed to rebuild its model.

    A plain dict (it prints, pickles and compares like the rest of a result). Lesson 08's
    model has learned positions, one layer and a readout that names a word; lessons 09
    and 10 record their own ``position``/``shifts`` and ``num_layers``/``readout``.
    """
    return {"task": task, "seed": int(seed), "steps": int(steps), "d_model": int(d_model),
            "num_heads": int(num_heads), "num_layers": int(num_layers), "scale": bool(scale),
            "position": position, "shifts": None if shifts is None else tuple(int(k) for k in shifts),
            "readout": readout, "dtype": str(np.dtype(dtype))}


# ------------------------------------------------------------------- the entry point
def train(task, *, num_heads=1, d_model=32, scale=True, steps=None, seed=0, dtype="float64"):
    """Train lesson 08's model on a task; evaluate it on held-out sentences.

    Parameters
    ----------
    task : {"coreference", "two_relations"}
        "coreference": name the pronoun's noun. "two_relations": name it, and the sentence's subject.
    num_heads : int, divides d_model
    d_model : int
    scale : bool, divide the scores by ``sqrt(d_head)`` (True) or not
    steps : int or None, one batch each; None means the task's default (:data:`TASKS`)
    seed : int, sets the starting parameters and the batches: the same seed gives the same run
    dtype : "float64" or "float32"

    Returns
    -------
    dict
        ``"loss"`` (steps,); ``"accuracy"`` (held out); ``"attention_to_targets"``
        (num_relations, num_heads); ``"params"``; ``"corpus"``; ``"config"`` (:func:`make_config`).
    """
    if task not in TASKS:
        raise ValueError(f"train: unknown task {task!r}; the tasks are {sorted(TASKS)}")
    check_arguments("train", num_heads, d_model, scale, steps, seed, dtype)
    relations, default_steps = TASKS[task]
    steps = default_steps if steps is None else int(steps)
    data = load_corpus()
    rng = np.random.default_rng(seed)
    params = model.init_params(len(data.vocab), d_model, len(relations), rng, dtype)
    losses = fit(params, lambda p, batch: model.loss_and_grads(p, batch, num_heads, scale),
                 lambda: sample_batch(data.train, rng), steps, d_model)
    accuracy, attention = model.accuracy_on(params, data.test, num_heads, scale)
    return {"loss": losses, "accuracy": accuracy, "attention_to_targets": attention,
            "params": params, "corpus": data,
            "config": make_config(task, seed=seed, steps=steps, d_model=d_model, num_heads=num_heads,
                                  scale=scale, dtype=dtype)}


#: The steps :func:`train_with_W_q_start` looks at the attention weights before (0: at the start).
AT_STEPS = (0, 10, 50, 299)


def train_with_W_q_start(*, factor, scale, seed, steps=300, d_model=128, at_steps=AT_STEPS, looked_at=500):
    """:func:`train` on "coreference" (one head), with ``W_q`` started ``factor`` times its usual size.

    The same random numbers in the same order as ``train("coreference", d_model=d_model,
    scale=scale, steps=steps, seed=seed)``, so ``factor=1`` gives its very numbers. Before
    the update of each step in ``at_steps`` (0 is the start), it runs the model on the first
    ``looked_at`` held-out sentences and records how saturated the pronoun's attention row is.

    Parameters
    ----------
    factor : float > 0, multiplies the starting ``W_q`` (d_model, d_model)
    scale : bool, divide the scores by ``sqrt(d_k)`` (True) or not
    seed : int >= 0, sets the starting parameters and the batches
    steps : int > 0
    d_model : int > 0
    at_steps : tuple of ints in [0, steps), increasing
        The last update is step ``steps - 1``: what the weights are after it is not looked at.
    looked_at : int > 0, at most the held-out set's size: how many held-out sentences the
        weights are measured on

    The result has no ``"params"``: it is not for :func:`evaluate`.

    Returns
    -------
    dict
        ``"loss"`` (steps,); ``"accuracy"`` (held out, after training); ``"largest_weight"``
        (len(at_steps),): at each step of ``at_steps``, the pronoun row's largest attention
        weight, averaged over the ``looked_at`` sentences; ``"at_steps"``; ``"config"``
        (:func:`make_config`, plus ``"W_q_factor"``).
    """
    check_arguments("train_with_W_q_start", 1, d_model, scale, steps, seed, "float64")
    if isinstance(factor, (bool, np.bool_)) or not (isinstance(factor, (int, float, np.number))
                                                     and np.isfinite(factor) and factor > 0):
        raise ValueError(f"train_with_W_q_start: factor must be a positive finite number, got {factor!r}")
    if not (_whole(steps) and steps > 0):
        raise ValueError(f"train_with_W_q_start: steps must be a positive whole number, got {steps!r}")
    if not (isinstance(at_steps, (tuple, list)) and all(_whole(t) and 0 <= t < steps for t in at_steps)
            and all(a < b for a, b in zip(at_steps, at_steps[1:]))):
        raise ValueError(f"train_with_W_q_start: at_steps must be increasing whole numbers from 0 to "
                         f"steps - 1 = {steps - 1}, got {at_steps!r}")
    data = load_corpus()
    if not (_whole(looked_at) and 0 < looked_at <= len(data.test.tokens)):
        raise ValueError(f"train_with_W_q_start: looked_at must be a whole number from 1 to the "
                         f"{len(data.test.tokens)} held-out sentences, got {looked_at!r}")
    tokens, query = data.test.tokens[:looked_at], data.test.query[:looked_at]
    rng = np.random.default_rng(seed)
    params = model.init_params(len(data.vocab), d_model, 1, rng)
    params["W_q"] *= factor
    largest, step = [], [0]

    def loss_and_grads(p, batch):                    # the usual one, plus a look at the weights
        if step[0] in at_steps:
            _, _, w = model.forward(p, tokens, 1, scale)                   # (looked_at, 1, n, n)
            largest.append(w[np.arange(len(tokens)), 0, query].max(axis=-1).mean())
        step[0] += 1
        return model.loss_and_grads(p, batch, 1, scale)

    losses = fit(params, loss_and_grads, lambda: sample_batch(data.train, rng), steps, d_model)
    config = make_config("coreference", seed=seed, steps=steps, d_model=d_model, num_heads=1,
                         scale=scale, dtype="float64")
    return {"loss": losses, "accuracy": model.accuracy_on(params, data.test, 1, scale)[0],
            "largest_weight": np.array(largest), "at_steps": tuple(at_steps),
            "config": {**config, "W_q_factor": float(factor)}}


def evaluate(result, params=None):
    """The held-out accuracy of a :func:`train` result (with ``params`` in place of its own, if given)."""
    config = result["config"]
    params = result["params"] if params is None else params
    return model.accuracy_on(params, result["corpus"].test, config["num_heads"], config["scale"])[0]
