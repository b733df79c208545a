"""Lesson 09's figures: sinusoidal table, offset grids, RoPE's pairs turning, accuracy by shift and by band.

Colour-blind-safe throughout: RdBu_r for signed values (:data:`helpers.plots.DIVERGING`)
and the Okabe-Ito palette for lines (:data:`helpers.plots.LINES`).
"""

import matplotlib.pyplot as plt
import numpy as np

from ...plots import BLACK, BLUE, DIVERGING, GREEN, GREY, LINES, SEQUENTIAL, VERMILLION, heatmap

#: One colour, marker and line style per way of encoding position, the same in every figure.
STYLE = {"learned": (BLUE, "o", "-"), "sinusoidal": (VERMILLION, "s", "--"), "rope": (GREEN, "^", "-."),
         "none": (BLACK, "", ":")}


def _style(label, j):
    """``(colour, marker, linestyle)`` of a series: its encoding's (:data:`STYLE`), else line colour j."""
    key = label.split(" ")[0]
    return STYLE.get(key, (LINES[j % len(LINES)], "o", "-"))


def encoding_table(PE, *, title="The sinusoidal encoding: one row per position"):
    """The table ``PE (n, d_model)`` as a signed heatmap: positions down, columns across."""
    fig, ax = plt.subplots(figsize=(9, 4.2))
    image = heatmap(PE, ax=ax, cmap=DIVERGING, vmin=-1, vmax=1, annotate=False, title=title,
                    xlabel="column (2i: sin, 2i + 1: cos of hand i; i = 0 turns fastest)",
                    ylabel="position p")
    image.colorbar.set_label("entry (sine or cosine)")
    fig.tight_layout()
    return fig


def offset_grids(grids, titles, *, suptitle="", signed=None, label="dot product"):
    """Heatmaps of several ``(n, n)`` grids of dot products, side by side (query row, key column).

    ``signed`` : list of bool, one per grid (default: whether the grid has a negative entry).
    A signed grid gets a diverging map centred on 0; a positive one a sequential map over its
    own range, so that its structure is not squeezed into half of a diverging map.
    """
    fig, axes = plt.subplots(1, len(grids), figsize=(4.8 * len(grids), 4.2))
    signed = [bool(np.min(G) < 0) for G in grids] if signed is None else signed
    for ax, G, title, sign in zip(np.atleast_1d(axes), grids, titles, signed):
        image = heatmap(G, ax=ax, cmap=DIVERGING if sign else SEQUENTIAL, annotate=False, title=title,
                        xlabel="position of the key", ylabel="position of the query")
        image.colorbar.set_label(label)
    fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def turning_pairs(pair, angles, *, title="RoPE turns each pair of coordinates by its own angle"):
    """One 2-D pair rotated to each position, for each frequency: arrows on a circle.

    Parameters
    ----------
    pair : array-like, shape (2,)
        The pair of coordinates (the same at every position, to show the turning only).
    angles : dict of label -> ndarray (positions,)
        The angle at each position, for each pair index.
    """
    fig, axes = plt.subplots(1, len(angles), figsize=(3.6 * len(angles), 3.6))
    radius = float(np.hypot(*pair))
    for ax, (label, theta) in zip(np.atleast_1d(axes), angles.items()):
        circle = np.linspace(0, 2 * np.pi, 200)
        ax.plot(radius * np.cos(circle), radius * np.sin(circle), color="0.8", linewidth=1)
        colours = plt.get_cmap("viridis")(np.linspace(0, 0.7, len(theta)))   # no pale yellow
        for p, (t, colour) in enumerate(zip(theta, colours)):
            x = pair[0] * np.cos(t) - pair[1] * np.sin(t)
            y = pair[0] * np.sin(t) + pair[1] * np.cos(t)
            ax.annotate("", xy=(x, y), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=colour))
            ax.text((1.1 + 0.06 * (p % 2)) * x, (1.1 + 0.06 * (p % 2)) * y, str(p), ha="center",
                    va="center", fontsize=9, color=BLACK)
        ax.set_aspect("equal")
        ax.set_xlim(-1.3 * radius, 1.3 * radius)
        ax.set_ylim(-1.3 * radius, 1.3 * radius)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("coordinate 2i")
        ax.set_ylabel("coordinate 2i + 1")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _measured_runs(shifts):
    """``shifts`` (sorted) cut into runs of consecutive whole numbers.

    ``[0, 1, 2, 4, 8]`` -> ``[[0, 1, 2], [4], [8]]``.
    """
    runs = [[shifts[0]]]
    for s in shifts[1:]:
        if s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return runs


#: Width, on the x axis, of a run of shifts that were not measured (neighbouring shifts are 1 apart).
GAP_WIDTH = 1.5


def _compressed(shifts):
    """x position of each shift (sorted): 1 apart, and :data:`GAP_WIDTH` across shifts not measured.

    ``[0, 1, 2, 4, 8]`` -> ``{0: 0, 1: 1, 2: 2, 4: 3.5, 8: 5}``: the axis is broken at each gap,
    so that shifts left out take no more room than one step.
    """
    x = {shifts[0]: 0.0}
    for left, right in zip(shifts, shifts[1:]):
        x[right] = x[left] + (1.0 if right == left + 1 else GAP_WIDTH)
    return x


