"""Input checks shared by the reference functions.

Every function here raises a ``TypeError`` or ``ValueError`` whose message starts
with the name of the public function that was called (``where``) and names the
argument, its shape and the value that is wrong, e.g.::

    attention_scores: Q has d_k=8 but K has d_k=6 (Q (4, 8), K (5, 6))

so that a learner sees the problem in their own terms instead of a NumPy traceback
from three frames down.
"""

import numbers

import numpy as np


def shape_str(shape):
    """``(4, 8)`` for a shape tuple; ``(4,)`` stays as Python writes it."""
    return str(tuple(int(s) for s in shape))


def as_float_array(where, name, x, min_ndim=1):
    """Return ``x`` as a floating-point NumPy array, or raise a clear error.

    Parameters
    ----------
    where : str
        Name of the public function doing the check (starts the message).
    name : str
        Name of the argument, e.g. ``"Q"``.
    x : array_like
        A NumPy array (or a nested list of numbers).
    min_ndim : int
        Fewest dimensions allowed; leading extra dimensions are batch dimensions.

    Returns
    -------
    numpy.ndarray
        ``x`` itself when it is already a float16/32/64 array (its dtype is kept),
        otherwise a float64 copy.
    """
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{where}: {name} must be a NumPy array, got {type(x).__name__}")
    if x.dtype.kind == "b" or x.dtype.kind not in "iuf":
        raise TypeError(f"{where}: {name} must hold real numbers, got dtype {x.dtype}")
    if x.ndim < min_ndim:
        raise ValueError(
            f"{where}: {name} must have at least {min_ndim} dimensions, "
            f"got shape {shape_str(x.shape)}"
        )
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    return x


def positive_int(where, name, value):
    """Return ``value`` as a Python int if it is a whole number > 0, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: {name} must be a whole number, got {value!r}")
    if value <= 0:
        raise ValueError(f"{where}: {name} must be positive, got {name}={value}")
    return int(value)


def batch_shape(where, named_arrays):
    """Broadcast the leading (batch) dimensions of several ``(..., rows, cols)`` arrays.

    Parameters
    ----------
    named_arrays : dict of str -> numpy.ndarray
        The arrays, by argument name, each with at least 2 dimensions.

    Returns
    -------
    tuple of int
        The broadcast batch shape (``()`` when no array has batch dimensions).
    """
    try:
        return np.broadcast_shapes(*(a.shape[:-2] for a in named_arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {shape_str(a.shape)}" for k, a in named_arrays.items())
        raise ValueError(f"{where}: the leading (batch) dimensions do not match ({shapes})") from None


def same_size(where, name_a, size_a, name_b, size_b, what, shapes):
    """Raise unless two sizes agree, e.g. ``Q has d_k=8 but K has d_k=6 (Q (4, 8), K (5, 6))``."""
    if size_a != size_b:
        raise ValueError(
            f"{where}: {name_a} has {what}={size_a} but {name_b} has {what}={size_b} ({shapes})"
        )


def bool_mask(where, mask, target_shape):
    """Check that ``mask`` is boolean and broadcasts to ``target_shape``; return it."""
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"{where}: mask must be a boolean NumPy array, got {type(mask).__name__}")
    if mask.dtype != np.bool_:
        raise TypeError(
            f"{where}: mask must be boolean (True = may attend), got dtype {mask.dtype}"
        )
    try:
        np.broadcast_shapes(mask.shape, tuple(target_shape))
        if np.broadcast_shapes(mask.shape, tuple(target_shape)) != tuple(target_shape):
            raise ValueError
    except ValueError:
        raise ValueError(
            f"{where}: mask {shape_str(mask.shape)} does not broadcast to the scores "
            f"{shape_str(target_shape)} (n_q, n_k)"
        ) from None
    return mask
