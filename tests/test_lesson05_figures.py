"""Lesson 05's figure and tables: power laws on two kinds of axes, a times table, where two curves cross."""


import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.lessons.l05_complexity import figures as lesson05

matplotlib.use("Agg")


def test_power_laws_draws_linear_then_log_axes():
    fig = lesson05.power_laws(np.array([1, 2, 4]), {"3 n": [3, 6, 12], "n²": [1, 4, 16]})
    assert [ax.get_xscale() for ax in fig.axes] == ["linear", "log"]
    assert all(len(ax.get_lines()) == 2 for ax in fig.axes)
    plt.close(fig)


def test_stage_times_draws_on_the_right_the_sums_of_stages_in_milliseconds():
    sizes = np.array([64, 128, 256])
    stages = ["projections", "scores", "softmax", "weighted sum", "output projection"]
    times = {stage: np.array([1.0, 2.0, 4.0]) * 10.0 ** -i for i, stage in enumerate(stages)}
    spread = {stage: (0.5 * t, 2 * t) for stage, t in times.items()}
    fig = lesson05.stage_times(sizes, times, spread, dict.fromkeys(stages, 1.0),
                               dict.fromkeys(stages, "black"), 128, "ms", "note")
    right = {line.get_label(): line.get_ydata() for line in fig.axes[1].get_lines()}
    # projections 1e0, output projection 1e-4; scores, softmax, weighted sum 1e-1, 1e-2, 1e-3 (seconds)
    expected = {"Q, K, V": 1000.0, "Q, K, V and W_O": 1000.1, "grid (scores, softmax, sum)": 111.0}
    for label, ms_at_64 in expected.items():
        np.testing.assert_allclose(right[label], ms_at_64 * np.array([1, 2, 4]))
    plt.close(fig)


def test_times_table_writes_milliseconds_per_size():
    table = lesson05.times_table([64, 128], {"scores": np.array([0.001, 0.004])})
    assert table.splitlines() == ["     n        scores", "    64         1.000", "   128         4.000"]


def test_crossing_of_n_and_n_squared_over_100_is_at_100():
    x = np.array([10.0, 1000.0])
    # y1 = n, y2 = n^2 / 100: straight lines on log-log axes, equal at n = 100
    assert lesson05.crossing(x, x, x ** 2 / 100) == pytest.approx(100.0)


def test_crossing_between_two_points_is_interpolated_on_log_axes():
    # log diff goes from log(1/4) at x=1 to log(4) at x=16: zero halfway in log x, at x = 4
    assert lesson05.crossing([1, 16], [4, 4], [1, 16]) == pytest.approx(4.0)


def test_crossing_is_none_when_the_second_never_overtakes():
    assert lesson05.crossing([1, 2, 4], [5, 5, 5], [1, 2, 4]) is None


def test_crossing_rejects_arrays_of_different_lengths():
    with pytest.raises(ValueError, match="crossing: x, y1, y2 must be 1-D of one length"):
        lesson05.crossing([1, 2], [1, 2, 3], [1, 2])
