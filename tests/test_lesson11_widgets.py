"""Lesson 11's helpers: the kv-heads slider and the receptive field of stacked windows."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.lessons.l11_inference import widgets as wi
from helpers.reference import sliding_window_mask


# ------------------------------------------------------------ kv_heads_slider
def test_kv_heads_slider_offers_the_divisors_of_the_head_count():
    assert list(wi.kv_heads_slider(8).options) == [1, 2, 4, 8]
    assert list(wi.kv_heads_slider(6).options) == [1, 2, 3, 6]


def test_kv_heads_slider_starts_at_multi_head_attention_by_default():
    assert wi.kv_heads_slider(8).value == 8


def test_kv_heads_slider_rejects_a_value_that_does_not_divide():
    with pytest.raises(ValueError, match=r"kv_heads_slider: value=3 does not divide num_heads=8"):
        wi.kv_heads_slider(8, value=3)


@pytest.mark.parametrize("g, d_head, layers, expected", [(8, 8, 1, 128), (2, 8, 1, 32), (1, 64, 4, 512)])
def test_cache_numbers_per_token_count_a_key_and_a_value_per_kv_head(g, d_head, layers, expected):
    assert wi.cache_numbers_per_token(g, d_head, layers) == expected


# ------------------------------------------------------------ kv_heads_explorer
def _recording_gqa(calls):
    """A stand-in grouped_query_attention: records (h, g, W_k's width, W_v's width), uniform maps."""
    def gqa(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
        calls.append((num_heads, num_kv_heads, W_k.shape[1], W_v.shape[1]))
        n = len(X)
        return X @ W_o, np.full((num_heads, n, n), 1 / n)
    return gqa


def _explorer(calls, num_heads=4, value=None):
    X, W = np.ones((3, 8)), np.eye(8)
    return wi.kv_heads_explorer(_recording_gqa(calls), X, W, W, W, W, ["a", "b", "c"], num_heads,
                                value=value)


def test_kv_heads_explorer_calls_the_attention_with_pooled_kv_matrices():
    calls = []
    box, redraw = _explorer(calls)
    box.children[1].value = 2
    redraw(1)
    # 4 heads of 2 columns: g kv heads have K and V matrices of g * 2 columns
    assert calls == [(4, 4, 8, 8), (4, 2, 4, 4), (4, 1, 2, 2)]


def test_kv_heads_explorer_has_the_head_count_slider_then_the_kv_heads_slider():
    box, _ = _explorer([], value=2)
    heads, kv = box.children[:2]
    assert list(heads.options) == [1, 2, 4, 8] and heads.value == 4
    assert list(kv.options) == [1, 2, 4] and kv.value == 2


@pytest.mark.parametrize("h, g, options, kept", [(8, 2, [1, 2, 4, 8], 2), (2, 4, [1, 2], 2),
                                                 (1, 2, [1], 1)])
def test_moving_the_head_count_re_offers_its_divisors_and_keeps_g_when_it_can(h, g, options, kept):
    calls = []
    box, _ = _explorer(calls, value=g)
    box.children[0].value = h
    assert list(box.children[1].options) == options and box.children[1].value == kept
    assert calls[-1][:2] == (h, kept)
    assert len(calls) == 2                       # one redraw for the move, none for the re-offer


def test_kv_heads_explorer_redraws_a_new_picture_when_either_slider_moves():
    box, _ = _explorer([])
    before = bytes(box.children[2].value)
    box.children[1].value = 1
    after_kv = bytes(box.children[2].value)
    box.children[0].value = 8
    assert before.startswith(b"\x89PNG") and after_kv != before
    assert bytes(box.children[2].value) != after_kv


def test_kv_heads_explorer_leaves_nothing_in_pyplot():
    before = plt.get_fignums()
    _explorer([])
    assert plt.get_fignums() == before


def test_kv_heads_explorer_works_with_the_reference_attention():
    from helpers.reference import grouped_query_attention
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((4, 16)), rng.standard_normal((4, 16, 16))
    box, redraw = wi.kv_heads_explorer(grouped_query_attention, X, *W, list("abcd"), 8, value=2)
    assert redraw(1).startswith(b"\x89PNG")
    box.children[0].value = 16
    assert box.children[1].value == 2 and list(box.children[1].options) == [1, 2, 4, 8, 16]


# ------------------------------------------------------------ receptive_fields
def test_one_layer_reaches_the_window_itself():
    fields = wi.receptive_fields(sliding_window_mask, 6, 3, 1)
    np.testing.assert_array_equal(fields[0], sliding_window_mask(6, 3))


def test_two_layers_of_window_2_by_hand():
    # window 2: one layer sees i-1..i; two layers see i-2..i
    expected = np.array([[1, 0, 0, 0, 0],
                         [1, 1, 0, 0, 0],
                         [1, 1, 1, 0, 0],
                         [0, 1, 1, 1, 0],
                         [0, 0, 1, 1, 1]], dtype=bool)
    np.testing.assert_array_equal(wi.receptive_fields(sliding_window_mask, 5, 2, 2)[1], expected)


@pytest.mark.parametrize("window, layers", [(4, 3), (3, 5), (2, 1)])
def test_each_layer_reaches_window_minus_one_further(window, layers):
    n = 40
    fields = wi.receptive_fields(sliding_window_mask, n, window, layers)
    for layer, field in enumerate(fields, start=1):
        assert n - 1 - np.argmax(field[-1]) == layer * (window - 1)


def test_receptive_field_figure_has_one_titled_panel_per_layer():
    fig = wi.receptive_field_figure(sliding_window_mask, n=12, window=3, num_layers=3)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["after 1 layer: reaches 2 back", "after 2 layers: reaches 4 back",
                      "after 3 layers: reaches 6 back"]
    plt.close(fig)


def test_kv_heads_explorer_draws_at_100_dpi_or_more():
    from io import BytesIO

    from PIL import Image
    words = ["a", "b", "c", "d"]
    X = np.random.default_rng(0).standard_normal((4, 8))
    W = [np.eye(8)] * 4
    _, redraw = wi.kv_heads_explorer(_recording_gqa([]), X, *W, words, num_heads=4, value=2)
    width, height = Image.open(BytesIO(redraw(2))).size
    assert width == 850 and height <= 480       # figsize (8.5, at most 4.8) at 100 dpi


def test_kv_heads_explorer_is_less_tall_where_the_tiles_are_flat():
    from io import BytesIO

    from PIL import Image
    words = list("abcdefghij")
    X = np.random.default_rng(0).standard_normal((10, 64))
    W = [np.eye(64)] * 4
    _, redraw = wi.kv_heads_explorer(_recording_gqa([]), X, *W, words, num_heads=8, value=2)
    sixteen = Image.open(BytesIO(redraw(4, 16))).size           # two rows of 8 tiles
    eight = Image.open(BytesIO(redraw(2, 8))).size              # two rows of 4
    assert sixteen[0] == eight[0] == 850 and sixteen[1] < 0.85 * eight[1] and eight[1] == 480


def test_kv_heads_explorer_passes_the_causal_mask():
    seen = []

    def gqa(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
        seen.append(mask)
        return X @ W_o, np.full((num_heads, len(X), len(X)), 1 / len(X))
    X = np.random.default_rng(0).standard_normal((3, 8))
    wi.kv_heads_explorer(gqa, X, *[np.eye(8)] * 4, ["a", "b", "c"], num_heads=4, value=2)
    assert np.array_equal(seen[-1], np.tril(np.ones((3, 3), dtype=bool)))


@pytest.mark.parametrize("h, g", [(8, 2), (4, 4), (8, 1)])
def test_each_tile_is_framed_in_the_colour_of_its_kv_head(h, g):
    from matplotlib.colors import to_hex
    fig, ax = plt.subplots()
    wi.frame_groups(ax, h, g, n=5)
    colours = [to_hex(p.get_edgecolor()) for p in ax.patches]
    plt.close(fig)
    assert len(colours) == h
    group = h // g
    for i in range(h):           # same colour within a group of neighbours, a new one at each group
        assert (colours[i] == colours[i - 1]) == (i % group != 0) or i == 0
    assert len(set(colours)) == g


@pytest.mark.parametrize("h, g", [(32, 16), (64, 32), (16, 16), (64, 64)])
def test_beyond_8_kv_heads_no_two_groups_share_a_frame_colour_side_by_side(h, g):
    from matplotlib.colors import to_hex
    fig, ax = plt.subplots()
    wi.frame_groups(ax, h, g, n=5)
    colours = [to_hex(p.get_edgecolor()) for p in ax.patches]
    plt.close(fig)
    if g == h:                   # one kv head per query head: nothing to group, no frames, no labels
        assert colours == [] and list(ax.texts) == []
        return
    group = h // g
    for i in range(1, h):        # a new colour exactly where a new group starts
        assert (colours[i] == colours[i - 1]) == (i % group != 0)


@pytest.mark.parametrize("h, g", [(8, 2), (8, 1), (32, 16), (64, 16)])
def test_each_tile_names_the_kv_head_it_reads(h, g):
    # beyond 8 kv heads two frame colours alternate: the label tells stacked groups apart
    fig, ax = plt.subplots()
    wi.frame_groups(ax, h, g, n=5)
    labels = [text.get_text() for text in ax.texts]
    plt.close(fig)
    group = h // g
    assert labels == [f"kv {i // group}" for i in range(h)]


@pytest.mark.parametrize("h", [8, 32, 64])
def test_the_colour_bar_stands_beside_the_tiles_with_its_label_inside_the_figure(h):
    from matplotlib.figure import Figure

    from helpers import plots
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = Figure(figsize=(8.5, 4.8))
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.13, right=wi.TILES_RIGHT)       # as the explorer lays it out
    ax = fig.add_subplot()
    plots.head_maps(np.full((h, 10, 10), 0.1), ax=ax)
    wi._colourbar_beside_tiles(ax)
    bar = fig.axes[-1]
    renderer = fig.canvas.get_renderer()
    gap = bar.get_position().x0 - ax.get_position().x1              # figure fractions
    assert 0 < gap < 0.03
    assert bar.get_tightbbox(renderer).x1 <= fig.bbox.x1
