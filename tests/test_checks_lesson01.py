"""The project_qkv check: specific messages for wrong versions, a pass for any right one."""

import numpy as np
import pytest

from helpers.checking import ExerciseError
from helpers.checks import check


WRONG = {
    "K from W_q": (lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_q, X @ W_v), "K was computed with W_q"),
    "transposed weights": (lambda X, W_q, W_k, W_v: (X @ W_q.T, X @ W_k.T, X @ W_v.T),
                           "used transposed"),
    "Q and K swapped": (lambda X, W_q, W_k, W_v: (X @ W_k, X @ W_q, X @ W_v), "Q and K are swapped"),
    "wrong order": (lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_v, X @ W_k), "wrong order"),
    "no return": (lambda X, W_q, W_k, W_v: None, "should return a tuple of 3 values"),
    "only Q": (lambda X, W_q, W_k, W_v: X @ W_q, "should return a tuple of 3 values"),
    "elementwise": (lambda X, W_q, W_k, W_v: (X * W_q, X * W_k, X * W_v), "raised ValueError"),
    "scaled": (lambda X, W_q, W_k, W_v: (2 * X @ W_q, X @ W_k, X @ W_v),
               "Q has the right shape but wrong values"),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_project_qkv_gets_specific_message(name):
    fn, message = WRONG[name]
    with pytest.raises(ExerciseError) as info:
        check("project_qkv", fn)
    assert message in str(info.value)


RIGHT = {
    "matmul": lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_k, X @ W_v),
    "einsum": lambda X, W_q, W_k, W_v: tuple(np.einsum("nd,dk->nk", X, W) for W in (W_q, W_k, W_v)),
    "loops": lambda X, W_q, W_k, W_v: tuple(
        np.array([[sum(x[m] * W[m, j] for m in range(len(x))) for j in range(W.shape[1])] for x in X])
        for W in (W_q, W_k, W_v)),
    "list of dot": lambda X, W_q, W_k, W_v: [np.dot(X, W) for W in (W_q, W_k, W_v)],
}


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_any_correct_project_qkv_passes_and_is_kept(name, capsys):
    fn = RIGHT[name]
    assert check("project_qkv", fn) is fn
    assert "passed" in capsys.readouterr().out


def test_exercise_error_renders_without_traceback():
    with pytest.raises(ExerciseError) as info:
        check("project_qkv", WRONG["K from W_q"][0])
    rendered = "".join(info.value._render_traceback_())
    assert "K was computed with W_q" in rendered and "File" not in rendered
