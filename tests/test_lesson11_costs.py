"""Lesson 11's measuring helpers: what they time, fit and print (never how long it takes)."""

import numpy as np
import pytest

from helpers.lessons.l11_inference import costs
from helpers.reference import attention_decode_step


def fake_clock():
    """A clock that advances by 1 ms at every reading: every call 'takes' a known time."""
    ticks = iter(range(10**6))
    return lambda: next(ticks) * 1e-3


@pytest.mark.parametrize("layers", [1, 2])
def test_time_per_token_times_the_three_ways_and_every_row_only_up_to_its_limit(layers):
    timing = costs.time_per_token(attention_decode_step, [4, 8, 16], d_model=8, num_heads=2,
                                      num_layers=layers, max_all_rows=8, repeat=1, clock=fake_clock(),
                                      min_group=0)
    assert list(timing) == list(costs.WAYS)
    assert timing[costs.WITH_CACHE][0].tolist() == [4, 8, 16]
    assert timing[costs.LAST_ROW][0].tolist() == [4, 8, 16]
    assert timing[costs.ALL_ROWS][0].tolist() == [4, 8]
    assert all(np.all(t > 0) for _, t in timing.values())


def test_the_calls_timed_give_the_same_last_output_three_ways():
    rng = np.random.default_rng(0)
    calls = costs._step_calls(attention_decode_step, 5, 8, 2, 2, rng, seed=0)
    # the cached way runs on a random cache, so compare the two ways without a cache
    every_row = calls[costs.ALL_ROWS]()[-1]
    np.testing.assert_allclose(calls[costs.LAST_ROW](), every_row, rtol=0, atol=1e-12)


def test_fit_range_takes_one_range_per_line():
    n = np.array([1, 2, 4, 8])
    timing = {"a": (n, n ** 1.0), "b": (n, np.array([5.0, 5.0, 16.0, 64.0]))}
    fits = costs.fit_range(timing, {"a": 1, "b": 2}, {"a": 8, "b": 8})
    assert fits["a"] == pytest.approx(1.0)
    assert fits["b"] == pytest.approx(np.log(64 / 5) / np.log(4))


def test_fit_line_recovers_a_fixed_cost_and_a_slope():
    n = np.array([128, 256, 1024, 4096])
    a, b = costs.fit_line(n, 4e-5 + 6e-8 * n)
    assert a == pytest.approx(4e-5) and b == pytest.approx(6e-8)


def test_print_times_leaves_out_a_way_not_timed_at_that_size(capsys):
    timing = {"cache": (np.array([1, 2]), np.array([1e-3, 2e-3])),
              "every row": (np.array([1]), np.array([5e-3]))}
    costs.print_times(timing, [1, 2])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["n =    1: cache 1.000 ms, every row 5.000 ms", "n =    2: cache 2.000 ms"]


# Invented times (seconds) and counts: cache 1 ms, last row 4 ms, every row 100 ms at n = 4 (the
# last row 8 ms at n = 8); 2e6 and 4e7 FLOPs; the preallocated step 0.5 ms at n = 4, 2 ms at n = 8.
TIMING = {costs.WITH_CACHE: (np.array([4, 8]), np.array([1e-3, 3e-3])),
          costs.LAST_ROW: (np.array([4, 8]), np.array([4e-3, 8e-3])),
          costs.ALL_ROWS: (np.array([4]), np.array([0.1]))}
FLOPS = {costs.WITH_CACHE: 2e6, costs.LAST_ROW: 4e7, costs.ALL_ROWS: 1e9}


def test_print_cache_ratios_gives_last_row_over_cache_measured_and_counted_and_every_row_over_last_row(
        capsys):
    costs.print_cache_ratios(TIMING, FLOPS, n_tokens=4)
    assert capsys.readouterr().out == ("at n = 4: last row / cache = 4.0 measured, 20 counted in FLOPs; "
                                       "every row / last row = 25 measured\n")


def test_print_copy_cost_gives_each_size_then_the_operations_per_second(capsys):
    costs.print_copy_cost(TIMING, {4: 5e-4, 8: 2e-3}, FLOPS, n_tokens=4)
    assert capsys.readouterr().out.splitlines() == [
        "n = 4: cached step 1.000 ms copying its cache, 0.500 ms on a preallocated one; "
        "last row / preallocated = 8.0",
        "n = 8: cached step 3.000 ms copying its cache, 2.000 ms on a preallocated one; "
        "last row / preallocated = 4.0",
        "operations per second at n = 4: last row 10 GFLOP/s; cached step 2.0 GFLOP/s copying, "
        "4.0 preallocated"]


@pytest.mark.parametrize("call, message", [
    (lambda: costs.print_cache_ratios(TIMING, FLOPS, n_tokens=8),
     "'no cache, every row' was not timed at n = 8"),
    (lambda: costs.print_copy_cost(TIMING, {4: 5e-4}, FLOPS, n_tokens=8), "n_tokens = 8 is not among"),
    (lambda: costs.print_copy_cost(TIMING, {16: 5e-4}, FLOPS, n_tokens=16),
     "'cache' was not timed at n = 16"),
])
def test_a_size_not_measured_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_gqa_step_times_has_one_time_per_kv_head_count():
    times = costs.gqa_step_times(attention_decode_step, 6, [4, 2, 1], d_model=8, num_heads=4,
                                     repeat=1, clock=fake_clock(), min_group=0)
    assert list(times) == [4, 2, 1] and all(t > 0 for t in times.values())


def test_preallocated_step_times_has_one_time_per_kv_head_count():
    times = costs.preallocated_step_times(6, [4, 2, 1], d_model=8, num_heads=4, repeat=1,
                                          clock=fake_clock(), min_group=0)
    assert list(times) == [4, 2, 1] and all(t > 0 for t in times.values())


@pytest.mark.parametrize("g, window, n, expected", [(2, None, 10, 2 * 2 * 10 * 2 * 8),
                                                    (1, 3, 10, 2 * 1 * 3 * 2 * 8)])
def test_cache_bytes_after_counts_keys_and_values_of_the_kept_tokens(g, window, n, expected):
    # d_model 8, 4 heads: d_head 2; K and V of (g, kept tokens, 2) in float64
    kept = costs.cache_bytes_after(attention_decode_step, n, d_model=8, num_heads=4, num_kv_heads=g,
                                       window=window)
    assert kept == expected


def test_the_window_figure_gives_no_colour_a_second_meaning():
    # the time-per-token figures' colours mean cache / last row / every row in the whole lesson
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    n = np.array([4, 8, 16])
    timing = {way: (n, 1e-3 * n) for way in costs.WAYS}
    ax = costs.plot_time_per_token(timing, {}, {})
    per_token = {to_hex(line.get_color()) for line in ax.get_lines()}
    sizes = np.array([64, 128, 256])
    times = {"band by band": 1e-6 * sizes, "whole grid, masked": 1e-9 * sizes**2}
    peaks = {"band by band": 8.0 * sizes, "whole grid, masked": 8.0 * sizes**2}
    fig, _, _ = costs.plot_window_costs(sizes, times, peaks, window=16)
    window = {to_hex(line.get_color()) for ax_ in fig.axes for line in ax_.get_lines()}
    plt.close("all")
    assert len(per_token) == 3 and len(window) >= 2 and not per_token & window
