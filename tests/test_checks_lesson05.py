"""Lesson 05 checks: attention_flops, fit_power_law and flops_crossing name the known mistakes
and pass any correct implementation. The wrong versions are written the way a learner would;
both tables (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``) are run in test_checks_versions.py."""

import numpy as np
import pytest

from helpers import reference


# ----------------------------------------------------------------- attention_flops
def flops_multiply_add_is_one(n, d_model):
    return {"projections": 3 * n * d_model ** 2, "scores": n * n * d_model,
            "weighted_sum": n * n * d_model, "output_projection": n * d_model ** 2}


def flops_wo_among_projections(n, d_model):
    return {"projections": 4 * 2 * n * d_model ** 2, "scores": 2 * n * n * d_model,
            "weighted_sum": 2 * n * n * d_model, "output_projection": 2 * n * d_model ** 2}


def flops_wo_only_in_projections(n, d_model):
    return {"projections": 8 * n * d_model ** 2, "scores": 2 * n * n * d_model,
            "weighted_sum": 2 * n * n * d_model, "output_projection": 0}


def flops_scores_counted_once(n, d_model):
    return {"projections": 6 * n * d_model ** 2, "scores": n * n * d_model,
            "weighted_sum": 2 * n * n * d_model, "output_projection": 2 * n * d_model ** 2}


def flops_no_output_projection(n, d_model):
    return {"projections": 6 * n * d_model ** 2, "scores": 2 * n * n * d_model,
            "weighted_sum": 2 * n * n * d_model}


def flops_n_and_d_swapped(n, d_model):
    return {"projections": 6 * n * n * d_model, "scores": 2 * n * d_model ** 2,
            "weighted_sum": 2 * n * d_model ** 2, "output_projection": 2 * n * n * d_model}


def flops_one_projection(n, d_model):
    return {"projections": 2 * n * d_model ** 2, "scores": 2 * n * n * d_model,
            "weighted_sum": 2 * n * n * d_model, "output_projection": 2 * n * d_model ** 2}


def flops_returns_total(n, d_model):
    return 8 * n * d_model ** 2 + 4 * n * n * d_model


def flops_b_minus_1_additions(n, d_model):
    # a dot product of length b: b multiplications and b - 1 additions
    def matmul(a, b, c):
        return a * c * (b + (b - 1))
    return {"projections": 3 * matmul(n, d_model, d_model), "scores": matmul(n, d_model, n),
            "weighted_sum": matmul(n, n, d_model), "output_projection": matmul(n, d_model, d_model)}


WRONG_FLOPS = {
    "b - 1 additions per dot product": (flops_b_minus_1_additions, "was counted with b - 1 additions"),
    "multiply-add counted as 1": (flops_multiply_add_is_one, "a multiply-add is 2"),
    "W_O counted among projections": (flops_wo_among_projections,
                                      "W_O was counted among the projections"),
    "W_O moved into projections": (flops_wo_only_in_projections,
                                   "W_O was counted among the projections"),
    "scores counted without the 2": (flops_scores_counted_once,
                                     "'scores' is half the right count"),
    "output projection missing": (flops_no_output_projection, "output projection (@ W_O) is missing"),
    "n and d swapped": (flops_n_and_d_swapped, "n and d_model are swapped"),
    "only one projection": (flops_one_projection, "counts only one of the three matrices"),
    "a total instead of a dict": (flops_returns_total, "should be a dict"),
}


def flops_from_shapes(n, d_model):
    # count each product (a, b) @ (b, c) as 2*a*b*c, from the shapes themselves
    def matmul(a, b, c):
        return 2 * a * b * c
    return {"projections": sum(matmul(n, d_model, d_model) for _ in "QKV"),
            "scores": matmul(n, d_model, n),
            "weighted_sum": matmul(n, n, d_model),
            "output_projection": matmul(n, d_model, d_model)}


def flops_as_floats(n, d_model):
    return {"projections": 6.0 * n * d_model * d_model, "scores": 2.0 * n ** 2 * d_model,
            "weighted_sum": 2.0 * d_model * n ** 2, "output_projection": 2.0 * n * d_model ** 2}


RIGHT_FLOPS = {"counted from the shapes": flops_from_shapes, "in floats": flops_as_floats}


# ----------------------------------------------------------------- fit_power_law
def fit_intercept(sizes, costs):
    slope, intercept = np.polyfit(np.log(sizes), np.log(costs), 1)
    return intercept


def fit_linear_axes(sizes, costs):
    slope, intercept = np.polyfit(sizes, costs, 1)
    return slope


def fit_log_costs_only(sizes, costs):
    return np.polyfit(sizes, np.log(costs), 1)[0]


def fit_swapped(sizes, costs):
    return np.polyfit(np.log(costs), np.log(sizes), 1)[0]


def fit_both(sizes, costs):
    return np.polyfit(np.log(sizes), np.log(costs), 1)


def fit_endpoints(sizes, costs):
    return np.log(costs[-1] / costs[0]) / np.log(sizes[-1] / sizes[0])


