"""The lesson 04 checks (split_heads, merge_heads, multi_head_attention, split_heads_batched).

Wrong versions are written here the way a learner might write them (loops, np.split,
plain reshapes), independently of the mistake catalogue in helpers/exercises/lesson04.py;
each must get its specific message. Correct versions written in other ways must pass.
Both tables (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``) are run in test_checks_versions.py.
"""

import numpy as np
import pytest

from helpers import reference
from helpers.exercises import EXERCISES

# ---------------------------------------------------------------- split_heads
def _d_head(X, h):
    return X.shape[1] // h


SPLIT_WRONG = {
    "reshape without transpose": (
        lambda X, h: np.reshape(X, (h, -1, _d_head(X, h))), "reshaped without transposing"),
    "head axis not moved to the front": (
        lambda X, h: X.reshape(len(X), h, -1), "the head axis must come first"),
    "every h-th column": (
        lambda X, h: np.stack([X[:, i::h] for i in range(h)]), "every num_heads-th column"),
    "heads transposed": (
        lambda X, h: np.stack(np.split(X.T, h)), "each head came out transposed"),
    "global num_heads": (lambda X, h: np.stack(np.split(X, 8, axis=1)),
                         "the notebook's global num_heads"),
    "no return": (lambda X, h: None, "is None"),
    "crashes": (lambda X, h: X.reshape(len(X), h, 64).transpose(1, 0, 2), "raised ValueError"),
    "list of heads": (lambda X, h: [X[:, i * _d_head(X, h):(i + 1) * _d_head(X, h)] for i in range(h)],
                      "not a NumPy array"),
}

SPLIT_RIGHT = {
    "reshape and transpose": lambda X, h: X.reshape(len(X), h, -1).transpose(1, 0, 2),
    "np.split and stack": lambda X, h: np.stack(np.split(X, h, axis=1)),
    "loop over column slices": lambda X, h: np.array(
        [X[:, i * _d_head(X, h):(i + 1) * _d_head(X, h)] for i in range(h)]),
    "transpose X first": lambda X, h: X.T.reshape(h, _d_head(X, h), len(X)).transpose(0, 2, 1),
    "einsum": lambda X, h: np.einsum("nhd->hnd", X.reshape(len(X), h, -1)),
}


# ---------------------------------------------------------------- merge_heads
MERGE_WRONG = {
    "reshape without transpose": (
        lambda H: np.reshape(H, (H.shape[1], -1)), "merged without transposing"),
    "no reshape": (lambda H: np.swapaxes(H, 0, 1), "must still be joined into one row"),
    "stacked under each other": (lambda H: np.vstack(H), "stacked under each other"),
    "interleaved columns": (
        lambda H: np.stack([H[:, i, :].T.ravel() for i in range(H.shape[1])]), "interleaved"),
    "no return": (lambda H: None, "is None"),
    "(d_model, n): one column per token": (
        lambda H: np.concatenate(list(H), axis=1).T, "is the transpose of the expected array"),
}

MERGE_RIGHT = {
    "transpose and reshape": lambda H: H.transpose(1, 0, 2).reshape(H.shape[1], -1),
    "concatenate side by side": lambda H: np.concatenate(list(H), axis=1),
    "hstack": lambda H: np.hstack(H),
    "loop over tokens": lambda H: np.array([np.concatenate([head[i] for head in H])
                                            for i in range(H.shape[1])]),
    "einsum": lambda H: np.einsum("hnd->nhd", H).reshape(H.shape[1], -1),
}


# ------------------------------------------------------- multi_head_attention
def _softmax_rows(S):
    S = S - S.max(axis=-1, keepdims=True)
    E = np.exp(S)
    return E / E.sum(axis=-1, keepdims=True)


def mha_loop(X, W_q, W_k, W_v, W_o, h, mask=None, *, scale="d_head", use_mask=True,
             use_W_o=True, weights_out="all", W_o_T=False):
    """Multi-head attention as a loop over heads with column slices (optionally wrong)."""
    d_model = X.shape[1]
    d_head = d_model // h
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    outs, maps = [], []
    for i in range(h):
        c = slice(i * d_head, (i + 1) * d_head)
        S = Q[:, c] @ K[:, c].T
        S = S / {"d_head": np.sqrt(d_head), "d_model": np.sqrt(d_model), "none": 1.0,
                 "global d_head": 8.0, "global d_model": np.sqrt(512)}[scale]
        if mask is not None and use_mask:
            S = np.where(mask, S, -1e30)
        A = _softmax_rows(S)
        outs.append(A @ V[:, c])
        maps.append(A)
    out = np.concatenate(outs, axis=1)
    if use_W_o:
        out = out @ (W_o.T if W_o_T else W_o)
    maps = np.array(maps)
    if weights_out == "mean":
        maps = sum(maps) / h
    elif weights_out == "last":
        maps = maps[-1]
    return out, maps


