"""Lesson 12's GPT: the forward pass against a rebuild from its definition, the whole gradient
against central differences, generation with and without the cache, the shipped checkpoint.

The rebuild below is written from the model's definition in words (CONTRIBUTING / the lesson):
plain Python loops over sentences, positions and heads, math.tanh and math.exp, RoPE from its
angle formula. It shares no code with helpers.lessons.l12_gpt.
"""

import math

import numpy as np
import pytest

from helpers.lessons.l12_gpt import generation as gen
from helpers.lessons.l12_gpt import model, text, training


# ------------------------------------------------------------- the definition, in loops
def ln_loop(row, g, b):
    mean = sum(row) / len(row)
    var = sum((v - mean) ** 2 for v in row) / len(row)             # no Bessel correction
    return [g[i] * (row[i] - mean) / math.sqrt(var + 1e-5) + b[i] for i in range(len(row))]


def matvec(row, W):
    return [sum(row[i] * W[i][j] for i in range(len(row))) for j in range(len(W[0]))]


def rotate(vec, p, base):
    out = list(vec)
    d = len(vec)
    for i in range(d // 2):
        angle = p * base ** (-2 * i / d)
        x0, x1 = vec[2 * i], vec[2 * i + 1]
        out[2 * i] = x0 * math.cos(angle) - x1 * math.sin(angle)
        out[2 * i + 1] = x0 * math.sin(angle) + x1 * math.cos(angle)
    return out


def gelu_loop(v):
    return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))


def forward_loops(params, config, ids):
    P = {k: (v if k == "blocks" else v.tolist()) for k, v in params.items()}
    blocks = [{k: v.tolist() for k, v in b.items()} for b in params["blocks"]]
    h, d = config["num_heads"], config["d_model"]
    dh = d // h
    out = []
    for sentence in ids.tolist():
        T = len(sentence)
        x = [list(P["tok"][c]) for c in sentence]
        for blk in blocks:
            a = [ln_loop(row, blk["ln1_g"], blk["ln1_b"]) for row in x]
            q = [matvec(r, blk["W_q"]) for r in a]
            k = [matvec(r, blk["W_k"]) for r in a]
            v = [matvec(r, blk["W_v"]) for r in a]
            merged = [[0.0] * d for _ in range(T)]
            for head in range(h):
                cols = slice(head * dh, (head + 1) * dh)
                qh = [rotate(q[t][cols], t, config["base"]) for t in range(T)]
                kh = [rotate(k[t][cols], t, config["base"]) for t in range(T)]
                for i in range(T):
                    scores = [sum(qh[i][c] * kh[j][c] for c in range(dh)) / math.sqrt(dh)
                              for j in range(i + 1)]                    # causal: j <= i
                    top = max(scores)
                    e = [math.exp(s - top) for s in scores]
                    w = [x_ / sum(e) for x_ in e]
                    for c in range(dh):
                        merged[i][head * dh + c] = sum(w[j] * v[j][head * dh + c] for j in range(i + 1))
            att = [matvec(r, blk["W_o"]) for r in merged]
            x = [[x[t][c] + att[t][c] for c in range(d)] for t in range(T)]
            m = [ln_loop(row, blk["ln2_g"], blk["ln2_b"]) for row in x]
            hidden = [[gelu_loop(z + bb) for z, bb in zip(matvec(r, blk["W_1"]), blk["b_1"])] for r in m]
            mlp = [[z + bb for z, bb in zip(matvec(r, blk["W_2"]), blk["b_2"])] for r in hidden]
            x = [[x[t][c] + mlp[t][c] for c in range(d)] for t in range(T)]
        out.append([matvec(ln_loop(row, P["lnf_g"], P["lnf_b"]), P["W_out"]) for row in x])
    return np.array(out)


