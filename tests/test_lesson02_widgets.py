"""The d_k slider and the live figure behind lesson 02's (and 03's) sliders."""

import pytest
from matplotlib.figure import Figure

from helpers import widgets
from helpers.lessons.l02_scaled_scores import figures as lesson02

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_dk_slider_offers_powers_of_two_from_1_to_512():
    slider = lesson02.dk_slider()
    assert list(slider.options) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert slider.value == 64


@pytest.mark.parametrize("value", [3, 0, 1024])
def test_dk_slider_rejects_a_value_that_is_not_offered(value):
    with pytest.raises(ValueError, match=f"value={value}"):
        lesson02.dk_slider(value=value)


def _figure():
    fig = Figure(figsize=(2, 2))
    ax = fig.subplots()
    (line,) = ax.plot([0, 1], [0, 0])
    return fig, line


def test_live_figure_draws_at_once_with_the_sliders_values():
    fig, line = _figure()
    calls = []
    box, _ = widgets.live_figure(fig, lambda d_k: calls.append(d_k), d_k=lesson02.dk_slider(value=8))
    assert calls == [8]
    image = box.children[-1]
    assert bytes(image.value).startswith(PNG_MAGIC)


def test_moving_a_slider_updates_the_figure_and_the_picture():
    fig, line = _figure()
    slider = lesson02.dk_slider(value=1)
    box, _ = widgets.live_figure(fig, lambda d_k: line.set_ydata([0, d_k]), d_k=slider)
    before = bytes(box.children[-1].value)
    slider.value = 512
    assert list(line.get_ydata()) == [0, 512]
    assert bytes(box.children[-1].value) != before


def test_redraw_takes_values_and_keeps_the_other_sliders():
    fig, _ = _figure()
    calls = []
    a = widgets.choice_slider([1, 2, 3], 1, "a")
    b = widgets.choice_slider([10, 20], 20, "b")
    _, redraw = widgets.live_figure(fig, lambda a, b: calls.append((a, b)), a=a, b=b)
    png = redraw(a=3)
    assert calls[-1] == (3, 20) and png.startswith(PNG_MAGIC)
    a.value = 2
    assert calls[-1] == (2, 20)


def test_live_figure_needs_a_slider():
    fig, _ = _figure()
    with pytest.raises(ValueError, match="at least one slider"):
        widgets.live_figure(fig, lambda: None)


def _pixels(png):
    import io

    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


@pytest.mark.parametrize("d_k", [1, 64, 512])
def test_blitted_picture_equals_a_full_redraw(d_k):
    def make():
        fig = Figure(figsize=(3, 2))
        ax = fig.subplots()
        ax.set_ylim(0, 600)
        (line,) = ax.plot([0, 1], [0, 0], color="#0072B2")
        ax.set_xlabel("x")

        def update(d_k):
            line.set_ydata([0, d_k])
            ax.set_title(f"d_k = {d_k}")
        return fig, ax, line, update

    fig, _, _, update = make()
    _, full = widgets.live_figure(fig, update, d_k=lesson02.dk_slider(value=8))
    fig, ax, line, update = make()
    _, blit = widgets.live_figure(fig, update, animated=[line, ax.title], d_k=lesson02.dk_slider(value=8))
    a, b = _pixels(full(d_k=d_k)), _pixels(blit(d_k=d_k))
    assert a.shape == b.shape
    assert (abs(a - b) > 8).mean() < 0.002   # the same picture, but for a few anti-aliased pixels


def test_blitting_does_not_leave_the_previous_step_behind():
    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.set_ylim(0, 600)
    (line,) = ax.plot([0, 1], [0, 0])
    slider = lesson02.dk_slider(value=512)
    _, redraw = widgets.live_figure(fig, lambda d_k: line.set_ydata([d_k, d_k]), animated=[line],
                                    d_k=slider)
    high_then_low = _pixels(redraw(d_k=1))
    fresh_fig = Figure(figsize=(3, 2))
    fresh_ax = fresh_fig.subplots()
    fresh_ax.set_ylim(0, 600)
    (fresh_line,) = fresh_ax.plot([0, 1], [0, 0])
    _, fresh = widgets.live_figure(fresh_fig, lambda d_k: fresh_line.set_ydata([d_k, d_k]),
                                   animated=[fresh_line], d_k=lesson02.dk_slider(value=1))
    assert (abs(high_then_low - _pixels(fresh(d_k=1))) > 8).mean() < 0.002
