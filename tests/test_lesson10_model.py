"""Lesson 10's model (helpers/lessons/l10_two_layers/model.py), its corpus, and train(num_layers=...).

Expected values come from hand-worked sentences, from a softmax and an attention written
out here with np.exp, or from central finite differences written here; never from the
code under test. Timings are in benchmarks/run.py, not here. The trained models are
module-scoped fixtures. The induction model (next-token prediction) has its own tests,
test_lesson10_induction.py.
"""

import numpy as np
import pytest

from helpers.lessons import l08_training, l10_two_layers
from helpers.lessons.l08_training import training
from helpers.lessons.l10_two_layers import adjective_corpus as corpus_adjective
from helpers.lessons.l10_two_layers import model as layers
from finite_differences import central_differences


# ----------------------------------------------------------------- the adjective corpus
@pytest.fixture(scope="module")
def adjective():
    return layers.load_corpus("adjective")


def words_at(split, i, positions):
    words = split.sentences[i].split()
    return [words[p] for p in positions]


def test_held_out_pairs_never_appear_in_a_training_sentence(adjective):
    def pairs(split):
        return {frozenset(words_at(split, i, split.nouns[i])) for i in range(len(split))}
    assert pairs(adjective.train) and pairs(adjective.test)
    assert not pairs(adjective.train) & pairs(adjective.test)


def test_every_noun_is_seen_in_training(adjective):
    train = adjective.train
    nouns = {w for i in range(len(train)) for w in words_at(train, i, train.nouns[i])}
    assert nouns == set(corpus_adjective.ANIMALS) | set(corpus_adjective.OBJECTS)


@pytest.mark.parametrize("split", ["train", "test"])
def test_the_adjective_alone_decides_the_referent(adjective, split):
    data = getattr(adjective, split)
    for i in range(0, len(data), 7):
        its_noun, adj = words_at(data, i, data.targets[i])
        animal_meant = adj in ("tired", "hungry")
        assert adj in corpus_adjective.ADJECTIVES
        assert (its_noun in corpus_adjective.ANIMALS) == animal_meant
        assert data.sentences[i].split()[data.query[i]] == "it"
        assert data.query[i] < data.targets[i, 1]                # the adjective comes after "it"


@pytest.mark.parametrize("split", ["train", "test"])
def test_both_orders_and_both_referents_are_equally_common(adjective, split):
    data = getattr(adjective, split)
    first_is_animal = np.array([words_at(data, i, data.nouns[i][:1])[0] in corpus_adjective.ANIMALS
                                for i in range(len(data))])
    means_first = data.targets[:, 0] == data.nouns[:, 0]
    assert first_is_animal.mean() == 0.5 and means_first.mean() == 0.5


def test_lesson_01s_sentence_is_encoded_with_its_positions():
    rows = corpus_adjective.sentences_of("cat", "mat")
    tired = "the cat sat on the mat because it was tired"
    text, pronoun, (its_noun, adj), nouns = next(r for r in rows if r[0] == tired)
    assert (pronoun, its_noun, adj, nouns) == (7, 1, 9, (1, 5))
    wet = next(r for r in rows if r[0] == "the cat sat on the mat because it was wet")
    assert wet[2] == (5, 9)                                      # "it" is the mat
    assert len(rows) == 2 * len(corpus_adjective.TEMPLATES) * 4


def test_sentences_of_refuses_two_animals():
    with pytest.raises(ValueError, match="sentences_of: need an animal and an object"):
        corpus_adjective.sentences_of("cat", "dog")


