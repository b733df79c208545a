"""plots.log_axis: a log-scaled axis labelled with plain numbers (lesson 02's measurements)."""

import matplotlib
import pytest
from matplotlib.figure import Figure

from helpers import plots

matplotlib.use("Agg")


def _axes():
    ax = Figure().subplots()
    ax.plot([1, 2, 4, 1024], [0.001, 1, 10, 1000])
    return ax


@pytest.mark.parametrize("which", ["x", "y"])
def test_log_axis_sets_a_log_scale(which):
    ax = _axes()
    plots.log_axis(ax, which)
    assert (ax.get_xscale() if which == "x" else ax.get_yscale()) == "log"
    assert (ax.get_yscale() if which == "x" else ax.get_xscale()) == "linear"


def test_log_axis_puts_plain_labels_on_the_given_ticks():
    ax = _axes()
    plots.log_axis(ax, "x", ticks=[1, 2, 4, 1024])
    ax.figure.canvas.draw()
    assert list(ax.get_xticks()) == [1, 2, 4, 1024]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "1024"]
    assert len(ax.xaxis.get_minorticklocs()) == 0


def test_log_axis_labels_decades_without_powers_of_ten():
    ax = _axes()
    plots.log_axis(ax, "y")
    ax.figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "0.001" in labels and "1000" in labels
    assert not any("10^" in label or "$" in label for label in labels)


def test_log_axis_rejects_an_unknown_axis():
    with pytest.raises(ValueError, match="which must be 'x' or 'y'"):
        plots.log_axis(_axes(), "z")
