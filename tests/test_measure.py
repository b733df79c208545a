"""helpers.measure: behaviour only (what is called, what is counted), never how fast."""

import numpy as np
import pytest

from helpers.measure import (format_bytes, median_time, median_times, plot_peaks, plot_times,
                             slider_step_report, times_with_spread, traced_peak, traced_peaks)


class FakeClock:
    """A clock that returns the given readings in turn."""

    def __init__(self, readings):
        self.readings = list(readings)

    def __call__(self):
        return self.readings.pop(0)


def test_median_time_is_median_of_group_times():
    # three groups lasting 5 s, 1 s and 3 s: the median is 3 s
    clock = FakeClock([0, 5, 10, 11, 20, 23])
    assert median_time(lambda: None, repeat=3, warmup=0, clock=clock) == 3.0


def test_median_time_divides_each_group_by_number():
    # two groups of 4 calls lasting 8 s and 12 s: 2 s and 3 s per call, median 2.5 s
    clock = FakeClock([0, 8, 8, 20])
    assert median_time(lambda: None, repeat=2, number=4, warmup=0, clock=clock) == 2.5


@pytest.mark.parametrize("repeat, number, warmup", [(1, 1, 0), (3, 2, 1), (5, 1, 2)])
def test_median_time_calls_fn_warmup_plus_repeat_times_number(repeat, number, warmup):
    calls = []
    median_time(lambda: calls.append(1), repeat=repeat, number=number, warmup=warmup)
    assert len(calls) == warmup + repeat * number


def test_median_time_auto_number_fills_min_group_from_warmup_call():
    # the warm-up call takes 0.25 s (clock 0 -> 0.25); min_group 1 s -> 4 calls per group;
    # groups then last 4 s and 8 s: 1 s and 2 s per call, median 1.5 s
    calls = []
    clock = FakeClock([0, 0.25, 1, 5, 5, 13])
    result = median_time(lambda: calls.append(1), repeat=2, number=None, warmup=1,
                         clock=clock, min_group=1.0)
    assert len(calls) == 1 + 2 * 4
    assert result == 1.5


def test_median_time_auto_number_needs_a_warmup():
    with pytest.raises(ValueError, match="number=None needs warmup >= 1"):
        median_time(lambda: None, number=None, warmup=0)


def test_median_time_returns_nonnegative_float():
    result = median_time(lambda: sum(range(100)), repeat=3)
    assert isinstance(result, float) and result >= 0


@pytest.mark.parametrize("kwargs, error, message", [
    ({"repeat": 0}, ValueError, "repeat must be positive"),
    ({"number": -1}, ValueError, "number must be positive"),
    ({"repeat": 2.5}, TypeError, "repeat must be a whole number"),
    ({"warmup": -1}, ValueError, "warmup must be a whole number >= 0"),
])
def test_median_time_rejects_bad_counts(kwargs, error, message):
    with pytest.raises(error, match=message):
        median_time(lambda: None, **kwargs)


@pytest.mark.parametrize("function", [traced_peak, median_time])
def test_measuring_a_non_callable_is_a_type_error(function):
    with pytest.raises(TypeError, match="fn must be callable"):
        function(42)


@pytest.mark.parametrize("n", [100_000, 1_000_000])
def test_traced_peak_counts_an_array_made_inside(n):
    # np.ones(n) holds n float64 = 8 n bytes; allow a little for Python's own bookkeeping
    peak = traced_peak(lambda: np.ones(n))
    assert 8 * n <= peak < 8 * n + 50_000


def test_traced_peak_counts_temporaries_freed_before_return():
    def make_and_drop():
        big = np.ones(1_000_000)   # 8 MB, freed when the function returns
        return float(big[0])
    assert traced_peak(make_and_drop) >= 8_000_000


def test_traced_peak_does_not_count_inputs_made_before():
    x = np.ones(1_000_000)
    assert traced_peak(lambda: x[0]) < 50_000


def test_traced_peak_leaves_tracemalloc_as_it_found_it():
    import tracemalloc
    assert not tracemalloc.is_tracing()
    traced_peak(lambda: None)
    assert not tracemalloc.is_tracing()
    tracemalloc.start()
    try:
        traced_peak(lambda: None)
        assert tracemalloc.is_tracing()
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("n, text", [(0, "0 bytes"), (1023, "1023 bytes"), (1536, "1.5 KiB"),
                                     (8 * 2**20, "8.0 MiB"), (3 * 2**30, "3.0 GiB"),
                                     (5 * 2**40, "5.0 TiB")])
