"""Lesson 02 exercises: ``attention_scores`` and ``score_std``.

What a wrong version can look like, and how the cases tell them apart:

- the scale is a number, so every mistaken scale (none, ``d_k``, ``sqrt(n)``, a
  fixed ``sqrt(8)``, ...) is a different constant times ``Q @ K.T``. The cases use
  ``d_k``, ``n_q`` and ``n_k`` all different from each other and from the
  notebook's global ``d_model = 8`` and ``d_k = 4``, so each mistake gives its own
  numbers and can be named;
- ``attention_scores`` only receives ``Q`` and ``K``: ``d_model`` is not among its
  inputs. "Scaled by d_model" can only happen through the notebook's global
  variable ``d_model`` (= 8 in lessons 01-03), so that is the mistake named. The
  same holds for a function that uses the notebook's global ``d_k`` (= 4) instead
  of reading it from ``Q``;
- "K not transposed" (``Q @ K``) only runs when ``K`` is square, so the first case
  has ``n_k = d_k``: there the mistake gives numbers of the right shape and is
  named; on the other cases it raises a shape error.

``score_std(d_k, sigma)`` is the transfer exercise: the variance argument of the
lesson, redone for entries of standard deviation ``sigma`` instead of 1. Each
mistaken formula (the variance instead of the standard deviation, one factor of
sigma, no square root on d_k, ...) gives a different number on the first case
(d_k = 16, sigma = 3), so it can be named.

``attention_scores`` rejects a float32 answer, with a message naming float32 (the lesson says so).
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import rounded_uniform

LESSON = "02_scaled_scores"

#: The globals the lesson's notebook defines before its exercise (lesson 01's sizes): a
#: learner's function that reads them instead of ``Q.shape[-1]`` gives the answer for
#: these sizes. tests/test_catalogue.py reads them from the solution notebook and compares.
NOTEBOOK_D_MODEL = 8
NOTEBOOK_D_K = 4
NOTEBOOK_GLOBALS = {"d_model": NOTEBOOK_D_MODEL, "d_k": NOTEBOOK_D_K}


def _case(rng, n_q, n_k, d_k, label):
    Q = rng.standard_normal((n_q, d_k))
    K = rng.standard_normal((n_k, d_k))
    return Case((Q, K), label=f"{label}: Q {Q.shape}, K {K.shape}")


def make_cases(rng, hidden):
    shapes = [  # (n_q, n_k, d_k)
        (5, 9, 9, "K square (n_k = d_k)"),
        (3, 7, 6, "n_q, n_k, d_k all different"),
        (10, 10, 16, "self-attention, 10 tokens"),
        (1, 5, 2, "a single query"),
        (6, 4, 64, "d_k = 64"),
    ]
    if hidden:
        shapes = _hidden_shapes(rng)
    return [_case(rng, *shape) for shape in shapes]


#: Sizes a hidden d_k, n_q or n_k may take: none is a notebook global (d_model = 8,
#: d_k = 4), 16 (where sqrt(d_k) = 4), 1, or the square of another (sqrt(9) = 3 = d_k),
#: so that every mistaken scale shows.
_SIZES = [3, 5, 6, 7, 10, 11, 12, 13]


def _hidden_shapes(rng):
    """The grader's sizes, drawn afresh for each grading run; each case keeps its purpose."""
    n_q1, square, n_q, n_k, d_k, n = (int(v) for v in rng.choice(_SIZES, size=6, replace=False))
    n_q5, n_k5 = (int(v) for v in rng.choice(_SIZES, size=2, replace=False))
    return [(n_q1, square, square, "K square (n_k = d_k)"),
            (n_q, n_k, d_k, "n_q, n_k, d_k all different"),
            (n, n, int(rng.choice([24, 32, 48])), f"self-attention, {n} tokens"),
            (2, 3, 3, "tiny"),
            (n_q5, n_k5, 128, "d_k = 128")]


def _scaled(Q, K, scale):
    return (Q @ K.T) / scale


