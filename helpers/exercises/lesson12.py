"""Lesson 12 exercises: ``layer_norm_backward``, ``mlp_backward`` and ``next_token_probabilities``.

How the cases tell the mistakes apart:

- ``layer_norm_backward``'s first case is ``x (3, 5)`` with rows of different means and spreads,
  a ``gamma`` far from 1 and a random ``d_out``: leaving out the mean's path, the variance's
  path, both, or ``gamma`` in ``dx``, Bessel's correction (dividing by d - 1, everywhere or in the
  standard deviation only), ``x`` in place of ``x_hat`` in ``dgamma`` all give different numbers
  there. Its last row has a small spread (0.05), so that ``eps`` left out of the last division
  changes dx by far more than float32's rounding would: such a slip is named, never taken for
  float32 arithmetic. A case ``(2, 3, 4)`` follows, where
  ``dgamma`` and ``dbeta`` summed over the first axis only (or not at all) have the wrong shape,
  and a case with a row of tiny spread and ``eps=1e-2``, where leaving ``eps`` out, or ignoring
  the argument, shows;
- ``mlp_backward``'s first case is ``x (2, 3, 4)``, ``d_ff = 6`` (a batch of sequences, so a bias
  gradient summed over one axis only has the wrong shape) with pre-activations on both sides of
  0: GELU's derivative without the product rule, without the cubic's ``3 * 0.044715 x^2``, the
  erf form's derivative, the sigmoid approximation's, the product term without
  its 0.5, ReLU's, the derivative taken at ``gelu(h)``, and ``h`` in place of
  ``gelu(h)`` in ``dW_2`` all differ;
- ``next_token_probabilities``'s first case is a batch of 4 rows of 20 logits, ``top_k=5``,
  ``temperature=0.8``, each row with a group of equal logits across the 5th place (4 to 6
  tied, at random ids, 1 to 4 of them kept): the temperature
  multiplied in, applied after the softmax (it then changes nothing) or ignored, a top-k that
  keeps every tie (more than k tokens), the higher ids of a tie, ties kept in another order,
  the k smallest, the kept probabilities not renormalised, all differ. "Another order" is what
  ``np.argpartition`` and ``np.argsort``'s default (unstable) sort give: which tied ids they
  keep depends on NumPy's version and the processor, so that mistake is matched by what the
  answer keeps (``Mistake.like``: exactly k tokens, the largest logits, not the lowest ids
  among the tied ones), not by one simulated answer. With several rows and groups of 4 to 6,
  none of the argpartition or default-argsort spellings in tests/test_checks_lesson12.py keeps
  the lower ids in every row (checked on NumPy 1.24.0, and on 2.4.6 with its AVX-512 and AVX2
  code, and without them: NPY_DISABLE_CPU_FEATURES). The hidden cases' first is larger (4 to
  6 rows of 22 to 30 logits, k from 5 to 7). A single row of 6 logits with a tie at the 2nd
  and 3rd place, ``top_k=2``, follows; then cases without top-k, with ``top_k=None`` among
  them, large logits at a low temperature (overflow) and a batch of sequences (three axes: an
  answer that loops over the first axis only, or reshapes to two, shows there). A top-k that
  keeps only the logits above the (k+1)-th largest drops the whole tie (fewer than k tokens).

Each mistake's simulator, with nothing switched on, is the reference (a test says so).
"""

import math

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import sizer

LESSON = "12_gpt"
C = math.sqrt(2 / math.pi)


