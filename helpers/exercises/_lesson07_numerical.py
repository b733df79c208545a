"""Lesson 07's ``numerical_gradient`` exercise: its cases and known mistakes.

Kept apart from :mod:`helpers.exercises.lesson07` (which lists it among the lesson's
exercises) so that each module stays short. How the cases make each mistake show:

numerical_gradient
    ``f`` is a function in every case. The first case passes ``eps=1e-2`` to a cubic,
    where a central difference is ``3 x^2 + eps^2`` but a forward one is off by
    ``3 x eps``; then a function whose entries interact (``(sum x)^2``, where a
    nudge that is not undone shifts every later entry, and nudging all entries at once
    gives the same number everywhere), an explicit ``eps`` on ``sin(10 x)`` (whose
    third derivative is large, so a function that ignores ``eps`` differs), a 3-D
    ``x`` and a real attention loss at the default ``eps``.
    Tolerances: ``rtol=1e-6, atol=1e-8``. Every central difference with the given
    ``eps`` agrees with the reference up to rounding (about 1e-9 on these cases),
    whatever way it is written; a forward difference is off by about ``eps * f'' / 2``,
    which these cases make at least 1e-4. A function that changes ``x`` in place is
    caught by the check itself (:func:`helpers.checking.changed_inputs`).
"""

import numpy as np

from .. import reference
from ..checking import Case, Mistake
from ._cases import distinct, sizer


# ------------------------------------------------------------------ numerical_gradient
def cubic(x):
    """f(x) = sum(x^3). Its gradient is 3 x^2; a central difference gives 3 x^2 + eps^2."""
    return float(np.sum(x ** 3))


def squared_total(x):
    """f(x) = (sum x)^2: every entry interacts with every other; gradient 2 sum(x) everywhere."""
    return float(np.sum(x) ** 2)


def sine_10x(x):
    """f(x) = sum(sin(10 x)): large second and third derivatives (100 and 1000 times)."""
    return float(np.sum(np.sin(10 * x)))


def log_sum_exp(x):
    """f(x) = log(sum(exp(x))), computed stably; its gradient is softmax(x)."""
    m = np.max(x)
    return float(m + np.log(np.sum(np.exp(x - m))))


def _attention_loss(rng, n_q, n_k, d_k, d_v):
    """f(Q) = sum(attention(Q, K, V)[0] * d_out) for fixed K, V, d_out: a real training loss."""
    K, V = rng.standard_normal((n_k, d_k)), rng.standard_normal((n_k, d_v))
    d_out = rng.standard_normal((n_q, d_v))

    def attention_loss(Q):
        return float(np.sum(reference.scaled_dot_product_attention(Q, K, V)[0] * d_out))

    return attention_loss


def make_numerical_gradient_cases(rng, hidden):
    # The grader's sizes are drawn afresh for each grading run.
    size = sizer(rng) if hidden else None
    n_q, d_k = (size(2, 4), size(2, 4)) if hidden else (2, 4)
    cases = [  # (f, x, eps or None, label)
        (cubic, rng.standard_normal(distinct(rng, 2, 4) if hidden else (2, 3)) + 1.5, 1e-2,
         "f(x) = sum(x**3), eps=1e-2"),
        (squared_total, rng.standard_normal(size(3, 7) if hidden else 4), 1e-2,
         "f(x) = sum(x)**2, eps=1e-2"),
        (sine_10x, rng.standard_normal((2, size(2, 3)) if hidden else (2, 2)) * 0.3,
         3e-2 if hidden else 2e-2, f"f(x) = sum(sin(10 x)), eps={3e-2 if hidden else 2e-2:g}"),
        (log_sum_exp, rng.standard_normal((2, size(2, 3), 2) if hidden else (2, 2, 3)), None,
         "f(x) = log(sum(exp(x))) on a 3-D x, default eps"),
        (_attention_loss(rng, n_q, size(3, 5), d_k, size(2, 4)) if hidden
         else _attention_loss(rng, 2, 3, 4, 2),
         rng.standard_normal((n_q, d_k)), None, "an attention loss of Q, default eps"),
    ]
    return [Case((f, x), {} if eps is None else {"eps": eps},
                 label=f"{label}, x {x.shape}") for f, x, eps, label in cases]


def _differences(f, x, eps=1e-6, *, kind="central", undo=True):
    """Finite differences with one switch per mistake (always on a copy of x)."""
    work = np.array(x, dtype=float)
    grad = np.zeros_like(work)
    for i in np.ndindex(*work.shape):
        old = work[i]
        work[i] = old + eps
        up = f(work)
        work[i] = old - eps
        down = f(work)
        work[i] = old if undo else old - eps
        if kind == "forward":
            grad[i] = (up - f(work)) / eps
        elif kind == "backward":
            grad[i] = (f(work) - down) / eps
        else:
            grad[i] = (up - down) / {"central": 2 * eps, "over eps": eps, "no division": 1.0}[kind]
    return grad


def _all_at_once(f, x, eps=1e-6):
    return np.full(np.shape(x), (f(x + eps) - f(x - eps)) / (2 * eps))


NUMERICAL_GRADIENT_MISTAKES = [
    Mistake("a one-sided (forward) difference, (f(x + eps) - f(x)) / eps: its error shrinks "
            "only like eps (here eps * f''/2 is visible). The central difference "
            "(f(x + eps) - f(x - eps)) / (2 eps) cancels that term: its error is O(eps^2).",
            lambda f, x, eps=1e-6: _differences(f, x, eps, kind="forward")),
    Mistake("a one-sided (backward) difference, (f(x) - f(x - eps)) / eps: its error shrinks "
            "only like eps. Use the central difference (f(x + eps) - f(x - eps)) / (2 eps).",
            lambda f, x, eps=1e-6: _differences(f, x, eps, kind="backward")),
    Mistake("divided by eps instead of 2 * eps: the two points x + eps and x - eps are 2 eps "
            "apart, so every entry came out twice too large.",
            lambda f, x, eps=1e-6: _differences(f, x, eps, kind="over eps")),
    Mistake("the difference f(x + eps) - f(x - eps) was not divided by 2 * eps.",
            lambda f, x, eps=1e-6: _differences(f, x, eps, kind="no division")),
    Mistake("every entry of x was nudged at once (x + eps): that measures the slope along "
            "the all-ones direction, the same number for every entry. Nudge one entry at a "
            "time, on a copy of x.",
            _all_at_once),
    Mistake("after each entry the nudge was not undone: every later entry was measured at "
            "a point where the earlier ones are still moved by -eps. Put the entry back "
            "(x_copy[i] = old) before going on to the next.",
            lambda f, x, eps=1e-6: _differences(f, x, eps, undo=False)),
    Mistake("the result is what central differences with a tiny step (eps=1e-6) give, or the "
            "exact derivative, not the two-point central difference with the eps the function "
            "was given (its error, about eps**2 * f'''(x) / 6, shows here). Either the eps "
            "argument is ignored, or a more accurate formula (five points) was used: use "
            "(f(x + eps) - f(x - eps)) / (2 eps) with the eps you are given.",
            lambda f, x, eps=1e-6: _differences(f, x, 1e-6)),
    Mistake("the gradient was flattened: return it with the shape of x (e.g. build it with "
            "np.zeros_like(x) and fill it entry by entry).",
            lambda f, x, eps=1e-6: _differences(f, x, eps).ravel()),
]
