"""Lesson 11's measurements: time per token three ways, FLOPs, cache sizes, GQA, windows.

Built on :mod:`helpers.measure` (median times, traced peaks). The lesson makes one call
per measurement and draws the result with one more; ``benchmarks/run.py`` uses the same
functions. Timings depend on the machine and what else it is doing: shown, never asserted.

    timing = time_per_token(attention_decode_step, [256, 1024, 4096], max_all_rows=1024)
    bytes_ = cache_bytes_after(attention_decode_step, 512, num_heads=8, num_kv_heads=2)
"""

import time

import numpy as np

from ... import measure, reference
from ...plots import log_axes
from ...plots import LINES
from . import generate

#: One colour per line: the course's palette for series (Okabe-Ito).
COLOURS = LINES

WITH_CACHE = "cache"
LAST_ROW = "no cache, last row only"
ALL_ROWS = "no cache, every row"
WAYS = (WITH_CACHE, LAST_ROW, ALL_ROWS)

#: The sliding-window figure's two ways (band by band, whole grid): colours the three ways above do not use.
WINDOW_COLOURS = COLOURS[len(WAYS):len(WAYS) + 2]


def random_weights(d_model, num_heads, num_kv_heads=None, seed=0):
    """Random ``W_q, W_k, W_v, W_o`` for ``num_kv_heads`` key/value heads (entries ~ N(0, 1/d_model))."""
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    d_kv = num_kv_heads * (d_model // num_heads)
    rng = np.random.default_rng(seed)
    scale = 1 / np.sqrt(d_model)
    return (scale * rng.standard_normal((d_model, d_model)),
            scale * rng.standard_normal((d_model, d_kv)),
            scale * rng.standard_normal((d_model, d_kv)),
            scale * rng.standard_normal((d_model, d_model)))


def label_log_y(ax):
    """Label the log y axis at 1, 2 and 5 of every decade, so a line inside one decade can be read."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))


def keep_freed_memory(size=16 * 2**20):
    """Let the C allocator keep the memory NumPy frees, so that timings do not include the OS's.

    A decode step makes new arrays the size of the cache. Freed, a large array may go back
    to the operating system, and the next step then waits for fresh pages: on a Linux
    machine that can cost ten times the step itself at a few thousand tokens, or not at all,
    depending on what the process allocated before. Allocating and freeing one block of
    ``size`` bytes (16 MiB) makes glibc's allocator keep blocks up to that size for reuse,
    as a long-running program's would; elsewhere it does no harm.
    """
    block = np.ones(size // 8)
    del block


def _step_calls(decode_step, n, d_model, num_heads, num_layers, rng, seed):
    """The three ways to produce token n + 1's output after n tokens, as zero-argument calls."""
    layers = [random_weights(d_model, num_heads, seed=seed + layer) for layer in range(num_layers)]
    d_head = d_model // num_heads
    X = rng.standard_normal((n + 1, d_model))                         # (n + 1, d_model)
    caches = [{"K": rng.standard_normal((num_heads, n, d_head)),      # (h, n, d_head) per layer
               "V": rng.standard_normal((num_heads, n, d_head))} for _ in layers]
    return {WITH_CACHE: lambda: generate.stack_decode_step(decode_step, X[-1], caches, layers, num_heads),
            LAST_ROW: lambda: generate.stack_last_row(X, layers, num_heads),
            ALL_ROWS: lambda: generate.stack_forward(X, layers, num_heads)}


def time_per_token(decode_step, sizes, d_model=64, num_heads=4, num_layers=1, max_all_rows=1024,
                   repeat=7, seed=0, clock=time.process_time, min_group=5e-3):
    """Seconds to produce token ``n + 1``'s output after ``n`` tokens, three ways, for each n.

    - :data:`WITH_CACHE`: one ``decode_step(x, cache, ...)`` per layer, ``n`` cached tokens;
    - :data:`LAST_ROW`: no cache; every layer but the last recomputes all ``n + 1`` rows (the
      next layer needs them), the last one projects every key and value again but computes
      only the last row (:func:`.generate.stack_last_row`); with one layer, only that;
    - :data:`ALL_ROWS`: no cache, every row of every layer (``model(whole_sequence)``),
      timed only up to ``max_all_rows`` (it costs ~n²).

    Projections and ``W_o`` are counted in all three; there is no MLP (the course has none).

    Parameters
    ----------
    decode_step : callable, as :func:`helpers.reference.attention_decode_step`
    sizes : sequence of int, the context lengths n
    d_model, num_heads, num_layers : int
    repeat : int
        Timed groups per size (see :func:`helpers.measure.median_time`); each group runs the
        call at least ``min_group`` seconds.
    clock : callable returning seconds
        This process's CPU time by default: what the step costs, not counting the time
        spent waiting for a core while other programs run (wall time: ``time.perf_counter``).

    Returns
    -------
    dict name -> (sizes ndarray, seconds ndarray), one entry per way (:data:`WAYS`)
    """
    keep_freed_memory()
    rng = np.random.default_rng(seed)
    timing = {way: ([], []) for way in WAYS}
    for n in sizes:
        for way, call in _step_calls(decode_step, n, d_model, num_heads, num_layers, rng, seed).items():
            if way == ALL_ROWS and n > max_all_rows:
                continue
            timing[way][0].append(n)
            timing[way][1].append(measure.median_time(call, repeat=repeat, number=None, clock=clock,
                                                      min_group=min_group))
    return {way: (np.array(n), np.array(t)) for way, (n, t) in timing.items()}


def fit_range(timing, start, stop):
    """The fitted exponent of each line of ``timing``, over its sizes ``start <= n <= stop``.

    ``start`` and ``stop`` may be dicts name -> bound, one range per line.
    """
    fits = {}
    for name, (n, t) in timing.items():
        low = start[name] if isinstance(start, dict) else start
        high = stop[name] if isinstance(stop, dict) else stop
        keep = (n >= low) & (n <= high)
        fits[name] = reference.fit_power_law(n[keep], t[keep])
    return fits


def fit_line(sizes, seconds):
    """``a + b * n`` fitted to times, each point weighted by 1 / its time (relative errors).

    Returns
    -------
    a, b : float
        The fixed cost (seconds) and the cost per unit of n (seconds).
    """
    n, t = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    design = np.stack([np.ones_like(n), n], axis=1) / t[:, None]       # rows divided by t
    (a, b), *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    return float(a), float(b)


def flops_per_token(n, d_model, num_layers=1, mlp=0):
    """Floating-point operations to produce token ``n + 1`` after ``n`` tokens, three ways.

    Lesson 05's counting (a multiply-add is 2; softmax left out), ``t = n + 1`` tokens:
    one layer over t tokens is ``8 t d^2`` (Q, K, V, W_o) ``+ 4 t^2 d`` (scores, blend);
    its last row alone ``4 t d^2`` (K, V of every token) ``+ 4 d^2`` (q, W_o) ``+ 4 t d``;
    the cached step ``8 d^2 + 4 t d``. ``mlp`` adds ``mlp * d^2`` per token and layer
    (``16`` for a feed-forward block of width 4d, which the course leaves out).

    Returns
    -------
    dict name -> float, one entry per way (:data:`WAYS`)
    """
    t, d, L = n + 1, d_model, num_layers
    every_row = 8 * t * d**2 + 4 * t**2 * d + mlp * t * d**2
    return {WITH_CACHE: L * (8 * d**2 + 4 * t * d + mlp * d**2),
            LAST_ROW: (L - 1) * every_row + 4 * t * d**2 + 4 * d**2 + 4 * t * d + mlp * d**2,
            ALL_ROWS: L * every_row}


def print_times(timing, sizes):
    """One line per size n: each way's time per token in ms (a way not timed at n is left out)."""
    for n_tokens in sizes:
        parts = [f"{way} {1e3 * t[n == n_tokens][0]:.3f} ms" for way, (n, t) in timing.items()
                 if n_tokens in n]
        print(f"n = {n_tokens:>4}: " + ", ".join(parts))


def _at(timing, way, n_tokens):
    """Seconds of ``way`` at ``n_tokens`` in ``timing``; a ValueError if it was not timed there."""
    n, t = timing[way]
    if n_tokens not in n:
        raise ValueError(f"{way!r} was not timed at n = {n_tokens} (timed at {list(n)})")
    return t[n == n_tokens][0]


def print_cache_ratios(timing, flops, n_tokens=1024):
    """Print what the cache saves at one n: measured, and counted in FLOPs.

    Parameters
    ----------
    timing : dict way -> (sizes, seconds), as :func:`time_per_token` returns (every way timed at n_tokens)
    flops : dict way -> float, ``flops_per_token(n_tokens, d_model)`` (the same n and model)
    n_tokens : int

    Prints one line: *last row / cache* measured and counted, *every row / last row* measured.
    """
    at = {way: _at(timing, way, n_tokens) for way in WAYS}
    print(f"at n = {n_tokens}: last row / cache = {at[LAST_ROW] / at[WITH_CACHE]:.1f} measured, "
          f"{flops[LAST_ROW] / flops[WITH_CACHE]:.0f} counted in FLOPs; "
          f"every row / last row = {at[ALL_ROWS] / at[LAST_ROW]:.0f} measured")


def print_copy_cost(timing, preallocated, flops, n_tokens=1024):
    """Print the cached step that copies its cache against one on a preallocated cache.

    Parameters
    ----------
    timing : dict way -> (sizes, seconds), as :func:`time_per_token` returns
    preallocated : dict n -> seconds of the step on a cache allocated once (:func:`preallocated_step_times`)
    flops : dict way -> float, ``flops_per_token(n_tokens, d_model)``
    n_tokens : int, one of ``preallocated``'s sizes: where the operations per second are given

    Prints one line per size of ``preallocated`` (ms copying, ms preallocated, last row /
    preallocated), then the operations per second (GFLOP/s) at ``n_tokens``: the last row, the
    cached step copying its cache and preallocated.
    """
    if n_tokens not in preallocated:
        raise ValueError(f"print_copy_cost: n_tokens = {n_tokens} is not among the preallocated "
                         f"step's sizes {list(preallocated)}")
    for n, t_pre in preallocated.items():
        print(f"n = {n}: cached step {1e3 * _at(timing, WITH_CACHE, n):.3f} ms copying its cache, "
              f"{1e3 * t_pre:.3f} ms on a preallocated one; "
              f"last row / preallocated = {_at(timing, LAST_ROW, n) / t_pre:.1f}")
    last_row, cached = _at(timing, LAST_ROW, n_tokens), _at(timing, WITH_CACHE, n_tokens)
    print(f"operations per second at n = {n_tokens}: "
          f"last row {flops[LAST_ROW] / last_row / 1e9:.0f} GFLOP/s; "
          f"cached step {flops[WITH_CACHE] / cached / 1e9:.1f} GFLOP/s copying, "
          f"{flops[WITH_CACHE] / preallocated[n_tokens] / 1e9:.1f} preallocated")


def plot_time_per_token(timing, exponents, ranges, ax=None, title=None):
    """Time per generated token against n, log-log, one line per way; returns the Axes.

    ``exponents`` and ``ranges`` map a way to its fitted exponent and the ``(start, stop)``
    of its fit, shown in the legend; a way left out of them is drawn without a fit.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 5.4), layout="constrained")
    for i, (name, (n, t)) in enumerate(timing.items()):
        label = name
        if name in exponents:
            start, stop = ranges[name]
            label += f": fitted k = {exponents[name]:.2f} (n = {start} to {stop})"
        ax.plot(n, 1e3 * t, "os^"[i % 3] + "-", color=COLOURS[i], label=label)
    n_all = sorted(set(np.concatenate([n for n, _ in timing.values()]).tolist()))
    log_axes(ax, xticks=n_all)
    label_log_y(ax)
    ax.set_title(title or "Time to produce one more token, after n tokens")
    ax.set_xlabel("tokens so far n")
    ax.set_ylabel("median CPU time per token (ms)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, fontsize=9, frameon=False)
    return ax


def gqa_step_times(decode_step, n, kv_heads, d_model=64, num_heads=8, repeat=7, seed=0,
                   clock=time.process_time, min_group=5e-3):
    """Seconds of one decode step with ``n`` cached tokens, for each count of key/value heads.

    Returns
    -------
    dict num_kv_heads -> seconds
    """
    return _step_times(lambda x, cache, W, g: decode_step(x, cache, *W, num_heads, g), n, kv_heads,
                       d_model, num_heads, repeat, seed, clock, min_group)


def preallocated_step_times(n, kv_heads, d_model=64, num_heads=8, repeat=7, seed=0,
                            clock=time.process_time, min_group=5e-3):
    """Seconds of one decode step with ``n`` cached tokens in a cache allocated once, per kv-head count.

    The step is :func:`.generate.decode_step_preallocated`: it writes the new key and value
    into a column of arrays made once, and copies nothing the size of the cache. Timed beside
    :func:`gqa_step_times` (or :func:`time_per_token`'s cached step), whose steps copy their
    cache every time, it shows what the copy costs. Arguments as in :func:`gqa_step_times`.

    Returns
    -------
    dict num_kv_heads -> seconds
    """
    def step(x, cache, W, g):
        return generate.decode_step_preallocated(x, cache, n, *W, num_heads, g)
    # The cache holds n tokens and room for one more.
    return _step_times(step, n + 1, kv_heads, d_model, num_heads, repeat, seed, clock, min_group)


def _step_times(step, length, kv_heads, d_model, num_heads, repeat, seed, clock, min_group):
    """Median seconds of ``step(x, cache, W, g)``, a cache of ``length`` random columns, per kv-head count."""
    keep_freed_memory()
    rng = np.random.default_rng(seed)
    d_head = d_model // num_heads
    times = {}
    for g in kv_heads:
        W = random_weights(d_model, num_heads, g, seed=seed)
        x = rng.standard_normal(d_model)
        cache = {"K": rng.standard_normal((g, length, d_head)), "V": rng.standard_normal((g, length, d_head))}
        times[g] = measure.median_time(lambda: step(x, cache, W, g), repeat=repeat, number=None,
                                       clock=clock, min_group=min_group)
    return times


def cache_bytes_after(decode_step, n, d_model=64, num_heads=8, num_kv_heads=None, window=None,
                      seed=0):
    """Bytes held by the KV cache (``K.nbytes + V.nbytes``) after generating ``n`` tokens."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d_model))
    W = random_weights(d_model, num_heads, num_kv_heads, seed=seed)
    _, cache = generate.decode_sequence(decode_step, X, W, num_heads, num_kv_heads, window)
    return int(cache["K"].nbytes + cache["V"].nbytes)


def window_costs(window, sizes, d=32, repeat=3, seed=0, clock=time.process_time):
    """Time and peak traced memory of self-attention over n tokens: band by band, or the full grid.

    Both give the sliding-window attention (window ``window``): one computes it band by band
    (:func:`helpers.reference.sliding_window_attention`), the other masks the whole
    ``(n, n)`` grid with ``sliding_window_mask``.

    Returns
    -------
    times, peaks : dict name -> ndarray, shape (len(sizes),)
        Seconds per call (this process's CPU time by default, see :func:`time_per_token`)
        and peak bytes, for ``"band by band"`` and ``"whole grid, masked"``.
    """
    keep_freed_memory()
    rng = np.random.default_rng(seed)

    def versions(n):
        Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))        # each (n, d)
        mask = reference.sliding_window_mask(n, window)                  # made before measuring
        return {"band by band": lambda: reference.sliding_window_attention(Q, K, V, window),
                "whole grid, masked": lambda: reference.scaled_dot_product_attention(Q, K, V, mask)[0]}

    times = {}
    for n in sizes:
        for name, fn in versions(n).items():
            times.setdefault(name, []).append(
                measure.median_time(fn, repeat=repeat, number=None, clock=clock))
    return ({name: np.array(t) for name, t in times.items()},
            measure.traced_peaks(versions, sizes))