# ------------------------------------------------------------ layer_norm_backward
def _ln_case(rng, shape, label, eps=None, tiny_row=False, narrow_row=False):
    x = rng.standard_normal(shape) * rng.uniform(0.5, 3.0, size=shape[:-1] + (1,)) \
        + rng.uniform(-2, 2, size=shape[:-1] + (1,))
    if narrow_row:     # spread 0.05: eps = 1e-5 is 0.4 % of its variance, far beyond float32's rounding
        x.reshape(-1, shape[-1])[-1] = 0.5 + 0.05 * rng.standard_normal(shape[-1])
    if tiny_row:
        x.reshape(-1, shape[-1])[0] = 1.0 + 0.01 * rng.standard_normal(shape[-1])
    gamma = rng.uniform(0.5, 2.0, size=shape[-1]) * rng.choice([-1, 1], size=shape[-1])
    d_out = rng.standard_normal(shape)
    kwargs = {} if eps is None else {"eps": eps}
    return Case((d_out, x, gamma), kwargs, f"{label}: x {shape}" + ("" if eps is None else f", eps={eps}"))


def ln_cases(rng, hidden):
    shapes = [((3, 5), "rows of different means and spreads", None, False, True),
              ((2, 3, 4), "a batch of sequences", None, False),
              ((6,), "one row", None, False),
              ((2, 4), "a row of tiny spread", 1e-2, True)]
    if hidden:
        size = sizer(rng)
        shapes = [((size(3, 6), size(5, 9)), "rows of different means and spreads", None, False, True),
                  ((size(2, 3), size(3, 5), size(4, 8)), "a batch of sequences", None, False),
                  ((size(6, 10),), "one row", None, False),
                  ((size(2, 4), size(4, 7)), "a row of tiny spread", 1e-2, True)]
    return [_ln_case(rng, *shape) for shape in shapes]


def _ln_backward(d_out, x, gamma, eps=1e-5, *, ddof=0, mean_path=True, var_path=True, use_gamma=True,
                 use_eps=True, dgamma_of="xhat", sum_axes="all", ddof_in_std_only=False,
                 eps_in_last_division=True, eps_argument=True):
    """LayerNorm's backward with one thing done wrong; nothing switched on: the reference."""
    d = x.shape[-1]
    eps = eps if eps_argument else 1e-5
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).sum(axis=-1, keepdims=True) / (d - (ddof or int(ddof_in_std_only)))
    std = np.sqrt(var + (eps if use_eps else 0.0))
    xhat = (x - mean) / std
    g = d_out * gamma if use_gamma else d_out
    dx = g.copy()
    if mean_path:
        dx = dx - g.mean(axis=-1, keepdims=True)
    if var_path:
        dx = dx - xhat * (g * xhat).sum(axis=-1, keepdims=True) / (d - ddof)
    dx = dx / (std if eps_in_last_division else np.sqrt(var))
    per_row = d_out * (xhat if dgamma_of == "xhat" else x)
    axes = {"all": tuple(range(x.ndim - 1)), "first": (0,), "none": ()}[sum_axes]
    return dx, per_row.sum(axis=axes), d_out.sum(axis=axes)


