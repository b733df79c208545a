"""Lesson 10's reference functions: residual_attention_backward, ablated_stack, patched_stack.

Expected values are worked out by hand on tiny inputs (one token: its attention weight is
1, so its update is x @ W_v @ W_o), or by central differences written here.
"""

import numpy as np
import pytest

from helpers.reference import ablated_stack, patched_stack, residual_attention_backward
from finite_differences import central_differences


def layer_output(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Y = X + multi-head attention, written out here with np.exp (heads cut by columns)."""
    n, d = X.shape
    d_head = d // num_heads
    out = np.zeros_like(X)
    for h in range(num_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        S = (X @ W_q[:, cols]) @ (X @ W_k[:, cols]).T / np.sqrt(d_head)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        E = np.exp(S - S.max(axis=1, keepdims=True))
        out[:, cols] = (E / E.sum(axis=1, keepdims=True)) @ (X @ W_v[:, cols])
    return X + out @ W_o


@pytest.mark.parametrize("num_heads, causal", [(1, False), (2, False), (2, True)])
def test_residual_backward_matches_central_differences(num_heads, causal):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4, 4))
    mats = [rng.standard_normal((4, 4)) for _ in range(4)]
    d_out = rng.standard_normal((4, 4))
    mask = np.tril(np.ones((4, 4), dtype=bool)) if causal else None
    grads = residual_attention_backward(X, *mats, num_heads, d_out, mask)
    args = {"X": X, "W_q": mats[0], "W_k": mats[1], "W_v": mats[2], "W_o": mats[3]}
    for name in args:
        def loss(Z):
            a = {**args, name: Z}
            return float(np.sum(layer_output(a["X"], a["W_q"], a["W_k"], a["W_v"], a["W_o"],
                                             num_heads, mask) * d_out))
        np.testing.assert_allclose(grads[name], central_differences(loss, args[name]),
                                   rtol=1e-6, atol=1e-8, err_msg=name)


def test_residual_backward_with_zero_matrices_passes_d_out_straight_through():
    # W_v = 0: the layer adds nothing, Y = X, so dX = d_out exactly.
    rng = np.random.default_rng(1)
    X, d_out = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    W = rng.standard_normal((2, 2))
    grads = residual_attention_backward(X, W, W, np.zeros((2, 2)), W, 1, d_out)
    np.testing.assert_allclose(grads["X"], d_out, atol=1e-15)


def one_token_layers(d=2):
    W_v1 = np.array([[1.0, 0.0], [0.0, 2.0]])
    W_v2 = np.array([[0.0, 1.0], [1.0, 0.0]])
    eye = np.eye(d)
    return [(eye, eye, W_v1, eye), (eye, eye, W_v2, eye)]


def test_one_token_by_hand_without_ablation_removes_nothing_at_other_sentences():
    # One token: weight 1. Layer 1 adds x @ W_v1; layer 2 adds (x + x W_v1) @ W_v2.
    X = np.array([[[1.0, 1.0]], [[2.0, -1.0]]])                 # (2 sentences, 1 token, 2)
    layers = one_token_layers()
    out, weights = ablated_stack(X, layers, 1, 1, np.array([[0], [0]]))
    # layer 1 removed: x1 = x; layer 2 adds x @ W_v2 = swap(x)
    np.testing.assert_allclose(out, np.array([[[2.0, 2.0]], [[1.0, 1.0]]]))
    np.testing.assert_allclose(weights, np.ones((2, 1, 1, 1)))


def test_one_token_by_hand_the_last_layer_removed():
    X = np.array([[[1.0, 1.0]]])
    out, _ = ablated_stack(X, one_token_layers(), 1, 2, np.array([[0]]))
    np.testing.assert_allclose(out, np.array([[[2.0, 3.0]]]))   # x + x W_v1 = (1, 1) + (1, 2)


def test_only_the_given_tokens_lose_the_update():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((2, 4, 4))
    layers = [tuple(rng.standard_normal((4, 4)) for _ in range(4))]
    plain, _ = ablated_stack(X, layers, 2, 1, np.zeros((2, 0), dtype=int))
    out, _ = ablated_stack(X, layers, 2, 1, np.array([[1], [3]]))
    np.testing.assert_allclose(out[0, 1], X[0, 1])
    np.testing.assert_allclose(out[1, 3], X[1, 3])
    untouched = np.ones((2, 4), dtype=bool)
    untouched[0, 1] = untouched[1, 3] = False
    np.testing.assert_allclose(out[untouched], plain[untouched])


@pytest.mark.parametrize("layer, positions, match", [
    (0, [[0]], "layer must be"),
    (3, [[0]], "layer=3, but there are 2 layers"),
    (1, [0], "positions must be whole numbers of shape"),
    (1, [[0.5]], "positions must be whole numbers"),
    (1, [[7]], "positions must be between 0 and n - 1 = 0"),
])
def test_bad_ablations_are_clear_errors(layer, positions, match):
    with pytest.raises(ValueError, match=match):
        ablated_stack(np.ones((1, 1, 2)), one_token_layers(), 1, layer, np.array(positions))


def test_layers_must_be_a_list_of_four_matrices():
    with pytest.raises(ValueError, match="layer 1 must be a tuple"):
        ablated_stack(np.ones((1, 1, 2)), [(np.eye(2),)], 1, 1, np.array([[0]]))


def test_one_token_by_hand_patching_layer_1_from_another_sentence():
    # One token: layer 1 adds x W_v1, layer 2 adds (its input) W_v2 = swap(its input).
    X, X_source = np.array([[[1.0, 1.0]]]), np.array([[[3.0, 0.0]]])
    out, _ = patched_stack(X, X_source, one_token_layers(), 1, 1, np.array([[0]]))
    # layer 1's update from the source: (3, 0) W_v1 = (3, 0); stream (4, 1); layer 2 adds (1, 4)
    np.testing.assert_allclose(out, np.array([[[5.0, 5.0]]]))


def test_one_token_by_hand_patching_layer_2_uses_the_source_run_through_layer_1():
    X, X_source = np.array([[[1.0, 1.0]]]), np.array([[[3.0, 0.0]]])
    out, _ = patched_stack(X, X_source, one_token_layers(), 1, 2, np.array([[0]]))
    # source after layer 1: (3, 0) + (3, 0) = (6, 0); its layer-2 update swap = (0, 6)
    # this run after layer 1: (1, 1) + (1, 2) = (2, 3); plus the source's (0, 6)
    np.testing.assert_allclose(out, np.array([[[2.0, 9.0]]]))


def test_patching_from_the_same_sentences_changes_nothing():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3, 5, 4))
    layers = [tuple(rng.standard_normal((4, 4)) for _ in range(4)) for _ in range(2)]
    plain, plain_weights = ablated_stack(X, layers, 2, 1, np.zeros((3, 0), dtype=int))
    out, weights = patched_stack(X, X.copy(), layers, 2, 1, np.array([[0], [2], [4]]))
    np.testing.assert_allclose(out, plain, atol=1e-12)
    np.testing.assert_allclose(weights, plain_weights, atol=1e-12)


def test_patching_leaves_the_other_tokens_of_the_patched_layer_alone():
    # In the last layer, only the stream at the patched tokens can change.
    rng = np.random.default_rng(4)
    X, X_source = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 4))
    layers = [tuple(rng.standard_normal((4, 4)) for _ in range(4))]
    plain, _ = ablated_stack(X, layers, 2, 1, np.zeros((2, 0), dtype=int))
    out, _ = patched_stack(X, X_source, layers, 2, 1, np.array([[1], [3]]))
    untouched = np.ones((2, 4), dtype=bool)
    untouched[0, 1] = untouched[1, 3] = False
    np.testing.assert_allclose(out[untouched], plain[untouched])
    assert not np.allclose(out[0, 1], plain[0, 1])


def test_patched_stack_needs_a_source_of_the_same_shape():
    with pytest.raises(ValueError, match="X_source must have the shape of X"):
        patched_stack(np.ones((1, 1, 2)), np.ones((2, 1, 2)), one_token_layers(), 1, 1, np.array([[0]]))
