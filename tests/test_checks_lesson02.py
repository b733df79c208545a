"""The attention_scores check: specific messages for wrong versions, a pass for any right one."""

import numpy as np
import pytest

from helpers.checking import ExerciseError, evaluate
from helpers.checks import check
from helpers.exercises import EXERCISES


WRONG = {
    "no scaling": (lambda Q, K: Q @ K.T, "not scaled"),
    "divided by d_k": (lambda Q, K: Q @ K.T / Q.shape[1], "divided by d_k instead of sqrt(d_k)"),
    "multiplied by sqrt(d_k)": (lambda Q, K: Q @ K.T * np.sqrt(Q.shape[1]),
                                "multiplied by sqrt(d_k)"),
    "scaled by sqrt(n) via len(Q)": (lambda Q, K: Q @ K.T / np.sqrt(len(Q)),
                                     "number of tokens n"),
    "scaled by sqrt(n) via Q.shape[0]": (lambda Q, K: Q @ K.T / np.sqrt(Q.shape[0]),
                                         "number of tokens n"),
    "scaled by sqrt(n_k)": (lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]), "number of keys n_k"),
    "scaled by the global d_model": (lambda Q, K: Q @ K.T / np.sqrt(8), "sqrt(d_model)"),
    "scaled by the global d_k": (lambda Q, K: Q @ K.T / np.sqrt(4), "the notebook's global d_k"),
    "divided by the global d_k": (lambda Q, K: Q @ K.T / 4, "global d_k = 4, and not by its"),
    "K not transposed": (lambda Q, K: Q @ K / np.sqrt(Q.shape[1]), "K is not transposed"),
    "K not transposed, unscaled": (lambda Q, K: Q @ K, "K is not transposed"),
    "grid transposed": (lambda Q, K: K @ Q.T / np.sqrt(Q.shape[1]), "the grid is transposed"),
    "elementwise product": (lambda Q, K: Q * K, "raised ValueError"),
    "no return": (lambda Q, K: None, "forget to `return`"),
    "off by a bit": (lambda Q, K: Q @ K.T / np.sqrt(Q.shape[1]) + 1e-3,
                     "right shape but wrong values"),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_attention_scores_gets_specific_message(name):
    fn, message = WRONG[name]
    with pytest.raises(ExerciseError) as info:
        check("attention_scores", fn)
    assert message in str(info.value)


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_attention_scores_fails_hidden_cases_too(name):
    exercise = EXERCISES["attention_scores"]
    report = evaluate(exercise, WRONG[name][0], exercise.cases(hidden=True))
    assert report.passed < report.total


def _loops(Q, K):
    out = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            out[i, j] = sum(Q[i, m] * K[j, m] for m in range(Q.shape[1])) / Q.shape[1] ** 0.5
    return out


RIGHT = {
    "matmul": lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1]),
    "einsum": lambda Q, K: np.einsum("id,jd->ij", Q, K) / np.sqrt(K.shape[1]),
    "loops": _loops,
    "scale Q first": lambda Q, K: (Q / np.sqrt(Q.shape[1])) @ K.T,
    "np.dot and transpose": lambda Q, K: np.dot(Q, np.transpose(K)) * Q.shape[-1] ** -0.5,
    "list of lists": lambda Q, K: [[float(q @ k) / np.sqrt(len(q)) for k in K] for q in Q],
}


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_any_correct_attention_scores_passes_and_is_kept(name, capsys):
    fn = RIGHT[name]
    assert check("attention_scores", fn) is fn
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_any_correct_attention_scores_passes_hidden_cases(name):
    exercise = EXERCISES["attention_scores"]
    report = evaluate(exercise, RIGHT[name], exercise.cases(hidden=True))
    assert report.ok


def test_first_case_tells_the_scales_apart():
    # d_k, n_q and the notebook's globals (d_model = 8, d_k = 4) must all differ,
    # and K must be square, or "K not transposed" could not be named.
    Q, K = EXERCISES["attention_scores"].cases()[0].args
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    assert n_k == d_k
    assert len({d_k, n_q, 8, 4, 1}) == 5
