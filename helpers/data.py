"""Toy data for the lessons: sentences, token embeddings and weight matrices.

Everything is deterministic: the same word always gets the same embedding (its
vector is drawn from a random generator seeded by the word itself), so "the"
looks the same in every lesson and twice in one sentence.
"""

import zlib

import numpy as np

IT_SENTENCE = "the cat sat on the mat because it was tired"
CAT_SAT = "the cat sat"


def tokens(sentence):
    """Split a sentence into lowercase word tokens: ``"The cat sat" -> ["the", "cat", "sat"]``."""
    if not isinstance(sentence, str):
        raise TypeError(f"tokens: sentence must be a str, got {type(sentence).__name__}")
    words = sentence.lower().split()
    if not words:
        raise ValueError("tokens: the sentence has no words")
    return words


def embed(words, d_model=8, seed=0):
    """One embedding row per token.

    Parameters
    ----------
    words : list of str, length n
    d_model : int
        Embedding size.
    seed : int
        Changes every word's vector at once.

    Returns
    -------
    X : ndarray, shape (n, d_model), float64, entries ~ N(0, 1)
    """
    if isinstance(words, str):
        words = tokens(words)
    rows = [np.random.default_rng([zlib.crc32(w.encode()), seed]).standard_normal(d_model)
            for w in words]
    return np.stack(rows)                                    # (n, d_model)


def weight_matrix(d_in, d_out, seed=0):
    """A random "learned" matrix, shape (d_in, d_out), scaled by 1/sqrt(d_in).

    The scaling keeps ``X @ W`` at about unit variance when X has unit variance.
    """
    rng = np.random.default_rng(seed)
    return rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)


def qkv_weights(d_model, d_k, d_v=None, seed=0):
    """Three matrices W_q, W_k (d_model, d_k) and W_v (d_model, d_v)."""
    d_v = d_k if d_v is None else d_v
    return (weight_matrix(d_model, d_k, seed),
            weight_matrix(d_model, d_k, seed + 1),
            weight_matrix(d_model, d_v, seed + 2))
