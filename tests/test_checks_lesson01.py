"""The lesson 01 checks (project_qkv, cross_project_qkv): specific messages for wrong
versions, a pass for any right one."""

import numpy as np
import pytest

from helpers import reference
from helpers.checking import ExerciseError
from helpers.checks import check
from helpers.exercises import EXERCISES



WRONG = {
    "K from W_q": (lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_q, X @ W_v), "K was computed with W_q"),
    "transposed weights": (lambda X, W_q, W_k, W_v: (X @ W_q.T, X @ W_k.T, X @ W_v.T),
                           "used transposed"),
    "W_q for all three": (lambda X, W_q, W_k, W_v: tuple(X @ W_q for _ in range(3)),
                          "Q, K and V were all computed with W_q"),
    "Q and K swapped": (lambda X, W_q, W_k, W_v: (X @ W_k, X @ W_q, X @ W_v), "Q and K are swapped"),
    "wrong order": (lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_v, X @ W_k), "wrong order"),
    "no return": (lambda X, W_q, W_k, W_v: None, "should return a tuple of 3 values"),
    "only Q": (lambda X, W_q, W_k, W_v: X @ W_q, "should return a tuple of 3 values"),
    "elementwise": (lambda X, W_q, W_k, W_v: (X * W_q, X * W_k, X * W_v), "raised ValueError"),
    "scaled": (lambda X, W_q, W_k, W_v: (2 * X @ W_q, X @ W_k, X @ W_v),
               "Q is off by a constant factor: every entry is 2 times the expected one"),
    "nested lists": (lambda X, W_q, W_k, W_v: tuple((X @ W).tolist() for W in (W_q, W_k, W_v)),
                     "Q is a list, not a NumPy array"),
    "X centred in place": (lambda X, W_q, W_k, W_v: (lambda Xc: (Xc @ W_q, Xc @ W_k, Xc @ W_v))(
        X.__isub__(X.mean(axis=0))), "changed its input X in place"),
    "returned (V, K, Q)": (lambda X, W_q, W_k, W_v: (X @ W_v, X @ W_k, X @ W_q), "wrong order"),
}


RIGHT = {
    "matmul": lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_k, X @ W_v),
    "einsum": lambda X, W_q, W_k, W_v: tuple(np.einsum("nd,dk->nk", X, W) for W in (W_q, W_k, W_v)),
    "loops": lambda X, W_q, W_k, W_v: tuple(
        np.array([[sum(x[m] * W[m, j] for m in range(len(x))) for j in range(W.shape[1])] for x in X])
        for W in (W_q, W_k, W_v)),
    "list of dot": lambda X, W_q, W_k, W_v: [np.dot(X, W) for W in (W_q, W_k, W_v)],
}


def test_exercise_error_renders_without_traceback():
    with pytest.raises(ExerciseError) as info:
        check("project_qkv", WRONG["K from W_q"][0])
    rendered = "".join(info.value._render_traceback_())
    assert "K was computed with W_q" in rendered and "File" not in rendered


# ------------------------------------------------------------------ cross_project_qkv
CROSS_WRONG = {
    "self-attention on X_q": (lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_q @ W_k, X_q @ W_v),
                              "all three came from X_q"),
    "self-attention on X_kv": (
        lambda X_q, X_kv, W_q, W_k, W_v: (X_kv @ W_q, X_kv @ W_k, X_kv @ W_v),
        "all three came from X_kv"),
    "sequences swapped": (lambda X_q, X_kv, W_q, W_k, W_v: (X_kv @ W_q, X_q @ W_k, X_q @ W_v),
                          "the two sequences are swapped"),
    "V from X_q": (lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_kv @ W_k, X_q @ W_v),
                   "V came from X_q"),
    "K from X_q": (lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_q @ W_k, X_kv @ W_v),
                   "K came from X_q"),
    "K with W_q": (lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_kv @ W_q, X_kv @ W_v),
                   "K was computed with W_q"),
    "V with W_k": (lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_kv @ W_k, X_kv @ W_k),
                   "V was computed with W_k"),
    "returned (K, V, Q)": (lambda X_q, X_kv, W_q, W_k, W_v: (X_kv @ W_k, X_kv @ W_v, X_q @ W_q),
                           "wrong order"),
    "nested lists": (lambda X_q, X_kv, W_q, W_k, W_v: ((X_q @ W_q).tolist(), (X_kv @ W_k).tolist(),
                                                      (X_kv @ W_v).tolist()), "not a NumPy array"),
    "X_q normalised in place": (
        lambda X_q, X_kv, W_q, W_k, W_v: (X_q.__itruediv__(1.0 + np.abs(X_q).max()) @ W_q,
                                          X_kv @ W_k, X_kv @ W_v),
        "changed its input X_q in place"),
}


CROSS_RIGHT = {
    "three products": lambda X_q, X_kv, W_q, W_k, W_v: (X_q @ W_q, X_kv @ W_k, X_kv @ W_v),
    "reusing project_qkv": lambda X_q, X_kv, W_q, W_k, W_v: (
        reference.project_qkv(X_q, W_q, W_k, W_v)[0], *reference.project_qkv(X_kv, W_q, W_k, W_v)[1:]),
    "einsum": lambda X_q, X_kv, W_q, W_k, W_v: (np.einsum("nd,dk->nk", X_q, W_q),
                                                np.einsum("nd,dk->nk", X_kv, W_k),
                                                np.einsum("nd,dk->nk", X_kv, W_v)),
}


# ------------------------------------------------------------------ both, table-driven
WRONG_BY_EXERCISE = {"project_qkv": WRONG, "cross_project_qkv": CROSS_WRONG}
RIGHT_BY_EXERCISE = {"project_qkv": RIGHT, "cross_project_qkv": CROSS_RIGHT}


def test_cross_cases_have_different_query_and_key_counts_and_sizes():
    for hidden in (False, True):
        for case in EXERCISES["cross_project_qkv"].cases(hidden):
            X_q, X_kv, W_q, _, W_v = case.args
            assert len(X_q) != len(X_kv) and W_q.shape[1] != W_v.shape[1]


# One float32 policy for every exercise (helpers.checking): told so, one case off in the grader.
WRONG["in float32"] = (lambda X, W_q, W_k, W_v: tuple(
        X.astype(np.float32) @ W.astype(np.float32) for W in (W_q, W_k, W_v)), "float32")
