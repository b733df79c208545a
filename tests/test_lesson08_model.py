"""Lesson 08's training: the model's gradient, Adam, reproducibility, the thresholds, bad arguments.

Expected values come from hand calculations on tiny inputs or from a different method
(central finite differences written here, a softmax written out with np.exp), never
from the code under test. Timings are in benchmarks/run.py, not here.
"""

import numpy as np
import pytest

from helpers import reference
from helpers.lessons import l08_training
from helpers.lessons.l08_training import model, training
from helpers.lessons.l08_training.corpus import Split
from finite_differences import central_differences

VOCAB = 85


@pytest.fixture(scope="module")
def corpus():
    return training.load_corpus()


# ----------------------------------------------------------------- the thresholds (seed 0)
@pytest.fixture(scope="module")
def coreference():
    return l08_training.train("coreference")


@pytest.fixture(scope="module")
def two_heads():
    return l08_training.train("two_relations", num_heads=2)


def test_coreference_reaches_95_percent_on_held_out_sentences(coreference):
    assert coreference["accuracy"] >= 0.95


def test_coreference_pronoun_attends_to_its_noun(coreference):
    assert coreference["attention_to_targets"].shape == (1, 1)
    assert coreference["attention_to_targets"][0, 0] >= 0.7


def test_it_puts_at_least_0_7_of_its_weight_on_its_noun(coreference, corpus):
    test = corpus.test
    rows = np.arange(len(test))
    _, _, weights = model.forward(coreference["params"], test.tokens, num_heads=1)
    is_it = test.tokens[rows, test.query] == corpus.vocab.index("it")
    on_noun = weights[rows, 0, test.query, test.targets[:, 0]]
    assert is_it.sum() > 1000
    assert on_noun[is_it].mean() >= 0.7


def test_two_heads_reach_95_percent_on_both_relations(two_heads):
    assert two_heads["accuracy"] >= 0.95


def test_two_heads_each_take_one_relation(two_heads):
    table = two_heads["attention_to_targets"]            # (relations, heads)
    assert table.shape == (2, 2)
    best = table.argmax(axis=1)                          # each relation's head
    assert best[0] != best[1]
    assert table[0, best[0]] >= 0.6 and table[1, best[1]] >= 0.6


def test_one_head_on_two_relations_returns_one_column():
    result = l08_training.train("two_relations", num_heads=1, steps=5)
    assert result["attention_to_targets"].shape == (2, 1)
    assert 0.0 <= result["accuracy"] <= 1.0


# ----------------------------------------------------------------- reproducibility
def test_same_seed_gives_the_same_loss_curve_bit_for_bit():
    a = l08_training.train("coreference", steps=30, seed=3)["loss"]
    b = l08_training.train("coreference", steps=30, seed=3)["loss"]
    assert np.array_equal(a, b)


def test_another_seed_gives_another_loss_curve():
    a = l08_training.train("coreference", steps=30, seed=3)["loss"]
    b = l08_training.train("coreference", steps=30, seed=4)["loss"]
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("steps", [1, 7])
def test_one_loss_per_step(steps):
    loss = l08_training.train("two_relations", steps=steps)["loss"]
    assert loss.shape == (steps,) and np.all(np.isfinite(loss))


def test_default_steps_are_the_tasks():
    assert training.TASKS["coreference"][1] > 0
    result = l08_training.train("coreference", steps=None, d_model=2, num_heads=2)
    assert len(result["loss"]) == training.TASKS["coreference"][1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtype_is_kept_in_every_parameter(dtype):
    result = l08_training.train("coreference", steps=3, dtype=dtype)
    assert {str(p.dtype) for p in result["params"].values()} == {dtype}


# ----------------------------------------------------------------- the whole model's gradient
def tiny_setup(num_relations, seed=0):
    corpus = training.load_corpus()
    rng = np.random.default_rng(seed)
    params = model.init_params(len(corpus.vocab), 4, num_relations, rng)
    batch = training.sample_batch(corpus.train, rng, batch_size=3)
    return params, batch


@pytest.mark.parametrize("num_heads, scale, num_relations",
                         [(1, True, 1), (2, True, 1), (2, False, 1), (1, False, 2), (4, True, 2)])
def test_every_gradient_matches_central_differences(num_heads, scale, num_relations):
    params, batch = tiny_setup(num_relations)
    _, grads = model.loss_and_grads(params, batch, num_heads, scale)
    assert set(grads) == set(params)
    for name, value in params.items():
        def loss_of(Z):
            return model.loss_and_grads({**params, name: Z}, batch, num_heads, scale)[0]
        numeric = central_differences(loss_of, value)
        assert grads[name].shape == value.shape
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-8, err_msg=name)