MISTAKES = [
    Mistake("the scores are not scaled: divide Q @ K.T by sqrt(d_k). Without it the "
            "scores grow with d_k and the softmax saturates (section 2).",
            lambda Q, K: Q @ K.T),
    Mistake("divided by d_k instead of sqrt(d_k). Dividing by d_k shrinks the scores too "
            "much: with independent queries and keys, as at initialisation, their variance becomes "
            "1/d_k and every softmax row turns almost uniform.",
            lambda Q, K: _scaled(Q, K, Q.shape[-1])),
    Mistake("multiplied by sqrt(d_k) instead of dividing by it.",
            lambda Q, K: (Q @ K.T) * np.sqrt(Q.shape[-1])),
    Mistake("scaled by the number of tokens n (Q.shape[0] or len(Q)). The scale depends "
            "on the vector size: d_k = Q.shape[-1], the number of columns.",
            lambda Q, K: _scaled(Q, K, np.sqrt(Q.shape[-2]))),
    Mistake("scaled by the number of keys n_k (K.shape[0] or len(K)). The scale depends "
            "on the vector size: d_k = Q.shape[-1], the number of columns.",
            lambda Q, K: _scaled(Q, K, np.sqrt(K.shape[-2]))),
    Mistake(f"scaled by sqrt(d_model) = sqrt({NOTEBOOK_D_MODEL}) (the notebook's global "
            f"d_model) instead of sqrt(d_k). The dot products are between vectors of size "
            f"d_k = Q.shape[-1]; read it from Q inside the function.",
            lambda Q, K: _scaled(Q, K, np.sqrt(NOTEBOOK_D_MODEL))),
    Mistake(f"scaled by sqrt({NOTEBOOK_D_K}): that is the notebook's global d_k, not this "
            f"input's. Read d_k from the input inside the function: d_k = Q.shape[-1].",
            lambda Q, K: _scaled(Q, K, np.sqrt(NOTEBOOK_D_K))),
    Mistake(f"divided by the notebook's global d_k = {NOTEBOOK_D_K}, and not by its square root: "
            f"use sqrt(d_k) with d_k = Q.shape[-1] read from the input.",
            lambda Q, K: _scaled(Q, K, NOTEBOOK_D_K)),
    Mistake("K is not transposed: Q @ K multiplies each query with the *columns* of K. "
            "Entry (i, j) must be the dot product of query i with key j (a row of K).",
            lambda Q, K: (Q @ K) / np.sqrt(Q.shape[-1])),
    Mistake("K is not transposed (and the scores are not scaled): Q @ K multiplies each "
            "query with the *columns* of K. Entry (i, j) must be q_i · k_j.",
            lambda Q, K: Q @ K),
    Mistake("the grid is transposed: K @ Q.T puts the keys in the rows. Row i must be "
            "query i, column j key j, so the shape is (n_q, n_k).",
            lambda Q, K: (K @ Q.T) / np.sqrt(Q.shape[-1])),
    Mistake("the grid is transposed and not scaled: row i must be query i, column j key j, "
            "and the scores divided by sqrt(d_k).",
            lambda Q, K: K @ Q.T),
]

def make_std_cases(rng, hidden):
    pairs = [(16, 3.0), (25, 0.5), (64, 1.0), (1, 2.0), (512, 0.1)]
    if hidden:   # the grader's values, drawn afresh for each grading run
        sigma = rounded_uniform(rng)
        pairs = [(int(rng.integers(20, 50)), sigma(1.5, 3.0)), (int(rng.integers(5, 15)), sigma(0.1, 0.4)),
                 (int(rng.choice([96, 128, 256])), 1.0), (1, sigma(3.0, 5.0)),
                 (int(rng.integers(700, 1500)), sigma(0.02, 0.08))]
    return [Case((d_k, sigma), label=f"d_k={d_k}, sigma={sigma}") for d_k, sigma in pairs]


STD_MISTAKES = [
    Mistake("that is the variance, d_k * sigma**4. The standard deviation is its square root.",
            lambda d_k, sigma=1.0: d_k * sigma ** 4),
    Mistake("one factor of sigma is missing: each term q_m * k_m multiplies two numbers of "
            "standard deviation sigma, so its variance is sigma**2 * sigma**2 = sigma**4.",
            lambda d_k, sigma=1.0: np.sqrt(d_k) * sigma),
    Mistake("d_k needs a square root: the d_k *variances* add up (to d_k * sigma**4), then "
            "take the square root of the total.",
            lambda d_k, sigma=1.0: d_k * sigma ** 2),
    Mistake("d_k is missing: q · k is a sum of d_k terms, and their variances add up. "
            "(sigma**2 is the standard deviation of the *scaled* score q · k / sqrt(d_k).)",
            lambda d_k, sigma=1.0: sigma ** 2),
    Mistake("sigma is ignored: sqrt(d_k) holds only for sigma = 1. With entries of standard "
            "deviation sigma each term q_m * k_m has variance sigma**4.",
            lambda d_k, sigma=1.0: np.sqrt(d_k)),
    Mistake("the variance of one term q_m * k_m is sigma**4 (sigma**2 for q_m times sigma**2 "
            "for k_m), not 2 * sigma**2: variances of independent factors multiply.",
            lambda d_k, sigma=1.0: np.sqrt(d_k * 2 * sigma ** 2)),
]

EXERCISES = [
    Exercise(
        name="score_std",
        lesson=LESSON,
        reference=reference.score_std,
        make_cases=make_std_cases,
        mistakes=STD_MISTAKES,
        outputs=("std",),
    ),
    Exercise(
        name="attention_scores",
        lesson=LESSON,
        reference=reference.attention_scores,
        make_cases=make_cases,
        mistakes=MISTAKES,
        outputs=("scores",),
    ),
]
