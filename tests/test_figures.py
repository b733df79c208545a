"""The one-call figures of lessons 02 and 03: titles, labels, one line or bar per value."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from helpers import figures  # noqa: E402


def test_against_dk_draws_the_prediction_and_each_measurement_on_log_axes():
    ax = figures.against_dk([1, 4, 16], {"a": [1, 4, 16], "b": [1, 1, 1]}, title="t", ylabel="v",
                            prediction=("Var = d_k", [1, 4, 16]))
    assert [line.get_label() for line in ax.get_lines()] == ["Var = d_k", "a", "b"]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_title() == "t" and ax.get_ylabel() == "v" and "d_k" in ax.get_xlabel()
    plt.close(ax.figure)


@pytest.mark.parametrize("panel, title_part", [(0, "Scores of the query 'it'"), (1, "After the softmax")])
def test_scores_and_weights_draws_one_bar_per_word_and_labels_each_panel(panel, title_part):
    fig = figures.scores_and_weights(["a", "b", "c"], [1.0, -2.0, 0.5], [0.5, 0.1, 0.4], "it")
    ax = fig.axes[panel]
    assert len(ax.patches) == 3
    assert title_part in ax.get_title() and ax.get_xlabel() == "key token j" and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    plt.close(fig)
