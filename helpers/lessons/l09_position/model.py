"""Lesson 09: lesson 08's model with four ways to know word order, and sentences shifted right.

Four ways for the model to know where each word is (``position=``):

=============== ========================================================================
``"none"``      ``X = tok[tokens]``: attention sees a bag of words
``"learned"``   ``X = tok[tokens] + pos``: one trained vector per position (lesson 08)
``"sinusoidal"``  ``X = tok[tokens] + sinusoidal_encoding(n, d_model)``: a fixed table
``"rope"``      ``X = tok[tokens]``; every head's q and k rotated by ``rope`` (never v)
=============== ========================================================================

The model is lesson 08's (:mod:`helpers.lessons.l08_training.model`): this module hands it
the embedding and the attention layer of each way. Also: the shifted test sets (a sentence
moved right by k filler words) and the entry point :func:`train`, which trains with lesson
08's loop (:func:`helpers.lessons.l08_training.fit`).
"""

import functools

import numpy as np

from ... import reference
from ...reference.attention import scaled_dot_product_attention
from ...reference.multi_head import merge_heads, split_heads
from ...reference.position import rope_split_halves
from ...threads import on_one_thread
from ..l08_training import model as l08
from ..l08_training import training as l08_training
from ..l08_training.corpus import SENTENCE_LENGTH, Split

POSITIONS = ("none", "learned", "sinusoidal", "rope")
FILLER = "<filler>"   # the word a sentence is padded with when shifts are asked for


# ------------------------------------------------------------------ the embeddings
def embed_words(params, tokens):
    """``tok[tokens]``: the word vectors alone, shape (B, n, d_model) ("none" and "rope")."""
    return params["tok"][tokens]


def embed_sinusoidal(params, tokens):
    """``tok[tokens] + sinusoidal_encoding(n, d_model)``: a fixed table added, shape (B, n, d_model)."""
    X = params["tok"][tokens]                                   # (B, n, d_model)
    return X + _sinusoidal_table(tokens.shape[-1], X.shape[-1], X.dtype.str)


@functools.lru_cache(maxsize=16)
def _sinusoidal_table(n, d_model, dtype):
    """The table, computed once per size (training adds it at every step). Read-only."""
    table = reference.sinusoidal_encoding(n, d_model).astype(dtype)
    table.flags.writeable = False
    return table


def embedding(position):
    """The embedding function ``(params, tokens) -> X`` of ``position``."""
    return {"none": embed_words, "learned": l08.embed, "sinusoidal": embed_sinusoidal,
            "rope": embed_words}[position]


# ------------------------------------------------------------------ attention with RoPE
def rope_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None, rotate=reference.rope):
    """Multi-head attention (lesson 04) with every head's q and k rotated by ``rope``.

    Token t of each sentence is at position t. Returns ``(out (..., n, d_model),
    weights (..., num_heads, n, n))``, as ``multi_head_attention``. ``rotate`` is the
    rotation (``rope_split_halves``: the other convention, see :func:`evaluate_split_halves`).
    """
    out, weights, _ = rope_attention_with_cache(X, W_q, W_k, W_v, W_o, num_heads, mask, rotate)
    return out, weights


def rope_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    """The gradients of ``sum(out * d_out)`` for :func:`rope_attention`.

    Lesson 07's backward pass, with one more step: the gradients reaching the rotated
    q and k go through ``rope_backward`` (the inverse rotation).

    Returns
    -------
    dict with ``"X"``, ``"W_q"``, ``"W_k"``, ``"W_v"``, ``"W_o"``, as
    ``multi_head_attention_backward``.
    """
    _, _, cache = rope_attention_with_cache(X, W_q, W_k, W_v, W_o, num_heads, mask)
    return rope_attention_backward_from_cache(d_out, cache)


def rope_attention_with_cache(X, W_q, W_k, W_v, W_o, num_heads, mask=None, rotate=reference.rope):
    """:func:`rope_attention`, keeping what its backward pass needs: ``(out, weights, cache)``.

    A training step runs the forward pass, then the backward pass on the same inputs:
    :func:`rope_attention_backward_from_cache` starts from ``cache`` instead of running
    the forward pass again (as lesson 08's layer, ``helpers.reference.backward``).
    """
    positions = np.arange(X.shape[-2])
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))   # (..., h, n, d_head)
    Qr, Kr = rotate(Q, positions), rotate(K, positions)                 # rotate q and k only
    heads, weights = scaled_dot_product_attention(Qr, Kr, V, mask)
    merged = merge_heads(heads)                                         # (..., n, d_model)
    cache = {"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o, "num_heads": num_heads,
             "rotate": rotate, "Qr": Qr, "Kr": Kr, "V": V, "weights": weights, "merged": merged}
    return merged @ W_o, weights, cache


