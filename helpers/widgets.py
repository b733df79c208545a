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
