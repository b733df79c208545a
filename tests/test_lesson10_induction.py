"""Lesson 10's induction model: next-token prediction by a two-layer attention-only stack.

Expected values come from plainly different methods: lesson 04's ``multi_head_attention``
(one head) for the forward pass, central differences for the gradients, a seed trained
alone for the seed-stacked training, and the data's own construction for the positions.
The trained-model tests check the lesson's claims at the lesson's settings (5 seeds).
"""

import copy

import numpy as np
import pytest

from finite_differences import central_differences
from helpers import reference
from helpers.lessons import l10_two_layers
from helpers.lessons.l10_two_layers import induction

D = 4          # a tiny model for the exact tests


@pytest.fixture(scope="module")
def data():
    return induction.sample(np.random.default_rng(5), 400)


# ------------------------------------------------------------------ the data
def test_the_segment_appears_twice_after_a_gap_of_0_to_max_gap(data):
    tokens, first, second = data
    gap = second - first - induction.SEGMENT
    assert gap.min() == 0 and gap.max() == induction.MAX_GAP
    assert set(gap.tolist()) == set(range(induction.MAX_GAP + 1))
    for row, a, b in zip(tokens, first, second):
        np.testing.assert_array_equal(row[a:a + induction.SEGMENT], row[b:b + induction.SEGMENT])
    assert (second + induction.SEGMENT <= induction.LENGTH).all()


def test_where_the_repeat_starts_varies(data):
    _, first, _ = data
    assert len(set(first.tolist())) >= 4


def test_the_source_holds_the_next_token_and_follows_the_querys_earlier_copy(data):
    tokens, first, second = data
    rows, query, source = induction.inside_repeat(first, second)
    np.testing.assert_array_equal(tokens[rows, source], tokens[rows, query + 1])
    np.testing.assert_array_equal(tokens[rows, source - 1], tokens[rows, query])
    assert (source <= query).all()                 # the causal mask lets the query see it


def test_determined_places_have_one_earlier_copy_of_the_querys_token():
    # "1 2 3 4 5" at 0 and again at 7 (gap 2); in the second sequence a "2" also sits at 5,
    # so the query "2" at 8 has two earlier copies (followed by 3 and by 20).
    row = [1, 2, 3, 4, 5, 20, 21, 1, 2, 3, 4, 5, 22, 22, 22, 22]
    other = list(row)
    other[5] = 2
    tokens, first, second = np.array([row, other]), np.array([0, 0]), np.array([7, 7])
    assert induction.SEGMENT == 5 and induction.LENGTH == 16
    np.testing.assert_array_equal(induction.determined((tokens, first, second)),
                                  [True, True, True, True, True, False, True, True])


# ------------------------------------------------------------------ the model
def one_run(params, r):
    return {"tok": params["tok"][r], "pos": params["pos"][r], "W_U": params["W_U"][r],
            "layers": [{k: W[k][r] for k in W} for W in params["layers"]]}


def test_forward_is_lesson_04s_attention_with_one_head_and_a_causal_mask(data):
    params = induction.init_params(2, [3, 4], d_model=D, dtype="float64")
    tokens = data[0][:6]
    logits, weights = induction.forward(params, tokens)
    for r in range(2):
        p = one_run(params, r)
        X = p["tok"][tokens] + p["pos"]
        for layer, W in enumerate(p["layers"]):
            out, w = reference.multi_head_attention(X, W["W_q"], W["W_k"], W["W_v"], W["W_o"], 1,
                                                    reference.causal_mask(tokens.shape[1]))
            np.testing.assert_allclose(weights[layer][r], w[:, 0], atol=1e-12)
            X = X + out
        np.testing.assert_allclose(logits[r], X @ p["W_U"], atol=1e-10)


def test_every_gradient_matches_central_differences(data):
    params = induction.init_params(2, [7], d_model=D, dtype="float64")
    tokens = data[0][None, :2]
    _, grads = induction.loss_and_grads(params, tokens)
    places = [("tok",), ("pos",), ("W_U",)] + [("layers", i, k) for i in range(2)
                                               for k in ("W_q", "W_k", "W_v", "W_o")]
    for place in places:
        home, got = params, grads
        for key in place[:-1]:
            home, got = home[key], got[key]

        def loss(Z, home=home, key=place[-1]):
            old = home[key]
            home[key] = Z
            value = float(induction.loss_and_grads(params, tokens)[0][0])
            home[key] = old
            return value
        np.testing.assert_allclose(got[place[-1]], central_differences(loss, home[place[-1]]),
                                   rtol=1e-5, atol=1e-8, err_msg=str(place))


def test_a_uniform_prediction_costs_ln_vocab(data):
    params = induction.init_params(1, [0], d_model=D, dtype="float64")
    params["W_U"][:] = 0
    loss, _ = induction.loss_and_grads(params, data[0][None, :3])
    np.testing.assert_allclose(loss, [np.log(induction.VOCAB_SIZE)])


def test_seeds_trained_together_follow_the_same_path_as_alone():
    together = induction.train_runs(2, seeds=[0, 1], steps=15, dtype="float64")
    alone = induction.train_runs(2, seeds=[1], steps=15, dtype="float64")
    np.testing.assert_allclose(together[1]["loss"], alone[0]["loss"], rtol=1e-9)
    np.testing.assert_allclose(together[1]["params"]["layers"][1]["W_v"],
                               alone[0]["params"]["layers"][1]["W_v"], rtol=1e-7, atol=1e-12)
    assert together[1]["config"]["seed"] == 1 and together[1]["config"]["num_layers"] == 2


def test_removing_the_last_layer_at_the_source_cannot_change_the_querys_guess():
    # Causal mask, and the logits at the query read the query's own stream only: the last
    # layer's update at another position is read by nothing.
    runs = induction.train_runs(2, seeds=[0], steps=5, dtype="float64")
    data = induction.sample(np.random.default_rng(6), 50)
    np.testing.assert_allclose(induction.ablate_at(runs, 2, "source", data),
                               induction.accuracy(runs, data))


# ------------------------------------------------------------------ the lesson's claims
def trained(num_layers):
    """The lesson's five seeds (the notebooks' call, so that a test run trains them once)."""
    return l10_two_layers.train_runs(num_layers=num_layers, seeds=range(5))


@pytest.fixture(scope="module")
def two():
    return trained(2)


@pytest.fixture(scope="module")
def one():
    return trained(1)


def accuracy_where_determined(runs):
    guess, right = induction.predictions(runs)
    places = induction.determined()
    return (guess[:, places] == right[places]).mean(axis=1)


def test_two_layers_predict_the_repeat_on_every_seed(two):
    assert (accuracy_where_determined(two) >= 0.9).all()


def test_one_layer_stays_far_below_on_every_seed(one):
    assert (accuracy_where_determined(one) <= 0.5).all()


def test_layer_2_copies_through_its_values(two):
    silenced = copy.deepcopy(two)
    for run in silenced:
        run["params"]["layers"][1]["W_o"][:] = 0
    assert (induction.accuracy(silenced) <= 0.3).all()


def test_layer_1_is_needed_at_the_key_side_not_the_query_side(two):
    assert (induction.ablate_at(two, 1, "source") <= 0.35).all()
    assert (induction.ablate_at(two, 1, "query") >= 0.8).all()


def test_the_copying_heads_ov_circuit_maps_each_token_to_itself(two):
    for run in two:
        ov = induction.circuits(run)["OV"]
        assert np.mean(ov.argmax(axis=1) == np.arange(induction.VOCAB_SIZE)) >= 0.9