def accuracy_by_shift(results, *, baseline=None,
                      title="Held-out accuracy when every sentence moves right by s words"):
    """Accuracy against the shift, one line per way of encoding position.

    A line joins two shifts only when no shift between them was left out: across shifts
    that were not measured there are markers only, and the axis is broken there (a narrow
    shaded band saying which shifts were left out; :func:`_compressed`).

    Parameters
    ----------
    results : dict of label -> list of dicts (one per seed) shift -> accuracy
        Each seed is drawn faint; the median over seeds bold, with markers.
    baseline : (label, accuracy), optional
        A model whose accuracy does not depend on the shift (by construction), drawn as a flat line.
    """
    fig, ax = plt.subplots(figsize=(10, 4))
    for j, (label, runs) in enumerate(results.items()):
        colour, marker, linestyle = _style(label, j)
        shifts = sorted(runs[0])
        at = _compressed(shifts)
        table = {s: np.array([run[s] for run in runs]) for s in shifts}     # shift -> (seeds,)
        for k, part in enumerate(_measured_runs(shifts)):
            for seed in range(len(runs)):
                ax.plot([at[s] for s in part], [table[s][seed] for s in part], color=colour, alpha=0.3,
                        linewidth=1, marker=marker, markersize=3)
            ax.plot([at[s] for s in part], [np.median(table[s]) for s in part], color=colour, linewidth=2.2,
                    marker=marker, linestyle=linestyle,
                    label=None if k else
                    f"{label} (median of {len(runs)} seed{'s' if len(runs) > 1 else ''})")
    gaps = [(left, right) for left, right in zip(shifts, shifts[1:]) if right > left + 1]
    for g, (left, right) in enumerate(gaps):
        middle = (at[left] + at[right]) / 2
        ax.axvspan(middle - 0.3, middle + 0.3, color=GREY, alpha=0.15, linewidth=0,
                   label=None if g else "shifts not measured (no line across)")
        skipped = f"{left + 1}" if right == left + 2 else f"{left + 1}-{right - 1}"
        ax.text(middle, 0.72, f"s = {skipped}\nnot\nmeasured", ha="center", va="center", fontsize=8,
                color=BLACK, transform=ax.get_xaxis_transform())
    if baseline is not None:
        ax.axhline(baseline[1], color=STYLE["none"][0], linestyle=STYLE["none"][2], linewidth=1.4,
                   label=baseline[0])
    ax.plot([], [], color=GREY, alpha=0.6, linewidth=1, label="faint lines: one seed each")
    ax.set_xticks([at[s] for s in shifts], labels=[str(s) for s in shifts])
    ax.set_ylim(-0.03, 1.03)
    return _finish(fig, ax, "shift s (filler words moved before the sentence)",
                   "held-out accuracy (both answers right)", title)


def _finish(fig, ax, xlabel, ylabel, title, legend_below=None):
    """Label an accuracy figure, its legend clear of the data (outside on the right, or below), lay it out.

    ``legend_below``: a list of the legend's handles, in order, to draw it under the axes in two
    columns (the axes then keep the whole width of the figure); None: outside on the right.
    """
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if legend_below:
        ax.legend(handles=legend_below, fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2)
    else:
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


#: What a band beyond the trained length holds that training never did, by way of encoding position.
UNSEEN_BEYOND_TRAINING = {"sinusoidal": "position vectors, offsets > 15, > 16 keys",
                          "rope": "offsets > 15, > 16 keys (no position vectors)"}


def accuracy_by_band(results, *, chance, title=""):
    """Grouped bars by band of positions: the median over seeds, a dot per seed, a chance line.

    Parameters
    ----------
    results : dict of label -> list (one per seed) of dicts band -> {"accuracy": float, ...}
        (``two_back.by_band``'s results; the first band is the trained positions).
    chance : float, the accuracy of a guess
    """
    fig, ax = plt.subplots(figsize=(10, 5))
    bands = list(next(iter(results.values()))[0])
    width = 0.8 / len(results)
    hatches = {"sinusoidal": "//", "rope": ""}
    handles = []                                   # the legend's order: the bars, then the dots and chance
    for j, (label, seeds) in enumerate(results.items()):
        colour = _style(label, j)[0]
        x = np.arange(len(bands)) + (j - (len(results) - 1) / 2) * width
        table = np.array([[seed[band]["accuracy"] for band in bands] for seed in seeds])   # (seeds, bands)
        unseen = UNSEEN_BEYOND_TRAINING.get(label.split(" ")[0])
        handles.append(ax.bar(x, np.median(table, axis=0), width, color=colour, alpha=0.75,
                              hatch=hatches.get(label.split(" ")[0], ""), edgecolor="white",
                              label=f"{label} (median of {len(seeds)} seeds)"
                              + (f"\nnew past position 15: {unseen}" if unseen else "")))
        for row in table:
            ax.plot(x, row, linestyle="none", marker="o", markersize=4, color=BLACK)
    handles += ax.plot([], [], linestyle="none", marker="o", markersize=4, color=BLACK, label="one seed")
    handles.append(ax.axhline(chance, color=GREY, linestyle=":", linewidth=1.5,
                              label=f"chance ({chance:.3g})"))
    ax.set_xticks(range(len(bands)),
                  labels=[f"{band}" + ("\n(trained length)" if i == 0 else "\n(beyond it)")
                          for i, band in enumerate(bands)])
    ax.set_ylim(0, 1.05)
    return _finish(fig, ax, "positions scored", "accuracy (token two back)", title, legend_below=handles)