def rope_attention_backward_from_cache(d_out, cache):
    """:func:`rope_attention_backward` from the cache of :func:`rope_attention_with_cache`."""
    if cache["rotate"] is not reference.rope:
        raise ValueError("rope_attention_backward_from_cache: only this course's convention "
                         "(reference.rope) has a backward pass here")
    X, W_q, W_k, W_v, W_o = (cache[name] for name in ("X", "W_q", "W_k", "W_v", "W_o"))
    positions = np.arange(X.shape[-2])
    d_heads = split_heads(d_out @ W_o.T, cache["num_heads"])    # (..., h, n, d_head)
    dQr, dKr, dV = reference.attention_backward(cache["Qr"], cache["Kr"], cache["V"], cache["weights"],
                                                d_heads)
    dQ = merge_heads(reference.rope_backward(dQr, positions))   # undo the rotation
    dK = merge_heads(reference.rope_backward(dKr, positions))
    dV = merge_heads(dV)

    def summed(A, B):                                           # sum over sentences of A.T @ B
        return A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])

    return {"X": dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T,
            "W_q": summed(X, dQ), "W_k": summed(X, dK), "W_v": summed(X, dV),
            "W_o": summed(cache["merged"], d_out)}


def attention(position):
    """The attention layer of ``position``: its (forward, backward) pair, as lesson 08's ``MULTI_HEAD``."""
    return (rope_attention_with_cache, rope_attention_backward_from_cache) if position == "rope" \
        else l08.MULTI_HEAD


# ------------------------------------------------------------------ the model
def init_params(vocab_size, d_model, num_relations, rng, dtype="float64", position="learned",
                n=SENTENCE_LENGTH):
    """Lesson 08's starting parameters; ``"pos"`` (n, d_model) only for ``position="learned"``."""
    return l08.init_params(vocab_size, d_model, num_relations, rng, dtype,
                           n if position == "learned" else None)


def forward(params, tokens, num_heads, scale=True, position="learned"):
    """Lesson 08's forward pass with ``position``'s embedding and attention: ``(X, out, weights)``."""
    return l08.forward(params, tokens, num_heads, scale, embedding(position), attention(position))


def loss_and_grads(params, batch, num_heads, scale=True, position="learned"):
    """Lesson 08's loss and gradients with ``position``'s embedding and attention."""
    return l08.loss_and_grads(params, batch, num_heads, scale, embedding(position), attention(position))


def accuracy_on(params, split, num_heads, scale=True, position="learned"):
    """Lesson 08's ``accuracy_on``: held-out accuracy and attention to the targets, for ``position``."""
    return l08.accuracy_on(params, split, num_heads, scale, embedding(position), attention(position))


def pronoun_accuracy(params, split, num_heads, scale=True, position="learned"):
    """:func:`accuracy_on`'s accuracy alone, from the pronoun's row only (:func:`pronoun_accuracy_on`)."""
    return pronoun_accuracy_on(params, split, num_heads, scale, position)[0]


def pronoun_accuracy_on(params, split, num_heads, scale=True, position="learned"):
    """:func:`accuracy_on` -- accuracy and attention to the targets -- with attention at the pronoun only.

    The readout reads one row of the layer's output, the pronoun's, and a row of attention
    needs only its own query (and every key and value). So the scores, weights and outputs
    of the other n - 1 rows are left out: this is what scores the held-out and the shifted
    test sets. A one-row product may round differently from the full one in the last bit,
    which could change an answer only at a near-tie of two words: on trained models the
    accuracy is :func:`accuracy_on`'s exactly (a test checks it).

    Returns
    -------
    accuracy : float
    attention_to_targets : ndarray, shape (num_relations, num_heads)
    """
    predicted, w_query = _at_the_pronoun(params, split, num_heads, scale, position)
    R, rows = len(params["W_out"]), np.arange(len(split))
    accuracy = float(np.mean(np.all(predicted == l08.answers(split, R), axis=1)))
    to_targets = np.stack([w_query[rows, :, split.targets[:, r]].mean(axis=0) for r in range(R)])
    return accuracy, to_targets


def pronoun_answers(params, split, num_heads, scale=True, position="learned"):
    """The word the readout names for each relation, (N, num_relations): the pronoun's row only."""
    return _at_the_pronoun(params, split, num_heads, scale, position)[0]


