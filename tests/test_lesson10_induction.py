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


def test_removing_from_every_side_is_removing_from_the_stream():
    runs = induction.train_runs(2, seeds=[0], steps=5, dtype="float64")
    data = induction.sample(np.random.default_rng(6), 50)
    np.testing.assert_allclose(induction.ablate_at(runs, 1, "source", data, sides=("Q", "K", "V")),
                               induction.ablate_at(runs, 1, "source", data))


@pytest.mark.parametrize("side", ["Q", "K", "V"])
def test_removing_from_one_side_is_what_layer_2_computes_from_two_streams(data, side):
    # Built by hand with lesson 04's attention: layer 2's `side` projection reads the stream
    # without layer 1's update at one token; the other two read the full stream.
    params = induction.init_params(2, [3], d_model=D, dtype="float64")
    tokens = data[0][:4]
    keep = np.ones(tokens.shape)
    keep[np.arange(4), [2, 5, 7, 9]] = 0
    logits, _ = induction.forward(params, tokens, reads={"layer": 1, "keep": keep, "sides": (side,)})
    p = one_run(params, 0)
    causal = reference.causal_mask(tokens.shape[1])
    X_0 = p["tok"][tokens] + p["pos"]
    L1, L2 = p["layers"]
    out_1, _ = reference.multi_head_attention(X_0, L1["W_q"], L1["W_k"], L1["W_v"], L1["W_o"], 1, causal)
    X_1, stripped = X_0 + out_1, X_0 + out_1 * keep[..., None]
    read = {name: (stripped if name == side else X_1) for name in "QKV"}
    Q, K, V = read["Q"] @ L2["W_q"], read["K"] @ L2["W_k"], read["V"] @ L2["W_v"]
    Z, _ = reference.scaled_dot_product_attention(Q, K, V, causal)
    np.testing.assert_allclose(logits[0], (X_1 + Z @ L2["W_o"]) @ p["W_U"], atol=1e-10)


def test_by_position_counts_and_averages_place_by_place(data):
    runs = induction.train_runs(2, seeds=[0], steps=5, dtype="float64")
    found = induction.by_position(runs, data)
    tokens, first, second = data
    logits, weights = induction.forward(induction.stack(runs), tokens)
    rows, query, source = induction.inside_repeat(first, second)
    once = induction.determined(data)
    for j in range(1, induction.LENGTH):
        assert found["previous"][0, j] == pytest.approx(np.mean([w[j, j - 1] for w in weights[0][0]]))
        here = [k for k in range(len(rows)) if once[k] and source[k] == j]
        assert found["answers"][j] == len(here)
        if here:
            right = [logits[0, rows[k], query[k]].argmax() == tokens[rows[k], query[k] + 1] for k in here]
            assert found["accuracy"][0, j] == pytest.approx(np.mean(right))
        else:
            assert np.isnan(found["accuracy"][0, j])


def test_the_example_place_is_determined_and_early():
    sequence, query = induction.determined_example()
    tokens, first, second = induction.test_set()
    earlier = [j for j in range(query) if tokens[sequence, j] == tokens[sequence, query]]
    assert len(earlier) == 1 and earlier[0] + 1 < 8
    assert second[sequence] <= query < second[sequence] + induction.SEGMENT - 1


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


def test_layer_1_is_read_through_layer_2s_keys_not_its_values(two):
    assert (induction.ablate_at(two, 1, "source", sides=("K",)) <= 0.35).all()
    assert (induction.ablate_at(two, 1, "source", sides=("V",)) >= 0.8).all()


def test_layer_1s_previous_token_head_switches_off_by_position(two):
    found = induction.by_position(two)
    assert (found["previous"][:, 1:8] >= 0.5).all()           # early: a previous-token head
    assert (found["previous"][:, 11:] <= 0.3).all()           # late: off, on every seed
    assert found["answers"][1:8].sum() / found["answers"].sum() >= 0.9


def test_the_copying_heads_ov_circuit_maps_each_token_to_itself(two):
    for run in two:
        ov = induction.circuits(run)["OV"]
        assert np.mean(ov.argmax(axis=1) == np.arange(induction.VOCAB_SIZE)) >= 0.9