def loss_loops(params, config, batch):
    logits = forward_loops(params, config, batch[:, :-1])
    total = 0.0
    for b, sentence in enumerate(batch[:, 1:].tolist()):
        for t, target in enumerate(sentence):
            row = logits[b, t]
            total += math.log(sum(math.exp(z) for z in row)) - row[target]
    return total / batch[:, 1:].size


def tiny(seed=0, **sizes):
    sizes = {"d_model": 4, "num_heads": 2, "num_layers": 2, "d_ff": 6, "context": 5, **sizes}
    config = model.make_config("abcde", dtype="float64", **sizes)
    rng = np.random.default_rng(seed)
    params = model.init_params(config, rng)
    # away from the initial values (gains 1, biases 0, small weights): every path shows
    params["tok"] += rng.standard_normal(params["tok"].shape)
    params["W_out"] += rng.standard_normal(params["W_out"].shape)
    params["lnf_g"] += 0.5 * rng.standard_normal(4)
    params["lnf_b"] += 0.5 * rng.standard_normal(4)
    for block in params["blocks"]:
        for key in block:
            block[key] = block[key] + 0.5 * rng.standard_normal(block[key].shape)
    return params, config


def arrays_of(params):
    """(name, getter/setter) for every array of a params dict."""
    places = [((key,), params) for key in params if key != "blocks"]
    places += [((key,), block) for block in params["blocks"] for key in block]
    return places


@pytest.mark.parametrize("base", [10000.0, 3.0])
def test_forward_is_the_model_of_the_definition(base):
    params, config = tiny(base=base)
    ids = np.array([[0, 3, 1, 4, 2], [2, 2, 0, 1, 3]])
    np.testing.assert_allclose(model.forward(params, config, ids), forward_loops(params, config, ids),
                               rtol=1e-10, atol=1e-12)


def test_the_gradient_of_the_whole_model_matches_central_differences():
    params, config = tiny(seed=1)
    batch = np.array([[0, 3, 1, 4, 2, 1], [2, 2, 0, 1, 3, 3]])
    loss, grads = model.loss_and_grads(params, config, batch)
    assert loss == pytest.approx(loss_loops(params, config, batch), rel=1e-12)
    eps = 1e-6
    got, want = [], []
    for (key,), owner in arrays_of(params):
        index = {id(b): i for i, b in enumerate(params["blocks"])}.get(id(owner))
        g = grads[key] if index is None else grads["blocks"][index][key]
        flat = owner[key].reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            plus = model.cross_entropy(model.forward(params, config, batch[:, :-1]), batch[:, 1:])
            flat[i] = old - eps
            minus = model.cross_entropy(model.forward(params, config, batch[:, :-1]), batch[:, 1:])
            flat[i] = old
            want.append((plus - minus) / (2 * eps))
            got.append(g.reshape(-1)[i])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    assert len(got) == model.count_parameters(params)


@pytest.mark.parametrize("keys, blocks_named, top_named", [
    (None, ("ln1_g", "ln1_b", "W_q", "W_k", "W_v", "W_o", "ln2_g", "ln2_b", "W_1", "b_1", "W_2", "b_2"),
     ("tok", "lnf_g", "lnf_b", "W_out")),
    (("W_q", "W_k"), ("W_q", "W_k"), ()),
])
def test_gradient_errors_names_each_array_of_every_block_and_uses_the_given_numerical_gradient(
        keys, blocks_named, top_named):
    params, config = tiny(seed=3, num_layers=3)
    batch = np.array([[0, 3, 1, 4, 2, 1], [2, 2, 0, 1, 3, 3]])
    _, grads = model.loss_and_grads(params, config, batch)
    zeros = lambda f, x: np.zeros_like(x)       # a numerical_gradient all wrong: error = |gradient|
    errors = model.gradient_errors(params, config, batch, zeros, keys=keys)
    assert list(errors) == ([f"block {l} {key}" for l in (1, 2, 3) for key in blocks_named]
                            + list(top_named))
    for name, (error, largest) in errors.items():
        *block, key = name.split()
        want = grads[key] if not block else grads["blocks"][int(block[1]) - 1][key]
        assert error == largest == np.abs(want).max()


