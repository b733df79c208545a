"""Lesson 03's figures and sliders: scores beside their softmax, one blend, the query explorer.

Colour-blind-safe Okabe-Ito colours (:mod:`helpers.plots`); the sliders are built with
:mod:`helpers.widgets` (the API common to ipywidgets 7.7 and 8).
"""

import matplotlib.pyplot as plt
import numpy as np

from ...plots import BLUE, GREY, VERMILLION
from ...widgets import choice_slider, live_figure


def scores_and_weights(words, scores, weights, query):
    """Two bar charts side by side: a query's scores over the keys, then its softmax weights.

    Colours as in the rest of lesson 03: blue = weights, vermillion = output only, so the
    scores are grey.

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
    panels = [(left, scores, GREY, f"Scores of the query '{query}' (any real number)",
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


def blend_plot(values, weights, tokens, query, ax=None):
    """Draw one query's output as a weighted average of two-dimensional values.

    Each token's value is a point, joined to the output (a star) by a line whose
    width grows with the token's weight. Tokens with the same value (the same word
    twice) share one point and one label, e.g. ``"the ×2 (0.08 each)"``; each label
    sits on the side of its point that faces away from the star, so none is hidden
    under it.

    Parameters
    ----------
    values : ndarray, shape (n, 2)
        One value per token.
    weights : ndarray, shape (n,)
        The query's attention weights (positive, summing to 1).
    tokens : list of str, length n
    query : str
        The query token's name, for the title and legend.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    if values.ndim != 2 or values.shape[1] != 2:
        raise ValueError(f"blend_plot: values must be (n, 2), got shape {values.shape}")
    if weights.shape != (len(values),) or len(tokens) != len(values):
        raise ValueError(f"blend_plot: {len(values)} values, weights of shape {weights.shape} "
                         f"and {len(tokens)} tokens do not match")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 5.8))
        fig.subplots_adjust(bottom=0.2, top=0.92)              # room for the legend below
    out = weights @ values                                     # (2,): the blend
    groups = {}                                                # point -> token indices
    for j, point in enumerate(map(tuple, np.round(values, 12))):
        groups.setdefault(point, []).append(j)
    span = np.ptp(np.vstack([values, out]), axis=0)
    span[span == 0] = 1.0
    labels = []                                                # (weight, text, preferred side)
    for members in groups.values():
        j = members[0]
        total = float(weights[members].sum())
        ax.plot([out[0], values[j, 0]], [out[1], values[j, 1]], color=BLUE,
                linewidth=0.5 + 12 * total, alpha=0.6)
        words = sorted({str(tokens[m]) for m in members}, key=[str(t) for t in tokens].index)
        text = "/".join(words) + (f" ×{len(members)} ({weights[j]:.2f} each)" if len(members) > 1
                                  else f" ({total:.2f})")
        away = (values[j] - out) / span                        # from the star, in axis units
        side = (1 if away[0] >= 0 else -1, 1 if away[1] >= 0 else -1)
        labels.append((total, ax.annotate(text, values[j], textcoords="offset points",
                                          xytext=(0, 0), fontsize=9), side))
    ax.scatter(values[:, 0], values[:, 1], color=BLUE, zorder=3,
               label="value v_j of each token (its weight)")
    ax.scatter(*out, marker="*", s=300, color=VERMILLION, zorder=4,
               label=f"output of '{query}' = Σ_j w_j v_j")
    ax.set_title(f"One blend: the output of '{query}' is a weighted average of the values")
    ax.set_xlabel("value dimension 0")
    ax.set_ylabel("value dimension 1")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=9)
    ax.margins(0.25)                                           # room for the labels
    ax.autoscale_view()                                        # final limits, then the labels
    _place_labels(ax, [(t, side) for _, t, side in sorted(labels, key=lambda x: -x[0])], out)
    return ax


def _place_labels(ax, labels, avoid, gap=6):
    """Put each annotation in a corner of its point where it overlaps no earlier label.

    ``labels`` is a list of (annotation, (sx, sy)): the preferred corner, +1/-1 on each
    axis. The four corners are tried, preferred first; a label also keeps clear of the
    point ``avoid`` (data coordinates, e.g. a marker drawn there) and inside the axes.
    Labels placed earlier win, so pass the most important first.
    """
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    cx, cy = ax.transData.transform(avoid)
    from matplotlib.transforms import Bbox
    taken = [Bbox([[cx - 12, cy - 12], [cx + 12, cy + 12]])]   # the star
    for text, (sx, sy) in labels:
        corners = [(sx, sy), (-sx, sy), (sx, -sy), (-sx, -sy)]
        for dx, dy in corners:
            text.set_ha("left" if dx > 0 else "right")
            text.set_va("bottom" if dy > 0 else "top")
            text.xyann = (gap * dx, gap * dy)
            box = text.get_window_extent(renderer)
            inside = (box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0
                      and box.y1 <= frame.y1)
            if inside and not any(box.overlaps(other) for other in taken):
                break
        else:                                                 # nowhere free: the preferred corner
            dx, dy = corners[0]
            text.set_ha("left" if dx > 0 else "right")
            text.set_va("bottom" if dy > 0 else "top")
            text.xyann = (gap * dx, gap * dy)
            box = text.get_window_extent(renderer)
        taken.append(box)


