"""The lesson 12 checks (layer_norm_backward, mlp_backward, next_token_probabilities).

Wrong versions are written here the way a learner might write them (np.var, a chain of
intermediate gradients as in CS231n's layer notes, np.argsort, np.argpartition and thresholds),
independently of the mistake catalogue in helpers/exercises/lesson12.py; each must get its
specific message.
Correct versions written in other ways must pass. Both tables (``WRONG_BY_EXERCISE``,
``RIGHT_BY_EXERCISE``) are run in test_checks_versions.py.
"""

import math

import numpy as np
import pytest

from helpers.exercises import EXERCISES
from versions import failing_message


# ------------------------------------------------------------ layer_norm_backward
def ln_staged(d_out, x, gamma, eps=1e-5, *, ddof=0, mean_path=True, var_path=True, with_gamma=True,
              dgamma_x=False, sum_first_only=False, no_sum=False, no_eps=False):
    """The step-by-step chain (CS231n style): through x_hat, the variance, the mean."""
    N = x.shape[-1]
    mu = np.mean(x, axis=-1, keepdims=True)
    xmu = x - mu
    var = np.var(x, axis=-1, keepdims=True, ddof=ddof)
    ivar = 1.0 / np.sqrt(var + (0.0 if no_eps else eps))
    xhat = xmu * ivar
    dxhat = d_out * gamma if with_gamma else d_out
    dvar = np.sum(dxhat * xmu, axis=-1, keepdims=True) * -0.5 * ivar ** 3
    dx = dxhat * ivar
    if var_path:
        dx = dx + dvar * 2 * xmu / (N - ddof)
    if mean_path:
        dmu = -np.sum(dxhat * ivar, axis=-1, keepdims=True)
        dx = dx + dmu / N
    lead = (0,) if sum_first_only else tuple(range(x.ndim - 1))
    if no_sum:
        lead = ()
    return dx, np.sum(d_out * (x if dgamma_x else xhat), axis=lead), np.sum(d_out, axis=lead)


def ln_sloppy(d_out, x, gamma, eps=1e-5, *, eps_at_the_end=True, std_ddof=0, ignore_eps=False):
    """x_hat from np.std, the two paths as row means; one slip at a time."""
    eps = 1e-5 if ignore_eps else eps
    xmu = x - x.mean(axis=-1, keepdims=True)
    std = np.sqrt(np.std(x, axis=-1, keepdims=True, ddof=std_ddof) ** 2 + eps)
    xhat = xmu / std
    dxhat = d_out * gamma
    dx = dxhat - dxhat.mean(-1, keepdims=True) - xhat * np.mean(dxhat * xhat, axis=-1, keepdims=True)
    dx = dx / (std if eps_at_the_end else np.std(x, axis=-1, keepdims=True))
    lead = tuple(range(x.ndim - 1))
    return dx, np.sum(d_out * xhat, axis=lead), np.sum(d_out, axis=lead)


def ln_compact(d_out, x, gamma, eps=1e-5):
    """The compact formula, with the row size N."""
    N = x.shape[-1]
    xhat = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    g = d_out * gamma
    dx = (N * g - g.sum(-1, keepdims=True) - xhat * (g * xhat).sum(-1, keepdims=True)) \
        / (N * np.sqrt(x.var(-1, keepdims=True) + eps))
    rows = d_out.reshape(-1, N)
    return dx, (rows * xhat.reshape(-1, N)).sum(0), rows.sum(0)


def ln_jacobian(d_out, x, gamma, eps=1e-5):
    """Row by row through the Jacobian of x_hat, (I - 1/N - x_hat x_hat^T / N) / std."""
    N = x.shape[-1]
    dx = np.empty_like(x)
    flat_x, flat_d, flat_dx = x.reshape(-1, N), d_out.reshape(-1, N), dx.reshape(-1, N)
    dgamma = np.zeros(N)
    for r in range(len(flat_x)):
        std = math.sqrt(flat_x[r].var() + eps)
        xhat = (flat_x[r] - flat_x[r].mean()) / std
        J = (np.eye(N) - 1.0 / N - np.outer(xhat, xhat) / N) / std
        flat_dx[r] = J.T @ (flat_d[r] * gamma)
        dgamma += flat_d[r] * xhat
    return dx, dgamma, flat_d.sum(axis=0)


