"""Lesson 12: what the trained heads do, measured over many positions, and tested by ablation.

- :func:`head_view`: lesson 10's head view (lesson 08's ``sentence_weights`` picture) of one
  character of one line: where it looks, in every block and head;
- :func:`head_targets`: for every head, the mean attention weight on a named position (the
  previous character, the one before it, itself, the start of the current word, the space or
  line break just before that word, the start of the line), over every held-out query where
  that position is defined (the word's targets only where the word began 3 or more characters
  back); beside it, what uniform attention would give;
- :func:`ablation`: the held-out loss with one head's output removed, head by head;
- :func:`induction`: on random letters repeated once, each head's weight on the character
  after the earlier copy of the current one (an induction head's target, Olsson et al. 2022),
  and the loss on the first copy and the second.
"""

import numpy as np

from ...threads import blas_threads
from . import model, text

TARGETS = ("previous character", "two back", "itself", "start of the word", "space before the word",
           "start of the line")


def _targets(chars):
    """For each position i of one window: the position of each target, or -1 where it does not count.

    A word starts after a space or a line break; a line starts after a line break. The start of
    the word counts only inside a word and when it is at least 3 before i (so that it is none of
    i, i - 1 and i - 2); the space before the word (the space or line break just before its
    start, the word's boundary) on the same queries; the start of the line likewise, and only
    after the line's first word (so that it is not the start of the word as well).
    """
    T = len(chars)
    out = np.full((len(TARGETS), T), -1)
    word = line = -1                                   # the last start seen (-1: none in the window)
    for i, c in enumerate(chars):
        if i > 0 and chars[i - 1] in " \n":
            word = i
        if i > 0 and chars[i - 1] == "\n":
            line = i
        if i >= 1:
            out[0, i] = i - 1
        if i >= 2:
            out[1, i] = i - 2
        out[2, i] = i
        inside = c not in " \n"
        if inside and 0 <= word <= i - 3:
            out[3, i] = word
            out[4, i] = word - 1
        if 0 <= line <= i - 3 and line < word:
            out[5, i] = line
    return out


def head_targets(params, config, windows):
    """Mean attention weight each head puts on each target, and what uniform attention gives.

    Parameters
    ----------
    windows : int array (N, T): token ids (e.g. held-out windows' inputs)

    Returns
    -------
    scores : dict target -> ndarray (num_layers, num_heads)
    uniform : dict target -> float: the mean of 1 / (i + 1) over the same queries
    counts : dict target -> int: how many queries each mean is over
    """
    with blas_threads():
        _, maps = model.forward(params, config, windows, return_weights=True)
    W = np.stack(maps, axis=1)                                      # (N, L, h, T, T)
    sums = {t: np.zeros(W.shape[1:3]) for t in TARGETS}
    uniform = {t: 0.0 for t in TARGETS}
    counts = {t: 0 for t in TARGETS}
    for n, ids in enumerate(windows):
        where = _targets(text.decode(ids, config))
        for t, name in enumerate(TARGETS):
            rows = np.flatnonzero(where[t] >= 0)
            sums[name] += W[n][:, :, rows, where[t, rows]].sum(axis=-1)
            uniform[name] += float(np.sum(1.0 / (rows + 1)))
            counts[name] += len(rows)
    return ({t: sums[t] / counts[t] for t in TARGETS}, {t: uniform[t] / counts[t] for t in TARGETS},
            counts)


def ablation(params, config, windows):
    """Held-out loss (nats/char) with each head's output set to 0, one head at a time.

    Parameters
    ----------
    windows : int array (N, T + 1), e.g. held-out windows

    Returns
    -------
    base : float, the loss with every head
    losses : ndarray (num_layers, num_heads)
    """
    L, h = config["num_layers"], config["num_heads"]
    with blas_threads():
        base = model.loss_on(params, config, windows)
        losses = np.zeros((L, h))
        for l in range(L):
            for head in range(h):
                keep = np.ones((L, h))
                keep[l, head] = 0
                losses[l, head] = model.loss_on(params, config, windows, keep=keep)
    return base, losses


