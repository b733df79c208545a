"""A head view: where one word looks, in every layer and every head of a trained model at once.

For a held-out sentence and a chosen word, one row per (layer, head): the word's
attention weights over the sentence (viridis, 0 to 1, each cell labelled with its word
and weight; the chosen word framed). Works with the results of
``helpers.training.train_attention``: lesson 08's one-layer models and lesson 10's stacks.

:func:`head_view_explorer` puts a sentence slider and a word menu above the picture
(ipywidgets API common to 7.7 and 8: ``SelectionSlider``, ``Dropdown``, ``VBox``, ``Image``).
"""

import numpy as np

from . import layers, training, training_plots, widgets


def _describe(result):
    """``(forward, num_heads, mask)`` for a result of lesson 08 or lesson 10."""
    num_heads = int(np.shape(result["attention_to_targets"])[-1])
    config = result.get("config", {})
    if config.get("task") in layers.TASKS:                        # lesson 10: a stack of layers
        n = result["corpus"].test.tokens.shape[1]
        mask = layers.task_mask(config["task"], n)
        scale = config.get("scale", True)
        return (lambda tokens: layers.forward(result["params"], tokens, num_heads, scale, mask)[1],
                num_heads)
    if "W_q" in result["params"]:                                 # lesson 08: one layer
        return (lambda tokens: [training.forward(result["params"], tokens, num_heads)[2]],
                num_heads)
    raise ValueError("head_view: result must come from helpers.training.train_attention "
                     "(lesson 08 or lesson 10)")


def attention_rows(result, index, position):
    """The attention of word ``position`` of held-out sentence ``index``, per layer and head.

    Returns
    -------
    rows : ndarray, shape (num_layers * num_heads, n)
        Row ``(l - 1) * num_heads + h``: layer l, head h.
    labels : list of str
        ``"layer l, head h"`` for each row.
    """
    forward, num_heads = _describe(result)
    test = result["corpus"].test
    if not 0 <= index < len(test):
        raise ValueError(f"head_view: index must be from 0 to {len(test) - 1}, got {index!r}")
    n = test.tokens.shape[1]
    if not 0 <= position < n:
        raise ValueError(f"head_view: position must be from 0 to {n - 1}, got {position!r}")
    weights = forward(test.tokens[index:index + 1])               # list of (1, h, n, n)
    rows = np.concatenate([w[0, :, position] for w in weights])   # (L * h, n)
    labels = [f"layer {l}, head {h}" for l in range(1, len(weights) + 1) for h in range(num_heads)]
    return rows, labels


def draw_head_view(fig, result, index, position):
    """Draw :func:`attention_rows` for one sentence and word into the matplotlib figure ``fig``."""
    rows, labels = attention_rows(result, index, position)
    test = result["corpus"].test
    sentence = test.sentences[index]
    answer = test.targets[index, 0] if position == test.query[index] else None
    ax = fig.add_subplot()
    training_plots.sentence_weights(rows, [sentence] * len(rows), position, ax=ax,
                                    row_labels=labels,
                                    outline=None if answer is None else [answer] * len(rows),
                                    title=f"Where \"{sentence.split()[position]}\" looks, in every "
                                          f"layer and head (held-out sentence {index})")
    fig.tight_layout()


def head_view_explorer(result, sentences=None, figsize=(10.0, 3.2)):
    """A sentence slider and a word menu above :func:`draw_head_view`.

    Parameters
    ----------
    result : dict from ``train_attention``
    sentences : list of int, optional
        Indices of held-out sentences to offer (default: the first 20).
    figsize : (float, float)

    Returns
    -------
    box : ipywidgets.VBox
        Leave it last in the cell to show it.
    redraw : callable index -> bytes
        Redraws for a sentence (the word menu's position kept); returns the PNG.
    """
    import ipywidgets

    test = result["corpus"].test
    sentences = list(range(min(20, len(test)))) if sentences is None else [int(i) for i in sentences]
    first = sentences[0]

    def words(index):
        return [(f"{w} (word {i})", i) for i, w in enumerate(test.sentences[index].split())]

    menu = ipywidgets.Dropdown(options=words(first), value=int(test.query[first]),
                               description="word")
    slider = widgets.choice_slider(sentences, first, "sentence")
    state = {"busy": False, "index": first}

    def draw(fig, index):
        if index != state["index"]:               # a new sentence: its words, the same position
            position = menu.value
            if position == test.query[state["index"]]:
                position = int(test.query[index])    # it was the query: follow the query
            state["busy"], state["index"] = True, index
            menu.options = words(index)
            menu.value = position
            state["busy"] = False
        draw_head_view(fig, result, index, menu.value)

    rows = len(attention_rows(result, first, 0)[0])               # layers x heads
    box, redraw = widgets.figure_slider(slider, draw, figsize=(figsize[0], figsize[1] + 0.4 * rows))
    menu.observe(lambda change: state["busy"] or redraw(slider.value), names="value")
    return ipywidgets.VBox([menu, box]), redraw


def layer_maps(result, index, title=""):
    """Every layer's and head's whole attention map for held-out sentence ``index``, side by side.

    One heatmap per (layer, head): row i is where token i looks (viridis, 0 to 1), the
    tokens written along both axes.

    Returns
    -------
    matplotlib Figure
    """
    import matplotlib.pyplot as plt

    from . import plots

    forward, num_heads = _describe(result)
    test = result["corpus"].test
    words = test.sentences[index].split()
    weights = forward(test.tokens[index:index + 1])               # list of (1, h, n, n)
    panels = [(l, h, w[0, h]) for l, w in enumerate(weights, start=1) for h in range(num_heads)]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.6), squeeze=False)
    for ax, (l, h, W) in zip(axes[0], panels):
        plots.heatmap(W, words, words, ax=ax, vmin=0, vmax=1, annotate=False,
                      title=f"layer {l}, head {h}", xlabel="key token j", ylabel="query token i")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot(result, index, position=None, figsize=(10.0, 2.6)):
    """:func:`draw_head_view` in a figure of its own; ``position`` defaults to the query."""
    import matplotlib.pyplot as plt

    if position is None:
        position = int(result["corpus"].test.query[index])
    rows = len(attention_rows(result, index, position)[0])
    fig = plt.figure(figsize=(figsize[0], figsize[1] + 0.4 * rows))
    draw_head_view(fig, result, index, int(position))
    return fig