# ----------------------------------------------------------------- the forward pass
def softmax_rows(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


def tiny_params(num_layers, d_model=4, seed=0, task="adjective"):
    data = layers.load_corpus(task)
    rng = np.random.default_rng(seed)
    params = layers.init_params(len(data.vocab), data.train.tokens.shape[1], d_model, num_layers, rng)
    batch = training.sample_batch(data.train, rng, batch_size=3)
    return params, batch


def test_each_layer_adds_its_attention_output_to_its_input():
    params, batch = tiny_params(2)
    states, weights = layers.forward(params, batch.tokens, num_heads=1)
    X = params["tok"][batch.tokens] + params["pos"]
    for layer in (1, 2):
        W_q, W_k, W_v, W_o = (params["layers"][layer - 1][w] for w in ("W_q", "W_k", "W_v", "W_o"))
        w = softmax_rows((X @ W_q) @ np.swapaxes(X @ W_k, 1, 2) / np.sqrt(4))
        np.testing.assert_allclose(weights[layer - 1][:, 0], w, rtol=1e-10)
        X = X + (w @ (X @ W_v)) @ W_o
        np.testing.assert_allclose(states[layer], X, rtol=1e-10)


def test_the_pointer_is_the_query_row_averaged_over_heads():
    w = np.random.default_rng(0).random((2, 3, 4, 4))
    p = layers.pointer(w, np.array([1, 3]))
    np.testing.assert_allclose(p[0], (w[0, 0, 1] + w[0, 1, 1] + w[0, 2, 1]) / 3)
    np.testing.assert_allclose(p[1], w[1, :, 3].mean(axis=0))


def test_keeping_zero_at_every_position_removes_the_layer():
    params, batch = tiny_params(2)
    keep = {1: np.zeros(batch.tokens.shape)}
    states, _ = layers.forward(params, batch.tokens, 1, keep=keep)
    np.testing.assert_allclose(states[1], states[0])


# ----------------------------------------------------------------- the whole model's gradient
@pytest.mark.parametrize("num_layers, num_heads, scale, task",
                         [(2, 1, True, "adjective"), (2, 2, True, "adjective"), (2, 2, False, "adjective"),
                          (3, 1, True, "adjective"), (1, 2, True, "adjective")])
def test_every_gradient_matches_central_differences(num_layers, num_heads, scale, task):
    params, batch = tiny_params(num_layers, task=task)
    mask = layers.task_mask(task, batch.tokens.shape[1])
    _, grads = layers.loss_and_grads(params, batch, num_heads, scale, mask)
    flat, grads = layers.flatten(params), layers.flatten(grads)
    assert set(grads) == set(flat) and len(flat) == 2 + 4 * num_layers
    for name, value in flat.items():
        def loss_of(Z):
            changed = layers.unflatten({**flat, name: Z})
            return layers.loss_and_grads(changed, batch, num_heads, scale, mask)[0]
        np.testing.assert_allclose(grads[name], central_differences(loss_of, value),
                                   rtol=1e-5, atol=1e-8, err_msg=name)


def test_a_stacks_parameters_are_a_list_of_per_layer_dicts():
    params, _ = tiny_params(3)
    assert set(params) == {"tok", "pos", "layers"} and len(params["layers"]) == 3
    assert all(set(layer) == {"W_q", "W_k", "W_v", "W_o"} for layer in params["layers"])
    flat = layers.flatten(params)
    assert list(flat)[:6] == ["tok", "pos", "W_q1", "W_k1", "W_v1", "W_o1"]
    assert flat["W_v3"] is params["layers"][2]["W_v"]
    back = layers.unflatten(flat)
    assert back["layers"][1]["W_k"] is params["layers"][1]["W_k"]


def test_a_uniform_pointer_costs_ln_n():
    params, batch = tiny_params(2)
    params["layers"][1]["W_q"] = np.zeros_like(params["layers"][1]["W_q"])   # every score 0: weights 1/n
    loss, _ = layers.loss_and_grads(params, batch, num_heads=1)
    assert loss == pytest.approx(np.log(10))


# ----------------------------------------------------------------- the thresholds (seed 0)
@pytest.fixture(scope="module")
def one_layer():
    return l10_two_layers.train("adjective", num_layers=1)


@pytest.fixture(scope="module")
def two_layers():
    return l10_two_layers.train("adjective", num_layers=2)


def test_two_layers_resolve_the_adjective_on_held_out_pairs(two_layers):
    assert two_layers["accuracy"] >= 0.95
    assert two_layers["attention_to_targets"].shape == (1, 1)


def test_one_layer_is_at_chance(one_layer):
    assert one_layer["accuracy"] == pytest.approx(0.5, abs=0.02)


def test_one_layer_weighs_the_two_nouns_alike_whatever_the_adjective(one_layer):
    corpus = one_layer["corpus"]
    tokens = np.stack([corpus.encode(f"the cat sat on the mat because it was {adj}")
                       for adj in corpus_adjective.ADJECTIVES])
    _, weights = layers.forward(one_layer["params"], tokens, num_heads=1)
    p = layers.pointer(weights[-1], np.full(len(tokens), 7))
    ratio = p[:, 1] / p[:, 5]                                    # cat over mat
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)


