"""Lesson 12's references: layer_norm_backward and mlp_backward against central differences of
forward passes written here, next_token_probabilities against values worked out by hand."""

import math

import numpy as np
import pytest

from helpers import reference


def central(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        plus = f()
        x[i] = old - eps
        minus = f()
        x[i] = old
        grad[i] = (plus - minus) / (2 * eps)
    return grad


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)        # no Bessel correction
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 6)])
def test_layer_norm_backward_matches_central_differences(shape):
    rng = np.random.default_rng(len(shape))
    x, d_out = rng.standard_normal(shape), rng.standard_normal(shape)
    gamma, beta = rng.standard_normal(shape[-1]), rng.standard_normal(shape[-1])

    def loss():
        return float(np.sum(layer_norm(x, gamma, beta) * d_out))

    dx, dgamma, dbeta = reference.layer_norm_backward(d_out, x, gamma)
    np.testing.assert_allclose(dx, central(loss, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dgamma, central(loss, gamma), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dbeta, central(loss, beta), rtol=1e-6, atol=1e-8)


def test_layer_norm_backward_keeps_float32():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert all(a.dtype == np.float32 for a in reference.layer_norm_backward(x, x, np.ones(3, np.float32)))


def test_layer_norm_backward_names_a_wrong_gamma():
    with pytest.raises(ValueError, match="gamma must have shape"):
        reference.layer_norm_backward(np.ones((2, 3)), np.ones((2, 3)), np.ones(4))


def gelu(h):
    return 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))


def test_mlp_backward_matches_central_differences():
    rng = np.random.default_rng(0)
    x, d_out = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    W_1, b_1 = rng.standard_normal((4, 6)), rng.standard_normal(6)
    W_2, b_2 = rng.standard_normal((6, 4)), rng.standard_normal(4)

    def loss():
        return float(np.sum((gelu(x @ W_1 + b_1) @ W_2 + b_2) * d_out))

    grads = reference.mlp_backward(d_out, x, W_1, b_1, W_2, b_2)
    for name, value in (("x", x), ("W_1", W_1), ("b_1", b_1), ("W_2", W_2), ("b_2", b_2)):
        np.testing.assert_allclose(grads[name], central(loss, value), rtol=1e-6, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("logits, temperature, top_k, expected", [
    # softmax of [0, ln 3]: 1/4, 3/4; at temperature 2 the logits halve: 1 : sqrt(3)
    ([0.0, math.log(3)], 1.0, None, [0.25, 0.75]),
    ([0.0, math.log(3)], 2.0, None, [1 / (1 + math.sqrt(3)), math.sqrt(3) / (1 + math.sqrt(3))]),
    # top-2 of [1, 3, 2]: tokens 1 and 2 kept, e^3 : e^2
    ([1.0, 3.0, 2.0], 1.0, 2, [0.0, math.e / (math.e + 1), 1 / (math.e + 1)]),
    # a tie at the 2nd place: the lower id is kept, exactly 2 tokens
    ([2.0, 5.0, 2.0, 2.0], 1.0, 2, [1 / (1 + math.e ** 3), math.e ** 3 / (1 + math.e ** 3), 0.0, 0.0]),
    ([1.0, 2.0, 3.0], 1.0, 1, [0.0, 0.0, 1.0]),
    ([1.0, 2.0], 1.0, 5, [1 / (1 + math.e), math.e / (1 + math.e)]),
    ([1000.0, 0.0], 0.01, None, [1.0, 0.0]),                     # no overflow
])
def test_next_token_probabilities_by_hand(logits, temperature, top_k, expected):
    got = reference.next_token_probabilities(np.array(logits), temperature, top_k)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("kwargs, message", [
    ({"temperature": 0}, "temperature must be a number > 0"),
    ({"top_k": 0}, "top_k must be a whole number >= 1"),
    ({"top_k": 2.5}, "top_k must be a whole number >= 1"),
])
def test_next_token_probabilities_names_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        reference.next_token_probabilities(np.zeros(3), **kwargs)
