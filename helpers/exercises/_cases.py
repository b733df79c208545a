"""Small helpers for drawing an exercise's cases from a random generator.

Every ``make_cases(rng, hidden)`` in the ``lessonNN`` modules draws sizes the same
few ways; these say each way once. They draw from ``rng`` exactly as the code they
replace did, so the visible and hidden cases stay the same for the same seed.
"""

import numpy as np


def sizer(rng):
    """``size(low, high)``: a function drawing a whole number from ``low`` to ``high`` inclusive.

    Parameters
    ----------
    rng : numpy.random.Generator

    Returns
    -------
    callable (low, high) -> int
    """
    def size(low, high):
        return int(rng.integers(low, high + 1))
    return size


def distinct(rng, low, high, count=2):
    """``count`` different whole numbers from ``low`` to ``high`` inclusive, in the order drawn.

    Parameters
    ----------
    rng : numpy.random.Generator
    low, high : int
    count : int

    Returns
    -------
    tuple of int, length ``count``
    """
    return tuple(int(v) for v in rng.choice(np.arange(low, high + 1), size=count, replace=False))


def chooser(rng, choices):
    """``choose()``: a function drawing one of ``choices`` (whole numbers) each time it is called.

    Parameters
    ----------
    rng : numpy.random.Generator
    choices : list of int

    Returns
    -------
    callable () -> int
    """
    def choose():
        return int(rng.choice(choices))
    return choose


def rounded_uniform(rng):
    """``draw(low, high)``: a function drawing a float from ``low`` to ``high``, rounded to 2 decimals.

    Parameters
    ----------
    rng : numpy.random.Generator

    Returns
    -------
    callable (low, high) -> float
    """
    def draw(low, high):
        return round(float(rng.uniform(low, high)), 2)
    return draw