def mha_reshapes(X, W_q, W_k, W_v, W_o, h, mask=None, *, split_T=True, merge_T=True):
    """Multi-head attention with plain reshapes, optionally without the transposes."""
    n, d_model = X.shape
    d_head = d_model // h

    def split(A):
        return A.reshape(n, h, d_head).transpose(1, 0, 2) if split_T else A.reshape(h, n, d_head)

    Qh, Kh, Vh = split(X @ W_q), split(X @ W_k), split(X @ W_v)
    S = Qh @ Kh.transpose(0, 2, 1) / np.sqrt(d_head)
    if mask is not None:
        S = np.where(mask, S, -1e30)
    A = _softmax_rows(S)
    O = A @ Vh
    merged = O.transpose(1, 0, 2).reshape(n, d_model) if merge_T else O.reshape(n, d_model)
    return merged @ W_o, A


def _attend(Qh, Kh, Vh, mask=None):
    """The lesson's scaled_dot_product_attention: it divides by sqrt(d_head) itself."""
    return reference.scaled_dot_product_attention(Qh, Kh, Vh, mask)


def mha_scaled_twice(X, W_q, W_k, W_v, W_o, h, mask=None, *, first_scale="d_head"):
    """Divides Q by a square root, then calls the attention, which divides again."""
    n, d_model = X.shape
    d_head = d_model // h
    Q = X @ W_q / np.sqrt(d_head if first_scale == "d_head" else d_model)
    Qh, Kh, Vh = (np.stack(np.split(A, h, axis=1)) for A in (Q, X @ W_k, X @ W_v))
    out, weights = _attend(Qh, Kh, Vh, mask)
    return np.concatenate(list(out), axis=1) @ W_o, weights


def merge_heads_learner_forgot_transpose(H):
    return H.reshape(H.shape[1], -1)


def split_heads_learner_strided(X, h):
    return np.stack([X[:, i::h] for i in range(h)])


