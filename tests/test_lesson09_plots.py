"""Lesson 09's figures (helpers/lessons/l09_position/plots.py): what each one draws, titled and labelled.

Inputs are small and written here; expected values are the inputs themselves (a median by
hand), not the code under test.
"""

import matplotlib
import numpy as np
import pytest

from helpers.lessons.l09_position import plots

matplotlib.use("Agg")


def test_accuracy_by_shift_draws_each_seed_and_the_median_per_encoding():
    seeds = [{0: 1.0, 1: 0.2}, {0: 0.9, 1: 0.4}, {0: 0.8, 1: 0.9}]
    fig = plots.accuracy_by_shift({"learned": seeds, "rope": seeds[:1]})
    ax = fig.axes[0]
    assert len(ax.lines) == (3 + 1) + (1 + 1) + 1             # faint seeds, the bold median; the key
    np.testing.assert_allclose(ax.lines[3].get_ydata(), [0.9, 0.4])   # medians by hand
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "learned (median of 3 seeds)", "rope (median of 1 seed)", "faint lines: one seed each"]


def test_accuracy_by_shift_draws_the_baseline_as_a_flat_line_in_the_legend():
    fig = plots.accuracy_by_shift({"rope": [{0: 0.9, 4: 0.9}]}, baseline=("none", 0.47))
    ax = fig.axes[0]
    flat = [line for line in ax.lines if line.get_label() == "none"]
    assert len(flat) == 1 and set(flat[0].get_ydata()) == {0.47}
    assert "none" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_accuracy_by_band_draws_median_bars_a_dot_per_seed_and_chance():
    seeds = [{"2-15": {"accuracy": 1.0}, "16-23": {"accuracy": 0.2}},
             {"2-15": {"accuracy": 0.8}, "16-23": {"accuracy": 0.6}},
             {"2-15": {"accuracy": 0.9}, "16-23": {"accuracy": 0.3}}]
    fig = plots.accuracy_by_band({"sinusoidal": seeds}, chance=1 / 16, title="two back")
    ax = fig.axes[0]
    np.testing.assert_allclose(sorted(p.get_height() for p in ax.patches), [0.3, 0.9])   # medians
    dots = [line for line in ax.lines if line.get_marker() == "o" and len(line.get_ydata())]
    assert sorted(v for line in dots for v in line.get_ydata()) == [0.2, 0.3, 0.6, 0.8, 0.9, 1.0]
    chance = [line for line in ax.lines if line.get_label().startswith("chance")]
    assert len(chance) == 1 and set(chance[0].get_ydata()) == {1 / 16}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2-15\n(trained length)", "16-23\n(beyond it)"]
    assert ax.get_title() == "two back" and ax.get_xlabel() and ax.get_ylabel()


def test_accuracy_by_band_says_what_each_encoding_never_saw_beyond_the_trained_length():
    seeds = [{"2-15": {"accuracy": 1.0}, "16-23": {"accuracy": 0.5}}]
    fig = plots.accuracy_by_band({"sinusoidal": seeds, "rope": seeds}, chance=1 / 16)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(t.startswith("sinusoidal") and "position vectors, offsets > 15, > 16 keys" in t for t in texts)
    assert any(t.startswith("rope") and "offsets > 15, > 16 keys (no position vectors)" in t for t in texts)


def test_accuracy_by_band_puts_its_legend_under_the_axes_so_they_keep_the_width():
    seeds = [{"2-15": {"accuracy": 1.0}, "16-23": {"accuracy": 0.5}}]
    fig = plots.accuracy_by_band({"sinusoidal": seeds, "rope": seeds}, chance=1 / 16)
    fig.canvas.draw()
    ax = fig.axes[0]
    legend, axes = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.y1 < axes.y0                                            # below the axes
    assert axes.width > 0.8 * fig.bbox.width                              # the axes keep the width
    assert [t.get_text() for t in ax.get_legend().get_texts()][:2] == [   # the bars first
        "sinusoidal (median of 1 seeds)\nnew past position 15: position vectors, offsets > 15, > 16 keys",
        "rope (median of 1 seeds)\nnew past position 15: offsets > 15, > 16 keys (no position vectors)"]


