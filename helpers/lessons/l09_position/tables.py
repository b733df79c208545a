"""Lesson 09's printed tables: accuracy by shift over seeds, and where RoPE's two-back weight goes.

Each function takes the results the lesson computed and returns the text it prints (nothing is
trained or measured here), so that a notebook cell stays a few lines long.
"""

import numpy as np


def _span(values, digits=2):
    """``"min-max"`` of ``values`` to ``digits`` decimals (``"-"`` if every value is NaN)."""
    values = [v for v in values if not np.isnan(v)]
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}" if values else "-"


def by_shift(by_seed, none):
    """The held-out accuracy at every shift, one row per seed, and the comparisons the lesson reads off it.

    Parameters
    ----------
    by_seed : dict of position -> list (one per seed, seed 0 first) of dicts shift -> accuracy
        Must hold ``"learned"``, ``"sinusoidal"`` and ``"rope"``.
    none : float, the accuracy of the model with no position (shift-invariant)

    Returns
    -------
    str: the rows, then sinusoidal's best seed at each shift and ``none`` under them; the mean
    over seeds at shift 0 and how often learned is above the others; RoPE's largest loss
    against shift 0. Every line fits in 100 characters.
    """
    shifts = sorted(next(iter(by_seed.values()))[0])
    count = len(by_seed["rope"])
    lines = [f"held-out accuracy, one row per seed (0-{count - 1}), by shift s:",
             " " * 20 + "  ".join(f"{f's={s}':<5}" for s in shifts)]
    for position, seeds in by_seed.items():
        for seed, accuracy in enumerate(seeds):
            lines.append(f"{position:>10} seed {seed}:  " + "  ".join(f"{accuracy[s]:.3f}" for s in shifts))
    at_0 = {position: np.array([seed[0] for seed in seeds]) for position, seeds in by_seed.items()}
    best = [max(seeds[s] for seeds in by_seed["sinusoidal"]) for s in shifts]
    lines.append(f"{'sinusoidal, best':>17}:  " + "  ".join(f"{b:.3f}" for b in best)
                 + "   (best seed at each shift)")
    lines.append(f"{'none, seed 0':>17}:  {none:.3f} at every shift (no position, no mask)")
    lines.append(f"s = 0, mean of {count} seeds: "
                 + ", ".join(f"{position} {values.mean():.3f}" for position, values in at_0.items()))
    lines.append("learned above " + " and above ".join(
        f"{other} in {int(np.sum(at_0['learned'] > at_0[other]))} of {count} seeds"
        for other in ("rope", "sinusoidal")))
    lost = [seeds[0] - min(seeds[s] for s in shifts) for seeds in by_seed["rope"]]
    lines.append(f"rope, largest loss against s = 0 over the shifts: {_span(lost, 3)} ({count} seeds)")
    return "\n".join(lines)


#: The columns of :func:`where_the_weight_goes`: a header on two lines, then the key in
#: ``weight_by_offset``'s dicts.
_WEIGHT_COLUMNS = ((("right", "key"), "target"), (("other", "seen"), "other_trained"),
                   (("unseen", ""), "untrained"), (("one seen", "key / right"), "per_key_trained"),
                   (("one unseen", "key / right"), "per_key_untrained"),
                   (("right key if", "unseen=seen"), "target_if_untrained_as_trained"),
                   (("right key", "among seen"), "target_among_trained"))


def where_the_weight_goes(inside, accuracy, scaled, inside_sinusoidal):
    """Where the RoPE two-back models' queries put their weight, band by band, ranges over seeds.

    Parameters
    ----------
    inside : list (one per seed) of ``two_back.weight_by_offset`` results for the RoPE models
    accuracy : list (one per seed) of ``two_back.by_band`` results for the same models
    scaled : list (one per seed) of ``two_back.by_band_scaled`` results for the same models
    inside_sinusoidal : list (one per seed) of ``two_back.weight_by_offset`` results, sinusoidal

    Returns
    -------
    str: one row per band (the ranges over seeds of each column of :data:`_WEIGHT_COLUMNS`:
    "one seen key" and "one unseen key" are relative to the right key's weight); then, for the
    last band, each seed's unseen-over-seen ratio and its accuracy with and without log-n
    scaling; then the sinusoidal models' right-key share among the seen offsets. Every line
    fits in 100 characters (for the lesson's four bands and five seeds).
    """
    bands = list(inside[0])
    cells = {band: [_span([seed[band][key] for seed in inside], 3 if key.startswith("per_key") else 2)
                    for _, key in _WEIGHT_COLUMNS] for band in bands}
    widths = [max(len(header[0]), len(header[1]), *(len(cells[band][j]) for band in bands))
              for j, (header, _) in enumerate(_WEIGHT_COLUMNS)]
    label = max(len("positions"), *(len(band) for band in bands))
    lines = [f"rope, ranges over {len(inside)} seeds; seen offsets: 0-15, unseen: above 15;",
             "'key / right': the weight of one such key over the right key's",
             " " * label + "".join(f"  {header[0]:>{w}}" for (header, _), w in zip(_WEIGHT_COLUMNS, widths)),
             f"{'positions':>{label}}" + "".join(f"  {header[1]:>{w}}"
                                                 for (header, _), w in zip(_WEIGHT_COLUMNS, widths))]
    for band in bands:
        lines.append(f"{band:>{label}}" + "".join(f"  {cell:>{w}}" for cell, w in zip(cells[band], widths)))
    last = bands[-1]
    lines.append(f"rope, positions {last}, each seed: one unseen key's weight over one seen key's:")
    lines.append("   " + ", ".join(f"{seed[last]['per_key_untrained'] / seed[last]['per_key_trained']:.2f}"
                             for seed in inside))
    lines.append(f"rope, positions {last}, each seed: accuracy as measured -> with log-n scaling:")
    lines.append("   " + ", ".join(f"{a[last]['accuracy']:.2f} -> {s[last]:.2f}"
                                   for a, s in zip(accuracy, scaled)))
    lines.append("sinusoidal, the right key's share among the seen offsets, by band of positions:")
    lines.append("   " + ", ".join(
        f"{band} {_span([seed[band]['target_among_trained'] for seed in inside_sinusoidal])}"
        for band in inside_sinusoidal[0]))
    return "\n".join(lines)
