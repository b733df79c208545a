"""Lesson 11's slider and figure: the kv-heads slider, and how far stacked windows reach.

The slider follows lesson 04's head-count slider
(:func:`helpers.lessons.l04_multi_head.figures.head_count_explorer`):
the ipywidgets API common to 7.7 and 8, one figure redrawn per step, headless-safe.
"""

import numpy as np

from ... import plots
from ...reference import causal_mask, mean_pool_kv_heads
from ...widgets import choice_slider, divisors, png_of
from ...plots import BLACK, BLUE, GREEN, ORANGE, PURPLE, SKY_BLUE, VERMILLION, YELLOW

#: The frame of a query head is its key/value head's colour: orange, sky blue, green, blue,
#: vermillion, purple, black, yellow (Okabe-Ito; yellow last, it is faint on white).
GROUP_COLOURS = [ORANGE, SKY_BLUE, GREEN, BLUE, VERMILLION, PURPLE, BLACK, YELLOW]

#: The right edge of the tiles' axes, as a fraction of the figure's width: room to its right
#: for the colour bar and its label (see :func:`_colourbar_beside_tiles`).
TILES_RIGHT = 0.88


def kv_heads_slider(num_heads, value=None, description="kv heads"):
    """A slider over the key/value head counts that split ``num_heads`` evenly: its divisors.

    ``value`` defaults to ``num_heads`` (multi-head attention).
    """
    options = divisors(num_heads)
    value = num_heads if value is None else value
    if value not in options:
        raise ValueError(f"kv_heads_slider: value={value!r} does not divide num_heads={num_heads}; "
                         f"choose one of {options}")
    return choice_slider(options, value, description)


def cache_numbers_per_token(num_kv_heads, d_head, num_layers=1):
    """Numbers the KV cache keeps per token: ``2 * num_kv_heads * d_head`` per layer (K and V)."""
    return 2 * num_kv_heads * d_head * num_layers


