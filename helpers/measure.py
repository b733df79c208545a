"""Measuring on the learner's own machine: time (median of repeats) and memory (traced peak).

Used by lessons 04, 05, 06 and 11 and by ``benchmarks/run.py``. The numbers depend on the
machine and on what else it is doing, so the lessons *show* them and never assert them.

Every timed and traced call runs on ONE BLAS thread (:func:`helpers.threads.blas_threads`):
NumPy's BLAS splits big products over several cores but not small ones, and that switch
would bend the curves the lessons fit. Only the measured calls are pinned; the learner's
own code outside them keeps NumPy's own thread count. :func:`threads_note` says so in a
lesson's output.

    seconds = median_time(lambda: Q @ K.T, repeat=5)
    peak_bytes = traced_peak(lambda: Q @ K.T)
"""

import time
import tracemalloc

import numpy as np

from .threads import FASTEST, blas_thread_count, blas_threads, in_words

__all__ = ["median_time", "traced_peak", "format_bytes", "median_times", "times_with_spread",
           "traced_peaks",
           "plot_times", "plot_peaks", "slider_step_report",
           "threads_note", "THREADS"]

#: The BLAS threads every measurement here runs on.
THREADS = FASTEST


def threads_note():
    """``'measured on 1 BLAS thread (NumPy uses 2 here outside the measurements)'``."""
    return (f"measured on {in_words(THREADS)} (NumPy uses {in_words(blas_thread_count())} "
            f"here outside the measurements)")


