"""Lesson 10's induction task: random letters in which a stretch repeats; name what comes next.

Each sequence has :data:`LENGTH` letters, all different, except that a segment of 3 to
5 letters appears twice, the second time ``offset`` places after the first::

    position   0 1 2 3 4 5 6 7 8 9 ...
    letters    q w k d m z a k d m ...        "k d m" repeats, offset 5
                                   ^
    the query: position 8 ("d"). Seen "d" before? At 3, and "m" came next, at 4:
    the answer is position 4 (the letter after the earlier "d").

The model answers by pointing, with a causal mask (each position sees itself and what
came before), from a query position inside the repeat (not its last letter). Because the
offset varies (and so does where the segment starts), the answer's position cannot be
found from the query's position alone.

The splits are :class:`helpers.lessons.l08_training.corpus.Split` objects: ``query`` is the query position,
``targets`` column 0 the position to point at and column 1 the earlier occurrence of the
query's letter (one to its left); ``nouns`` holds those two positions too (the two
positions the answer is made from, which ``ablate(..., "nouns")`` silences).
"""

import string

import numpy as np

from ..l08_training.corpus import Corpus, Split

LENGTH = 16                          # letters per sequence
VOCAB = list(string.ascii_lowercase) # 26 letters
SEGMENT = (3, 5)                     # the repeated segment's length, smallest and largest
TRAIN_SIZE, TEST_SIZE = 20000, 2000


def sample(rng):
    """One sequence: ``(letters (LENGTH,) ints, query, target, earlier)``."""
    tokens = rng.choice(len(VOCAB), LENGTH, replace=False)          # all different
    length = int(rng.integers(SEGMENT[0], SEGMENT[1] + 1))
    offset = int(rng.integers(length, LENGTH - length + 1))          # the copy follows the segment
    start = int(rng.integers(0, LENGTH - length - offset + 1))
    tokens[start + offset:start + offset + length] = tokens[start:start + length]
    query = start + offset + int(rng.integers(0, length - 1))        # not the repeat's last letter
    return tokens, query, query - offset + 1, query - offset


def _split(rows):
    tokens = np.stack([r[0] for r in rows])
    query, target, earlier = (np.array([r[i] for r in rows], dtype=int) for i in (1, 2, 3))
    pairs = np.stack([target, earlier], axis=1)
    return Split([" ".join(VOCAB[t] for t in row) for row in tokens], tokens, query, pairs, pairs.copy())


def make_corpus(seed=0, train_size=TRAIN_SIZE, test_size=TEST_SIZE):
    """Training and held-out sequences, drawn at random; no held-out sequence is in training.

    Returns
    -------
    helpers.lessons.l08_training.corpus.Corpus
        The vocabulary is the 26 letters.
    """
    rng = np.random.default_rng(seed)
    train = [sample(rng) for _ in range(train_size)]
    seen = {(r[0].tobytes(), r[1]) for r in train}
    test = []
    while len(test) < test_size:
        row = sample(rng)
        if (row[0].tobytes(), row[1]) not in seen:
            test.append(row)
    return Corpus(list(VOCAB), _split(train), _split(test))
