"""Lesson 08 exercise: ``adam_step``, one Adam update of one parameter array.

The reference is :func:`helpers.reference.adam_step` (the one ``helpers.training`` uses)::

    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    m_hat = m / (1 - beta1 ** t),  v_hat = v / (1 - beta2 ** t)
    return param - lr * m_hat / (sqrt(v_hat) + eps), m, v

How the cases make each known mistake show:

- the first case is the first step (``t = 1``, ``m = v = 0``), where the bias correction
  matters most (without it every entry moves by about 3.2 lr instead of lr) and
  where counting t from 0 divides by zero;
- then a later step with a state already built up (a mistake that updates with the
  old ``m``, ``v`` or returns them unchanged shows), explicit ``lr``, ``beta1`` and
  ``beta2`` different from the defaults (a function that ignores them, or swaps the
  betas, shows), gradients of size 1e-6 (where ``eps`` inside the square root changes
  the step a hundredfold), and a vector and a 3-D array (any shape must work).

Tolerances: ``rtol=1e-6, atol=1e-15`` (``m`` and ``v`` are as small as 1e-15 in the
small-gradient case). Any order of the same operations agrees to about 1e-15.
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake

LESSON = "08_training"


def _state(rng, shape, scale):
    """A state a few steps into training: m ~ the gradient, v ~ its square (positive)."""
    m = 0.1 * scale * rng.standard_normal(shape)
    v = 0.01 * scale ** 2 * (rng.standard_normal(shape) ** 2 + 0.1)
    return m, v


def _case(rng, shape, t, label, scale=1.0, fresh=False, **kwargs):
    param = rng.standard_normal(shape)
    grad = scale * rng.standard_normal(shape)
    m, v = (np.zeros(shape), np.zeros(shape)) if fresh else _state(rng, shape, scale)
    return Case((param, grad, m, v, t), kwargs,
                label=f"{label}: param {shape}, t={t}"
                      + "".join(f", {k}={val}" for k, val in kwargs.items()))


def make_cases(rng, hidden):
    # (shape, t, label, scale, fresh, keyword arguments)
    specs = [
        ((3, 4), 1, "the first step (m = v = 0)", 1.0, True, {}),
        ((4, 3), 5, "a later step", 1.0, False, {}),
        ((2, 5), 3, "explicit hyperparameters", 1.0, False,
         {"lr": 0.1, "beta1": 0.8, "beta2": 0.99}),
        ((3, 3), 2, "tiny gradients (about 1e-6)", 1e-6, False, {}),
        ((6,), 100, "a vector", 1.0, False, {}),
        ((2, 3, 4), 1000, "a 3-D array", 0.5, False, {"lr": 3e-3}),
    ]
    if hidden:   # the grader's shapes and step counts, drawn afresh for each grading run
        size = lambda low, high: int(rng.integers(low, high + 1))
        rows, cols = (int(v) for v in rng.choice(np.arange(2, 7), size=2, replace=False))
        specs = [
            # large gradients: eps does not show here (the tiny-gradient case names eps mistakes)
            ((rows, cols), 1, "the first step (m = v = 0)", 50.0, True, {}),
            ((cols, rows), size(4, 10), "a later step", 1.0, False, {}),
            ((size(2, 5), size(2, 5)), size(2, 4), "explicit hyperparameters", 3.0, False,
             {"lr": 0.05, "beta1": 0.7, "beta2": 0.95}),
            ((size(2, 4), size(2, 4)), size(2, 5), "tiny gradients (about 1e-6)", 1e-6, False, {}),
            ((size(3, 9),), size(30, 80), "a vector", 1.0, False, {}),
            ((size(2, 4), size(2, 3), size(2, 3)), size(300, 800), "a 3-D array", 1.0, False,
             {"lr": 1e-3}),
        ]
    return [_case(rng, shape, t, label, scale, fresh, **kw)
            for shape, t, label, scale, fresh, kw in specs]


def _adam(param, grad, m, v, t, lr=1e-2, beta1=0.9,
          beta2=0.999, eps=1e-8, *, correct=True, t_offset=0, square=True,
          sqrt=True, eps_inside=False, swap_betas=False, ascend=False, return_hats=False,
          return_old=False, update_with_old=False, power_of_one_minus=False):
    """Adam with switchable mistakes (all defaults: the right answer)."""
    if swap_betas:
        beta1, beta2 = beta2, beta1
    m_new = beta1 * m + (1 - beta1) * grad
    v_new = beta2 * v + (1 - beta2) * (grad ** 2 if square else grad)
    m_use, v_use = (m, v) if update_with_old else (m_new, v_new)
    step = t + t_offset
    if not correct:
        m_hat, v_hat = m_use, v_use
    elif power_of_one_minus:
        m_hat, v_hat = m_use / (1 - beta1) ** step, v_use / (1 - beta2) ** step
    else:
        m_hat, v_hat = m_use / (1 - beta1 ** step), v_use / (1 - beta2 ** step)
    if eps_inside:
        denominator = np.sqrt(v_hat + eps)
    else:
        denominator = (np.sqrt(v_hat) if sqrt else v_hat) + eps
    update = lr * m_hat / denominator
    param_new = param + update if ascend else param - update
    if return_hats:
        return param_new, m_hat, v_hat
    if return_old:
        return param_new, m, v
    return param_new, m_new, v_new


def _mistake(message, **switches):
    return Mistake(message, lambda *args, **kwargs: _adam(*args, **kwargs, **switches))


def _efficient_form(param, grad, m, v, t, lr=1e-2, beta1=0.9,
                    beta2=0.999, eps=1e-8):
    """The Adam paper's "more efficient" order: the corrections folded into the step size."""
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    step_size = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    return param - step_size * m / (np.sqrt(v) + eps), m, v


