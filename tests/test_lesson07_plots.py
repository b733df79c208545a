"""Lesson 07's figures: titles, labels and the numbers written on the Jacobian."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from helpers.lessons.l07_backward import plots as backward_plots  # noqa: E402


def test_the_jacobian_panels_write_no_number_for_tiny_entries():
    y = np.array([0.998, 0.001, 0.001])        # saturated: J's entries are all below 0.005 but one
    fig = backward_plots.softmax_jacobians([y], ["saturated"], suptitle="J")
    texts = [t.get_text() for t in fig.axes[0].texts]
    # by hand: J[0,0] = 0.998 * 0.002 = 0.002 (tiny); J[1,1] = 0.001 * 0.999 (tiny): nothing written
    assert texts == []
    assert "no number" in fig._suptitle.get_text()
    plt.close(fig)


def test_the_jacobian_panels_write_two_decimals_for_sizeable_entries():
    fig = backward_plots.softmax_jacobians([np.array([0.5, 0.5])], ["soft"])
    # by hand: diag(y) - y y^T = [[0.25, -0.25], [-0.25, 0.25]]
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["-0.25", "-0.25", "0.25", "0.25"]
    plt.close(fig)


def test_the_scatter_draws_one_guide_line_per_slope():
    ax = backward_plots.gradient_check_scatter(np.array([1.0, -1.0]), {"right": np.array([1.0, -1.0]),
                                                                      "twice": np.array([2.0, -2.0])},
                                               title="t", slopes=(1, 2))
    labels = [line.get_label() for line in ax.get_lines()]
    assert "agreement (y = x)" in labels and "y = 2 x" in labels
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title() == "t"
    plt.close(ax.figure)


def test_gradient_sizes_and_difference_errors_are_labelled():
    ax = backward_plots.gradient_sizes([1, 4], [0.3, 0.1], [0.3, 0.3], title="t", ylabel="size")
    assert ax.get_xlabel() == "d_k" and ax.get_ylabel() == "size" and ax.get_title() == "t"
    ax2 = backward_plots.difference_errors(np.array([1e-3, 1e-2]), {"f": [1e-3, 1e-2], "c": [0, 1e-4]},
                                           title="e")
    assert ax2.get_xlabel() == "step ε" and len(ax2.get_lines()) == 2
    plt.close("all")
