"""Lesson 09: the position-specific pieces of the training model (:mod:`helpers.training`).

Four ways for the model to know where each word is (``position=``):

=============== ========================================================================
``"none"``      ``X = tok[tokens]``: attention sees a bag of words
``"learned"``   ``X = tok[tokens] + pos``: one trained vector per position (lesson 08)
``"sinusoidal"``  ``X = tok[tokens] + sinusoidal_encoding(n, d_model)``: a fixed table
``"rope"``      ``X = tok[tokens]``; every head's q and k rotated by ``rope`` (never v)
=============== ========================================================================

Also: the shifted test sets (a sentence moved right by k filler words).
"""

import numpy as np

from . import reference
from .corpus import Split
from .reference.attention import scaled_dot_product_attention
from .reference.multi_head import merge_heads, split_heads

POSITIONS = ("none", "learned", "sinusoidal", "rope")
FILLER = "<filler>"   # the word a sentence is padded with when shifts are asked for


# ------------------------------------------------------------------ the embeddings
def embed(params, tokens, position):
    """The attention layer's input: word vectors, plus a position vector for two of the four ways.

    Parameters
    ----------
    params : dict with ``"tok"`` (vocab, d_model) and, for "learned", ``"pos"`` (n, d_model)
    tokens : int ndarray, shape (B, n)
    position : one of :data:`POSITIONS`

    Returns
    -------
    ndarray, shape (B, n, d_model)
    """
    X = params["tok"][tokens]                                   # (B, n, d_model)
    if position == "learned":
        return X + params["pos"][: tokens.shape[-1]]
    if position == "sinusoidal":
        table = reference.sinusoidal_encoding(tokens.shape[-1], X.shape[-1])
        return X + table.astype(X.dtype)
    return X                                                    # "none" and "rope"


# ------------------------------------------------------------------ attention with RoPE
def rope_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Multi-head attention (lesson 04) with every head's q and k rotated by ``rope``.

    Token t of each sentence is at position t. Returns ``(out (..., n, d_model),
    weights (..., num_heads, n, n))``, as ``multi_head_attention``.
    """
    positions = np.arange(X.shape[-2])
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))   # (..., h, n, d_head)
    Q, K = reference.rope(Q, positions), reference.rope(K, positions)   # rotate q and k only
    heads, weights = scaled_dot_product_attention(Q, K, V, mask)
    return merge_heads(heads) @ W_o, weights


def rope_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    """The gradients of ``sum(out * d_out)`` for :func:`rope_attention`.

    Lesson 07's backward pass, with one more step: the gradients reaching the rotated
    q and k go through ``rope_backward`` (the inverse rotation).

    Returns
    -------
    dict with ``"X"``, ``"W_q"``, ``"W_k"``, ``"W_v"``, ``"W_o"``, as
    ``multi_head_attention_backward``.
    """
    positions = np.arange(X.shape[-2])
    Q, K, V = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))
    Qr, Kr = reference.rope(Q, positions), reference.rope(K, positions)
    heads, weights = scaled_dot_product_attention(Qr, Kr, V, mask)
    merged = merge_heads(heads)                                 # (..., n, d_model)
    d_heads = split_heads(d_out @ W_o.T, num_heads)             # (..., h, n, d_head)
    dQr, dKr, dV = reference.attention_backward(Qr, Kr, V, weights, d_heads)
    dQ = merge_heads(reference.rope_backward(dQr, positions))   # undo the rotation
    dK = merge_heads(reference.rope_backward(dKr, positions))
    dV = merge_heads(dV)

    def summed(A, B):                                           # sum over sentences of A.T @ B
        return A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])

    return {"X": dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T,
            "W_q": summed(X, dQ), "W_k": summed(X, dK), "W_v": summed(X, dV),
            "W_o": summed(merged, d_out)}


def attention(position):
    """The forward and backward functions of the attention layer for ``position``."""
    if position == "rope":
        return rope_attention, rope_attention_backward
    return reference.multi_head_attention, reference.multi_head_attention_backward


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


_PADDED = {}


def shift_test(padded, corpus, k):
    """The held-out sentences of ``corpus`` moved right by k filler words, in ``padded``'s context."""
    length = padded.test.tokens.shape[1]
    return shift(corpus.test, k, length, padded.vocab.index(FILLER))


def check_arguments(position, shifts, d_model, num_heads):
    """Raise a clear ValueError/TypeError for a bad ``position`` or ``shifts`` of ``train_attention``."""
    where = "train_attention"
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
