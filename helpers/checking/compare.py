"""Comparing a learner's answer with the reference, and saying how they differ.

:func:`difference` is the one question every check asks: does ``got`` agree with
``expected`` within the exercise's tolerances? If not, it returns one sentence a learner
can act on (wrong type, wrong shape, NaN, values in another order, the entry furthest
off). :mod:`helpers.checking` asks it for every case and every known mistake.
"""

import itertools

import numpy as np

def describe_case(case):
    """``"X (4, 5), W_q (5, 2)"`` style summary of a case's arrays (or its label)."""
    if case.label:
        return case.label
    parts = [repr(a) if np.isscalar(a) else str(tuple(np.shape(a))) for a in case.args]
    parts += [f"{k}={v!r}" if np.isscalar(v) or v is None else f"{k} {tuple(np.shape(v))}"
              for k, v in case.kwargs.items()]
    return ", ".join(parts)


#: How closely a float32 answer must match a float64 reference: float32 keeps about 7
#: significant digits, and a sum of many float32 products loses a few more.
FLOAT32_RTOL = 1e-4


def _float32_close(got_arr, exp_arr):
    """Whether two arrays agree within float32 precision (relative to the largest entry)."""
    finite = np.abs(exp_arr[np.isfinite(exp_arr)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    return np.allclose(got_arr, exp_arr, rtol=FLOAT32_RTOL, atol=FLOAT32_RTOL * 0.1 * scale,
                       equal_nan=True)


def _number(value, other):
    """``value`` with enough digits to differ visibly from ``other``."""
    for digits in (6, 10, 17):
        if f"{value:.{digits}g}" != f"{other:.{digits}g}":
            break
    return f"{value:.{digits}g}"


def _in_order(got, expected, names, rtol, atol):
    """When ``got`` holds the expected values in another order, say so; else None."""
    if len(expected) < 2 or len(expected) > 4:
        return None
    for order in itertools.permutations(range(len(expected))):
        if order == tuple(range(len(expected))):
            continue
        if all(difference(got[k], expected[i], names[i], rtol, atol) is None
               for i, k in enumerate(order)):
            returned = [None] * len(expected)
            for i, k in enumerate(order):
                returned[k] = names[i]
            return (f"the values are in the wrong order: it returned ({', '.join(returned)}); "
                    f"return ({', '.join(names)}), in that order.")
    return None


def difference(got, expected, name, rtol, atol, float32_ok=False):
    """Describe how ``got`` differs from ``expected``, or return None if they agree.

    Handles arrays, numbers, tuples of arrays and dicts of numbers. Where the
    reference returns an array, ``got`` must be a NumPy array too (a nested list
    is refused: later cells use array operations on it). A float32 ``got`` against
    a float64 ``expected`` passes within float32's precision when ``float32_ok``;
    otherwise, if only float32 rounding separates them, the message says dtype.
    """
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{name} should be a dict with keys {sorted(expected)}, got {type(got).__name__}"
        if set(got) != set(expected):
            return f"{name} should have the keys {sorted(expected)}, got {sorted(got)}"
        for key in expected:
            diff = difference(got[key], expected[key], f"{name}[{key!r}]", rtol, atol, float32_ok)
            if diff:
                return diff
        return None
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)):
            return f"should return a tuple of {len(expected)} values, got a {type(got).__name__}"
        if len(got) != len(expected):
            return f"should return {len(expected)} values, got {len(got)}"
        names = name if isinstance(name, tuple) else tuple(f"value {i}" for i in range(len(expected)))
        for g, e, n in zip(got, expected, names):
            diff = difference(g, e, n, rtol, atol, float32_ok)
            if diff:
                return _in_order(got, expected, names, rtol, atol) or diff
        return None
    if got is None:
        return f"{name} is None: did you forget to `return` it?"
    if isinstance(expected, np.ndarray) and expected.ndim > 0 and not isinstance(got, np.ndarray):
        return (f"{name} is a {type(got).__name__}, not a NumPy array: return an array "
                f"(e.g. wrap it in np.array(...)). The lesson's later cells use array "
                f"operations on it (.shape, .T, ~, @).")
    try:
        got_arr = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return f"{name} should be numbers, got a {type(got).__name__}"
    exp_arr = np.asarray(expected, dtype=float)
    if got_arr.shape != exp_arr.shape:
        hint = ""
        if got_arr.shape == exp_arr.shape[::-1] and got_arr.ndim == 2:
            hint = " (transposed?)"
        return f"{name} has shape {got_arr.shape}, expected {exp_arr.shape}{hint}"
    bad_nan = np.isnan(got_arr) & ~np.isnan(exp_arr)
    if bad_nan.any():
        return f"{name} contains NaN ({int(bad_nan.sum())} entries) where it should be numbers"
    bad_inf = np.isinf(got_arr) & ~np.isinf(exp_arr)
    if bad_inf.any():
        if (got_arr[bad_inf] < 0).all():
            return (f"{name} contains -inf ({int(bad_inf.sum())} entries) where it should be "
                    f"finite numbers")
        return f"{name} contains inf ({int(bad_inf.sum())} entries): an overflow?"
    got_dtype, exp_dtype = getattr(got, "dtype", None), getattr(expected, "dtype", None)
    lower_precision = (got_dtype is not None and exp_dtype is not None and got_dtype.kind == "f"
                       and exp_dtype.kind == "f" and got_dtype.itemsize < exp_dtype.itemsize)
    close = np.allclose(got_arr, exp_arr, rtol=rtol, atol=atol, equal_nan=True)
    # A lower-precision answer is judged by its dtype, the same way on every case: within
    # its own precision it passes (float32_ok) or is told "dtype", however close it happens to be.
    if lower_precision and (close or _float32_close(got_arr, exp_arr)):
        if float32_ok:
            return None
        return (f"{name} is {got_dtype}, but the inputs are {exp_dtype}: the values agree only to "
                f"{got_dtype}'s precision. Keep the inputs' dtype (leave out the conversion to "
                f"{got_dtype}).")
    if close:
        return None
    message = _wrong_values(name, got_arr, exp_arr, rtol, atol)
    if lower_precision and not float32_ok:
        message += (f". Also, {name} is {got_dtype} while the inputs are {exp_dtype}: keep the "
                    f"inputs' dtype")
    return message


def _wrong_values(name, got_arr, exp_arr, rtol, atol):
    """The message for values outside the tolerance, naming the entry furthest outside it."""
    err = np.abs(np.nan_to_num(got_arr - exp_arr))
    allowed = atol + rtol * np.abs(np.nan_to_num(exp_arr))        # what np.allclose allows
    with np.errstate(all="ignore"):
        excess = np.nan_to_num(err / np.maximum(allowed, np.finfo(float).tiny))
    where = np.unravel_index(np.argmax(excess), err.shape) if err.ndim else ()
    g, e = float(got_arr[where]), float(exp_arr[where])
    at = (f" ({int((err > allowed).sum())} of {err.size} entries outside the tolerance): at "
          f"index {tuple(int(i) for i in where)}, the entry furthest outside it, it is" if where
          else ": got")
    return (f"{name} has the right shape but wrong values{at} {_number(g, e)}, expected "
            f"{_number(e, g)} (difference {float(err[where]):.3g})")
