"""helpers.predictions: "predict, then run" -- compare a guess with the answer, then reveal it."""

import pytest

from helpers import predictions


@pytest.mark.parametrize("guess, answer, expected", [
    (16, 16.0, True), (15, 16.0, True), (10, 16.0, False),
    ("Was", "was", True), (" on ", "on", True), ("cat", "was", False),
    (True, True, True), (False, True, False), (1, True, False),
])
def test_same_compares_numbers_words_and_yes_no(guess, answer, expected):
    assert predictions.same(guess, answer) is expected


@pytest.mark.parametrize("guess", [None, ..., "", "  "])
def test_reveal_without_a_guess_shows_the_answer(guess, capsys):
    assert predictions.reveal(guess, 16.0, why="sqrt(256) = 16.") is None   # a cell shows only the text
    out = capsys.readouterr().out
    assert out.startswith("○ No prediction written yet") and "16" in out and "sqrt(256)" in out


def test_reveal_says_right_or_wrong(capsys):
    predictions.reveal(16, 16.0)
    predictions.reveal(4, 16.0)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✓") and out[1].startswith("✗")
