"""Lesson 10's head view (l10_two_layers/head_view.py) and its routes figure (l10_two_layers/plots.py).

The models are tiny runs (a few steps): what is tested is what the view shows, not how
well the model learned. Expected rows come from the models' attention maps computed here:
with the model's own forward pass, picked out by hand, and, for every ``position`` and
``scale``, from the parameters alone by a forward pass written out in this file.
"""

import matplotlib
import numpy as np
import pytest

from helpers.lessons import l08_training, l09_position, l10_two_layers
from helpers.lessons.l08_training import model as l08_model
from helpers.lessons.l10_two_layers import head_view
from helpers.lessons.l10_two_layers import model as layers
from helpers.lessons.l10_two_layers import plots as layers_plots

matplotlib.use("Agg")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def stack():
    return l10_two_layers.train("adjective", num_layers=2, num_heads=2, steps=3)


@pytest.fixture(scope="module")
def lesson08():
    return l08_training.train("coreference", num_heads=2, steps=3)


def test_rows_are_every_layer_and_head_for_the_chosen_word(stack):
    rows, labels = head_view.attention_rows(stack, 5, 2)
    test = stack["corpus"].test
    _, weights = layers.forward(stack["params"], test.tokens[5:6], 2)
    assert labels == ["layer 1, head 1", "layer 1, head 2", "layer 2, head 1", "layer 2, head 2"]
    np.testing.assert_allclose(rows[1], weights[0][0, 1, 2])
    np.testing.assert_allclose(rows[2], weights[1][0, 0, 2])
    np.testing.assert_allclose(rows.sum(axis=1), 1.0)


def test_a_lesson_08_result_has_one_layer_of_rows(lesson08):
    rows, labels = head_view.attention_rows(lesson08, 0, 7)
    _, _, weights = l08_model.forward(lesson08["params"], lesson08["corpus"].test.tokens[:1], 2)
    assert labels == ["layer 1, head 1", "layer 1, head 2"]
    np.testing.assert_allclose(rows, weights[0, :, 7])


@pytest.mark.parametrize("call", [
    lambda r: head_view.attention_maps(r, np.zeros((1, 16), dtype=int)),
    lambda r: head_view.plot_sentence(r, "a b c"),
    lambda r: head_view.plot(r, 0),
    lambda r: head_view.head_view_explorer(r),
], ids=["attention_maps", "plot_sentence", "plot", "head_view_explorer"])
def test_the_induction_model_is_refused_with_a_pointer_to_its_figures(call):
    result = l10_two_layers.train("induction", num_layers=2, steps=2)
    with pytest.raises(ValueError, match="induction_maps"):
        call(result)


def test_spread_takes_one_sentence_of_every_pair_in_both_orders_and_every_shape(stack):
    test = stack["corpus"].test
    chosen = head_view.spread(test)
    pairs = {frozenset(test.sentences[i].split()[j] for j in test.nouns[i]) for i in chosen}
    assert len(chosen) == len(test) // 40 and len(pairs) == len(chosen)
    firsts = {test.sentences[i].split()[test.nouns[i, 0]] for i in chosen}
    shapes = {" ".join(w for k, w in enumerate(test.sentences[i].split()) if k not in test.nouns[i]
                       and k != test.targets[i, 1]) for i in chosen}
    adjectives = {test.sentences[i].split()[test.targets[i, 1]] for i in chosen}
    assert len(shapes) == 5 and len(adjectives) == 4
    assert any(w in corpus_animals() for w in firsts) and any(w not in corpus_animals() for w in firsts)


def corpus_animals():
    from helpers.lessons.l10_two_layers.adjective_corpus import ANIMALS
    return set(ANIMALS)


def test_a_typed_sentence_shows_the_rows_of_it(stack):
    sentence = "the cat sat on the mat because it was tired"
    fig = head_view.plot_sentence(stack, sentence)
    rows, _ = head_view.rows_of(stack, stack["corpus"].encode(sentence), 7)
    weights = layers.forward(stack["params"], stack["corpus"].encode(sentence)[None], 2)[1]
    np.testing.assert_allclose(rows, np.concatenate([w[0, :, 7] for w in weights]))
    assert "\"it\" looks" in fig.axes[0].get_title()
    matplotlib.pyplot.close(fig)


def test_a_typed_sentence_of_the_wrong_length_is_a_clear_error(stack):
    with pytest.raises(ValueError, match="sentences of 10 words"):
        head_view.plot_sentence(stack, "the cat sat on the mat")


@pytest.mark.parametrize("index, position, match", [(-1, 0, "index must be from 0"),
                                                    (0, 10, "position must be from 0 to 9")])
def test_bad_choices_are_clear_errors(stack, index, position, match):
    with pytest.raises(ValueError, match=match):
        head_view.attention_rows(stack, index, position)


def test_a_result_without_a_model_is_a_clear_error(stack):
    with pytest.raises(ValueError, match="head_view: result must be a trained result of lessons 08-10"):
        head_view.attention_rows({**stack, "config": {}, "params": {"tok": 0}}, 0, 0)


