"""Lesson 02's figures and slider: measurements against d_k, the saturation panels, the d_k explorer.

Expected numbers are worked out here (a softmax written out), not taken from the code under test.
"""


import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle, StepPatch
from matplotlib.transforms import Bbox

from helpers import data, reference, widgets
from helpers.lessons.l02_scaled_scores import figures as lesson02

matplotlib.use("Agg")


def test_against_dk_draws_the_prediction_and_each_measurement_on_log_axes():
    ax = lesson02.against_dk([1, 4, 16], {"a": [1, 4, 16], "b": [1, 1, 1]}, title="t", ylabel="v",
                            prediction=("Var = d_k", [1, 4, 16]))
    assert [line.get_label() for line in ax.get_lines()] == ["Var = d_k", "a", "b"]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_title() == "t" and ax.get_ylabel() == "v" and "d_k" in ax.get_xlabel()
    plt.close(ax.figure)


def _drawn_legends(fig):
    """Draw ``fig``; return its renderer and every legend in it (the figure's and the axes')."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    return renderer, [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]


def _covered(fig):
    """What a legend of ``fig`` covers, after a draw: ``[(legend's first entry, what it covers)]``.

    Data is what the axes show of each bar, each histogram bin (height > 0) and each line
    (its segments, sampled every pixel, and its markers), in pixels.
    """
    renderer, legends = _drawn_legends(fig)
    boxes = {legend.get_texts()[0].get_text(): legend.get_window_extent(renderer) for legend in legends}
    covered = []
    for ax in fig.axes:
        for artist in [*ax.patches, *ax.lines]:
            name = artist.get_label()
            if isinstance(artist, Rectangle):
                shown = Bbox.intersection(artist.get_window_extent(renderer), ax.bbox)
                parts = [(shown, 0)] if shown is not None and shown.height > 0 else []
            elif isinstance(artist, StepPatch):
                values, edges, _ = artist.get_data()
                parts = [(Bbox(ax.transData.transform([[a, 0], [b, v]])), 0)
                         for v, a, b in zip(values, edges[:-1], edges[1:]) if v > 0]
            elif isinstance(artist, Line2D):
                xy = ax.transData.transform(np.column_stack([artist.get_xdata(), artist.get_ydata()]))
                steps = [np.linspace(p, q, int(np.hypot(*(q - p))) + 2) for p, q in zip(xy, xy[1:])]
                radius = artist.get_markersize() * fig.dpi / 72 / 2 if artist.get_marker() else 0
                parts = [(Bbox([p, p]), 0) for p in np.concatenate(steps)]
                parts += [(Bbox([p, p]), radius) for p in xy]
            for legend, box in boxes.items():
                if any(box.padded(pad).overlaps(part) for part, pad in parts):
                    covered.append((legend, name))
    return covered


def _exact_variances():
    """Lesson 02's variance figure (its labels: they set the legend's size), drawn with the
    exact lines it measures: d_k, 1 and 1/d_k."""
    dks = widgets.powers_of_two(1, 1024)
    d = np.array(dks, dtype=float)
    return lesson02.against_dk(dks, {"measured Var(q · k), no scaling": d,
                                     "measured Var(q · k / √d_k)": np.ones_like(d),
                                     "measured Var(q · k / d_k)": 1 / d},
                               prediction=("Var = d_k (prediction)", d),
                               title="The variance of a dot product grows like d_k; "
                                     "dividing by √d_k keeps it at 1",
                               ylabel="variance over 2000 random pairs")


def test_against_dk_legend_covers_no_line():
    ax = _exact_variances()
    assert _covered(ax.figure) == []
    plt.close(ax.figure)


def test_against_dk_prediction_is_drawn_over_the_measurements_in_its_own_colour_and_dashed():
    ax = _exact_variances()
    prediction, *measured = ax.get_lines()
    assert all(prediction.get_zorder() > line.get_zorder() for line in measured)
    assert matplotlib.colors.to_hex(prediction.get_color()) not in {
        matplotlib.colors.to_hex(line.get_color()) for line in measured}
    assert prediction.get_linestyle() not in ("-", "None")
    plt.close(ax.figure)


def _rendered(fig):
    """``fig`` drawn: its pixels (rows from the top, RGB 0-255) and a function giving the pixels
    inside an axes' bounding box, shrunk by ``inset`` pixels."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[..., :3].astype(float)

    def inside(bbox, inset=0):
        x0, y0, x1, y1 = np.round(bbox.extents).astype(int)
        height = image.shape[0]
        return image[height - y1 + inset:height - y0 - inset, x0 + inset:x1 - inset].reshape(-1, 3)
    return image, inside


def _near(pixels, colour, tolerance=40):
    """Which of ``pixels`` (k, 3) are within ``tolerance`` (per channel, 0-255) of ``colour``."""
    return np.abs(pixels - 255 * np.array(matplotlib.colors.to_rgb(colour))).max(axis=1) < tolerance


@pytest.mark.parametrize("top", [0.348, 997.0, 40.0])
def test_against_dk_labels_a_y_tick_near_the_top_of_the_data(top):
    dks = [1, 4, 16, 64]
    lines = {"a": [top * 0.9, top, top * 0.95, top], "b": [top * 1e-5, top * 1e-3, top * 0.1, top / 2]}
    ax = lesson02.against_dk(dks, lines, title="t", ylabel="v")
    ax.figure.canvas.draw()
    lo, hi = ax.get_ylim()
    labelled = [tick.get_loc() for tick in [*ax.yaxis.get_major_ticks(), *ax.yaxis.get_minor_ticks()]
                if tick.label1.get_visible() and tick.label1.get_text() and lo <= tick.get_loc() <= hi]
    assert hi >= top
    assert any(top / 1.5 <= loc <= top * 1.5 for loc in labelled), (top, labelled)
    plt.close(ax.figure)


def test_against_dk_shows_both_markers_where_two_lines_coincide():
    from helpers.plots import BLUE, VERMILLION

    dks = [1, 2, 4, 8, 16]
    ax = lesson02.against_dk(dks, {"no scaling": [1, 1, 1, 1, 1], "divided by √d_k": [1, 1, 1, 1, 1]},
                             title="t", ylabel="v")
    _, inside = _rendered(ax.figure)
    for x in dks:
        px, py = ax.transData.transform((x, 1))
        point = inside(Bbox([[px - 6, py - 6], [px + 6, py + 6]]))
        assert _near(point, VERMILLION).sum() >= 10 and _near(point, BLUE).sum() >= 10, x
    plt.close(ax.figure)


def _saturation_panel(**changes):
    _, ax = plt.subplots()
    kwargs = dict(dks=np.array([1, 2, 4, 8]),
                  measured={"raw": [0.2, 0.4, 0.7, 0.9], "scaled": [0.2, 0.25, 0.2, 0.22]},
                  one_hot=1, uniform=0.1, title="T", ylabel="largest weight")
    kwargs.update(changes)
    lesson02.saturation_panel(ax, **kwargs)
    return ax


def test_saturation_panel_plots_raw_and_scaled_against_d_k_as_given():
    lines = _saturation_panel().get_lines()
    assert [line.get_label() for line in lines[:2]] == ["no scaling", "divided by √d_k"]
    np.testing.assert_array_equal(lines[0].get_xdata(), [1, 2, 4, 8])
    np.testing.assert_array_equal(lines[0].get_ydata(), [0.2, 0.4, 0.7, 0.9])
    np.testing.assert_array_equal(lines[1].get_ydata(), [0.2, 0.25, 0.2, 0.22])


def test_saturation_panel_draws_one_hot_and_uniform_levels_as_horizontal_lines():
    levels = {line.get_label(): set(line.get_ydata()) for line in _saturation_panel().get_lines()[2:]}
    assert levels == {"one-hot (1)": {1}, "uniform (0.1)": {0.1}}


def test_saturation_panel_titles_labels_and_puts_d_k_on_a_log_axis():
    ax = _saturation_panel()
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("T", "d_k", "largest weight")
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "linear")
    assert ax.get_legend() is not None


