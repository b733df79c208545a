"""Lesson 09 exercises: ``sinusoidal_encoding``, ``rope``, ``rotary_attention``, ``rope_backward``.

How the cases make each known mistake show, in the order a check meets them:

sinusoidal_encoding
    the first case has 6 positions and ``d_model = 8`` at the default base: sin and cos
    swapped, the exponent ``i/d`` (pair index) or ``4i/d`` instead of ``2i/d``, the column index
    ``j/d`` (which differs on the cos columns only), positions counted from 1, the
    split-halves layout (all sines, then all cosines), the angle multiplied instead of
    divided and a transposed table all differ there, and from each other. The second
    case has ``base=50`` (a function that ignores ``base`` shows; not 100, where the exponent
    ``4i/d`` gives exactly base 10000's angles). ``d_model >= 4``
    everywhere but one case (with two columns the two layouts coincide). An integer table
    and a float32 one (right, or in split halves) are named by their dtype. Then sizes that
    repeat the first case's: the same n and d_model with another base (a table kept from an
    earlier call by size only shows as "base is ignored"), the same d_model with more rows (a
    table kept by d_model), and a long table (1010 rows, as the lesson's next cell; hidden:
    5001 to 6000, beyond the Annotated Transformer's max_len of 5000), where a table
    precomputed for a maximum length fails.
rope
    the first case has consecutive positions 0..n-1; the second has positions out of
    order and with gaps (a function that ignores ``positions`` and uses 0..n-1 shows
    there), then ``base=50``, a batch of heads ``(h, n, d)``, ``d = 2``. The angle's
    sign, the split-halves pairs (the other convention), ``i/d``, positions counted from
    1 and a rotation that computes its second coordinate from the already-rotated first
    all differ on the first case, and from each other (``d >= 4``).
    Then positions as a Python list, a head axis, negative positions (a table of angles indexed
    by position reads them from its end: named for the usual table sizes), positions far along
    (10 000 visible, 10 001 to 100 000 hidden: a table for positions 0 .. max_len raises), two
    leading axes ``(B, h, n, d)``, and (hidden) a table longer than any visible one. The exponent
    ``4i/d`` and cos and sin swapped inside the rotation differ on the first case too; so do
    split-halves pairs computed with float32 angle tables (torch's default), named by two
    simulations of such tables (a float32 answer is float32-level off the float64 mistake, which
    the comparison would not call the same). A label says what its case needs (a list is not
    an array, negative and far positions are allowed, the pairs are on the last axis), so that
    an error raised by the learner's own code on that case is explained by its label.
rotary_attention
    the first case has positions with gaps, so a function that numbers the rows 0..n-1
    itself differs there (RoPE depends on offsets only, so consecutive positions, however
    far along, cannot show it). ``d_v`` is even in the first cases so a function that
    rotates V too returns a value (wrong) instead of raising; rotating only q, or only k,
    differs as well. The second case has a causal mask (a function that does not pass the
    mask on shows there), then positions as a list, two leading axes, a fully masked row,
    negative positions as a tuple, and (hidden) a long sequence.
rope_backward
    the forward rotation instead of its inverse, ``d_out`` returned unrotated, the
    split-halves pairs and ``-rope(d_out)`` all differ on the first case; the second has
    ``base=100`` (base not passed on); then positions as a list and as a tuple (``-positions``
    of a list raises), two leading axes and negative positions.

Tolerances: ``rtol=1e-6, atol=1e-10``: any order of the same operations agrees to about 1e-15.
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import sizer

LESSON = "09_position"


# ------------------------------------------------------------------ sinusoidal_encoding
#: What a case's label adds when the case is there for a reason a learner's code may trip on.
_WHY = {"again": " (n and d_model as in the first case, another base: a table kept from an earlier call "
                 "cannot be reused)",
        "more": " (d_model as in the first case, more positions: n can be any whole number, and a table "
                "kept from an earlier call cannot be reused)",
        "long": " (a long table, as the cell after the check builds: n can be any whole number)",
        "longer": " (longer than any table prepared in advance: n can be any whole number)"}


def make_sinusoidal_cases(rng, hidden):
    """A table kept from an earlier call shows on the cases that repeat a size: "again" (another
    base: a table cached by size only) and "more" (more rows: a table cached by d_model only);
    one precomputed for a maximum length shows on "long" (visible) and "longer" (hidden, beyond
    5000, the Annotated Transformer's max_len)."""
    specs = [(6, 8, None, ""), (5, 4, 50.0, ""), (3, 12, None, ""), (1, 2, None, ""), (6, 8, 10.0, "again"),
             (40, 8, None, "more"), (1010, 32, None, "long")]
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        even = lambda low, high: 2 * int(rng.integers(low, high + 1))
        size = sizer(rng)
        n, d = size(4, 9), even(3, 6)
        specs = [(n, d, None, ""), (size(3, 7), even(2, 4), float(rng.choice([50.0, 300.0])), ""),
                 (size(2, 5), even(5, 8), None, ""), (1, 2, None, ""), (n, d, 10.0, "again"),
                 (size(50, 80), d, None, "more"), (size(5001, 6000), even(2, 4), None, "longer")]
    return [Case((n, d), {} if base is None else {"base": base},
                 label=f"n={n}, d_model={d}" + ("" if base is None else f", base={base}") + _WHY.get(why, ""))
            for n, d, base, why in specs]


def _table(n, d_model, base=10000.0, *, swap=False, exponent="2i", start=0, halves=False,
           multiply=False, transpose=False, ignore_base=False, dtype=float):
    """The sinusoidal table with switchable mistakes (all defaults: the right answer)."""
    base = 10000.0 if ignore_base else base
    p = np.arange(start, start + n)[:, None]                    # (n, 1)
    i = np.arange(d_model // 2)[None, :]                        # (1, d/2)
    power = {"i": i, "4i": 4 * i}.get(exponent, 2 * i)          # "j": fixed below
    freq = base ** (power / d_model)
    angle = p * freq if multiply else p / freq                  # (n, d/2)
    first, second = (np.cos(angle), np.sin(angle)) if swap else (np.sin(angle), np.cos(angle))
    if exponent == "j":                                         # each column its own index j
        second = np.cos(p / base ** ((2 * i + 1) / d_model))
    PE = np.zeros((n, d_model), dtype=dtype)                    # assigning casts to dtype
    if halves:
        PE[:, : d_model // 2], PE[:, d_model // 2:] = first, second
    else:
        PE[:, 0::2], PE[:, 1::2] = first, second
    return PE.T if transpose else PE


def _pe_mistake(message, **switches):
    return Mistake(message, lambda n, d_model, base=10000.0: _table(n, d_model, base, **switches))


SINUSOIDAL_MISTAKES = [
    _pe_mistake("sin and cos are swapped: the even columns (0, 2, 4, ...) hold the sines, "
                "the odd ones the cosines. Row 0 is then [0, 1, 0, 1, ...].", swap=True),
    _pe_mistake("the exponent is i/d_model with i the pair's index: it is 2i/d_model. Pair i "
                "(columns 2i and 2i + 1) turns at 1 / base**(2i/d_model), so the last pair is "
                "the slowest, at about 1 / base.", exponent="i"),
    _pe_mistake("the exponent is 4i/d_model: the factor 2 is there twice (the column index "
                "2i = 0, 2, 4, ... was doubled again). Pair i, in columns 2i and 2i + 1, turns "
                "at 1 / base**(2i/d_model): with the column index j = 2i that is "
                "1 / base**(j/d_model).", exponent="4i"),
    _pe_mistake("the cos columns use the exponent (2i + 1)/d_model: both columns of pair i "
                "share one angle, p / base**(2i/d_model) (the column index of the sine).",
                exponent="j"),
    _pe_mistake("the positions are counted from 1: the first row is position 0, so row 0 is "
                "sin(0) = 0 and cos(0) = 1, i.e. [0, 1, 0, 1, ...].", start=1),
    _pe_mistake("all the sines come first and all the cosines after them (split halves, a "
                "layout some codebases use): a valid encoding, but not this course's. Here "
                "pair i is interleaved: column 2i holds the sine, column 2i + 1 the cosine.",
                halves=True),
    _pe_mistake("the position is multiplied by base**(2i/d_model): it is divided. The angle "
                "is p / base**(2i/d_model), so later pairs turn more slowly.", multiply=True),
    _pe_mistake("the table is transposed: one row per position, shape (n, d_model).", transpose=True),
    _pe_mistake("base is ignored (10000 is used): use the base the function is given (a table kept "
                "from an earlier call must be kept per base too).", ignore_base=True),
    _pe_mistake("the table holds whole numbers: it was made with an integer dtype (e.g. "
                "np.zeros(..., dtype=int)), so every sine and cosine was cut to 0 (or 1). "
                "Make it a float table.", dtype=int),
    _pe_mistake("PE is float32: its values are right to float32's precision, but the table is "
                "float64 here (NumPy's default: the positions are whole numbers, and nothing "
                "asks for float32). Leave out dtype=np.float32 or .astype(np.float32).",
                dtype=np.float32),
    _pe_mistake("all the sines come first and all the cosines after them (split halves): a valid "
                "layout, but not this course's, where column 2i holds the sine and column 2i + 1 "
                "the cosine. (The table is also float32: leave it float64, NumPy's default.)",
                halves=True, dtype=np.float32),
]


# ------------------------------------------------------------------ rope
def _rope(x, positions, base=10000.0, *, sign=1, halves=False, exponent="2i", offset=0,
          ignore_positions=False, sequential=False, ignore_base=False, swap_cos_sin=False):
    """rope with switchable mistakes (all defaults: the right answer)."""
    x = np.asarray(x, dtype=float)
    n, d = x.shape[-2:]
    base = 10000.0 if ignore_base else base
    p = np.arange(n) if ignore_positions else np.asarray(positions)
    i = np.arange(d // 2)
    if exponent == "linspace":                                          # exponents 0 .. 1, evenly
        angle = sign * (p[:, None] + offset) * base ** (-np.linspace(0, 1, d // 2))
    else:
        power = {"2i": 2 * i, "i": i, "4i": 4 * i}[exponent]
        angle = sign * (p[:, None] + offset) * base ** (-power / d)     # (n, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    if swap_cos_sin:
        cos, sin = sin, cos
    cols_a, cols_b = (i, i + d // 2) if halves else (2 * i, 2 * i + 1)
    a, b = x[..., cols_a], x[..., cols_b]
    new_a = a * cos - b * sin
    new_b = (new_a if sequential else a) * sin + b * cos
    out = x.copy()
    out[..., cols_a], out[..., cols_b] = new_a, new_b
    return out


def _rope_mistake(message, **switches):
    return Mistake(message, lambda x, positions, base=10000.0: _rope(x, positions, base, **switches))


def _given(values, label):
    """The positions as the label says: a Python tuple or list, else an int array."""
    return tuple(values) if "tuple" in label else values if "list" in label else np.asarray(values)


def _shown(given):
    """The positions as the learner would print them: ``(5, 6, 7)``, ``[5, 6, 7]`` or ``array([5, 6, 7])``."""
    return repr(given) if isinstance(given, (list, tuple)) else f"array({given.tolist()})"


#: Appended to a label: what such positions need, for a learner whose code raised on them.
_AS_LIST = " (not an array: np.asarray(positions) makes one)"
_NEGATIVE = " (allowed: they turn the other way, which a table of angles indexed by position cannot serve)"
_LAST_AXIS = " (the pairs are on the last axis, whatever axes come before it)"
_FAR = (" (positions can be any whole number: a table of angles made for positions 0 to some maximum "
        "cannot serve them, and angles worked out in float32 are off by far more than rounding there: "
        "position * speed needs float64)")


def _rope_case(rng, shape, positions, label, base=None, note=""):
    """A case; the positions as a tuple or a list when the label says so, else an array."""
    x = rng.standard_normal(shape)
    given = _given([int(v) for v in positions], label)
    if isinstance(given, (list, tuple)) and not note:
        note = _AS_LIST
    return Case((x, given),
                {} if base is None else {"base": base},
                label=f"{label}{note}: x {shape}, positions {_shown(given)}"
                      + ("" if base is None else f", base={base}"))


def make_rope_cases(rng, hidden):
    if hidden:
        size = sizer(rng)
        n, d = size(3, 6), 2 * size(3, 4)        # d >= 6: at d = 4, 4i/d and linspace(0, 1) coincide
        m = size(4, 7)
        gaps = rng.choice(np.arange(1, 40), size=m, replace=False)
        h, nb, long = size(2, 3), size(3, 5), size(30, 60)
        return [
            _rope_case(rng, (n, d), range(n), "consecutive positions"),
            _rope_case(rng, (m, 2 * size(2, 4)), gaps, "positions out of order, with gaps"),
            _rope_case(rng, (3, 2 * size(2, 3)), [int(v) for v in rng.integers(0, 20, size=3)],
                       "positions as a Python tuple", base=float(rng.choice([50.0, 500.0]))),
            _rope_case(rng, (4, 2 * size(2, 3)), rng.integers(0, 30, size=4), "positions as a Python list"),
            _rope_case(rng, (h, nb, 2 * size(2, 3)), rng.integers(0, 30, size=nb), "a head axis (h, n, d)",
                       note=_LAST_AXIS),
            _rope_case(rng, (3, 4), [-size(1, 9), 0, size(1, 9)], "negative positions", note=_NEGATIVE),
            _rope_case(rng, (3, 2 * size(2, 4)), [size(20_000, 100_000), size(0, 9), size(10_001, 19_999)],
                       "positions far along", note=_FAR),
            _rope_case(rng, (2, h, 3, 4), rng.integers(0, 30, size=3), "two leading axes (B, h, n, d)",
                       note=_LAST_AXIS),
            _rope_case(rng, (long, 2 * size(4, 8)), rng.permutation(long) * size(1, 3),
                       "a long table, positions out of order"),
            _rope_case(rng, (2, 2), [size(1, 5), size(6, 12)], "d = 2"),
        ]
    return [
        _rope_case(rng, (4, 6), range(4), "consecutive positions"),
        _rope_case(rng, (5, 8), [3, 0, 7, 1, 12], "positions out of order, with gaps"),
        _rope_case(rng, (3, 4), [5, 6, 7], "positions as a Python tuple", base=50.0),
        _rope_case(rng, (4, 4), [8, 2, 0, 5], "positions as a Python list"),
        _rope_case(rng, (2, 3, 6), [2, 0, 9], "a head axis (h, n, d)", note=_LAST_AXIS),
        _rope_case(rng, (3, 4), [-4, 0, 2], "negative positions", note=_NEGATIVE),
        _rope_case(rng, (3, 6), [10_000, 3, 9_999], "positions far along", note=_FAR),
        _rope_case(rng, (2, 2, 3, 4), [4, 1, 0], "two leading axes (B, h, n, d)", note=_LAST_AXIS),
        _rope_case(rng, (2, 2), [1, 4], "d = 2"),
    ]


_CONVENTION = ("the pairs are (x[i], x[i + d/2]) -- the split-halves convention of GPT-NeoX and "
               "Hugging Face's LLaMA code. It is a valid RoPE (section 6 shows it is the same "
               "model up to a reordering of W_q's and W_k's columns), but this course uses "
               "RoFormer's interleaved pairs (x[2i], x[2i+1]), and so does the check.")

def _rope_from_table(x, positions, base=10000.0, rows=2048):
    """rope reading its angles from a table made for positions 0 .. rows - 1: a negative
    position p reads row rows + p (NumPy counts negative indices from the end)."""
    p = np.asarray(positions)
    if p.max(initial=0) >= rows or p.min(initial=0) < -rows:
        raise IndexError("outside the table")
    return _rope(x, np.where(p < 0, rows + p, p), base)


#: Table sizes a learner's code is likely to use: Hugging Face's LLaMA (2048) and its
#: successors, GPT-2's 1024, the Annotated Transformer's 5000, round numbers.
_TABLE_ROWS = (2048, 4096, 1024, 512, 8192, 5000, 10_000, 1000, 100, 128, 256, 16_384, 32_768)

_TABLE_MESSAGE = ("negative positions are allowed (a token before the starting point turns the other "
                  "way), but its angles come from a table indexed by position: row -4 of a table is its "
                  "4th row from the end, not the angle of position -4. Compute each row's angles from "
                  "its position (positions times the speeds), or build the table for the positions given.")


def _rope_halves_float32(x, positions, base=10000.0, recipe="float32"):
    """Split-halves RoPE with float32 angle tables, as torch-style code builds them.

    ``recipe="float32"``: ``inv_freq = 1 / base**(arange(0, d, 2) / d)``, positions and their
    product in float32, cos/sin in float32 (Hugging Face's LlamaRotaryEmbedding); ``"cast"``:
    the angles in float64, cos and sin cast to float32.
    """
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    if d == 2:      # one pair: split halves and interleaved pairs are the same pair, no mistake to show
        return _rope(x, positions, base)
    if recipe == "float32":
        exponents = np.arange(0, d, 2, dtype=np.float32) / np.float32(d)
        inv_freq = np.float32(1.0) / (np.float32(base) ** exponents)
        freqs = np.outer(np.asarray(positions, dtype=np.float32), inv_freq)
        cos, sin = np.cos(freqs), np.sin(freqs)
    else:
        freqs = np.outer(np.asarray(positions, dtype=float), base ** (-np.arange(0, d, 2) / d))
        cos, sin = np.cos(freqs).astype(np.float32), np.sin(freqs).astype(np.float32)
    cos, sin = np.concatenate([cos, cos], axis=-1), np.concatenate([sin, sin], axis=-1)
    rotated = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    return x * cos + rotated * sin


ROPE_MISTAKES = [
    _rope_mistake("the angle has the wrong sign: a pair (a, b) at angle t becomes "
                  "(a cos t - b sin t, a sin t + b cos t), a turn counter-clockwise by "
                  "t = position * base**(-2i/d).", sign=-1),
    _rope_mistake(_CONVENTION, halves=True),
    _rope_mistake("the exponent is i/d with i the pair's index: it is 2i/d. Pair i turns by "
                  "position * base**(-2i/d).", exponent="i"),
    _rope_mistake("the exponent is 4i/d: the factor 2 is there twice (the column index 2i = 0, 2, "
                  "4, ... was doubled again). Pair i, in columns 2i and 2i + 1, turns by "
                  "position * base**(-2i/d).", exponent="4i"),
    _rope_mistake("the exponents run evenly from 0 to 1 (np.linspace(0, 1, d/2)), so the last pair turns at "
                  "exactly 1/base: pair i's exponent is 2i/d, so the last pair's is (d - 2)/d, a little "
                  "less than 1. Pair i turns by position * base**(-2i/d).", exponent="linspace"),
    _rope_mistake("cos and sin are swapped inside the rotation: a pair (a, b) at angle t becomes "
                  "(a cos t - b sin t, a sin t + b cos t). At position 0 (t = 0) nothing may "
                  "change, and cos 0 = 1, sin 0 = 0.", swap_cos_sin=True),
    _rope_mistake("the positions are off by one (counted from 1): rotate row r by the angle of "
                  "positions[r] itself, so a token at position 0 is not rotated at all.", offset=1),
    _rope_mistake("the positions given are ignored (rows are numbered 0, 1, 2, ...): row r "
                  "turns by the angle of positions[r], whatever its index.", ignore_positions=True),
    _rope_mistake("the second coordinate of each pair was computed from the already rotated "
                  "first one: compute both new coordinates from the old pair "
                  "(keep a copy, or compute both before assigning).", sequential=True),
    _rope_mistake("base is ignored (10000 is used): use the base the function is given.",
                  ignore_base=True),
    *[Mistake(_TABLE_MESSAGE, lambda x, positions, base=10000.0, rows=rows: _rope_from_table(
        x, positions, base, rows=rows)) for rows in _TABLE_ROWS],
    *[Mistake(_CONVENTION + " (Its angle tables are also float32, as torch makes them: build them in "
              "float64, NumPy's default.)",
              lambda x, positions, base=10000.0, recipe=recipe: _rope_halves_float32(x, positions, base,
                                                                                       recipe=recipe))
      for recipe in ("float32", "cast")],
]


# ------------------------------------------------------------------ rotary_attention
def _attention_case(rng, batch, n, d_k, d_v, label, mask=None, positions=None):
    """A case; the positions as a tuple or a list when the label says so, else an array."""
    Q, K = rng.standard_normal((*batch, n, d_k)), rng.standard_normal((*batch, n, d_k))
    V = rng.standard_normal((*batch, n, d_v))
    values = list(range(n)) if positions is None else [int(v) for v in positions]
    given = _given(values, label)
    kwargs = {} if mask is None else {"mask": mask}
    note = _AS_LIST if isinstance(given, (list, tuple)) else ""
    return Case((Q, K, V, given), kwargs,
                label=f"{label}{note}: Q, K {Q.shape}, V {V.shape}, positions {_shown(given)}"
                      + ("" if mask is None else ", a mask"))


def _fully_masked_row(n):
    """A causal mask whose first row blocks every key (a query that may see nothing)."""
    mask = reference.causal_mask(n)
    mask[0] = False
    return mask


def make_rotary_attention_cases(rng, hidden):
    """Every case but "a single token" has positions that are not 0..n-1 (a shift, gaps, order)."""
    if not hidden:
        return [
            _attention_case(rng, (), 5, 6, 4, "positions with gaps", positions=[0, 3, 4, 9, 10]),
            _attention_case(rng, (), 4, 4, 2, "causal mask, a window later in the text",
                            reference.causal_mask(4), positions=[40, 41, 43, 47]),
            _attention_case(rng, (2,), 3, 4, 2, "a head axis (h, n, d), positions as a list",
                            positions=[2, 5, 6]),
            _attention_case(rng, (2, 2), 3, 4, 2, "two leading axes (B, h, n, d)", positions=[1, 4, 2]),
            _attention_case(rng, (), 4, 4, 2, "a fully masked row", _fully_masked_row(4),
                            positions=[0, 2, 5, 6]),
            _attention_case(rng, (), 4, 4, 2, "negative positions, as a tuple", positions=[-3, -1, 0, 4]),
            _attention_case(rng, (), 1, 4, 2, "a single token", positions=[3]),
        ]
    size = sizer(rng)
    n, m, long = size(4, 7), size(3, 6), size(24, 40)
    gaps = lambda count, top: np.sort(rng.choice(top, size=count, replace=False))
    return [
        _attention_case(rng, (), n, 2 * size(2, 4), 2 * size(1, 3), "positions with gaps",
                        positions=gaps(n, 30)),
        _attention_case(rng, (), m, 2 * size(2, 3), 2 * size(1, 2), "causal mask, a window later in the text",
                        reference.causal_mask(m), positions=size(20, 90) + gaps(m, 2 * m)),
        _attention_case(rng, (size(2, 3),), 3, 4, 2, "a head axis (h, n, d), positions as a list",
                        positions=rng.permutation(12)[:3]),
        _attention_case(rng, (2, size(2, 3)), 3, 4, 2, "two leading axes (B, h, n, d)",
                        positions=gaps(3, 20)),
        _attention_case(rng, (), m, 4, 2, "a fully masked row", _fully_masked_row(m), positions=gaps(m, 25)),
        _attention_case(rng, (), 4, 4, 2, "negative positions, as a tuple", positions=gaps(4, 20) - 10),
        _attention_case(rng, (), long, 2 * size(2, 4), 4, "a long sequence with gaps",
                        reference.causal_mask(long), positions=gaps(long, 3 * long)),
        _attention_case(rng, (), 1, 4, 2, "a single token", positions=[size(1, 9)]),
    ]


def _rotary(Q, K, V, positions, mask=None, *, rotate=("q", "k"), own_positions=False, use_mask=True,
            scores="scaled"):
    """rotary_attention with switchable mistakes. ``scores``: "scaled" (right), "unscaled" (no
    1/sqrt(d)), "k.q" (keys as rows), "inverted" (the mask read as True = blocked; a fully
    blocked row as zeros or, as a hand-written softmax gives it, "inverted-nan"), "after" (the
    mask applied to the weights after the softmax)."""
    if own_positions:                                   # rows numbered 0..n-1, whatever was given
        positions = np.arange(np.shape(Q)[-2])
    Q = reference.rope(Q, positions) if "q" in rotate else Q
    K = reference.rope(K, positions) if "k" in rotate else K
    V = reference.rope(V, positions) if "v" in rotate else V
    mask = mask if use_mask else None
    if scores == "scaled":
        return reference.scaled_dot_product_attention(Q, K, V, mask)
    if scores == "unscaled":
        return reference.scaled_dot_product_attention(Q * np.sqrt(Q.shape[-1]), K, V, mask)
    S = (K @ np.swapaxes(Q, -1, -2) if scores == "k.q" else Q @ np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1])
    if mask is not None and scores.startswith("inverted"):
        S = np.where(mask, -np.inf, S)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)               # a fully -inf row: NaN, as by hand
    if scores == "inverted":
        W = np.nan_to_num(W)
    if mask is not None and scores == "after":
        W = W * mask
    return W @ V, W


def _rotary_mistake(message, **switches):
    return Mistake(message, lambda Q, K, V, positions, mask=None: _rotary(Q, K, V, positions, mask,
                                                                          **switches))


ROTARY_ATTENTION_MISTAKES = [
    _rotary_mistake("V was rotated too: RoPE rotates only q and k, so that their *scores* depend on "
                    "the offset. The values are what a query takes from a token, and stay as they are.",
                    rotate="qkv"),
    _rotary_mistake("only Q was rotated: rotate both Q and K (each by its own token's position), so "
                    "that q_p . k_r depends on p - r.", rotate="q"),
    _rotary_mistake("only K was rotated: rotate both Q and K (each by its own token's position), so "
                    "that q_p . k_r depends on p - r.", rotate="k"),
    _rotary_mistake("nothing was rotated: apply rope to Q and to K before the scores.", rotate=()),
    _rotary_mistake("the positions given are ignored (the rows are numbered 0, 1, 2, ...): with gaps "
                    "between the positions the offsets change, and so do the scores. Rotate each "
                    "row by the angle of its own position, positions[r].", own_positions=True),
    _rotary_mistake("the scores were not divided by sqrt(d), d the size of each query and key: attention "
                    "scales them, as lesson 03's does (q . k / sqrt(d), or call "
                    "scaled_dot_product_attention, which does it).", scores="unscaled"),
    _rotary_mistake("the scores are k . q with the keys as rows (K @ Q.T): row i of the scores must be "
                    "query i's, Q @ K.T (swap the last two axes of K), so that each row's softmax is "
                    "over the keys.", scores="k.q"),
    *[_rotary_mistake("the mask is read the other way round: here True means the query may attend to that "
                      "key, as in lesson 03 (PyTorch's nn.MultiheadAttention uses True for 'blocked'). "
                      "Leave out the keys where the mask is False.", scores=how)
      for how in ("inverted", "inverted-nan")],
    _rotary_mistake("the mask was applied after the softmax (the weights of blocked keys set to 0): the "
                    "rest then no longer sum to 1. Leave the blocked keys out before it, their scores set "
                    "to -inf.", scores="after"),
    _rotary_mistake("the mask was not passed on: the scores of blocked keys must be left out "
                    "(hand mask to the attention you call).", use_mask=False),
]


# ------------------------------------------------------------------ rope_backward
def _backward_case(rng, shape, positions, label, base=None):
    """A case; the positions as a tuple or a list when the label says so, else an array."""
    d_out = rng.standard_normal(shape)
    given = _given([int(v) for v in positions], label)
    note = (" (not an array: -positions needs one; np.asarray(positions) makes it)"
            if isinstance(given, (list, tuple)) else "")
    return Case((d_out, given), {} if base is None else {"base": base},
                label=f"{label}{note}: d_out {shape}, positions {_shown(given)}"
                      + ("" if base is None else f", base={base}"))


def make_rope_backward_cases(rng, hidden):
    if hidden:
        size = sizer(rng)
        n, m, long = size(3, 6), size(3, 5), size(30, 60)
        return [
            _backward_case(rng, (n, 2 * size(2, 4)), np.arange(n), "consecutive positions"),
            _backward_case(rng, (m, 2 * size(2, 3)), rng.choice(30, size=m, replace=False),
                           "positions out of order", base=float(rng.choice([50.0, 500.0]))),
            _backward_case(rng, (2, 3, 4), [size(0, 9), size(10, 19), size(20, 29)], "a head axis (h, n, d)"),
            _backward_case(rng, (2, 4, 6), rng.permutation(10)[:4], "positions as a list"),
            _backward_case(rng, (2, 2, 3, 4), [-size(1, 9), 0, size(1, 9)],
                           "two leading axes, negative positions, as a tuple"),
            _backward_case(rng, (long, 8), rng.permutation(long), "a long table"),
        ]
    return [
        _backward_case(rng, (4, 6), range(4), "consecutive positions"),
        _backward_case(rng, (3, 4), [9, 2, 5], "positions out of order", base=100.0),
        _backward_case(rng, (2, 3, 4), [1, 0, 6], "a head axis (h, n, d)"),
        _backward_case(rng, (2, 4, 6), [3, 0, 8, 1], "positions as a list"),
        _backward_case(rng, (2, 2, 3, 4), [-5, 0, 3], "two leading axes, negative positions, as a tuple"),
    ]


ROPE_BACKWARD_MISTAKES = [
    Mistake("this is the forward rotation again: the gradient of a rotation is its transpose, "
            "R.T @ d_out, and R.T turns by the opposite angle.",
            lambda d_out, positions, base=10000.0: reference.rope(d_out, positions, base)),
    Mistake("d_out is returned unrotated: rope changes each pair's direction, so the gradient "
            "must be turned back (a rotation keeps lengths, not directions).",
            lambda d_out, positions, base=10000.0: np.array(d_out, dtype=float)),
    Mistake("the pairs are (x[i], x[i + d/2]): rope's pairs are interleaved, (x[2i], x[2i+1]), "
            "and its backward turns the same pairs back.",
            lambda d_out, positions, base=10000.0: _rope(d_out, positions, base, sign=-1, halves=True)),
    Mistake("the whole gradient has the wrong sign: -rope(d_out) is not a rotation back. "
            "Turn each pair by the opposite angle.",
            lambda d_out, positions, base=10000.0: -reference.rope(d_out, positions, base)),
    Mistake("base was not passed on: the rotation back uses 10000 whatever base it is given. "
            "Hand base to the rotation you call.",
            lambda d_out, positions, base=10000.0: _rope(d_out, positions, sign=-1)),
    *[Mistake("the pairs are (x[i], x[i + d/2]) (split halves, as GPT-NeoX and Hugging Face's LLaMA): "
              "rope's pairs are interleaved, (x[2i], x[2i+1]), and its backward turns the same pairs "
              "back. (Its angle tables are also float32, as torch makes them: build them in float64.)",
              lambda d_out, positions, base=10000.0, recipe=recipe: _rope_halves_float32(
                  d_out, -np.asarray(positions), base, recipe=recipe))
      for recipe in ("float32", "cast")],
]


EXERCISES = [
    Exercise(name="sinusoidal_encoding", lesson=LESSON, reference=reference.sinusoidal_encoding,
             make_cases=make_sinusoidal_cases, mistakes=SINUSOIDAL_MISTAKES, outputs=("PE",),
             rtol=1e-6, atol=1e-10),
    Exercise(name="rope", lesson=LESSON, reference=reference.rope, make_cases=make_rope_cases,
             mistakes=ROPE_MISTAKES, outputs=("rotated",), rtol=1e-6, atol=1e-10),
    Exercise(name="rotary_attention", lesson=LESSON, reference=reference.rotary_attention,
             make_cases=make_rotary_attention_cases, mistakes=ROTARY_ATTENTION_MISTAKES,
             outputs=("out", "weights"), rtol=1e-6, atol=1e-10),
    Exercise(name="rope_backward", lesson=LESSON, reference=reference.rope_backward,
             make_cases=make_rope_backward_cases, mistakes=ROPE_BACKWARD_MISTAKES,
             outputs=("dx",), rtol=1e-6, atol=1e-10),
]