def test_loss_with_a_zero_readout_is_ln_of_the_vocabulary(corpus):
    params, batch = tiny_setup(2)
    params["W_out"] = np.zeros_like(params["W_out"])     # every word scores 0: uniform guess
    loss, _ = model.loss_and_grads(params, batch, num_heads=1)
    assert loss == pytest.approx(np.log(len(corpus.vocab)))


# ----------------------------------------------------------------- the forward pass
def softmax_rows(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("scale, divide", [(True, np.sqrt(8)), (False, 1.0)])
def test_scale_false_gives_plain_q_dot_k_scores(scale, divide):
    corpus = training.load_corpus()
    params = model.init_params(len(corpus.vocab), 16, 1, np.random.default_rng(5))
    tokens = corpus.test.tokens[:4]
    _, _, weights = model.forward(params, tokens, num_heads=2, scale=scale)
    X = params["tok"][tokens] + params["pos"]
    for head in range(2):
        cols = slice(8 * head, 8 * head + 8)
        Q, K = X @ params["W_q"][:, cols], X @ params["W_k"][:, cols]
        expected = softmax_rows(Q @ np.swapaxes(K, 1, 2) / divide)
        np.testing.assert_allclose(weights[:, head], expected, rtol=1e-10, atol=1e-12)


def test_uniform_attention_gives_a_tenth_on_every_target(corpus):
    params = model.init_params(len(corpus.vocab), 8, 2, np.random.default_rng(0))
    params["W_q"] = np.zeros_like(params["W_q"])         # every score 0: weights 1/10 each
    _, attention = model.accuracy_on(params, corpus.test, num_heads=2)
    np.testing.assert_allclose(attention, np.full((2, 2), 0.1), rtol=1e-12)


def test_accuracy_counts_a_sentence_only_when_every_answer_is_right():
    # A model made by hand: 4 words, d_model = 4. Column 0 of X is 1 for every word, plus 50
    # at position 1 (the position embedding), so every query [1, 0, 0, 0] scores position 1
    # at (1 + 50) / sqrt(4) and every other position at 1 / 2: all weight on position 1. The
    # values drop column 0 and keep the word's one-hot part, and each readout is the identity:
    # the model names the word at position 1, for both relations.
    tokens = np.array([[0, 1, 2, 3], [0, 2, 1, 3]])
    split = Split(["a b c d", "a c b d"], tokens, query=np.array([3, 3]),
                  targets=np.array([[1, 1], [2, 1]]), nouns=np.array([[1, 2], [1, 2]]))
    pick_column_0 = np.diag([1.0, 0, 0, 0])
    pos = np.zeros((4, 4))
    pos[1, 0] = 50.0
    params = {"tok": np.hstack([np.ones((4, 1)), np.eye(4)[:, 1:]]), "pos": pos,
              "W_q": pick_column_0, "W_k": pick_column_0, "W_v": np.diag([0.0, 1, 1, 1]),
              "W_o": np.eye(4), "W_out": np.stack([np.eye(4), np.eye(4)])}
    accuracy, attention = model.accuracy_on(params, split, num_heads=1)
    # Sentence 1: both answers are the word at position 1: right. Sentence 2: relation 0's
    # answer is the word at position 2, but the model names position 1's: the sentence is
    # wrong although relation 1 is right (a mean over relations would give 0.75).
    assert accuracy == 0.5
    np.testing.assert_allclose(attention, [[0.5], [1.0]], atol=1e-9)


# ----------------------------------------------------------------- fit: the one AdamW loop
def test_fit_first_step_moves_every_entry_by_the_step_size_then_decays_it():
    # Adam's first step: m_hat = g and v_hat = g**2, so it moves by lr * g / (|g| + 1e-8),
    # i.e. by lr against the sign of g; then weight decay multiplies by 1 - lr * 0.1.
    p0 = np.array([1.0, -2.0, 0.5])
    params = {"w": p0.copy()}
    losses = l08_training.fit(params, lambda p, batch: (7.0, {"w": np.array([3.0, -0.5, 2.0])}),
                              lambda: None, steps=1, d_model=32)
    lr = 0.01
    np.testing.assert_allclose(params["w"], (p0 - lr * np.array([1, -1, 1])) * (1 - lr * 0.1), rtol=1e-6)
    assert losses.tolist() == [7.0]


def test_fit_updates_a_list_of_per_layer_dicts_as_it_updates_a_flat_dict():
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal((3, 2, 2))
    target = rng.standard_normal((2, 2))

    def flat_loss(p, batch):
        return float(np.sum((p["a"] + p["b"] - target) ** 2)), {"a": 2 * (p["a"] + p["b"] - target),
                                                                   "b": 2 * (p["a"] + p["b"] - target),
                                                                   "c": 0 * p["c"]}

    def nested_loss(p, batch):
        loss, g = flat_loss({"a": p["a"], "b": p["layers"][0]["b"], "c": p["layers"][1]["c"]}, batch)
        return loss, {"a": g["a"], "layers": [{"b": g["b"]}, {"c": g["c"]}]}

    flat = {"a": a.copy(), "b": b.copy(), "c": c.copy()}
    nested = {"a": a.copy(), "layers": [{"b": b.copy()}, {"c": c.copy()}]}
    loss_flat = l08_training.fit(flat, flat_loss, lambda: None, 20, 32)
    loss_nested = l08_training.fit(nested, nested_loss, lambda: None, 20, 32)
    assert np.array_equal(loss_flat, loss_nested) and loss_flat[-1] < loss_flat[0]
    assert np.array_equal(flat["b"], nested["layers"][0]["b"])
    assert not np.array_equal(flat["c"], c)              # decayed although its gradient is 0


def test_fit_draws_one_batch_per_step_and_hands_it_to_the_loss():
    seen = []
    batches = iter(range(100))
    l08_training.fit({"w": np.ones(2)}, lambda p, batch: (seen.append(batch) or 0.0, {"w": np.ones(2)}),
                     lambda: next(batches), 5, 32)
    assert seen == [0, 1, 2, 3, 4]


# ----------------------------------------------------------------- config and evaluate
def test_result_config_records_how_it_was_trained():
    result = l08_training.train("two_relations", num_heads=2, d_model=16, steps=3, seed=4, scale=False)
    assert result["config"] == {"task": "two_relations", "seed": 4, "steps": 3, "d_model": 16,
                                "num_heads": 2, "num_layers": 1, "scale": False, "position": "learned",
                                "shifts": None, "readout": "word", "dtype": "float64"}


def test_evaluate_gives_the_results_accuracy_and_uses_params_when_given(coreference):
    assert l08_training.evaluate(coreference) == coreference["accuracy"]
    silent = {**coreference["params"], "W_v": np.zeros_like(coreference["params"]["W_v"])}
    # every output is 0, so every word scores 0 and argmax names word 0 ("actor") everywhere
    test = coreference["corpus"].test
    right_word = test.tokens[np.arange(len(test)), test.targets[:, 0]]
    assert l08_training.evaluate(coreference, params=silent) == pytest.approx(np.mean(right_word == 0))
    assert np.mean(right_word == 0) < 0.1



# ----------------------------------------------------- train_with_W_q_start (the √d_k section's controls)
def test_W_q_start_with_factor_1_is_train_bit_for_bit():
    mine = l08_training.train_with_W_q_start(factor=1.0, scale=False, seed=3, steps=20, d_model=16,
                                             at_steps=(0, 19))
    usual = l08_training.train("coreference", d_model=16, scale=False, steps=20, seed=3)
    np.testing.assert_array_equal(mine["loss"], usual["loss"])
    assert mine["accuracy"] == usual["accuracy"]
    assert mine["largest_weight"].shape == (2,) and mine["at_steps"] == (0, 19)
    assert mine["config"] == {**usual["config"], "W_q_factor": 1.0}


@pytest.mark.parametrize("factor, low, high", [
    (1e-12, 0.1 - 1e-9, 0.1 + 1e-9),    # scores all about 0: the pronoun's row is uniform over n = 10 words
    (1e3, 0.99, 1.0),                   # scores spread about 1000 times wider: one-hot
])
def test_W_q_start_factor_sets_how_saturated_the_pronouns_row_starts(factor, low, high):
    result = l08_training.train_with_W_q_start(factor=factor, scale=False, seed=0, steps=1, d_model=16,
                                               at_steps=(0,))
    assert low <= result["largest_weight"][0] <= high


BAD_W_Q_START = [
    (dict(factor=0.0), "factor must be a positive finite number"),
    (dict(factor=float("nan")), "factor must be a positive finite number"),
    (dict(factor=True), "factor must be a positive finite number"),
    (dict(at_steps=(0, 5)), "at_steps must be increasing whole numbers from 0 to steps - 1 = 4"),
    (dict(at_steps=(3, 0)), "at_steps must be increasing"),
    (dict(at_steps=(0, 0)), "at_steps must be increasing"),
    (dict(at_steps=0), "at_steps must be increasing"),
    (dict(steps=None), "steps must be a positive whole number"),
    (dict(looked_at=0), "looked_at must be a whole number from 1 to the"),
    (dict(looked_at=10**6), "looked_at must be a whole number from 1 to the"),
    (dict(seed=-1), "seed must be a whole number"),
]


@pytest.mark.parametrize("kwargs, message", BAD_W_Q_START, ids=[m for _, m in BAD_W_Q_START])
def test_W_q_start_bad_argument_gets_a_clear_error_naming_it(kwargs, message):
    with pytest.raises(ValueError, match=message):
        l08_training.train_with_W_q_start(**{"factor": 1.0, "scale": True, "seed": 0, "steps": 5,
                                             "d_model": 8, "at_steps": (0,), **kwargs})


# ----------------------------------------------------------------- the step size
@pytest.mark.parametrize("d_model, start", [(32, 0.01), (64, 0.005), (128, 0.0025)])
def test_learning_rate_starts_at_0_01_times_32_over_d_model_and_falls_linearly(d_model, start):
    steps = 4
    rates = [training.learning_rate(step, steps, d_model) for step in range(1, steps + 1)]
    np.testing.assert_allclose(rates, [start, 0.75 * start, 0.5 * start, 0.25 * start])


# ----------------------------------------------------------------- bad arguments
BAD = [
    (dict(task="translation"), ValueError, "unknown task 'translation'"),
    (dict(task="coreference", d_model=30, num_heads=4), ValueError,
     "d_model=30 is not divisible by num_heads=4"),
    (dict(task="coreference", num_heads=0), ValueError, "num_heads must be positive"),
    (dict(task="coreference", d_model=-8), ValueError, "d_model must be positive"),
    (dict(task="coreference", num_heads=2.0), TypeError, "num_heads must be a whole number"),
    (dict(task="coreference", d_model="32"), TypeError, "d_model must be a whole number"),
    (dict(task="coreference", steps=0), ValueError, "steps must be a positive whole number"),
    (dict(task="coreference", steps=2.5), ValueError, "steps must be a positive whole number"),
    (dict(task="coreference", scale="no"), TypeError, "scale must be True or False"),
    (dict(task="coreference", seed=-1), ValueError, "seed must be a whole number"),
    (dict(task="coreference", dtype="float16"), ValueError, "dtype must be one of"),
]


@pytest.mark.parametrize("kwargs, error, message", BAD, ids=[m for _, _, m in BAD])
def test_bad_argument_gets_a_clear_error_naming_it(kwargs, error, message):
    task = kwargs.pop("task")
    with pytest.raises(error, match=message):
        l08_training.train(task, **kwargs)


# ----------------------------------------------------------------- Adam in place, as the loop runs it
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_adam_in_place_gives_adam_steps_numbers_bit_for_bit(dtype):
    rng = np.random.default_rng(5)
    param, m, v = rng.standard_normal(300), np.zeros(300), np.zeros(300)
    param, m, v = (a.astype(dtype) for a in (param, m, v))
    mine = [a.copy() for a in (param, m, v)]
    work = (np.empty_like(param), np.empty_like(param))
    for t in range(1, 40):
        grad = (rng.standard_normal(300) * 10.0 ** rng.integers(-6, 3, 300)).astype(dtype)
        param, m, v = reference.adam_step(param, grad, m, v, t, lr=0.01 / t)
        training.adam_step_in_place(*mine[:1], grad, *mine[1:], t, 0.01 / t, work)
        for name, expected, got in zip(("param", "m", "v"), (param, m, v), mine):
            assert got.dtype == expected.dtype, name
            np.testing.assert_array_equal(got, expected, err_msg=f"{name} at step {t}")


# ----------------------------------------------------------------- the training step's twins, bit for bit
TWIN_SHAPES = [  # (batch, n, d_model, num_heads, mask)
    ((), 4, 6, 2, None), ((), 5, 6, 3, "causal"), ((), 4, 4, 4, "random, one row empty"),
    ((2,), 5, 8, 2, "causal"), ((), 1, 4, 2, None),
]


def _attention_inputs(seed, batch, n, d_model, mask):
    rng = np.random.default_rng(seed)
    X, d_out = rng.standard_normal((*batch, n, d_model)), rng.standard_normal((*batch, n, d_model))
    W = [rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) * 2 for _ in range(4)]
    if mask == "causal":
        mask = np.tril(np.ones((n, n), dtype=bool))
    elif mask is not None:
        mask = rng.random((n, n)) < 0.6
        mask[np.arange(n), rng.integers(0, n, n)] = True
        mask[0] = False
    return X, W, d_out, mask


