"""Lesson 10's figure of the routes over seeds (Okabe-Ito colours: :data:`helpers.plots.LINES`)."""

import matplotlib.pyplot as plt
import numpy as np

from ...plots import GREEN, LINES, heatmap
from ..l08_training.plots import loss_curves

__all__ = ["by_position", "circuit_matrices", "induction_losses", "induction_maps", "loss_curves",
           "weights_by_seed"]


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


# ------------------------------------------------------------------ induction (section 8)
def _colorbar(ax, image, label):
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04).set_label(label)


def induction_maps(run, tokens, first, second, query, *, letters=None):
    """Layer 1's and layer 2's attention on one held-out sequence, the question marked.

    Parameters
    ----------
    run : one result of :func:`.induction.train_runs` (two layers)
    tokens : int ndarray (n,); first, second : where the segment starts, each time
    query : int, a position inside the repeat
    letters : list of str, optional: a name for each token id (default "a", "b", ...)

    Returns
    -------
    matplotlib Figure
    """
    from . import induction
    letters = letters or [chr(ord("a") + i) for i in range(induction.VOCAB_SIZE)]
    words = [letters[t] for t in tokens]
    _, weights = induction.forward(induction.stack(run), tokens[None])
    source = query - (second - first) + 1
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    frames = [("layer 1: the previous-token head", source, source - 1,
               f"row {source} (the answer's position): the token before it"),
              ("layer 2: the induction head", query, source,
               f"row {query} (the query): the token after the earlier copy")]
    for ax, w, (title, row, col, label) in zip(axes, weights, frames):
        image = heatmap(w[0, 0], words, words, ax=ax, vmin=0, vmax=1, annotate=False, colorbar=False,
                        title=title, xlabel="key position j (its token)", ylabel="query position i")
        _colorbar(ax, image, "attention weight")
        # the answer's cell: dashed white, as the head view frames an answer, over black so
        # that it shows on every colour of the map
        ax.add_patch(plt.Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, lw=3.5, edgecolor="black"))
        ax.add_patch(plt.Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, lw=2, linestyle="--",
                                   edgecolor="white", label=label))
        for start in (first, second):                              # the segment's two copies
            ax.axvspan(start - 0.5, start + induction.SEGMENT - 0.5, ymin=0.98, ymax=1.0,
                       color=GREEN)
        ax.set_xticks(range(len(words)), labels=[f"{w}\n{j}" for j, w in enumerate(words)], fontsize=8)
        ax.set_yticks(range(len(words)), labels=[f"{j} {w}" for j, w in enumerate(words)], fontsize=8)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=8, facecolor="0.8")
    fig.suptitle(f"A held-out sequence; the segment (green bars) repeats. Query: position {query} "
                 f"(\"{words[query]}\"); the answer is at {source} (\"{words[source]}\")")
    fig.tight_layout()
    return fig


def induction_losses(runs_by_depth, *, window=50, title="", chance=None):
    """Next-token loss curves, one colour per seed, one line style per depth.

    Parameters
    ----------
    runs_by_depth : dict of label -> list of results of :func:`.induction.train_runs`
        e.g. ``{"two layers": two_ind, "one layer": one_ind}``; the same seeds in each.
    chance : float, optional
        The loss of a uniform guess (ln vocab), drawn as a grey dotted line.

    Returns
    -------
    matplotlib Axes
    """
    from ..l08_training.plots import smooth
    _, ax = plt.subplots(figsize=(9, 4.2))
    for (label, runs), style in zip(runs_by_depth.items(), ("-", "--", ":")):
        for run, color in zip(runs, LINES):
            steps, averages = smooth(run["loss"], window)
            ax.plot(steps, averages, style, color=color, linewidth=1.6,
                    label=f"{label}, seed {run['config']['seed']}")
    if chance is not None:
        ax.axhline(chance, color="0.5", linestyle=":", linewidth=1.5, label=f"a uniform guess ({chance:.2f})")
    ax.set_xlabel("training step")
    ax.set_ylabel(f"next-token loss (mean of {window} steps)")
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2)
    return ax


def by_position(found, *, seeds=None, title=""):
    """Two panels from :func:`.induction.by_position`: layer 1's previous-token weight by
    position, and the accuracy by the answer's position, one line per seed.

    Returns
    -------
    matplotlib Figure
    """
    previous, accuracy, answers = found["previous"], found["accuracy"], found["answers"]
    seeds = list(range(len(previous))) if seeds is None else list(seeds)
    positions = np.arange(previous.shape[1])
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for row, seed, color in zip(range(len(previous)), seeds, LINES):
        left.plot(positions, previous[row], "o-", color=color, markersize=3, label=f"seed {seed}")
        right.plot(positions, accuracy[row], "o-", color=color, markersize=3, label=f"seed {seed}")
    left.set_title("layer 1: weight of position i on i - 1")
    left.set_xlabel("position i")
    left.set_ylabel("mean attention weight (held out)")
    left.set_ylim(0, 1)
    left.legend(fontsize=8)
    right.set_title("accuracy where the answer sits at position j")
    right.set_xlabel("position j of the answer (determined places)")
    right.set_ylabel("held-out accuracy")
    right.set_ylim(0, 1.05)
    share = right.twinx()
    share.bar(positions, answers / answers.sum(), color="0.8", width=0.6, zorder=0)
    share.set_ylabel("share of the answers at j (grey bars)")
    right.set_zorder(share.get_zorder() + 1)
    right.patch.set_visible(False)
    for ax in (left, right):
        ax.set_xticks(positions)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def circuit_matrices(run, *, letters=None):
    """The last layer's OV circuit and its K-composition QK circuit (:func:`.induction.circuits`).

    Returns
    -------
    matplotlib Figure
    """
    from . import induction
    letters = letters or [chr(ord("a") + i) for i in range(induction.VOCAB_SIZE)]
    found = induction.circuits(run)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    panels = [("OV", "OV circuit  $W_E W_v W_o W_U$ (layer 2)", "token attended to", "logit raised",
               "effect on the logit"),
              ("QK", "QK circuit, K-composition (layer 2 on layer 1's OV)", "query token",
               "previous token of the key", "q·k (not divided by √d_k)")]
    for ax, (name, title, rows, cols, label) in zip(axes, panels):
        image = heatmap(found[name], letters, letters, ax=ax, annotate=False, colorbar=False,
                        title=title, xlabel=cols, ylabel=rows)
        _colorbar(ax, image, label)
    fig.suptitle(f"Seed {run['config']['seed']}: the diagonal is each token to itself")
    fig.tight_layout()
    return fig
