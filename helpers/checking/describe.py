"""Saying what a wrong answer looks like, when no catalogued mistake matches it.

:func:`describe` is tried after the exercise's own catalogue of mistakes and before
the generic "wrong values at index ...". Each ``_looks_*`` function below tests one
pattern of the learner's output against the expected one and returns a sentence only
when the pattern is really there (it is computed from the two arrays, never guessed):

- a float mask where a boolean one is expected: 0/1 numbers, or an additive mask
  (0 and a large negative number or -inf), said before anything about its values
  ("-inf where it should be finite" would send the learner the wrong way);
- the complement of a boolean mask;
- the transpose of the expected array;
- right except in the query rows that are fully masked;
- a constant factor (named when it is sqrt of a size of the input, the size, 2, -1 ...);
- normalised along the wrong axis, over the whole array, or not to 1.

and two that run the learner's function again:

- right on an earlier input of another size but not on this one (a notebook variable or a
  number typed in is named only when the function's code reads one that held a size of
  that input; else the plain difference is said, with the earlier input named);
- right on consecutive positions but not on the positions given (with gaps).
"""

import dataclasses
import dis
import inspect

import numpy as np

from .compare import describe_case, difference, parameter_names


def describe(exercise, run, got, expected, case, right=(), fn=None):
    """A true sentence about how ``got`` differs from ``expected``, or None.

    Parameters
    ----------
    exercise : Exercise
    run : callable (fn, case) -> result or None
        Runs a function on a copy of a case (None if it raises or runs too long): the
        patterns that run the learner's function again use it.
    got, expected
        The learner's and the reference's answers on ``case``.
    case : Case
    right : list of Case
        The cases the learner's function got right before this one.
    fn : callable, optional
        The learner's function: its code is read for a size it fixes (a notebook variable,
        a number typed in) when it was right on an earlier input of other sizes.

    Returns
    -------
    str or None
        None when ``got`` agrees with ``expected``, or no pattern here fits.
    """
    names = exercise.outputs if len(exercise.outputs) > 1 else exercise.outputs[0]
    diff = difference(got, expected, names, exercise.rtol, exercise.atol, False,
                      exercise.float64_rtol)
    if diff is None:
        return None
    for name, g, e in _wrong_parts(exercise, got, expected):
        for looks in (_looks_shaped_like_an_input, _looks_like_a_float_mask, _looks_complemented,
                      _looks_transposed,
                      _looks_wrong_in_masked_rows, _looks_scaled, _looks_normalised_wrongly):
            message = looks(name, g, e, case, exercise)
            if message:
                return message
    message = _looks_right_on_consecutive_positions_only(exercise, run, case)
    if message is None and ("wrong values" in diff or " has shape " in diff) and "NaN" not in diff:
        message = _looks_right_on_another_size_only(case, right, diff, fn, exercise)   # not NaN, dtype
    return message


def _wrong_parts(exercise, got, expected):
    """``[(name, got, expected)]`` for the first returned array that is wrong (or ``[]``)."""
    names = exercise.outputs
    if isinstance(expected, tuple):
        parts = list(zip(names, got, expected)) if isinstance(got, (tuple, list)) \
            and len(got) == len(expected) else []
    else:
        parts = [(names[0], got, expected)]
    for name, g, e in parts:
        if difference(g, e, name, exercise.rtol, exercise.atol, False,
                      exercise.float64_rtol) is None:
            continue                       # this one is right: the first wrong one is described
        if isinstance(e, np.ndarray) and isinstance(g, np.ndarray):
            return [(name, g, e)]
        return []
    return []