LN_MISTAKES = [
    Mistake("dx leaves out the path through the mean: every x[j] moves the mean, and the mean "
            "moves every x_hat[i] of the row, so each x[j] also receives a share of the gradient "
            "reaching the whole row.",
            lambda *a, **k: _ln_backward(*a, **k, mean_path=False)),
    Mistake("dx leaves out the path through the variance: every x[j] moves the variance, which "
            "scales every x_hat[i] of the row; how much that matters for x[j] depends on x_hat[j] "
            "and on how the row's incoming gradient lines up with x_hat.",
            lambda *a, **k: _ln_backward(*a, **k, var_path=False)),
    Mistake("dx is gamma * d_out / std, as if the mean and the variance were constants: both "
            "depend on every entry of the row, so dx has two more terms (lesson 07's softmax "
            "backward had the same shape of answer).",
            lambda *a, **k: _ln_backward(*a, **k, mean_path=False, var_path=False)),
    Mistake("dx is d_out / std without gamma, and without the mean's and variance's paths: "
            "y = gamma * x_hat + beta, so x_hat's gradient is gamma * d_out, and x_hat depends "
            "on the whole row.",
            lambda *a, **k: _ln_backward(*a, **k, mean_path=False, var_path=False, use_gamma=False)),
    Mistake("gamma is missing from dx: y = gamma * x_hat + beta, so the gradient reaching x_hat "
            "is gamma * d_out, not d_out.",
            lambda *a, **k: _ln_backward(*a, **k, use_gamma=False)),
    Mistake("the variance uses Bessel's correction (divided by d - 1, as np.var(ddof=1) or "
            "torch.var by default): LayerNorm's variance is the plain mean of the squares, "
            "divided by d.",
            lambda *a, **k: _ln_backward(*a, **k, ddof=1)),
    Mistake("the standard deviation uses Bessel's correction (divided by d - 1, as np.std(ddof=1)) "
            "while the variance's path still takes a mean over d: LayerNorm divides by d "
            "everywhere, in the standard deviation too.",
            lambda *a, **k: _ln_backward(*a, **k, ddof_in_std_only=True)),
    Mistake("eps was left out: the standard deviation is sqrt(var + eps), which matters for a "
            "row whose spread is tiny (the cases include such rows).",
            lambda *a, **k: _ln_backward(*a, **k, use_eps=False)),
    Mistake("eps was dropped from the last division: x_hat uses sqrt(var + eps), but dx is "
            "divided by sqrt(var). The forward pass divides by sqrt(var + eps), so the backward "
            "pass must divide by that same number (it shows on a row of small spread).",
            lambda *a, **k: _ln_backward(*a, **k, eps_in_last_division=False)),
    Mistake("the eps argument is ignored: it computes with 1e-5 whatever eps it is given (this "
            "case passes another eps). Use the eps the caller passes.",
            lambda *a, **k: _ln_backward(*a, **k, eps_argument=False)),
    Mistake("dgamma is the sum of d_out * x: gamma multiplies x_hat, the normalised x, so "
            "dgamma is the sum of d_out * x_hat.",
            lambda *a, **k: _ln_backward(*a, **k, dgamma_of="x")),
    Mistake("dgamma and dbeta are summed over the first axis only: gamma and beta are used at "
            "every position of every sequence, so sum over EVERY leading axis (shape (d,)).",
            lambda *a, **k: _ln_backward(*a, **k, sum_axes="first")),
    Mistake("dgamma and dbeta were not summed: one gamma and one beta serve every row, so their "
            "gradients are the per-row terms summed over every leading axis, shape (d,).",
            lambda *a, **k: _ln_backward(*a, **k, sum_axes="none")),
]


# ------------------------------------------------------------ mlp_backward
def _mlp_case(rng, lead, d, d_ff, label):
    x = rng.standard_normal(lead + (d,))
    W_1, b_1 = rng.standard_normal((d, d_ff)) / math.sqrt(d) * 1.5, 0.5 * rng.standard_normal(d_ff)
    W_2, b_2 = rng.standard_normal((d_ff, d)) / math.sqrt(d_ff), rng.standard_normal(d)
    d_out = rng.standard_normal(lead + (d,))
    return Case((d_out, x, W_1, b_1, W_2, b_2), {},
                f"{label}: x {lead + (d,)}, W_1 ({d}, {d_ff}), W_2 ({d_ff}, {d})")


def mlp_cases(rng, hidden):
    shapes = [((2, 3), 4, 6, "a batch of sequences"), ((5,), 3, 8, "one sequence"),
              ((1,), 2, 4, "one token")]
    if hidden:
        size = sizer(rng)
        shapes = [((size(2, 3), size(3, 5)), size(3, 6), size(6, 10), "a batch of sequences"),
                  ((size(5, 8),), size(2, 4), size(8, 12), "one sequence"),
                  ((1,), size(2, 4), size(4, 6), "one token")]
    return [_mlp_case(rng, *shape) for shape in shapes]


