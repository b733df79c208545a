"""Sliders for the lessons, on the ipywidgets API common to versions 7.7 (Colab) and 8.

Only ``SelectionSlider``, ``VBox`` and ``Image`` are used (and a widget's ``observe``),
all present in both versions. Each slider redraws one matplotlib figure. A function that
builds a slider is named ``*_slider`` or ``*_explorer``: the real-browser test counts those
calls in each lesson and moves every slider.
"""

import ipywidgets as widgets

#: Dots per inch of every slider's picture: tick labels stay legible on a web page (72 was not).
DPI = 100


def picture(fig, dpi=DPI):
    """An ``Image`` widget for ``fig``'s PNG, shown at its own size (never stretched to the column).

    A VBox stretches its children to its width: JupyterLab showed a 612-pixel picture
    930 pixels wide, and blurred. Here the width is the picture's own, at most the column's.
    """
    width = round(fig.get_figwidth() * dpi)
    return widgets.Image(format="png", layout=widgets.Layout(width=f"{width}px", max_width="100%",
                                                             height="auto"))


def png_of(fig, dpi=DPI):
    """``fig`` rendered as PNG bytes at ``dpi`` (what a slider's picture shows)."""
    from io import BytesIO

    buffer = BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def choice_slider(options, value, description):
    """A slider over a fixed list of values (e.g. powers of two), continuous_update off."""
    return widgets.SelectionSlider(options=list(options), value=value, description=description,
                                   continuous_update=False)


def powers_of_two(lo, hi):
    """``[lo, 2*lo, ..., hi]`` for powers of two lo <= hi."""
    values, v = [], lo
    while v <= hi:
        values.append(v)
        v *= 2
    return values


def divisors(n):
    """All divisors of n, smallest first: ``divisors(512) -> [1, 2, 4, ..., 512]``."""
    return [k for k in range(1, n + 1) if n % k == 0]