def query_figure(Q, K, V, tokens, features, query, weights_of):
    """Lesson 03's "the cat sat" figure: one query's weights and output, for a query you set.

    Parameters
    ----------
    Q : ndarray, shape (n, d_k)
    K : ndarray, shape (n, d_k)
    V : ndarray, shape (n, d_v)
    tokens : list of str, length n
    features : list of str, length d_v
        The names of the value features.
    query : str
        The token whose query the sliders set.
    weights_of : callable (Q, K) -> (n, n) weights
        E.g. ``lambda Q, K: softmax(attention_scores(Q, K))`` (the learner's functions).

    Returns
    -------
    fig, update, animated
        ``update(*q)`` sets the query's entries (as many as d_k) and redraws its row;
        ``animated`` lists what ``update`` changes (see :func:`helpers.widgets.live_figure`).
    """
    from matplotlib.figure import Figure

    Q, K, V = (np.asarray(M, dtype=float) for M in (Q, K, V))
    row, n = tokens.index(query), len(tokens)
    fig = Figure(figsize=(10, 3.4))
    ax_w, ax_o = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.14, top=0.86, wspace=0.22)
    bars_w = ax_w.bar(range(n), np.zeros(n), color=BLUE)
    ax_w.set_xticks(range(n), labels=tokens)
    ax_w.set_ylim(0, 1.12)
    ax_w.set_xlabel("key token j")
    ax_w.set_ylabel(f"weight of {query} on token j")
    bars_o = ax_o.bar(range(len(features)), np.zeros(len(features)), color=VERMILLION)
    ax_o.set_xticks(range(len(features)), labels=features)
    ax_o.set_ylim(0, 1)
    ax_o.set_title(f"{query}'s output = weights @ V")
    ax_o.set_xlabel("value feature")
    ax_o.set_ylabel(f"value of {query}'s output")
    labels = [ax_w.text(j, 0, "", ha="center", va="bottom") for j in range(n)]

    def update(*q):
        Q_now = Q.copy()
        Q_now[row] = q
        w = np.asarray(weights_of(Q_now, K))[row]           # (n,): the query's weights
        for bar, label, value in zip(bars_w, labels, w):
            bar.set_height(value)
            label.set_y(value)
            label.set_text(f"{value:.2f}")
        for bar, value in zip(bars_o, w @ V):               # (d_v,): its output
            bar.set_height(value)
        ax_w.set_title(f"{query}'s weights, query q_{query} = "
                       f"[{', '.join(f'{v:g}' for v in q)}]")

    return fig, update, [*bars_w, *labels, *bars_o, ax_w.title]


def query_explorer(Q, K, V, tokens, features, query, weights_of, dims=("noun", "verb"),
                   steps=None):
    """Lesson 03's "the cat sat" sliders: set one token's query, watch its weights and output.

    Parameters
    ----------
    Q, K, V, tokens, features, query, weights_of
        As for :func:`query_figure`.
    dims : tuple of str
        A name for each query entry (one slider each), e.g. ``("noun", "verb")``.
    steps : list of float, optional
        The values each slider offers; by default -2 to 6 in steps of 0.25.

    Returns
    -------
    ipywidgets.VBox
    """
    row = tokens.index(query)
    if len(dims) != np.shape(Q)[1]:
        raise ValueError(f"query_explorer: {len(dims)} slider names for queries of size "
                         f"{np.shape(Q)[1]}")
    steps = [round(float(v), 2) for v in np.arange(-2, 6.01, 0.25)] if steps is None else steps
    fig, update, animated = query_figure(Q, K, V, tokens, features, query, weights_of)
    sliders = {}
    for d, name in enumerate(dims):
        start = min(steps, key=lambda v: abs(v - float(Q[row][d])))   # the nearest step
        sliders[name] = choice_slider(steps, start, f"q_{query} {name}")
    box, _ = live_figure(fig, lambda **values: update(*(values[name] for name in dims)),
                         animated=animated, **sliders)
    return box
