"""Lesson 08's figures: loss curves, and where a pronoun looks in whole sentences.

Colour-blind-safe colours throughout: viridis for attention weights (as in
:mod:`helpers.plots`) and the Okabe-Ito palette for lines.
"""

import matplotlib.pyplot as plt
import numpy as np

from ...plots import LINES, SEQUENTIAL, heatmap


def smooth(values, window=25):
    """Moving average over ``window`` steps: ``(steps, averages)``, one per full window.

    Parameters
    ----------
    values : 1-D array_like, length N >= 1
    window : int >= 1 (cut down to N if larger)

    Returns
    -------
    steps : ndarray, shape (N - window + 1,)
        The 1-based step at the end of each window.
    averages : ndarray, same shape
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"smooth: values must be a non-empty 1-D array, got shape {values.shape}")
    window = max(1, min(int(window), len(values)))
    sums = np.cumsum(np.concatenate([[0.0], values]))
    averages = (sums[window:] - sums[:-window]) / window
    return np.arange(window, len(values) + 1), averages


def loss_curves(curves, *, ax=None, window=25, title="", log=False):
    """Training-loss curves: each step faint, a moving average drawn over it.

    Parameters
    ----------
    curves : dict of label -> 1-D array (the loss at each step), or -> list of such arrays
        A list is several runs (seeds): each is drawn faint and their median, step by
        step, is smoothed and drawn bold.
    ax : matplotlib Axes, optional
    window : int
        Steps in the moving average.
    log : bool
        Log scale for the loss.

    Returns
    -------
    matplotlib Axes
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    for (label, runs), color in zip(curves.items(), LINES):
        runs = [np.asarray(runs, dtype=float)] if np.ndim(runs[0]) == 0 else \
            [np.asarray(r, dtype=float) for r in runs]
        for run in runs:
            ax.plot(np.arange(1, len(run) + 1), run, color=color, alpha=0.25, linewidth=0.8)
        middle = np.median(np.stack(runs), axis=0)
        steps, averages = smooth(middle, window)
        what = f"median of {len(runs)} runs" if len(runs) > 1 else "one run"
        ax.plot(steps, averages, color=color, linewidth=2.2,
                label=f"{label} ({what}, mean of {min(window, len(middle))} steps)")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss (cross-entropy)")
    ax.set_title(title)
    ax.legend(fontsize=9)
    return ax


def sentence_weights(weights, sentences, query, *, ax=None, title="", row_labels=None,
                     outline=None):
    """Where the query word looks: one row per sentence, each word's cell coloured by its weight.

    Parameters
    ----------
    weights : ndarray, shape (rows, n)
        Row r: the query's attention weights over the n words of sentence r.
    sentences : list of str, length rows
        Each with n words.
    query : int or sequence of int, length rows
        Position of the query word in each sentence (drawn with a thick frame).
    row_labels : list of str, optional
        Written left of each row (e.g. "head 0").
    outline : sequence of int, optional
        One position per row to mark with a dashed frame (e.g. the right answer).

    Returns
    -------
    matplotlib Axes
    """
    W = np.asarray(weights, dtype=float)
    if W.ndim != 2 or W.shape[0] != len(sentences):
        raise ValueError(f"sentence_weights: weights must be (rows, n) with one row per sentence, "
                         f"got shape {W.shape} for {len(sentences)} sentences")
    words = [s.split() for s in sentences]
    if any(len(w) != W.shape[1] for w in words):
        raise ValueError(f"sentence_weights: every sentence must have {W.shape[1]} words")
    query = np.broadcast_to(np.asarray(query), (len(sentences),))
    if ax is None:
        _, ax = plt.subplots(figsize=(1.05 * W.shape[1] + 2, 0.55 * len(sentences) + 1.2))
    image = ax.imshow(W, cmap=SEQUENTIAL, vmin=0, vmax=1, aspect="auto")
    for (r, j), value in np.ndenumerate(W):
        ax.text(j, r, f"{words[r][j]}\n{value:.2f}", ha="center", va="center", fontsize=8,
                color="black" if value > 0.5 else "white")
    for r, q in enumerate(query):
        ax.add_patch(plt.Rectangle((q - 0.5, r - 0.5), 1, 1, fill=False, linewidth=2.5,
                                   edgecolor="#E69F00"))
        if outline is not None:
            for colour, style, width in (("black", "-", 2.5), ("white", "--", 1.5)):   # shows on any colour
                ax.add_patch(plt.Rectangle((outline[r] - 0.47, r - 0.47), 0.94, 0.94, fill=False,
                                           linewidth=width, linestyle=style, edgecolor=colour))
    ax.set_xticks(range(W.shape[1]))
    ax.set_yticks(range(len(sentences)), labels=row_labels if row_labels is not None
                  else [f"sentence {r + 1}" for r in range(len(sentences))])
    ax.set_xlabel("word position (framed in orange: the query word; dashed: its answer)"
                  if outline is not None else "word position (framed in orange: the query word)")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.03, pad=0.02, label="attention weight")
    return ax


def relations_by_heads(tables, relations, *, title=""):
    """Side-by-side heatmaps of "mean weight on each relation's word" (rows) per head (columns).

    Parameters
    ----------
    tables : dict of str -> ndarray, shape (num_relations, num_heads)
        One panel per entry (e.g. ``{"two heads": ..., "one head": ...}``), its width
        proportional to its number of heads.
    relations : list of str, length num_relations
        The row labels, written once, left of the first panel.

    Returns
    -------
    matplotlib Figure
    """
    tables = {name: np.asarray(t, dtype=float) for name, t in tables.items()}
    if any(t.ndim != 2 or t.shape[0] != len(relations) for t in tables.values()):
        raise ValueError(f"relations_by_heads: every table must be (num_relations, num_heads) "
                         f"with {len(relations)} rows, got "
                         f"{[t.shape for t in tables.values()]}")
    widths = [t.shape[1] + 0.6 for t in tables.values()]
    fig, axes = plt.subplots(1, len(tables), figsize=(2.2 + 1.6 * sum(widths), 3),
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    for i, (ax, (name, table)) in enumerate(zip(axes[0], tables.items())):
        heatmap(table, relations if i == 0 else None, [str(h) for h in range(table.shape[1])],
                ax=ax, vmin=0, vmax=1, title=name, xlabel="head",
                ylabel="relation" if i == 0 else "")
        if i:
            ax.set_yticks([])
    fig.suptitle(title)
    fig.tight_layout()
    return fig