def _close(a, b, exercise):
    """Whether ``a`` and ``b`` agree within the exercise's tolerance (float32's, at worst)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    scale = np.abs(b[np.isfinite(b)]).max(initial=1.0)
    return bool(np.allclose(a, b, rtol=max(exercise.rtol, 1e-4), atol=max(exercise.atol, 1e-5 * scale),
                            equal_nan=True))


# ----------------------------------------------------------------- masks
def _looks_like_a_float_mask(name, g, e, case, exercise):
    if e.dtype != bool or g.dtype == bool or g.shape != e.shape or g.dtype.kind not in "fiu":
        return None
    values = np.asarray(g, dtype=float)
    if np.array_equal(values, e) or np.array_equal(values, ~e):
        way = "" if np.array_equal(values, e) else ", and the wrong way round (1 where it should be 0)"
        return (f"{name} has the pattern as 0/1 numbers ({g.dtype}){way}, but a mask must be "
                f"boolean (dtype bool, True where a token may attend): the lesson uses it with `~` "
                f"and `np.where`, which treat numbers differently.")
    zero, blocked = values == 0, values <= -1e3           # -inf, -1e9, -1e10, np.finfo.min ...
    if (zero | blocked).all() and blocked.any():
        low = values[blocked]
        shown = "-inf" if np.isneginf(low).all() else f"{low.max():.3g}"
        if np.array_equal(zero, e):
            way = ""
        elif np.array_equal(zero, ~e):
            way = " and the wrong way round (the large negative value sits where attending is allowed)"
        else:
            wrong = zero != e
            where = tuple(int(i) for i in np.argwhere(wrong)[0])
            way = (f"; its pattern is off too: {int(wrong.sum())} entries differ from the expected "
                   f"mask, e.g. at {where} it {'allows' if zero[where] else 'blocks'} what should be "
                   f"{'blocked' if zero[where] else 'allowed'}")
        return (f"{name} is an additive mask (0 where attending is allowed, {shown} where it is "
                f"blocked){way}. This function must return a boolean mask: True where a token may "
                f"attend, False where it may not (attention turns False into -inf itself).")
    return None


def _looks_complemented(name, g, e, case, exercise):
    if (e.dtype != bool or g.dtype != bool or g.shape != e.shape or not e.any() or e.all()
            or not np.array_equal(g, ~e)):
        return None
    if "mask" not in exercise.name:
        return f"{name} is the complement of the expected one: True exactly where it should be False."
    return (f"{name} is the complement of the expected mask: True exactly where it should be False. "
            f"True must mean 'may attend' (the opposite of PyTorch's attn_mask, where True means "
            f"blocked).")


# ----------------------------------------------------------------- layout
def _looks_shaped_like_an_input(name, g, e, case, exercise):
    """A wrong shape that is exactly one input's shape: made from that input (np.zeros_like(Q))."""
    if g.shape == e.shape:
        return None
    names = parameter_names(exercise.reference, len(case.args))
    inputs = list(zip(names, case.args)) + list(case.kwargs.items())
    alike = [n for n, v in inputs if isinstance(v, np.ndarray) and v.shape == g.shape]
    if len(alike) != 1 or any(isinstance(v, np.ndarray) and v.shape == e.shape for _, v in inputs):
        return None
    source = alike[0]
    return (f"{name} has shape {g.shape}, the shape of the input {source}, but should be {e.shape}: "
            f"was it made from {source} (np.zeros_like({source}), np.empty_like({source}), "
            f"{source}.shape) where other sizes belong?")


def _looks_transposed(name, g, e, case, exercise):
    if e.ndim < 2 or g.ndim != e.ndim:
        return None
    swapped = np.swapaxes(e, -1, -2)
    if g.shape != swapped.shape or _close(e, swapped, exercise) or not _close(g, swapped, exercise):
        return None
    which = "" if e.ndim == 2 else " in its last two axes"
    return (f"{name} is the transpose{which} of the expected array: its entry [i, j] holds what "
            f"belongs at [j, i] (shape {g.shape}, expected {e.shape}).")


def _masks(case):
    """The boolean arrays among the case's inputs, broadcast as ``(..., n_q, n_k)`` masks."""
    values = list(case.args) + list(case.kwargs.values())
    return [v for v in values if isinstance(v, np.ndarray) and v.dtype == bool and v.ndim >= 2]