def _defaults_only(param, grad, m, v, t, **ignored):
    """A function that ignores lr, beta1, beta2 and eps (always the defaults)."""
    return _adam(param, grad, m, v, t)


MISTAKES = [
    _mistake("the bias correction is missing: divide m by (1 - beta1**t) and v by "
             "(1 - beta2**t) before the update. At t = 1 both averages are still mostly the "
             "zeros they started from, so without it the first steps are far too big.",
             correct=False),
    _mistake("the step count is off by one: t counts from 1 (the first step has t = 1), so the "
             "first bias correction is 1 - beta**1, never 1 - beta**0 = 0.", t_offset=-1),
    _mistake("v must average the *squared* gradient, grad ** 2: it is the gradient's typical "
             "size, always positive (its square root is taken).", square=False),
    _mistake("the square root is missing: divide by sqrt(v_hat) + eps. v is the average "
             "*squared* gradient; its square root has the gradient's units, so the step is "
             "about lr whatever the gradient's size.", sqrt=False),
    _mistake("eps is inside the square root: use sqrt(v_hat) + eps, not sqrt(v_hat + eps). "
             "With tiny gradients (v_hat around 1e-12) the two differ a hundredfold.", eps_inside=True),
    _mistake("beta1 and beta2 are swapped: m (the gradient's average) uses beta1 = 0.9, "
             "v (the squared gradient's average) uses beta2 = 0.999.", swap_betas=True),
    _mistake("the step goes up the gradient: subtract lr * m_hat / (sqrt(v_hat) + eps) "
             "from param, to make the loss smaller.", ascend=True),
    _mistake("the returned m and v are the bias-corrected m_hat and v_hat: return the plain "
             "running averages m and v (the correction is applied afresh at every step).",
             return_hats=True),
    _mistake("the returned m and v are the old ones: return the updated running averages, "
             "so the next step starts from them.", return_old=True),
    _mistake("the update uses last step's m and v: first update m and v with this step's "
             "gradient, then use the new ones for the step.", update_with_old=True),
    _mistake("the bias correction is (1 - beta) ** t: it is 1 - (beta ** t), the part of the "
             "average that is not yet made of zeros.", power_of_one_minus=True),
    Mistake("eps is added to sqrt(v) before the bias correction (the Adam paper's faster form, "
            "which folds the corrections into the step size): that amounts to a different eps. "
            "Use the form of the lesson, sqrt(v_hat) + eps with v_hat already corrected.",
            _efficient_form),
    Mistake("lr, beta1, beta2 or eps is ignored: use the arguments the function is given "
            "(their defaults are only for when they are not).", _defaults_only),
]

EXERCISES = [
    Exercise(
        name="adam_step",
        lesson=LESSON,
        reference=reference.adam_step,
        make_cases=make_cases,
        mistakes=MISTAKES,
        outputs=("param", "m", "v"),
        rtol=1e-6,
        atol=1e-15,
    ),
]