# ----------------------------------------------------------------- the model rebuilt from its config
def softmax_rows(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


def rotate_pairs(x, base=10000.0):
    """RoPE written out: pair (2i, 2i+1) of the row at position p turned by p * base**(-2i/d)."""
    n, d = x.shape
    out = x.copy()
    for p in range(n):
        for i in range(d // 2):
            angle = p * base ** (-2 * i / d)
            c, s = np.cos(angle), np.sin(angle)
            out[p, 2 * i] = c * x[p, 2 * i] - s * x[p, 2 * i + 1]
            out[p, 2 * i + 1] = s * x[p, 2 * i] + c * x[p, 2 * i + 1]
    return out


def one_layer_weights(params, tokens, num_heads, scale, position):
    """(num_heads, n, n) for one sentence ``tokens`` (n,), from the parameters alone."""
    X = params["tok"][tokens]
    n, d = X.shape
    if position == "learned":
        X = X + params["pos"][:n]
    if position == "sinusoidal":
        p, i = np.arange(n)[:, None], np.arange(0, d, 2)[None, :]
        table = np.zeros((n, d))
        table[:, 0::2], table[:, 1::2] = np.sin(p / 10000 ** (i / d)), np.cos(p / 10000 ** (i / d))
        X = X + table
    d_head = d // num_heads
    heads = []
    for h in range(num_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        Q, K = X @ params["W_q"][:, cols], X @ params["W_k"][:, cols]
        if position == "rope":
            Q, K = rotate_pairs(Q), rotate_pairs(K)
        heads.append(softmax_rows(Q @ K.T / (np.sqrt(d_head) if scale else 1.0)))
    return np.stack(heads)


TRAINED = {
    "l09 none": lambda: l09_position.train("two_relations", num_heads=2, position="none", steps=3),
    "l09 learned": lambda: l09_position.train("two_relations", num_heads=2, position="learned", steps=3),
    "l09 sinusoidal": lambda: l09_position.train("two_relations", num_heads=2, position="sinusoidal",
                                                 steps=3),
    "l09 rope": lambda: l09_position.train("two_relations", num_heads=2, position="rope", steps=3),
    "l09 rope, shifts": lambda: l09_position.train("coreference", num_heads=2, position="rope", steps=3,
                                                   shifts=(0, 2)),
    "l09 sinusoidal, scale=False": lambda: l09_position.train("coreference", num_heads=2, steps=3,
                                                              position="sinusoidal", scale=False),
    "l08 scale=False": lambda: l08_training.train("coreference", num_heads=2, d_model=16, steps=3,
                                                  scale=False),
    "l10 word readout": lambda: l10_two_layers.train_word_readout("adjective", steps=3),
}


@pytest.mark.parametrize("name", list(TRAINED))
def test_the_head_view_of_a_one_layer_model_is_its_own_attention(name):
    result = TRAINED[name]()
    config, test = result["config"], result["corpus"].test
    index, word = 3, int(test.query[3])
    rows, labels = head_view.attention_rows(result, index, word)
    expected = one_layer_weights(result["params"], test.tokens[index], config["num_heads"], config["scale"],
                                 config["position"])[:, word]
    assert len(labels) == config["num_heads"]
    np.testing.assert_allclose(rows, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scale", [True, False])
def test_the_head_view_of_a_stack_is_its_own_attention_with_and_without_scaling(scale):
    result = l10_two_layers.train("adjective", num_layers=2, num_heads=2, steps=3, scale=scale, d_model=16)
    params, test = result["params"], result["corpus"].test
    X = params["tok"][test.tokens[4]] + params["pos"]
    expected = []
    for layer in params["layers"]:                       # residual layers written out
        heads = []
        for h in range(2):
            cols = slice(8 * h, 8 * h + 8)
            Q, K = X @ layer["W_q"][:, cols], X @ layer["W_k"][:, cols]
            heads.append(softmax_rows(Q @ K.T / (np.sqrt(8) if scale else 1.0)))
        expected += [w[test.query[4]] for w in heads]
        merged = np.hstack([w @ (X @ layer["W_v"][:, 8 * h:8 * h + 8]) for h, w in enumerate(heads)])
        X = X + merged @ layer["W_o"]
    rows, _ = head_view.attention_rows(result, 4, int(test.query[4]))
    np.testing.assert_allclose(rows, np.stack(expected), rtol=0, atol=1e-12)


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
    assert titles == ["layer 1, head 1", "layer 1, head 2", "layer 2, head 1", "layer 2, head 2"]


def test_weights_by_seed_draws_one_bar_per_seed_and_label():
    ax = layers_plots.weights_by_seed([0, 1, 2], np.full((3, 2), 0.5), ["a", "b"], ["it", "nouns", "it"])
    assert len(ax.patches) == 6 and ax.get_xlabel() and ax.get_ylabel() and ax.get_title() == ""


def test_weights_by_seed_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="weights_by_seed: weights must be"):
        layers_plots.weights_by_seed([0, 1], np.zeros((3, 2)), ["a", "b"], ["it", "it"])
