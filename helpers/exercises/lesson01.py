"""Lesson 01 exercises: ``project_qkv`` and ``cross_project_qkv``.

project_qkv
    The cases mix a square case (d_model = d_k, where a transposed weight matrix
    still runs but gives wrong numbers, so the mistake can be named) with non-square
    ones (d_model, d_k and d_v all different, so a swapped argument cannot pass by luck).
cross_project_qkv
    The transfer exercise: queries from one sequence, keys and values from another.
    Every case has n_q != n_k and d_k != d_v, so each wrong choice of source gives
    its own shapes and numbers and can be named.

Both reject an answer computed in float32, with a message that names float32 and
asks for float64 (the lesson says so).
"""

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import distinct, sizer

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
    size = sizer(rng)
    d = size(3, 8)
    d_model, d_k, d_v = distinct(rng, 2, 10, 3)
    return [(size(2, 7), d, d, d, "square weights"),
            (size(2, 8), d_model, d_k, d_v, "non-square"),
            (size(1, 4), d_k, d_k, 1, "d_v = 1"),
            (size(8, 14), size(6, 12), size(2, 6), size(2, 7), "longer sentence"),
            (1, 2, 2, 2, "tiny")]


MISTAKES = [
    Mistake("Q, K and V were all computed with W_q. Each projection has its own matrix: "
            "Q = X @ W_q, K = X @ W_k, V = X @ W_v.",
            lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_q, X @ W_q)),
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

def _cross_case(rng, n_q, n_k, d_model, d_k, d_v, label):
    X_q = rng.standard_normal((n_q, d_model))
    X_kv = rng.standard_normal((n_k, d_model))
    W_q, W_k, W_v = (rng.standard_normal((d_model, d)) for d in (d_k, d_k, d_v))
    return Case((X_q, X_kv, W_q, W_k, W_v),
                label=f"{label}: X_q {X_q.shape}, X_kv {X_kv.shape}, W_q {W_q.shape}, "
                      f"W_k {W_k.shape}, W_v {W_v.shape}")


def make_cross_cases(rng, hidden):
    shapes = [  # (n_q, n_k, d_model, d_k, d_v)
        (3, 5, 4, 2, 3, "3 queries, 5 keys"),
        (6, 2, 5, 4, 1, "more queries than keys"),
        (1, 7, 3, 3, 2, "a single query"),
        (4, 9, 8, 4, 6, "a longer sentence to look at"),
    ]
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        few, many = sorted(distinct(rng, 2, 7, 2))
        d_model, d_k, d_v = distinct(rng, 2, 8, 3)
        shapes = [(few, many, d_model, d_k, d_v, f"{few} queries, {many} keys"),
                  (many, few, d_k, d_v, d_model, "more queries than keys"),
                  (1, size(3, 6), d_v, d_v, size(1, 4), "a single query"),
                  (size(3, 6), size(9, 13), size(6, 10), size(2, 5), size(2, 5), "a longer sentence")]
    return [_cross_case(rng, *shape) for shape in shapes]


_SOURCES = ("Queries come from X_q (the tokens that ask); keys and values from X_kv "
            "(the tokens that are looked at).")

CROSS_MISTAKES = [
    Mistake("all three came from X_q: that is self-attention on X_q. " + _SOURCES,
            lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_q @ W_k, X_q @ W_v)),
    Mistake("all three came from X_kv: that is self-attention on X_kv. " + _SOURCES,
            lambda X_q, X_kv, W_q, W_k, W_v: (X_kv @ W_q, X_kv @ W_k, X_kv @ W_v)),
    Mistake("the two sequences are swapped: Q came from X_kv, K and V from X_q. " + _SOURCES,
            lambda X_q, X_kv, W_q, W_k, W_v: (X_kv @ W_q, X_q @ W_k, X_q @ W_v)),
    Mistake("V came from X_q: each value must belong to a key, so V comes from X_kv, "
            "like K. " + _SOURCES,
            lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_kv @ W_k, X_q @ W_v)),
    Mistake("K came from X_q: the keys are what the *other* sequence offers. " + _SOURCES,
            lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_q @ W_k, X_kv @ W_v)),
    Mistake("K was computed with W_q (or V with W_k): each projection has its own matrix.",
            lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_kv @ W_q, X_kv @ W_v)),
    Mistake("V was computed with W_k: each projection has its own matrix, V uses W_v.",
            lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_kv @ W_k, X_kv @ W_k)),
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
    Exercise(
        name="cross_project_qkv",
        lesson=LESSON,
        reference=reference.cross_project_qkv,
        make_cases=make_cross_cases,
        mistakes=CROSS_MISTAKES,
        outputs=("Q", "K", "V"),
    ),
]
