"""The lesson 10 checks (residual_attention_backward, ablated_stack, patched_stack).

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
    for number, (W_q, W_k, W_v, W_o) in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask)
        X = X + (out * keep[:, :, None] if number == layer else out)
    return X, weights


def stack_copy_back(X, layers, num_heads, layer, positions, mask=None):
    """Runs the layer in full, then copies the old stream back at the positions (right)."""
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        new = X + out
        if number == layer:
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
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + out
        if number == layer:
            X = X.copy()
            for b in range(len(X)):
                X[b, positions[b]] = 0.0                  # zeroes the stream, not the update
    return X, weights


def stack_all_positions(X, layers, num_heads, layer, positions, mask=None):
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number != layer:                                    # skips the whole layer
            X = X + out
    return X, weights


def stack_first_sentence(X, layers, num_heads, layer, positions, mask=None):
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number == layer:
            out = out.copy()
            out[:, positions[0]] = 0.0                    # sentence 0's positions for all
        X = X + out
    return X, weights


def stack_no_residual(X, layers, num_heads, layer, positions, mask=None):
    keep = np.ones(X.shape[:2])
    np.put_along_axis(keep, positions, 0.0, axis=1)
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = out * keep[..., None] if number == layer else out
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
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number == layer:
            out, saved = out * keep[..., None], weights
        X = X + out
    return X, saved


def stack_every_sentences_positions(X, layers, num_heads, layer, positions, mask=None):
    keep = np.ones(X.shape[:2])
    keep[:, positions] = 0                                # every sentence's positions, in all
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + (out * keep[..., None] if number == layer else out)
    return X, weights


def stack_without_mask(X, layers, num_heads, layer, positions, mask=None):
    return stack_right(X, layers, num_heads, layer, positions)


def stack_input_zeroed(X, layers, num_heads, layer, positions, mask=None):
    for number, matrices in enumerate(layers, start=1):
        if number == layer:
            X = X.copy()
            for b in range(len(X)):
                X[b, positions[b]] = 0.0                  # zeroes what the layer reads there
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + out
    return X, weights


def stack_first_position_only(X, layers, num_heads, layer, positions, mask=None):
    keep = np.ones(X.shape[:2])
    keep[np.arange(len(X)), positions[:, 0]] = 0          # one token per sentence
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + (out * keep[..., None] if number == layer else out)
    return X, weights


def stack_rows_zeroed(X, layers, num_heads, layer, positions, mask=None):
    """Zeroes the ablated layer's attention rows at the positions, and returns those weights."""
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number == layer:
            weights = weights.copy()
            for b in range(len(X)):
                weights[b, :, positions[b], :] = 0.0      # no attention there: no update
                out[b, positions[b]] = 0.0
        X = X + out
    return X, weights


def stack_back_to_embeddings(X, layers, num_heads, layer, positions, mask=None):
    """At the positions, puts back the embeddings instead of the stream before the layer."""
    X_0 = X.copy()
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + out
        if number == layer:
            for b in range(len(X)):
                X[b, positions[b]] = X_0[b, positions[b]]
    return X, weights


def stack_add_at(X, layers, num_heads, layer, positions, mask=None):
    """Builds keep with np.add.at, lesson 08's habit for counting."""
    keep = np.ones(X.shape[:2])
    np.add.at(keep, (np.arange(len(X))[:, None], positions), -1.0)
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + (out * keep[..., None] if number == layer else out)
    return X, weights