def _at_the_pronoun(params, split, num_heads, scale, position):
    """The readout's answers (N, num_relations) and the pronoun's attention weights (N, h, n)."""
    rows = np.arange(len(split))
    X = embedding(position)(params, split.tokens)                               # (N, n, d_model)
    W_q = params["W_q"] * l08.query_factor(X.shape[-1], num_heads, scale)
    q = split_heads(X[rows, split.query] @ W_q, num_heads)     # (h, N, d_head): the pronoun's query only
    K, V = (split_heads(X @ params[name], num_heads) for name in ("W_k", "W_v"))   # (N, h, n, d_head)
    if position == "rope":                    # as rope_attention: each q and k turned by its position
        q, K = reference.rope(q, split.query), reference.rope(K, np.arange(X.shape[-2]))
    heads, weights = scaled_dot_product_attention(np.swapaxes(q, 0, 1)[:, :, None], K, V)   # (N, h, 1, .)
    h = merge_heads(heads)[:, 0] @ params["W_o"]               # (N, d_model): the pronoun's output
    return np.argmax(h @ params["W_out"], axis=-1).T, weights[:, :, 0]   # (N, R), (N, h, n)


# ------------------------------------------------------------------ shifted sentences
def shift(split, k, length, filler):
    """Every sentence moved right by ``k`` filler words, then filler up to ``length`` words.

    Parameters
    ----------
    split : corpus.Split, sentences of n words
    k : int >= 0
    length : int >= n + k, the context every sentence is padded to
    filler : int, the filler word's index

    Returns
    -------
    corpus.Split with tokens (N, length) and every position (query, targets, nouns) + k
    """
    N, n = split.tokens.shape
    tokens = np.full((N, length), filler, dtype=split.tokens.dtype)
    tokens[:, k:k + n] = split.tokens
    words = [" ".join([FILLER] * k + [s] + [FILLER] * (length - n - k)) for s in split.sentences]
    return Split(words, tokens, split.query + k, split.targets + k, split.nouns + k)


_PADDED = {}     # (id(corpus), max_shift) -> the padded corpus


def padded_corpus(corpus, max_shift):
    """The corpus with a filler word added to its vocabulary and every sentence padded with it.

    Each sentence is followed by ``max_shift`` filler words (shift 0), so a model trained
    on it sees every position of the ``n + max_shift`` context (the filler too).

    Returns
    -------
    corpus.Corpus with ``vocab + [FILLER]`` and both splits padded; built once per max_shift.
    """
    key = (id(corpus), int(max_shift))
    if key not in _PADDED:
        filler, length = len(corpus.vocab), corpus.train.tokens.shape[1] + int(max_shift)
        _PADDED[key] = type(corpus)(corpus.vocab + [FILLER], shift(corpus.train, 0, length, filler),
                                    shift(corpus.test, 0, length, filler))
    return _PADDED[key]



def shift_test(padded, corpus, k):
    """The held-out sentences of ``corpus`` moved right by k filler words, in ``padded``'s context."""
    length = padded.test.tokens.shape[1]
    return shift(corpus.test, k, length, padded.vocab.index(FILLER))


def check_arguments(position, shifts, d_model, num_heads, where="train"):
    """Raise a clear ValueError/TypeError for a bad ``position`` or ``shifts`` of :func:`train`."""
    if position not in POSITIONS:
        raise ValueError(f"{where}: unknown position {position!r}; the ways are {list(POSITIONS)}")
    if position == "sinusoidal" and d_model % 2:
        raise ValueError(f"{where}: position='sinusoidal' needs an even d_model, got {d_model}")
    if position == "rope" and (d_model // num_heads) % 2:
        raise ValueError(f"{where}: position='rope' needs an even head size, got "
                         f"d_model // num_heads = {d_model // num_heads}")
    if shifts is None:
        return
    try:
        values = list(shifts)
    except TypeError:
        raise TypeError(f"{where}: shifts must be a sequence of whole numbers, got {shifts!r}") from None
    if not values or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0
                             for k in values):
        raise ValueError(f"{where}: shifts must be whole numbers >= 0 (at least one), got {shifts!r}")


def check_train(task, *, position="learned", shifts=None, num_heads=1, d_model=32, scale=True, steps=None,
                seed=0, dtype="float64"):
    """Raise a clear ValueError/TypeError for any bad argument of :func:`train` (its signature)."""
    if task not in l08_training.TASKS:
        raise ValueError(f"train: unknown task {task!r}; the tasks are {sorted(l08_training.TASKS)}")
    l08_training.check_arguments("train", num_heads, d_model, scale, steps, seed, dtype)
    check_arguments(position, shifts, d_model, num_heads)


