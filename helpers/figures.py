"""One-call figures for lessons 01-05: scores as bars, measurements against d_k, a row of
scores beside its softmax, which columns go to which head, and power laws on two kinds of axes.

Colour-blind-safe Okabe-Ito colours, as in :mod:`helpers.plots`.
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

from .plots import BLACK, BLUE, GREEN, OKABE_ITO, PURPLE, VERMILLION, log_axes

_STYLES = [("o-", VERMILLION), ("s-", BLUE), ("^-", PURPLE), ("D-", GREEN)]   # Okabe-Ito (helpers.plots)


def against_dk(dks, lines, *, title, ylabel, prediction=None):
    """Measured lines against d_k on log-log axes (a power law is a straight line).

    Parameters
    ----------
    dks : sequence of int
        The sizes measured (labelled on the x axis as plain numbers).
    lines : dict of label -> sequence of numbers, one per d_k
    prediction : (label, values), optional
        Drawn as a dashed black line under the measurements.

    Returns
    -------
    matplotlib Axes
    """
    _, ax = plt.subplots(figsize=(7, 4.5))
    if prediction is not None:
        label, values = prediction
        ax.plot(dks, values, color="black", linestyle="--", linewidth=1, label=label)
    for (label, values), (marker, colour) in zip(lines.items(), _STYLES):
        ax.plot(dks, values, marker, color=colour, label=label)
    log_axes(ax, "xy", xticks=dks)
    ax.set_title(title)
    ax.set_xlabel("d_k (size of each query and key)")
    ax.set_ylabel(ylabel)
    ax.legend()
    return ax


def scores_and_weights(words, scores, weights, query):
    """Two bar charts side by side: a query's scores over the keys, then its softmax weights.

    Parameters
    ----------
    words : list of str, the key tokens
    scores, weights : sequences of numbers, one per key
    query : str, the query token (for the titles)

    Returns
    -------
    matplotlib Figure
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 3.6))
    panels = [(left, scores, VERMILLION, f"Scores of the query '{query}' (any real number)",
               "scaled score"),
              (right, weights, BLUE, "After the softmax: positive, summing to 1",
               "attention weight")]
    for ax, values, colour, title, ylabel in panels:
        ax.bar(range(len(words)), values, color=colour)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(words)), labels=words, rotation=45, ha="right")
        ax.set_title(title)
        ax.set_xlabel("key token j")
        ax.set_ylabel(ylabel)
    fig.tight_layout()
    return fig


def bars(words, values, *, title, ylabel, xlabel="key token j"):
    """One bar per word (e.g. a query's score on every key), with the zero line.

    Returns
    -------
    matplotlib Axes
    """
    _, ax = plt.subplots(figsize=(7, 3))
    ax.bar(range(len(words)), values, color=BLUE)
    ax.set_xticks(range(len(words)), labels=words)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax


#: One colour per head: the eight of the Okabe-Ito palette, in its standard order.
HEAD_COLOURS = OKABE_ITO


def head_columns(words, d_model, num_heads):
    """Which columns of Q go to which head: a band of colour per head, across every token.

    Parameters
    ----------
    words : list of str, the tokens (one row each)
    d_model, num_heads : int, ``num_heads`` divides ``d_model``; at most 8 heads

    Returns
    -------
    matplotlib Axes
    """
    if d_model % num_heads or not 1 <= num_heads <= len(HEAD_COLOURS):
        raise ValueError(f"head_columns: num_heads must divide d_model and be 1..{len(HEAD_COLOURS)}, "
                         f"got d_model={d_model}, num_heads={num_heads}")
    n, d_head = len(words), d_model // num_heads
    head_of_column = np.arange(d_model) // d_head                 # (d_model,): column j -> head
    _, ax = plt.subplots(figsize=(12, 3.2))
    ax.imshow(np.tile(head_of_column, (n, 1)), cmap=ListedColormap(HEAD_COLOURS[:num_heads]),
              aspect="auto", interpolation="nearest")
    for i in range(num_heads):
        ax.text(i * d_head + d_head / 2 - 0.5, n / 2 - 0.5,
                f"head {i}\n{i * d_head}–{(i + 1) * d_head - 1}", ha="center", va="center",
                fontsize=9, color="white" if HEAD_COLOURS[i] in (BLACK, BLUE, VERMILLION)
                else "black")
    ax.set_xticks(np.arange(0, d_model + 1, d_head))
    ax.set_yticks(range(n), labels=words)
    ax.set_title(f"Which columns of Q (and of K and V) go to which head: column j → head j // {d_head}")
    ax.set_xlabel(f"column of Q (d_model = {d_model})")
    ax.set_ylabel("token")
    return ax


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
        for (label, costs), (marker, colour) in zip(laws.items(), _STYLES):
            ax.plot(sizes, costs, marker, color=colour, label=label)
        if scale == "log":
            log_axes(ax, xticks=sizes)                        # log-log, plain-number labels
        ax.set_title(f"Two power laws on {scale} axes")
        ax.set_xlabel("size n")
        ax.set_ylabel("cost")
        ax.legend()
    fig.tight_layout()
    return fig
