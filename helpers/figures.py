"""One-call figures for lessons 02 and 03: measurements against d_k, and a row of
scores beside its softmax.

Colour-blind-safe Okabe-Ito colours, as in :mod:`helpers.plots`.
"""

import matplotlib.pyplot as plt

from .plots import log_axes

OKABE_ITO = {"orange": "#D55E00", "blue": "#0072B2", "pink": "#CC79A7", "green": "#009E73"}
_STYLES = [("o-", "orange"), ("s-", "blue"), ("^-", "pink"), ("D-", "green")]


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
        ax.plot(dks, values, marker, color=OKABE_ITO[colour], label=label)
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
    panels = [(left, scores, "orange", f"Scores of the query '{query}' (any real number)",
               "scaled score"),
              (right, weights, "blue", "After the softmax: positive, summing to 1",
               "attention weight")]
    for ax, values, colour, title, ylabel in panels:
        ax.bar(range(len(words)), values, color=OKABE_ITO[colour])
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(words)), labels=words, rotation=45, ha="right")
        ax.set_title(title)
        ax.set_xlabel("key token j")
        ax.set_ylabel(ylabel)
    fig.tight_layout()
    return fig
