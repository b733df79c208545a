"""Comparing a learner's answer with the reference, and saying how they differ.

:func:`difference` is the one question every check asks: does ``got`` agree with
``expected`` within the exercise's tolerances? If not, it returns one sentence a learner
can act on (wrong type, wrong shape, NaN, values in another order, the entry furthest
off). :mod:`helpers.checking` asks it for every case and every known mistake.
"""

import inspect
import itertools

import numpy as np


def parameter_names(fn, count):
    """The names of ``fn``'s first ``count`` parameters (``"argument 1"`` ... if unknown)."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"argument {i + 1}" for i in range(count)]


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


class Float32Only(str):
    """A message saying the values are right only to float32's precision (the one policy:
    :mod:`helpers.checking`'s docstring). :func:`helpers.checking.evaluate` counts such cases
    together: the check stops at the first, the grader takes one case off for all of them."""


def _float32_close(got_arr, exp_arr):
    """Whether two arrays agree within float32 precision (relative to the largest entry)."""
    finite = np.abs(exp_arr[np.isfinite(exp_arr)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    return np.allclose(got_arr, exp_arr, rtol=FLOAT32_RTOL, atol=FLOAT32_RTOL * 0.1 * scale,
                       equal_nan=True)


def _largest(exp_arr):
    finite = np.abs(exp_arr[np.isfinite(exp_arr)])
    return float(finite.max()) if finite.size else 0.0


def _largest_difference(got_arr, exp_arr):
    both = np.isfinite(got_arr) & np.isfinite(exp_arr)
    return float(np.abs(got_arr[both] - exp_arr[both]).max(initial=0.0))


def _float32_arithmetic(got_arr, exp_arr, exp_dtype, float64_rtol):
    """Whether a float64 answer is off by what float32 arithmetic gives, and by more than float64's.

    Relative to the largest expected entry: above ``float64_rtol``, within float32's precision.
    Only for a float64 ``expected`` (None, integers and booleans are not judged).
    """
    if exp_dtype is None or exp_dtype != np.float64 or not exp_arr.size:
        return False
    scale = _largest(exp_arr)
    error = _largest_difference(got_arr, exp_arr)
    if scale == 0 or not float64_rtol * scale < error <= 2 * FLOAT32_RTOL * max(1.0, scale):
        return False                 # float64's rounding, or much more than float32's
    return np.array_equal(np.isfinite(got_arr), np.isfinite(exp_arr)) and _float32_close(got_arr, exp_arr)


def agrees(got, expected, rtol, atol, float32_ok=False, float64_rtol=None):
    """Whether :func:`difference` would find no difference, without writing its message.

    For two arrays of numbers a loose comparison first rejects most mismatches cheaply:
    :func:`difference` accepts nothing outside it.
    """
    if isinstance(expected, tuple):
        return (isinstance(got, (tuple, list)) and len(got) == len(expected)
                and all(agrees(g, e, rtol, atol, float32_ok, float64_rtol) for g, e in zip(got, expected)))
    if (isinstance(got, np.ndarray) and isinstance(expected, np.ndarray) and got.shape == expected.shape
            and got.dtype.kind in "fiu" and expected.dtype.kind in "fiu"):
        scale = max(1.0, _largest(np.asarray(expected, dtype=float)))
        if not np.allclose(got, expected, rtol=max(rtol, 10 * FLOAT32_RTOL),
                           atol=max(atol, 10 * FLOAT32_RTOL * scale), equal_nan=True):
            return False
    return difference(got, expected, "x", rtol, atol, float32_ok, float64_rtol) is None


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
        if all(agrees(got[k], expected[i], rtol, atol) for i, k in enumerate(order)):
            returned = [None] * len(expected)
            for i, k in enumerate(order):
                returned[k] = names[i]
            return (f"the values are in the wrong order: it returned ({', '.join(returned)}); "
                    f"return ({', '.join(names)}), in that order.")
    return None


def difference(got, expected, name, rtol, atol, float32_ok=False, float64_rtol=None):
    """Describe how ``got`` differs from ``expected``, or return None if they agree.

    Handles arrays, numbers, tuples of arrays and dicts of numbers. Where the
    reference returns an array, ``got`` must be a NumPy array too (a nested list
    is refused: later cells use array operations on it). A float32 ``got`` against
    a float64 ``expected`` passes within float32's precision when ``float32_ok``;
    otherwise, if only float32 rounding separates them, the message says dtype.

    ``float64_rtol`` (None: not used) judges a float64 ``got`` the same way: one whose
    largest difference, relative to the largest expected entry, is above
    ``float64_rtol`` (more than float64 arithmetic explains) but within float32's
    precision was computed in float32 somewhere. It passes when ``float32_ok``, and is
    told so otherwise, however close it happens to be on this input: the verdict is
    the same on every input, not a matter of the tolerance on this one.
    """
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{name} should be a dict with keys {sorted(expected)}, got {type(got).__name__}"
        if set(got) != set(expected):
            return f"{name} should have the keys {sorted(expected)}, got {sorted(got)}"
        for key in expected:
            diff = difference(got[key], expected[key], f"{name}[{key!r}]", rtol, atol, float32_ok,
                              float64_rtol)
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
            diff = difference(g, e, n, rtol, atol, float32_ok, float64_rtol)
            if diff:
                return _in_order(got, expected, names, rtol, atol) or diff
        return None
    if got is None:
        return f"{name} is None: did you forget to `return` it?"
    if isinstance(expected, np.ndarray) and expected.ndim > 0 and not isinstance(got, np.ndarray):
        return (f"{name} is a {type(got).__name__}, not a NumPy array: return an array "
                f"(e.g. wrap it in np.array(...)). The lesson's later cells use array "
                f"operations on it (.shape, .T, ~, @).")
    if np.iscomplexobj(got) and not np.iscomplexobj(expected):
        return f"{name} holds complex numbers ({getattr(got, 'dtype', 'complex')}); it should be real numbers"
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
    if (getattr(expected, "dtype", None) == np.dtype(bool) and isinstance(got, np.ndarray)
            and got.dtype.kind == "f" and np.isinf(got_arr).any()):
        return (f"{name} holds numbers ({got.dtype}, with -inf or inf) where a boolean mask is "
                f"expected: return True where a token may attend, False where it may not")
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
        return Float32Only(
            f"{name} is {got_dtype}, but it should be {exp_dtype} (what the reference returns "
            f"for these inputs): the values agree only to {got_dtype}'s precision. Leave out "
            f"the conversion to {got_dtype} and compute in float64 throughout.")
    if float64_rtol is not None and _float32_arithmetic(got_arr, exp_arr, exp_dtype, float64_rtol):
        if float32_ok:
            return None
        return Float32Only(
                f"{name} agrees with the expected values only to float32's precision (largest "
                f"difference {_largest_difference(got_arr, exp_arr):.2g}, where the values reach "
                f"{_largest(exp_arr):.3g}): part of the computation runs in float32 (np.float32, "
                f"dtype=np.float32, .astype(np.float32) ...). Compute in float64 throughout.")
    if close:
        return None
    message = _wrong_values(name, got_arr, exp_arr, rtol, atol)
    if lower_precision and not float32_ok:
        message += (f". Also, {name} is {got_dtype}, where the expected {name} is {exp_dtype}: "
                    f"leave out the conversion to {got_dtype}")
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
