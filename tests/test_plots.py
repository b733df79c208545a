"""helpers.plots: the shared heatmap."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import plots  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


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