def test_format_bytes_uses_binary_units(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize("n, error", [(-1, ValueError), ("8", TypeError)])
def test_format_bytes_rejects_bad_input(n, error):
    with pytest.raises(error):
        format_bytes(n)


# ------------------------------------------------------------ slider_step_report
def _ticking(step):
    """A fake clock that advances by ``step`` seconds each time it is read."""
    now = [0.0]

    def clock():
        now[0] += step
        return now[0]
    return clock


def test_slider_step_report_times_each_value_once_in_order():
    seen = []
    report = slider_step_report(seen.append, [1, 2, 4], clock=_ticking(0.01),
                                cpu_clock=_ticking(0.002))
    assert seen == [1, 2, 4]
    # each value: the clock is read twice, 10 ms apart; the CPU clock 2 ms apart
    assert report.splitlines() == ["   1:   10 ms wall,    2 ms CPU",
                                   "   2:   10 ms wall,    2 ms CPU",
                                   "   4:   10 ms wall,    2 ms CPU"]


def test_slider_step_report_rejects_a_non_callable():
    with pytest.raises(TypeError, match="slider_step_report: redraw must be callable"):
        slider_step_report(42, [1])


# ------------------------------------------------------------ median_times
def test_median_times_builds_each_size_once_and_times_every_function():
    built = []

    def make(size):
        built.append(size)
        return {"a": lambda: None, "b": lambda: None}

    times = median_times(make, [1, 2, 3], repeat=1)
    assert built == [1, 2, 3]
    assert sorted(times) == ["a", "b"] and times["a"].shape == (3,)
    assert np.all(times["a"] >= 0)


def test_times_with_spread_gives_median_fastest_and_slowest_group_on_the_given_clock():
    # one warm-up call of 1 s (so groups of 1 call), then groups lasting 3, 1 and 2 s
    clock = FakeClock([0, 1, 10, 13, 20, 21, 30, 32])
    spread = times_with_spread(lambda size: {"a": lambda: None}, [5], repeat=3, clock=clock)
    median, low, high = spread["a"]
    assert (median.tolist(), low.tolist(), high.tolist()) == ([2.0], [1.0], [3.0])


# ------------------------------------------------------------ plot_times
def test_plot_times_draws_the_spread_and_guides_through_the_chosen_point():
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    sizes = np.array([1.0, 2.0, 4.0])
    plot_times(ax, sizes, {"a": np.array([1e-3, 3e-3, 4e-3])}, {"a": "black"},
               guides=[("a", 1)], guide_at=0, spread={"a": (np.full(3, 1e-3), np.full(3, 5e-3))})
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), [1, 2, 4])    # slope 1 through (1, 1 ms)
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(1) and band.max() == pytest.approx(5)  # ms


def test_plot_times_draws_one_line_per_name_in_ms_with_fitted_exponents_and_guides():
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    sizes = np.array([1.0, 2.0, 4.0])
    plot_times(ax, sizes, {"a": np.array([1e-3, 2e-3, 4e-3])}, {"a": "black"}, {"a": 1.0},
               guides=[("a", 2)], title="T", xlabel="n")
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["a: fitted k = 1.00", "a slope of exactly 2"]
    np.testing.assert_allclose(lines[0].get_ydata(), [1, 2, 4])        # milliseconds
    np.testing.assert_allclose(lines[1].get_ydata(), [0.25, 1, 4])     # slope 2 through (4, 4 ms)
    assert (ax.get_title(), ax.get_xscale(), ax.get_yscale()) == ("T", "log", "log")


# ------------------------------------------------------------ plot_peaks
def _peaks_axes(**kwargs):
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    peaks = {"grid": np.array([2**20, 4 * 2**20]), "block": np.array([2**19, 2**20])}   # bytes
    plot_peaks(ax, np.array([256, 512]), peaks, {"grid": "black", "block": "grey"}, **kwargs)
    return ax


def test_plot_peaks_draws_bytes_in_mib_one_line_per_name():
    lines = _peaks_axes().get_lines()
    np.testing.assert_allclose(lines[0].get_ydata(), [1, 4])       # 2**20 bytes = 1 MiB
    np.testing.assert_allclose(lines[1].get_ydata(), [0.5, 1])
    np.testing.assert_array_equal(lines[0].get_xdata(), [256, 512])


def test_plot_peaks_writes_exponents_only_for_the_names_given():
    lines = _peaks_axes(exponents={"grid": 2.0}).get_lines()
    assert [line.get_label() for line in lines] == ["grid: fitted k = 2.00", "block"]


def test_plot_peaks_uses_the_line_styles_given_and_solid_by_default():
    assert [line.get_linestyle() for line in _peaks_axes().get_lines()] == ["-", "-"]
    styled = _peaks_axes(linestyles=["-", ":"]).get_lines()
    assert [line.get_linestyle() for line in styled] == ["-", ":"]


def test_plot_peaks_titles_labels_and_uses_log_log_axes():
    ax = _peaks_axes(title="T", xlabel="n", ylabel="memory (MiB)")
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("T", "n", "memory (MiB)")
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")


@pytest.mark.parametrize("peaks, linestyles, message", [
    ({"grid": np.array([1, 2, 3])}, None, r"peaks\['grid'\] has shape \(3,\), sizes has shape \(2,\)"),
    ({"grid": np.array([1, 2])}, ["-", ":"], "2 linestyles for 1 lines"),
])
def test_plot_peaks_rejects_curves_and_styles_that_do_not_match(peaks, linestyles, message):
    import matplotlib.pyplot as plt

    _, ax = plt.subplots()
    with pytest.raises(ValueError, match=message):
        plot_peaks(ax, np.array([256, 512]), peaks, {"grid": "black"}, linestyles=linestyles)


def test_traced_peaks_counts_the_array_each_function_makes():
    peaks = traced_peaks(lambda n: {"ones": lambda: np.ones(n)}, [1000, 2000])
    # n float64 numbers: 8 * n bytes (plus a little bookkeeping)
    assert 8000 <= peaks["ones"][0] < 9000 and 16000 <= peaks["ones"][1] < 17000
