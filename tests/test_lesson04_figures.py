"""Lesson 04's figure: which columns of Q go to which head."""


import matplotlib
import matplotlib.pyplot as plt
import pytest

from helpers.lessons.l04_multi_head import figures as lesson04

matplotlib.use("Agg")


def test_head_columns_labels_each_head_with_its_columns():
    ax = lesson04.head_columns(["x", "y"], 8, 2)
    # by hand: 2 heads of 4 columns: head 0 has columns 0-3, head 1 columns 4-7
    assert [t.get_text() for t in ax.texts] == ["head 0\n0–3", "head 1\n4–7"]
    assert "j // 4" in ax.get_title() and ax.get_ylabel() == "token"
    plt.close(ax.figure)


def test_head_columns_refuses_a_head_count_that_does_not_divide_d_model():
    with pytest.raises(ValueError, match="num_heads must divide d_model"):
        lesson04.head_columns(["x"], 10, 3)