def _gelu(h):
    return 0.5 * h * (1 + np.tanh(C * (h + 0.044715 * h ** 3)))


def _gelu_erf_derivative(h):
    from math import erf
    cdf = 0.5 * (1 + np.vectorize(erf)(h / math.sqrt(2)))
    return cdf + h * np.exp(-h * h / 2) / math.sqrt(2 * math.pi)


def _sigmoid_gelu_derivative(h):
    """The derivative of GELU's sigmoid approximation h * sigmoid(1.702 h)."""
    s = 1 / (1 + np.exp(-1.702 * h))
    return s + 1.702 * h * s * (1 - s)


def _mlp_backward(d_out, x, W_1, b_1, W_2, b_2, *, derivative="tanh", at="h", dW_2_of="gelu",
                  bias_axes="all"):
    """The MLP's backward with one thing done wrong; nothing switched on: the reference."""
    h = x @ W_1 + b_1
    z = _gelu(h) if at == "gelu(h)" else h
    t = np.tanh(C * (z + 0.044715 * z ** 3))
    gd = {"tanh": 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * C * (1 + 3 * 0.044715 * z * z),
          "no product rule": 0.5 * (1 + t),
          "no cubic": 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * C,
          "no half": 0.5 * (1 + t) + z * (1 - t * t) * C * (1 + 3 * 0.044715 * z * z),
          "sigmoid": _sigmoid_gelu_derivative(z),
          "erf": _gelu_erf_derivative(z) if derivative == "erf" else None,
          "relu": (z > 0).astype(float)}[derivative]
    dh = (d_out @ W_2.T) * gd
    d, d_ff = W_1.shape
    axes = {"all": tuple(range(x.ndim - 1)), "first": (0,)}[bias_axes]
    act = _gelu(h) if dW_2_of == "gelu" else h
    return {"x": dh @ W_1.T, "W_1": x.reshape(-1, d).T @ dh.reshape(-1, d_ff), "b_1": dh.sum(axis=axes),
            "W_2": act.reshape(-1, d_ff).T @ d_out.reshape(-1, d), "b_2": d_out.sum(axis=axes)}


MLP_MISTAKES = [
    Mistake("GELU's derivative is missing the product rule's second term: gelu(h) = 0.5 h (1 + "
            "tanh(u(h))) is h times a function of h, so its derivative is 0.5 (1 + tanh(u)) PLUS "
            "0.5 h (1 - tanh(u)^2) u'(h).",
            lambda *a: _mlp_backward(*a, derivative="no product rule")),
    Mistake("GELU's derivative is missing the 0.5 in its product-rule term: gelu(h) = 0.5 h (1 + "
            "tanh(u(h))), and the 0.5 multiplies both terms of the product rule, the one with "
            "h (1 - tanh(u)^2) u'(h) too.",
            lambda *a: _mlp_backward(*a, derivative="no half")),
    Mistake("this is the derivative of GELU's sigmoid approximation, h * sigmoid(1.702 h): the "
            "model uses GPT-2's tanh form, 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3))), whose "
            "derivative is not the same function.",
            lambda *a: _mlp_backward(*a, derivative="sigmoid")),
    Mistake("GELU's derivative is missing the inner derivative of u(h) = sqrt(2/pi) (h + 0.044715 "
            "h^3): u'(h) = sqrt(2/pi) (1 + 3 * 0.044715 h^2), not sqrt(2/pi).",
            lambda *a: _mlp_backward(*a, derivative="no cubic")),
    Mistake("this is the derivative of GELU's exact (erf) form, Phi(h) + h phi(h): the model uses "
            "GPT-2's tanh form, whose derivative differs by up to about 1e-3. Differentiate "
            "0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3))).",
            lambda *a: _mlp_backward(*a, derivative="erf")),
    Mistake("this is ReLU's derivative (1 where h > 0, else 0): GELU is smooth, and its "
            "derivative is neither 0 nor 1 near 0 (it is 0.5 at h = 0, and negative for some h < 0).",
            lambda *a: _mlp_backward(*a, derivative="relu")),
    Mistake("GELU's derivative was taken at gelu(h), the activation: take it at h = x @ W_1 + b_1, "
            "the value GELU was applied to.",
            lambda *a: _mlp_backward(*a, at="gelu(h)")),
    Mistake("dW_2 used h, the pre-activation: W_2 multiplies gelu(h), so dW_2 = gelu(h).T @ d_out "
            "(every leading axis flattened into rows).",
            lambda *a: _mlp_backward(*a, dW_2_of="h")),
    Mistake("the bias gradients are summed over the first axis only: a bias is added at every "
            "position of every sequence, so its gradient sums over EVERY leading axis (shape (d_ff,) "
            "for b_1, (d,) for b_2).",
            lambda *a: _mlp_backward(*a, bias_axes="first")),
]


