"""Lesson 12's "look inside": the positions each head is scored on, ablation, the induction test."""

import numpy as np
import pytest

from helpers.lessons.l12_gpt import inside, model, text


def test_the_targets_of_a_short_text_by_hand():
    #        0123456789
    chars = "ab cd\nef g"
    prev, two, itself, word, space, line = inside._targets(chars)
    assert list(prev) == [-1, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert list(two) == [-1, -1, 0, 1, 2, 3, 4, 5, 6, 7]
    assert list(itself) == list(range(10))
    # word starts: 3 ("cd"), 6 ("ef"), 9 ("g"); counted inside a word, 3 or more back: never here
    assert list(word) == [-1] * 10 and list(space) == [-1] * 10
    chars = "xx abcde\nefgh ijkl"
    #        0123456789012345678
    prev, two, itself, word, space, line = inside._targets(chars)
    assert word[6] == 3 and word[7] == 3 and word[5] == -1     # "abcde": d and e; c is 2 back
    assert word[12] == 9 and word[17] == 14 and word[16] == -1
    # the word's boundary (the space or line break before it), on the same queries
    assert space[6] == 2 and space[12] == 8 and space[17] == 13 and space[16] == -1
    # the line starts at 9; counted only after the line's first word: at "ijkl" (word start 14 > 9)
    assert line[17] == 9 and line[16] == 9 and line[14] == 9 and line[12] == -1


def _tiny():
    config = model.make_config("abcdef ", d_model=8, num_heads=2, num_layers=2, context=8, dtype="float64")
    params = model.init_params(config, np.random.default_rng(0))
    for block in params["blocks"]:
        for key in block:
            block[key] = block[key] + 0.3 * np.random.default_rng(1).standard_normal(block[key].shape)
    return params, config


@pytest.mark.parametrize("layer, head", [(0, 0), (1, 1)])
def test_removing_a_head_is_zeroing_its_rows_of_W_o(layer, head):
    params, config = _tiny()
    ids = np.random.default_rng(2).integers(0, 7, (3, 8))
    keep = np.ones((2, 2))
    keep[layer, head] = 0
    zeroed = {**params, "blocks": [dict(b) for b in params["blocks"]]}
    W_o = zeroed["blocks"][layer]["W_o"].copy()
    W_o[head * 4:(head + 1) * 4] = 0                       # head's columns of the merged heads
    zeroed["blocks"][layer]["W_o"] = W_o
    np.testing.assert_allclose(model.forward(params, config, ids, keep=keep),
                               model.forward(zeroed, config, ids), rtol=1e-12)


def test_ablation_with_every_head_kept_is_the_plain_loss():
    params, config = _tiny()
    windows = np.random.default_rng(3).integers(0, 7, (5, 9))
    base, losses = inside.ablation(params, config, windows)
    assert base == pytest.approx(model.cross_entropy(model.forward(params, config, windows[:, :-1]),
                                                     windows[:, 1:]))
    assert losses.shape == (2, 2) and not np.allclose(losses, base)


def test_the_induction_strings_are_written_twice():
    config = {"vocab": text.vocabulary()}
    ids = inside.repeated_letters(config, count=3, length=5)
    assert ids.shape == (3, 10) and np.array_equal(ids[:, :5], ids[:, 5:])
    assert set(text.decode(ids.ravel(), config)) <= set("abcdefghijklmnopqrstuvwxyz")