LN_WRONG = {
    "mean's path left out": (lambda *a, **k: ln_staged(*a, **k, mean_path=False), "path through the mean"),
    "variance's path left out": (lambda *a, **k: ln_staged(*a, **k, var_path=False),
                                 "path through the variance"),
    "gamma * d_out / std": (lambda *a, **k: ln_staged(*a, **k, mean_path=False, var_path=False),
                            "as if the mean and the variance were constants"),
    "gamma left out of dx": (lambda *a, **k: ln_staged(*a, **k, with_gamma=False), "gamma is missing"),
    "np.var(ddof=1)": (lambda *a, **k: ln_staged(*a, **k, ddof=1), "Bessel's correction"),
    "eps left out": (lambda *a, **k: ln_staged(*a, **k, no_eps=True), "eps was left out"),
    "eps dropped from the last division": (lambda *a, **k: ln_sloppy(*a, **k, eps_at_the_end=False),
                                           "eps was dropped from the last division"),
    "np.std(ddof=1) in the std only": (lambda *a, **k: ln_sloppy(*a, **k, std_ddof=1),
                                       "in the standard deviation too"),
    "the eps argument ignored": (lambda *a, **k: ln_sloppy(*a, **k, ignore_eps=True),
                                 "eps argument is ignored"),
    "dgamma from x": (lambda *a, **k: ln_staged(*a, **k, dgamma_x=True), "sum of d_out * x_hat"),
    "dgamma summed over axis 0": (lambda *a, **k: ln_staged(*a, **k, sum_first_only=True),
                                  "first axis only"),
    "dgamma not summed": (lambda *a, **k: ln_staged(*a, **k, no_sum=True), "were not summed"),
}

LN_RIGHT = {
    "the chain through var and mean": ln_staged,
    "the compact formula": ln_compact,
    "np.std and row means": ln_sloppy,
    "row by row with the Jacobian": ln_jacobian,
}


# ------------------------------------------------------------ mlp_backward
def mlp_chain(d_out, x, W_1, b_1, W_2, b_2, *, dgelu="tanh", at_act=False, dW2_h=False, bias_first=False):
    h = x @ W_1 + b_1
    c = math.sqrt(2 / math.pi)
    act = 0.5 * h * (1 + np.tanh(c * (h + 0.044715 * h ** 3)))
    z = act if at_act else h
    inner = c * (z + 0.044715 * z ** 3)
    if dgelu == "tanh":
        deriv = 0.5 * (1 + np.tanh(inner)) + 0.5 * z * (1 / np.cosh(inner) ** 2) * c * (1 + 0.134145 * z ** 2)
    elif dgelu == "first term":
        deriv = 0.5 * (1 + np.tanh(inner))
    elif dgelu == "no half":
        deriv = 0.5 * (1 + np.tanh(inner)) + z * (1 / np.cosh(inner) ** 2) * c * (1 + 0.134145 * z ** 2)
    elif dgelu == "sigmoid":
        sig = 1 / (1 + np.exp(-1.702 * z))
        deriv = sig + 1.702 * z * sig * (1 - sig)
    elif dgelu == "no cubic":
        deriv = 0.5 * (1 + np.tanh(inner)) + 0.5 * z * (1 / np.cosh(inner) ** 2) * c
    elif dgelu == "relu":
        deriv = np.where(z > 0, 1.0, 0.0)
    else:   # the exact GELU's derivative, with math.erf
        erf = np.vectorize(math.erf)
        deriv = 0.5 * (1 + erf(z / math.sqrt(2))) + z * np.exp(-0.5 * z ** 2) / math.sqrt(2 * math.pi)
    d_act = d_out @ W_2.T
    dh = d_act * deriv
    X, DH, DO = x.reshape(-1, x.shape[-1]), dh.reshape(-1, dh.shape[-1]), d_out.reshape(-1, d_out.shape[-1])
    A = (h if dW2_h else act).reshape(-1, act.shape[-1])
    axes = 0 if bias_first else tuple(range(x.ndim - 1))
    return {"x": dh @ W_1.T, "W_1": X.T @ DH, "b_1": dh.sum(axis=axes), "W_2": A.T @ DO,
            "b_2": d_out.sum(axis=axes)}