# ------------------------------------------------------------ next_token_probabilities
def _ntp_case(logits, label, temperature=None, top_k="absent"):
    kwargs = {}
    if temperature is not None:
        kwargs["temperature"] = temperature
    if top_k != "absent":
        kwargs["top_k"] = top_k
    logits = np.asarray(logits, dtype=float)
    return Case((logits,), kwargs, f"{label}: logits {logits.shape}"
                + "".join(f", {k}={v}" for k, v in kwargs.items()))


def _tied_rows(rng, rows, V, k):
    """``rows`` rows of ``V`` logits, each with a group of equal logits across the k-th place.

    In a row, 0 to k - 1 logits are larger than the tied value, and the tied ones are one to
    four more than the places left for them among the top k, at random token ids; the other
    logits are smaller. (Multiples of 0.5 as the tied value: equal after any division.)
    """
    out = np.empty((rows, V))
    for row in out:
        above = int(rng.integers(0, k))
        left = k - above                                    # places left for the tied logits
        tied = int(rng.integers(left + 1, min(V - above, left + 4) + 1))
        ids = rng.permutation(V)
        value = float(rng.integers(-4, 5)) / 2
        row[:] = value - 0.5 - rng.uniform(0, 3, V)
        row[ids[:above]] = value + 0.5 + rng.uniform(0, 3, above)
        row[ids[above:above + tied]] = value
    return out