@pytest.mark.parametrize("part", ["layer_norm_backward", "mlp_backward", "attention_backward"])
def test_the_training_twins_give_the_reference_gradients(part):
    from helpers import reference
    params, config = tiny(seed=2)
    batch = np.array([[0, 3, 1, 4, 2, 1], [2, 2, 0, 1, 3, 3]])
    loss, fast = model.loss_and_grads(params, config, batch)
    loss2, slow = model.loss_and_grads(params, config, batch, parts={part: getattr(reference, part)})
    assert loss == loss2
    np.testing.assert_allclose(fast["W_out"], slow["W_out"], rtol=1e-12)
    for a, b in zip(fast["blocks"], slow["blocks"]):
        for key in a:
            np.testing.assert_allclose(a[key], b[key], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(fast["tok"], slow["tok"], rtol=1e-10, atol=1e-14)


# ------------------------------------------------------------- generation
def test_the_generation_pass_is_forward_while_the_text_fits_the_context():
    params, config = tiny(seed=3)
    ids = np.array([4, 0, 2, 2, 1])
    logits, _ = gen.run(params, config, ids, np.arange(5), gen.empty_caches(config))
    np.testing.assert_allclose(logits, model.forward(params, config, ids[None])[0], rtol=1e-12)


def test_beyond_the_context_each_token_sees_the_last_context_tokens():
    """Position 7 with context 5: the cache's answer is the full pass over tokens 3..7 moved to
    positions 3..7 (RoPE: only offsets matter) but computed with the earlier tokens' keys..."""
    params, config = tiny(seed=4)
    ids = np.array([4, 0, 2, 2, 1, 3, 0, 1])
    caches = gen.empty_caches(config)
    for p, token in enumerate(ids):
        last, caches = gen.run(params, config, ids[p:p + 1], np.array([p]), caches)
    assert all(c["K"].shape[1] == config["context"] for c in caches)
    np.testing.assert_allclose(last[-1], gen.logits_without_cache(params, config, ids), rtol=1e-10)


@pytest.mark.parametrize("seed, temperature, top_k, steps", [
    (0, 1.0, None, 12), (1, 0.6, 3, 12), (2, 1.5, 2, 3), (3, 1.0, None, 1)])
def test_the_same_text_with_and_without_the_cache(seed, temperature, top_k, steps):
    params, config = tiny(seed=5)
    kwargs = dict(temperature=temperature, top_k=top_k, seed=seed)
    with_cache = gen.generate(params, config, "abca", steps, use_cache=True, **kwargs)
    assert with_cache == gen.generate(params, config, "abca", steps, use_cache=False, **kwargs)
    assert len(with_cache) == 4 + steps and with_cache.startswith("abca")


def test_the_checkpoint_writes_the_same_text_with_and_without_the_cache():
    params, config = training.load_checkpoint()
    kwargs = dict(temperature=0.8, top_k=10, seed=7)
    assert (gen.generate(params, config, "ROMEO.\n", 80, **kwargs)
            == gen.generate(params, config, "ROMEO.\n", 80, use_cache=False, **kwargs))


def test_draw_picks_the_slice_that_holds_u():
    p = np.array([0.2, 0.0, 0.5, 0.3])
    assert [gen.draw(p, u) for u in (0.0, 0.19, 0.2, 0.69, 0.7, 0.999)] == [0, 0, 2, 2, 3, 3]


# ------------------------------------------------------------- the text and the checkpoint
def test_the_text_is_the_five_plays_and_the_held_out_part_is_the_last_tenth():
    import hashlib
    sums = dict(line.split()[::-1] for line in (text.DATA / "SHA256SUMS").read_text().splitlines())
    for name in text.PLAYS:
        assert hashlib.sha256((text.DATA / name).read_bytes()).hexdigest() == sums[name]
    train, held = text.corpus()
    assert train + held == text.full_text() and len(held) == len(text.full_text()) - int(0.9 * 725571)
    assert len(text.full_text()) == 725571 and len(text.vocabulary()) == 73


def test_the_baselines_by_counting():
    train_ids, held_ids = np.array([0, 1, 0, 1, 1]), np.array([1, 0, 2])
    # unigram, add-one: counts 2+1, 3+1, 0+1 of 8
    assert text.unigram_loss(train_ids, held_ids, 3) == pytest.approx(
        -(math.log(4 / 8) + math.log(3 / 8) + math.log(1 / 8)) / 3)
    # bigram, add-one: row 1 saw 1->0 once, 1->1 once: (1+1)/(2+3); row 0 saw 0->1 twice: 0->2 is 1/5
    assert text.bigram_loss(train_ids, held_ids, 3) == pytest.approx(-(math.log(2 / 5) + math.log(1 / 5)) / 2)


def test_the_n_gram_ladder_by_counting():
    train_ids, held_ids = np.array([0, 1, 0, 1, 1]), np.array([1, 0, 2])
    # add-one on one character of context is the bigram table
    assert text.ngram_loss(train_ids, held_ids, 3, 2, smoothing=1.0) == pytest.approx(
        text.bigram_loss(train_ids, held_ids, 3))
    # Witten-Bell, order 0 the add-one unigram (3/8, 4/8, 1/8). After 1: seen 2 times, 2 distinct
    # (1 -> 0, 1 -> 1): P(0 | 1) = (1 + 2 * 3/8) / (2 + 2) = 7/16. After 0: seen twice, always 1:
    # P(2 | 0) = (0 + 1 * 1/8) / (2 + 1) = 1/24.
    assert text.ngram_loss(train_ids, held_ids, 3, 2) == pytest.approx(
        -(math.log(7 / 16) + math.log(1 / 24)) / 2)
    # a trigram: the context (1, 0) was seen once, followed by 1: P(2 | 1 0) = (0 + 1 * 1/24) / (1 + 1);
    # the first scored character has one character of context only, so it keeps 7/16
    assert text.ngram_loss(train_ids, held_ids, 3, 3) == pytest.approx(
        -(math.log(7 / 16) + math.log(1 / 48)) / 2)


def test_the_conditional_bigram_entropy_by_counting():
    # after 0 always 1 (cost 0), after 1 half 0, half 1 (ln 2 each): two of the four pairs cost ln 2
    assert text.conditional_bigram_entropy(np.array([0, 1, 0, 1, 1]), 3) == pytest.approx(math.log(2) / 2)


def test_the_checkpoint_is_small_and_carries_its_config_curve_and_command():
    assert training.CHECKPOINT.stat().st_size <= 2_000_000
    params, config = training.load_checkpoint()
    assert {"vocab", "d_model", "num_heads", "num_layers", "d_ff", "context", "base", "seed",
            "steps"} <= set(config)
    assert config["command"] == "make train-gpt" and len(config["loss"]) == config["steps"]
    assert config["curve"][-1][0] == config["steps"]


def test_the_checkpoint_s_held_out_loss_is_at_most_1_75_nats_per_character():
    params, config = training.load_checkpoint()
    assert training.held_out_loss(params, config) <= 1.75


def test_training_repeats_the_first_steps_of_the_shipped_run():
    """make train-gpt's first steps, again: the same losses as the checkpoint's record."""
    _, config = training.load_checkpoint()
    run = {k: config[k] for k in ("d_model", "num_heads", "num_layers", "context", "batch_size", "seed")}
    result = training.train(steps=config["steps"], stop_after=5, **run)
    np.testing.assert_allclose(result["loss"], config["loss"][:5], rtol=1e-5)
