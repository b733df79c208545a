"""Lesson 01's figure: one bar per word (a query's score on every key).

Colour-blind-safe Okabe-Ito colours (:mod:`helpers.plots`).
"""

import matplotlib.pyplot as plt

from ...plots import BLUE


def bars(words, values, *, title, ylabel, xlabel="key token j"):
    """One bar per word (e.g. a query's score on every key), with the zero line.

    Returns
    -------
    matplotlib Axes
    """
    fig, ax = plt.subplots(figsize=(8, 3.4))
    ax.bar(range(len(words)), values, color=BLUE)
    ax.set_xticks(range(len(words)), labels=words, rotation=45, ha="right")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    return ax