def plot_window_costs(sizes, times, peaks, window):
    """Two log-log panels, time and memory against n, with fitted exponents; returns the figure."""
    import matplotlib.pyplot as plt

    # colours of their own: the first three are the time-per-token figures' ways (cache, last
    # row only, every row), and one colour keeps one meaning within the lesson
    colours = dict(zip(times, WINDOW_COLOURS))
    k_time = {name: reference.fit_power_law(sizes, t) for name, t in times.items()}
    k_mem = {name: reference.fit_power_law(sizes, p) for name, p in peaks.items()}
    fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(12, 4.6), layout="tight")
    measure.plot_times(ax_time, sizes, times, colours, k_time, xlabel="sequence length n (tokens)",
                       title="Time")
    measure.plot_peaks(ax_mem, sizes, peaks, colours, k_mem, xlabel="sequence length n (tokens)",
                       title="Peak memory")
    ax_time.set_ylabel("median CPU time per call (ms)")
    for ax in (ax_time, ax_mem):
        ax.legend(loc="upper left")
        label_log_y(ax)
    fig.suptitle(f"Sliding-window attention (window = {window}) over n tokens")
    return fig, k_time, k_mem


def tiled_and_grid_peaks(n=2048, d=64, block=64, seed=0):
    """Peak traced bytes of lesson 06's causal tiled attention and of the masked grid, n tokens."""
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))               # (n, d) each
    mask = reference.causal_mask(n)
    return (measure.traced_peak(lambda: reference.causal_online_softmax_attention(Q, K, V, block)),
            measure.traced_peak(lambda: reference.scaled_dot_product_attention(Q, K, V, mask)))


def table(rows):
    """Rows of strings as a plain text table: the first row is the header, columns left-aligned."""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(f"{str(cell):<{w}}" for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
