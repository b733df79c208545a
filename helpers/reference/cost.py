"""Lesson 05: the cost of attention, counted (FLOPs) and fitted (power laws).

Part of :mod:`helpers.reference` (see its docstring for the conventions).
"""

import numpy as np

from ..validation import as_float_array, positive_int, shape_str


def attention_flops(n, d_model):
    """Floating-point operations of one single-sequence attention layer.

    A multiply-add counts as 2 operations; softmax and scaling are left out
    (they are O(n^2), not O(n^2 d)).

    Returns
    -------
    dict
        ``"projections"``: Q, K and V, ``3 * 2*n*d^2``;
        ``"scores"``: ``Q @ K.T``, ``2*n^2*d``;
        ``"weighted_sum"``: ``weights @ V``, ``2*n^2*d``;
        ``"output_projection"``: ``@ W_o``, ``2*n*d^2``.
    """
    n = positive_int("attention_flops", "n", n)
    d = positive_int("attention_flops", "d_model", d_model)
    return {
        "projections": 6 * n * d * d,
        "scores": 2 * n * n * d,
        "weighted_sum": 2 * n * n * d,
        "output_projection": 2 * n * d * d,
    }


def fit_power_law(sizes, costs):
    """Exponent k of ``cost ~ c * size**k``, by least squares on log-log axes.

    Parameters
    ----------
    sizes, costs : 1-D array_like of positive numbers, same length >= 2

    Returns
    -------
    float
        The slope of ``log(cost)`` against ``log(size)``.
    """
    where = "fit_power_law"
    sizes = as_float_array(where, "sizes", sizes, min_ndim=1)
    costs = as_float_array(where, "costs", costs, min_ndim=1)
    if sizes.ndim != 1 or costs.ndim != 1:
        raise ValueError(f"{where}: sizes and costs must be 1-D, got sizes "
                         f"{shape_str(sizes.shape)}, costs {shape_str(costs.shape)}")
    if len(sizes) != len(costs):
        raise ValueError(f"{where}: sizes has {len(sizes)} values but costs has {len(costs)}")
    if len(sizes) < 2:
        raise ValueError(f"{where}: need at least 2 points to fit a line, got {len(sizes)}")
    for name, values in (("sizes", sizes), ("costs", costs)):
        if not np.all(np.isfinite(values)) or np.any(values <= 0):
            raise ValueError(f"{where}: {name} must be positive and finite to take logs, "
                             f"got min {np.min(values)!r}")
    log_s, log_c = np.log(sizes), np.log(costs)
    spread = log_s - log_s.mean()
    if not np.any(spread):
        raise ValueError(f"{where}: all sizes are equal ({sizes[0]!r}): no slope to fit")
    return float(np.sum(spread * (log_c - log_c.mean())) / np.sum(spread ** 2))


def flops_crossing(d_model, with_output_projection=True):
    """The sentence length n at which the score grid costs as many FLOPs as the projections.

    The grid (scores and weighted sum) costs ``4*n^2*d``; the projections ``6*n*d^2``
    (Q, K, V) or ``8*n*d^2`` with the output projection W_o. They are equal at
    ``n = 1.5*d`` or ``n = 2*d``: the grid's share of the two is ``n / (1.5*d)`` or ``n / (2*d)``.

    Returns
    -------
    float
    """
    d = positive_int("flops_crossing", "d_model", d_model)
    matrices = 4 if with_output_projection else 3     # (n, d) @ (d, d) products, 2*n*d^2 each
    return 2 * matrices * d / 4                         # 2*matrices*n*d^2 = 4*n^2*d
