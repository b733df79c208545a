"""The one-call figures of lessons 01-05: titles, labels, one line or bar per value."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers.lessons.l01_qkv_projections import figures as lesson01  # noqa: E402
from helpers.lessons.l02_scaled_scores import figures as lesson02  # noqa: E402
from helpers.lessons.l03_softmax_and_attention import figures as lesson03  # noqa: E402
from helpers.lessons.l04_multi_head import figures as lesson04  # noqa: E402
from helpers.lessons.l05_complexity import figures as lesson05  # noqa: E402


def test_against_dk_draws_the_prediction_and_each_measurement_on_log_axes():
    ax = lesson02.against_dk([1, 4, 16], {"a": [1, 4, 16], "b": [1, 1, 1]}, title="t", ylabel="v",
                            prediction=("Var = d_k", [1, 4, 16]))
    assert [line.get_label() for line in ax.get_lines()] == ["Var = d_k", "a", "b"]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_title() == "t" and ax.get_ylabel() == "v" and "d_k" in ax.get_xlabel()
    plt.close(ax.figure)


@pytest.mark.parametrize("panel, title_part", [(0, "Scores of the query 'it'"), (1, "After the softmax")])
def test_scores_and_weights_draws_one_bar_per_word_and_labels_each_panel(panel, title_part):
    fig = lesson03.scores_and_weights(["a", "b", "c"], [1.0, -2.0, 0.5], [0.5, 0.1, 0.4], "it")
    ax = fig.axes[panel]
    assert len(ax.patches) == 3
    assert title_part in ax.get_title() and ax.get_xlabel() == "key token j" and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    plt.close(fig)


def test_bars_draws_one_bar_per_word_with_its_value():
    ax = lesson01.bars(["a", "b"], [2.0, -1.0], title="t", ylabel="q · k")
    assert [p.get_height() for p in ax.patches] == [2.0, -1.0]
    assert ax.get_title() == "t" and ax.get_ylabel() == "q · k" and ax.get_xlabel() == "key token j"
    plt.close(ax.figure)


def test_head_columns_labels_each_head_with_its_columns():
    ax = lesson04.head_columns(["x", "y"], 8, 2)
    # by hand: 2 heads of 4 columns: head 0 has columns 0-3, head 1 columns 4-7
    assert [t.get_text() for t in ax.texts] == ["head 0\n0–3", "head 1\n4–7"]
    assert "j // 4" in ax.get_title() and ax.get_ylabel() == "token"
    plt.close(ax.figure)


def test_head_columns_refuses_a_head_count_that_does_not_divide_d_model():
    with pytest.raises(ValueError, match="num_heads must divide d_model"):
        lesson04.head_columns(["x"], 10, 3)


def test_power_laws_draws_linear_then_log_axes():
    fig = lesson05.power_laws(np.array([1, 2, 4]), {"3 n": [3, 6, 12], "n²": [1, 4, 16]})
    assert [ax.get_xscale() for ax in fig.axes] == ["linear", "log"]
    assert all(len(ax.get_lines()) == 2 for ax in fig.axes)
    plt.close(fig)
