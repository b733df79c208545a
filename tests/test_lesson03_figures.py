"""Lesson 03's figures and sliders: scores beside their softmax, the "the cat sat" query, one blend.

Expected numbers are worked out here by hand (math.exp on the lesson's hand-picked "the
cat sat" numbers), not taken from the code under test.
"""

import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import reference
from helpers.lessons.l03_softmax_and_attention import figures as lesson03

matplotlib.use("Agg")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("panel, title_part", [(0, "Scores of the query 'it'"), (1, "After the softmax")])
def test_scores_and_weights_draws_one_bar_per_word_and_labels_each_panel(panel, title_part):
    fig = lesson03.scores_and_weights(["a", "b", "c"], [1.0, -2.0, 0.5], [0.5, 0.1, 0.4], "it")
    ax = fig.axes[panel]
    assert len(ax.patches) == 3
    assert title_part in ax.get_title() and ax.get_xlabel() == "key token j" and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    plt.close(fig)


CAT = ["the", "cat", "sat"]


Q_CAT = np.array([[0.0, 0.0], [0.0, 1.4], [2.0, 1.0]])


K_CAT = np.array([[0.0, 0.0], [1.38, 0.0], [0.0, 1.0]])


V_CAT = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


FEATURES = ["animal", "action", "article"]


def weights_of(Q, K):
    return reference.softmax(reference.attention_scores(Q, K))


def sat_weights_by_hand(noun, verb):
    scores = [0.0, noun * 1.38 / math.sqrt(2), verb / math.sqrt(2)]   # the, cat, sat
    e = [math.exp(s) for s in scores]
    return [x / sum(e) for x in e]


@pytest.mark.parametrize("noun, verb", [(2.0, 1.0), (0.0, 0.0), (5.0, 0.0), (0.0, 4.0)])
def test_query_figure_shows_sats_weights_and_output(noun, verb):
    fig, update, animated = lesson03.query_figure(Q_CAT, K_CAT, V_CAT, CAT, FEATURES, "sat", weights_of)
    update(noun, verb)
    bars_w, bars_o = animated[:3], animated[6:9]
    expected = sat_weights_by_hand(noun, verb)
    assert [b.get_height() for b in bars_w] == pytest.approx(expected)
    # the output's features: animal = weight on cat, action = weight on sat, article = on "the"
    assert [b.get_height() for b in bars_o] == pytest.approx([expected[1], expected[2], expected[0]])


def test_query_figure_at_the_lessons_query_reads_the_seeds_numbers():
    _, update, animated = lesson03.query_figure(Q_CAT, K_CAT, V_CAT, CAT, FEATURES, "sat", weights_of)
    update(2.0, 1.0)
    assert [round(b.get_height(), 1) for b in animated[:3]] == [0.1, 0.7, 0.2]
    assert [t.get_text() for t in animated[3:6]] == ["0.10", "0.70", "0.20"]


def test_query_figure_leaves_the_lessons_arrays_alone():
    Q = Q_CAT.copy()
    _, update, _ = lesson03.query_figure(Q, K_CAT, V_CAT, CAT, FEATURES, "sat", weights_of)
    update(5.0, -2.0)
    assert np.array_equal(Q, Q_CAT)


def test_query_explorer_has_one_slider_per_query_entry_and_redraws():
    box = lesson03.query_explorer(Q_CAT, K_CAT, V_CAT, CAT, FEATURES, "sat", weights_of)
    sliders, image = box.children[:-1], box.children[-1]
    assert [s.value for s in sliders] == [2.0, 1.0]
    before = bytes(image.value)
    assert before.startswith(PNG_MAGIC)
    sliders[0].value = 5.0
    assert bytes(image.value) != before


def test_query_explorer_needs_a_name_per_query_entry():
    with pytest.raises(ValueError, match="2 slider names for queries of size 3"):
        lesson03.query_explorer(np.ones((3, 3)), np.ones((3, 3)), V_CAT, CAT, FEATURES, "sat",
                               weights_of, dims=("a", "b"))


def _blend():
    values = np.array([[0.0, 0.0], [1.0, 0.2], [0.0, 0.0], [-0.5, 0.9], [0.05, 0.02]])
    weights = np.array([0.1, 0.5, 0.1, 0.2, 0.1])
    tokens = ["the", "cat", "the", "sat", "tired"]
    return lesson03.blend_plot(values, weights, tokens, "it"), weights @ values


def _label_boxes(ax):
    renderer = ax.figure.canvas.get_renderer()
    return {t.get_text(): t.get_window_extent(renderer) for t in ax.texts}


def test_blend_plot_labels_a_repeated_word_once():
    ax, _ = _blend()
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("the ×2 (0.10 each)") == 1
    assert not any(t.startswith("the (") for t in texts)
    assert len(texts) == 4   # the, cat, sat, tired: one label per distinct point


def test_blend_plot_labels_overlap_neither_each_other_nor_the_star():
    ax, out = _blend()
    boxes = list(_label_boxes(ax).values())
    x, y = ax.transData.transform(out)
    for i, box in enumerate(boxes):
        assert not box.contains(x, y), "a label sits on the star"
        assert not any(box.overlaps(other) for other in boxes[i + 1:])


def test_blend_plot_rejects_values_that_are_not_points_in_the_plane():
    with pytest.raises(ValueError, match="values must be"):
        lesson03.blend_plot(np.ones((3, 3)), np.ones(3) / 3, CAT, "it")