def test_saturation_panel_rejects_a_curve_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"measured\['scaled'\] has shape \(3,\), dks has shape \(4,\)"):
        _saturation_panel(measured={"raw": [1, 2, 3, 4], "scaled": [1, 2, 3]})


WORDS = data.tokens(data.IT_SENTENCE)


def test_dk_figure_at_d_k_1_scaled_and_raw_agree():
    _, update, animated = lesson02.dk_figure(WORDS, reference.softmax)
    update(1)
    n = len(WORDS)
    raw, scaled = animated[3:3 + n], animated[3 + n:3 + 2 * n]
    assert [b.get_height() for b in raw] == pytest.approx([b.get_height() for b in scaled])


@pytest.mark.parametrize("d_k", [1, 64, 512])
def test_dk_figure_bars_are_softmax_rows(d_k):
    _, update, animated = lesson02.dk_figure(WORDS, reference.softmax)
    update(d_k)
    n = len(WORDS)
    for bars in (animated[3:3 + n], animated[3 + n:3 + 2 * n]):
        heights = np.array([b.get_height() for b in bars])
        assert heights.min() >= 0 and heights.sum() == pytest.approx(1.0)


def test_dk_figure_raw_weights_sharpen_as_d_k_grows():
    _, update, animated = lesson02.dk_figure(WORDS, reference.softmax)
    n = len(WORDS)
    largest = []
    for d_k in (1, 512):
        update(d_k)
        largest.append(max(b.get_height() for b in animated[3:3 + n]))
    assert largest[1] > largest[0]


