"""Sliders for the lessons, on the ipywidgets API common to versions 7.7 (Colab) and 8.

Only ``SelectionSlider``, ``interactive_output``, ``VBox``/``HBox`` and ``Output``
are used, all present in both versions. Each slider redraws one matplotlib figure.
"""

import ipywidgets as widgets


def choice_slider(options, value, description):
    """A slider over a fixed list of values (e.g. powers of two), continuous_update off."""
    return widgets.SelectionSlider(options=list(options), value=value, description=description,
                                   continuous_update=False)


def powers_of_two(lo, hi):
    """``[lo, 2*lo, ..., hi]`` for powers of two lo <= hi."""
    values, v = [], lo
    while v <= hi:
        values.append(v)
        v *= 2
    return values


def divisors(n):
    """All divisors of n, smallest first: ``divisors(512) -> [1, 2, 4, ..., 512]``."""
    return [k for k in range(1, n + 1) if n % k == 0]
