"""Lesson 10's head view (helpers/head_view.py) and its routes figure (helpers/layers_plots.py).

The models are tiny runs (a few steps): what is tested is what the view shows, not how
well the model learned. Expected rows come from the models' own attention maps computed
here with layers.forward / training.forward, picked out by hand.
"""

import matplotlib
import numpy as np
import pytest

from helpers import head_view, layers, layers_plots, training

matplotlib.use("Agg")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def stack():
    return training.train_attention("adjective", num_layers=2, num_heads=2, steps=3)


@pytest.fixture(scope="module")
def lesson08():
    return training.train_attention("coreference", num_heads=2, steps=3)


def test_rows_are_every_layer_and_head_for_the_chosen_word(stack):
    rows, labels = head_view.attention_rows(stack, 5, 2)
    test = stack["corpus"].test
    _, weights = layers.forward(stack["params"], test.tokens[5:6], 2)
    assert labels == ["layer 1, head 0", "layer 1, head 1", "layer 2, head 0", "layer 2, head 1"]
    np.testing.assert_allclose(rows[1], weights[0][0, 1, 2])
    np.testing.assert_allclose(rows[2], weights[1][0, 0, 2])
    np.testing.assert_allclose(rows.sum(axis=1), 1.0)


def test_a_lesson_08_result_has_one_layer_of_rows(lesson08):
    rows, labels = head_view.attention_rows(lesson08, 0, 7)
    _, _, weights = training.forward(lesson08["params"], lesson08["corpus"].test.tokens[:1], 2)
    assert labels == ["layer 1, head 0", "layer 1, head 1"]
    np.testing.assert_allclose(rows, weights[0, :, 7])


def test_induction_rows_respect_the_causal_mask():
    result = training.train_attention("induction", num_layers=2, steps=2)
    rows, _ = head_view.attention_rows(result, 0, 4)
    assert np.all(rows[:, 5:] == 0) and np.all(rows[:, :5] > 0)


@pytest.mark.parametrize("index, position, match", [(-1, 0, "index must be from 0"),
                                                    (0, 10, "position must be from 0 to 9")])
def test_bad_choices_are_clear_errors(stack, index, position, match):
    with pytest.raises(ValueError, match=match):
        head_view.attention_rows(stack, index, position)


def test_a_result_without_a_model_is_a_clear_error(stack):
    with pytest.raises(ValueError, match="head_view: result must come from"):
        head_view.attention_rows({**stack, "config": {}, "params": {"tok": 0}}, 0, 0)


def test_the_explorer_draws_headless_and_follows_the_query_to_a_new_sentence(stack):
    box, redraw = head_view.head_view_explorer(stack, sentences=[0, 12])
    menu = box.children[0]
    test = stack["corpus"].test
    assert menu.value == test.query[0] != test.query[12]
    assert redraw(12).startswith(PNG_MAGIC)
    assert menu.value == test.query[12]
    assert [label for label, _ in menu.options][test.query[12]].startswith("it ")


def test_the_explorer_keeps_a_non_query_word_across_sentences(stack):
    box, redraw = head_view.head_view_explorer(stack, sentences=[0, 12])
    box.children[0].value = 1
    redraw(12)
    assert box.children[0].value == 1


def test_layer_maps_draw_one_panel_per_layer_and_head(stack):
    fig = head_view.layer_maps(stack, 0)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["layer 1, head 0", "layer 1, head 1", "layer 2, head 0", "layer 2, head 1"]


def test_weights_by_seed_draws_one_bar_per_seed_and_label():
    ax = layers_plots.weights_by_seed([0, 1, 2], np.full((3, 2), 0.5), ["a", "b"], ["it", "nouns", "it"])
    assert len(ax.patches) == 6 and ax.get_xlabel() and ax.get_ylabel() and ax.get_title() == ""


def test_weights_by_seed_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="weights_by_seed: weights must be"):
        layers_plots.weights_by_seed([0, 1], np.zeros((3, 2)), ["a", "b"], ["it", "it"])