def _positive(where, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{where}: {name} must be a whole number, got {value!r}")
    if value <= 0:
        raise ValueError(f"{where}: {name} must be positive, got {name}={value}")
    return int(value)


def median_time(fn, repeat=5, number=1, warmup=1, clock=time.perf_counter, min_group=1e-3):
    """Median wall-clock seconds of one call of ``fn()``.

    Runs ``fn`` ``warmup`` times unmeasured (first calls pay for caches and memory
    pages), then ``repeat`` times ``number`` calls, timing each group. The median
    ignores the odd slow run caused by another program.

    Parameters
    ----------
    fn : callable with no arguments
    repeat : int > 0
        How many timed groups.
    number : int > 0, or None
        Calls per group (use more than 1 for calls far below a millisecond).
        ``None``: enough calls for a group to last about ``min_group`` seconds,
        judged from the last warm-up call (at most 1000 calls).
    warmup : int >= 0
        Unmeasured calls first (at least 1 when ``number`` is None).
    clock : callable returning seconds
        ``time.perf_counter`` by default (replaceable in tests).
    min_group : float
        Seconds a group should last when ``number`` is None.

    Returns
    -------
    float
        Median over the groups of (group time / number), in seconds, measured on
        :data:`THREADS` BLAS thread(s).
    """
    where = "median_time"
    if not callable(fn):
        raise TypeError(f"{where}: fn must be callable, got {type(fn).__name__}")
    repeat = _positive(where, "repeat", repeat)
    if isinstance(warmup, bool) or not isinstance(warmup, (int, np.integer)) or warmup < 0:
        raise ValueError(f"{where}: warmup must be a whole number >= 0, got {warmup!r}")
    if number is None and warmup < 1:
        raise ValueError(f"{where}: number=None needs warmup >= 1 to judge a call's time")
    if number is not None:
        number = _positive(where, "number", number)
    with blas_threads(THREADS):
        return _median_time(fn, repeat, number, warmup, clock, min_group)


def _group_times(fn, repeat, number, warmup, clock, min_group):
    one_call = 0.0
    for _ in range(warmup):
        start = clock()
        fn()
        one_call = clock() - start
    if number is None:   # enough calls to last about min_group seconds, 1 to 1000
        number = int(min(1000, max(1, np.ceil(min_group / max(one_call, 1e-9)))))
    times = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            fn()
        times.append((clock() - start) / number)
    return times


def _median_time(fn, repeat, number, warmup, clock, min_group):
    return float(np.median(_group_times(fn, repeat, number, warmup, clock, min_group)))


def traced_peak(fn):
    """Peak bytes allocated while ``fn()`` runs, as traced by ``tracemalloc``.

    NumPy reports its array buffers to ``tracemalloc``, so this counts every
    temporary array ``fn`` creates, even ones freed before it returns, plus its
    result. Memory allocated before the call (the inputs) is not counted.

    Parameters
    ----------
    fn : callable with no arguments

    Returns
    -------
    int
        The peak, in bytes, above what was allocated when the call started.
    """
    if not callable(fn):
        raise TypeError(f"traced_peak: fn must be callable, got {type(fn).__name__}")
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        with blas_threads(THREADS):          # entered before the peak is reset: not counted
            tracemalloc.reset_peak()
            before, _ = tracemalloc.get_traced_memory()
            result = fn()
            _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return max(0, peak - before)


def format_bytes(n):
    """``1536`` -> ``'1.5 KiB'``: bytes in binary units (KiB = 1024 bytes)."""
    if isinstance(n, bool) or not isinstance(n, (int, float, np.integer, np.floating)):
        raise TypeError(f"format_bytes: n must be a number, got {n!r}")
    if n < 0:
        raise ValueError(f"format_bytes: n must be >= 0, got {n}")
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


def slider_step_report(redraw, values, clock=time.perf_counter, cpu_clock=time.process_time):
    """Time one slider step per value: one line each, wall clock and this process's CPU time.

    On a shared machine the wall clock also counts waiting for a core; the CPU time does not.
    For instructors and benchmarks: the lessons show the slider, not its timing.

    Parameters
    ----------
    redraw : callable value -> anything
        What one slider step does (e.g. the ``redraw`` of :func:`helpers.widgets.figure_slider`).
    values : sequence
        The slider's values, each timed once.
    clock, cpu_clock : callables returning seconds (replaceable in tests)

    Returns
    -------
    str
        ``"  8: 41 ms wall, 39 ms CPU"``, one line per value.
    """
    if not callable(redraw):
        raise TypeError(f"slider_step_report: redraw must be callable, got {type(redraw).__name__}")
    lines = []
    for value in values:
        start, cpu = clock(), cpu_clock()
        redraw(value)
        lines.append(f"{value!s:>4}: {1000 * (clock() - start):4.0f} ms wall, "
                     f"{1000 * (cpu_clock() - cpu):4.0f} ms CPU")
    return "\n".join(lines)


def median_times(make_functions, sizes, repeat=5):
    """Median seconds per call of several functions, at each size.

    Parameters
    ----------
    make_functions : callable size -> dict of name -> zero-argument function
        Builds the inputs for one size and returns the calls to time (e.g. one per stage).
    sizes : sequence of numbers
    repeat : int
        Timed groups per function (see :func:`median_time`; tiny calls are grouped).

    Returns
    -------
    dict name -> ndarray, shape (len(sizes),)
        Seconds per call, in the order of ``sizes``.
    """
    times = {}
    for size in sizes:
        for name, fn in make_functions(size).items():
            times.setdefault(name, []).append(median_time(fn, repeat=repeat, number=None))
    return {name: np.array(t) for name, t in times.items()}


def times_with_spread(make_functions, sizes, repeat=7, clock=time.process_time):
    """Seconds per call of several functions at each size: the median, the fastest and the slowest
    of ``repeat`` timed groups.

    ``clock`` is this process's CPU time by default: on a shared machine the wall clock
    (``time.perf_counter``) also counts the time spent waiting for a core, which grows with a
    call's length (a long call is more often pre-empted); the CPU time does not. Every call runs
    on :data:`THREADS` BLAS thread(s) (one: the CPU time is then one core's time).

    Returns
    -------
    dict name -> (median, low, high), each an ndarray of shape (len(sizes),)
    """
    groups = {}
    with blas_threads(THREADS):
        for size in sizes:
            for name, fn in make_functions(size).items():
                groups.setdefault(name, []).append(_group_times(fn, repeat, None, 1, clock, 1e-3))
    return {name: tuple(np.array(f(g, axis=1)) for f in (np.median, np.min, np.max))
            for name, g in ((n, np.array(g)) for n, g in groups.items())}


def traced_peaks(make_functions, sizes):
    """Peak traced bytes (see :func:`traced_peak`) of several functions, at each size.

    Parameters
    ----------
    make_functions : callable size -> dict of name -> zero-argument function
    sizes : sequence of numbers

    Returns
    -------
    dict name -> ndarray of int, shape (len(sizes),)
    """
    peaks = {}
    for size in sizes:
        for name, fn in make_functions(size).items():
            peaks.setdefault(name, []).append(traced_peak(fn))
    return {name: np.array(p) for name, p in peaks.items()}


#: The markers of :func:`plot_times`'s lines, in order.
MARKERS = "os^vDP*"


def plot_times(ax, sizes, times, colours, exponents=None, guides=(), title="", xlabel="n",
               spread=None, guide_at=-1, ylabel="median time per call (ms)", markers=None):
    """Draw times (seconds) in milliseconds against sizes on log-log axes, one line per name.

    Parameters
    ----------
    ax : matplotlib Axes
    sizes : 1-D array
    times : dict name -> 1-D array of seconds
    colours : dict name -> colour
    exponents : dict name -> float, optional
        Fitted exponents, written in the legend (``"scores: fitted k = 1.98"``).
    guides : sequence of (name, k)
        Grey lines of slope exactly k through the point ``guide_at`` of ``times[name]``.
    title, xlabel, ylabel : str
    spread : dict name -> (low, high) arrays of seconds, optional
        Drawn as a shaded band (e.g. the fastest and slowest of the repeats).
    guide_at : int
        Index of the size the guides pass through (default the last).
    markers : dict name -> matplotlib marker, optional
        Default: :data:`MARKERS` in the order of ``times`` (so that two panels can share them).
    """
    from .plots import log_axes

    markers = markers or {name: MARKERS[i % len(MARKERS)] for i, name in enumerate(times)}
    for name, t in times.items():
        label = name if exponents is None else f"{name}: fitted k = {exponents[name]:.2f}"
        ax.plot(sizes, 1e3 * t, markers[name] + "-", color=colours[name], label=label)
        if spread is not None and name in spread:
            ax.fill_between(sizes, 1e3 * spread[name][0], 1e3 * spread[name][1], color=colours[name],
                            alpha=0.2, linewidth=0)
    for (name, k), style in zip(guides, [":", "--", "-."]):
        guide = 1e3 * times[name][guide_at] * (np.asarray(sizes) / sizes[guide_at]) ** k
        ax.plot(sizes, guide, style, color="grey", linewidth=1, label=f"a slope of exactly {k}")
    log_axes(ax, xticks=sizes)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def plot_peaks(ax, sizes, peaks, colours, exponents=None, linestyles=None, title="", xlabel="n",
               ylabel="peak traced memory (MiB)"):
    """Draw memory (bytes) in MiB against sizes on log-log axes, one line per name.

    The memory twin of :func:`plot_times`: the same markers, in the same order.

    Parameters
    ----------
    ax : matplotlib Axes
    sizes : 1-D array, shape (m,)
    peaks : dict name -> sequence of bytes, shape (m,)
        E.g. what :func:`traced_peaks` returns.
    colours : dict name -> colour
    exponents : dict name -> float, optional
        Fitted exponents, written in the legend (``"tiled: fitted k = 1.02"``); names
        left out of it get their plain name.
    linestyles : sequence of str, one per name, optional
        ``"-"``, ``"--"``, ``":"`` ...: lets a line lying on another stay visible.
        Solid lines by default.
    title, xlabel, ylabel : str
    """
    from .plots import log_axes

    sizes = np.asarray(sizes)
    exponents = exponents or {}
    linestyles = ["-"] * len(peaks) if linestyles is None else list(linestyles)
    if len(linestyles) != len(peaks):
        raise ValueError(f"plot_peaks: {len(linestyles)} linestyles for {len(peaks)} lines")
    markers = "os^vDP*"
    for i, (name, p) in enumerate(peaks.items()):
        if np.shape(p) != sizes.shape:
            raise ValueError(f"plot_peaks: peaks[{name!r}] has shape {np.shape(p)}, "
                             f"sizes has shape {sizes.shape}")
        label = f"{name}: fitted k = {exponents[name]:.2f}" if name in exponents else name
        ax.plot(sizes, np.asarray(p) / 2**20, markers[i % len(markers)] + linestyles[i],
                color=colours[name], label=label)
    log_axes(ax, xticks=sizes)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