def ntp_cases(rng, hidden):
    first = np.array([1.0, 2.5, 2.5, -1.0, 0.5, 3.0])       # a tie at the 2nd and 3rd place
    cases = [_ntp_case(_tied_rows(rng, 4, 20, 5), "ties across the k-th place in every row", 0.8, 5),
             _ntp_case(first, "a tie at the k-th place", 0.5, 2),
             _ntp_case(rng.standard_normal(7) * 2,
                       "temperature only, top_k left at None (no cut: every token is kept)", 2.0),
             _ntp_case(rng.standard_normal(5), "top_k=None (no cut: every token is kept)", 0.7, None),
             _ntp_case(rng.standard_normal(6), "top-k, temperature 1", top_k=3),
             _ntp_case([800.0, 790.0, 0.0, -5.0], "large logits, a low temperature", 0.1, 2),
             _ntp_case(rng.standard_normal((2, 3, 5)), "a batch of sequences", 1.3, 2),
             _ntp_case(rng.standard_normal(4), "top_k larger than the vocabulary", 1.0, 9)]
    if hidden:
        size = sizer(rng)
        V = size(7, 12)
        tied = rng.standard_normal(V)
        k = size(2, 4)
        order = np.argsort(-tied)
        tied[order[k]] = tied[order[k - 1]]                 # the k-th and (k+1)-th tie
        rows, V_rows, k_rows = size(4, 6), size(22, 30), size(5, 7)
        cases = [_ntp_case(_tied_rows(rng, rows, V_rows, k_rows), "ties across the k-th place in every row",
                           float(rng.choice([0.7, 1.2])), k_rows),
                 _ntp_case(tied, "a tie at the k-th place", float(rng.choice([0.5, 0.8])), k),
                 _ntp_case(rng.standard_normal(size(8, 12)) * 2,
                           "temperature only, top_k left at None (no cut: every token is kept)", 1.7),
                 _ntp_case(rng.standard_normal(size(5, 9)), "top_k=None (no cut: every token is kept)",
                           0.6, None),
                 _ntp_case(rng.standard_normal(size(6, 10)), "top-k, temperature 1", top_k=size(2, 4)),
                 _ntp_case([900.0, 880.0, 10.0, -3.0, 0.0], "large logits, a low temperature", 0.05, 3),
                 _ntp_case(rng.standard_normal((2, size(2, 4), size(5, 8))), "a batch of sequences", 0.9, 3),
                 _ntp_case(rng.standard_normal(5), "top_k larger than the vocabulary", 1.0, 11)]
    return cases


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _ntp(logits, temperature=1.0, top_k=None, *, how_t="divide", ties="lower id", renormalise=True,
         largest=True, stable=True):
    """The sampling distribution with one thing done wrong; nothing switched on: the reference."""
    z = {"divide": logits / temperature, "multiply": logits * temperature, "after": logits,
         "ignore": logits}[how_t]
    keep = np.ones(z.shape, dtype=bool)
    if top_k is not None and top_k < z.shape[-1]:
        key = -z if largest else z
        order = np.argsort(key, axis=-1, kind="stable")
        if ties == "higher id":        # an ascending sort, reversed: among ties the higher id first
            order = np.argsort(z if largest else -z, axis=-1, kind="stable")[..., ::-1]
        if ties == "unordered":        # one of np.argpartition's possible orders: the lowest tied id last
            V = z.shape[-1]
            earlier_equal = ((z[..., :, None] == z[..., None, :]) & np.tri(V, k=-1, dtype=bool)).any(axis=-1)
            ids = np.broadcast_to(np.arange(V), z.shape)
            order = np.lexsort((np.where(earlier_equal, ids, ids + V), key), axis=-1)
        keep = np.zeros(z.shape, dtype=bool)
        np.put_along_axis(keep, order[..., :top_k], True, axis=-1)
        if ties == "keep all":
            kth = np.take_along_axis(z, order[..., top_k - 1:top_k], axis=-1)
            keep = (z >= kth) if largest else (z <= kth)
        if ties == "drop all":         # only the logits beyond the (k+1)-th: a tie there is dropped whole
            beyond = np.take_along_axis(z, order[..., top_k:top_k + 1], axis=-1)
            keep = (z > beyond) if largest else (z < beyond)
    if stable:
        p = _softmax(np.where(keep, z, -np.inf)) if renormalise else _softmax(z) * keep
    else:
        e = np.exp(np.where(keep, z, -np.inf))
        p = e / e.sum(axis=-1, keepdims=True)
    if how_t == "after":
        p = p / temperature
        p = p / p.sum(axis=-1, keepdims=True)
    return p


def _ntp_ties_like(got, case):
    """The answer keeping the k largest logits and, of those tied at the k-th place, the ones ``got`` keeps.

    None when ``got`` has another shape or does not keep exactly k tokens out of the largest
    logits: then it is not a top-k whose ties were left in no set order.
    """
    logits, = case.args
    temperature, top_k = case.kwargs.get("temperature", 1.0), case.kwargs.get("top_k")
    got = np.asarray(got, dtype=float)
    if top_k is None or top_k >= logits.shape[-1] or got.shape != logits.shape:
        return None
    z = logits / temperature
    kth = np.sort(z, axis=-1)[..., -top_k, None]
    keep = (z > kth) | ((z == kth) & (got > 0))
    if np.any(keep.sum(axis=-1) != top_k):
        return None
    return _softmax(np.where(keep, z, -np.inf))


