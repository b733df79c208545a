"""Lesson 09's training: ``l09_position.train(..., position=, shifts=)`` and the two-back task.

The thresholds are the lesson's claims with the default seed (the notebook prints the
numbers and repeats the key comparison over more seeds). Gradients are checked against
central differences written here; the shifted sentences against their definition.
Timings are in benchmarks/run.py, not here.
"""

import numpy as np
import pytest

from helpers.lessons import l08_training, l09_position
from helpers.lessons.l08_training import training
from helpers.lessons.l09_position import model, two_back
from finite_differences import central_differences

SHIFTS = (0, 1, 2, 3, 4, 8)


@pytest.fixture(scope="module")
def runs():
    """The lesson's four models (two heads, seed 0), each measured at every shift."""
    return {position: l09_position.train("two_relations", num_heads=2, position=position, shifts=SHIFTS)
            for position in model.POSITIONS}


# ----------------------------------------------------------------- the thresholds (seed 0)
def test_without_position_its_noun_is_found_but_the_subject_is_at_chance(runs):
    result = runs["none"]
    its_noun, subject = l09_position.relation_accuracy(result)
    assert its_noun >= 0.9
    assert 0.4 <= subject <= 0.6                 # two nouns, nothing to tell the first: 1 in 2


@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rope"])
def test_each_encoding_gets_both_relations_right_on_90_percent(runs, position):
    assert runs[position]["accuracy"] >= 0.9


def test_accuracy_is_the_shift_0_figure(runs):
    for result in runs.values():
        assert result["accuracy"] == result["accuracy_by_shift"][0]
        assert sorted(result["accuracy_by_shift"]) == list(SHIFTS)


def test_learned_positions_collapse_when_the_sentence_moves_by_one_word(runs):
    assert runs["learned"]["accuracy_by_shift"][1] <= 0.1


def test_sinusoidal_degrades_with_the_shift(runs):
    accuracy = [runs["sinusoidal"]["accuracy_by_shift"][k] for k in SHIFTS]
    assert all(a >= b for a, b in zip(accuracy, accuracy[1:]))
    assert accuracy[1] >= 0.8 and accuracy[-1] <= 0.2


def test_sinusoidal_is_below_no_position_from_a_shift_of_4(runs):
    # Wrong position information is worse than none (the lesson's claim, seed 0).
    for k in (4, 8):
        assert runs["sinusoidal"]["accuracy_by_shift"][k] < runs["none"]["accuracy"]


def test_rope_is_within_0_02_at_every_shift(runs):
    accuracy = list(runs["rope"]["accuracy_by_shift"].values())
    assert max(accuracy) - min(accuracy) <= 0.02


def test_without_position_a_shift_changes_nothing(runs):
    accuracy = list(runs["none"]["accuracy_by_shift"].values())
    assert max(accuracy) - min(accuracy) < 1e-12


# ----------------------------------------------------------------- what each way builds
def test_learned_without_shifts_keeps_lesson_08s_shapes():
    result = l09_position.train("coreference", steps=2)
    assert len(result["corpus"].vocab) == 85 and result["params"]["pos"].shape == (10, 32)


def test_shifts_add_a_filler_word_and_a_longer_context():
    result = l09_position.train("coreference", steps=2, shifts=(0, 3))
    corpus = result["corpus"]
    assert corpus.vocab[-1] == model.FILLER and len(corpus.vocab) == 86
    assert result["params"]["pos"].shape == (13, 32)
    assert corpus.train.tokens.shape[1] == 13


@pytest.mark.parametrize("position", ["none", "sinusoidal", "rope"])
def test_only_learned_has_position_parameters(position):
    result = l09_position.train("coreference", steps=2, position=position)
    assert "pos" not in result["params"]


def test_the_default_is_learned():
    a = l09_position.train("coreference", steps=20, seed=1)["loss"]
    b = l09_position.train("coreference", steps=20, seed=1, position="learned")["loss"]
    assert np.array_equal(a, b)


def test_learned_positions_train_exactly_lesson_08s_model():
    a = l09_position.train("two_relations", steps=20, seed=1, num_heads=2)
    b = l08_training.train("two_relations", steps=20, seed=1, num_heads=2)
    assert np.array_equal(a["loss"], b["loss"]) and a["accuracy"] == b["accuracy"]
    assert all(np.array_equal(a["params"][name], b["params"][name]) for name in b["params"])


