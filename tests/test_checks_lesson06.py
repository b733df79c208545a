"""Lesson 06 check: online_softmax_attention names the known mistakes and passes any
correct implementation. The wrong versions are written the way a learner would."""

import numpy as np
import pytest

from helpers.checking import ExerciseError
from helpers.checks import check


def tiled(Q, K, V, block_size, *, rescale=True, divide=True, stop=None, pad=False):
    """A learner's loop over key blocks, with one switch per mistake."""
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    running_max = np.full(n_q, -np.inf)
    running_sum = np.zeros(n_q)
    acc = np.zeros((n_q, V.shape[1]))
    for start in range(0, n_k if stop is None else stop(n_k, block_size), block_size):
        K_b, V_b = K[start:start + block_size], V[start:start + block_size]
        if pad and len(K_b) < block_size:
            K_b = np.vstack([K_b, np.zeros((block_size - len(K_b), d_k))])
            V_b = np.vstack([V_b, np.zeros((block_size - len(V_b), V.shape[1]))])
        s = Q @ K_b.T / np.sqrt(d_k)
        new_max = np.maximum(running_max, s.max(axis=1))
        p = np.exp(s - new_max[:, None])
        if rescale:
            factor = np.exp(running_max - new_max)
            running_sum = running_sum * factor
            acc = acc * factor[:, None]
        running_sum = running_sum + p.sum(axis=1)
        acc = acc + p @ V_b
        running_max = new_max
    return acc / running_sum[:, None] if divide else acc


WRONG = {
    "no rescale": (lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size, rescale=False),
                   "are not rescaled when the max changes"),
    "no final division": (lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size, divide=False),
                          "the final division is missing"),
    "last partial block skipped": (
        lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size,
                                              stop=lambda n, b: n - b + 1),
        "off by one at the last block"),
    "last block zero-padded": (lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size, pad=True),
                               "padded with zero keys"),
    "no sqrt(d_k)": (lambda Q, K, V, block_size=128: tiled(Q * np.sqrt(Q.shape[1]), K, V, block_size),
                     "not divided by sqrt(d_k)"),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_online_attention_gets_specific_message(name):
    fn, message = WRONG[name]
    with pytest.raises(ExerciseError) as info:
        check("online_softmax_attention", fn)
    assert message in str(info.value)


def only_acc_rescaled(Q, K, V, block_size=128):
    n_q = Q.shape[0]
    m, l, acc = np.full((n_q, 1), -np.inf), np.zeros((n_q, 1)), np.zeros((n_q, V.shape[1]))
    for start in range(0, K.shape[0], block_size):
        s = Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1])
        m_new = np.maximum(m, s.max(axis=1, keepdims=True))
        p = np.exp(s - m_new)
        l = l + p.sum(axis=1, keepdims=True)                       # forgot: * exp(m - m_new)
        acc = acc * np.exp(m - m_new) + p @ V[start:start + block_size]
        m = m_new
    return acc / l


def test_rescaling_only_the_accumulator_is_named():
    with pytest.raises(ExerciseError) as info:
        check("online_softmax_attention", only_acc_rescaled)
    assert "the running sum l is not rescaled" in str(info.value)


def two_pass(Q, K, V, block_size=128):
    # correct but different: first pass finds the row max, second pass sums (still blockwise)
    n_k = K.shape[0]
    scale = 1 / np.sqrt(Q.shape[1])
    m = np.max([np.max(Q @ K[s:s + block_size].T * scale, axis=1)
                for s in range(0, n_k, block_size)], axis=0)[:, None]
    num, den = 0.0, 0.0
    for s in range(0, n_k, block_size):
        p = np.exp(Q @ K[s:s + block_size].T * scale - m)
        num = num + p @ V[s:s + block_size]
        den = den + p.sum(axis=1, keepdims=True)
    return num / den


def log_sum_exp_running(Q, K, V, block_size=128):
    # correct but different: keep the running log-sum-exp and the running normalised output
    lse = np.full((Q.shape[0], 1), -np.inf)
    out = np.zeros((Q.shape[0], V.shape[1]))
    for s in range(0, K.shape[0], block_size):
        scores = np.einsum("qd,kd->qk", Q, K[s:s + block_size]) / np.sqrt(Q.shape[1])
        block_lse = np.logaddexp.reduce(scores, axis=1, keepdims=True)
        block_out = np.exp(scores - block_lse) @ V[s:s + block_size]
        new_lse = np.logaddexp(lse, block_lse)
        out = np.exp(lse - new_lse) * out + np.exp(block_lse - new_lse) * block_out
        lse = new_lse
    return out


RIGHT = {
    "per-row running sum": lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size),
    "two passes": two_pass,
    "running log-sum-exp": log_sum_exp_running,
}


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_any_correct_online_attention_passes(name, capsys):
    fn = RIGHT[name]
    assert check("online_softmax_attention", fn) is fn
    assert "passed" in capsys.readouterr().out
