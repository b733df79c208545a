"""A tiny reverse-mode automatic differentiation over NumPy, for the tests only.

It checks lesson 07's hand-derived gradients (helpers.reference) by a plainly
different method: every operation records how to pass a gradient back to its
inputs (its vector-Jacobian product, each one a line or two of the chain rule for
that single operation), and :func:`grad` replays them in reverse. Nothing here
knows about attention or about the softmax's combined formula
``y * (dy - sum(dy * y))``: the softmax is built from ``max_subtract``, ``exp``,
``sum`` and ``divide``, and the gradients come out of the chain rule.

Example::

    x = Var(np.array([1.0, 2.0]))
    loss = sum_(exp(x))
    grad(loss, [x])          # [array([e^1, e^2])]
"""

import numpy as np


class Var:
    """A value on the tape: ``value`` and the ways back to the inputs it came from.

    ``parents`` is a list of ``(Var, vjp)``: ``vjp(g)`` turns the gradient ``g`` of
    the loss with respect to this value into the gradient with respect to that parent.
    """

    def __init__(self, value, parents=()):
        self.value = np.asarray(value, dtype=float)
        self.parents = list(parents)

    @property
    def shape(self):
        return self.value.shape


def _unbroadcast(g, shape):
    """Sum ``g`` down to ``shape``: the backward of NumPy broadcasting."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


# ----------------------------------------------------------------- operations
def matmul(a, b):
    """``a @ b`` for (..., m, k) @ (..., k, n), batch dimensions broadcast."""
    def back_a(g):
        return _unbroadcast(g @ np.swapaxes(b.value, -1, -2), a.shape)

    def back_b(g):
        return _unbroadcast(np.swapaxes(a.value, -1, -2) @ g, b.shape)

    return Var(a.value @ b.value, [(a, back_a), (b, back_b)])


def transpose(a, axes=None):
    """``np.transpose(a, axes)``; by default swaps the last two axes."""
    if axes is None:
        axes = list(range(a.value.ndim))
        axes[-2], axes[-1] = axes[-1], axes[-2]
    inverse = np.argsort(axes)
    return Var(np.transpose(a.value, axes), [(a, lambda g: np.transpose(g, inverse))])


def reshape(a, shape):
    """``a.reshape(shape)``."""
    return Var(a.value.reshape(shape), [(a, lambda g: g.reshape(a.shape))])


def scale(a, c):
    """``c * a`` for a constant number c."""
    return Var(c * a.value, [(a, lambda g: c * g)])


def add(a, b):
    """``a + b`` (same shape)."""
    return Var(a.value + b.value, [(a, lambda g: g), (b, lambda g: g)])


def multiply_const(a, c):
    """``a * c`` for a constant array c broadcastable to a's shape."""
    return Var(a.value * c, [(a, lambda g: _unbroadcast(g * c, a.shape))])


def exp(a):
    """``exp(a)``, elementwise."""
    out = np.exp(a.value)
    return Var(out, [(a, lambda g: g * out)])


def sum_(a, axis=None, keepdims=False):
    """``a.sum(axis, keepdims)``."""
    def back(g):
        if axis is not None and not keepdims:
            g = np.expand_dims(g, axis)
        return np.broadcast_to(g, a.shape).copy()

    return Var(a.value.sum(axis=axis, keepdims=keepdims), [(a, back)])


def max_subtract(a, axis=-1):
    """``a - max(a, axis)``; the max's gradient goes to the first maximum of each slice."""
    m = a.value.max(axis=axis, keepdims=True)
    first = np.argmax(a.value, axis=axis)
    onehot = np.moveaxis(np.eye(a.shape[axis])[first], -1, axis)

    def back(g):
        return g - onehot * g.sum(axis=axis, keepdims=True)

    return Var(a.value - m, [(a, back)])


def where(cond, a, fill):
    """``np.where(cond, a, fill)`` for a constant number ``fill``: no gradient where False."""
    return Var(np.where(cond, a.value, fill), [(a, lambda g: _unbroadcast(np.where(cond, g, 0.0), a.shape))])


