"""A head view: where one word looks, in every layer and every head of a trained model at once.

For a held-out sentence and a chosen word, one row per (layer, head): the word's
attention weights over the sentence (viridis, 0 to 1, each cell labelled with its word
and weight; the chosen word framed). Works with every trained result of lessons 08-10:
it rebuilds the model from ``result["config"]`` (lesson 10's stack for ``readout="pointer"``,
else lesson 08's one layer with lesson 09's ``position``).

:func:`head_view_explorer` puts a sentence slider and a word menu above the picture
(ipywidgets API common to 7.7 and 8: ``SelectionSlider``, ``Dropdown``, ``VBox``, ``Image``).
"""

import numpy as np

from ... import widgets
from ..l08_training import plots as l08_plots
from ..l09_position import model as l09
from . import model


def _corpus(result):
    """The result's corpus, after the checks :func:`attention_maps` makes (a clear error for a
    result that has no sentences, such as the induction model's)."""
    if not result.get("config"):
        raise ValueError("head_view: result must be a trained result of lessons 08-10 (it has no 'config')")
    if result["config"].get("readout") == "next token":
        raise ValueError("head_view: the induction model has no sentences to pick from; its maps are "
                         "drawn by plots.induction_maps")
    return result["corpus"]


def attention_maps(result, tokens):
    """Every layer's attention weights on ``tokens`` (B, n): a list of (B, num_heads, n, n).

    The model is rebuilt from ``result["config"]``: its task, heads, scale, position, layers.
    """
    if not result.get("config"):
        raise ValueError("head_view: result must be a trained result of lessons 08-10 (it has no 'config')")
    config, params = result["config"], result["params"]
    if config["readout"] == "next token":
        raise ValueError("head_view: the induction model has no sentences to pick from; its maps are "
                         "drawn by plots.induction_maps")
    if config["readout"] == "pointer":                            # lesson 10: a stack of layers
        mask = model.task_mask(config["task"], tokens.shape[-1])
        return model.forward(params, tokens, config["num_heads"], config["scale"], mask)[1]
    return [l09.forward(params, tokens, config["num_heads"], config["scale"], config["position"])[2]]


def rows_of(result, tokens, position):
    """The attention of word ``position`` of one sentence ``tokens`` (n,), per layer and head.

    Returns
    -------
    rows : ndarray, shape (num_layers * num_heads, n)
        Row ``(l - 1) * num_heads + (h - 1)``: layer l, head h.
    labels : list of str
        ``"layer l, head h"`` for each row, both counted from 1.
    """
    n = len(tokens)
    if not 0 <= position < n:
        raise ValueError(f"head_view: position must be from 0 to {n - 1}, got {position!r}")
    weights = attention_maps(result, np.asarray(tokens)[None])    # list of (1, h, n, n)
    num_heads = weights[0].shape[1]
    rows = np.concatenate([w[0, :, position] for w in weights])   # (L * h, n)
    labels = [f"layer {layer}, head {head}" for layer in range(1, len(weights) + 1)
              for head in range(1, num_heads + 1)]
    return rows, labels


def attention_rows(result, index, position):
    """:func:`rows_of` for word ``position`` of held-out sentence ``index``."""
    test = _corpus(result).test
    if not 0 <= index < len(test):
        raise ValueError(f"head_view: index must be from 0 to {len(test) - 1}, got {index!r}")
    return rows_of(result, test.tokens[index], position)


def spread(split, step=40, shift=9):
    """Indices of sentences spread over a whole split: every ``step``-th, moved on by ``shift``.

    Lesson 10's held-out split holds 40 sentences per pair of nouns (2 orders x 5 shapes x 4
    adjectives, in that order): this takes one from each pair, a different order, shape and
    adjective each time. Returns a list of int.
    """
    return [k * step + (k * shift) % step for k in range(len(split) // step)]


def draw_head_view(fig, result, index, position):
    """Draw :func:`attention_rows` for one sentence and word into the matplotlib figure ``fig``."""
    rows, labels = attention_rows(result, index, position)
    test = _corpus(result).test
    sentence = test.sentences[index]
    answer = test.targets[index, 0] if position == test.query[index] else None
    ax = fig.add_subplot()
    l08_plots.sentence_weights(rows, [sentence] * len(rows), position, ax=ax,
                                    row_labels=labels,
                                    outline=None if answer is None else [answer] * len(rows),
                                    title=f"Where \"{sentence.split()[position]}\" looks, in every "
                                          f"layer and head (held-out sentence {index})")
    fig.tight_layout()


def plot_sentence(result, sentence, word=None, figsize=(10.0, 2.6)):
    """The head view of a sentence you type (words of the result's vocabulary, as many as it was
    trained on); ``word`` (a position) defaults to "it", else the last word.
    """
    import matplotlib.pyplot as plt

    corpus = _corpus(result)
    tokens = corpus.encode(sentence)
    n = corpus.test.tokens.shape[1]
    if len(tokens) != n:
        raise ValueError(f"plot_sentence: the model was trained on sentences of {n} words; "
                         f"got {len(tokens)}: {sentence!r}")
    words = sentence.lower().split()
    position = (words.index("it") if "it" in words else n - 1) if word is None else int(word)
    rows, labels = rows_of(result, tokens, position)
    fig = plt.figure(figsize=(figsize[0], figsize[1] + 0.4 * len(rows)))
    l08_plots.sentence_weights(rows, [" ".join(words)] * len(rows), position, ax=fig.add_subplot(),
                               row_labels=labels,
                               title=f"Where \"{words[position]}\" looks, in every layer and head")
    fig.tight_layout()
    return fig


def head_view_explorer(result, sentences=None, figsize=(10.0, 3.2)):
    """A sentence slider and a word menu above :func:`draw_head_view`.

    Parameters
    ----------
    result : a trained result of lessons 08-10
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

    test = _corpus(result).test
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

    from ... import plots

    test = _corpus(result).test
    words = test.sentences[index].split()
    weights = attention_maps(result, test.tokens[index:index + 1])   # list of (1, h, n, n)
    num_heads = weights[0].shape[1]
    panels = [(l, h, w[0, h]) for l, w in enumerate(weights, start=1) for h in range(num_heads)]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.6), squeeze=False)
    for ax, (l, h, W) in zip(axes[0], panels):
        plots.heatmap(W, words, words, ax=ax, vmin=0, vmax=1, annotate=False,
                      title=f"layer {l}, head {h + 1}", xlabel="key token j", ylabel="query token i")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot(result, index, position=None, figsize=(10.0, 2.6)):
    """:func:`draw_head_view` in a figure of its own; ``position`` defaults to the query."""
    import matplotlib.pyplot as plt

    if position is None:
        position = int(_corpus(result).test.query[index])
    rows = len(attention_rows(result, index, position)[0])
    fig = plt.figure(figsize=(figsize[0], figsize[1] + 0.4 * rows))
    draw_head_view(fig, result, index, int(position))
    return fig
