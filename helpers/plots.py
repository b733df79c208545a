"""Figures shared by the lessons: labelled heatmaps with colour-blind-safe colormaps.

Every figure gets a title and labelled axes. Two colormaps are used:
``SEQUENTIAL`` (viridis) for things that are >= 0, like attention weights, and
``DIVERGING`` (RdBu_r, a ColorBrewer map safe for colour-blind readers) for signed
values like embeddings and scores, centred on 0.
"""

import matplotlib.pyplot as plt
import numpy as np

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