@pytest.mark.parametrize("position", ["none", "sinusoidal", "rope"])
def test_same_seed_gives_the_same_run(position):
    a = l09_position.train("coreference", steps=15, seed=2, position=position, shifts=(0, 2))
    b = l09_position.train("coreference", steps=15, seed=2, position=position, shifts=(0, 2))
    assert np.array_equal(a["loss"], b["loss"]) and a["accuracy_by_shift"] == b["accuracy_by_shift"]


def test_sinusoidal_input_is_the_word_vector_plus_the_table():
    corpus = training.load_corpus()
    params = model.init_params(len(corpus.vocab), 4, 1, np.random.default_rng(0), position="sinusoidal")
    tokens = corpus.test.tokens[:2]
    X = model.embedding("sinusoidal")(params, tokens)
    p = np.arange(10)[:, None]
    table = np.hstack([np.sin(p), np.cos(p), np.sin(p / 100), np.cos(p / 100)])   # d_model = 4, by hand
    np.testing.assert_allclose(X, params["tok"][tokens] + table, atol=1e-14)


def test_rope_scores_depend_only_on_the_offset_between_two_words():
    # The same two words, placed at different positions with the same offset, get the same score.
    rng = np.random.default_rng(3)
    params = {"tok": rng.standard_normal((5, 8)), **{w: rng.standard_normal((8, 8))
                                                     for w in ("W_q", "W_k", "W_v", "W_o")}}
    tokens = np.array([[1, 2, 0, 0, 0, 0], [0, 0, 0, 1, 2, 0]])    # word 1, then word 2, twice
    X = model.embedding("rope")(params, tokens)
    _, w = model.rope_attention(X, params["W_q"], params["W_k"], params["W_v"], params["W_o"], 2)
    # Weights differ (other words around); the scores are log-ratios of weights in a row.
    ratio_a = np.log(w[0, :, 0, 1] / w[0, :, 0, 0])               # query word 1 at 0: word 2 vs itself
    ratio_b = np.log(w[1, :, 3, 4] / w[1, :, 3, 3])               # query word 1 at 3: the same two
    np.testing.assert_allclose(ratio_a, ratio_b, atol=1e-12)


