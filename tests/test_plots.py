"""helpers.plots: the shared heatmap and log axes."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots


def test_heatmap_picks_diverging_map_centred_on_zero_for_signed_values():
    image = plots.heatmap(np.array([[-1.0, 3.0]]))
    assert image.get_cmap().name == plots.DIVERGING
    assert image.get_clim() == (-3.0, 3.0)


def test_heatmap_picks_sequential_map_for_weights():
    image = plots.heatmap(np.array([[0.2, 0.8]]))
    assert image.get_cmap().name == plots.SEQUENTIAL


def test_heatmap_labels_title_and_axes():
    _, ax = plt.subplots()
    plots.heatmap(np.eye(2), ["a", "b"], ["c", "d"], ax=ax, title="T", xlabel="x", ylabel="y")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["c", "d"]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("T", "x", "y")


def test_heatmap_writes_each_value_in_small_matrices():
    _, ax = plt.subplots()
    plots.heatmap(np.arange(6.0).reshape(2, 3), ax=ax)
    assert sorted(t.get_text() for t in ax.texts) == ["0.00", "1.00", "2.00", "3.00", "4.00", "5.00"]


def test_heatmap_rejects_non_matrix():
    with pytest.raises(ValueError, match=r"heatmap: M must be 2-D, got shape \(3,\)"):
        plots.heatmap(np.ones(3))


# ------------------------------------------------------------ log_axes
def _measured_axes():
    _, ax = plt.subplots()
    ax.plot([1, 2, 4, 1024], [0.001, 1, 10, 1000])
    return ax


@pytest.mark.parametrize("which, scales", [("x", ("log", "linear")), ("y", ("linear", "log")),
                                           ("xy", ("log", "log"))])
def test_log_axes_puts_only_the_named_axes_on_a_log_scale(which, scales):
    ax = _measured_axes()
    plots.log_axes(ax, which)
    assert (ax.get_xscale(), ax.get_yscale()) == scales


def test_log_axes_puts_plain_labels_on_the_given_x_ticks_and_no_minor_ticks():
    ax = _measured_axes()
    plots.log_axes(ax, "xy", xticks=[1, 2, 4, 1024])
    ax.figure.canvas.draw()
    assert list(ax.get_xticks()) == [1, 2, 4, 1024]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "1024"]
    assert len(ax.xaxis.get_minorticklocs()) == 0 and len(ax.yaxis.get_minorticklocs()) == 0


def test_log_axes_labels_decades_without_powers_of_ten():
    ax = _measured_axes()
    plots.log_axes(ax, "y")
    ax.figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "0.001" in labels and "1000" in labels
    assert not any("10^" in label or "$" in label for label in labels)


@pytest.mark.parametrize("which, xticks, message", [
    ("z", None, "which must be 'x', 'y' or 'xy'"),
    ("y", [1, 2], "xticks is for a log x axis"),
])
def test_log_axes_rejects_an_unknown_axis_and_x_ticks_on_a_linear_x(which, xticks, message):
    with pytest.raises(ValueError, match=message):
        plots.log_axes(_measured_axes(), which, xticks=xticks)


