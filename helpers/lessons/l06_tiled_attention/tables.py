"""Lesson 06's printed table: the peak memory and CPU time of two attentions, at each n.

The function takes what the lesson measured (nothing is measured here) and returns the text it
prints, so that the measuring cell stays a few lines long.
"""

from ...measure import format_bytes


def peaks_and_times_table(sizes, peaks, times):
    """The peaks and CPU times of two versions side by side, one row per size.

    Parameters
    ----------
    sizes : sequence of int, length m
        The sequence lengths n measured.
    peaks : dict of exactly two names -> array of bytes, shape (m,)
        As :func:`helpers.measure.traced_peaks` returns; the first name is the baseline.
    times : dict of the same names -> (median, fastest, slowest), each an array of seconds, shape (m,)
        As :func:`helpers.measure.times_with_spread` returns.

    Returns
    -------
    str
        A header, then one row per size: n, each version's peak, the second's peak as a share of
        the first's ("ratio"), and each version's CPU milliseconds per call, "median (fastest-slowest)".
    """
    if len(peaks) != 2 or set(times) != set(peaks):
        raise ValueError(f"peaks_and_times_table: needs the peaks and times of the same two versions, "
                         f"got peaks of {list(peaks)} and times of {list(times)}")
    first, second = peaks
    for name in peaks:
        if len(peaks[name]) != len(sizes) or any(len(a) != len(sizes) for a in times[name]):
            raise ValueError(f"peaks_and_times_table: {name!r} needs one peak and one time per size "
                             f"({len(sizes)} sizes)")
    lines = [f"{'n':>6} {first + ' peak':>12} {second + ' peak':>12} {'ratio':>7}   "
             "CPU ms per call: median (fastest-slowest)"]
    for i, n in enumerate(sizes):
        ms = {name: "{:.2f} ({:.2f}-{:.2f})".format(*(1e3 * a[i] for a in times[name])) for name in peaks}
        lines.append(f"{n:>6} {format_bytes(peaks[first][i]):>12} {format_bytes(peaks[second][i]):>12} "
                     f"{peaks[second][i] / peaks[first][i]:>7.1%}   "
                     f"{first} {ms[first]:<22} {second} {ms[second]}")
    return "\n".join(lines)