NTP_MISTAKES = [
    Mistake("the logits were multiplied by the temperature: divide them by it (a temperature "
            "below 1 must sharpen the distribution, above 1 flatten it).",
            lambda *a, **k: _ntp(*a, **k, how_t="multiply")),
    Mistake("the temperature changed nothing: it was left out, or the probabilities were divided "
            "(or multiplied) by it after the softmax, which renormalising undoes. Divide the LOGITS "
            "by it, before the softmax.",
            lambda *a, **k: _ntp(*a, **k, how_t="after")),
    Mistake("top-k kept every token tied with the k-th largest logit (a threshold at the k-th "
            "value), so more than k tokens keep a probability. That is the field's usual rule "
            "(nanoGPT, Hugging Face) and differs from this lesson's only on exact ties: this "
            "lesson keeps exactly k tokens, the lower token ids where logits tie (section 4 says "
            "why).",
            lambda *a, **k: _ntp(*a, **k, ties="keep all")),
    Mistake("where logits tie at the k-th place, top-k kept fewer than k tokens: it dropped every "
            "token tied there (keeping only the logits larger than the (k+1)-th largest, say). "
            "This lesson keeps exactly k tokens: among tied logits, the lower token ids.",
            lambda *a, **k: _ntp(*a, **k, ties="drop all")),
    Mistake("where logits tie at the k-th place, it kept the higher token ids (reversing an "
            "ascending sort puts the later of two tied ids first; np.argpartition, or np.argsort's "
            "default sort, may too: they leave tied values in no set order): this lesson keeps "
            "the lower token ids among ties.",
            lambda *a, **k: _ntp(*a, **k, ties="higher id")),
    Mistake("where logits tie at the k-th place, it kept k tokens but not the lowest ids among the "
            "tied ones: np.argpartition does not order tied values (nor does np.argsort's default "
            "sort, which is not stable), so which of them it keeps is up to NumPy, and can change "
            "with the input, the NumPy version or the processor. This lesson keeps exactly k "
            "tokens and, among tied logits, the lower token ids.",
            lambda *a, **k: _ntp(*a, **k, ties="unordered"), like=_ntp_ties_like),
    Mistake("top-k kept the k SMALLEST logits: keep the k largest (np.argsort sorts from the "
            "smallest up).",
            lambda *a, **k: _ntp(*a, **k, largest=False)),
    Mistake("the probabilities outside the top k were set to 0 after the softmax but the rest "
            "were not renormalised, so they do not sum to 1: set the dropped logits to -inf "
            "BEFORE the softmax (or divide by the kept sum).",
            lambda *a, **k: _ntp(*a, **k, renormalise=False)),
    Mistake("large logits at a low temperature overflow (exp of 8000 is inf, inf / inf is NaN): "
            "subtract each row's largest scaled logit before the exponential, as lesson 03's "
            "softmax does.",
            lambda *a, **k: _ntp(*a, **k, stable=False)),
]


EXERCISES = [
    Exercise(
        name="layer_norm_backward",
        lesson=LESSON,
        reference=reference.layer_norm_backward,
        make_cases=ln_cases,
        mistakes=LN_MISTAKES,
        outputs=("dx", "dgamma", "dbeta"),
        rtol=1e-6,
        atol=1e-9,
    ),
    Exercise(
        name="mlp_backward",
        lesson=LESSON,
        reference=reference.mlp_backward,
        make_cases=mlp_cases,
        mistakes=MLP_MISTAKES,
        outputs=("gradients",),
        rtol=1e-6,
        atol=1e-9,
    ),
    Exercise(
        name="next_token_probabilities",
        lesson=LESSON,
        reference=reference.next_token_probabilities,
        make_cases=ntp_cases,
        mistakes=NTP_MISTAKES,
        outputs=("probabilities",),
        rtol=1e-6,
        atol=1e-12,
    ),
]