# ------------------------------------------------------------------ the entry point
def train(task, *, position="learned", shifts=None, num_heads=1, d_model=32, scale=True, steps=None,
          seed=0, dtype="float64"):
    """Lesson 08's :func:`~helpers.lessons.l08_training.training.train`, with ``position`` and ``shifts``.

    Parameters
    ----------
    task, num_heads, d_model, scale, steps, seed, dtype : as lesson 08's ``train``
    position : {"learned", "none", "sinusoidal", "rope"}
    shifts : sequence of ints >= 0, or None
        Also measure the held-out accuracy with every sentence moved right by each shift
        (filler words before it). Training then pads each sentence with filler to
        ``n + max(shifts)`` words, so every position is trained.

    Returns
    -------
    dict
        As lesson 08's, its ``"config"`` with ``position`` and ``shifts``; with ``shifts``,
        also ``"accuracy_by_shift"``: dict shift -> held-out accuracy (every relation right), and
        ``"relation_accuracy_by_shift"``: dict shift -> (num_relations,) accuracy of each relation.
    """
    check_train(task, position=position, shifts=shifts, num_heads=num_heads, d_model=d_model, scale=scale,
                steps=steps, seed=seed, dtype=dtype)
    relations, default_steps = l08_training.TASKS[task]
    steps = default_steps if steps is None else int(steps)
    plain = l08_training.load_corpus()
    data = plain if shifts is None else padded_corpus(plain, max(shifts))
    n = data.train.tokens.shape[1]                            # 10 words, or 10 + max(shifts)
    rng = np.random.default_rng(seed)
    params = init_params(len(data.vocab), d_model, len(relations), rng, dtype, position, n)
    losses = l08_training.fit(params, lambda p, batch: loss_and_grads(p, batch, num_heads, scale, position),
                              lambda: l08_training.sample_batch(data.train, rng), steps, d_model)
    accuracy, attention_to_targets = pronoun_accuracy_on(params, data.test, num_heads, scale, position)
    result = {"loss": losses, "accuracy": accuracy, "attention_to_targets": attention_to_targets,
              "params": params, "corpus": data,
              "config": l08_training.make_config(task, seed=seed, steps=steps, d_model=d_model,
                                                 num_heads=num_heads, scale=scale, dtype=dtype,
                                                 position=position, shifts=shifts)}
    if shifts is not None:                                    # off the trained positions
        result["accuracy_by_shift"], result["relation_accuracy_by_shift"] = {}, {}
        for k in shifts:
            split = data.test if k == 0 else shift_test(data, plain, k)
            right = pronoun_answers(params, split, num_heads, scale, position) \
                == l08.answers(split, len(relations))              # (N, num_relations)
            result["accuracy_by_shift"][int(k)] = float(np.mean(np.all(right, axis=1)))
            result["relation_accuracy_by_shift"][int(k)] = np.mean(right, axis=0)
    return result


@on_one_thread       # a measurement on hundreds of sentences: one BLAS thread is fastest
def evaluate(result, params=None):
    """The held-out accuracy of a :func:`train` result (with ``params`` in place of its own, if given)."""
    config = result["config"]
    params = result["params"] if params is None else params
    return pronoun_accuracy(params, result["corpus"].test, config["num_heads"], config["scale"],
                            config["position"])


@on_one_thread       # a measurement on hundreds of sentences: one BLAS thread is fastest
def relation_accuracy(result, split=None):
    """Held-out accuracy of each relation on its own (``"accuracy"`` needs every relation right).

    Parameters
    ----------
    result : dict from :func:`train`
    split : corpus.Split, default ``result["corpus"].test`` (e.g. a shifted test set instead)

    Returns
    -------
    ndarray, shape (num_relations,): the share of sentences whose answer to each relation is right
    """
    config, params = result["config"], result["params"]
    split = result["corpus"].test if split is None else split
    predicted = pronoun_answers(params, split, config["num_heads"], config["scale"], config["position"])
    return np.mean(predicted == l08.answers(split, params["W_out"].shape[0]), axis=0)


# ------------------------------------------------------------------ the other RoPE convention
def rope_split_halves_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """:func:`rope_attention_with_cache`, pairs ``(x[i], x[i + d/2])`` (GPT-NeoX, Hugging Face's LLaMA)."""
    return rope_attention_with_cache(X, W_q, W_k, W_v, W_o, num_heads, mask, rotate=rope_split_halves)


@on_one_thread       # a measurement on hundreds of sentences: one BLAS thread is fastest
def evaluate_split_halves(result, params=None):
    """The held-out accuracy of a ``position="rope"`` result run in the split-halves convention.

    The same weights (or ``params``, same structure) in code that pairs ``(x[i], x[i + d/2])``
    instead of this course's ``(x[2i], x[2i+1])``: what a checkpoint computes when it is
    loaded into code of the other convention. Forward only (nothing is trained this way).
    """
    config = result["config"]
    if config["position"] != "rope":
        raise ValueError(f"evaluate_split_halves: the result was trained with position="
                         f"{config['position']!r}, not 'rope'")
    params = result["params"] if params is None else params
    return l08.accuracy_on(params, result["corpus"].test, config["num_heads"], config["scale"], embed_words,
                       (rope_split_halves_attention, None))[0]