def kv_heads_explorer(grouped_query_attention, X, W_q, W_k, W_v, W_o, tokens, num_heads,
                      value=None, n_cached=4096, figsize=(8.5, 4.8), dpi=100):
    """Lesson 04's head-count slider above a kv-heads slider, above every query head's map.

    ``W_k`` and ``W_v`` are multi-head matrices, ``(d_model, d_model)``; with ``g`` key/value
    heads each group's heads are averaged (:func:`helpers.reference.mean_pool_kv_heads`),
    and each step calls ``grouped_query_attention(X, W_q, W_k_g, W_v_g, W_o, h, g,
    mask=causal_mask(n))`` (the learner's own, once written). Each query head's tile is
    labelled "kv j" with the key/value head it reads, and framed in that head's colour
    (beyond 8 kv heads, see :func:`frame_groups`).
    The head-count slider offers the divisors of d_model; the kv-heads slider the divisors
    of the current head count (moving the head count keeps the kv heads if they still divide
    it, else the largest divisor below). The title gives the cache size per token and for
    ``n_cached`` tokens, in float64.

    Returns
    -------
    box : ipywidgets.VBox
        The two sliders and the picture; display it.
    redraw : callable (num_kv_heads, num_heads=None) -> bytes
        Redraws for those counts (the head count defaults to its slider's) and returns the
        PNG; time it to measure one slider step.
    """
    import ipywidgets as widgets
    from matplotlib.figure import Figure

    from ...widgets import head_count_slider

    d_model = X.shape[-1]
    heads = head_count_slider(d_model, value=num_heads)
    kv = kv_heads_slider(num_heads, value)
    fig = Figure(figsize=figsize, dpi=dpi)
    image = widgets.Image(format="png")
    moving = {"heads": False}          # True while the head count re-offers the kv counts

    def draw(h, g):
        d_head = d_model // h
        W_k_g = mean_pool_kv_heads(W_k, h, g)                  # (d_model, g * d_head)
        W_v_g = mean_pool_kv_heads(W_v, h, g)
        _, weights = grouped_query_attention(X, W_q, W_k_g, W_v_g, W_o, h, g,
                                             mask=causal_mask(len(X)))             # (h, n, n)
        fig.set_size_inches(figsize[0], _figure_height(h, len(X), figsize))
        height = fig.get_figheight()
        below = 0.96 if h <= 8 else 0.5                      # room for the token labels (up to 8 heads)
        fig.subplots_adjust(left=0.13, right=TILES_RIGHT, bottom=below / height, top=1 - 0.96 / height)
        ax = fig.add_subplot()
        plots.head_maps(weights, tokens, ax=ax)
        frame_groups(ax, h, g, len(X))
        if h > 8:                      # tiles too small for token labels: name the order instead
            ax.set_xlabel("key token j (each tile: one head's map; rows and columns in the "
                          "sentence's order:\n" + " ".join(map(str, tokens)) + ")", labelpad=6)
        _colourbar_beside_tiles(ax)
        per_token = cache_numbers_per_token(g, d_head)
        share = "multi-head" if g == h else f"1/{h // g} of multi-head"
        if g == h:
            frames = "each query head reads its own kv head"
        elif g <= len(GROUP_COLOURS):
            frames = "frame colour and 'kv j' = the kv head a query head reads"
        else:
            frames = "'kv j' = the kv head a query head reads"
        fig.suptitle(f"{h} query head{'s' if h > 1 else ''}, {g} key/value head{'s' if g > 1 else ''} "
                     f"(groups of {h // g}; {frames})\n"
                     f"KV cache: 2 × {g} × {d_head} = {per_token} numbers per token, "
                     f"{per_token * n_cached * 8 / 2**20:.2f} MiB for {n_cached} tokens, one layer, "
                     f"float64 ({share})",
                     fontsize=10)

    def redraw(num_kv_heads=None, num_heads=None):
        h = heads.value if num_heads is None else num_heads
        g = kv.value if num_kv_heads is None else num_kv_heads
        fig.clf()
        draw(h, g)
        image.value = png = png_of(fig, dpi)
        return png

    def heads_moved(change):
        h = change["new"]
        g = max(d for d in divisors(h) if d <= kv.value)       # keep g if it still divides h
        moving["heads"] = True
        try:
            kv.options = divisors(h)
            kv.value = g
        finally:
            moving["heads"] = False
        redraw()

    def kv_moved(change):
        if not moving["heads"]:
            redraw()

    heads.observe(heads_moved, names="value")
    kv.observe(kv_moved, names="value")
    redraw()
    return widgets.VBox([heads, kv, image]), redraw


def _figure_height(num_heads, n, figsize):
    """Inches: ``figsize``'s height, or less when the tiles' mosaic is too flat to fill it.

    The mosaic (see :func:`helpers.plots.head_maps`) is as wide as the axes allow; a flat one
    (16 heads: two rows of 8) would leave a blank band under the tiles at full height.
    """
    rows, cols = plots.head_grid(num_heads)
    row_gap = 2 if num_heads <= 16 else 1
    aspect = (rows * (n + row_gap) - row_gap) / (cols * (n + 1) - 1)      # height / width
    tiles = 0.78 * figsize[0] * aspect                                     # inches, at full width
    return min(figsize[1], tiles + 1.8 + (0.5 if num_heads <= 8 else 0.0))


def _colourbar_beside_tiles(ax):
    """Move the colour bar :func:`helpers.plots.head_maps` added next to the tiles themselves.

    The tiles keep their aspect, so a mosaic taller than wide (32 or 64 heads) fills only the
    middle of its axes: the bar, placed at the axes' edge, would stand apart from the tiles
    with its label cut off at the figure's edge.
    """
    fig = ax.figure
    bars = [other for other in fig.axes if other is not ax]
    if not bars:
        return
    ax.apply_aspect()                                   # the axes box shrunk to the tiles
    box = ax.get_position()
    bars[-1].set_position([box.x1 + 0.015, box.y0, 0.02, box.height])


