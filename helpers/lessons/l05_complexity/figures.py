"""Lesson 05's figure and tables: power laws on linear and log-log axes, a times table, a crossing.

The times come from :func:`helpers.measure.median_times` (shared with lessons 06 and 11).
"""

import matplotlib.pyplot as plt
import numpy as np

from ... import measure
from ...plots import STYLES, log_axes

# The right panel of :func:`stage_times`: each line is a sum of stages, drawn in the colour of a stage.
SUMS = {"Q, K, V": (["projections"], "projections"),
        "Q, K, V and W_O": (["projections", "output projection"], "output projection"),
        "grid (scores, softmax, sum)": (["scores", "softmax", "weighted sum"], "scores")}


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


def stage_times(sizes, times, spread, exponents, colours, d, ylabel, note):
    """Each stage's time against n, then the projections against the grid, both on log-log axes.

    Parameters
    ----------
    sizes : 1-D array of sequence lengths n, shape (m,)
    times : dict stage -> median seconds per call, shape (m,)
        The five stages of :data:`SUMS` (``"projections"``, ``"scores"``, ``"softmax"``,
        ``"weighted sum"``, ``"output projection"``).
    spread : dict stage -> (fastest, slowest) seconds per call, each shape (m,)
        Drawn as bands; a sum's band runs from the sum of the fastest runs to the sum of the slowest.
    exponents : dict stage -> float
        The fitted exponents, written in the left panel's legend.
    colours : dict stage -> colour
    d : int
        The model size the times were measured at: in the titles, and a dotted line at n = d.
    ylabel, note : str
        The y-axis label, and a second title line saying what the lines and bands are.

    Returns
    -------
    matplotlib Figure
        Left: one line per stage, with grey slopes of exactly 1 and 2 through the middle size.
        Right: the sums of :data:`SUMS` (Q, K, V; with W_O; the grid).
    """
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.4), layout="tight")
    middle = len(sizes) // 2
    measure.plot_times(ax, sizes, times, colours, exponents, spread=spread, ylabel=ylabel,
                       guides=[("projections", 1), ("scores", 2)], guide_at=middle,
                       title=f"Time of each stage against n (d = {d})\n{note}", xlabel="sequence length n")
    sums = {label: sum(times[stage] for stage in stages) for label, (stages, _) in SUMS.items()}
    bands = {label: tuple(sum(spread[stage][end] for stage in stages) for end in (0, 1))
             for label, (stages, _) in SUMS.items()}
    measure.plot_times(ax2, sizes, sums, {label: colours[like] for label, (_, like) in SUMS.items()},
                       spread=bands, ylabel=ylabel, xlabel="sequence length n",
                       title=f"Where the cost moves from the projections to the grid\n{note}")
    ax2.axvline(d, color="black", linestyle=":", label=f"n = d = {d}")
    ax.legend(loc="upper left")
    ax2.legend(loc="upper left")
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