def _looks_wrong_in_masked_rows(name, g, e, case, exercise):
    if g.shape != e.shape or e.ndim < 2:
        return None
    for mask in _masks(case):
        empty = ~mask.any(axis=-1)                               # (..., n_q): no key allowed
        try:
            rows = np.broadcast_to(empty[..., None], e.shape)
        except ValueError:
            continue
        if not rows.any() or rows.all():
            continue
        if _close(g[~rows], e[~rows], exercise) and not _close(g[rows], e[rows], exercise):
            which = sorted({int(i) for i in np.nonzero(empty)[-1]})
            there = "NaN" if np.isnan(g[rows]).any() else "other values"
            want = ("all zeros" if not np.any(e[rows]) else "the expected values")
            return (f"{name} is right except in the rows of the queries that may attend to no key "
                    f"(their mask row is all False: query {', '.join(map(str, which))}). There it "
                    f"has {there}; it should have {want} (a query with nothing to attend to gets "
                    f"zero weights and a zero output, never NaN).")
    return None


# ----------------------------------------------------------------- numbers
def _sizes(case, exercise):
    """``[(label, value), ...]``: the sizes of the case's inputs, as a learner would name them."""
    names = parameter_names(exercise.reference, len(case.args))
    found = []
    for arg_name, value in list(zip(names, case.args)) + list(case.kwargs.items()):
        if isinstance(value, np.ndarray):
            found += [(f"{arg_name}.shape[{axis}]", size) for axis, size in enumerate(value.shape)]
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            found.append((arg_name, int(value)))
    return [(label, size) for label, size in found if size > 1]


def _factor_name(factor, case, exercise):
    """What ``factor`` is, in words (``"√d_k"`` style), or None when it is no simple number."""
    candidates = [(-1.0, "-1 (the sign is flipped)"), (2.0, "2"), (0.5, "1/2")]
    for label, size in _sizes(case, exercise):
        candidates += [(np.sqrt(size), f"√{size} (the square root of {label} = {size})"),
                       (1 / np.sqrt(size), f"1/√{size} (one over the square root of {label} = {size})"),
                       (float(size), f"{size} ({label})"), (1 / size, f"1/{size} (one over {label})")]
    for value, words in candidates:
        if abs(factor - value) <= 1e-6 * abs(value):
            return words
    return None


def _looks_scaled(name, g, e, case, exercise):
    if g.shape != e.shape or e.dtype.kind != "f" or not np.isfinite(e).all() or not np.isfinite(g).all():
        return None
    energy = float(np.vdot(e, e))
    if energy == 0 or e.size < 2:
        return None
    factor = float(np.vdot(g, e)) / energy
    if abs(factor) < 1e-12 or _close(factor, 1.0, exercise) or not _close(g, factor * e, exercise):
        return None
    words = _factor_name(factor, case, exercise)
    if words is None:
        return f"{name} is off by a constant factor: every entry is {factor:.4g} times the expected one."
    if factor == -1.0 or words.startswith("-1"):
        return f"{name} has the wrong sign: every entry is -1 times the expected one."
    return f"{name} is off by a constant factor: every entry is {words} times the expected one."


def _sums_to_one(x, axis):
    """Whether every slice of the non-negative ``x`` along ``axis`` sums to 1 (or is all zero)."""
    totals = x.sum(axis=axis)
    return bool(np.all((np.abs(totals - 1) < 1e-6) | (totals == 0)))


_AXIS_WORDS = {-1: "along the last axis (across each row)", -2: "down each column (the second-to-last axis)"}


def _axis_words(axis, ndim):
    negative = axis - ndim if axis >= 0 else axis
    return _AXIS_WORDS.get(negative, f"along axis {negative % ndim}") if ndim >= 2 else "over the array"


