"""Lesson 01 exercise: ``project_qkv``.

The cases mix a square case (d_model = d_k, where a transposed weight matrix still
runs but gives wrong numbers, so the mistake can be named) with non-square ones
(d_model, d_k and d_v all different, so a swapped argument cannot pass by luck).
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake

LESSON = "01_qkv_projections"


def _case(rng, n, d_model, d_k, d_v, label):
    X = rng.standard_normal((n, d_model))
    W_q = rng.standard_normal((d_model, d_k))
    W_k = rng.standard_normal((d_model, d_k))
    W_v = rng.standard_normal((d_model, d_v))
    return Case((X, W_q, W_k, W_v), label=f"{label}: X {X.shape}, W_q {W_q.shape}, "
                                           f"W_k {W_k.shape}, W_v {W_v.shape}")


def make_cases(rng, hidden):
    shapes = [  # (n, d_model, d_k, d_v)
        (3, 4, 4, 4, "square weights"),
        (5, 3, 2, 4, "non-square"),
        (1, 6, 3, 2, "a single token"),
        (7, 8, 8, 5, "d_v differs from d_k"),
    ]
    if hidden:
        shapes = _hidden_shapes(rng)
    return [_case(rng, *shape) for shape in shapes]


def _hidden_shapes(rng):
    """The grader's sizes, drawn afresh for each grading run; each case keeps its purpose."""
    size = lambda low, high: int(rng.integers(low, high + 1))
    d = size(3, 8)
    d_model, d_k, d_v = (int(v) for v in rng.choice(np.arange(2, 11), size=3, replace=False))
    return [(size(2, 7), d, d, d, "square weights"),
            (size(2, 8), d_model, d_k, d_v, "non-square"),
            (size(1, 4), d_k, d_k, 1, "d_v = 1"),
            (size(8, 14), size(6, 12), size(2, 6), size(2, 7), "longer sentence"),
            (1, 2, 2, 2, "tiny")]


MISTAKES = [
    Mistake("K was computed with W_q. Each projection has its own matrix: "
            "K must use W_k.",
            lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_q, X @ W_v)),
    Mistake("Q and K are swapped: Q must come from W_q and K from W_k.",
            lambda X, W_q, W_k, W_v: (X @ W_k, X @ W_q, X @ W_v)),
    Mistake("V was computed with W_k (or W_q). V must use W_v.",
            lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_k, X @ W_k)),
    Mistake("the weight matrices were used transposed (X @ W.T). A weight matrix is "
            "(d_model, d_k): X (n, d_model) @ W gives (n, d_k) as it is.",
            lambda X, W_q, W_k, W_v: (X @ W_q.T, X @ W_k.T, X @ W_v.T)),
    Mistake("the three results are in the wrong order: return (Q, K, V).",
            lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_v, X @ W_k)),
    Mistake("the result is transposed: (W.T @ X.T) has shape (d_k, n). "
            "Keep one row per token: X @ W.",
            lambda X, W_q, W_k, W_v: (W_q.T @ X.T, W_k.T @ X.T, W_v.T @ X.T)),
]

EXERCISES = [
    Exercise(
        name="project_qkv",
        lesson=LESSON,
        reference=reference.project_qkv,
        make_cases=make_cases,
        mistakes=MISTAKES,
        outputs=("Q", "K", "V"),
    ),
]
