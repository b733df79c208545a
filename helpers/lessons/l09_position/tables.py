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
    str: the rows; the mean over seeds at shift 0 and how often learned is above the others;
    RoPE's largest loss against shift 0; sinusoidal's best seed at each shift, against ``none``.
    """
    shifts = sorted(next(iter(by_seed.values()))[0])
    count = len(by_seed["rope"])
    lines = [f"held-out accuracy, one row per seed (0-{count - 1}):  " + "  ".join(f"s={s}" for s in shifts)]
    for position, seeds in by_seed.items():
        for seed, accuracy in enumerate(seeds):
            lines.append(f"{position:>10} seed {seed}:  " + "  ".join(f"{accuracy[s]:.3f}" for s in shifts))
    at_0 = {position: np.array([seed[0] for seed in seeds]) for position, seeds in by_seed.items()}
    lines.append(f"s = 0, mean of {count} seeds: "
                 + ", ".join(f"{position} {values.mean():.3f}" for position, values in at_0.items())
                 + "; learned above " + " and ".join(
                     f"{other} in {int(np.sum(at_0['learned'] > at_0[other]))} of {count}"
                     for other in ("rope", "sinusoidal")))
    lost = [seeds[0] - min(seeds[s] for s in shifts) for seeds in by_seed["rope"]]
    lines.append(f"rope, largest loss against s = 0 over the shifts: {_span(lost, 3)} ({count} seeds)")
    best = [max(seeds[s] for seeds in by_seed["sinusoidal"]) for s in shifts]
    lines.append("sinusoidal, best seed at each shift: " + "  ".join(f"s={s}: {b:.3f}" for s, b in zip(shifts, best))
                 + f"   (no position, seed 0: {none:.3f})")
    return "\n".join(lines)


#: The columns of :func:`where_the_weight_goes`: header, then the key in ``weight_by_offset``'s dicts.
_WEIGHT_COLUMNS = (("right key", "target"), ("other seen", "other_trained"), ("unseen", "untrained"),
                   ("one seen key", "per_key_trained"), ("one unseen key", "per_key_untrained"),
                   ("right key if unseen = seen", "target_if_untrained_as_trained"),
                   ("right key among seen", "target_among_trained"))


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
    scaling; then the sinusoidal models' right-key share among the seen offsets.
    """
    widths = [max(len(header), 11) for header, _ in _WEIGHT_COLUMNS]
    lines = [f"rope, ranges over {len(inside)} seeds; seen offsets: 0-15, unseen: above 15",
             "   positions  " + "  ".join(f"{header:>{w}}" for (header, _), w in zip(_WEIGHT_COLUMNS, widths))]
    for band in inside[0]:
        cells = [_span([seed[band][key] for seed in inside], 3 if key.startswith("per_key") else 2)
                 for _, key in _WEIGHT_COLUMNS]
        lines.append(f"   {band:>9}  " + "  ".join(f"{cell:>{w}}" for cell, w in zip(cells, widths)))
    last = list(inside[0])[-1]
    lines.append(f"rope, positions {last}, each seed: one unseen key's weight over one seen key's: "
                 + ", ".join(f"{seed[last]['per_key_untrained'] / seed[last]['per_key_trained']:.2f}"
                             for seed in inside))
    lines.append(f"rope, positions {last}, each seed: accuracy as measured -> with log-n scaling: "
                 + ", ".join(f"{a[last]['accuracy']:.2f} -> {s[last]:.2f}" for a, s in zip(accuracy, scaled)))
    lines.append("sinusoidal, the right key's share among the seen offsets: "
                 + ", ".join(f"{band} {_span([seed[band]['target_among_trained'] for seed in inside_sinusoidal])}"
                             for band in inside_sinusoidal[0]))
    return "\n".join(lines)