def divide(a, b):
    """``a / b`` with ``b`` broadcast against ``a`` (e.g. a row sum with keepdims)."""
    def back_a(g):
        return _unbroadcast(g / b.value, a.shape)

    def back_b(g):
        return _unbroadcast(-g * a.value / b.value ** 2, b.shape)

    return Var(a.value / b.value, [(a, back_a), (b, back_b)])


def positive_or_one(a):
    """``a`` where it is > 0, else 1 (a constant there, so no gradient): keeps 0 / 0 away."""
    keep = a.value > 0
    return Var(np.where(keep, a.value, 1.0), [(a, lambda g: np.where(keep, g, 0.0))])


# ----------------------------------------------------------------- the reverse pass
def grad(loss, inputs):
    """Gradients of the scalar ``loss`` with respect to each Var in ``inputs``.

    Visits the tape in reverse topological order, so each value's gradient is
    complete (summed over every use) before it is passed on to its parents.
    """
    order, seen = [], set()

    def visit(v):                       # depth-first: parents before children
        if id(v) in seen:
            return
        seen.add(id(v))
        for parent, _ in v.parents:
            visit(parent)
        order.append(v)

    visit(loss)
    grads = {id(loss): np.ones_like(loss.value)}
    for v in reversed(order):
        g = grads.get(id(v))
        if g is None:
            continue
        for parent, vjp in v.parents:
            contribution = vjp(g)
            grads[id(parent)] = grads.get(id(parent), 0.0) + contribution
    return [np.broadcast_to(grads.get(id(x), 0.0), x.shape).astype(float) for x in inputs]


# ----------------------------------------------------------------- attention on the tape
def softmax(s, axis=-1, mask=None):
    """Softmax along ``axis`` from the primitive operations; masked entries get 0.

    A slice whose mask is all False gets all zeros (its sum is 0, divided by 1).
    """
    if mask is not None:
        s = where(mask, s, 0.0)                      # masked scores: a constant 0, no gradient
    e = exp(max_subtract(s, axis=axis))
    if mask is not None:
        e = where(mask, e, 0.0)                      # masked entries: weight exactly 0
    return divide(e, positive_or_one(sum_(e, axis=axis, keepdims=True)))


def attention(Q, K, V, mask=None):
    """``softmax(Q K^T / sqrt(d_k)) V`` on the tape, for Vars Q, K, V (batch dims allowed)."""
    S = scale(matmul(Q, transpose(K)), 1.0 / np.sqrt(Q.shape[-1]))
    return matmul(softmax(S, mask=mask), V)


def split(A, h):
    """(..., n, d_model) -> (..., h, n, d_head), head i holding columns i*d_head:(i+1)*d_head."""
    *batch, n, d = A.shape
    axes = list(range(len(batch))) + [len(batch) + 1, len(batch), len(batch) + 2]
    return transpose(reshape(A, (*batch, n, h, d // h)), axes)


def merge(H):
    """(..., h, n, d_head) -> (..., n, h * d_head)."""
    *batch, h, n, d = H.shape
    axes = list(range(len(batch))) + [len(batch) + 1, len(batch), len(batch) + 2]
    return reshape(transpose(H, axes), (*batch, n, h * d))


def multi_head_attention(X, W_q, W_k, W_v, W_o, h, mask=None):
    """Multi-head self-attention on the tape (all arguments Vars except h and mask)."""
    heads = attention(split(matmul(X, W_q), h), split(matmul(X, W_k), h),
                      split(matmul(X, W_v), h), mask=mask)
    return matmul(merge(heads), W_o)


def gradients_of_weighted_sum(build, arrays, d_out):
    """Gradients of ``sum(build(*vars) * d_out)`` with respect to each array.

    ``build`` takes one Var per array and returns the output Var.
    """
    xs = [Var(a) for a in arrays]
    loss = sum_(multiply_const(build(*xs), d_out))
    return grad(loss, xs)