STACK_WRONG = {
    "attention rows zeroed, those weights returned": (stack_rows_zeroed, "the attention weights' rows"),
    "the stream reset to the embeddings": (stack_back_to_embeddings, "reset to the embeddings X"),
    "keep built with np.add.at": (stack_add_at, "listed twice"),
    "the input zeroed": (stack_input_zeroed, "the layer's *input* was zeroed"),
    "positions[b, 0] only": (stack_first_position_only, "only the first position of each sentence"),
    "keep[:, positions] = 0": (stack_every_sentences_positions, "at *all* sentences' positions"),
    "mask dropped": (stack_without_mask, "the mask was ignored"),
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


# ---------------------------------------------------------------- patched_stack
def updates_of(X, layers, num_heads, mask=None):
    """Every layer's update in a plain run of X, layer 1 first."""
    found = []
    for matrices in layers:
        out, _ = multi_head_attention(X, *matrices, num_heads, mask)
        found.append(out)
        X = X + out
    return found


def patch_right(X, X_source, layers, num_heads, layer, positions, mask=None):
    """The source's updates first, then a loop over sentences copying them in (right)."""
    lent = updates_of(X_source, layers, num_heads, mask)[layer - 1]
    return patch_with(X, lent, layers, num_heads, layer, positions, mask)


def patch_stream_difference(X, X_source, layers, num_heads, layer, positions, mask=None):
    """Keeps the source's streams and takes the update as a difference of two (right)."""
    S = X_source
    for matrices in layers[:layer]:
        before, S = S, S + multi_head_attention(S, *matrices, num_heads, mask)[0]
    chosen = np.zeros(X.shape[:2], dtype=bool)
    np.put_along_axis(chosen, positions, True, axis=1)
    for i, matrices in enumerate(layers):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + (np.where(chosen[..., None], S - before, out) if i == layer - 1 else out)
    return X, weights


def patch_own_update(X, X_source, layers, num_heads, layer, positions, mask=None):
    lent = updates_of(X, layers, num_heads, mask)[layer - 1]       # from X, not X_source
    return patch_with(X, lent, layers, num_heads, layer, positions, mask)


def patch_with(X, lent, layers, num_heads, layer, positions, mask=None, residual=True):
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number == layer:
            out = out.copy()
            for b in range(len(X)):
                out[b, positions[b]] = lent[b, positions[b]]
        X = X + out if residual else out
    return X, weights


def patch_zero(X, X_source, layers, num_heads, layer, positions, mask=None):
    return patch_with(X, np.zeros_like(X), layers, num_heads, layer, positions, mask)


def patch_source_embeddings(X, X_source, layers, num_heads, layer, positions, mask=None):
    lent = multi_head_attention(X_source, *layers[layer - 1], num_heads, mask)[0]   # skips layers below
    return patch_with(X, lent, layers, num_heads, layer, positions, mask)


def patch_swapped(X, X_source, layers, num_heads, layer, positions, mask=None):
    return patch_right(X_source, X, layers, num_heads, layer, positions, mask)


def patch_source_stream(X, X_source, layers, num_heads, layer, positions, mask=None):
    S = X_source
    for matrices in layers[:layer]:
        S = S + multi_head_attention(S, *matrices, num_heads, mask)[0]
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + out
        if number == layer:
            X = X.copy()
            for b in range(len(X)):
                X[b, positions[b]] = S[b, positions[b]]            # the source's stream
    return X, weights


def patch_layer_from_zero(X, X_source, layers, num_heads, layer, positions, mask=None):
    found = updates_of(X_source, layers, num_heads, mask)
    if layer >= len(layers):
        return patch_with(X, X, layers, num_heads, len(layers) + 1, positions, mask)
    return patch_with(X, found[layer], layers, num_heads, layer + 1, positions, mask)


def patch_no_residual(X, X_source, layers, num_heads, layer, positions, mask=None):
    S = X_source
    for matrices in layers[:layer]:
        S = multi_head_attention(S, *matrices, num_heads, mask)[0]
    return patch_with(X, S, layers, num_heads, layer, positions, mask, residual=False)


def patch_source_sentence_0(X, X_source, layers, num_heads, layer, positions, mask=None):
    return patch_right(X, np.repeat(X_source[:1], len(X), axis=0), layers, num_heads, layer,
                       positions, mask)


def patch_resid_pre(X, X_source, layers, num_heads, layer, positions, mask=None):
    """TransformerLens's resid_pre habit: the source's stream copied in *before* the layer."""
    S = X_source
    for matrices in layers[:layer - 1]:
        S = S + multi_head_attention(S, *matrices, num_heads, mask)[0]
    for number, matrices in enumerate(layers, start=1):
        if number == layer:
            X = X.copy()
            for b in range(len(X)):
                X[b, positions[b]] = S[b, positions[b]]
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        X = X + out
    return X, weights


def patch_up_to_layer(X, X_source, layers, num_heads, layer, positions, mask=None):
    """Patches every layer from 1 to `layer`."""
    found = updates_of(X_source, layers, num_heads, mask)
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number <= layer:
            for b in range(len(X)):
                out[b, positions[b]] = found[number - 1][b, positions[b]]
        X = X + out
    return X, weights


def patch_source_weights(X, X_source, layers, num_heads, layer, positions, mask=None):
    """Right stream, but the weights of the source's own run."""
    X_out, _ = patch_right(X, X_source, layers, num_heads, layer, positions, mask)
    S = X_source
    for matrices in layers:
        out, weights = multi_head_attention(S, *matrices, num_heads, mask)
        S = S + out
    return X_out, weights


def patch_added(X, X_source, layers, num_heads, layer, positions, mask=None):
    """Adds the source's update to the run's own at the positions."""
    lent = updates_of(X_source, layers, num_heads, mask)[layer - 1]
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number == layer:
            for b in range(len(X)):
                out[b, positions[b]] += lent[b, positions[b]]
        X = X + out
    return X, weights


def patch_every_prompt(X, X_source, layers, num_heads, layer, positions, mask=None):
    """TransformerLens's `corrupted[:, pos] = clean[:, pos]`, handed (B, k) positions."""
    lent = updates_of(X_source, layers, num_heads, mask)[layer - 1]
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number == layer:
            out[:, positions] = lent[:, positions]
        X = X + out
    return X, weights


def patch_add_at(X, X_source, layers, num_heads, layer, positions, mask=None):
    """A 0/1 patch weight built with np.add.at: a token listed twice gets 2."""
    lent = updates_of(X_source, layers, num_heads, mask)[layer - 1]
    m = np.zeros(X.shape[:2])
    np.add.at(m, (np.arange(len(X))[:, None], positions), 1.0)
    for number, matrices in enumerate(layers, start=1):
        out, weights = multi_head_attention(X, *matrices, num_heads, mask)
        if number == layer:
            out = out + m[..., None] * (lent - out)
        X = X + out
    return X, weights


PATCH_WRONG = {
    "the layer's input patched (resid_pre)": (patch_resid_pre, "the layer's *input* was patched"),
    "layers 1 .. layer patched": (patch_up_to_layer, "layers 1 to `layer` were all patched"),
    "the source run's weights": (patch_source_weights, "the weights returned are the source run's"),
    "the source's update added": (patch_added, "added on top of this run's own"),
    "[:, positions]": (patch_every_prompt, "at *all* sentences' positions"),
    "np.add.at weight": (patch_add_at, "listed twice"),
    "the update from X's own run": (patch_own_update, "nothing was patched"),
    "zeroed instead": (patch_zero, "the update was removed (set to 0)"),
    "the source's stream": (patch_source_stream, "the source's whole stream was copied in"),
    "layer run on X_source's embeddings": (patch_source_embeddings, "by running layer `layer` on X_source"),
    "runs swapped": (patch_swapped, "the two runs are swapped"),
    "layers[layer]": (patch_layer_from_zero, "one layer too late"),
    "no residual": (patch_no_residual, "the residual connection is missing"),
    "from source sentence 0": (patch_source_sentence_0, "from source sentence 0"),
}

PATCH_RIGHT = {"a loop over sentences": patch_right, "a difference of two streams": patch_stream_difference}


WRONG_BY_EXERCISE = {"residual_attention_backward": RESIDUAL_WRONG, "ablated_stack": STACK_WRONG,
                     "patched_stack": PATCH_WRONG}
RIGHT_BY_EXERCISE = {"residual_attention_backward": RESIDUAL_RIGHT, "ablated_stack": STACK_RIGHT,
                     "patched_stack": PATCH_RIGHT}


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