def mlp_einsum(d_out, x, W_1, b_1, W_2, b_2):
    """einsum over the leading axes, the derivative written with sech^2 = 1 - tanh^2 via cosh."""
    h = np.einsum("...i,ij->...j", x, W_1) + b_1
    u = math.sqrt(2 / math.pi) * (h + 0.044715 * h * h * h)
    act = 0.5 * h * (1 + np.tanh(u))
    du = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * h * h)
    dh = np.einsum("...j,kj->...k", d_out, W_2) * (0.5 * (1 + np.tanh(u)) + 0.5 * h * du / np.cosh(u) ** 2)
    lead = "abcdefgh"[:x.ndim - 1]
    return {"x": np.einsum("...j,ij->...i", dh, W_1),
            "W_1": np.einsum(f"{lead}i,{lead}j->ij", x, dh), "b_1": np.einsum(f"{lead}j->j", dh),
            "W_2": np.einsum(f"{lead}i,{lead}j->ij", act, d_out), "b_2": np.einsum(f"{lead}j->j", d_out)}


def mlp_numeric_gelu(d_out, x, W_1, b_1, W_2, b_2):
    """GELU's derivative by the quotient rule on 0.5 h (1 + tanh u), tanh written with exp."""
    h = x @ W_1 + b_1
    u = math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)
    tanh = (np.exp(2 * u) - 1) / (np.exp(2 * u) + 1)
    act = 0.5 * h * (1 + tanh)
    d_tanh = 4 * np.exp(2 * u) / (np.exp(2 * u) + 1) ** 2
    dh = (d_out @ W_2.T) * (0.5 * (1 + tanh) + 0.5 * h * d_tanh * math.sqrt(2 / math.pi)
                            * (1 + 3 * 0.044715 * h ** 2))
    n = x.shape[-1]
    return {"x": dh @ W_1.T, "W_1": x.reshape(-1, n).T @ dh.reshape(-1, dh.shape[-1]),
            "b_1": dh.reshape(-1, dh.shape[-1]).sum(0), "W_2": act.reshape(-1, act.shape[-1]).T
            @ d_out.reshape(-1, n), "b_2": d_out.reshape(-1, n).sum(0)}


MLP_WRONG = {
    "only 0.5 (1 + tanh u)": (lambda *a: mlp_chain(*a, dgelu="first term"), "product rule"),
    "u' without the cubic": (lambda *a: mlp_chain(*a, dgelu="no cubic"), "inner derivative"),
    "h (1 - tanh^2) u' without its 0.5": (lambda *a: mlp_chain(*a, dgelu="no half"), "missing the 0.5"),
    "sigmoid(1.702 h) GELU's derivative": (lambda *a: mlp_chain(*a, dgelu="sigmoid"),
                                           "sigmoid approximation"),
    "erf GELU's derivative": (lambda *a: mlp_chain(*a, dgelu="erf"), "exact (erf) form"),
    "ReLU's derivative": (lambda *a: mlp_chain(*a, dgelu="relu"), "ReLU's derivative"),
    "derivative at the activation": (lambda *a: mlp_chain(*a, at_act=True), "taken at gelu(h)"),
    "dW_2 from h": (lambda *a: mlp_chain(*a, dW2_h=True), "dW_2 used h"),
    "biases summed over axis 0": (lambda *a: mlp_chain(*a, bias_first=True), "first axis only"),
}

MLP_RIGHT = {
    "the chain rule with sech^2": mlp_chain,
    "einsum": mlp_einsum,
    "tanh written with exp": mlp_numeric_gelu,
}