# ----------------------------------------------------------------- the gradients
@pytest.mark.parametrize("position, num_heads", [("none", 1), ("sinusoidal", 2), ("rope", 2)])
def test_every_gradient_matches_central_differences(position, num_heads):
    corpus = model.padded_corpus(training.load_corpus(), 2)
    rng = np.random.default_rng(0)
    params = model.init_params(len(corpus.vocab), 4, 2, rng, position=position, n=12)
    batch = training.sample_batch(corpus.train, rng, batch_size=3)
    _, grads = model.loss_and_grads(params, batch, num_heads, position=position)
    assert set(grads) == set(params)
    for name, value in params.items():
        def loss_of(Z):
            return model.loss_and_grads({**params, name: Z}, batch, num_heads, position=position)[0]
        np.testing.assert_allclose(grads[name], central_differences(loss_of, value),
                                   rtol=1e-5, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("position", ["learned", "rope"])
def test_two_back_gradients_match_central_differences(position):
    rng = np.random.default_rng(1)
    params = two_back.init_params(4, rng, position)
    tokens = rng.integers(0, two_back.VOCAB, size=(2, two_back.TRAIN_LENGTH))
    _, grads = two_back.loss_and_grads(params, tokens, 2, position)
    for name, value in params.items():
        def loss_of(Z):
            return two_back.loss_and_grads({**params, name: Z}, tokens, 2, position)[0]
        np.testing.assert_allclose(grads[name], central_differences(loss_of, value),
                                   rtol=1e-5, atol=1e-8, err_msg=name)


# ----------------------------------------------------------------- shifted sentences
def test_a_shifted_sentence_starts_after_k_filler_words():
    corpus = training.load_corpus()
    shifted = model.shift(corpus.test, 3, 14, filler=99)
    assert shifted.tokens.shape == (len(corpus.test), 14)
    assert np.all(shifted.tokens[:, :3] == 99) and np.all(shifted.tokens[:, 13:] == 99)
    assert np.array_equal(shifted.tokens[:, 3:13], corpus.test.tokens)
    rows = np.arange(len(corpus.test))
    assert np.array_equal(shifted.tokens[rows, shifted.query], corpus.test.tokens[rows, corpus.test.query])
    assert np.array_equal(shifted.targets, corpus.test.targets + 3)


@pytest.mark.parametrize("position", model.POSITIONS)
def test_scoring_at_the_pronoun_only_gives_the_full_forward_passs_accuracy(runs, position):
    # measure runs the whole model on every token; pronoun_accuracy only the pronoun's row
    for k in SHIFTS:
        shifted = model.shift_test(runs[position]["corpus"], training.load_corpus(), k)
        full = model.accuracy_on(runs[position]["params"], shifted, 2, position=position)[0]
        assert model.pronoun_accuracy(runs[position]["params"], shifted, 2, position=position) == full, k


@pytest.mark.parametrize("position", model.POSITIONS)
def test_attention_to_the_targets_at_the_pronoun_only_is_the_full_forward_passs(runs, position):
    result = runs[position]
    test = result["corpus"].test
    full = model.accuracy_on(result["params"], test, 2, position=position)[1]          # (R, h)
    assert full.shape == (2, 2)
    np.testing.assert_allclose(result["attention_to_targets"], full, rtol=1e-12, atol=1e-15)
    assert result["accuracy"] == model.accuracy_on(result["params"], test, 2, position=position)[0]


@pytest.mark.parametrize("position", model.POSITIONS)
def test_each_relations_accuracy_is_the_full_forward_passs(runs, position):
    result = runs[position]
    for k in (0, 4):
        shifted = model.shift_test(result["corpus"], training.load_corpus(), k)
        _, out, _ = model.forward(result["params"], shifted.tokens, 2, position=position)
        rows = np.arange(len(shifted))
        named = np.argmax(out[rows, shifted.query] @ result["params"]["W_out"], axis=-1)   # (R, N)
        right = named == shifted.tokens[rows, shifted.targets[:, :2].T]                   # (R, N)
        assert np.array_equal(l09_position.relation_accuracy(result, shifted), right.mean(axis=1)), k


# ----------------------------------------------------------------- RoPE's forward kept for its backward
def _rope_inputs(seed=2):
    rng = np.random.default_rng(seed)
    X, d_out = rng.standard_normal((2, 3, 6, 8))
    return X, [rng.standard_normal((8, 8)) for _ in range(4)], d_out


def _rope_W_q_gradient_by_differences(X, Ws, d_out):
    def loss_of(W_q):
        return float(np.sum(model.rope_attention(X, W_q, *Ws[1:], 2)[0] * d_out))
    return central_differences(loss_of, Ws[0])


def test_rope_backward_sees_an_input_changed_in_place_after_the_forward_pass():
    X, Ws, d_out = _rope_inputs()
    new_X = X + 1.0
    expected = _rope_W_q_gradient_by_differences(new_X, Ws, d_out)
    model.rope_attention(X, *Ws, 2)                  # the forward pass on the old values ...
    X[...] = new_X                                   # ... then the same array changed
    got = model.rope_attention_backward(X, *Ws, 2, d_out)["W_q"]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_rope_backward_is_not_changed_by_a_caller_writing_into_the_returned_weights():
    X, Ws, d_out = _rope_inputs()
    expected = _rope_W_q_gradient_by_differences(X, Ws, d_out)
    _, weights = model.rope_attention(X, *Ws, 2)
    weights[...] = 0.0
    got = model.rope_attention_backward(X, *Ws, 2, d_out)["W_q"]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_rope_backward_from_the_forward_cache_is_the_gradient():
    X, Ws, d_out = _rope_inputs()
    _, _, cache = model.rope_attention_with_cache(X, *Ws, 2)
    got = model.rope_attention_backward_from_cache(d_out, cache)
    by_differences = _rope_W_q_gradient_by_differences(X, Ws, d_out)
    np.testing.assert_allclose(got["W_q"], by_differences, rtol=1e-6, atol=1e-8)
    expected = model.rope_attention_backward(X, *Ws, 2, d_out)
    for name in ("X", "W_q", "W_k", "W_v", "W_o"):      # the same numbers, bit for bit
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def test_rope_backward_refuses_a_cache_of_the_split_halves_convention():
    X, Ws, d_out = _rope_inputs()
    _, _, cache = model.rope_split_halves_attention(X, *Ws, 2)
    with pytest.raises(ValueError, match="only this course's convention"):
        model.rope_attention_backward_from_cache(d_out, cache)


# ----------------------------------------------------------------- the other RoPE convention
def test_split_halves_with_the_same_weights_loses_most_of_the_accuracy(runs):
    assert model.evaluate_split_halves(runs["rope"]) < runs["rope"]["accuracy"] - 0.5


def test_split_halves_with_reordered_columns_is_the_trained_model(runs):
    # Split-halves pair i is (i, i + 8) in a head of 16: put our pair (2i, 2i + 1) there.
    per_head = [2 * i for i in range(8)] + [2 * i + 1 for i in range(8)]
    columns = per_head + [16 + c for c in per_head]                  # two heads
    params = runs["rope"]["params"]
    moved = {**params, "W_q": params["W_q"][:, columns], "W_k": params["W_k"][:, columns]}
    assert model.evaluate_split_halves(runs["rope"], moved) == runs["rope"]["accuracy"]


def test_split_halves_of_a_model_without_rope_is_refused(runs):
    with pytest.raises(ValueError, match="evaluate_split_halves: .*position='sinusoidal', not 'rope'"):
        model.evaluate_split_halves(runs["sinusoidal"])


# ----------------------------------------------------------------- longer than trained
def test_two_back_rope_holds_at_one_and_a_half_times_the_length():
    result = l09_position.train_two_back("rope", lengths=(16, 24))
    assert result["accuracy_by_length"][16] >= 0.95 and result["accuracy_by_length"][24] >= 0.9


def test_the_bands_together_are_the_accuracy_over_the_whole_sequence():
    result = l09_position.train_two_back("rope", lengths=(16,))
    bands = two_back.by_band(result)
    sizes = {"2-15": 14, "16-23": 8, "24-63": 40, "64-255": 192}     # positions in each band
    assert list(bands) == list(sizes)
    pooled = sum(bands[b]["accuracy"] * sizes[b] for b in sizes) / sum(sizes.values())
    assert pooled == pytest.approx(two_back.accuracy(result["params"], 1, "rope", 256), abs=1e-12)


def test_with_uniform_attention_the_weight_on_two_back_is_one_over_the_keys_seen():
    # W_q = 0: every score 0, so query p spreads its weight evenly over its p + 1 keys.
    result = l09_position.train_two_back("none", lengths=(16,), steps=1)
    result["params"]["W_q"] = np.zeros_like(result["params"]["W_q"])
    bands = two_back.by_band(result, bands=((2, 4), (4, 8)))
    assert bands["2-3"]["weight"] == pytest.approx((1 / 3 + 1 / 4) / 2)
    assert bands["4-7"]["weight"] == pytest.approx(np.mean([1 / (p + 1) for p in range(4, 8)]))


def test_two_back_learned_cannot_run_past_its_positions():
    result = l09_position.train_two_back("learned", lengths=(16, 24), steps=2)
    assert result["accuracy_by_length"][24] is None
    with pytest.raises(ValueError, match="has vectors for 16 positions only, not 24"):
        two_back.accuracy(result["params"], 1, "learned", 24)


# ----------------------------------------------------------------- bad arguments
BAD = [
    (dict(position="alibi"), ValueError, "unknown position 'alibi'"),
    (dict(position="rope", d_model=12, num_heads=4), ValueError, "position='rope' needs an even head size"),
    (dict(shifts=(0, -1)), ValueError, "shifts must be whole numbers >= 0"),
    (dict(shifts=()), ValueError, r"shifts must be whole numbers >= 0 \(at least one\)"),
    (dict(shifts=3), TypeError, "shifts must be a sequence"),
    (dict(shifts=(0, 1.5)), ValueError, "shifts must be whole numbers"),
]


@pytest.mark.parametrize("kwargs, error, message", BAD, ids=[m for _, _, m in BAD])
def test_bad_argument_gets_a_clear_error_naming_it(kwargs, error, message):
    with pytest.raises(error, match="train: " + message):
        l09_position.train("coreference", steps=1, **kwargs)


BAD_TWO_BACK = [
    (dict(position="alibi"), ValueError, "unknown position 'alibi'"),
    (dict(position="rope", d_model=12, num_heads=4), ValueError, "position='rope' needs an even head size"),
    (dict(position="rope", lengths=(16, 2)), ValueError, "lengths must be whole numbers > 2"),
    (dict(position="rope", lengths=16), TypeError, "lengths must be a sequence"),
    (dict(position="rope", steps=0), ValueError, "steps must be a positive whole number"),
    (dict(position="rope", seed=-1), ValueError, "seed must be a whole number >= 0"),
]


@pytest.mark.parametrize("kwargs, error, message", BAD_TWO_BACK, ids=[m for _, _, m in BAD_TWO_BACK])
def test_bad_argument_of_the_two_back_task_gets_a_clear_error_naming_it(kwargs, error, message):
    with pytest.raises(error, match="train_two_back: " + message):
        two_back.train_two_back(**kwargs)


# ----------------------------------------------------------------- why RoPE's weight falls (section 5)
def test_log_n_factor_is_one_up_to_the_trained_keys_then_the_log_ratio():
    factor = two_back.log_n_factor(20, trained=16)
    assert np.all(factor[:16] == 1.0)                               # queries 0..15 have <= 16 keys
    assert factor[19] == pytest.approx(np.log(20) / np.log(16))     # query 19 has 20 keys


def test_scaling_by_one_gives_by_bands_accuracy():
    # by_band_scaled recomputes the layer from its scores; with a factor of 1 it is by_band.
    result = l09_position.train_two_back("rope", lengths=(16,))
    plain = {band: v["accuracy"] for band, v in two_back.by_band(result).items()}
    assert two_back.by_band_scaled(result, trained=10**9) == plain


@pytest.mark.parametrize("position", ["rope", "sinusoidal"])
def test_the_weight_splits_into_target_trained_and_untrained_offsets(position):
    result = l09_position.train_two_back(position, lengths=(16,))
    parts, bands = two_back.weight_by_offset(result), two_back.by_band(result)
    for band, w in parts.items():
        assert w["target"] == pytest.approx(bands[band]["weight"], abs=1e-12)   # by_band's, another path
        assert w["target"] + w["other_trained"] + w["untrained"] == pytest.approx(1.0)
        assert w["target"] <= w["target_among_trained"] + 1e-12 and w["target_among_trained"] <= 1.0
    assert parts["2-15"]["untrained"] == 0 and np.isnan(parts["2-15"]["per_key_untrained"])


def test_with_uniform_attention_every_key_weighs_as_much_as_the_right_one():
    result = l09_position.train_two_back("none", lengths=(16,), steps=1)
    params = {**result["params"], "W_q": np.zeros_like(result["params"]["W_q"])}   # every score 0
    parts = two_back.weight_by_offset({**result, "params": params}, bands=((2, 4), (20, 30)))
    assert parts["20-29"]["per_key_trained"] == pytest.approx(1.0)
    assert parts["20-29"]["per_key_untrained"] == pytest.approx(1.0)
    assert parts["20-29"]["target_among_trained"] == pytest.approx(1 / 16)   # 16 keys at offsets 0..15


def test_rope_two_back_falls_by_dilution_not_by_the_unseen_offsets():
    # The lesson's section 5, seed 0: per key, unseen offsets weigh about what seen ones do;
    # among the seen offsets the right key keeps its share; log-n scaling lifts the accuracy.
    result = l09_position.train_two_back("rope", lengths=(16,))
    far = two_back.weight_by_offset(result)["64-255"]
    assert 0.5 < far["per_key_untrained"] / far["per_key_trained"] < 2
    assert far["target_among_trained"] >= 0.6 and far["target"] <= 0.25
    assert two_back.by_band_scaled(result)["64-255"] > two_back.by_band(result)["64-255"]["accuracy"] + 0.1
