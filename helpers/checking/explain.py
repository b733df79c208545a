"""Explaining what a learner's function did when it raised, or left memory unwritten.

Three questions :mod:`helpers.checking` asks about a failing function, each answered by
running it again on a changed input, never by guessing:

- :func:`explain_raised`: it raised. Which input made it? A list where an array works
  (``positions`` given as a list: ``np.asarray``), or a leading axis where the function
  handles 2-D arrays only (``.T`` reverses every axis). The line of the learner's code that
  raised is quoted.
- :func:`unwritten_entries`: its answer holds entries it never wrote (``np.empty_like``
  whose rows are filled only in part). Before each call of the learner's function,
  :func:`leave_filled_memory` leaves freed buffers of the answer's sizes filled with a
  pattern, which a fresh ``np.empty`` most likely gets back (NumPy keeps small freed
  buffers for reuse, and ``malloc`` hands a freed block of the same size back first):
  unwritten entries then read as NaN instead of passing as zeros by luck. Run twice with
  two patterns, the entries that change are the unwritten ones; run a third time on memory
  left at 0, they come out right when the function adds onto them (``+=`` on ``np.empty``).
- :func:`what`: a return value described in a few words ("a list of 3 arrays").
"""

import os
import traceback
import warnings

import numpy as np

from .compare import parameter_names
from .deadline import TimeLimit, call_with_time_limit

#: The two byte patterns left in freed memory: 0xFF... reads as NaN in float32 and float64
#: (and -1 in integers), 0x7F... as a huge finite number (1.4e306 in float64).
FILLS = (0xFF, 0x7F)
#: Freed buffers left per size: more than NumPy keeps for reuse (7) and than malloc's
#: per-size cache (7), so some survive the function's other allocations of that size.
_COPIES = 16
#: Larger buffers come from fresh pages (zeros) whatever is freed: not filled.
_LARGEST = 1 << 20


# ----------------------------------------------------------------- describing a value
def what(value):
    """A few words for ``value``: ``"a float32 array of shape (4, 5)"``, ``"a list of 3 arrays"``."""
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} array of shape {value.shape}"
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:6])
        return f"a dict with keys {keys}" if value else "an empty dict"
    if isinstance(value, (list, tuple)):
        kinds = {type(v).__name__ for v in value}
        inside = ("arrays" if kinds == {"ndarray"} else "values") if len(value) != 1 else (
            "array" if kinds == {"ndarray"} else "value")
        return f"a {type(value).__name__} of {len(value)} {inside}"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


# ----------------------------------------------------------------- memory left unwritten
def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays(v)


def leave_filled_memory(values, fill=FILLS[0]):
    """Free buffers the sizes of the arrays in ``values``, every byte set to ``fill``.

    Called just before a learner's function runs: a fresh ``np.empty``/``np.empty_like`` of
    one of those sizes then most likely holds ``fill`` bytes where it is not written.
    """
    sizes = sorted({a.nbytes for a in _arrays(values) if 0 < a.nbytes <= _LARGEST})
    buffers = [np.full(size, fill, dtype=np.uint8) for size in sizes for _ in range(_COPIES)]
    del buffers                          # freed last, so handed out first


def _parts(value):
    """``[(name suffix, array)]`` of the arrays in a result, in order."""
    if isinstance(value, np.ndarray):
        return [("", value)]
    if isinstance(value, dict):
        return [(f"[{k!r}]", v) for k, v in value.items() if isinstance(v, np.ndarray)]
    if isinstance(value, (list, tuple)):
        return [(f" {i}", v) for i, v in enumerate(value) if isinstance(v, np.ndarray)]
    return []