def _looks_normalised_wrongly(name, g, e, case, exercise):
    if g.shape != e.shape or e.dtype.kind != "f" or e.ndim < 1 or not np.isfinite(g).all():
        return None
    if not np.isfinite(e).all() or (e < 0).any() or (g < -1e-12).any():
        return None
    axes = [a for a in range(-e.ndim, 0) if _sums_to_one(e, a)]
    if len(axes) != 1 or (e.ndim == 1 and e.size < 2):
        return None
    axis = axes[0]
    if abs(g.sum() - 1) < 1e-6 and not _sums_to_one(g, axis) and g.ndim >= 2:
        return (f"{name} sums to 1 over the whole array, but it should sum to 1 "
                f"{_axis_words(axis, e.ndim)}: each slice is normalised on its own.")
    others = [a for a in range(-e.ndim, 0) if a != axis and _sums_to_one(g, a)]
    if others and not _sums_to_one(g, axis):
        return (f"{name} sums to 1 {_axis_words(others[0], e.ndim)}, but it should sum to 1 "
                f"{_axis_words(axis, e.ndim)}: it is normalised along the wrong axis.")
    totals = g.sum(axis=axis)
    if not _sums_to_one(g, axis) and e.ndim >= 1:
        return (f"{name} should sum to 1 {_axis_words(axis, e.ndim)} (each slice is a set of "
                f"weights), but its sums there go from {totals.min():.4g} to {totals.max():.4g}.")
    return None


# ----------------------------------------------------------------- running it again
def _looks_right_on_consecutive_positions_only(exercise, run, case):
    names = parameter_names(exercise.reference, len(case.args))
    key = names.index("positions") if "positions" in names else "positions"
    positions = case.args[key] if isinstance(key, int) else case.kwargs.get("positions")
    try:
        positions = np.asarray(positions, dtype=float)
    except (TypeError, ValueError):
        return None
    if positions.ndim != 1 or positions.size < 2:
        return None
    if (positions < 0).any() and np.all(positions == np.round(positions)):
        shifted = _with_input(case, key, (positions - positions.min()).astype(int))
        got = run(None, shifted)
        if got is not None and not difference(got, run(exercise.reference, shifted), "x", exercise.rtol,
                                               exercise.atol, False, exercise.float64_rtol):
            shown = ", ".join(f"{p:g}" for p in positions[:6])
            return (f"it is right on positions from 0 up, but not on this input's negative ones "
                    f"({shown}). Negative positions are allowed: a table indexed by position "
                    f"(table[positions]) cannot serve them (NumPy wraps a negative index around to "
                    f"the table's end); compute from the positions themselves.")
    if np.all(np.diff(positions) == 1):
        return None
    trial = _with_input(case, key, np.arange(positions.size))
    got = run(None, trial)
    if got is None or difference(got, run(exercise.reference, trial), "x", exercise.rtol,
                                 exercise.atol, False, exercise.float64_rtol):
        return None
    shown = ", ".join(f"{p:g}" for p in positions[:6]) + (", ..." if positions.size > 6 else "")
    return (f"it is right when the positions are 0, 1, 2, ... (each token's index) but not on the "
            f"positions of this input, which have gaps ({shown}): use the positions it is given.")


def _with_input(case, key, value):
    """A copy of ``case`` (sharing its arrays) with one input (an index or a keyword) replaced."""
    if isinstance(key, int):
        return dataclasses.replace(case, args=case.args[:key] + (value,) + case.args[key + 1:])
    return dataclasses.replace(case, kwargs={**case.kwargs, key: value})


def _layout(value, sizes=True):
    """What ``value`` is made of, as nested tuples that compare safely with ``==``.

    Arrays become their shape (``sizes``) or their number of axes and kind; lists, tuples
    and dicts are followed inside (a list of per-layer weights, a cache dict of arrays);
    numbers are kept when ``sizes`` (they may be sizes, like ``n``); anything else is named
    by its type. Never an array: comparing two layouts cannot raise.
    """
    if isinstance(value, np.ndarray):
        return ("array", tuple(value.shape) if sizes else (value.ndim, value.dtype.kind))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), _layout(v, sizes)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        parts = tuple(_layout(v, sizes) for v in value)
        if not sizes:                       # a list's length is a size: its kinds, each once
            parts = tuple(dict.fromkeys(parts))
        return (type(value).__name__, parts)
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, (int, np.integer)):
        return ("int", int(value) if sizes else None)
    if isinstance(value, (float, np.floating)):
        return ("float", repr(float(value)) if sizes else None)
    if isinstance(value, str):
        return ("str", value)
    return (type(value).__name__, None)