WRONG_FITS = {
    "intercept instead of slope": (fit_intercept, "this is the intercept (log c), not the slope"),
    "linear axes": (fit_linear_axes, "fitted on linear axes"),
    "log of costs only": (fit_log_costs_only, "take the log of the sizes too"),
    "size against cost": (fit_swapped, "sizes and costs are swapped"),
    "slope and intercept": (fit_both, "returns both the slope and the intercept"),
    "two endpoints": (fit_endpoints, "uses only the first and the last point"),
}


def fit_normal_equations(sizes, costs):
    # solve [1, log s] @ [b, k] = log c by least squares, in base 2
    A = np.column_stack([np.ones(len(sizes)), np.log2(sizes)])
    (b, k), *_ = np.linalg.lstsq(A, np.log2(costs), rcond=None)
    return k


def fit_covariance(sizes, costs):
    x, y = np.log10(sizes), np.log10(costs)
    return float(np.cov(x, y, bias=True)[0, 1] / np.var(x))


def fit_polyfit(sizes, costs):
    return np.polyfit(np.log(sizes), np.log(costs), 1)[0]


RIGHT_FITS = {"normal equations in base 2": fit_normal_equations,
              "covariance over variance in base 10": fit_covariance, "polyfit": fit_polyfit}


# ----------------------------------------------------------------- flops_crossing
# Each written the way a learner would: solve "grid FLOPs = projection FLOPs" for n.
def crossing_wo_flag_swapped(d_model, with_output_projection=True):
    return (6 if with_output_projection else 8) * d_model / 4


def crossing_grid_counted_once(d_model, with_output_projection=True):
    projections = 8 if with_output_projection else 6      # n*d^2 terms
    return projections * d_model / 2                       # grid 2*n^2*d: scores only


def crossing_rule_of_thumb(d_model, with_output_projection=True):
    return d_model


def crossing_upside_down(d_model, with_output_projection=True):
    return 4 * d_model / (8 if with_output_projection else 6)


def crossing_wo_twice(d_model, with_output_projection=True):
    return (10 if with_output_projection else 6) * d_model / 4     # W_O added to 4 matrices


def crossing_mixed_counting(d_model, with_output_projection=True):
    projections = (4 if with_output_projection else 3) * d_model ** 2   # multiply-add as 1
    grid = 4 * d_model                                                    # multiply-add as 2
    return projections / grid


WRONG_CROSSINGS = {
    "W_O flag the wrong way round": (crossing_wo_flag_swapped, "crossing without W_O"),
    "grid counted once": (crossing_grid_counted_once, "the grid was counted as one product"),
    "n = d": (crossing_rule_of_thumb, "rule of thumb"),
    "solved upside down": (crossing_upside_down, "solved upside down"),
    "W_O counted twice": (crossing_wo_twice, "W_O was counted twice"),
    "multiply-add counted differently on each side": (crossing_mixed_counting,
                                                     "counted as 2 operations on one side"),
    "rounded with int()": (lambda d_model, with_output_projection=True:
                           int((8 if with_output_projection else 6) * d_model / 4),
                           "rounded down to a whole number"),
    "rounded with round()": (lambda d_model, with_output_projection=True:
                             round((2 if with_output_projection else 1.5) * d_model + 1e-9),
                             "rounded up (or to the nearest)"),
}


def crossing_from_attention_flops(d_model, with_output_projection=True):
    # the grid's share grows like n: evaluate the counts at n = 1 and scale
    f = reference.attention_flops(1, d_model)
    projections = f["projections"] + (f["output_projection"] if with_output_projection else 0)
    return projections / (f["scores"] + f["weighted_sum"])


def crossing_by_bisection(d_model, with_output_projection=True):
    def grid_minus_projections(n):
        return 4 * n * n * d_model - (8 if with_output_projection else 6) * n * d_model ** 2
    lo, hi = 1e-9, 10.0 * d_model
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if grid_minus_projections(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


RIGHT_CROSSINGS = {"from attention_flops at n = 1": crossing_from_attention_flops,
                   "by bisection": crossing_by_bisection}


# ----------------------------------------------------------------- all three, table-driven
WRONG_BY_EXERCISE = {"attention_flops": WRONG_FLOPS, "fit_power_law": WRONG_FITS,
                     "flops_crossing": WRONG_CROSSINGS}
RIGHT_BY_EXERCISE = {"attention_flops": RIGHT_FLOPS, "fit_power_law": RIGHT_FITS,
                     "flops_crossing": RIGHT_CROSSINGS}


@pytest.mark.parametrize("d_model, with_wo, expected", [(512, True, 1024), (512, False, 768),
                                                        (2, True, 4), (2, False, 3)])
def test_flops_crossing_reference_solves_the_counts_by_hand(d_model, with_wo, expected):
    # 512 with W_O: 8*n*512^2 = 4*n^2*512  ->  n = 2*512 = 1024
    assert reference.flops_crossing(d_model, with_wo) == expected