def mha_with_helpers(split, merge):
    """A right multi_head_attention that calls the learner's (possibly wrong) split and merge."""
    def mha(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
        Qh, Kh, Vh = (split(X @ W, num_heads) for W in (W_q, W_k, W_v))
        out, weights = _attend(Qh, Kh, Vh, mask)
        return merge(out) @ W_o, weights
    return mha


MHA_WRONG = {
    "scaled twice (sqrt(d_head) by hand, then the attention)": (
        mha_scaled_twice, "scaled twice: divided by d_head"),
    "scaled twice (sqrt(d_model) by hand, then the attention)": (
        lambda *a, mask=None: mha_scaled_twice(*a, mask, first_scale="d_model"),
        "scaled twice: by sqrt(d_model) and again by sqrt(d_head)"),
    "reuses a merge_heads that forgot the transpose": (
        mha_with_helpers(reference.split_heads, merge_heads_learner_forgot_transpose),
        "calls your merge_heads, the mistake is there"),
    "reuses a split_heads that takes every h-th column": (
        mha_with_helpers(split_heads_learner_strided, reference.merge_heads),
        "calls your split_heads, the mistake is there"),

    "W_o left out": (lambda *a, mask=None: mha_loop(*a, mask, use_W_o=False), "W_o was left out"),
    "scaled by sqrt(d_model)": (lambda *a, mask=None: mha_loop(*a, mask, scale="d_model"),
                                "scaled by sqrt(d_model) instead of sqrt(d_head)"),
    "not scaled": (lambda *a, mask=None: mha_loop(*a, mask, scale="none"), "were not scaled"),
    "notebook's d_head = 64": (lambda *a, mask=None: mha_loop(*a, mask, scale="global d_head"),
                               "the notebook's global d_head"),
    "notebook's d_model = 512": (lambda *a, mask=None: mha_loop(*a, mask, scale="global d_model"),
                                 "the notebook's global d_model"),
    "weights averaged over heads": (lambda *a, mask=None: mha_loop(*a, mask, weights_out="mean"),
                                    "averaged over the heads"),
    "last head's weights only": (lambda *a, mask=None: mha_loop(*a, mask, weights_out="last"),
                                 "only one head's weights"),
    "split without transpose": (lambda *a, mask=None: mha_reshapes(*a, mask, split_T=False),
                                "split without transposing"),
    "merge without transpose": (lambda *a, mask=None: mha_reshapes(*a, mask, merge_T=False),
                                "merged without transposing"),
    "split and merge without transpose": (
        lambda *a, mask=None: mha_reshapes(*a, mask, split_T=False, merge_T=False),
        "both when splitting and when merging"),
    "mask ignored": (lambda *a, mask=None: mha_loop(*a, mask, use_mask=False), "mask was ignored"),
    "W_o transposed": (lambda *a, mask=None: mha_loop(*a, mask, W_o_T=True), "W_o was used transposed"),
    "PyTorch's mask convention (True = blocked)": (
        lambda *a, mask=None: mha_loop(*a, None if mask is None else ~mask), "the mask is inverted"),
    "a causal mask when none is given": (
        lambda *a, mask=None: mha_loop(*a, np.tril(np.ones((len(a[0]), len(a[0])), dtype=bool))
                                       if mask is None else mask),
        "a causal mask was applied although none was given"),
}


def _mha_heads_axis(X, W_q, W_k, W_v, W_o, h, mask=None):
    """Right, with np.split / concatenate and lesson 03's attention on a head axis."""
    Qh, Kh, Vh = (np.stack(np.split(X @ W, h, axis=1)) for W in (W_q, W_k, W_v))
    out, weights = reference.scaled_dot_product_attention(Qh, Kh, Vh, mask=mask)
    return np.concatenate(list(out), axis=1) @ W_o, weights


def _mha_einsum(X, W_q, W_k, W_v, W_o, h, mask=None):
    n, d_model = X.shape
    d_head = d_model // h
    Qh, Kh, Vh = (np.einsum("nhd->hnd", (X @ W).reshape(n, h, d_head)) for W in (W_q, W_k, W_v))
    S = np.einsum("hid,hjd->hij", Qh, Kh) / np.sqrt(d_head)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = _softmax_rows(S)
    return np.einsum("hij,hjd->ihd", A, Vh).reshape(n, d_model) @ W_o, A


MHA_RIGHT = {
    "loop over heads": lambda *a, mask=None: mha_loop(*a, mask),
    "reshape and transpose": lambda *a, mask=None: mha_reshapes(*a, mask),
    "np.split and a head axis": _mha_heads_axis,
    "einsum": _mha_einsum,
    "reference helpers": lambda X, W_q, W_k, W_v, W_o, h, mask=None: (
        reference.merge_heads(reference.scaled_dot_product_attention(
            reference.split_heads(X @ W_q, h), reference.split_heads(X @ W_k, h),
            reference.split_heads(X @ W_v, h), mask)[0]) @ W_o,
        reference.scaled_dot_product_attention(
            reference.split_heads(X @ W_q, h), reference.split_heads(X @ W_k, h),
            reference.split_heads(X @ W_v, h), mask)[1]),
}


# ------------------------------------------------------- split_heads_batched
def _bd(X, h):
    return X.shape[2] // h


BATCHED_WRONG = {
    "reshape without transpose": (
        lambda X, h: X.reshape(len(X), h, X.shape[1], -1), "reshaped without transposing"),
    "head axis left after the tokens": (
        lambda X, h: X.reshape(*X.shape[:2], h, -1), "the head axis must come before the tokens"),
    "lesson 2-D split's transpose kept (heads in front)": (
        lambda X, h: np.stack(np.split(X, h, axis=2)), "the head axis came first"),
    "every h-th column": (
        lambda X, h: np.stack([X[:, :, i::h] for i in range(h)], axis=1),
        "every num_heads-th column"),
    "heads transposed": (
        lambda X, h: np.stack(np.split(np.swapaxes(X, 1, 2), h, axis=1), axis=1),
        "each head came out transposed"),
    "sentences and tokens swapped": (
        lambda X, h: np.swapaxes(X, 0, 1).reshape(X.shape[1], X.shape[0], h, -1)
        .transpose(0, 2, 1, 3).reshape(len(X), h, X.shape[1], -1),
        "the sentences and the tokens were swapped"),
    "the 2-D transpose(1, 0, 2) on 4 axes": (
        lambda X, h: X.reshape(*X.shape[:2], h, -1).transpose(1, 0, 2), "raised ValueError"),
}

BATCHED_RIGHT = {
    "reshape and swap the middle axes": lambda X, h: X.reshape(*X.shape[:2], h, -1).swapaxes(1, 2),
    "reshape and transpose(0, 2, 1, 3)":
        lambda X, h: X.reshape(*X.shape[:2], h, -1).transpose(0, 2, 1, 3),
    "split_heads per sentence": lambda X, h: np.stack([reference.split_heads(x, h) for x in X]),
    "np.split on the last axis": lambda X, h: np.stack(np.split(X, h, axis=-1), axis=1),
    "loops": lambda X, h: np.array([[x[:, i * _bd(X, h):(i + 1) * _bd(X, h)] for i in range(h)]
                                    for x in X]),
    "einsum": lambda X, h: np.einsum("bnhd->bhnd", X.reshape(*X.shape[:2], h, -1)),
}


WRONG_BY_EXERCISE = {"split_heads": SPLIT_WRONG, "merge_heads": MERGE_WRONG,
                     "multi_head_attention": MHA_WRONG, "split_heads_batched": BATCHED_WRONG}
RIGHT_BY_EXERCISE = {"split_heads": SPLIT_RIGHT, "merge_heads": MERGE_RIGHT,
                     "multi_head_attention": MHA_RIGHT, "split_heads_batched": BATCHED_RIGHT}


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("name", list(WRONG_BY_EXERCISE))
def test_first_case_separates_tokens_heads_and_head_size(name, hidden):
    exercise = EXERCISES[name]
    first = exercise.cases(hidden)[0]
    if name == "merge_heads":
        h, n, d_head = first.args[0].shape
    elif name == "split_heads_batched":
        (B, n, d_model), h = first.args[0].shape, first.args[1]
        d_head = d_model // h
        assert B not in {n, h, d_head} and B > 1
    else:
        (n, d_model), h = first.args[0].shape, first.args[-1]
        d_head = d_model // h
    assert len({n, h, d_head}) == 3 and h > 1
