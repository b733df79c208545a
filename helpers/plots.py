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
#: Marker and colour of each measured line in a figure of lessons 02 and 05, in order.
STYLES = [("o-", VERMILLION), ("s-", BLUE), ("^-", PURPLE), ("D-", GREEN)]

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