# ------------------------------------------------------------ next_token_probabilities
def ntp_sort(logits, temperature=1.0, top_k=None, *, multiply=False, after=False, threshold=False,
             smallest=False, no_renorm=False, naive=False):
    z = logits * temperature if multiply else (logits if after else logits / temperature)
    if top_k is not None and top_k < z.shape[-1]:
        if threshold:
            kth = np.sort(z, axis=-1)[..., -top_k][..., None]
            z = np.where(z >= kth, z, -np.inf)
        else:
            idx = np.argsort(z if smallest else -z, axis=-1, kind="stable")[..., top_k:]
            if no_renorm:
                e = np.exp(z - z.max(-1, keepdims=True))
                p = e / e.sum(-1, keepdims=True)
                np.put_along_axis(p, idx, 0.0, axis=-1)
                return p
            z = z.copy()
            np.put_along_axis(z, idx, -np.inf, axis=-1)
    e = np.exp(z) if naive else np.exp(z - z.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    if after:
        p = p / temperature
        p = p / p.sum(-1, keepdims=True)
    return p


def ntp_reversed(logits, temperature=1.0, top_k=None):
    """Top-k as the last k of an ascending sort: among ties, the higher ids."""
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        order = np.argsort(z, axis=-1, kind="stable")
        z = z.copy()
        np.put_along_axis(z, order[..., :z.shape[-1] - top_k], -np.inf, axis=-1)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ntp_top_indices(logits, temperature=1.0, top_k=None, *, how):
    """Top-k by the indices of the k largest, found in a way that leaves ties in no set order."""
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        if how == "argpartition of -z":
            top = np.argpartition(-z, top_k - 1, axis=-1)[..., :top_k]
        elif how == "argpartition of z, last k":
            top = np.argpartition(z, -top_k, axis=-1)[..., -top_k:]
        else:                                       # np.argsort's default sort (not stable)
            top = np.argsort(-z, axis=-1)[..., :top_k]
        kept = np.full(z.shape, -np.inf)
        np.put_along_axis(kept, top, np.take_along_axis(z, top, axis=-1), axis=-1)
        z = kept
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ntp_above_the_next(logits, temperature=1.0, top_k=None):
    """Keeps the logits larger than the (k+1)-th largest: a tie across the k-th place is dropped whole."""
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        beyond = np.sort(z, axis=-1)[..., -top_k - 1][..., None]
        z = np.where(z > beyond, z, -np.inf)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ntp_rows_of_a_matrix(logits, temperature=1.0, top_k=None):
    """A loop over the rows of a 1-D or 2-D input: on three axes it cuts along the wrong one."""
    z = np.atleast_2d(logits / temperature)
    out = np.empty_like(z)
    for r in range(z.shape[0]):
        row = z[r]
        if top_k is not None and top_k < row.shape[-1]:
            row = row.copy()
            row[np.argsort(-row, axis=-1, kind="stable")[top_k:]] = -np.inf
        e = np.exp(row - row.max(axis=-1, keepdims=True))
        out[r] = e / e.sum(axis=-1, keepdims=True)
    return out.reshape(np.shape(logits))


def ntp_no_none(logits, temperature=1.0, top_k=None):
    """Compares top_k with the vocabulary without asking whether it is None."""
    z = logits / temperature
    if top_k < z.shape[-1]:
        z = z.copy()
        np.put_along_axis(z, np.argsort(-z, axis=-1, kind="stable")[..., top_k:], -np.inf, axis=-1)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ntp_power(logits, temperature=1.0, top_k=None):
    """softmax(z / T) is softmax(z) ** (1 / T), renormalised; top-k by a loop over rows."""
    e = np.exp(logits - logits.max(-1, keepdims=True))
    p = (e / e.sum(-1, keepdims=True)) ** (1 / temperature)
    rows = p.reshape(-1, p.shape[-1])
    flat_logits = logits.reshape(-1, logits.shape[-1])
    if top_k is not None:
        for r in range(len(rows)):
            keep = sorted(range(rows.shape[1]), key=lambda i: (-flat_logits[r, i], i))[:top_k]
            mask = np.zeros(rows.shape[1], bool)
            mask[keep] = True
            rows[r] = np.where(mask, rows[r], 0)
    return p / p.sum(-1, keepdims=True)


def ntp_logsumexp(logits, temperature=1.0, top_k=None):
    """log-softmax with a log-sum-exp; top-k by np.lexsort on (-logit, id)."""
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        order = np.lexsort((np.broadcast_to(np.arange(z.shape[-1]), z.shape), -z), axis=-1)
        drop = order[..., top_k:]
        z = z.copy()
        np.put_along_axis(z, drop, -np.inf, axis=-1)
    m = z.max(-1, keepdims=True)
    return np.exp(z - m - np.log(np.exp(z - m).sum(-1, keepdims=True)))


def ntp_partition_then_ties(logits, temperature=1.0, top_k=None):
    """The k-th largest by np.partition; every larger logit kept, then tied ones by id up to k."""
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.partition(z, -top_k, axis=-1)[..., -top_k, None]
        above, tied = z > kth, z == kth
        room = top_k - above.sum(axis=-1, keepdims=True)
        z = np.where(above | (tied & (np.cumsum(tied, axis=-1) <= room)), z, -np.inf)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


NTP_WRONG = {
    "logits * temperature": (lambda *a, **k: ntp_sort(*a, **k, multiply=True),
                             "multiplied by the temperature"),
    "temperature after the softmax": (lambda *a, **k: ntp_sort(*a, **k, after=True), "changed nothing"),
    "threshold at the k-th value keeps ties": (lambda *a, **k: ntp_sort(*a, **k, threshold=True),
                                                "kept every token tied"),
    "ties to the higher id": (ntp_reversed, "kept the higher token id"),
    "top k by argpartition of -z": (lambda *a, **k: ntp_top_indices(*a, **k, how="argpartition of -z"),
                                    "np.argpartition does not order tied values"),
    "top k by argpartition of z, the last k": (
        lambda *a, **k: ntp_top_indices(*a, **k, how="argpartition of z, last k"),
        "np.argpartition does not order tied values"),
    "top k by argsort's default sort": (lambda *a, **k: ntp_top_indices(*a, **k, how="argsort"),
                                        "np.argpartition does not order tied values"),
    "top_k=None compared with V": (ntp_no_none, "no cut: every token is kept"),
    "only the logits above the (k+1)-th largest": (ntp_above_the_next, "kept fewer than k tokens"),
    "a loop over the first axis only": (ntp_rows_of_a_matrix, "handles 2-D arrays only"),
    "argsort without the minus": (lambda *a, **k: ntp_sort(*a, **k, smallest=True), "k SMALLEST"),
    "zeros after the softmax, not renormalised": (lambda *a, **k: ntp_sort(*a, **k, no_renorm=True),
                                                   "not renormalised"),
    "exp without subtracting the max": (lambda *a, **k: ntp_sort(*a, **k, naive=True), "overflow"),
}

NTP_RIGHT = {
    "argsort of -logits, stable": ntp_sort,
    "softmax to the power 1/T": ntp_power,
    "log-sum-exp and lexsort": ntp_logsumexp,
    "np.partition's k-th value, ties by id": ntp_partition_then_ties,
}

WRONG_BY_EXERCISE = {"layer_norm_backward": LN_WRONG, "mlp_backward": MLP_WRONG,
                     "next_token_probabilities": NTP_WRONG}
RIGHT_BY_EXERCISE = {"layer_norm_backward": LN_RIGHT, "mlp_backward": MLP_RIGHT,
                     "next_token_probabilities": NTP_RIGHT}


# ------------------------------------------------------------ the cases themselves
@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("index", [0, 1])
def test_the_first_two_next_token_cases_tie_at_the_k_th_place_in_every_row(index, hidden):
    case = EXERCISES["next_token_probabilities"].cases(hidden)[index]
    z, k = np.sort(np.atleast_2d(case.args[0]), axis=-1)[:, ::-1], case.kwargs["top_k"]
    assert np.all(z[:, k - 1] == z[:, k])


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_layer_norm_cases_include_a_batch_of_sequences(hidden):
    assert any(c.args[1].ndim == 3 for c in EXERCISES["layer_norm_backward"].cases(hidden))


@pytest.mark.parametrize("name, label", [(name, label) for name, versions in WRONG_BY_EXERCISE.items()
                                         for label in versions])
def test_a_float64_wrong_version_is_never_told_it_computes_in_float32(name, label):
    assert "float32" not in failing_message(name, WRONG_BY_EXERCISE[name][label][0])