def repeated_letters(config, count=100, length=25, seed=0):
    """``count`` strings of ``length`` random lowercase letters, each written twice: ids (count, 2 length)."""
    rng = np.random.default_rng(seed)
    letters = text.encode("abcdefghijklmnopqrstuvwxyz", config)
    first = letters[rng.integers(0, 26, size=(count, length))]
    return np.concatenate([first, first], axis=1)


def induction(params, config, count=100, length=25, seed=0):
    """Each head's weight on an induction head's target, and the loss on each copy.

    On strings of random letters written twice, a query at position i of the second copy has
    its earlier copy at ``i - length``; an induction head looks at the character after it,
    ``i - length + 1`` (which is the character to predict).

    Returns
    -------
    to_next : ndarray (num_layers, num_heads), the mean weight on ``i - length + 1``
    uniform : float, what uniform attention would put there
    loss_first, loss_second : float, nats/char on the first copy (from its 2nd letter) and on the second
    """
    ids = repeated_letters(config, count, length, seed)
    with blas_threads():
        logits, maps = model.forward(params, config, ids[:, :-1], return_weights=True)
    W = np.stack(maps, axis=1)                                      # (N, L, h, T, T)
    rows = np.arange(length, 2 * length - 1)                        # queries in the second copy
    to_next = W[:, :, :, rows, rows - length + 1].mean(axis=(0, -1))
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    nll = -np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]   # (N, 2 length - 1)
    return (to_next, float(np.mean(1.0 / (rows + 1))), float(nll[:, :length - 1].mean()),
            float(nll[:, length - 1:].mean()))


# ------------------------------------------------------------------- figures
def head_view(params, config, line, position=None, title=None, min_label=0.1):
    """Where character ``position`` of ``line`` looks, in every block and head: one row each.

    Lesson 10's head view, for characters: one row per head, one column per character the
    query can see (the line up to and including ``position``; causal attention puts nothing
    after it), each cell coloured by its weight, weights of ``min_label`` or more written in it.
    ``position`` defaults to the last character. Returns the matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    from ... import plots

    ids = text.encode(line, config)
    position = len(ids) - 1 if position is None else int(position)
    _, maps = model.forward(params, config, ids[None], return_weights=True)
    rows = np.concatenate([w[0, :, position, :position + 1] for w in maps])   # (L h, position + 1)
    labels = [f"block {l}, head {h}" for l in range(1, len(maps) + 1)
              for h in range(1, config["num_heads"] + 1)]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.6))
    image = ax.imshow(rows, cmap=plots.SEQUENTIAL, vmin=0, vmax=1, aspect="auto")
    for (r, j), value in np.ndenumerate(rows):
        if value >= min_label:
            ax.text(j, r, f"{value:.2f}"[1:] if value < 1 else "1", ha="center", va="center",
                    fontsize=9, color="black" if value > 0.5 else "white")
    ax.add_patch(plt.Rectangle((position - 0.5, -0.5), 1, len(rows), fill=False, linewidth=2.5,
                               edgecolor=plots.ORANGE))
    ax.set_xticks(range(position + 1), labels=[{" ": "␣", "\n": "⏎"}.get(c, c) for c in line[:position + 1]],
                  fontsize=11, family="monospace")
    ax.tick_params(axis="x", length=0)
    ax.set_yticks(range(len(rows)), labels=labels, fontsize=10)
    fig.colorbar(image, ax=ax, fraction=0.03, pad=0.01, label="attention weight")
    ax.set_title(title or f"Where {line[position]!r} (character {position}) looks, in each head "
                 f"(weights of {min_label:.2f} or more written)", fontsize=11)
    ax.set_xlabel("the characters it can see (framed in orange: the query character)", fontsize=10)
    fig.tight_layout()
    return fig
