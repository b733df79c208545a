"""Lesson 01's figure: a query's scores as one bar per word."""


import matplotlib
import matplotlib.pyplot as plt

from helpers.lessons.l01_qkv_projections import figures as lesson01

matplotlib.use("Agg")


def test_bars_draws_one_bar_per_word_with_its_value():
    ax = lesson01.bars(["a", "b"], [2.0, -1.0], title="t", ylabel="q · k")
    assert [p.get_height() for p in ax.patches] == [2.0, -1.0]
    assert ax.get_title() == "t" and ax.get_ylabel() == "q · k" and ax.get_xlabel() == "key token j"
    plt.close(ax.figure)
