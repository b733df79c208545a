"""The lesson 08 check (adam_step).

Wrong versions are written here the way a learner might write them, independently of
the mistake catalogue in helpers/exercises/lesson08.py; each must get its specific
message, on the visible and on the hidden cases. Correct versions written in other
ways must pass. Both tables (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``) are run in
test_checks_versions.py. (That every catalogued mistake is named by its own message is
checked for the whole catalogue at once, in test_catalogue.py.)
"""

import math

import numpy as np
import pytest

from helpers import reference
from helpers.exercises import EXERCISES, LESSONS, lesson08

EXERCISE = EXERCISES["adam_step"]


def adam_loop(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    """Entry by entry, with math (right)."""
    param, m, v = param.copy(), m.copy(), v.copy()
    for i in np.ndindex(param.shape):
        m[i] = beta1 * m[i] + (1 - beta1) * grad[i]
        v[i] = beta2 * v[i] + (1 - beta2) * grad[i] * grad[i]
        param[i] -= lr * (m[i] / (1 - beta1 ** t)) / (math.sqrt(v[i] / (1 - beta2 ** t)) + eps)
    return param, m, v


def adam_lerp(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    """Averages written as m + (1 - beta) (grad - m), on copies updated in place (right)."""
    m = m.copy()
    m += (1 - beta1) * (grad - m)
    v = v.copy()
    v += (1 - beta2) * (np.square(grad) - v)
    step = lr * (m / (1 - np.power(beta1, t))) / (np.sqrt(v / (1 - np.power(beta2, t))) + eps)
    return param - step, m, v


def adam_list(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    """Returns a list instead of a tuple, and ** 0.5 for the root (right: three values in order)."""
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return [param - lr * m_hat / (v_hat ** 0.5 + eps), m, v]


RIGHT = {"loop over entries": adam_loop, "lerp form": adam_lerp, "returns a list": adam_list,
         "the lesson's own": reference.adam_step}


def no_correction(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    return param - lr * m / (np.sqrt(v) + eps), m, v


def t_from_zero(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    step = t - 1                                          # "steps are counted from 0"
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    return param - lr * (m / (1 - beta1 ** step)) / (np.sqrt(v / (1 - beta2 ** step)) + eps), m, v


def abs_not_square(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad                   # forgot the square
    return param - lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps), m, v


def in_place(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    m *= beta1
    m += (1 - beta1) * grad
    v *= beta2
    v += (1 - beta2) * grad ** 2
    param -= lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
    return param, m, v


def returns_hats(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    m = (beta1 * m + (1 - beta1) * grad) / (1 - beta1 ** t)
    v = (beta2 * v + (1 - beta2) * grad ** 2) / (1 - beta2 ** t)
    return param - lr * m / (np.sqrt(v) + eps), m, v


def eps_in_root(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    return param - lr * (m / (1 - beta1 ** t)) / np.sqrt(v / (1 - beta2 ** t) + eps), m, v


def plus_sign(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    return param + lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps), m, v


def fixed_lr(param, grad, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    return reference.adam_step(param, grad, m, v, t)      # passes only what it must


WRONG = {
    "no bias correction": (no_correction, "the bias correction is missing"),
    "t counted from 0": (t_from_zero, "the step count is off by one"),
    "grad not squared": (abs_not_square, "squared"),
    "eps inside the root": (eps_in_root, "eps is inside the square root"),
    "up the gradient": (plus_sign, "the step goes up the gradient"),
    "m_hat and v_hat returned": (returns_hats, "the returned m and v are the bias-corrected"),
    "arguments ignored": (fixed_lr, "is ignored"),
    "updates its inputs in place": (in_place, "in place"),
}


WRONG_BY_EXERCISE = {"adam_step": WRONG}
RIGHT_BY_EXERCISE = {"adam_step": RIGHT}


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_the_first_case_is_the_first_step_from_zero(hidden):
    first = EXERCISE.cases(hidden)[0]
    param, grad, m, v, t = first.args
    assert t == 1 and not m.any() and not v.any()


def test_the_lesson_is_registered_with_its_exercise():
    assert [e.name for e in LESSONS[lesson08.LESSON]] == ["adam_step"]
