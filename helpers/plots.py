"""Figures shared by the lessons: labelled heatmaps with colour-blind-safe colormaps.

Every figure gets a title and labelled axes. Two colormaps are used:
``SEQUENTIAL`` (viridis) for things that are >= 0, like attention weights, and
``DIVERGING`` (RdBu_r, a ColorBrewer map safe for colour-blind readers) for signed
values like embeddings and scores, centred on 0.
"""

import matplotlib.pyplot as plt
import numpy as np

# ----------------------------------------------------------------- colours
#: The Okabe-Ito palette (Okabe & Ito, 2008), in its standard order: eight colours that stay
#: distinguishable with every common colour-vision deficiency. The course's one palette.
OKABE_ITO = ["#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"]
BLACK, ORANGE, SKY_BLUE, GREEN, YELLOW, BLUE, VERMILLION, PURPLE = OKABE_ITO
#: Guide lines and reference slopes (a neutral grey, not one of the eight).
GREY = "#999999"
#: The colours of a figure's series (lines, bars), in the order the lessons use them.
LINES = [BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY_BLUE]

SEQUENTIAL = "viridis"
DIVERGING = "RdBu_r"


def heatmap(M, row_labels=None, col_labels=None, *, ax=None, title="", xlabel="", ylabel="",
            cmap=None, vmin=None, vmax=None, annotate=None, colorbar=True, fmt=".2f"):
    """Draw a matrix as a labelled heatmap.

    Parameters
    ----------
    M : ndarray, shape (rows, cols)
    row_labels, col_labels : list of str, optional
        Tick labels (e.g. the tokens).
    ax : matplotlib Axes, optional
        Where to draw; a new figure if omitted.
    cmap : str, optional
        Defaults to DIVERGING (centred on 0) if M has negative entries, else SEQUENTIAL.
    annotate : bool, optional
        Write each value in its cell; by default only for matrices up to 12 x 12.

    Returns
    -------
    matplotlib.image.AxesImage
    """
    M = np.asarray(M, dtype=float)
    if M.ndim != 2:
        raise ValueError(f"heatmap: M must be 2-D, got shape {M.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(1 + 0.5 * M.shape[1], 1 + 0.45 * M.shape[0]))
    signed = np.nanmin(M) < 0
    if cmap is None:
        cmap = DIVERGING if signed else SEQUENTIAL
    if cmap == DIVERGING and vmin is None and vmax is None:
        vmax = float(np.nanmax(np.abs(M))) or 1.0
        vmin = -vmax
    image = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    if row_labels is not None:
        ax.set_yticks(range(len(row_labels)), labels=row_labels)
    if col_labels is not None:
        long = max(len(str(label)) for label in col_labels) > 2   # words: tilt them to fit
        ax.set_xticks(range(len(col_labels)), labels=col_labels,
                      rotation=45 if long else 0, ha="right" if long else "center")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if annotate is None:
        annotate = max(M.shape) <= 12
    if annotate:
        lo, hi = image.get_clim()
        for (i, j), value in np.ndenumerate(M):
            # dark text on light cells, light text on dark ones
            shade = (value - lo) / (hi - lo) if hi > lo else 0.5
            light_cell = 0.25 < shade < 0.75 if cmap == DIVERGING else shade > 0.5
            ax.text(j, i, format(value, fmt), ha="center", va="center", fontsize=8,
                    color="black" if light_cell else "white")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return image


def head_grid(num_heads):
    """``(rows, cols)`` of the tiles :func:`head_maps` uses for ``num_heads`` maps.

    Up to 4 maps side by side; up to 8 heads in rows of 4; more in rows of 8.
    """
    if isinstance(num_heads, bool) or not isinstance(num_heads, (int, np.integer)) or num_heads < 1:
        raise ValueError(f"head_grid: num_heads must be a positive int, got {num_heads!r}")
    cols = min(int(num_heads), 4 if num_heads <= 8 else 8)
    return -(-int(num_heads) // cols), cols


def head_maps(weights, tokens=None, *, ax=None, title="", gap=1):
    """Draw every head's attention map as tiles of ONE image (fast for many heads).

    Parameters
    ----------
    weights : ndarray, shape (num_heads, n_q, n_k)
        One attention map per head, entries in [0, 1].
    tokens : list of str, optional
        Token labels; written on the axes of the outer tiles when there are at
        most 8 heads (beyond that the tiles are too small to read them).
    ax : matplotlib Axes, optional
        Where to draw; a new figure if omitted.
    gap : int
        Empty cells between tiles (drawn white); one more between rows of titled tiles.

    Returns
    -------
    matplotlib.image.AxesImage
        Its array is the mosaic: head k's map sits at tile ``divmod(k, cols)``
        (see :func:`head_grid`), the gaps are masked.
    """
    W = np.asarray(weights, dtype=float)
    if W.ndim != 3:
        raise ValueError(f"head_maps: weights must be (num_heads, n_q, n_k), got shape {W.shape}")
    h, n_q, n_k = W.shape
    if tokens is not None and (n_q != n_k or len(tokens) != n_q):
        raise ValueError(f"head_maps: {len(tokens)} tokens for maps of shape {(n_q, n_k)}")
    rows, cols = head_grid(h)
    row_gap = gap + 1 if h <= 16 else gap       # room for the "head k" titles
    mosaic = np.full((rows * (n_q + row_gap) - row_gap, cols * (n_k + gap) - gap), np.nan)
    for k in range(h):
        r, c = divmod(k, cols)
        top, left = r * (n_q + row_gap), c * (n_k + gap)
        mosaic[top:top + n_q, left:left + n_k] = W[k]
    if ax is None:
        _, ax = plt.subplots(figsize=(1.5 + 1.6 * cols, 0.8 + 1.6 * rows))
    cmap = plt.get_cmap(SEQUENTIAL).with_extremes(bad="white")
    image = ax.imshow(np.ma.masked_invalid(mosaic), cmap=cmap, vmin=0.0, vmax=1.0,
                      interpolation="nearest")
    # Text is what makes a figure slow to draw, so label sparingly: tile titles for up
    # to 16 heads (row titles beyond), token names only while the tiles are large. The
    # labels are plain texts, not tick labels, which cost about twice as much to draw.
    ax.set_xticks([])
    ax.set_yticks([])
    left_labels, bottom_labels = [], []
    if h <= 16:
        for k in range(h):
            r, c = divmod(k, cols)
            ax.text(c * (n_k + gap) + (n_k - 1) / 2, r * (n_q + row_gap) - 0.7, f"head {k}",
                    ha="center", va="bottom", fontsize=9 if h <= 8 else 7)
    else:
        left_labels = [(r * (n_q + row_gap) + (n_q - 1) / 2,
                        f"heads {r * cols}-{min(h, (r + 1) * cols) - 1}") for r in range(rows)]
    if tokens is not None and h <= 8:
        left_labels = [(r * (n_q + row_gap) + i, str(t)) for r in range(rows)
                       for i, t in enumerate(tokens)]
        x_tiles = cols if h <= 2 else 1     # beyond 2 heads, only the bottom-left tile
        bottom_labels = [(c * (n_k + gap) + j, str(t)) for c in range(x_tiles)
                         for j, t in enumerate(tokens)]
    for y, label in left_labels:
        ax.text(-0.8, y, label, ha="right", va="center", fontsize=7)
    for x, label in bottom_labels:
        ax.text(x, mosaic.shape[0] - 0.2, label, ha="center", va="top", fontsize=7, rotation=90)
    # keep the axis titles clear of those labels (about 4.5 points per character at size 7)
    ax.set_ylabel("query token i",
                  labelpad=6 + 4.5 * max([len(label) for _, label in left_labels], default=0))
    ax.set_xlabel("key token j (each tile: one head's map)",
                  labelpad=6 + 4.5 * max([len(label) for _, label in bottom_labels], default=0))
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(title, pad=14)
    ax.figure.colorbar(image, ax=ax, fraction=0.03, pad=0.02, ticks=[0, 0.5, 1], panchor=False,
                       label="attention weight")
    return image


def log_axes(ax, which="xy", xticks=None):
    """Put the x axis, the y axis or both of ``ax`` on a log scale, labelled with plain numbers.

    A power law is a straight line on log-log axes (``which="xy"``). Plain labels
    (``1, 2, 4, ..., 1024`` or ``0.001, 1, 1000``) read more easily than ``10^k``, and
    skipping the typeset labels and the minor ticks makes the figure faster to draw.

    Parameters
    ----------
    ax : matplotlib Axes
    which : "x", "y" or "xy"
        The axes to put on a log scale.
    xticks : sequence of numbers, optional
        Put the labelled x ticks exactly there (e.g. the sizes measured); by default
        matplotlib's decades. Only for a log x axis.
    """
    from matplotlib.ticker import FuncFormatter, NullLocator

    if which not in ("x", "y", "xy"):
        raise ValueError(f"log_axes: which must be 'x', 'y' or 'xy', got {which!r}")
    if xticks is not None and "x" not in which:
        raise ValueError(f"log_axes: xticks is for a log x axis, but which={which!r}")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    for name in which:
        (ax.set_xscale if name == "x" else ax.set_yscale)("log")
        axis = ax.xaxis if name == "x" else ax.yaxis
        axis.set_major_formatter(plain)
        axis.set_minor_locator(NullLocator())
    if xticks is not None:
        ax.xaxis.set_ticks(list(xticks))


# ----------------------------------------------------------------- the lessons' figures


def blend_plot(values, weights, tokens, query, ax=None):
    """Draw one query's output as a weighted average of two-dimensional values.

    Each token's value is a point, joined to the output (a star) by a line whose
    width grows with the token's weight. Tokens with the same value (the same word
    twice) share one point and one label, e.g. ``"the ×2 (0.08 each)"``; each label
    sits on the side of its point that faces away from the star, so none is hidden
    under it.

    Parameters
    ----------
    values : ndarray, shape (n, 2)
        One value per token.
    weights : ndarray, shape (n,)
        The query's attention weights (positive, summing to 1).
    tokens : list of str, length n
    query : str
        The query token's name, for the title and legend.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    if values.ndim != 2 or values.shape[1] != 2:
        raise ValueError(f"blend_plot: values must be (n, 2), got shape {values.shape}")
    if weights.shape != (len(values),) or len(tokens) != len(values):
        raise ValueError(f"blend_plot: {len(values)} values, weights of shape {weights.shape} "
                         f"and {len(tokens)} tokens do not match")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 5.8))
        fig.subplots_adjust(bottom=0.2, top=0.92)              # room for the legend below
    out = weights @ values                                     # (2,): the blend
    groups = {}                                                # point -> token indices
    for j, point in enumerate(map(tuple, np.round(values, 12))):
        groups.setdefault(point, []).append(j)
    span = np.ptp(np.vstack([values, out]), axis=0)
    span[span == 0] = 1.0
    labels = []                                                # (weight, text, preferred side)
    for members in groups.values():
        j = members[0]
        total = float(weights[members].sum())
        ax.plot([out[0], values[j, 0]], [out[1], values[j, 1]], color=BLUE,
                linewidth=0.5 + 12 * total, alpha=0.6)
        words = sorted({str(tokens[m]) for m in members}, key=[str(t) for t in tokens].index)
        text = "/".join(words) + (f" ×{len(members)} ({weights[j]:.2f} each)" if len(members) > 1
                                  else f" ({total:.2f})")
        away = (values[j] - out) / span                        # from the star, in axis units
        side = (1 if away[0] >= 0 else -1, 1 if away[1] >= 0 else -1)
        labels.append((total, ax.annotate(text, values[j], textcoords="offset points",
                                          xytext=(0, 0), fontsize=9), side))
    ax.scatter(values[:, 0], values[:, 1], color=BLUE, zorder=3,
               label="value v_j of each token (its weight)")
    ax.scatter(*out, marker="*", s=300, color=VERMILLION, zorder=4,
               label=f"output of '{query}' = Σ_j w_j v_j")
    ax.set_title(f"One blend: the output of '{query}' is a weighted average of the values")
    ax.set_xlabel("value dimension 0")
    ax.set_ylabel("value dimension 1")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=9)
    ax.margins(0.25)                                           # room for the labels
    ax.autoscale_view()                                        # final limits, then the labels
    _place_labels(ax, [(t, side) for _, t, side in sorted(labels, key=lambda x: -x[0])], out)
    return ax


def _place_labels(ax, labels, avoid, gap=6):
    """Put each annotation in a corner of its point where it overlaps no earlier label.

    ``labels`` is a list of (annotation, (sx, sy)): the preferred corner, +1/-1 on each
    axis. The four corners are tried, preferred first; a label also keeps clear of the
    point ``avoid`` (data coordinates, e.g. a marker drawn there) and inside the axes.
    Labels placed earlier win, so pass the most important first.
    """
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    cx, cy = ax.transData.transform(avoid)
    from matplotlib.transforms import Bbox
    taken = [Bbox([[cx - 12, cy - 12], [cx + 12, cy + 12]])]   # the star
    for text, (sx, sy) in labels:
        corners = [(sx, sy), (-sx, sy), (sx, -sy), (-sx, -sy)]
        for dx, dy in corners:
            text.set_ha("left" if dx > 0 else "right")
            text.set_va("bottom" if dy > 0 else "top")
            text.xyann = (gap * dx, gap * dy)
            box = text.get_window_extent(renderer)
            inside = (box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0
                      and box.y1 <= frame.y1)
            if inside and not any(box.overlaps(other) for other in taken):
                break
        else:                                                 # nowhere free: the preferred corner
            dx, dy = corners[0]
            text.set_ha("left" if dx > 0 else "right")
            text.set_va("bottom" if dy > 0 else "top")
            text.xyann = (gap * dx, gap * dy)
            box = text.get_window_extent(renderer)
        taken.append(box)


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
    over the sentence, with random ``W_Q``, ``W_K`` of size d_k, with and without the scaling.

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

    from . import data

    n, it = len(words), words.index(query)
    bins = np.linspace(-80, 80, 81)                 # fixed axes: you see the spread change
    x = np.arange(n)
    fig = Figure(figsize=(11, 3.9))
    ax1, ax2 = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.24, top=0.88, wspace=0.16)
    hist_raw = ax1.stairs(np.zeros(80), bins, fill=True, color=VERMILLION, alpha=0.6, label="raw q · k")
    hist_scaled = ax1.stairs(np.zeros(80), bins, fill=True, color=BLUE, alpha=0.6,
                             label="q · k / √d_k")
    ax1.set_ylim(0, 0.8)
    ax1.set_xlabel("score (raw scores beyond ±80 are piled up at the edges)")
    ax1.set_ylabel(f"fraction of {samples} random scores")
    ax1.legend(loc="upper left")
    bars_raw = ax2.bar(x - 0.2, np.zeros(n), width=0.4, color=VERMILLION, label="softmax(q · k)")
    bars_scaled = ax2.bar(x + 0.2, np.zeros(n), width=0.4, color=BLUE,
                          label="softmax(q · k / √d_k)")
    ax2.set_xticks(x, labels=words, rotation=45, ha="right")
    ax2.set_ylim(0, 1.05)
    ax2.set_title(f"Weights of the query '{query}' over the {n} keys")
    ax2.set_xlabel("key token j")
    ax2.set_ylabel("attention weight")
    ax2.legend(loc="upper left")

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
        hist_scaled.set_data(np.histogram(dots / np.sqrt(d_k), bins)[0] / samples)
        ax1.set_title(f"{samples} random scores, d_k = {d_k}: std {dots.std():.1f} raw, "
                      f"{(dots / np.sqrt(d_k)).std():.1f} scaled")
        for bar, w in zip(bars_raw, softmax(s)):
            bar.set_height(w)
        for bar, w in zip(bars_scaled, softmax(s / np.sqrt(d_k))):
            bar.set_height(w)

    animated = [hist_raw, hist_scaled, ax1.title, *bars_raw, *bars_scaled,
                ax1.get_legend(), ax2.get_legend()]                 # legends stay on top
    return fig, update, animated


def query_figure(Q, K, V, tokens, features, query, weights_of):
    """Lesson 03's "the cat sat" figure: one query's weights and output, for a query you set.

    Parameters
    ----------
    Q : ndarray, shape (n, d_k)
    K : ndarray, shape (n, d_k)
    V : ndarray, shape (n, d_v)
    tokens : list of str, length n
    features : list of str, length d_v
        The names of the value features.
    query : str
        The token whose query the sliders set.
    weights_of : callable (Q, K) -> (n, n) weights
        E.g. ``lambda Q, K: softmax(attention_scores(Q, K))`` (the learner's functions).

    Returns
    -------
    fig, update, animated
        ``update(*q)`` sets the query's entries (as many as d_k) and redraws its row;
        ``animated`` lists what ``update`` changes (see :func:`helpers.widgets.live_figure`).
    """
    from matplotlib.figure import Figure

    Q, K, V = (np.asarray(M, dtype=float) for M in (Q, K, V))
    row, n = tokens.index(query), len(tokens)
    fig = Figure(figsize=(10, 3.4))
    ax_w, ax_o = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.14, top=0.86, wspace=0.22)
    bars_w = ax_w.bar(range(n), np.zeros(n), color=BLUE)
    ax_w.set_xticks(range(n), labels=tokens)
    ax_w.set_ylim(0, 1.12)
    ax_w.set_xlabel("key token j")
    ax_w.set_ylabel(f"weight of {query} on token j")
    bars_o = ax_o.bar(range(len(features)), np.zeros(len(features)), color=VERMILLION)
    ax_o.set_xticks(range(len(features)), labels=features)
    ax_o.set_ylim(0, 1)
    ax_o.set_title(f"{query}'s output = weights @ V")
    ax_o.set_xlabel("value feature")
    ax_o.set_ylabel(f"value of {query}'s output")
    labels = [ax_w.text(j, 0, "", ha="center", va="bottom") for j in range(n)]

    def update(*q):
        Q_now = Q.copy()
        Q_now[row] = q
        w = np.asarray(weights_of(Q_now, K))[row]           # (n,): the query's weights
        for bar, label, value in zip(bars_w, labels, w):
            bar.set_height(value)
            label.set_y(value)
            label.set_text(f"{value:.2f}")
        for bar, value in zip(bars_o, w @ V):               # (d_v,): its output
            bar.set_height(value)
        ax_w.set_title(f"{query}'s weights, query q_{query} = "
                       f"[{', '.join(f'{v:g}' for v in q)}]")

    return fig, update, [*bars_w, *labels, *bars_o, ax_w.title]
