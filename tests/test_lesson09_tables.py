"""Lesson 09's printed tables (helpers/lessons/l09_position/tables.py): small inputs written here,
expected figures worked out by hand."""

import numpy as np

from helpers.lessons.l09_position import tables

BY_SEED = {"learned": [{0: 0.96, 1: 0.01}, {0: 0.90, 1: 0.02}],
           "sinusoidal": [{0: 0.94, 1: 0.89}, {0: 0.86, 1: 0.30}],
           "rope": [{0: 0.93, 1: 0.92}, {0: 0.95, 1: 0.90}]}


def test_by_shift_prints_a_row_per_seed_and_the_means_at_shift_0():
    text = tables.by_shift(BY_SEED, none=0.467)
    assert "      rope seed 1:  0.950  0.900" in text
    assert "s = 0, mean of 2 seeds: learned 0.930, sinusoidal 0.900, rope 0.940" in text
    assert "learned above rope in 1 of 2 seeds and above sinusoidal in 2 of 2 seeds" in text


def test_by_shift_prints_ropes_largest_loss_and_sinusoidals_best_seed():
    text = tables.by_shift(BY_SEED, none=0.467)
    assert "largest loss against s = 0 over the shifts: 0.010-0.050 (2 seeds)" in text
    assert " sinusoidal, best:  0.940  0.890   (best seed at each shift)" in text
    assert "     none, seed 0:  0.467 at every shift" in text


def _parts(target, ratio):
    return {"target": target, "other_trained": 0.1, "untrained": 0.9 - target, "per_key_trained": 0.03,
            "per_key_untrained": 0.03 * ratio, "target_among_trained": 0.7,
            "target_if_untrained_as_trained": target + 0.04}


def test_where_the_weight_goes_prints_ranges_and_each_seeds_ratio_and_log_n_lift():
    inside = [{"2-15": _parts(0.75, np.nan), "64-255": _parts(0.16, 1.25)},
              {"2-15": _parts(0.78, np.nan), "64-255": _parts(0.21, 0.5)}]
    accuracy = [{"2-15": {"accuracy": 1.0}, "64-255": {"accuracy": 0.57}},
                {"2-15": {"accuracy": 1.0}, "64-255": {"accuracy": 0.73}}]
    scaled = [{"2-15": 1.0, "64-255": 0.73}, {"2-15": 1.0, "64-255": 0.92}]
    text = tables.where_the_weight_goes(inside, accuracy, scaled, inside)
    row = next(line for line in text.splitlines() if line.strip().startswith("64-255"))
    assert "0.16-0.21" in row and "0.015-0.037" in row and "0.20-0.25" in row
    assert next(line for line in text.splitlines() if line.strip().startswith("2-15")).count(" -") == 1
    assert "one unseen key's weight over one seen key's:\n   1.25, 0.50" in text
    assert "0.57 -> 0.73, 0.73 -> 0.92" in text


def test_the_tables_fit_in_100_characters_for_the_lessons_five_seeds_and_four_bands():
    bands = ("2-15", "16-23", "24-63", "64-255")
    inside = [{band: _parts(0.75, 1.28 if band != "2-15" else np.nan) for band in bands} for _ in range(5)]
    accuracy = [{band: {"accuracy": 0.57} for band in bands} for _ in range(5)]
    scaled = [{band: 0.73 for band in bands} for _ in range(5)]
    by_seed = {position: [{s: 0.958 for s in (0, 1, 2, 3, 4, 8)}] * 5 for position in BY_SEED}
    texts = tables.where_the_weight_goes(inside, accuracy, scaled, inside), tables.by_shift(by_seed, 0.467)
    for text in texts:
        assert max(len(line) for line in text.splitlines()) <= 100
