"""Lesson 09: telling attention where each word is.

Part of :mod:`helpers.reference` (see its docstring for the conventions).

Two encodings of position, both with the frequencies of Vaswani et al. (2017): pair i of
coordinates (columns ``2i`` and ``2i + 1``) turns at the angle ``p * base**(-2i/d)`` at
position p, fast for the first pairs, slow for the last.

- :func:`sinusoidal_encoding` writes ``(sin, cos)`` of those angles into a table that is
  *added* to the word embeddings.
- :func:`rope` (rotary position embedding, Su et al. 2021, "RoFormer") *rotates* each pair
  of coordinates of a query or a key by that angle. A score ``q_m . k_n`` then depends on
  the two positions only through ``m - n``. Pairs are interleaved, ``(x[2i], x[2i+1])``, as
  in RoFormer; :func:`rope_split_halves` is the other convention (pairs ``(x[i],
  x[i + d/2])``, as in GPT-NeoX and Hugging Face's LLaMA), the same model up to a
  reordering of the columns.
- :func:`rope_backward` is its gradient: a rotation's transpose is the rotation by the
  opposite angle.
"""

import functools
import numbers

import numpy as np

from .attention import scaled_dot_product_attention
from ..validation import as_float_array, positive_int, shape_str


def _base(where, base):
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not np.isfinite(base) \
            or base <= 1:
        raise ValueError(f"{where}: base must be a number > 1, got {base!r}")
    return float(base)


def _even(where, name, value):
    if value % 2:
        raise ValueError(f"{where}: {name}={value} must be even (the coordinates go in pairs)")


def frequencies(d, base=10000.0):
    """The angle per position of each pair of coordinates: ``base**(-2i/d)``, shape (d // 2,)."""
    return base ** (-np.arange(0, d, 2) / d)


def sinusoidal_encoding(n, d_model, base=10000.0):
    """The fixed position table of Vaswani et al. (2017).

    ``PE[p, 2i] = sin(p / base**(2i/d_model))`` and ``PE[p, 2i+1] = cos(p / base**(2i/d_model))``.

    Parameters
    ----------
    n : int >= 1
        Number of positions (0 to n - 1).
    d_model : int, even
    base : float > 1

    Returns
    -------
    ndarray, shape (n, d_model), float64
    """
    where = "sinusoidal_encoding"
    n = positive_int(where, "n", n)
    d_model = positive_int(where, "d_model", d_model)
    _even(where, "d_model", d_model)
    base = _base(where, base)
    angles = np.arange(n)[:, None] * frequencies(d_model, base)    # (n, d_model / 2)
    PE = np.empty((n, d_model))
    PE[:, 0::2] = np.sin(angles)                                    # even columns
    PE[:, 1::2] = np.cos(angles)                                    # odd columns
    return PE


def _positions(where, positions, n):
    """``positions`` as an int array of shape (n,), or a clear error."""
    p = np.asarray(positions)
    if p.ndim != 1 or len(p) != n:
        raise ValueError(f"{where}: positions must have one entry per row of x (n={n}), "
                         f"got shape {shape_str(p.shape)}")
    if p.size and (p.dtype.kind not in "iu"):
        raise TypeError(f"{where}: positions must be whole numbers (ints), got dtype {p.dtype}"
                        + (f" {p[:4].tolist()}..." if p.dtype.kind in "fc" else ""))
    return p.astype(np.int64)


def _rotate(x, positions, base, where, sign=1.0):
    # contiguous: the strided pair slices below run faster on it (q and k are usually views
    # of split heads); the values are the same
    x = np.ascontiguousarray(as_float_array(where, "x", x, min_ndim=2))
    n, d = x.shape[-2:]
    _even(where, "d", d)
    p = _positions(where, positions, n)
    base = _base(where, base)
    cos, sin = _cos_sin(p.tobytes(), d, base, sign, x.dtype.str)    # (n, d / 2) each
    even, odd = x[..., 0::2], x[..., 1::2]                          # (..., n, d / 2) each
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin                         # a 2-D rotation of each
    out[..., 1::2] = even * sin + odd * cos                         #   pair (x[2i], x[2i+1])
    return out


