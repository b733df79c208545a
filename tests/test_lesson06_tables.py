"""Lesson 06's table of measured peaks and CPU times: what it prints from given numbers."""

import numpy as np
import pytest

from helpers.lessons.l06_tiled_attention import peaks_and_times_table

SIZES = np.array([256, 2048])
PEAKS = {"naive": np.array([2048, 32 * 2**20]), "tiled": np.array([1024, 4 * 2**20])}
TIMES = {"naive": (np.array([0.002, 0.04]), np.array([0.001, 0.03]), np.array([0.003, 0.05])),
         "tiled": (np.array([0.0025, 0.05]), np.array([0.002, 0.045]), np.array([0.004, 0.0625]))}


def test_each_row_gives_both_peaks_the_second_as_a_share_of_the_first_and_both_times_in_ms():
    lines = peaks_and_times_table(SIZES, PEAKS, TIMES).splitlines()
    assert lines[0].split()[:5] == ["n", "naive", "peak", "tiled", "peak"]
    assert lines[1].split() == ["256", "2.0", "KiB", "1.0", "KiB", "50.0%",
                                "naive", "2.00", "(1.00-3.00)", "tiled", "2.50", "(2.00-4.00)"]
    assert lines[2].split() == ["2048", "32.0", "MiB", "4.0", "MiB", "12.5%",
                                "naive", "40.00", "(30.00-50.00)", "tiled", "50.00", "(45.00-62.50)"]
    assert len(lines) == 3


@pytest.mark.parametrize("peaks, times, named", [
    ({**PEAKS, "third": PEAKS["naive"]}, TIMES, "the same two versions"),
    (PEAKS, {"naive": TIMES["naive"], "other": TIMES["tiled"]}, "the same two versions"),
    ({"naive": PEAKS["naive"][:1], "tiled": PEAKS["tiled"]}, TIMES, "'naive' needs one peak"),
])
def test_other_than_two_versions_or_a_size_missing_is_refused_by_name(peaks, times, named):
    with pytest.raises(ValueError, match=named):
        peaks_and_times_table(SIZES, peaks, times)
