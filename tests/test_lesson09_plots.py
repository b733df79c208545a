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
    assert len(ax.lines) == (3 + 1) + (1 + 1)                 # faint seeds, then the bold median
    np.testing.assert_allclose(ax.lines[3].get_ydata(), [0.9, 0.4])   # medians by hand
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["learned (median of 3 seeds)",
                                                                    "rope (median of 1 seed)"]


def test_accuracy_by_length_writes_cannot_run_where_there_is_no_value():
    fig = plots.accuracy_by_length({"learned": {16: 1.0, 64: None}, "rope": {16: 0.9, 64: 0.8}}, 16,
                                   title="two back")
    ax = fig.axes[0]
    assert sorted(p.get_height() for p in ax.patches) == [0.8, 0.9, 1.0]
    assert [t.get_text() for t in ax.texts] == ["cannot\nrun"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16 tokens (1x)", "64 tokens (4x)"]
    assert ax.get_title() == "two back" and ax.get_xlabel() and ax.get_ylabel()


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
