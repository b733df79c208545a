"""Lesson 08: one step of the Adam optimizer.

Part of :mod:`helpers.reference` (see its docstring for the conventions).
"""

import numpy as np

from ..validation import as_float_array, positive_int, shape_str


def adam_step(param, grad, m, v, t, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8):
    """One Adam update of one parameter array (Kingma & Ba, 2015).

    ``m`` and ``v`` are running averages of the gradient and of its square; dividing
    one by the square root of the other gives every entry a step of about ``lr``,
    whatever the size of its gradient. The corrections ``1 - beta**t`` undo the
    averages' start at zero.

    Parameters
    ----------
    param, grad, m, v : ndarray, all the same shape
        The parameter, its gradient, and the two running averages (zeros at first).
    t : int >= 1
        The step number, counted from 1.
    lr, beta1, beta2, eps : float
        Step size, the averages' decay rates, and what keeps the division finite.

    Returns
    -------
    (param, m, v) : new arrays, the same shape and float dtype; the inputs are left as they were.
    """
    where = "adam_step"
    arrays = {name: as_float_array(where, name, a, min_ndim=0)
              for name, a in (("param", param), ("grad", grad), ("m", m), ("v", v))}
    for name, a in arrays.items():
        if a.shape != arrays["param"].shape:
            raise ValueError(f"{where}: {name} must have the shape of param "
                             f"{shape_str(arrays['param'].shape)}, got {shape_str(a.shape)}")
    t = positive_int(where, "t", t)
    param, grad, m, v = arrays.values()
    m = beta1 * m + (1 - beta1) * grad                       # average gradient
    v = beta2 * v + (1 - beta2) * grad ** 2                  # average squared gradient
    m_hat = m / (1 - beta1 ** t)                             # bias corrections
    v_hat = v / (1 - beta2 ** t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
