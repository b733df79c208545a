"""The figures and sliders lessons 02-03 call in one line, and the predict-then-run helper.

Expected numbers are worked out here by hand (math.exp on the lesson's hand-picked "the
cat sat" numbers), not taken from the code under test. No timing is asserted: the
benchmark (benchmarks/run.py, section 4) prints the slider step times.
"""

import math

import matplotlib
import numpy as np
import pytest

from helpers import data, predictions, reference
from helpers.lessons.l02_scaled_scores import figures as lesson02
from helpers.lessons.l03_softmax_and_attention import figures as lesson03

matplotlib.use("Agg")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

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


# --- lesson 03's query figure and sliders -------------------------------------------------------

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


# --- lesson 02's d_k figure -------------------------------------------------------------------

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


# --- lesson 03's blend plot -----------------------------------------------------------------

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


# --- predict, then run ----------------------------------------------------------------------

@pytest.mark.parametrize("guess, answer, expected", [
    (16, 16.0, True), (15, 16.0, True), (10, 16.0, False),
    ("Was", "was", True), (" on ", "on", True), ("cat", "was", False),
    (True, True, True), (False, True, False), (1, True, False),
])
def test_same_compares_numbers_words_and_yes_no(guess, answer, expected):
    assert predictions.same(guess, answer) is expected


@pytest.mark.parametrize("guess", [None, ..., "", "  "])
def test_reveal_without_a_guess_shows_the_answer(guess, capsys):
    assert predictions.reveal(guess, 16.0, why="sqrt(256) = 16.") is None   # a cell shows only the text
    out = capsys.readouterr().out
    assert out.startswith("○ No prediction written yet") and "16" in out and "sqrt(256)" in out


def test_reveal_says_right_or_wrong(capsys):
    predictions.reveal(16, 16.0)
    predictions.reveal(4, 16.0)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✓") and out[1].startswith("✗")