def test_accuracy_by_shift_draws_no_line_across_shifts_not_measured():
    seeds = [{0: 1.0, 1: 0.9, 2: 0.8, 4: 0.6, 8: 0.2}, {0: 0.9, 1: 0.8, 2: 0.7, 4: 0.5, 8: 0.1}]
    fig = plots.accuracy_by_shift({"rope": seeds})
    ax = fig.axes[0]
    shift_at = {x: int(t.get_text()) for x, t in zip(ax.get_xticks(), ax.get_xticklabels())}
    assert sorted(shift_at.values()) == [0, 1, 2, 4, 8]                   # a tick per measured shift
    drawn = [[shift_at[x] for x in line.get_xdata()] for line in ax.lines if len(line.get_xdata())]
    assert all(b - a == 1 for x in drawn for a, b in zip(x, x[1:]))       # a line joins neighbours only
    assert sorted({s for x in drawn for s in x}) == [0, 1, 2, 4, 8]       # every measured shift drawn
    assert all(line.get_marker() not in (None, "", "None") for line in ax.lines if len(line.get_xdata()))
    assert "shifts not measured" in " ".join(t.get_text() for t in ax.get_legend().get_texts())


def _x_range(patch):
    """A span's extent along x: axvspan draws a Rectangle (matplotlib >= 3.9) or a Polygon (older)."""
    if hasattr(patch, "get_width"):
        return patch.get_x(), patch.get_x() + patch.get_width()
    xs = np.asarray(patch.get_xy())[:, 0]
    return xs.min(), xs.max()


def test_accuracy_by_shift_breaks_the_axis_at_shifts_not_measured_and_says_which():
    fig = plots.accuracy_by_shift({"rope": [{0: 1.0, 1: 0.9, 2: 0.8, 4: 0.6, 8: 0.2}]})
    ax = fig.axes[0]
    x = dict(zip((int(t.get_text()) for t in ax.get_xticklabels()), ax.get_xticks()))
    step = x[1] - x[0]
    assert x[8] - x[4] <= 2 * step and x[4] - x[2] <= 2 * step            # 5-7 and 3 take little room
    spans = sorted(_x_range(p) for p in ax.patches)
    assert len(spans) == 2 and x[2] < spans[0][0] < spans[0][1] < x[4] < spans[1][0] < spans[1][1] < x[8]
    assert [t.get_text().split("\n")[0] for t in ax.texts] == ["s = 3", "s = 5-7"]


def test_encoding_table_shows_the_table_with_labelled_axes():
    PE = np.arange(12.0).reshape(3, 4) / 12
    fig = plots.encoding_table(PE)
    image = fig.axes[0].images[0]
    np.testing.assert_array_equal(np.asarray(image.get_array()), PE)
    assert fig.axes[0].get_xlabel() and fig.axes[0].get_ylabel()


@pytest.mark.parametrize("count", [1, 2])
def test_offset_grids_draws_one_titled_panel_per_grid(count):
    grids = [np.eye(4) * (k + 1) for k in range(count)]
    fig = plots.offset_grids(grids, [f"grid {k}" for k in range(count)], suptitle="offsets")
    titled = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in titled] == [f"grid {k}" for k in range(count)]


def test_turning_pairs_draws_one_panel_per_angle_list():
    fig = plots.turning_pairs(np.array([1.0, 0.0]), {"fast": np.arange(4) * 1.0, "slow": np.arange(4) * 0.01})
    titles = [ax.get_title() for ax in fig.axes]
    assert any("fast" in t for t in titles) and any("slow" in t for t in titles)
    assert all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes)


def test_each_encoding_has_one_colour_in_both_accuracy_figures_whatever_the_order():
    shift = plots.accuracy_by_shift({"learned": [{0: 1.0, 1: 0.1}], "sinusoidal": [{0: 1.0, 1: 0.5}],
                                     "rope": [{0: 1.0, 1: 1.0}]})
    band = plots.accuracy_by_band({"sinusoidal": [{"2-15": {"accuracy": 1.0}}],
                                   "rope": [{"2-15": {"accuracy": 1.0}}]}, chance=0.1)
    line_colour = {line.get_label().split(" ")[0]: matplotlib.colors.to_hex(line.get_color())
                   for line in shift.axes[0].lines if "median" in line.get_label()}
    bar_colour = {bars.get_label().split(" ")[0]:
                  matplotlib.colors.to_hex(bars.patches[0].get_facecolor()[:3])
                  for bars in band.axes[0].containers}
    assert line_colour["rope"] == bar_colour["rope"] and line_colour["sinusoidal"] == bar_colour["sinusoidal"]
    assert len(set(line_colour.values())) == 3


def test_a_grid_of_positive_values_gets_a_sequential_map_and_every_colorbar_a_label():
    fig = plots.offset_grids([np.full((3, 3), 8.0) + np.eye(3), np.eye(3) - 0.5], ["positive", "signed"])
    left, right = [ax for ax in fig.axes if ax.get_title()]
    assert left.images[0].get_cmap().name == "viridis" and right.images[0].get_cmap().name == "RdBu_r"
    assert all(ax.get_ylabel() for ax in fig.axes if not ax.get_title())      # the colorbars