def test_dk_figure_uses_the_softmax_it_is_given():
    calls = []

    def counting_softmax(x, axis=-1):
        calls.append(np.shape(x))
        return reference.softmax(x, axis)

    _, update, _ = lesson02.dk_figure(WORDS, counting_softmax)
    update(8)
    assert calls == [(len(WORDS),), (len(WORDS),)]


def test_dk_explorer_is_a_slider_over_powers_of_two_and_a_picture():
    box = lesson02.dk_explorer(WORDS, reference.softmax, value=8)
    slider, image = box.children
    assert list(slider.options) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512] and slider.value == 8
    before = bytes(image.value)
    slider.value = 512
    assert bytes(image.value) != before


@pytest.fixture(scope="module")
def dk_figure():
    fig, update, _ = lesson02.dk_figure(WORDS, reference.softmax)
    return fig, update


@pytest.mark.parametrize("d_k", widgets.powers_of_two(1, 512))
def test_dk_figure_legend_covers_no_bar_and_no_histogram_at_any_slider_position(dk_figure, d_k):
    fig, update = dk_figure
    update(d_k)
    assert _covered(fig) == []


def _shown_colour(histogram):
    """What a histogram of the d_k figure looks like on white: its fill, or its outline if unfilled."""
    r, g, b, a = histogram.get_facecolor() if histogram.get_fill() else histogram.get_edgecolor()
    return tuple(np.array([r, g, b]) * a + 1 - a)


@pytest.mark.parametrize("d_k", widgets.powers_of_two(1, 512))
def test_dk_figure_histograms_keep_the_keys_colours_where_they_overlap(dk_figure, d_k):
    # Two translucent fills mix where they overlap into a colour the key does not show (at d_k = 1,
    # the whole histogram). Every inked pixel inside the panel is one of the two histograms' colours,
    # but for anti-aliased edges.
    fig, update = dk_figure
    update(d_k)
    hist_raw, hist_scaled = fig.axes[0].patches[:2]
    _, inside = _rendered(fig)
    pixels = inside(fig.axes[0].bbox, inset=2)
    inked = pixels[np.abs(pixels - 255).max(axis=1) > 30]
    own = _near(inked, _shown_colour(hist_raw)) | _near(inked, _shown_colour(hist_scaled))
    assert len(inked) > 500 and own.mean() > 0.98


def test_dk_figure_panel_titles_have_one_font_size(dk_figure):
    fig, update = dk_figure
    update(16)
    left, right = fig.axes
    assert left.title.get_fontsize() == right.title.get_fontsize()


@pytest.mark.parametrize("make", [lambda: lesson02.dk_figure(WORDS, reference.softmax)[0],
                                  lambda: _exact_variances().figure], ids=["d_k slider", "against_dk"])
def test_legends_are_inside_the_picture_and_clear_of_every_axis_label(make):
    fig = make()
    renderer, legends = _drawn_legends(fig)
    assert legends
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert fig.bbox.containsx(box.x0) and fig.bbox.containsx(box.x1)
        assert fig.bbox.containsy(box.y0) and fig.bbox.containsy(box.y1)
        for ax in fig.axes:
            labels = [ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
            assert not any(box.overlaps(text.get_window_extent(renderer)) for text in labels
                           if text.get_text())
    plt.close(fig)


@pytest.mark.parametrize("d_k", [4, 256])
def test_dk_figure_weights_panel_title_names_d_k(d_k):
    fig, update, _ = lesson02.dk_figure(WORDS, reference.softmax)
    update(d_k)
    assert f"d_k = {d_k}\n" in fig.axes[1].get_title()
