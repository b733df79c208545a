"""Lesson 05 exercises: ``attention_flops``, ``fit_power_law`` and the "predict, then
run" exercise ``flops_crossing``.

attention_flops: the cases use n != d_model (so n and d swapped gives other
numbers) and the mistakes are the ways a count goes wrong: a multiply-add counted
as 1 operation instead of 2, W_O counted among the Q/K/V projections.

fit_power_law: synthetic data ``cost = c * size**k`` with a little multiplicative
noise (so only a real least-squares fit gives the reference's answer) and
``c`` far from 1 (so the intercept ``log c`` is nowhere near the slope ``k``).

flops_crossing: both values of ``with_output_projection`` on sizes that are not round
numbers, so each wrong coefficient (1.5 for 2, 3 or 4 for a grid counted once, 1 for
"n ~ d", 2/3 for an equation solved upside down) gives its own number. The first case
leaves W_O out: with it, half the right answer (2d / 2) would be d, the rule of thumb.
The last case has an odd d_model, where 1.5 d is a fraction: an answer rounded down
or up (the only ways to fail it) is named.
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import distinct, rounded_uniform, sizer

LESSON = "05_complexity"


# ----------------------------------------------------------------- attention_flops
def make_flops_cases(rng, hidden):
    sizes = [(6, 4), (1024, 512), (3, 10), (1, 1), (100_000, 64)]   # (n, d_model)
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        small_n, small_d = distinct(rng, 2, 9, 2)
        k = size(3, 9)
        sizes = [(max(small_n, small_d), min(small_n, small_d)),      # n > d
                 (2 ** size(10, 12), 2 ** size(7, 9)),
                 (min(small_n, small_d), max(small_n, small_d) + size(1, 4)),   # n < d
                 (1, 1),
                 (size(10_000, 50_000), 2 ** size(5, 7)),
                 (k, k)]
    return [Case((n, d), label=f"n={n}, d_model={d}") for n, d in sizes]


def _flops(n, d, madd=2, proj_mats=3, out_mats=1, halve=()):
    """A count with the given (possibly wrong) conventions."""
    counts = {
        "projections": madd * proj_mats * n * d * d,
        "scores": madd * n * n * d,
        "weighted_sum": madd * n * n * d,
        "output_projection": madd * out_mats * n * d * d,
    }
    for key in halve:
        counts[key] //= 2
    return counts


def _without_output(counts):
    return {k: v for k, v in counts.items() if k != "output_projection"}


FLOPS_MISTAKES = [
    Mistake("every count is half the right one: a multiply-add is 2 floating-point operations "
            "(one multiply, one add), so an (a, b) @ (b, c) product costs 2*a*b*c, not a*b*c.",
            lambda n, d: _flops(n, d, madd=1)),
    Mistake("W_O was counted among the projections: \"projections\" is Q, K and V only "
            "(three (n, d) @ (d, d) products); the output projection has its own entry.",
            lambda n, d: _flops(n, d, proj_mats=4)),
    Mistake("W_O was counted among the projections: \"projections\" is Q, K and V only "
            "(three (n, d) @ (d, d) products); the output projection has its own entry.",
            lambda n, d: _flops(n, d, proj_mats=4, out_mats=0)),
    Mistake("W_O was counted among the projections, and a multiply-add as 1 operation "
            "instead of 2: \"projections\" is Q, K and V only, each (n, d) @ (d, d) "
            "costing 2*n*d*d.",
            lambda n, d: _flops(n, d, madd=1, proj_mats=4)),
    Mistake("the output projection (@ W_O) is missing: return it as \"output_projection\".",
            lambda n, d: _without_output(_flops(n, d))),
]
for _key in ("projections", "scores", "weighted_sum", "output_projection"):
    FLOPS_MISTAKES.append(Mistake(
        f"{_key!r} is half the right count: a multiply-add is 2 operations, so an "
        f"(a, b) @ (b, c) product costs 2*a*b*c.",
        lambda n, d, _key=_key: _flops(n, d, halve=(_key,))))
FLOPS_MISTAKES += [
    Mistake("n and d_model are swapped somewhere: the projections cost grows with n*d^2 "
            "(n tokens, each times a (d, d) matrix), the score grid with n^2*d "
            "(n*n dot products of length d).",
            lambda n, d: {"projections": 6 * n * n * d, "scores": 2 * n * d * d,
                          "weighted_sum": 2 * n * d * d, "output_projection": 2 * n * n * d}),
    Mistake("\"projections\" counts only one of the three matrices: Q, K and V each cost "
            "2*n*d*d.",
            lambda n, d: _flops(n, d, proj_mats=1)),
    Mistake("each dot product of length b was counted with b - 1 additions, (2b - 1)*a*c for an "
            "(a, b) @ (b, c) product: exact for the additions, but FLOPs count one multiply-add "
            "(2 operations) per multiplication, so the product costs 2*a*b*c (section 1).",
            lambda n, d: {"projections": 3 * (2 * d - 1) * n * d, "scores": (2 * d - 1) * n * n,
                          "weighted_sum": (2 * n - 1) * n * d, "output_projection": (2 * d - 1) * n * d}),
]


# ----------------------------------------------------------------- fit_power_law
def _power_case(rng, k, c, sizes, noise, label):
    sizes = np.asarray(sizes, dtype=float)
    costs = c * sizes ** k * np.exp(noise * rng.standard_normal(len(sizes)))
    return Case((sizes, costs), label=f"{label} (sizes {sizes.astype(int).tolist()})")


def make_power_cases(rng, hidden):
    if hidden:   # the grader's exponents and sizes, drawn afresh for each grading run
        def doubling(start, count):
            return [start * 2 ** i for i in range(count)]

        k = rounded_uniform(rng)
        specs = [(k(1.7, 2.3), 4e-8, doubling(int(rng.integers(16, 48)), int(rng.integers(5, 8))),
                  0.08, "cost ~ size^2, noisy"),
                 (k(0.8, 1.2), 2e-6, doubling(int(rng.integers(50, 150)), int(rng.integers(3, 6))),
                  0.05,
                  "cost ~ size, noisy"),
                 (k(2.7, 3.3), 1e-9, sorted(rng.choice(np.arange(8, 64), 5, replace=False)), 0.0,
                  "cost ~ size^3, exact"),
                 (k(0.4, 0.6), 50.0, [1, 4, 9, 16, 25], 0.1, "cost ~ sqrt(size)"),
                 (k(1.2, 2.2), 1e-3, [int(rng.integers(5, 20)), int(rng.integers(500, 2000))],
                  0.0, "two points")]
    else:
        specs = [(2.0, 3e-9, [64, 128, 256, 512, 1024], 0.1, "cost ~ size^2, noisy timings"),
                 (1.0, 5e-7, [128, 256, 512, 1024, 2048], 0.05, "cost ~ size, noisy timings"),
                 (1.5, 7e-4, [10, 20, 40, 80], 0.0, "cost ~ size^1.5, exact"),
                 (2.0, 1.0, [3, 30], 0.0, "two points")]
    return [_power_case(rng, *spec) for spec in specs]


def _linefit(x, y):
    """(slope, intercept) of the least-squares line through the points (x, y)."""
    slope, intercept = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    return slope, intercept


POWER_MISTAKES = [
    Mistake("this is the intercept (log c), not the slope: the exponent k is the slope of "
            "log(cost) against log(size).",
            lambda s, c: float(_linefit(np.log(s), np.log(c))[1])),
    Mistake("this is the intercept (log10 c), not the slope: the exponent k is the slope of "
            "log(cost) against log(size).",
            lambda s, c: float(_linefit(np.log10(s), np.log10(c))[1])),
    Mistake("this is the prefactor c, not the exponent k: return the slope of log(cost) "
            "against log(size).",
            lambda s, c: float(np.exp(_linefit(np.log(s), np.log(c))[1]))),
    Mistake("the line was fitted on linear axes (cost against size): a power law is a "
            "straight line only on log-log axes, so take the log of both sizes and costs first.",
            lambda s, c: float(_linefit(s, c)[0])),
    Mistake("only the costs were put on a log axis: take the log of the sizes too "
            "(log cost = log c + k * log size).",
            lambda s, c: float(_linefit(s, np.log(c))[0])),
    Mistake("only the sizes were put on a log axis: take the log of the costs too "
            "(log cost = log c + k * log size).",
            lambda s, c: float(_linefit(np.log(s), c)[0])),
    Mistake("sizes and costs are swapped: this is the slope of log(size) against log(cost), "
            "i.e. 1/k. Fit log(cost) (vertical) against log(size) (horizontal).",
            lambda s, c: float(_linefit(np.log(c), np.log(s))[0])),
    Mistake("this returns both the slope and the intercept: return only the slope, the "
            "exponent k (a single number).",
            lambda s, c: np.polyfit(np.log(s), np.log(c), 1)),
    Mistake("this uses only the first and the last point: fit a least-squares line through "
            "all the points (np.polyfit with degree 1 does it).",
            lambda s, c: float((np.log(c[-1]) - np.log(c[0])) / (np.log(s[-1]) - np.log(s[0])))),
]


# ----------------------------------------------------------------- flops_crossing
def make_crossing_cases(rng, hidden):
    specs = [(128, False), (128, True), (512, True), (100, False), (1, True), (768, False),
             (101, False)]                              # 1.5 * 101 = 151.5: not a whole number
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        d = int(rng.integers(64, 513))
        specs = [(d, False), (d, True), (int(rng.integers(50, 200)), True),
                 (int(rng.integers(500, 2001)), False),
                 (2 * int(rng.integers(30, 300)) + 1, False),   # odd: 1.5 d is not whole
                 (1, False), (int(rng.integers(1024, 8193)), True)]
    return [Case((d, w), label=f"d_model={d}, with_output_projection={w}") for d, w in specs]


def _crossing(d, w, matrices=None, grid_products=2):
    """n where grid_products * 2*n^2*d equals matrices * 2*n*d^2 (the right count by default)."""
    matrices = (4 if w else 3) if matrices is None else matrices
    return matrices * d / grid_products


CROSSING_MISTAKES = [
    Mistake("this is the crossing without W_O (n = 1.5 d) where W_O counts, or the other way "
            "round. with_output_projection=True adds W_O's 2*n*d^2 to the projections: "
            "8*n*d^2 = 4*n^2*d; without it, 6*n*d^2 = 4*n^2*d.",
            lambda d, w: _crossing(d, not w)),
    Mistake("the grid was counted as one product: it is two, scores (Q @ K.T) and weighted "
            "sum (weights @ V), 2*n^2*d each, so 4*n^2*d in all. (Or its multiply-adds were "
            "counted as 1 operation and the projections' as 2: count both sides alike.)",
            lambda d, w: _crossing(d, w, grid_products=1)),
    Mistake("n = d is the rule of thumb, not the crossing of the counts: set the grid's "
            "4*n^2*d equal to the projections' 6*n*d^2 (or 8*n*d^2 with W_O) and solve for n.",
            lambda d, w: float(d)),
    Mistake("the equation was solved upside down: 4*n^2*d = 6*n*d^2 gives n = 6*d/4, "
            "not 4*d/6 (divide both sides by 4*n*d).",
            lambda d, w: 4 * d / (4 if w else 3) / 2),
    Mistake("W_O was counted twice: as a fourth projection and again as the output "
            "projection. With W_O the projections cost 4 * 2*n*d^2 = 8*n*d^2.",
            lambda d, w: _crossing(d, w, matrices=5 if w else 3)),
    Mistake("a multiply-add was counted as 2 operations on one side and 1 on the other: "
            "count both sides the same way (2 per multiply-add) before solving.",
            lambda d, w: _crossing(d, w) / 2),
    Mistake("the answer was rounded down to a whole number: n = 1.5 * d_model is a fraction "
            "when d_model is odd (151.5 for 101). Return it as it is.",
            lambda d, w: float(np.floor(_crossing(d, w)))),
    Mistake("the answer was rounded up (or to the nearest) whole number: n = 1.5 * d_model is "
            "a fraction when d_model is odd (151.5 for 101). Return it as it is.",
            lambda d, w: float(np.ceil(_crossing(d, w)))),
]


EXERCISES = [
    Exercise(
        name="attention_flops",
        lesson=LESSON,
        reference=reference.attention_flops,
        make_cases=make_flops_cases,
        mistakes=FLOPS_MISTAKES,
        outputs=("flops",),
        rtol=1e-12,
        atol=0.5,
    ),
    Exercise(
        name="fit_power_law",
        lesson=LESSON,
        reference=reference.fit_power_law,
        make_cases=make_power_cases,
        mistakes=POWER_MISTAKES,
        outputs=("exponent",),
        rtol=1e-6,
        atol=1e-9,
    ),
    Exercise(
        name="flops_crossing",
        lesson=LESSON,
        reference=reference.flops_crossing,
        make_cases=make_crossing_cases,
        mistakes=CROSSING_MISTAKES,
        outputs=("n",),
        rtol=1e-9,
        atol=1e-9,
    ),
]
