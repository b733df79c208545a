"""Lesson 05's figure and tables: power laws on linear and log-log axes, a times table, a crossing.

The times come from :func:`helpers.measure.median_times` (shared with lessons 06 and 11).
"""

import matplotlib.pyplot as plt
import numpy as np

from ...plots import STYLES, log_axes


def power_laws(sizes, laws):
    """The same power laws on linear axes, then on log-log axes (where they are straight lines).

    Parameters
    ----------
    sizes : 1-D array of positive numbers
    laws : dict of label -> costs, one per size

    Returns
    -------
    matplotlib Figure
    """
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, scale in zip(axes, ["linear", "log"]):
        for (label, costs), (marker, colour) in zip(laws.items(), STYLES):
            ax.plot(sizes, costs, marker, color=colour, label=label)
        if scale == "log":
            log_axes(ax, xticks=sizes)                        # log-log, plain-number labels
        ax.set_title(f"Two power laws on {scale} axes")
        ax.set_xlabel("size n")
        ax.set_ylabel("cost")
        ax.legend()
    fig.tight_layout()
    return fig


def times_table(sizes, times, size_name="n"):
    """The times of :func:`median_times` as a text table, in milliseconds per call."""
    width = max(14, *(len(name) + 2 for name in times))
    lines = [f"{size_name:>6}" + "".join(f"{name:>{width}}" for name in times)]
    for i, size in enumerate(sizes):
        lines.append(f"{size:>6}" + "".join(f"{1e3 * t[i]:>{width}.3f}" for t in times.values()))
    return "\n".join(lines)


def crossing(x, y1, y2):
    """The x where ``y2`` overtakes ``y1``, interpolated on log-log axes; None if it never does.

    Parameters
    ----------
    x : 1-D array of increasing positive numbers
    y1, y2 : 1-D arrays of positive numbers, same length as ``x``

    Returns
    -------
    float or None
        The first crossing from ``y2 < y1`` to ``y2 >= y1``, on straight lines between
        neighbouring points of ``log x`` and ``log y``.
    """
    x, y1, y2 = (np.asarray(a, dtype=float) for a in (x, y1, y2))
    if not x.shape == y1.shape == y2.shape or x.ndim != 1:
        raise ValueError(f"crossing: x, y1, y2 must be 1-D of one length, got shapes "
                         f"{x.shape}, {y1.shape}, {y2.shape}")
    diff = np.log(y2) - np.log(y1)
    for i in range(len(x) - 1):
        if diff[i] < 0 <= diff[i + 1]:
            t = -diff[i] / (diff[i + 1] - diff[i])
            return float(np.exp(np.log(x[i]) + t * (np.log(x[i + 1]) - np.log(x[i]))))
    return None
