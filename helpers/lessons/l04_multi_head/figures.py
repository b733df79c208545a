"""Lesson 04's figure and slider: which columns of Q go to which head; a head-count explorer.

Colour-blind-safe Okabe-Ito colours (:mod:`helpers.plots`); the slider is built with
:mod:`helpers.widgets` (the API common to ipywidgets 7.7 and 8).
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

from ... import plots
from ...plots import BLACK, BLUE, OKABE_ITO, VERMILLION
from ...widgets import figure_slider, head_count_slider


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


def head_count_explorer(multi_head_attention, X, W_q, W_k, W_v, W_o, tokens, value=8,
                        figsize=(8.5, 5.2)):
    """A head-count slider above every head's attention map (lesson 04).

    Each step calls ``multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads=h)`` (the
    learner's own, once written) and draws its ``(h, n, n)`` weights with
    :func:`helpers.plots.head_maps`, titled with ``d_head`` and the scale ``1/sqrt(d_head)``.

    Parameters
    ----------
    multi_head_attention : callable
        Returns ``(out, weights)`` with ``weights`` of shape (num_heads, n, n).
    X : ndarray, shape (n, d_model)
    W_q, W_k, W_v, W_o : ndarray, shape (d_model, d_model)
    tokens : list of str, length n
    value : int
        The head count shown first; a divisor of d_model.

    Returns
    -------
    box, redraw : as :func:`figure_slider`
    """
    d_model = X.shape[-1]

    def draw(fig, h):
        _, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads=h)   # (h, n, n)
        d_head = d_model // h
        fig.subplots_adjust(left=0.12, right=0.93, bottom=0.15, top=0.88)   # room for the labels
        ax = fig.add_subplot()
        plots.head_maps(weights, tokens, ax=ax)
        # The maps keep square cells, so they fill only part of their box: put the
        # colour bar right next to the image, not at the box's far edge.
        ax.apply_aspect()
        box = ax.get_position()
        fig.axes[-1].set_position([box.x1 + 0.015, box.y0, 0.018, box.height])
        fig.suptitle(f"{h} head{'s' if h > 1 else ''} × d_head = {d_head}  "
                     f"(scores scaled by 1/√{d_head} = {1 / d_head ** 0.5:.3f})"
                     + ("" if h <= 8 else f"\nevery tile: the {len(tokens)} tokens in sentence order, "
                        "as labelled with up to 8 heads"), fontsize=11)

    return figure_slider(head_count_slider(d_model, value=value), draw, figsize=figsize)