def unwritten_entries(exercise, fn, case, got, expected, call, time_limit=None):
    """Say so when ``got`` (``fn``'s answer, memory filled with NaN) holds entries never written.

    ``fn`` runs again with the other fill (:data:`FILLS`), through ``call`` (the package's
    ``_call_on_copies``, passed in: this module does not import the package it is part of);
    entries that were NaN and now differ came from leftover memory. None when there are none.
    """
    if not any(a.dtype.kind == "f" and np.isnan(a).any() for _, a in _parts(got)):
        return None
    again = call(fn, case, time_limit, prefill=expected, fill=FILLS[1])[0]
    zeroed = None                        # a third run, on memory left at 0, only if needed
    names = exercise.outputs
    for (suffix, first), (_, second) in zip(_parts(got), _parts(again)):
        if first.shape != second.shape or first.dtype.kind != "f":
            continue
        moved = np.isnan(first) & ~np.isnan(second)
        if not moved.any():
            continue
        name = names[0] + suffix if suffix.startswith("[") or len(names) == 1 else \
            names[int(suffix)] if int(suffix) < len(names) else f"value{suffix}"
        where = tuple(int(i) for i in np.argwhere(moved)[0])
        if zeroed is None:
            zeroed = call(fn, case, time_limit, prefill=expected, fill=0)[0]
        if _accumulated(moved, dict(_parts(zeroed)).get(suffix), dict(_parts(expected)).get(suffix)):
            return (f"{name} adds onto memory it never set: {int(moved.sum())} of {moved.size} "
                    f"entries come out right when that memory happens to hold zeros, and wrong "
                    f"otherwise (NaN on one run, {second[where]:.3g} on another, at index {where}). "
                    f"np.empty and np.empty_like do not set their entries: a sum built with += "
                    f"must start from np.zeros_like.")
        return (f"{name} has {int(moved.sum())} of {moved.size} entries it never writes (at index "
                f"{where}, for one): they hold whatever was in memory before (NaN on one run, "
                f"{second[where]:.3g} on another). np.empty and np.empty_like do not set their "
                f"entries; start from np.zeros_like (or write every entry).")
    return None


def _accumulated(moved, zeroed, expected):
    """Whether the ``moved`` entries were written by adding onto unset memory.

    They were when, run on memory left at 0, every one of them is right, and at least one is
    not 0 (an entry never written reads 0 there too, right only where 0 is expected).
    """
    if zeroed is None or expected is None or zeroed.shape != moved.shape or np.shape(expected) != moved.shape:
        return False
    right = np.isclose(zeroed, expected, rtol=1e-6, atol=1e-12)[moved]
    return bool(right.all() and (np.asarray(expected)[moved] != 0).any())


# ----------------------------------------------------------------- an exception explained
def _learner_line(exc):
    """The last line of the traceback outside NumPy and the course's own code, or None."""
    helpers_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    numpy_dir = os.path.dirname(np.__file__)
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        name = frame.filename
        if name.startswith((helpers_dir, numpy_dir)) or "site-packages" in name or name.startswith("<frozen"):
            continue
        return frame.line or None
    return None


def _uses_dot_T(fn):
    """Whether ``fn``'s code (its nested functions' too) reads an attribute called ``T``."""
    import dis
    import inspect

    todo = [getattr(getattr(fn, "func", fn), "__code__", None)]
    while todo:
        code = todo.pop()
        if code is None:
            continue
        if any(ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval == "T"
               for ins in dis.get_instructions(code)):
            return True
        todo += [c for c in code.co_consts if inspect.iscode(c)]
    return False