def _values(case):
    return list(case.args) + [case.kwargs[k] for k in sorted(case.kwargs)]


def _shapes(case):
    """The case's inputs with their sizes (:func:`_layout`)."""
    return _layout(_values(case))


def _kind(case):
    """What a case is made of, sizes aside: its keywords, and which inputs are arrays of what."""
    return (tuple(sorted(case.kwargs)), _layout(_values(case), sizes=False))


def _looks_right_on_another_size_only(case, right, diff, fn=None, exercise=None):
    """Right on an earlier case of the same kind but other sizes: say so, with the evidence.

    A size can only be blamed on something the function reads: a notebook variable (a
    global or a variable of an enclosing function) or a number written in its code whose
    value was a size of the earlier input and is no size of this one. Without such
    evidence the generic difference ``diff`` is kept and the earlier input is only named.
    """
    alike = [c for c in right if _kind(c) == _kind(case) and _shapes(c) != _shapes(case)]
    if not alike:
        return None
    earlier = alike[0]
    culprits = _fixed_sizes(fn, earlier, case, exercise) if fn is not None and exercise else []
    if culprits:
        return (f"it was right on an input of other sizes ({describe_case(earlier)}) but is wrong "
                f"on this one: it uses {'; and '.join(culprits[:2])}. Read the sizes from its "
                f"inputs' shapes instead.")
    return f"{diff} (it was right on an input of other sizes: {describe_case(earlier)})"


def _functions(fn, depth=3):
    """``fn`` and the functions it wraps (closures, ``functools.partial``), as plain functions."""
    found, todo = [], [(fn, 0)]
    while todo:
        f, level = todo.pop(0)
        f = getattr(f, "func", f)                                   # functools.partial
        if not hasattr(f, "__code__") or any(f is g for g in found) or level > depth:
            continue
        found.append(f)
        for cell in f.__closure__ or ():
            try:
                inner = cell.cell_contents
            except ValueError:                                      # an empty cell
                continue
            if callable(inner):
                todo.append((inner, level + 1))
    return found


def _codes(code):
    todo, out = [code], []
    while todo:
        c = todo.pop(0)
        out.append(c)
        todo += [k for k in c.co_consts if inspect.iscode(k)]
    return out


def _fixed_sizes(fn, earlier, case, exercise):
    """What ``fn`` reads that holds a size of ``earlier`` and of no input of ``case``, in words."""
    now = dict(_sizes(case, exercise))
    stale = {}                                   # size of the earlier input -> where it was
    for label, size in _sizes(earlier, exercise):
        if label in now and now[label] != size:
            stale.setdefault(size, (label, now[label]))
    if not stale:
        return []
    found = []
    try:
        for f in _functions(fn):
            cells = dict(zip(f.__code__.co_freevars, f.__closure__ or ()))
            for code in _codes(f.__code__):
                for ins in dis.get_instructions(code):
                    value, where = _MISSING, None
                    if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                        value, where = f.__globals__.get(ins.argval, _MISSING), "the notebook variable"
                    elif ins.opname == "LOAD_DEREF" and ins.argval in cells:
                        try:
                            value, where = cells[ins.argval].cell_contents, "the variable"
                        except ValueError:
                            continue
                    elif ins.opname == "LOAD_CONST":
                        value, where = ins.argval, "the number"
                    if (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
                            and int(value) in stale and (where != "the number" or int(value) > 2)):
                        label, here = stale[int(value)]
                        words = (f"the number {int(value)} typed in" if where == "the number"
                                 else f"{where} `{ins.argval}` (= {int(value)})")
                        words += f", which was {label} on the earlier input (here {label} = {here})"
                        if words not in found:
                            found.append(words)
    except Exception:              # a function we cannot read: no evidence
        return []
    return found


_MISSING = object()
