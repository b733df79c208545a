"""Central differences: the tests' plainly different way to get a gradient.

Written here, on purpose, not taken from the course (``helpers.reference`` has its own
``numerical_gradient`` for lesson 07): a hand-derived gradient is checked against a
method that shares no code with it.
"""

import numpy as np


def central_differences(f, x, eps=1e-6):
    """Gradient of the scalar ``f`` at ``x``: ``(f(x + eps e_i) - f(x - eps e_i)) / (2 eps)``.

    Parameters
    ----------
    f : callable, array of x's shape -> float
    x : ndarray, any shape
    eps : float

    Returns
    -------
    ndarray, x's shape, float64
    """
    grad = np.zeros_like(x, dtype=float)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        grad[i] = (f(plus) - f(minus)) / (2 * eps)
    return grad
