"""Lesson 07's figures: the softmax's Jacobian, gradient sizes, finite-difference errors,
and a gradient check entry by entry.

Each is one call in the lesson; colours are colour-blind safe (RdBu_r for signed values,
the Okabe-Ito palette for lines, as in :mod:`helpers.plots`).
"""

import matplotlib.pyplot as plt
import numpy as np

from ...plots import BLUE, DIVERGING, GREEN, GREY, VERMILLION, heatmap



def softmax_jacobians(rows, titles, *, suptitle="", limit=0.25, small=0.005):
    """The Jacobian ``diag(y) - y y^T`` of one softmax row per panel, side by side.

    Parameters
    ----------
    rows : list of 1-D ndarrays
        The weights ``y`` (each a softmax output) of each panel.
    titles : list of str, one per panel
    limit : float
        The colour scale runs from ``-limit`` to ``limit``.
    small : float
        Entries smaller than this in size are left without a number (they would read
        "0.00" or "-0.00"); the figure's title says so.

    Returns
    -------
    matplotlib Figure
    """
    fig, axes = plt.subplots(1, len(rows), figsize=(6 * len(rows), 4.6), squeeze=False)
    for ax, y, title in zip(axes[0], rows, titles):
        y = np.asarray(y, dtype=float)
        J = np.diag(y) - np.outer(y, y)                                  # (n, n)
        heatmap(J, ax=ax, cmap=DIVERGING, vmin=-limit, vmax=limit, annotate=False, title=title,
                xlabel="score x_b", ylabel="weight y_a")
        for (a, b), value in np.ndenumerate(J):
            if abs(value) >= small:
                ax.text(b, a, f"{value:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(value) > 0.6 * limit else "black")
    fig.suptitle(f"{suptitle} (entries smaller than {small} in size: no number)")
    fig.tight_layout()
    return fig


def gradient_sizes(dks, unscaled, scaled, *, title="", ylabel=""):
    """Two lines on log-log axes: a gradient's size against d_k, unscaled and scaled.

    Returns
    -------
    matplotlib Axes
    """
    _, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(dks, unscaled, "o-", color=VERMILLION, label="scores not scaled")
    ax.plot(dks, scaled, "s-", color=BLUE, label="scores divided by √d_k")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(dks, labels=[str(dk) for dk in dks])               # plain numbers: 1, 4, ...
    ax.set_title(title)
    ax.set_xlabel("d_k")
    ax.set_ylabel(ylabel)
    ax.legend()
    return ax


def difference_errors(eps_values, errors, *, title=""):
    """The error of finite-difference estimates against the step ε, on log-log axes.

    Parameters
    ----------
    eps_values : 1-D array
    errors : dict of label -> 1-D array (one error per ε); zeros are drawn at 1e-17

    Returns
    -------
    matplotlib Axes
    """
    _, ax = plt.subplots(figsize=(7.5, 4.5))
    for (label, err), (color, marker) in zip(errors.items(), [(VERMILLION, "o-"), (BLUE, "s-"),
                                                              (GREEN, "^-")]):
        ax.loglog(eps_values, np.maximum(err, 1e-17), marker, color=color, label=label)
    ax.set_title(title)
    ax.set_xlabel("step ε")
    ax.set_ylabel("|estimate − exact derivative|")
    ax.legend()
    return ax


def gradient_check_scatter(numeric, gradients, *, title="", slopes=(1.0,)):
    """Each entry of hand-written gradients against the numerical one, with guide lines.

    Parameters
    ----------
    numeric : ndarray
        The central-difference gradient (the x axis).
    gradients : dict of label -> ndarray, the shape of ``numeric``
    slopes : sequence of float
        A dotted guide line ``y = slope * x`` for each (1: agreement).

    Returns
    -------
    matplotlib Axes
    """
    _, ax = plt.subplots(figsize=(5.5, 5.5))
    x = np.ravel(numeric)
    for (label, grad), (color, marker) in zip(gradients.items(), [(BLUE, "o"), (VERMILLION, "^"),
                                                                   (GREEN, "s")]):
        ax.plot(x, np.ravel(grad), marker, color=color, label=label)
    limit = 1.1 * max(np.abs(x).max(), *(np.abs(g).max() for g in gradients.values()))
    span = np.array([-limit, limit])
    for slope, style in zip(slopes, [":", "--", "-."]):
        ax.plot(span, slope * span, color=GREY, linestyle=style,
                label="agreement (y = x)" if slope == 1 else f"y = {slope:g} x")
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)
    ax.set_title(title)
    ax.set_xlabel("numerical gradient (central differences)")
    ax.set_ylabel("hand-written gradient")
    ax.legend()
    return ax
