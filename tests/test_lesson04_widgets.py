"""Lesson 04's helpers: the head-count slider, the figure slider and the head-map mosaic."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots, widgets
from helpers.lessons.l04_multi_head import figures as lesson04


# ------------------------------------------------------------ head_count_slider
def test_head_count_slider_offers_the_divisors_of_d_model():
    slider = widgets.head_count_slider(64)
    assert list(slider.options) == [1, 2, 4, 8, 16, 32, 64]


def test_head_count_slider_offers_odd_divisors_too():
    assert list(widgets.head_count_slider(12).options) == [1, 2, 3, 4, 6, 12]


def test_head_count_slider_starts_in_the_middle_by_default():
    assert widgets.head_count_slider(64).value == 8


def test_head_count_slider_takes_a_start_value():
    assert widgets.head_count_slider(512, value=16).value == 16


def test_head_count_slider_rejects_a_value_that_does_not_divide():
    with pytest.raises(ValueError, match=r"value=3 does not divide d_model=64"):
        widgets.head_count_slider(64, value=3)


# ------------------------------------------------------------ figure_slider
def _recording_draw(calls):
    def draw(fig, value):
        calls.append(value)
        ax = fig.add_subplot()
        ax.plot([0, value])
        ax.set_title(f"value {value}")
    return draw


def test_figure_slider_draws_once_at_the_start_value():
    calls = []
    box, _ = widgets.figure_slider(widgets.head_count_slider(8, value=2), _recording_draw(calls))
    assert calls == [2]
    assert bytes(box.children[1].value).startswith(b"\x89PNG")


def test_moving_the_slider_redraws_with_the_new_value():
    calls = []
    slider = widgets.head_count_slider(8, value=2)
    box, _ = widgets.figure_slider(slider, _recording_draw(calls))
    before = bytes(box.children[1].value)
    slider.value = 8
    assert calls == [2, 8]
    assert bytes(box.children[1].value) != before


def test_redraw_returns_the_png_it_shows():
    slider = widgets.head_count_slider(8, value=1)
    box, redraw = widgets.figure_slider(slider, _recording_draw([]))
    png = redraw(4)
    assert png.startswith(b"\x89PNG") and bytes(box.children[1].value) == png


def test_figure_slider_box_holds_the_slider_then_the_image():
    slider = widgets.head_count_slider(4)
    box, _ = widgets.figure_slider(slider, _recording_draw([]))
    assert box.children[0] is slider
    assert box.children[1].format == "png"


def test_figure_slider_figure_is_not_left_in_pyplot():
    before = plt.get_fignums()
    widgets.figure_slider(widgets.head_count_slider(4), _recording_draw([]))
    assert plt.get_fignums() == before     # nothing for the inline backend to show twice


# ------------------------------------------------------------ head_grid
@pytest.mark.parametrize("h, grid", [(1, (1, 1)), (2, (1, 2)), (3, (1, 3)), (4, (1, 4)),
                                     (6, (2, 4)), (8, (2, 4)), (12, (2, 8)), (16, (2, 8)),
                                     (32, (4, 8)), (64, (8, 8))])
def test_head_grid_rows_and_columns(h, grid):
    assert plots.head_grid(h) == grid


@pytest.mark.parametrize("bad", [0, -2, 2.0, True])
def test_head_grid_rejects_a_non_positive_or_non_int_count(bad):
    with pytest.raises(ValueError, match="head_grid: num_heads must be a positive int"):
        plots.head_grid(bad)


# ------------------------------------------------------------ head_maps
def _constant_heads(h, n):
    """Head k's map is filled with (k + 1) / (h + 1): each tile is recognisable."""
    return np.broadcast_to(((np.arange(h) + 1) / (h + 1))[:, None, None], (h, n, n)).copy()


def test_head_maps_puts_head_k_in_tile_k_row_by_row():
    # 6 heads in rows of 4, 3x3 maps, 1 empty column between tiles and 2 between rows
    image = plots.head_maps(_constant_heads(6, 3))
    mosaic = np.ma.filled(image.get_array(), np.nan)
    assert mosaic.shape == (2 * 3 + 2, 4 * 3 + 3)
    assert np.all(mosaic[0:3, 0:3] == 1 / 7)        # head 0: row 0, column 0
    assert np.all(mosaic[0:3, 12:15] == 4 / 7)      # head 3: row 0, column 3
    assert np.all(mosaic[5:8, 4:7] == 6 / 7)        # head 5: row 1, column 1
    assert np.all(np.isnan(mosaic[5:8, 8:15]))      # tiles 6 and 7 are empty
    assert np.all(np.isnan(mosaic[3:5, :]))         # the gap between the rows
    assert np.all(np.isnan(mosaic[:, 3]))           # the gap between columns 0 and 1