def head_count_slider(d_model, value=None, description="heads h"):
    """A slider over the head counts that cut ``d_model`` evenly: its divisors.

    ``value`` defaults to the middle divisor (8 for d_model = 64).
    """
    options = divisors(d_model)
    if value is None:
        value = options[len(options) // 2]
    if value not in options:
        raise ValueError(f"head_count_slider: value={value!r} does not divide d_model={d_model}; "
                         f"choose one of {options}")
    return choice_slider(options, value, description)


def figure_slider(slider, draw, figsize=(8.0, 3.6), dpi=DPI):
    """A slider above a figure that ``draw(fig, value)`` redraws each time the slider moves.

    The figure is one matplotlib ``Figure`` (not pyplot's, so it is never shown twice),
    cleared and redrawn, then shown as a PNG in an ``Image`` widget: one render per
    step, and the cell also runs headless (nbval, the grader).

    Returns
    -------
    box : ipywidgets.VBox
        The slider and the image; display it (or leave it last in the cell).
    redraw : callable value -> bytes
        Redraws for ``value`` and returns the PNG; time it to measure one slider step.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=dpi)
    image = picture(fig, dpi)

    def redraw(value):
        fig.clf()
        draw(fig, value)
        image.value = png = png_of(fig, dpi)
        return png

    slider.observe(lambda change: redraw(change["new"]), names="value")
    redraw(slider.value)
    return widgets.VBox([slider, image]), redraw


def dk_slider(value=64, lo=1, hi=512, description="d_k"):
    """A slider over the key size d_k = lo, 2*lo, ..., hi (powers of two; lesson 02)."""
    options = powers_of_two(lo, hi)
    if value not in options:
        raise ValueError(f"dk_slider: value={value!r} is not a power of two between {lo} and {hi}; "
                         f"choose one of {options}")
    return choice_slider(options, value, description)


def live_figure(fig, update, dpi=DPI, animated=(), **sliders):
    """Sliders above a figure that ``update(**values)`` changes in place (no redraw from scratch).

    Build the figure once (a ``matplotlib.figure.Figure``, so pyplot never shows it
    twice), with its axes, limits and artists; ``update`` only changes the artists'
    data (``set_data``, ``set_height``, ``set_text``...). Each slider step then costs one
    PNG render, without re-creating axes and ticks: faster than clearing the figure.
    The cell also runs headless (nbval, the grader): the first picture is drawn at once.

    Naming the changing artists in ``animated`` makes a step cheaper still
    ("blitting"): everything else (axes, ticks, labels, legends) is drawn once and
    kept as a background picture; a step pastes the background and draws only those
    artists on top. Axis limits must then stay fixed.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    update : callable
        Called as ``update(**values)`` with the sliders' current values, keyword = slider name.
    dpi : int
        Resolution of the PNG.
    animated : sequence of matplotlib artists, optional
        Every artist that ``update`` changes (bars, lines, a title's Text ...).
    **sliders : ipywidgets value widgets
        E.g. ``d_k=dk_slider()``.

    Returns
    -------
    box : ipywidgets.VBox
        The sliders and the picture; display it.
    redraw : callable (**values) -> bytes
        Updates for the given values (others keep their slider's value) and returns the
        PNG; time it to measure one slider step.
    """
    from io import BytesIO

    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image as PILImage

    if not sliders:
        raise ValueError("live_figure: give at least one slider, e.g. d_k=dk_slider()")
    image = picture(fig, dpi)
    animated = list(animated)
    background = None
    if animated:
        canvas = FigureCanvasAgg(fig)
        fig.set_dpi(dpi)
        for artist in animated:
            artist.set_animated(True)      # left out of canvas.draw(): the background
        canvas.draw()
        background = canvas.copy_from_bbox(fig.bbox)

    def render():
        buffer = BytesIO()
        if background is None:
            fig.savefig(buffer, format="png", dpi=dpi)
        else:
            canvas.restore_region(background)
            for artist in animated:
                fig.draw_artist(artist)
            rgba = np.asarray(canvas.buffer_rgba())               # (height, width, 4)
            PILImage.fromarray(rgba).save(buffer, format="png", compress_level=1, dpi=(dpi, dpi))
        return buffer.getvalue()

    def redraw(**values):
        current = {name: s.value for name, s in sliders.items()}
        current.update(values)
        update(**current)
        png = render()
        image.value = png
        return png

    for slider in sliders.values():
        slider.observe(lambda change: redraw(), names="value")
    redraw()
    return widgets.VBox([*sliders.values(), image]), redraw


# ----------------------------------------------------------------- the lessons' sliders
def dk_explorer(words, softmax, value=64, query="it"):
    """Lesson 02's d_k slider: random scores and one query's weights, with and without √d_k.

    One call in the lesson; the figure (:func:`helpers.plots.dk_figure`) is built once and
    each step only changes its numbers (see :func:`live_figure`).

    Parameters
    ----------
    words : list of str
        The sentence's tokens.
    softmax : callable
        The softmax to use (the learner's, once it passed its check).
    value : int
        The d_k shown first (a power of two from 1 to 512).

    Returns
    -------
    ipywidgets.VBox
        The slider and the picture: leave it last in the cell to show it.
    """
    from . import plots

    fig, update, animated = plots.dk_figure(words, softmax, query=query)
    box, _ = live_figure(fig, update, animated=animated, d_k=dk_slider(value=value))
    return box


def query_explorer(Q, K, V, tokens, features, query, weights_of, dims=("noun", "verb"),
                   steps=None):
    """Lesson 03's "the cat sat" sliders: set one token's query, watch its weights and output.

    Parameters
    ----------
    Q, K, V, tokens, features, query, weights_of
        As for :func:`helpers.plots.query_figure`.
    dims : tuple of str
        A name for each query entry (one slider each), e.g. ``("noun", "verb")``.
    steps : list of float, optional
        The values each slider offers; by default -2 to 6 in steps of 0.25.

    Returns
    -------
    ipywidgets.VBox
    """
    import numpy as np

    from . import plots

    row = tokens.index(query)
    if len(dims) != np.shape(Q)[1]:
        raise ValueError(f"query_explorer: {len(dims)} slider names for queries of size "
                         f"{np.shape(Q)[1]}")
    steps = [round(float(v), 2) for v in np.arange(-2, 6.01, 0.25)] if steps is None else steps
    fig, update, animated = plots.query_figure(Q, K, V, tokens, features, query, weights_of)
    sliders = {}
    for d, name in enumerate(dims):
        start = min(steps, key=lambda v: abs(v - float(Q[row][d])))   # the nearest step
        sliders[name] = choice_slider(steps, start, f"q_{query} {name}")
    box, _ = live_figure(fig, lambda **values: update(*(values[name] for name in dims)),
                         animated=animated, **sliders)
    return box


def head_count_explorer(multi_head_attention, X, W_q, W_k, W_v, W_o, tokens, value=8,
                        figsize=(8.5, 4.2)):
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
    from . import plots

    d_model = X.shape[-1]

    def draw(fig, h):
        _, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads=h)   # (h, n, n)
        d_head = d_model // h
        fig.subplots_adjust(left=0.13, right=0.95, bottom=0.17, top=0.86)   # room for the labels
        plots.head_maps(weights, tokens, ax=fig.add_subplot())
        fig.suptitle(f"{h} head{'s' if h > 1 else ''} × d_head = {d_head}  "
                     f"(scores scaled by 1/√{d_head} = {1 / d_head ** 0.5:.3f})")

    return figure_slider(head_count_slider(d_model, value=value), draw, figsize=figsize)
