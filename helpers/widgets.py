"""Sliders for the lessons, on the ipywidgets API common to versions 7.7 (Colab) and 8.

Only ``SelectionSlider``, ``interactive_output``, ``VBox``/``HBox``, ``Output`` and
``Image`` are used, all present in both versions. Each slider redraws one matplotlib figure.
"""

import ipywidgets as widgets


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


def figure_slider(slider, draw, figsize=(8.0, 3.6), dpi=72):
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
    from io import BytesIO

    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=dpi)
    image = widgets.Image(format="png")

    def redraw(value):
        fig.clf()
        draw(fig, value)
        buffer = BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi)
        png = buffer.getvalue()
        image.value = png
        return png

    slider.observe(lambda change: redraw(change["new"]), names="value")
    redraw(slider.value)
    return widgets.VBox([slider, image]), redraw