def _runs(fn, args, kwargs, time_limit):
    """Whether ``fn(*args, **kwargs)`` returns (NumPy's warnings silenced, within the limit)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            call_with_time_limit(fn, args, kwargs, time_limit)
        return True
    except (Exception, TimeLimit):
        return False


def _as_array_instead(exercise, fn, case, time_limit):
    """The name of a list or tuple input that, given as an array, lets ``fn`` run; else None."""
    names = parameter_names(exercise.reference, len(case.args))
    inputs = list(zip(names, case.args)) + list(case.kwargs.items())
    for i, (name, value) in enumerate(inputs):
        if not isinstance(value, (list, tuple)):
            continue
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):
            continue
        if array.dtype == object:
            continue
        args, kwargs = list(case.args), dict(case.kwargs)
        if i < len(args):
            args[i] = array
        else:
            kwargs[name] = array
        if _runs(fn, tuple(args), kwargs, time_limit):
            return name, type(value).__name__
    return None


def _negative_positions(exercise, fn, case, time_limit):
    """The negative ``positions`` (in words) when ``fn`` runs on them shifted to start at 0."""
    names = parameter_names(exercise.reference, len(case.args))
    index = names.index("positions") if "positions" in names else None
    value = case.args[index] if index is not None else case.kwargs.get("positions")
    try:
        positions = np.asarray(value)
    except (TypeError, ValueError):
        return None
    if value is None or positions.dtype.kind not in "iu" or not (positions < 0).any():
        return None
    shifted = positions - positions.min()
    args, kwargs = list(case.args), dict(case.kwargs)
    if index is not None:
        args[index] = shifted
    else:
        kwargs["positions"] = shifted
    if not _runs(fn, tuple(args), kwargs, time_limit):
        return None
    return ", ".join(str(int(p)) for p in positions.ravel()[:6] if p < 0)


def _on_one_slice(case):
    """The case with every input of the most axes (3 or more) cut to its first leading index."""
    arrays = [v for v in list(case.args) + list(case.kwargs.values()) if isinstance(v, np.ndarray)]
    if not arrays:
        return None
    most = max(a.ndim for a in arrays)
    if most < 3:
        return None
    leading = {a.shape[0] for a in arrays if a.ndim == most}
    if len(leading) != 1:
        return None

    def cut(v):
        return v[0] if isinstance(v, np.ndarray) and v.ndim == most else v
    return tuple(cut(v) for v in case.args), {k: cut(v) for k, v in case.kwargs.items()}, most


def explain_raised(exercise, fn, case, exc, time_limit=None, right=()):
    """``"it raised ValueError: ... (at `line`): positions came as a list: ..."``, one line.

    The exception's own text, the learner's line that raised it, and, when running ``fn``
    again finds it, the input that made it raise; else, when it was right on an earlier
    case (``right``), that case (a size it does not handle: a partial last block, n_q != n_k ...).
    """
    told = f"it raised {type(exc).__name__}: {exc}"
    line = _learner_line(exc)
    if line:
        told += f" (at `{line}`)"
    try:
        listed = _as_array_instead(exercise, fn, case, time_limit)
        if listed:
            name, kind = listed
            return (f"{told}. {name} came as a {kind}, and it runs when {name} is an array: start "
                    f"with {name} = np.asarray({name}) (the exercise accepts a {kind}).")
        negative = _negative_positions(exercise, fn, case, time_limit)
        if negative:
            return (f"{told}. It runs when the positions are shifted to start at 0, but this input "
                    f"has negative ones ({negative}). Negative positions are allowed: a table "
                    f"indexed by position (table[positions]) cannot serve them; compute from the "
                    f"positions themselves.")
        sliced = _on_one_slice(case)
        if sliced and _runs(fn, sliced[0], sliced[1], time_limit):
            hint = ("`.T` reverses every axis of an array with a leading axis ((h, n, d) becomes "
                    "(d, n, h)): use `.swapaxes(-1, -2)` to swap the last two only."
                    if _uses_dot_T(fn) else
                    "something in it handles 2-D arrays only: index and transpose from the end "
                    "(axis=-1, swapaxes(-1, -2)) so that leading axes ride along.")
            return (f"{told}. It runs on one slice of the leading axis ({sliced[2] - 1}-D inputs) "
                    f"but not on the {sliced[2]}-D input: {hint}")
    except Exception:                    # explaining must never fail the check itself
        pass
    if right:
        from .compare import describe_case
        told += f" (it was right on {describe_case(right[-1])}: what differs in this input?)"
    return told


__all__ = ["FILLS", "explain_raised", "leave_filled_memory", "unwritten_entries", "what"]