def test_ablating_layer_1_at_it_finds_the_default_seeds_route(two_layers):
    # seed 0 takes the first route: "it" gathers the adjective in layer 1
    assert l10_two_layers.ablate(two_layers, 1, "pronoun") <= 0.6
    assert l10_two_layers.ablate(two_layers, 1, "nouns") >= 0.9


@pytest.mark.parametrize("at", ["pronoun", "nouns", "all"])
def test_ablating_the_last_layer_changes_nothing(two_layers, at):
    assert l10_two_layers.ablate(two_layers, 2, at) == two_layers["accuracy"]


# ----------------------------------------------------------------- reproducibility and errors
@pytest.mark.parametrize("task", ["adjective", "induction"])
def test_same_seed_gives_the_same_run_bit_for_bit(task):
    a = l10_two_layers.train(task, num_layers=2, steps=20, seed=3)
    b = l10_two_layers.train(task, num_layers=2, steps=20, seed=3)
    c = l10_two_layers.train(task, num_layers=2, steps=20, seed=4)
    assert np.array_equal(a["loss"], b["loss"]) and not np.array_equal(a["loss"], c["loss"])


def test_default_steps_are_the_tasks():
    result = l10_two_layers.train("adjective", num_layers=2, d_model=2, num_heads=2)
    assert len(result["loss"]) == layers.TASKS["adjective"][2]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtype_is_kept_in_every_parameter(dtype):
    result = l10_two_layers.train("adjective", num_layers=2, steps=3, dtype=dtype)
    assert {str(p.dtype) for p in layers.flatten(result["params"]).values()} == {dtype}


@pytest.mark.parametrize("kwargs, error, match", [
    ({"task": "coreference", "num_layers": 2}, ValueError, "answers by pointing: task must be one of"),
    ({"task": "adjective", "num_layers": 0}, ValueError, "num_layers must be a whole number >= 1"),
    ({"task": "adjective", "num_layers": 1.5}, ValueError, "num_layers must be a whole number"),
    ({"task": "adjective", "num_heads": 3}, ValueError, "not divisible by num_heads=3"),
    ({"task": "induction", "num_heads": 0}, ValueError, "num_heads must be positive"),
    ({"task": "adjective", "d_model": 8.0}, TypeError, "d_model must be a whole number"),
    ({"task": "adjective", "scale": 1}, TypeError, "scale must be True or False"),
    ({"task": "adjective", "seed": -1}, ValueError, "seed must be a whole number >= 0"),
    ({"task": "adjective", "dtype": "float16"}, ValueError, "dtype must be one of"),
])
def test_bad_arguments_are_clear_errors(kwargs, error, match):
    task = kwargs.pop("task")
    with pytest.raises(error, match=match):
        l10_two_layers.train(task, steps=1, **kwargs)


def test_config_records_a_pointer_stack_and_evaluate_reads_it(two_layers):
    config = two_layers["config"]
    assert (config["task"], config["num_layers"], config["readout"], config["position"]) == \
        ("adjective", 2, "pointer", "learned")
    assert l10_two_layers.evaluate(two_layers) == two_layers["accuracy"]
    assert l10_two_layers.evaluate(two_layers, params=two_layers["params"]) == two_layers["accuracy"]


@pytest.mark.parametrize("layer, at, match", [(0, "pronoun", "layer must be a whole number from 1 to 2"),
                                              (3, "pronoun", "from 1 to 2"),
                                              (1, "verbs", "at must be one of")])
def test_bad_ablations_are_clear_errors(two_layers, layer, at, match):
    with pytest.raises(ValueError, match=match):
        l10_two_layers.ablate(two_layers, layer, at)


def test_ablating_a_lesson_08_result_is_a_clear_error():
    result = l08_training.train("coreference", steps=1)
    with pytest.raises(ValueError, match="ablate: result must come from lesson 10's train"):
        l10_two_layers.ablate(result, 1, "pronoun")
