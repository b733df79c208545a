"""Lesson 10's figure of the routes over seeds (Okabe-Ito colours: :data:`helpers.plots.LINES`)."""

import matplotlib.pyplot as plt
import numpy as np

from ...plots import LINES


def weights_by_seed(seeds, weights, labels, routes, *, ax=None, title=""):
    """Grouped bars: for each seed, a few mean attention weights side by side, its route below.

    Parameters
    ----------
    seeds : list of int, length S
    weights : array_like, shape (S, K)
        K weights per seed (e.g. from "it", its noun and the other noun to the adjective).
    labels : list of str, length K
        What each bar of a group is.
    routes : list of str, length S
        Written under each seed's number.

    Returns
    -------
    matplotlib Axes
    """
    W = np.asarray(weights, dtype=float)
    if W.shape != (len(seeds), len(labels)) or len(routes) != len(seeds):
        raise ValueError(f"weights_by_seed: weights must be (seeds, labels) = "
                         f"{(len(seeds), len(labels))} with one route per seed, got {W.shape} "
                         f"and {len(routes)} routes")
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.6))
    width = 0.8 / len(labels)
    for k, (label, color) in enumerate(zip(labels, LINES)):
        ax.bar(np.arange(len(seeds)) + (k - (len(labels) - 1) / 2) * width, W[:, k], width,
               color=color, label=label)
    ax.set_xticks(range(len(seeds)), labels=[f"seed {s}\n{r}" for s, r in zip(seeds, routes)])
    ax.set_ylim(0, 1)
    ax.set_ylabel("mean attention weight (layer 1)")
    ax.set_xlabel("seed, and its route (found by ablation)")
    ax.set_title(title)
    ax.legend(fontsize=9, ncol=len(labels), loc="upper right")
    return ax
