"""Lesson 08: the model's backward glue, around lesson 07's attention backward pass.

Part of :mod:`helpers.reference` (see its docstring for the conventions). The model
of lesson 08 (``helpers.lessons.l08_training.model``) is::

    X      = tok[tokens] + pos                     (B, n, d_model)
    out, _ = multi_head_attention(X, ...)          (B, n, d_model)
    logits = out[b, query[b]] @ W_out              (B, V)   read at each sentence's pronoun
    L      = -mean_b log softmax(logits)[b, right[b]]

:func:`loss_gradient` takes ``L`` back to ``out`` and ``W_out``; lesson 07's
``multi_head_attention_backward`` takes ``d_out`` to ``dX``; :func:`embedding_gradient`
takes ``dX`` back to the two embedding tables.
"""

import numpy as np

from ..validation import as_float_array, shape_str
from .attention import softmax


def _indices(where, name, values, length, upper):
    """``values`` as an int array of shape ``(length,)`` with entries in ``[0, upper)``, or raise."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        raise TypeError(f"{where}: {name} must hold whole numbers (indices), got dtype {values.dtype}")
    if values.shape != (length,):
        raise ValueError(f"{where}: {name} must have shape ({length},), one per sentence, "
                         f"got {shape_str(values.shape)}")
    if values.size and (values.min() < 0 or values.max() >= upper):
        raise ValueError(f"{where}: every entry of {name} must be in 0..{upper - 1}, "
                         f"got {values.min()}..{values.max()}")
    return values


def loss_gradient(out, query, right, W_out):
    """The loss's gradient for the layer's output and the readout.

    The loss is ``L = -mean_b log p_b[right[b]]`` with
    ``p_b = softmax(out[b, query[b]] @ W_out)``: each sentence is read at one position
    only (its pronoun). With ``d_logits = (p - onehot(right)) / B``:
    ``dW_out = h.T @ d_logits`` for ``h = out[b, query[b]]``, and ``d_out`` is
    ``d_logits @ W_out.T`` at each sentence's pronoun, 0 at every other position.

    Parameters
    ----------
    out : ndarray, shape (B, n, d_model)
    query : int ndarray, shape (B,)
        The position read in each sentence.
    right : int ndarray, shape (B,)
        The index (in the vocabulary) of each sentence's right word.
    W_out : ndarray, shape (d_model, V)

    Returns
    -------
    (d_out, dW_out) : ndarrays of shapes (B, n, d_model) and (d_model, V), the dtype of ``out``.
    """
    where = "loss_gradient"
    out = as_float_array(where, "out", out, min_ndim=3)
    W_out = as_float_array(where, "W_out", W_out, min_ndim=2)
    if out.ndim != 3 or W_out.ndim != 2:
        raise ValueError(f"{where}: out must be (B, n, d_model) and W_out (d_model, V), got "
                         f"out {shape_str(out.shape)}, W_out {shape_str(W_out.shape)}")
    B, n, d_model = out.shape
    if W_out.shape[0] != d_model:
        raise ValueError(f"{where}: W_out must have d_model={d_model} rows, like out's last axis "
                         f"(out {shape_str(out.shape)}, W_out {shape_str(W_out.shape)})")
    query = _indices(where, "query", query, B, n)
    right = _indices(where, "right", right, B, W_out.shape[1])
    rows = np.arange(B)
    h = out[rows, query]                                   # (B, d_model): each pronoun's output
    d_logits = softmax(h @ W_out)                          # (B, V): the probabilities p ...
    d_logits[rows, right] -= 1                             # ... - onehot(right)
    d_logits /= B                                          # the loss is a mean over B sentences
    d_out = np.zeros_like(out)                             # (B, n, d_model): 0 at every word ...
    d_out[rows, query] = d_logits @ W_out.T                # ... but each sentence's pronoun
    return d_out, (h.T @ d_logits).astype(out.dtype, copy=False)


def embedding_gradient(tokens, dX, vocab_size):
    """The gradients of the two embedding tables of ``X = tok[tokens] + pos``.

    ``tok[tokens]`` is ``one_hot(tokens) @ tok``, so ``d_tok = one_hot(tokens).T @ dX``:
    each word's row is the *sum* of ``dX`` over every place the word appears (twice in a
    sentence, or in several sentences). ``pos`` is added to every sentence, so ``d_pos``
    is ``dX`` summed over the sentences.

    Parameters
    ----------
    tokens : int ndarray, shape (B, n)
    dX : ndarray, shape (B, n, d_model)
    vocab_size : int

    Returns
    -------
    (d_tok, d_pos) : ndarrays of shapes (vocab_size, d_model) and (n, d_model), the dtype of ``dX``.
    """
    where = "embedding_gradient"
    dX = as_float_array(where, "dX", dX, min_ndim=3)
    tokens = np.asarray(tokens)
    if tokens.dtype.kind not in "iu":
        raise TypeError(f"{where}: tokens must hold whole numbers (word indices), got dtype {tokens.dtype}")
    if dX.ndim != 3 or tokens.shape != dX.shape[:2]:
        raise ValueError(f"{where}: tokens must be (B, n) and dX (B, n, d_model), got "
                         f"tokens {shape_str(tokens.shape)}, dX {shape_str(dX.shape)}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(f"{where}: every token must be in 0..{vocab_size - 1} "
                         f"(vocab_size={vocab_size}), got {tokens.min()}..{tokens.max()}")
    d_tok = np.zeros((vocab_size, dX.shape[-1]), dtype=dX.dtype)
    np.add.at(d_tok, tokens.ravel(), dX.reshape(-1, dX.shape[-1]))   # a repeated word adds up
    return d_tok, dX.sum(axis=0)
