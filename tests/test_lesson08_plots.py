"""Lesson 08's figures: a moving average worked out by hand, titles and labels, clear errors."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers.lessons.l08_training import plots as training_plots  # noqa: E402


@pytest.mark.parametrize("values, window, steps, averages", [
    ([1, 2, 3, 4], 2, [2, 3, 4], [1.5, 2.5, 3.5]),
    ([4, 0, 2], 3, [3], [2.0]),
    ([5, 7], 10, [2], [6.0]),                 # a window longer than the run: one average of all
    ([3, 1], 1, [1, 2], [3.0, 1.0]),
])
def test_smooth_is_a_moving_average(values, window, steps, averages):
    got_steps, got = training_plots.smooth(values, window)
    np.testing.assert_array_equal(got_steps, steps)
    np.testing.assert_allclose(got, averages)


def test_smooth_refuses_an_empty_curve():
    with pytest.raises(ValueError, match="non-empty 1-D"):
        training_plots.smooth([], 5)


def test_loss_curves_draw_the_median_of_several_runs_titled_and_labelled():
    runs = [np.array([3.0, 2.0, 1.0]), np.array([5.0, 4.0, 3.0]), np.array([4.0, 9.0, 2.0])]
    ax = training_plots.loss_curves({"scaled": runs}, window=1, title="Loss")
    bold = ax.lines[-1]                        # the smoothed median, drawn after the runs
    np.testing.assert_allclose(bold.get_ydata(), [4.0, 4.0, 2.0])
    assert ax.get_title() == "Loss" and ax.get_xlabel() and ax.get_ylabel()
    assert "median of 3 runs" in ax.get_legend().get_texts()[0].get_text()
    plt.close(ax.figure)


def test_sentence_weights_writes_each_word_and_weight_and_frames_the_query():
    weights = np.array([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]])
    ax = training_plots.sentence_weights(weights, ["the cat sat", "he was here"], [2, 0],
                                         title="Where it looks", outline=[1, 1])
    texts = [t.get_text() for t in ax.texts]
    assert "cat\n0.70" in texts and "he\n0.50" in texts
    frames = [p for p in ax.patches if isinstance(p, plt.Rectangle)]
    assert len(frames) == 6                    # a query frame and a two-line answer frame per row
    answer = [(p.get_edgecolor()[:3], p.get_linestyle()) for p in frames[1:3]]
    assert answer == [((0.0, 0.0, 0.0), "-"), ((1.0, 1.0, 1.0), "--")]   # dashed white over black
    assert ax.get_title() == "Where it looks" and ax.get_xlabel()
    plt.close(ax.figure)


@pytest.mark.parametrize("weights, sentences, message", [
    (np.ones((2, 3)), ["a b c"], "one row per sentence"),
    (np.ones((1, 3)), ["a b"], "must have 3 words"),
])
def test_sentence_weights_refuses_mismatched_inputs(weights, sentences, message):
    with pytest.raises(ValueError, match=message):
        training_plots.sentence_weights(weights, sentences, 0)


def test_relations_by_heads_writes_the_relations_once_and_heads_as_numbers():
    fig = training_plots.relations_by_heads({"two heads": np.eye(2), "one head": np.ones((2, 1)) / 2},
                                            ["its noun", "the subject"], title="t")
    first, second = fig.axes[:2]                      # then the two colour bars
    assert [t.get_text() for t in first.get_yticklabels()] == ["its noun", "the subject"]
    assert second.get_yticklabels() == []
    assert [t.get_text() for t in first.get_xticklabels()] == ["0", "1"]
    assert all(t.get_rotation() == 0 for t in first.get_xticklabels())
    assert first.get_xlabel() == "head" and second.get_title() == "one head"
    plt.close(fig)


def test_relations_by_heads_refuses_a_table_with_the_wrong_number_of_rows():
    with pytest.raises(ValueError, match="2 rows"):
        training_plots.relations_by_heads({"a": np.ones((3, 1))}, ["x", "y"])
