"""Lesson 09's figures: the sinusoidal table, offset grids, RoPE's turning pairs, accuracy by shift/length.

Colour-blind-safe throughout: RdBu_r for signed values (:data:`helpers.plots.DIVERGING`)
and the Okabe-Ito palette for lines (:data:`helpers.plots.LINES`).
"""

import matplotlib.pyplot as plt
import numpy as np

from ...plots import DIVERGING, LINES, heatmap


def encoding_table(PE, *, title="The sinusoidal encoding: one row per position"):
    """The table ``PE (n, d_model)`` as a signed heatmap: positions down, columns across."""
    fig, ax = plt.subplots(figsize=(9, 3.6))
    heatmap(PE, ax=ax, cmap=DIVERGING, vmin=-1, vmax=1, annotate=False, title=title,
            xlabel="column (2i: sin, 2i + 1: cos; i = 0 turns fastest)", ylabel="position p")
    fig.tight_layout()
    return fig


def offset_grids(grids, titles, *, suptitle=""):
    """Signed heatmaps of several ``(n, n)`` grids of dot products, side by side (query row, key column)."""
    fig, axes = plt.subplots(1, len(grids), figsize=(4.6 * len(grids), 4))
    for ax, G, title in zip(np.atleast_1d(axes), grids, titles):
        heatmap(G, ax=ax, cmap=DIVERGING, annotate=False, title=title,
                xlabel="position of the key", ylabel="position of the query")
    fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def turning_pairs(pair, angles, *, title="RoPE turns each pair of coordinates by its own angle"):
    """One 2-D pair rotated to each position, for each frequency: arrows on a circle.

    Parameters
    ----------
    pair : array-like, shape (2,)
        The pair of coordinates (the same at every position, to show the turning only).
    angles : dict of label -> ndarray (positions,)
        The angle at each position, for each pair index.
    """
    fig, axes = plt.subplots(1, len(angles), figsize=(3.6 * len(angles), 3.6))
    radius = float(np.hypot(*pair))
    for ax, (label, theta) in zip(np.atleast_1d(axes), angles.items()):
        circle = np.linspace(0, 2 * np.pi, 200)
        ax.plot(radius * np.cos(circle), radius * np.sin(circle), color="0.8", linewidth=1)
        colours = plt.get_cmap("viridis")(np.linspace(0, 0.9, len(theta)))
        for p, (t, colour) in enumerate(zip(theta, colours)):
            x = pair[0] * np.cos(t) - pair[1] * np.sin(t)
            y = pair[0] * np.sin(t) + pair[1] * np.cos(t)
            ax.annotate("", xy=(x, y), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=colour))
            ax.text(1.12 * x, 1.12 * y, str(p), ha="center", va="center", fontsize=8, color=colour)
        ax.set_aspect("equal")
        ax.set_xlim(-1.3 * radius, 1.3 * radius)
        ax.set_ylim(-1.3 * radius, 1.3 * radius)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("coordinate 2i")
        ax.set_ylabel("coordinate 2i + 1")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def accuracy_by_shift(results, *, title="Held-out accuracy when every sentence moves right by k words"):
    """Accuracy against the shift, one line per way of encoding position.

    Parameters
    ----------
    results : dict of label -> list of dicts (one per seed) shift -> accuracy
        Each seed is drawn faint; the median over seeds bold, with markers.
    """
    fig, ax = plt.subplots(figsize=(8, 4))
    for (label, runs), colour in zip(results.items(), LINES):
        shifts = sorted(runs[0])
        table = np.array([[run[k] for k in shifts] for run in runs])     # (seeds, shifts)
        for row in table:
            ax.plot(shifts, row, color=colour, alpha=0.3, linewidth=1)
        ax.plot(shifts, np.median(table, axis=0), color=colour, linewidth=2.2, marker="o",
                label=f"{label} (median of {len(runs)} seed{'s' if len(runs) > 1 else ''})")
    ax.set_xticks(shifts)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("shift k (filler words before the sentence)")
    ax.set_ylabel("held-out accuracy (both answers right)")
    ax.set_title(title)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def accuracy_by_length(results, train_length, *, title=""):
    """Grouped bars: accuracy at each sequence length, one colour per encoding (None: not runnable)."""
    fig, ax = plt.subplots(figsize=(8, 3.8))
    labels = list(results)
    lengths = sorted(next(iter(results.values())))
    width = 0.8 / len(labels)
    for j, (label, colour) in enumerate(zip(labels, LINES)):
        for i, length in enumerate(lengths):
            value = results[label][length]
            x = i + (j - (len(labels) - 1) / 2) * width
            if value is None:
                ax.text(x, 0.02, "cannot\nrun", ha="center", va="bottom", fontsize=7, color=colour)
            else:
                ax.bar(x, value, width, color=colour, label=label if i == 0 else None)
    ax.set_xticks(range(len(lengths)),
                  labels=[f"{L} tokens ({L / train_length:g}x)" for L in lengths])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("sequence length (trained on the first)")
    ax.set_ylabel("accuracy (token two back)")
    ax.set_title(title)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig
