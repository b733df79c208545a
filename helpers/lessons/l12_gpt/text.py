"""Lesson 12's text: five Shakespeare plays as characters, the held-out split, batches, baselines.

The plays are in ``data/`` (their source and licence in ``data/README.md``). A character is a
token: the vocabulary is every character of the text, sorted (73 of them), and a string
becomes the list of their indices. The last 10 % of the text is held out.
"""

import functools
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data"
PLAYS = ("hamlet_gut.txt", "lear_gut.txt", "macbeth_gut.txt", "othello_gut.txt",
         "romeo_and_juliet_gut.txt")
HELD_OUT = 0.1          # the last tenth of the text is never trained on


@functools.lru_cache(maxsize=None)
def full_text():
    """The five plays joined, a blank line between two plays: one string (725,571 characters)."""
    return "\n\n".join((DATA / name).read_text(encoding="ascii") for name in PLAYS)


def corpus():
    """``(train_text, held_out_text)``: the first 90 % of :func:`full_text`, and the last 10 %."""
    text = full_text()
    cut = int(len(text) * (1 - HELD_OUT))
    return text[:cut], text[cut:]


def vocabulary():
    """Every character of the text, sorted: a string whose i-th character is token i."""
    return "".join(sorted(set(full_text())))


def encode(text, config):
    """The token ids of ``text``: an int64 array, shape (len(text),).

    ``config["vocab"]`` is the vocabulary (a string, character i = token i). A character that
    is not in it raises a ValueError naming it.
    """
    vocab = config["vocab"]
    index = {c: i for i, c in enumerate(vocab)}
    missing = sorted(set(text) - set(index))
    if missing:
        raise ValueError(f"encode: the characters {''.join(missing)!r} are not in the model's "
                         f"vocabulary of {len(vocab)} characters")
    return np.array([index[c] for c in text], dtype=np.int64)


def decode(ids, config):
    """The text of token ids (any iterable of ints)."""
    vocab = config["vocab"]
    return "".join(vocab[int(i)] for i in ids)


def sample_windows(ids, context, batch_size, rng):
    """A training batch: ``batch_size`` windows of ``context + 1`` consecutive tokens of ``ids``.

    Returns an int64 array (batch_size, context + 1): inputs are ``[:, :-1]``, the characters to
    predict ``[:, 1:]``. Each window starts at a position drawn uniformly at random.
    """
    starts = rng.integers(0, len(ids) - context, size=batch_size)
    return ids[starts[:, None] + np.arange(context + 1)]


def held_out_windows(ids, context):
    """The held-out text cut into non-overlapping windows of ``context + 1`` tokens (the last
    token of one window is the first of the next): an int64 array (count, context + 1).

    Every character after the first is predicted exactly once, from the characters before it
    in its window (0 to ``context - 1`` of them).
    """
    count = (len(ids) - 1) // context
    starts = np.arange(count) * context
    return ids[starts[:, None] + np.arange(context + 1)]


# ------------------------------------------------------------------- baselines
def unigram_loss(train_ids, held_ids, vocab_size, smoothing=1.0):
    """Held-out nats per character of the character frequencies of the training text.

    Add-``smoothing`` counts, so that a character never seen in training costs a finite amount.
    """
    counts = np.bincount(train_ids, minlength=vocab_size) + smoothing
    p = counts / counts.sum()
    return float(-np.mean(np.log(p[held_ids])))


def bigram_loss(train_ids, held_ids, vocab_size, smoothing=1.0):
    """Held-out nats per character of a bigram table: P(next | this) counted on the training text.

    Add-``smoothing`` counts in every row; the held-out text's first character is not scored
    (it has no previous character), as every later one is.
    """
    counts = np.full((vocab_size, vocab_size), smoothing)
    np.add.at(counts, (train_ids[:-1], train_ids[1:]), 1)
    p = counts / counts.sum(axis=1, keepdims=True)
    return float(-np.mean(np.log(p[held_ids[:-1], held_ids[1:]])))


def _context_keys(ids, k, vocab_size):
    """For each position i >= k: the k characters before it as one integer (base ``vocab_size``)."""
    key = np.zeros(len(ids) - k, dtype=np.int64)
    for j in range(k):
        key = key * vocab_size + ids[j:len(ids) - k + j]
    return key


def _count(keys, queries):
    """How many times each of ``queries`` occurs in ``keys`` (both int arrays)."""
    values, counts = np.unique(keys, return_counts=True)
    at = np.clip(np.searchsorted(values, queries), 0, len(values) - 1)
    return np.where(values[at] == queries, counts[at], 0)


def ngram_loss(train_ids, held_ids, vocab_size, n, smoothing=None):
    """Held-out nats per character of a character n-gram model counted on the training text.

    ``smoothing=None``: Witten-Bell interpolation (Witten & Bell 1991; Chen & Goodman 1999, eq. 6):
    ``P_k(w | h) = (c(h w) + u(h) P_{k-1}(w | h')) / (c(h) + u(h))``, with ``h'`` the context
    ``h`` without its first character and ``u(h)`` the number of distinct characters seen after
    ``h``; order 0 is the add-one unigram. ``smoothing=a``: add-``a`` counts on the
    ``(n - 1)``-character context alone. As :func:`bigram_loss`, the held-out text's first
    character is not scored; the next ``n - 2`` use the shorter contexts the text gives them.
    """
    V = vocab_size
    train_ids, held_ids = np.asarray(train_ids, np.int64), np.asarray(held_ids, np.int64)
    target = held_ids[1:]
    p = (np.bincount(train_ids, minlength=V) + 1.0) / (len(train_ids) + V)
    p = p[target]                                                   # order 0, for every scored position
    for k in range(1, n):
        if smoothing is not None and k < n - 1:
            continue
        pos = np.arange(1, len(held_ids))
        ok = pos >= k                                               # the text gives k characters of context
        h = np.zeros(len(target), dtype=np.int64)
        h[ok] = _context_keys(held_ids, k, V)[pos[ok] - k]
        hw = h * V + target
        train_h = _context_keys(train_ids, k, V)                    # context of train_ids[k:]
        train_hw = train_h * V + train_ids[k:]
        c_hw, c_h = _count(train_hw, hw), _count(train_h, h)
        if smoothing is not None:
            estimate = (c_hw + smoothing) / (c_h + smoothing * V)
        else:
            u = _count(np.unique(train_hw) // V, h)                 # distinct characters after h
            estimate = np.where(c_h > 0, (c_hw + u * p) / np.maximum(c_h + u, 1), p)
        p = np.where(ok, estimate, p)
    return float(-np.mean(np.log(p)))


def conditional_bigram_entropy(ids, vocab_size):
    """Nats per character of the best possible bigram table *for this text itself*: H(next | this).

    No model that looks only at the last character can score lower than this on ``ids``.
    """
    counts = np.zeros((vocab_size, vocab_size))
    np.add.at(counts, (ids[:-1], ids[1:]), 1)
    p = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    return float(-np.mean(np.log(p[ids[:-1], ids[1:]])))
