"""Lesson 02's figures and slider: measurements against d_k, softmax saturation, the d_k explorer.

Colour-blind-safe Okabe-Ito colours (:mod:`helpers.plots`); the slider is built with
:mod:`helpers.widgets` (the API common to ipywidgets 7.7 and 8).
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter

from ... import data
from ...plots import BLACK, BLUE, STYLES, VERMILLION, log_axes
from ...widgets import choice_slider, live_figure, powers_of_two


def against_dk(dks, lines, *, title, ylabel, prediction=None):
    """Measured lines against d_k on log-log axes (a power law is a straight line).

    Parameters
    ----------
    dks : sequence of int
        The sizes measured (labelled on the x axis as plain numbers).
    lines : dict of label -> sequence of numbers, one per d_k
    prediction : (label, values), optional
        Drawn as a dashed black line on top of the measurements, so that it stays
        visible where a measurement lies on it.

    Where the lines meet, the first is drawn on top with the smallest markers, so that the
    points of two lines show (three meeting at one point may hide the third). If the highest
    value drawn (a measurement or the prediction) lies more than twice above the highest
    labelled power of ten, a tick at 3 times that power is labelled too, and the axis ends at
    the next power of ten: the top of the data can be read.

    Returns
    -------
    matplotlib Axes
        The legend is under the axes, where it covers no line.
    """
    fig, ax = plt.subplots(figsize=(7.5, 5), layout="constrained")   # makes room for the legend
    if prediction is not None:
        label, values = prediction
        ax.plot(dks, values, color=BLACK, linestyle=(0, (4, 3)), linewidth=1.5, label=label,
                zorder=3)                                   # measurements are under 3
    for k, ((label, values), (marker, colour)) in enumerate(zip(lines.items(), STYLES)):
        # Where lines meet, each is drawn over the next with smaller markers: every point shows.
        ax.plot(dks, values, marker, color=colour, label=label, markersize=6 + 2 * k,
                zorder=2 + 0.1 * (len(lines) - k))          # under the prediction (3)
    log_axes(ax, "xy", xticks=dks)
    drawn = [np.ravel(v) for v in [*lines.values(), *([prediction[1]] if prediction else [])]]
    top = np.max(np.concatenate(drawn))
    decade = 10.0 ** np.floor(np.log10(top))        # the highest labelled tick under the data
    if top > 2 * decade:                            # far under the top: label 3 x it too (half
        ax.set_ylim(top=10 * decade)                # a decade up) and end the axis on the next one
        ax.yaxis.set_minor_locator(FixedLocator([3 * decade]))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_title(title)
    ax.set_xlabel("d_k (size of each query and key)")
    ax.set_ylabel(ylabel)
    fig.legend(loc="outside lower center", ncol=2, frameon=False)
    return ax


def saturation_panel(ax, dks, measured, *, one_hot, uniform, title, ylabel):
    """One panel of lesson 02's saturation figure: a statistic of softmax rows against d_k.

    The statistic without scaling (orange circles) and divided by √d_k (blue squares),
    with grey lines at its value for a one-hot row (dotted) and a uniform row (dashed),
    on a log x axis.

    Parameters
    ----------
    ax : matplotlib Axes
    dks : 1-D array, shape (m,)
        The d_k measured (powers of two); every other one is labelled.
    measured : dict with keys "raw" and "scaled", each a sequence of shape (m,)
        The statistic (e.g. the mean largest weight) at each d_k.
    one_hot, uniform : float
        The statistic for a one-hot row and for a uniform row.
    title, ylabel : str
    """
    dks = np.asarray(dks)
    for name in ("raw", "scaled"):
        if np.shape(measured[name]) != dks.shape:
            raise ValueError(f"saturation_panel: measured[{name!r}] has shape "
                             f"{np.shape(measured[name])}, dks has shape {dks.shape}")
    ax.plot(dks, measured["raw"], "o-", color=VERMILLION, label="no scaling")
    ax.plot(dks, measured["scaled"], "s-", color=BLUE, label="divided by √d_k")
    ax.axhline(one_hot, color="gray", linestyle=":", label=f"one-hot ({one_hot:g})")
    ax.axhline(uniform, color="gray", linestyle="--", label=f"uniform ({uniform:.2g})")
    log_axes(ax, "x", xticks=dks[::2])
    ax.set_title(title)
    ax.set_xlabel("d_k")
    ax.set_ylabel(ylabel)
    ax.legend()


def dk_figure(words, softmax, query="it", samples=1000):
    """Lesson 02's d_k figure, built once, and the function that puts in one d_k's numbers.

    Left: ``samples`` random scores ``q · k`` (entries N(0, 1)) before and after dividing
    by √d_k, as histograms on fixed axes. Right: the query ``query``'s softmax weights
    over the sentence, with and without the scaling; for each d_k, fresh embeddings of size
    d_model = d_k and fresh random d_k x d_k ``W_Q``, ``W_K`` (so which key wins changes with d_k).
    Under both, one key: orange without the scaling (a filled histogram), blue with it (the
    histogram's outline, drawn on top).

    Parameters
    ----------
    words : list of str
        The sentence's tokens (one contains ``query``).
    softmax : callable
        The softmax to use (the learner's, once it passed its check).

    Returns
    -------
    fig : matplotlib.figure.Figure
    update : callable d_k -> None
        Puts the numbers for one d_k into the figure (fixed seeds: the same picture
        for the same d_k).
    animated : list of artists
        Everything ``update`` changes (for :func:`helpers.widgets.live_figure`).
    """
    from matplotlib.figure import Figure
    from matplotlib.legend_handler import HandlerTuple

    n, it = len(words), words.index(query)
    bins = np.linspace(-80, 80, 81)                 # fixed axes: you see the spread change
    x = np.arange(n)
    title_size = 10                                 # both panels' titles (the right one has 2 lines)
    fig = Figure(figsize=(11, 4.3))
    ax1, ax2 = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.3, top=0.865, wspace=0.16)
    # Raw: a filled histogram; scaled: its outline, on top. Where they overlap, each keeps its
    # own colour (two translucent fills would mix into a third colour the key does not show).
    hist_raw = ax1.stairs(np.zeros(80), bins, fill=True, color=VERMILLION, zorder=1)
    hist_scaled = ax1.stairs(np.zeros(80), bins, fill=False, color=BLUE, linewidth=2, zorder=2)
    ax1.set_ylim(0, 0.8)
    ax1.set_xlabel("score (raw scores beyond ±80 are piled up at the edges)")
    ax1.set_ylabel(f"fraction of {samples} random scores")
    bars_raw = ax2.bar(x - 0.2, np.zeros(n), width=0.4, color=VERMILLION)
    bars_scaled = ax2.bar(x + 0.2, np.zeros(n), width=0.4, color=BLUE)
    ax2.set_xticks(x, labels=words, rotation=45, ha="right")
    ax2.set_ylim(0, 1.05)
    ax2.set_xlabel("key token j")
    ax2.set_ylabel("attention weight")
    # One key for both panels, under them: a one-hot bar reaches the top of the axes, so no
    # place inside them is free at every d_k. Each entry shows the histogram's and the bar's colour.
    fig.legend([(hist_raw, bars_raw[0]), (hist_scaled, bars_scaled[0])],
               ["no scaling: q · k and softmax(q · k)",
                "divided by √d_k: q · k / √d_k and softmax(q · k / √d_k)"],
               handler_map={tuple: HandlerTuple(ndivide=None, pad=0)},
               loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=2, frameon=False)

    numbers = {}                                    # d_k -> (dots, s): each d_k drawn once

    def scores(d_k):
        if d_k not in numbers:
            rng = np.random.default_rng(d_k)
            dots = np.sum(rng.standard_normal((samples, d_k)) * rng.standard_normal((samples, d_k)),
                          axis=1)                                           # (samples,)
            X = data.embed(words, d_model=d_k)                              # (n, d_k)
            q = X[it] @ data.weight_matrix(d_k, d_k, seed=1)                # (d_k,)
            numbers[d_k] = dots, X @ data.weight_matrix(d_k, d_k, seed=2) @ q   # (n,): q · k_j
        return numbers[d_k]

    def update(d_k):
        dots, s = scores(d_k)
        hist_raw.set_data(np.histogram(np.clip(dots, -79.9, 79.9), bins)[0] / samples)
        scaled = np.histogram(dots / np.sqrt(d_k), bins)[0] / samples
        hist_scaled.set_data(np.where(scaled > 0, scaled, np.nan))   # no outline along empty bins
        ax1.set_title(f"{samples} random scores, d_k = {d_k}: std {dots.std():.1f} raw, "
                      f"{(dots / np.sqrt(d_k)).std():.1f} scaled", fontsize=title_size)
        ax2.set_title(f"Weights of the query '{query}' over the {n} keys, d_k = {d_k}\n"
                      f"(fresh embeddings of size d_model = d_k for each d_k)", fontsize=title_size)
        for bar, w in zip(bars_raw, softmax(s)):
            bar.set_height(w)
        for bar, w in zip(bars_scaled, softmax(s / np.sqrt(d_k))):
            bar.set_height(w)

    animated = [hist_raw, hist_scaled, ax1.title, *bars_raw, *bars_scaled, ax2.title]
    return fig, update, animated


def dk_slider(value=64, lo=1, hi=512, description="d_k"):
    """A slider over the key size d_k = lo, 2*lo, ..., hi (powers of two; lesson 02)."""
    options = powers_of_two(lo, hi)
    if value not in options:
        raise ValueError(f"dk_slider: value={value!r} is not a power of two between {lo} and {hi}; "
                         f"choose one of {options}")
    return choice_slider(options, value, description)


def dk_explorer(words, softmax, value=64, query="it"):
    """Lesson 02's d_k slider: random scores and one query's weights, with and without √d_k.

    One call in the lesson; the figure (:func:`dk_figure`) is built once and
    each step only changes its numbers (see :func:`helpers.widgets.live_figure`).

    Parameters
    ----------
    words : list of str
        The sentence's tokens.
    softmax : callable
        The softmax to use (the learner's, once it passed its check).
    value : int
        The d_k shown first (a power of two from 1 to 512).

    Returns
    -------
    ipywidgets.VBox
        The slider and the picture: leave it last in the cell to show it.
    """
    fig, update, animated = dk_figure(words, softmax, query=query)
    box, _ = live_figure(fig, update, animated=animated, d_k=dk_slider(value=value))
    return box
