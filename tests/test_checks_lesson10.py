"""The lesson 10 checks (residual_attention_backward, ablated_stack).

Wrong versions are written here the way a learner might write them (loops over
sentences, a 0/1 vector multiplied in, np.where, copies of the stream), independently of
the mistake catalogue in helpers/exercises/lesson10.py; each must get its specific
message, on the visible and on the hidden cases. Correct versions written in other ways
must pass. Both tables (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``) are run in
test_checks_versions.py. (That every catalogued mistake is named by its own message is
checked for the whole catalogue at once, in test_catalogue.py.)
"""

import numpy as np
import pytest

from helpers.exercises import EXERCISES
from helpers.reference import multi_head_attention, multi_head_attention_backward


# ---------------------------------------------------------------- residual_attention_backward
def residual_right(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    """The lesson's way: the layer's gradients, and d_out added to dX."""
    g = multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask)
    return {**g, "X": g["X"] + d_out}


def residual_copy_in_place(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    """Starts dX as a copy of d_out and adds the layer's dX into it (right)."""
    dX = d_out.copy()
    grads = multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=mask)
    dX += grads.pop("X")
    grads["X"] = dX
    return grads


def residual_per_sentence(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    """One sentence at a time (right): the matrices' gradients summed over the sentences."""
    if X.ndim == 2:
        return residual_right(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask)
    parts = [residual_right(x, W_q, W_k, W_v, W_o, num_heads, d, mask) for x, d in zip(X, d_out)]
    grads = {name: sum(p[name] for p in parts) for name in ("W_q", "W_k", "W_v", "W_o")}
    grads["X"] = np.stack([p["X"] for p in parts])
    return grads


def residual_forgotten(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    return multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask)


def residual_only(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    grads = multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask)
    grads["X"] = d_out
    return grads


def residual_at_output(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    Y = X + multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask)[0]
    grads = multi_head_attention_backward(Y, W_q, W_k, W_v, W_o, num_heads, d_out, mask)
    grads["X"] = grads["X"] + d_out
    return grads


def residual_without_mask(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    grads = multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out)
    grads["X"] += d_out
    return grads


def residual_through_W_o(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
    grads = multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask)
    grads["X"] = grads["X"] + d_out @ W_o.T
    return grads


RESIDUAL_WRONG = {
    "no residual gradient": (residual_forgotten, "dX is missing the residual's gradient"),
    "only the residual": (residual_only, "dX is only the residual's gradient d_out"),
    "backward at Y": (residual_at_output, "the layer's backward was taken at its output"),
    "mask dropped": (residual_without_mask, "the mask was ignored"),
    "residual through W_o": (residual_through_W_o, "the residual's gradient went through W_o"),
}

RESIDUAL_RIGHT = {"the lesson's way": residual_right, "copy, then +=": residual_copy_in_place,
                  "sentence by sentence": residual_per_sentence}


# ---------------------------------------------------------------- ablated_stack
def stack_right(X, layers, num_heads, layer, positions, mask=None):
    """A 0/1 vector per sentence, multiplied into the update (the lesson's way)."""
    keep = np.ones(X.shape[:2])
    for b, where in enumerate(positions):
        keep[b, where] = 0.0
    for l, (W_q, W_k, W_v, W_o) in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask)
        X = X + (out * keep[:, :, None] if l == layer else out)
    return X, weights


def stack_copy_back(X, layers, num_heads, layer, positions, mask=None):
    """Runs the layer in full, then copies the old stream back at the positions (right)."""
    for l, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        new = X + out
        if l == layer:
            for b in range(len(X)):
                new[b, positions[b]] = X[b, positions[b]]
        X = new
    return X, weights


def stack_where(X, layers, num_heads, layer, positions, mask=None):
    """np.where over a boolean grid of the chosen tokens, layers indexed from 0 (right)."""
    chosen = np.zeros(X.shape[:2], dtype=bool)
    np.put_along_axis(chosen, positions, True, axis=1)
    for i in range(len(layers)):
        out, weights = multi_head_attention(X, *layers[i], num_heads, mask)
        if i == layer - 1:
            out = np.where(chosen[..., None], 0.0, out)
        X = X + out
    return X, weights


def stack_from_zero(X, layers, num_heads, layer, positions, mask=None):
    keep = np.ones(X.shape[:2])
    for b in range(len(X)):
        keep[b, positions[b]] = 0
    for i, matrices in enumerate(layers):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if i == layer:                                    # layers[layer]: one too late
            out = out * keep[..., None]
        X = X + out
    return X, weights


def stack_zero_stream(X, layers, num_heads, layer, positions, mask=None):
    for l, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + out
        if l == layer:
            X = X.copy()
            for b in range(len(X)):
                X[b, positions[b]] = 0.0                  # zeroes the stream, not the update
    return X, weights


def stack_all_positions(X, layers, num_heads, layer, positions, mask=None):
    for l, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if l != layer:                                    # skips the whole layer
            X = X + out
    return X, weights


def stack_first_sentence(X, layers, num_heads, layer, positions, mask=None):
    for l, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if l == layer:
            out = out.copy()
            out[:, positions[0]] = 0.0                    # sentence 0's positions for all
        X = X + out
    return X, weights


def stack_no_residual(X, layers, num_heads, layer, positions, mask=None):
    keep = np.ones(X.shape[:2])
    np.put_along_axis(keep, positions, 0.0, axis=1)
    for l, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = out * keep[..., None] if l == layer else out
    return X, weights


def stack_every_layer(X, layers, num_heads, layer, positions, mask=None):
    keep = np.ones(X.shape[:2])
    np.put_along_axis(keep, positions, 0.0, axis=1)
    for matrices in layers:
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + out * keep[..., None]
    return X, weights


def stack_ablated_weights(X, layers, num_heads, layer, positions, mask=None):
    keep = np.ones(X.shape[:2])
    np.put_along_axis(keep, positions, 0.0, axis=1)
    saved = None
    for l, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if l == layer:
            out, saved = out * keep[..., None], weights
        X = X + out
    return X, saved


STACK_WRONG = {
    "layers[layer]": (stack_from_zero, "one layer too late"),
    "stream zeroed": (stack_zero_stream, "the whole residual stream was zeroed"),
    "layer skipped everywhere": (stack_all_positions, "the update was removed at every position"),
    "sentence 0's positions": (stack_first_sentence, "every sentence used sentence 0's positions"),
    "no residual": (stack_no_residual, "the residual connection is missing"),
    "every layer": (stack_every_layer, "the update was removed in every layer"),
    "the ablated layer's weights": (stack_ablated_weights, "the weights returned are the ablated layer's"),
}

STACK_RIGHT = {"0/1 vector": stack_right, "copy the old stream back": stack_copy_back,
               "np.where, layers from 0": stack_where}


WRONG_BY_EXERCISE = {"residual_attention_backward": RESIDUAL_WRONG, "ablated_stack": STACK_WRONG}
RIGHT_BY_EXERCISE = {"residual_attention_backward": RESIDUAL_RIGHT, "ablated_stack": STACK_RIGHT}


# ---------------------------------------------------------------- lesson-specific
@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_the_first_stack_case_has_different_positions_in_each_sentence(hidden):
    positions = EXERCISES["ablated_stack"].cases(hidden)[0].args[4]
    assert len(positions) >= 3 and len({tuple(p) for p in positions}) == len(positions)


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_the_residual_cases_include_a_mask_and_a_batch(hidden):
    cases = EXERCISES["residual_attention_backward"].cases(hidden)
    assert any("mask" in c.kwargs for c in cases)
    assert any(c.args[0].ndim == 3 for c in cases)