def group_label_size(num_heads):
    """Font size of the 'kv j' label in each tile: smaller with more, smaller tiles."""
    return 8 if num_heads <= 8 else 7 if num_heads <= 16 else 5.5


def frame_groups(ax, num_heads, num_kv_heads, n):
    """Mark the key/value head each tile of :func:`helpers.plots.head_maps` reads.

    Each tile gets a label "kv j" in its upper right corner, where a causal map is all
    zeros (white on the colour map's dark end). Up to 8 key/value heads each has its own
    frame colour as well; beyond that the frames alternate between two colours from one
    group to the next, and the labels tell groups apart where the two colours repeat. With
    one query head per kv head there are no labels (and beyond 8 heads no frames).
    """
    from matplotlib.patches import Rectangle

    _, cols = plots.head_grid(num_heads)
    row_gap = 2 if num_heads <= 16 else 1                           # as head_maps lays them out
    group = num_heads // num_kv_heads
    if num_kv_heads > len(GROUP_COLOURS) and group == 1:
        return                                      # every query head has its own kv head
    # Up to 8 kv heads, one colour each; beyond, two colours alternating from one group to the
    # next (8 colours would repeat, and frames of the same colour would look like one group).
    palette = GROUP_COLOURS if num_kv_heads <= len(GROUP_COLOURS) else [ORANGE, BLUE]
    width = 2.5 if num_heads <= 16 else 1.5                         # thinner around small tiles
    for k in range(num_heads):
        r, c = divmod(k, cols)
        colour = palette[(k // group) % len(palette)]
        ax.add_patch(Rectangle((c * (n + 1) - 0.5, r * (n + row_gap) - 0.5), n, n, fill=False,
                               linewidth=width, edgecolor=colour))
        if group > 1:
            ax.text(c * (n + 1) + n - 1.2, r * (n + row_gap) - 0.2, f"kv {k // group}", ha="right",
                    va="top", color="white", fontsize=group_label_size(num_heads))


def receptive_fields(sliding_window_mask, n, window, num_layers):
    """Which tokens each token can draw on after 1, 2, ... layers of sliding-window attention.

    Layer 1 lets token i read tokens ``i - window + 1 ... i``; each further layer reads what
    those tokens had read: a boolean matrix product of the masks.

    Returns
    -------
    list of bool ndarray, shape (n, n), one per layer
    """
    mask = np.asarray(sliding_window_mask(n, window), dtype=bool)      # (n, n)
    reach, fields = mask, []
    for _ in range(num_layers):
        fields.append(reach)
        reach = (mask.astype(int) @ reach.astype(int)) > 0             # one more layer
    return fields


def receptive_field_figure(sliding_window_mask, n=16, window=4, num_layers=3):
    """The reach of the last token after 1..num_layers windowed layers, as heatmaps; returns the figure."""
    import matplotlib.pyplot as plt

    fields = receptive_fields(sliding_window_mask, n, window, num_layers)
    fig, axes = plt.subplots(1, num_layers, figsize=(4.2 * num_layers, 4.2), layout="tight")
    for layer, (ax, field) in enumerate(zip(np.atleast_1d(axes), fields), start=1):
        farthest = n - 1 - int(np.argmax(field[-1]))                   # how far back the last token sees
        plots.heatmap(field.astype(float), ax=ax, vmin=0, vmax=1, annotate=False, colorbar=False,
                      title=f"after {layer} layer{'s' if layer > 1 else ''}: "
                            f"reaches {farthest} back",
                      xlabel="token it can draw on j", ylabel="token i")
    fig.suptitle(f"Sliding window of {window}: each layer reaches window − 1 = {window - 1} "
                 f"tokens further back (yellow: token i can draw on token j)")
    return fig
