"""The lesson 02 checks (attention_scores, score_std): specific messages for wrong versions,
a pass for any right one."""

import numpy as np
import pytest

from helpers import reference
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
    "list of lists": (lambda Q, K: [[float(q @ k) / np.sqrt(len(q)) for k in K] for q in Q],
                      "not a NumPy array"),
    "Q scaled in place": (lambda Q, K: (Q.__itruediv__(np.sqrt(Q.shape[-1]))) @ K.T,
                          "changed its input Q in place"),
}


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
}


def test_first_case_tells_the_scales_apart():
    # d_k, n_q and the notebook's globals (d_model = 8, d_k = 4) must all differ,
    # and K must be square, or "K not transposed" could not be named.
    Q, K = EXERCISES["attention_scores"].cases()[0].args
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    assert n_k == d_k
    assert len({d_k, n_q, 8, 4, 1}) == 5


# ------------------------------------------------------------------ score_std
STD_WRONG = {
    "the variance": (lambda d_k, sigma=1.0: d_k * sigma ** 4, "that is the variance"),
    "one sigma": (lambda d_k, sigma=1.0: np.sqrt(d_k) * sigma, "one factor of sigma is missing"),
    "no square root on d_k": (lambda d_k, sigma=1.0: d_k * sigma ** 2, "d_k needs a square root"),
    "no d_k": (lambda d_k, sigma=1.0: sigma ** 2, "d_k is missing"),
    "sigma ignored": (lambda d_k, sigma=1.0: np.sqrt(d_k), "sigma is ignored"),
    "2 sigma^2 per term": (lambda d_k, sigma=1.0: np.sqrt(2 * d_k * sigma ** 2),
                           "variances of independent factors multiply"),
    "no return": (lambda d_k, sigma=1.0: None, "forget to `return`"),
    "measured, not derived": (lambda d_k, sigma=1.0: float(np.std(
        np.sum(np.random.default_rng(0).normal(0, sigma, (200, d_k))
               * np.random.default_rng(1).normal(0, sigma, (200, d_k)), axis=1))),
        "wrong values"),
}


STD_RIGHT = {
    "sqrt(d_k) sigma^2": lambda d_k, sigma=1.0: np.sqrt(d_k) * sigma ** 2,
    "square root of the variance": lambda d_k, sigma=1.0: (d_k * sigma ** 4) ** 0.5,
    "math module": lambda d_k, sigma=1.0: __import__("math").sqrt(d_k) * sigma * sigma,
    "a loop over the terms": lambda d_k, sigma=1.0: np.sqrt(sum(sigma ** 4 for _ in range(d_k))),
}


# ------------------------------------------------------------------ both, table-driven
WRONG_BY_EXERCISE = {"attention_scores": WRONG, "score_std": STD_WRONG}
RIGHT_BY_EXERCISE = {"attention_scores": RIGHT, "score_std": STD_RIGHT}


def test_score_std_reference_by_hand():
    # d_k = 16 terms of variance 3**4 = 81: variance 1296, standard deviation 36
    assert reference.score_std(16, 3.0) == pytest.approx(36.0)
    assert reference.score_std(4) == pytest.approx(2.0)



def test_score_std_first_case_tells_the_mistakes_apart():
    exercise = EXERCISES["score_std"]
    case = exercise.cases()[0]
    answers = [m.fn(*case.args) for m in exercise.mistakes] + [exercise.reference(*case.args)]
    assert len({round(float(a), 9) for a in answers}) == len(answers)


# One float32 policy for every exercise (helpers.checking): told so, one case off in the grader.
WRONG["in float32"] = (lambda Q, K: (Q.astype(np.float32) @ K.astype(np.float32).T
                                / np.float32(np.sqrt(Q.shape[-1]))), "float32")
