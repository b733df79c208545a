"""Lesson 11's measurements: generating with and without the KV cache, cache sizes, windows.

Built on :mod:`helpers.measure` (median times, traced peaks). The lesson makes one call
per measurement and draws the result with one more; ``benchmarks/run.py`` uses the same
functions. Timings depend on the machine and what else it is doing: shown, never asserted.

    timing = time_per_token(attention_decode_step, [64, 256, 1024], [64, 256])
    bytes_ = cache_bytes_after(attention_decode_step, 512, num_heads=8, num_kv_heads=2)
"""

import time

import numpy as np

from . import measure, reference
from .plots import log_axes

#: Okabe-Ito colours (colour-blind safe), one per line.
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]

WITH_CACHE = "with the KV cache"
RECOMPUTING = "recomputing every token"


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


def time_per_token(decode_step, cached_sizes, recompute_sizes, d_model=64, num_heads=4,
                   repeat=7, seed=0, clock=time.process_time):
    """Seconds to produce the attention output of token ``n + 1`` after ``n`` tokens, two ways.

    - with the KV cache: one ``decode_step(x, cache, ...)`` with ``n`` cached keys and values;
    - recomputing: multi-head causal attention over all ``n + 1`` tokens (what a model
      without a cache does for every new token: its projections and every row).

    Parameters
    ----------
    decode_step : callable, as :func:`helpers.reference.attention_decode_step`
    cached_sizes, recompute_sizes : sequences of int
        The context lengths ``n`` to time each way (recomputing costs ~n², so fewer).
    d_model, num_heads : int
    repeat : int
        Timed groups per size (see :func:`helpers.measure.median_time`).
    clock : callable returning seconds
        This process's CPU time by default: what the step costs, not counting the time
        spent waiting for a core while other programs run (wall time: ``time.perf_counter``).

    Returns
    -------
    dict name -> (sizes ndarray, seconds ndarray)
        Keys :data:`WITH_CACHE` and :data:`RECOMPUTING`.
    """
    rng = np.random.default_rng(seed)
    W = random_weights(d_model, num_heads, seed=seed)
    d_head = d_model // num_heads
    cached = []
    for n in cached_sizes:
        x = rng.standard_normal(d_model)                                  # (d_model,)
        cache = {"K": rng.standard_normal((num_heads, n, d_head)),        # (h, n, d_head)
                 "V": rng.standard_normal((num_heads, n, d_head))}
        cached.append(measure.median_time(lambda: decode_step(x, cache, *W, num_heads),
                                          repeat=repeat, number=None, clock=clock))
    recomputed = []
    for n in recompute_sizes:
        X = rng.standard_normal((n + 1, d_model))                         # (n + 1, d_model)
        mask = reference.causal_mask(n + 1)
        recomputed.append(measure.median_time(
            lambda: reference.multi_head_attention(X, *W, num_heads, mask=mask),
            repeat=max(1, repeat // 2), number=None, clock=clock))
    return {WITH_CACHE: (np.array(cached_sizes), np.array(cached)),
            RECOMPUTING: (np.array(recompute_sizes), np.array(recomputed))}


def fit_range(timing, start, stop):
    """The fitted exponent of each line of ``timing``, over its sizes ``start <= n <= stop``."""
    fits = {}
    for name, (n, t) in timing.items():
        keep = (n >= start) & (n <= stop)
        fits[name] = reference.fit_power_law(n[keep], t[keep])
    return fits


def plot_time_per_token(timing, exponents, start, stop, ax=None):
    """Time per generated token against n, log-log, one line per way; returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.8), layout="tight")
    for i, (name, (n, t)) in enumerate(timing.items()):
        ax.plot(n, 1e3 * t, "os"[i % 2] + "-", color=COLOURS[i],
                label=f"{name}: fitted k = {exponents[name]:.2f} (n = {start} to {stop})")
    for (name, (n, t)), k, style in zip(timing.items(), (1, 2), (":", "--")):
        last = np.flatnonzero(n <= stop)[-1]                  # the guide passes through (stop, t)
        ax.plot(n, 1e3 * t[last] * (n / n[last]) ** k, style, color="grey", linewidth=1,
                label=f"a slope of exactly {k}")
    n_all = sorted(set(np.concatenate([n for n, _ in timing.values()]).tolist()))
    log_axes(ax, xticks=n_all)
    ax.set_title("Time to generate one more token, after n tokens")
    ax.set_xlabel("tokens so far n")
    ax.set_ylabel("median CPU time per token (ms)")
    ax.legend(loc="lower right", fontsize=9)
    return ax


def decode_sequence(decode_step, X, W, num_heads, num_kv_heads=None, window=None):
    """Feed the rows of ``X`` one at a time from an empty cache; the outputs and the last cache."""
    g = num_heads if num_kv_heads is None else num_kv_heads
    cache = reference.empty_kv_cache(g, X.shape[-1] // num_heads, dtype=X.dtype)
    outs = []
    for x in X:                                                          # one token at a time
        out, cache = decode_step(x, cache, *W, num_heads, g, window=window)
        outs.append(out)
    return np.array(outs), cache


def cache_bytes_after(decode_step, n, d_model=64, num_heads=8, num_kv_heads=None, window=None,
                      seed=0):
    """Bytes held by the KV cache (``K.nbytes + V.nbytes``) after generating ``n`` tokens."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d_model))
    W = random_weights(d_model, num_heads, num_kv_heads, seed=seed)
    _, cache = decode_sequence(decode_step, X, W, num_heads, num_kv_heads, window)
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

    colours = dict(zip(times, COLOURS))
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
    fig.suptitle(f"Sliding-window attention (window = {window}) over n tokens")
    return fig, k_time, k_mem


def table(rows):
    """Rows of strings as a plain text table: the first row is the header, columns left-aligned."""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(f"{str(cell):<{w}}" for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