def test_head_maps_one_head_is_the_map_itself():
    W = np.random.default_rng(0).random((1, 4, 4))
    image = plots.head_maps(W)
    np.testing.assert_array_equal(np.ma.filled(image.get_array(), np.nan), W[0])


def test_head_maps_titles_each_tile_and_uses_a_fixed_weight_scale():
    _, ax = plt.subplots()
    image = plots.head_maps(_constant_heads(4, 2), ax=ax)
    assert sorted(t.get_text() for t in ax.texts) == ["head 0", "head 1", "head 2", "head 3"]
    assert image.get_clim() == (0.0, 1.0)
    assert image.get_cmap().name.startswith(plots.SEQUENTIAL)


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_head_maps_labels_tokens_while_tiles_are_large():
    _, ax = plt.subplots()
    plots.head_maps(_constant_heads(2, 3), ["a", "b", "c"], ax=ax, title="T")
    # one row of 2 tiles: the rows labelled once on the left, the columns under both tiles
    assert sorted(_texts(ax)) == sorted(["head 0", "head 1", "a", "b", "c",
                                         "a", "b", "c", "a", "b", "c"])
    assert ax.get_title() == "T"


def test_head_maps_labels_columns_under_the_first_tile_only_beyond_two_heads():
    _, ax = plt.subplots()
    plots.head_maps(_constant_heads(8, 2), ["a", "b"], ax=ax)
    texts = _texts(ax)
    assert texts.count("a") == 2 + 1          # 2 rows of tiles on the left, 1 tile below
    assert [t for t in texts if t.startswith("head")] == [f"head {k}" for k in range(8)]


def test_head_maps_names_rows_of_heads_when_there_are_many():
    _, ax = plt.subplots()
    plots.head_maps(_constant_heads(32, 2), ["a", "b"], ax=ax)
    assert _texts(ax) == ["heads 0-7", "heads 8-15", "heads 16-23", "heads 24-31"]
    assert ax.get_xticks().size == 0 and ax.get_yticks().size == 0


def test_head_maps_has_axis_titles():
    _, ax = plt.subplots()
    plots.head_maps(_constant_heads(2, 2), ax=ax)
    assert "query" in ax.get_ylabel() and "key" in ax.get_xlabel()


def test_head_maps_rejects_weights_that_are_not_three_dimensional():
    with pytest.raises(ValueError, match=r"head_maps: weights must be \(num_heads, n_q, n_k\), "
                                         r"got shape \(3, 3\)"):
        plots.head_maps(np.eye(3))


def test_head_maps_rejects_the_wrong_number_of_tokens():
    with pytest.raises(ValueError, match=r"head_maps: 2 tokens for maps of shape \(3, 3\)"):
        plots.head_maps(_constant_heads(2, 3), ["a", "b"])


# ------------------------------------------------------------ head_count_explorer
def _uniform_mha(calls):
    """A stand-in multi_head_attention: records the head counts, returns uniform maps."""
    def mha(X, W_q, W_k, W_v, W_o, num_heads):
        calls.append(num_heads)
        n = len(X)
        return X @ W_o, np.full((num_heads, n, n), 1 / n)
    return mha


def _explorer(calls, value=4):
    X, W = np.ones((3, 8)), np.eye(8)
    return lesson04.head_count_explorer(_uniform_mha(calls), X, W, W, W, W, ["a", "b", "c"],
                                       value=value)


def test_head_count_explorer_calls_the_given_attention_with_the_slider_value():
    calls = []
    box, redraw = _explorer(calls)
    box.children[0].value = 8
    redraw(1)
    assert calls == [4, 8, 1]


def test_head_count_explorer_offers_the_divisors_of_d_model():
    box, _ = _explorer([])
    assert list(box.children[0].options) == [1, 2, 4, 8]


def test_head_count_explorer_rejects_a_start_value_that_does_not_divide():
    with pytest.raises(ValueError, match="does not divide d_model=8"):
        _explorer([], value=3)