@functools.lru_cache(maxsize=64)
def _cos_sin(positions_bytes, d, base, sign, dtype):
    """cos and sin of every angle ``sign * p * base**(-2i/d)``, shape (n, d / 2) each.

    Cached: training rotates the same positions thousands of times. (Read-only arrays.)
    """
    p = np.frombuffer(positions_bytes, dtype=np.int64)
    angles = sign * p[:, None] * frequencies(d, base)               # (n, d / 2)
    cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    cos.flags.writeable = sin.flags.writeable = False
    return cos, sin


def rope(x, positions, base=10000.0):
    """Rotary position embedding: rotate each pair ``(x[..., 2i], x[..., 2i+1])`` of row p.

    The angle of pair i at position ``positions[p]`` is ``positions[p] * base**(-2i/d)``.
    Applied to queries and keys (never to values), it makes ``rope(q, [m]) @ rope(k, [n]).T``
    depend on m and n only through ``m - n``.

    Parameters
    ----------
    x : ndarray, shape (..., n, d), d even
    positions : array-like of ints, shape (n,)
        The position of each row (a list is fine; negative positions rotate backwards).
    base : float > 1

    Returns
    -------
    ndarray, the shape and float dtype of ``x``
    """
    return _rotate(x, positions, base, "rope")


def rope_backward(d_out, positions, base=10000.0):
    """The gradient of ``sum(rope(x, positions, base) * d_out)`` for ``x``.

    Each pair is rotated by a 2 x 2 rotation matrix R; the gradient is ``R.T @ d_out``,
    and ``R.T`` is the rotation by the opposite angle. So it is ``rope`` with the
    positions negated.

    Parameters
    ----------
    d_out : ndarray, shape (..., n, d), d even
    positions : array-like of ints, shape (n,)
    base : float > 1

    Returns
    -------
    ndarray, the shape and float dtype of ``d_out``
    """
    return _rotate(d_out, positions, base, "rope_backward", sign=-1.0)


def rope_split_halves(x, positions, base=10000.0):
    """RoPE in the other convention: pair i is ``(x[..., i], x[..., i + d/2])``.

    Same angles as :func:`rope`. The two are one model up to a reordering of the
    columns (:func:`interleave_order`), not the same function of the same weights.
    """
    where = "rope_split_halves"
    x = as_float_array(where, "x", x, min_ndim=2)
    d = x.shape[-1]
    _even(where, "d", d)
    order = interleave_order(d)                                     # halves -> pairs
    out = np.empty_like(x)
    out[..., order] = _rotate(x[..., order], positions, base, where)
    return out


def interleave_order(d):
    """Column order that turns split halves into interleaved pairs: ``[0, d/2, 1, d/2 + 1, ...]``.

    ``x[..., interleave_order(d)]`` puts column i next to column ``i + d/2``, so pair i of
    the split-halves convention becomes pair i of the interleaved one.
    """
    half = d // 2
    return np.stack([np.arange(half), np.arange(half) + half], axis=1).ravel()


def rotary_attention(Q, K, V, positions, mask=None, base=10000.0):
    """Attention with RoPE: ``scaled_dot_product_attention(rope(Q, p), rope(K, p), V, mask)``.

    Parameters
    ----------
    Q, K : ndarray, shape (..., n, d_k), d_k even
    V : ndarray, shape (..., n, d_v)
    positions : array-like of ints, shape (n,)
    mask : boolean array broadcastable to (n, n), optional
    base : float > 1

    Returns
    -------
    out : ndarray, shape (..., n, d_v)
    weights : ndarray, shape (..., n, n)

    V is not rotated: position changes which tokens a query looks at, not what it takes
    from them.
    """
    Q = _rotate(Q, positions, base, "rotary_attention")
    K = _rotate(K, positions, base, "rotary_attention")
    if Q.shape[-2] != K.shape[-2]:
        raise ValueError(f"rotary_attention: Q and K must have the same number of tokens (one "
                         f"position each), got Q {shape_str(Q.shape)}, K {shape_str(K.shape)}")
    return scaled_dot_product_attention(Q, K, V, mask)