@pytest.mark.parametrize("batch, n, d_model, h, mask", TWIN_SHAPES)
def test_attention_with_cache_gives_multi_head_attentions_numbers(batch, n, d_model, h, mask):
    X, W, _, mask = _attention_inputs(20, batch, n, d_model, mask)
    out, weights, _ = model.multi_head_attention_with_cache(X, *W, h, mask)
    expected_out, expected_weights = reference.multi_head_attention(X, *W, h, mask)
    np.testing.assert_array_equal(out, expected_out)
    np.testing.assert_array_equal(weights, expected_weights)


@pytest.mark.parametrize("batch, n, d_model, h, mask", TWIN_SHAPES)
def test_backward_from_cache_gives_every_number_of_the_backward_pass(batch, n, d_model, h, mask):
    X, W, d_out, mask = _attention_inputs(21, batch, n, d_model, mask)
    _, _, cache = model.multi_head_attention_with_cache(X, *W, h, mask)
    got = model.multi_head_attention_backward_from_cache(d_out, cache)
    expected = reference.multi_head_attention_backward(X, *W, h, d_out, mask)
    assert sorted(got) == sorted(expected)
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key], err_msg=key)


def test_backward_from_cache_names_a_d_out_of_the_wrong_shape():
    _, _, cache = model.multi_head_attention_with_cache(np.ones((3, 6)), *[np.eye(6)] * 4, 2)
    with pytest.raises(ValueError, match=r"d_out must have the shape of the output, \(3, 6\); got \(6, 3\)"):
        model.multi_head_attention_backward_from_cache(np.ones((6, 3)), cache)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_loss_gradient_from_probabilities_gives_loss_gradients_numbers(dtype):
    rng = np.random.default_rng(22)
    out, W_out = rng.standard_normal((5, 4, 6)).astype(dtype), rng.standard_normal((6, 9)).astype(dtype)
    query, right = rng.integers(0, 4, 5), rng.integers(0, 9, 5)
    p = reference.softmax(out[np.arange(5), query] @ W_out)
    got = model.loss_gradient_from_probabilities(out, query, right, W_out, p)
    for g, e in zip(got, reference.loss_gradient(out, query, right, W_out)):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)
