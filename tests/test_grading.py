"""The grader (``python -m helpers.grade``), end to end.

Submissions are built from the lessons' own student notebooks: the exercise
cell's stub is replaced by an implementation written here (wrong in a way the
lessons warn about, or right but written differently), or the whole exercise cell
by one written another way (``SHAPES``: inside ``try``, ``functools.partial``,
``%%time`` ...; ``ROUTES``: calling the course's own answer), and a few are broken
on purpose (a hanging cell, a kernel that dies, sys.exit, a syntax error, a missing
function). They are all graded in ONE command-line run (``--jobs 2``, ``--seed``),
cached for the module, and every test reads its own row of the gradebook.

Lessons whose student notebook does not exist yet are skipped with a reason.
"""

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import nbformat
import numpy as np
import pytest

from helpers.checking import evaluate
from helpers.exercises import EXERCISES, LESSONS
from helpers.instructor.grading import kernel, notebook, runner, worker

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow   # runs many whole notebooks: scheduled first (conftest.py)
BATCH_TIMEOUT = 60   # seconds per notebook in the batch run (the hanging one uses it all; the
                     # slowest of the others take 3-5 s on a busy 2-core machine)
SEED = 12345        # the batch run's --seed


def student_path(lesson):
    return ROOT / "notebooks" / f"{lesson}.ipynb"


def lesson_of(exercise):
    return EXERCISES[exercise].lesson


# ------------------------------------------------------------ implementations
class Impl:
    """A test implementation of an exercise: source code and what the grader must say.

    ``feedback`` is None for a correct implementation (full marks expected);
    otherwise a phrase of the lesson's mistake message that the grader's feedback
    must contain. ``points`` pins the expected points when worked out by hand.
    """

    def __init__(self, label, source, feedback=None, points=None):
        self.label, self.source = label, textwrap.dedent(source).strip() + "\n"
        self.feedback, self.points = feedback, points

    @property
    def wrong(self):
        return self.feedback is not None


IMPLEMENTATIONS = {
    "project_qkv": [
        Impl("K from W_q", """
            def project_qkv(X, W_q, W_k, W_v):
                return X @ W_q, X @ W_q, X @ W_v
            """, feedback="K was computed with W_q"),
        Impl("transposed weights", """
            def project_qkv(X, W_q, W_k, W_v):
                return X @ W_q.T, X @ W_k.T, X @ W_v.T
            """, feedback="the weight matrices were used transposed"),
        Impl("einsum", """
            def project_qkv(X, W_q, W_k, W_v):
                return tuple(np.einsum("nd,dk->nk", X, W) for W in (W_q, W_k, W_v))
            """),
        Impl("loops", """
            def project_qkv(X, W_q, W_k, W_v):
                def times(W):
                    return np.array([[sum(x[m] * W[m, j] for m in range(len(x)))
                                      for j in range(W.shape[1])] for x in X])
                return times(W_q), times(W_k), times(W_v)
            """),
    ],
    "cross_project_qkv": [
        Impl("self-attention on X_q", """
            def cross_project_qkv(X_q, X_kv, W_q, W_k, W_v):
                return X_q @ W_q, X_q @ W_k, X_q @ W_v
            """, feedback="all three came from X_q"),
        Impl("V from X_q", """
            def cross_project_qkv(X_q, X_kv, W_q, W_k, W_v):
                return X_q @ W_q, X_kv @ W_k, X_q @ W_v
            """, feedback="V came from X_q"),
        Impl("dot", """
            def cross_project_qkv(X_q, X_kv, W_q, W_k, W_v):
                return np.dot(X_q, W_q), np.dot(X_kv, W_k), np.dot(X_kv, W_v)
            """),
    ],
    "score_std": [
        Impl("the variance", """
            def score_std(d_k, sigma=1.0):
                return d_k * sigma ** 4
            """, feedback="that is the variance"),
        Impl("sigma ignored", """
            def score_std(d_k, sigma=1.0):
                return math.sqrt(d_k)
            """, feedback="sigma is ignored", points=2.0),   # 1 hidden case of 5 has sigma = 1
        Impl("square root of a sum", """
            def score_std(d_k, sigma=1.0):
                return math.sqrt(sum(sigma ** 4 for _ in range(d_k)))
            """),
    ],
    "attention_scores": [
        Impl("no scaling", """
            def attention_scores(Q, K):
                return Q @ K.T
            """, feedback="the scores are not scaled"),
        Impl("sqrt(d_model)", """
            def attention_scores(Q, K):
                return Q @ K.T / np.sqrt(8)   # d_model of the lessons, not d_k
            """, feedback="instead of sqrt(d_k)"),
        Impl("einsum", """
            def attention_scores(Q, K):
                return np.einsum("id,jd->ij", Q, K) / math.sqrt(Q.shape[1])
            """),
        Impl("loops", """
            def attention_scores(Q, K):
                d_k = len(Q[0])
                return np.array([[sum(q[m] * k[m] for m in range(d_k)) / d_k ** 0.5
                                  for k in K] for q in Q])
            """),
    ],
    "softmax": [
        Impl("naive exp overflows", """
            def softmax(x, axis=-1):
                e = np.exp(x)
                return e / e.sum(axis=axis, keepdims=True)
            """, feedback="overflow to NaN"),
        Impl("axis ignored", """
            def softmax(x, axis=-1):
                e = np.exp(x - x.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
            """, feedback="the axis argument is ignored", points=8.3),   # 1 hidden case of 6 uses axis
        Impl("log-sum-exp", """
            def softmax(x, axis=-1):
                m = np.max(x, axis=axis, keepdims=True)
                lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
                return np.exp(x - lse)
            """),
        Impl("loops", """
            def softmax(x, axis=-1):
                rows = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
                out = np.empty_like(rows)
                for idx in np.ndindex(rows.shape[:-1]):
                    top = max(rows[idx])
                    e = [math.exp(v - top) for v in rows[idx]]
                    out[idx] = [v / sum(e) for v in e]
                return np.moveaxis(out, -1, axis)
            """),
    ],
    "causal_mask": [
        Impl("upside down", """
            def causal_mask(n):
                return np.triu(np.ones((n, n), dtype=bool))
            """, feedback="upside down"),
        Impl("not boolean", """
            def causal_mask(n):
                return np.tril(np.ones((n, n)))
            """, feedback="return a boolean array"),
        Impl("comparison", """
            def causal_mask(n):
                return np.arange(n)[:, None] >= np.arange(n)[None, :]
            """),
        Impl("loops", """
            def causal_mask(n):
                mask = np.zeros((n, n), dtype=bool)
                for i in range(n):
                    for j in range(i + 1):
                        mask[i, j] = True
                return mask
            """),
    ],
    "causal_mask_for_new_tokens": [
        Impl("lined up with the first keys", """
            def causal_mask_for_new_tokens(n_q, n_k):
                return np.tril(np.ones((n_q, n_k), dtype=bool))
            """, feedback="lined up with the *first* keys"),
        Impl("additive", """
            def causal_mask_for_new_tokens(n_q, n_k):
                return np.where(np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q), 0.0, -np.inf)
            """, feedback="additive mask"),
        Impl("last rows of the full mask", """
            def causal_mask_for_new_tokens(n_q, n_k):
                return np.tril(np.ones((n_k, n_k), dtype=bool))[n_k - n_q:]
            """),
    ],
    "scaled_dot_product_attention": [
        Impl("no scaling", """
            def scaled_dot_product_attention(Q, K, V, mask=None):
                s = Q @ K.T
                if mask is not None:
                    s = np.where(mask, s, -np.inf)
                m = s.max(axis=-1, keepdims=True)
                m[~np.isfinite(m)] = 0
                e = np.exp(s - m)
                total = e.sum(axis=-1, keepdims=True)
                w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
                return w @ V, w
            """, feedback="the scores are not scaled"),
        Impl("fully masked row gives NaN", """
            def scaled_dot_product_attention(Q, K, V, mask=None):
                s = Q @ K.T / np.sqrt(Q.shape[-1])
                if mask is not None:
                    s = np.where(mask, s, -np.inf)
                e = np.exp(s - s.max(axis=-1, keepdims=True))
                w = e / e.sum(axis=-1, keepdims=True)
                return w @ V, w
            """, feedback="a fully masked row is NaN", points=8.0),   # 1 hidden case of 5 has one
        Impl("einsum", """
            def scaled_dot_product_attention(Q, K, V, mask=None):
                s = np.einsum("qd,kd->qk", Q, K) / math.sqrt(Q.shape[1])
                allowed = np.ones(s.shape, dtype=bool) if mask is None else np.broadcast_to(mask, s.shape)
                top = np.max(np.where(allowed, s, -np.inf), axis=1, keepdims=True)
                e = np.where(allowed, np.exp(s - np.where(np.isfinite(top), top, 0)), 0.0)
                total = e.sum(axis=1, keepdims=True)
                w = e / np.where(total > 0, total, 1.0)
                return np.einsum("qk,kv->qv", w, V), w
            """),
        Impl("loop over queries", """
            def scaled_dot_product_attention(Q, K, V, mask=None):
                n_q, n_k = len(Q), len(K)
                allowed = np.ones((n_q, n_k), dtype=bool) if mask is None else np.broadcast_to(mask, (n_q, n_k))
                W = np.zeros((n_q, n_k))
                for i in range(n_q):
                    keys = [j for j in range(n_k) if allowed[i, j]]
                    if not keys:
                        continue
                    s = [float(Q[i] @ K[j]) / math.sqrt(Q.shape[1]) for j in keys]
                    e = [math.exp(v - max(s)) for v in s]
                    for j, v in zip(keys, e):
                        W[i, j] = v / sum(e)
                return W @ V, W
            """),
    ],
    "split_heads": [
        Impl("reshape without transpose", """
            def split_heads(X, num_heads):
                n, d_model = X.shape
                return X.reshape(num_heads, n, d_model // num_heads)
            """, feedback="reshaped without transposing"),
        Impl("interleaved columns", """
            def split_heads(X, num_heads):
                n, d_model = X.shape
                return X.reshape(n, d_model // num_heads, num_heads).transpose(2, 0, 1)
            """, feedback="every num_heads-th column"),
        Impl("stack of slices", """
            def split_heads(X, num_heads):
                d = X.shape[1] // num_heads
                return np.stack([X[:, i * d:(i + 1) * d] for i in range(num_heads)])
            """),
        Impl("np.split", """
            def split_heads(X, num_heads):
                return np.array(np.split(X, num_heads, axis=1))
            """),
    ],
    "merge_heads": [
        Impl("reshape without transpose", """
            def merge_heads(H):
                h, n, d = H.shape
                return H.reshape(n, h * d)
            """, feedback="merged without transposing"),
        Impl("heads stacked under each other", """
            def merge_heads(H):
                return np.concatenate(list(H), axis=0)
            """, feedback="stacked under each other"),
        Impl("lambda with concatenate", """
            merge_heads = lambda H: np.concatenate(list(H), axis=-1)
            """),
        Impl("loops", """
            def merge_heads(H):
                h, n, d = H.shape
                out = np.zeros((n, h * d))
                for i in range(h):
                    for t in range(n):
                        out[t, i * d:(i + 1) * d] = H[i, t]
                return out
            """),
    ],
    "multi_head_attention": [
        Impl("W_o left out", """
            def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
                n, d_model = X.shape
                d = d_model // num_heads
                heads, maps = [], []
                for i in range(num_heads):
                    cols = slice(i * d, (i + 1) * d)
                    s = (X @ W_q[:, cols]) @ (X @ W_k[:, cols]).T / np.sqrt(d)
                    if mask is not None:
                        s = np.where(mask, s, -np.inf)
                    e = np.exp(s - s.max(axis=-1, keepdims=True))
                    w = e / e.sum(axis=-1, keepdims=True)
                    heads.append(w @ (X @ W_v[:, cols]))
                    maps.append(w)
                return np.concatenate(heads, axis=1), np.stack(maps)
            """, feedback="W_o was left out"),
        Impl("sqrt(d_model)", """
            def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
                n, d_model = X.shape
                d = d_model // num_heads
                heads, maps = [], []
                for i in range(num_heads):
                    cols = slice(i * d, (i + 1) * d)
                    s = (X @ W_q[:, cols]) @ (X @ W_k[:, cols]).T / np.sqrt(d_model)
                    if mask is not None:
                        s = np.where(mask, s, -np.inf)
                    e = np.exp(s - s.max(axis=-1, keepdims=True))
                    w = e / e.sum(axis=-1, keepdims=True)
                    heads.append(w @ (X @ W_v[:, cols]))
                    maps.append(w)
                return np.concatenate(heads, axis=1) @ W_o, np.stack(maps)
            """, feedback="sqrt(d_model) instead of sqrt(d_head)"),
        Impl("loop over heads", """
            def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
                n, d_model = X.shape
                d = d_model // num_heads
                heads, maps = [], []
                for i in range(num_heads):
                    cols = slice(i * d, (i + 1) * d)
                    s = (X @ W_q[:, cols]) @ (X @ W_k[:, cols]).T / math.sqrt(d)
                    if mask is not None:
                        s = np.where(mask, s, -np.inf)
                    e = np.exp(s - s.max(axis=-1, keepdims=True))
                    w = e / e.sum(axis=-1, keepdims=True)
                    heads.append(w @ (X @ W_v[:, cols]))
                    maps.append(w)
                return np.hstack(heads) @ W_o, np.array(maps)
            """),
        Impl("einsum", """
            def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
                n, d_model = X.shape
                d = d_model // num_heads
                q, k, v = (np.einsum("nm,mhd->hnd", X, W.reshape(d_model, num_heads, d))
                           for W in (W_q, W_k, W_v))
                s = np.einsum("hqd,hkd->hqk", q, k) / np.sqrt(d)
                if mask is not None:
                    s = np.where(mask, s, -np.inf)
                s = s - s.max(axis=-1, keepdims=True)
                w = np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)
                out = np.einsum("hqk,hkd->qhd", w, v).reshape(n, d_model)
                return out @ W_o, w
            """),
    ],
    "attention_flops": [
        Impl("multiply-add counted once", """
            def attention_flops(n, d_model):
                d = d_model
                return {"projections": 3 * n * d * d, "scores": n * n * d,
                        "weighted_sum": n * n * d, "output_projection": n * d * d}
            """, feedback="a multiply-add is 2 floating-point operations"),
        Impl("W_O among the projections", """
            def attention_flops(n, d_model):
                d = d_model
                return {"projections": 8 * n * d * d, "scores": 2 * n * n * d,
                        "weighted_sum": 2 * n * n * d, "output_projection": 2 * n * d * d}
            """, feedback="W_O was counted among the projections"),
        Impl("counted product by product", """
            def attention_flops(n, d_model):
                def matmul(a, b, c):          # (a, b) @ (b, c): a*c dot products of length b
                    return a * c * (b + b)     # b multiplies and b adds each
                return {"projections": sum(matmul(n, d_model, d_model) for _ in "QKV"),
                        "scores": matmul(n, d_model, n),
                        "weighted_sum": matmul(n, n, d_model),
                        "output_projection": matmul(n, d_model, d_model)}
            """),
        Impl("floats", """
            def attention_flops(n, d_model):
                n, d = float(n), float(d_model)
                return dict(projections=6.0 * n * d ** 2, scores=2.0 * n ** 2 * d,
                            weighted_sum=2.0 * d * n ** 2, output_projection=2.0 * n * d ** 2)
            """),
    ],
    "fit_power_law": [
        Impl("intercept instead of slope", """
            def fit_power_law(sizes, costs):
                return float(np.polyfit(np.log(sizes), np.log(costs), 1)[1])
            """, feedback="this is the intercept"),
        Impl("linear axes", """
            def fit_power_law(sizes, costs):
                return float(np.polyfit(sizes, costs, 1)[0])
            """, feedback="fitted on linear axes"),
        Impl("log2 and polyfit", """
            def fit_power_law(sizes, costs):
                return float(np.polyfit(np.log2(sizes), np.log2(costs), 1)[0])
            """),
        Impl("least squares by hand", """
            def fit_power_law(sizes, costs):
                x = [math.log10(s) for s in sizes]
                y = [math.log10(c) for c in costs]
                mx, my = sum(x) / len(x), sum(y) / len(y)
                return (sum((a - mx) * (b - my) for a, b in zip(x, y))
                        / sum((a - mx) ** 2 for a in x))
            """),
    ],
    "online_softmax_attention": [
        Impl("no rescale", """
            def online_softmax_attention(Q, K, V, block_size=128):
                m = np.full((len(Q), 1), -np.inf)
                l = np.zeros((len(Q), 1))
                acc = np.zeros((len(Q), V.shape[1]))
                for start in range(0, len(K), block_size):
                    s = Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1])
                    m = np.maximum(m, s.max(axis=1, keepdims=True))
                    p = np.exp(s - m)
                    l = l + p.sum(axis=1, keepdims=True)
                    acc = acc + p @ V[start:start + block_size]
                return acc / l
            """, feedback="are not rescaled when the max changes"),
        Impl("last partial block skipped", """
            def online_softmax_attention(Q, K, V, block_size=128):
                m = np.full((len(Q), 1), -np.inf)
                l = np.zeros((len(Q), 1))
                acc = np.zeros((len(Q), V.shape[1]))
                for start in range(0, len(K) - len(K) % block_size, block_size):
                    s = Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1])
                    m_new = np.maximum(m, s.max(axis=1, keepdims=True))
                    p = np.exp(s - m_new)
                    r = np.exp(m - m_new)
                    l = l * r + p.sum(axis=1, keepdims=True)
                    acc = acc * r + p @ V[start:start + block_size]
                    m = m_new
                return acc / l
            """, feedback="skipped"),
        Impl("normalised running output", """
            def online_softmax_attention(Q, K, V, block_size=128):
                m = np.full((len(Q), 1), -np.inf)
                l = np.zeros((len(Q), 1))
                out = np.zeros((len(Q), V.shape[1]))
                for start in range(0, len(K), block_size):
                    s = np.einsum("qd,kd->qk", Q, K[start:start + block_size]) / math.sqrt(Q.shape[1])
                    m_new = np.maximum(m, s.max(axis=1, keepdims=True))
                    p = np.exp(s - m_new)
                    l_new = l * np.exp(m - m_new) + p.sum(axis=1, keepdims=True)
                    out = out * (l * np.exp(m - m_new) / l_new) + (p @ V[start:start + block_size]) / l_new
                    m, l = m_new, l_new
                return out
            """),
        Impl("one query at a time", """
            def online_softmax_attention(Q, K, V, block_size=128):
                out = np.zeros((len(Q), V.shape[1]))
                for i, q in enumerate(Q):
                    m, l, acc = -math.inf, 0.0, np.zeros(V.shape[1])
                    for start in range(0, len(K), block_size):
                        s = K[start:start + block_size] @ q / math.sqrt(len(q))
                        m_new = max(m, float(s.max()))
                        p = np.exp(s - m_new)
                        l = l * math.exp(m - m_new) + float(p.sum())
                        acc = acc * math.exp(m - m_new) + p @ V[start:start + block_size]
                        m = m_new
                    out[i] = acc / l
                return out
            """),
    ],
    "softmax_backward": [
        Impl("diagonal only", """
            def softmax_backward(y, dy, axis=-1):
                return y * (1 - y) * dy
            """, feedback="only the diagonal of the Jacobian"),
        Impl("axis ignored", """
            def softmax_backward(y, dy, axis=-1):
                return y * (dy - np.sum(dy * y, axis=-1, keepdims=True))
            """, feedback="the axis argument is ignored"),
        Impl("Jacobian per slice (right values, but it builds what the exercise forbids)", """
            def softmax_backward(y, dy, axis=-1):
                ys, ds = np.moveaxis(y, axis, -1), np.moveaxis(dy, axis, -1)
                out = np.empty_like(ys)
                for idx in np.ndindex(ys.shape[:-1]):
                    J = np.diag(ys[idx]) - np.outer(ys[idx], ys[idx])
                    out[idx] = J.T @ ds[idx]
                return np.moveaxis(out, -1, axis)
            """, feedback="without building the Jacobian"),   # right values; the exercise forbids it
        Impl("a loop over the slices, no Jacobian", """
            def softmax_backward(y, dy, axis=-1):
                ys, ds = np.moveaxis(y, axis, -1), np.moveaxis(dy, axis, -1)
                out = np.empty_like(ys)
                for idx in np.ndindex(ys.shape[:-1]):
                    out[idx] = ys[idx] * (ds[idx] - ys[idx] @ ds[idx])
                return np.moveaxis(out, -1, axis)
            """),
    ],
    "attention_backward": [
        Impl("no 1/sqrt(d_k)", """
            def attention_backward(Q, K, V, weights, d_out):
                T = lambda A: np.swapaxes(A, -1, -2)
                dW = d_out @ T(V)
                dS = weights * (dW - np.sum(dW * weights, axis=-1, keepdims=True))
                return dS @ K, T(dS) @ Q, T(weights) @ d_out
            """, feedback="the 1/sqrt(d_k) is missing in dQ and dK"),
        Impl("dV with W", """
            def attention_backward(Q, K, V, weights, d_out):
                T = lambda A: np.swapaxes(A, -1, -2)
                dW = d_out @ T(V)
                dS = weights * (dW - np.sum(dW * weights, axis=-1, keepdims=True))
                c = 1 / math.sqrt(Q.shape[-1])
                return dS @ K * c, T(dS) @ Q * c, weights @ d_out
            """, feedback="dV was computed with W instead of its transpose"),
        Impl("einsum", """
            def attention_backward(Q, K, V, weights, d_out):
                dW = np.einsum("...qv,...kv->...qk", d_out, V)
                dS = weights * (dW - np.einsum("...qk,...qk->...q", dW, weights)[..., None])
                c = 1 / math.sqrt(Q.shape[-1])
                return (np.einsum("...qk,...kd->...qd", dS, K) * c,
                        np.einsum("...qk,...qd->...kd", dS, Q) * c,
                        np.einsum("...qk,...qv->...kv", weights, d_out))
            """),
    ],
    "numerical_gradient": [
        Impl("forward difference", """
            def numerical_gradient(f, x, eps=1e-6):
                g = np.zeros_like(x)
                for i in np.ndindex(x.shape):
                    z = x.copy()
                    z[i] += eps
                    g[i] = (f(z) - f(x)) / eps
                return g
            """, feedback="a one-sided (forward) difference"),
        Impl("x nudged in place", """
            def numerical_gradient(f, x, eps=1e-6):
                g = np.zeros_like(x)
                for i in np.ndindex(x.shape):
                    x[i] += eps
                    up = f(x)
                    x[i] -= 2 * eps
                    g[i] = (up - f(x)) / (2 * eps)
                return g
            """, feedback="changed its input x in place"),
        Impl("basis vectors", """
            def numerical_gradient(f, x, eps=1e-6):
                g = np.zeros(x.shape)
                for i in range(x.size):
                    e = np.zeros(x.shape)
                    e.flat[i] = eps
                    g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
                return g
            """),
    ],
    "multi_head_attention_backward": [
        Impl("W_o not transposed", """
            def multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
                return _mha_grads_by_heads(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask, W_o, "qkv")
            """, feedback="W_o's transpose is missing"),
        Impl("dX through Q only", """
            def multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
                return _mha_grads_by_heads(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask, W_o.T, "q")
            """, feedback="dX only has the path through Q"),
        Impl("loop over heads", """
            def multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
                return _mha_grads_by_heads(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask, W_o.T, "qkv")
            """),
    ],
    "split_heads_batched": [
        Impl("reshape without transpose", """
            def split_heads_batched(X, num_heads):
                B, n, d_model = X.shape
                return X.reshape(B, num_heads, n, d_model // num_heads)
            """, feedback="reshaped without transposing"),
        Impl("heads in front of the batch", """
            def split_heads_batched(X, num_heads):
                return np.stack(np.split(X, num_heads, axis=2))
            """, feedback="the head axis came first"),
        Impl("swap the middle axes", """
            def split_heads_batched(X, num_heads):
                B, n, d_model = X.shape
                return X.reshape(B, n, num_heads, -1).swapaxes(1, 2)
            """),
    ],
    "flops_crossing": [
        Impl("n = d", """
            def flops_crossing(d_model, with_output_projection=True):
                return d_model
            """, feedback="rule of thumb"),
        Impl("grid counted once", """
            def flops_crossing(d_model, with_output_projection=True):
                return (8 if with_output_projection else 6) * d_model / 2
            """, feedback="counted as one product"),
        Impl("from the counts", """
            def flops_crossing(d_model, with_output_projection=True):
                return (4 if with_output_projection else 3) * d_model / 2
            """),
    ],
    "loss_gradient": [
        Impl("no 1/B", """
            def loss_gradient(out, query, right, W_out):
                rows = np.arange(len(query))
                h = out[rows, query]
                z = h @ W_out
                d = np.exp(z - z.max(axis=1, keepdims=True))
                d = d / d.sum(axis=1, keepdims=True)
                d[rows, right] -= 1
                d_out = np.zeros_like(out)
                d_out[rows, query] = d @ W_out.T
                return d_out, h.T @ d
            """, feedback="the mean's 1/B is missing"),
        Impl("every sentence at every pronoun", """
            def loss_gradient(out, query, right, W_out):
                rows = np.arange(len(query))
                h = out[rows, query]
                z = h @ W_out
                d = np.exp(z - z.max(axis=1, keepdims=True))
                d = d / d.sum(axis=1, keepdims=True)
                d[rows, right] -= 1
                d /= len(query)
                d_out = np.zeros_like(out)
                d_out[:, query] = d @ W_out.T
                return d_out, h.T @ d
            """, feedback="pairs all sentences with all positions"),
        Impl("one sentence at a time", """
            def loss_gradient(out, query, right, W_out):
                d_out, dW_out = np.zeros_like(out), np.zeros_like(W_out)
                for b in range(len(query)):
                    h = out[b, query[b]]
                    z = h @ W_out
                    p = np.exp(z - z.max())
                    p = p / p.sum()
                    p[right[b]] -= 1
                    d_out[b, query[b]] = W_out @ p / len(query)
                    dW_out += np.outer(h, p) / len(query)
                return d_out, dW_out
            """),
    ],
    "embedding_gradient": [
        Impl("fancy-index +=", """
            def embedding_gradient(tokens, dX, vocab_size):
                d_tok = np.zeros((vocab_size, dX.shape[-1]))
                d_tok[tokens] += dX
                return d_tok, dX.sum(axis=0)
            """, feedback="d_tok[tokens] += dX writes each row once"),
        Impl("d_pos averaged", """
            def embedding_gradient(tokens, dX, vocab_size):
                d_tok = np.zeros((vocab_size, dX.shape[-1]))
                np.add.at(d_tok, tokens, dX)
                return d_tok, dX.mean(axis=0)
            """, feedback="d_pos is the mean over the sentences"),
        Impl("one-hot product", """
            def embedding_gradient(tokens, dX, vocab_size):
                one_hot = np.eye(vocab_size)[tokens.ravel()]
                return one_hot.T @ dX.reshape(-1, dX.shape[-1]), dX.sum(axis=0)
            """),
    ],
    "residual_attention_backward": [
        Impl("no residual gradient", """
            def residual_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
                return multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask)
            """, feedback="dX is missing the residual's gradient"),
        Impl("only the residual", """
            def residual_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
                grads = multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask)
                grads["X"] = d_out
                return grads
            """, feedback="dX is only the residual's gradient"),
        Impl("copy, then add", """
            def residual_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None):
                grads = dict(multi_head_attention_backward(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=mask))
                dX = d_out.copy()
                dX += grads["X"]
                grads["X"] = dX
                return grads
            """),
    ],
    "ablated_stack": [
        Impl("one layer too late", """
            def ablated_stack(X, layers, num_heads, layer, positions, mask=None):
                for i, W in enumerate(layers):
                    out, weights = multi_head_attention(X, *W, num_heads, mask)
                    if i == layer:
                        out = out.copy()
                        for b in range(len(X)):
                            out[b, positions[b]] = 0
                    X = X + out
                return X, weights
            """, feedback="one layer too late"),
        Impl("stream zeroed", """
            def ablated_stack(X, layers, num_heads, layer, positions, mask=None):
                for l, W in enumerate(layers, start=1):
                    out, weights = multi_head_attention(X, *W, num_heads, mask)
                    X = X + out
                    if l == layer:
                        for b in range(len(X)):
                            X[b, positions[b]] = 0.0
                return X, weights
            """, feedback="the whole residual stream was zeroed"),
        Impl("np.where", """
            def ablated_stack(X, layers, num_heads, layer, positions, mask=None):
                chosen = np.zeros(X.shape[:2], dtype=bool)
                np.put_along_axis(chosen, positions, True, axis=1)
                for l in range(1, len(layers) + 1):
                    out, weights = multi_head_attention(X, *layers[l - 1], num_heads, mask)
                    X = X + (np.where(chosen[:, :, None], 0.0, out) if l == layer else out)
                return X, weights
            """),
    ],
    "patched_stack": [
        Impl("the update from its own run", """
            def patched_stack(X, X_source, layers, num_heads, layer, positions, mask=None):
                for l, W in enumerate(layers, start=1):
                    out, weights = multi_head_attention(X, *W, num_heads, mask)
                    X = X + out
                return X, weights
            """, feedback="nothing was patched"),
        Impl("the source's stream", """
            def patched_stack(X, X_source, layers, num_heads, layer, positions, mask=None):
                S = X_source
                for W in layers[:layer]:
                    S = S + multi_head_attention(S, *W, num_heads, mask)[0]
                for l, W in enumerate(layers, start=1):
                    out, weights = multi_head_attention(X, *W, num_heads, mask)
                    X = X + out
                    if l == layer:
                        for b in range(len(X)):
                            X[b, positions[b]] = S[b, positions[b]]
                return X, weights
            """, feedback="the source's whole stream was copied in"),
        Impl("a loop over sentences", """
            def patched_stack(X, X_source, layers, num_heads, layer, positions, mask=None):
                S = X_source
                for W in layers[:layer]:
                    lent = multi_head_attention(S, *W, num_heads, mask)[0]
                    S = S + lent
                for l, W in enumerate(layers, start=1):
                    out, weights = multi_head_attention(X, *W, num_heads, mask)
                    if l == layer:
                        out = out.copy()
                        for b in range(len(X)):
                            out[b, positions[b]] = lent[b, positions[b]]
                    X = X + out
                return X, weights
            """),
    ],
    "causal_online_softmax_attention": [
        Impl("no mask", """
            def causal_online_softmax_attention(Q, K, V, block_size=128):
                return online_softmax_attention(Q, K, V, block_size)
            """, feedback="the mask was left out"),
        Impl("mask the wrong way round", """
            def causal_online_softmax_attention(Q, K, V, block_size=128):
                n = len(Q)
                m, l, acc = np.full((n, 1), -np.inf), np.zeros((n, 1)), np.zeros((n, V.shape[1]))
                for start in range(0, n, block_size):
                    s = Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1])
                    keys = np.arange(start, start + s.shape[1])
                    s = np.where(keys[None, :] >= np.arange(n)[:, None], s, -np.inf)
                    m_new = np.maximum(m, s.max(axis=1, keepdims=True))
                    p = np.exp(s - m_new)
                    l = l * np.exp(m - m_new) + p.sum(axis=1, keepdims=True)
                    acc = acc * np.exp(m - m_new) + p @ V[start:start + block_size]
                    m = m_new
                return acc / l
            """, feedback="the wrong way round"),
        Impl("mask each block", """
            def causal_online_softmax_attention(Q, K, V, block_size=128):
                n = len(Q)
                m, l, acc = np.full((n, 1), -np.inf), np.zeros((n, 1)), np.zeros((n, V.shape[1]))
                for start in range(0, n, block_size):
                    s = Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1])
                    keys = np.arange(start, start + s.shape[1])
                    s = np.where(keys[None, :] <= np.arange(n)[:, None], s, -np.inf)
                    m_new = np.maximum(m, s.max(axis=1, keepdims=True))
                    p = np.exp(s - m_new)
                    l = l * np.exp(m - m_new) + p.sum(axis=1, keepdims=True)
                    acc = acc * np.exp(m - m_new) + p @ V[start:start + block_size]
                    m = m_new
                return acc / l
            """),
    ],
    "sinusoidal_encoding": [
        Impl("sin and cos swapped", """
            def sinusoidal_encoding(n, d_model, base=10000.0):
                angle = np.arange(n)[:, None] / base ** (np.arange(0, d_model, 2) / d_model)
                PE = np.zeros((n, d_model))
                PE[:, 0::2], PE[:, 1::2] = np.cos(angle), np.sin(angle)
                return PE
            """, feedback="sin and cos are swapped"),
        Impl("sines then cosines", """
            def sinusoidal_encoding(n, d_model, base=10000.0):
                angle = np.arange(n)[:, None] / base ** (np.arange(0, d_model, 2) / d_model)
                return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
            """, feedback="split halves"),
        Impl("loops", """
            def sinusoidal_encoding(n, d_model, base=10000.0):
                PE = np.zeros((n, d_model))
                for p in range(n):
                    for i in range(d_model // 2):
                        PE[p, 2 * i] = math.sin(p / base ** (2 * i / d_model))
                        PE[p, 2 * i + 1] = math.cos(p / base ** (2 * i / d_model))
                return PE
            """),
    ],
    "rope": [
        Impl("clockwise", """
            def rope(x, positions, base=10000.0):
                d = x.shape[-1]
                t = -np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
                z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * t)
                return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
            """, feedback="the angle has the wrong sign"),
        Impl("split halves", """
            def rope(x, positions, base=10000.0):
                d = x.shape[-1]
                t = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
                a, b = x[..., : d // 2], x[..., d // 2:]
                return np.concatenate([a * np.cos(t) - b * np.sin(t), a * np.sin(t) + b * np.cos(t)], axis=-1)
            """, feedback="split-halves convention"),
        Impl("complex numbers", """
            def rope(x, positions, base=10000.0):
                d = x.shape[-1]
                t = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
                z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * t)
                return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
            """),
    ],
    "rotary_attention": [
        Impl("V rotated too", """
            def rotary_attention(Q, K, V, positions, mask=None):
                def turn(x):
                    d = x.shape[-1]
                    t = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
                    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * t)
                    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
                return scaled_dot_product_attention(turn(Q), turn(K), turn(V), mask)
            """, feedback="V was rotated too"),
        Impl("nothing rotated", """
            def rotary_attention(Q, K, V, positions, mask=None):
                return scaled_dot_product_attention(Q, K, V, mask)
            """, feedback="nothing was rotated"),
        Impl("by hand", """
            def rotary_attention(Q, K, V, positions, mask=None):
                def turn(x):
                    d = x.shape[-1]
                    t = np.asarray(positions)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
                    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * t)
                    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
                S = turn(Q) @ np.swapaxes(turn(K), -1, -2) / math.sqrt(Q.shape[-1])
                if mask is not None:
                    S = np.where(mask, S, -np.inf)
                top = S.max(axis=-1, keepdims=True)
                E = np.exp(S - np.where(np.isfinite(top), top, 0.0))   # a fully masked row: all zeros
                total = E.sum(axis=-1, keepdims=True)
                W = np.divide(E, total, out=np.zeros_like(E), where=total > 0)
                return W @ V, W
            """),
    ],
    "rope_backward": [
        Impl("the forward again", """
            def rope_backward(d_out, positions, base=10000.0):
                d = d_out.shape[-1]
                t = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
                z = (d_out[..., 0::2] + 1j * d_out[..., 1::2]) * np.exp(1j * t)
                return np.stack([z.real, z.imag], axis=-1).reshape(d_out.shape)
            """, feedback="this is the forward rotation again"),
        Impl("not rotated", """
            def rope_backward(d_out, positions, base=10000.0):
                return d_out.copy()
            """, feedback="d_out is returned unrotated"),
        Impl("conjugate", """
            def rope_backward(d_out, positions, base=10000.0):
                d = d_out.shape[-1]
                t = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
                z = (d_out[..., 0::2] + 1j * d_out[..., 1::2]) * np.exp(-1j * t)
                return np.stack([z.real, z.imag], axis=-1).reshape(d_out.shape)
            """),
    ],
}

# The multi-head implementations above share this loop over heads (defined in the
# submission next to them; it calls no other exercise).
MHA_BY_HEADS = """
    def _mha_grads_by_heads(X, W_q, W_k, W_v, W_o, h, d_out, mask, W_o_back, x_paths):
        n, d_model = X.shape
        d = d_model // h
        allowed = np.ones((n, n), dtype=bool) if mask is None else mask
        grads = {key: np.zeros((d_model, d_model)) for key in ("W_q", "W_k", "W_v")}
        merged, dX = np.zeros((n, d_model)), np.zeros_like(X)
        d_merged = d_out @ W_o_back
        for c in [slice(i * d, (i + 1) * d) for i in range(h)]:
            Q, K, V = X @ W_q[:, c], X @ W_k[:, c], X @ W_v[:, c]
            S = np.where(allowed, Q @ K.T / math.sqrt(d), -np.inf)
            top = np.where(allowed.any(axis=1, keepdims=True), S.max(axis=1, keepdims=True), 0.0)
            E = np.exp(S - top)
            A = E / np.maximum(E.sum(axis=1, keepdims=True), 1e-300)
            merged[:, c] = A @ V
            dA = d_merged[:, c] @ V.T
            dS = A * (dA - np.sum(dA * A, axis=1, keepdims=True))
            dQ, dK, dV = dS @ K / math.sqrt(d), dS.T @ Q / math.sqrt(d), A.T @ d_merged[:, c]
            for key, W, g in (("W_q", W_q, dQ), ("W_k", W_k, dK), ("W_v", W_v, dV)):
                grads[key][:, c] = X.T @ g
                if key[-1] in x_paths:                 # the paths through Q, K, V that reach X
                    dX += g @ W[:, c].T
        return {**grads, "W_o": merged.T @ d_out, "X": dX}
"""
for _impl in IMPLEMENTATIONS["multi_head_attention_backward"]:
    _impl.source = textwrap.dedent(MHA_BY_HEADS).strip() + "\n\n\n" + _impl.source


# Lesson 11 (grouped-query attention, sliding windows, one decode step).
IMPLEMENTATIONS.update({
    "grouped_query_attention": [
        Impl("np.tile pairs head i with kv head i % g", """
            def grouped_query_attention(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
                n, d_model = X.shape
                d = d_model // num_heads
                Q = (X @ W_q).reshape(n, num_heads, d).transpose(1, 0, 2)
                K = (X @ W_k).reshape(n, num_kv_heads, d).transpose(1, 0, 2)
                V = (X @ W_v).reshape(n, num_kv_heads, d).transpose(1, 0, 2)
                reps = (num_heads // num_kv_heads, 1, 1)
                out, w = scaled_dot_product_attention(Q, np.tile(K, reps), np.tile(V, reps), mask)
                return out.transpose(1, 0, 2).reshape(n, d_model) @ W_o, w
            """, feedback="i % num_kv_heads"),
        Impl("scaled by sqrt(d_model)", """
            def grouped_query_attention(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
                n, d_model = X.shape
                d = d_model // num_heads
                outs, maps = [], []
                for i in range(num_heads):
                    j = i // (num_heads // num_kv_heads)
                    S = (X @ W_q[:, i*d:(i+1)*d]) @ (X @ W_k[:, j*d:(j+1)*d]).T / math.sqrt(d_model)
                    if mask is not None:
                        S = np.where(mask, S, -np.inf)
                    A = np.exp(S - S.max(axis=1, keepdims=True))
                    A = A / A.sum(axis=1, keepdims=True)
                    outs.append(A @ (X @ W_v[:, j*d:(j+1)*d]))
                    maps.append(A)
                return np.hstack(outs) @ W_o, np.array(maps)
            """, feedback="scaled by sqrt(d_model), the model width"),
        Impl("loop over query heads", """
            def grouped_query_attention(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
                n, d_model = X.shape
                d = d_model // num_heads
                outs, maps = [], []
                for i in range(num_heads):
                    j = i // (num_heads // num_kv_heads)
                    S = (X @ W_q[:, i*d:(i+1)*d]) @ (X @ W_k[:, j*d:(j+1)*d]).T / math.sqrt(d)
                    if mask is not None:
                        S = np.where(mask, S, -np.inf)
                    A = np.exp(S - S.max(axis=1, keepdims=True))
                    A = A / A.sum(axis=1, keepdims=True)
                    outs.append(A @ (X @ W_v[:, j*d:(j+1)*d]))
                    maps.append(A)
                return np.hstack(outs) @ W_o, np.array(maps)
            """),
    ],
    "sliding_window_mask": [
        Impl("one token too many", """
            def sliding_window_mask(n, window):
                i, j = np.arange(n)[:, None], np.arange(n)[None, :]
                return (i >= j) & (i - j <= window)
            """, feedback="window + 1 tokens"),
        Impl("both ways", """
            def sliding_window_mask(n, window):
                i, j = np.arange(n)[:, None], np.arange(n)[None, :]
                return np.abs(i - j) < window
            """, feedback="reaches both ways"),
        Impl("tril minus tril", """
            def sliding_window_mask(n, window):
                ones = np.ones((n, n), dtype=bool)
                return np.tril(ones) & ~np.tril(ones, -window)
            """),
    ],
    "attention_decode_step": [
        Impl("attends before appending", """
            def attention_decode_step(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None):
                g = num_kv_heads or num_heads
                d = len(x) // num_heads
                q = (x @ W_q).reshape(num_heads, 1, d)
                K, V = cache["K"], cache["V"]
                if window is not None:
                    K, V = K[:, -(window - 1):] if window > 1 else K[:, :0], V[:, -(window - 1):] if window > 1 else V[:, :0]
                heads = np.arange(num_heads) // (num_heads // g)
                if K.shape[1]:
                    out, _ = scaled_dot_product_attention(q, K[heads], V[heads])
                else:
                    out = np.zeros((num_heads, 1, d))
                K = np.concatenate([K, (x @ W_k).reshape(g, 1, d)], axis=1)
                V = np.concatenate([V, (x @ W_v).reshape(g, 1, d)], axis=1)
                return out.reshape(-1) @ W_o, {"K": K, "V": V}
            """, feedback="appended AFTER attending"),
        Impl("never cut to the window", """
            def attention_decode_step(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None):
                g = num_kv_heads or num_heads
                d = len(x) // num_heads
                K = np.concatenate([cache["K"], (x @ W_k).reshape(g, 1, d)], axis=1)
                V = np.concatenate([cache["V"], (x @ W_v).reshape(g, 1, d)], axis=1)
                heads = np.arange(num_heads) // (num_heads // g)
                out, _ = scaled_dot_product_attention((x @ W_q).reshape(num_heads, 1, d), K[heads], V[heads])
                return out.reshape(-1) @ W_o, {"K": K, "V": V}
            """, feedback="the cache grows past the window"),
        Impl("writes into the given cache", """
            def attention_decode_step(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None):
                g = num_kv_heads or num_heads
                d = len(x) // num_heads
                cache["K"] = np.concatenate([cache["K"], (x @ W_k).reshape(g, 1, d)], axis=1)[:, -(window or 0):]
                cache["V"] = np.concatenate([cache["V"], (x @ W_v).reshape(g, 1, d)], axis=1)[:, -(window or 0):]
                heads = np.arange(num_heads) // (num_heads // g)
                out, _ = scaled_dot_product_attention((x @ W_q).reshape(num_heads, 1, d),
                                                      cache["K"][heads], cache["V"][heads])
                return out.reshape(-1) @ W_o, cache
            """, feedback="it changed the cache it was given"),
        Impl("loop over query heads", """
            def attention_decode_step(x, cache, W_q, W_k, W_v, W_o, num_heads, num_kv_heads=None, window=None,
                                      position=None, base=10000.0):
                g = num_kv_heads or num_heads
                d = len(x) // num_heads
                q, k = (x @ W_q).reshape(num_heads, 1, d), (x @ W_k).reshape(g, 1, d)
                if position is not None:
                    q, k = rope(q, [position], base), rope(k, [position], base)
                K = np.concatenate([cache["K"], k], axis=1)
                V = np.concatenate([cache["V"], (x @ W_v).reshape(g, 1, d)], axis=1)
                if window is not None:
                    K, V = K[:, max(0, K.shape[1] - window):], V[:, max(0, V.shape[1] - window):]
                q, parts = q.reshape(-1), []
                for i in range(num_heads):
                    j = i // (num_heads // g)
                    s = K[j] @ q[i*d:(i+1)*d] / math.sqrt(d)
                    w = np.exp(s - s.max())
                    parts.append(w / w.sum() @ V[j])
                return np.concatenate(parts) @ W_o, {"K": K, "V": V}
            """),
    ],
    "key_padding_mask": [
        Impl("True = padding, PyTorch's convention", """
            def key_padding_mask(lengths, n):
                return np.arange(n)[None, None, :] >= np.asarray(lengths)[:, None, None]
            """, feedback="the mask is inverted"),
        Impl("no query axis", """
            def key_padding_mask(lengths, n):
                return np.arange(n)[None, :] < np.asarray(lengths)[:, None]
            """, feedback="Add an axis for the queries"),
        Impl("a loop over the sequences", """
            def key_padding_mask(lengths, n):
                mask = np.zeros((len(lengths), 1, n), dtype=bool)
                for b, length in enumerate(lengths):
                    mask[b, 0, :length] = True
                return mask
            """),
    ],
})

def test_every_exercise_has_at_least_two_wrong_and_one_right_implementation():
    assert set(IMPLEMENTATIONS) >= set(EXERCISES)
    for name, impls in IMPLEMENTATIONS.items():
        assert sum(i.wrong for i in impls) >= 2, name
        assert sum(not i.wrong for i in impls) >= 1, name


# ------------------------------------------------------------ building submissions
PRELUDE = "import math\nimport numpy as np\n"


def exercise_cell(nb, name):
    """Index of the code cell defining the exercise function ``name`` (the stub's cell)."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and name in notebook.bound_names(cell.source)[0]:
            return index
    raise LookupError(f"no cell defines {name}")


def replace_function(nb, name, source):
    """Put ``source`` in place of the function ``name`` in its exercise cell."""
    import ast
    index = exercise_cell(nb, name)
    cell = nb.cells[index]
    tree = ast.parse(cell.source)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    lines = cell.source.splitlines()
    start = node.lineno - 1 - len(node.decorator_list)
    cell.source = "\n".join(lines[:start] + (PRELUDE + source).splitlines()
                            + lines[node.end_lineno:])
    return index


def insert_code(nb, index, source):
    nb.cells.insert(index, nbformat.v4.new_code_cell(source))


def variant_notebooks():
    """``{(exercise, label): file name}`` and ``{file name: notebook}`` of the variants.

    Notebook k of a lesson holds, for each exercise of the lesson, implementation
    number k (rotated by the exercise's position, so wrong and right mix) of that
    exercise. The implementations never call each other, so each exercise's
    grade depends on its own implementation only.
    """
    where, notebooks = {}, {}
    for lesson, exercises in LESSONS.items():
        names = [e.name for e in exercises if e.name in IMPLEMENTATIONS]
        if not names or not student_path(lesson).exists():
            continue
        count = max(len(IMPLEMENTATIONS[n]) for n in names)
        for k in range(count):
            nb = nbformat.read(str(student_path(lesson)), as_version=4)
            file = f"variant_{lesson}_{k}.ipynb"
            for offset, name in enumerate(names):
                impls = IMPLEMENTATIONS[name]
                impl = impls[(k + offset) % len(impls)]
                replace_function(nb, name, impl.source)
                where.setdefault((name, impl.label), file)
            notebooks[file] = nb
    return where, notebooks


def impl(name, label):
    return next(i for i in IMPLEMENTATIONS[name] if i.label == label).source


LESSON03 = "03_softmax_and_attention"
RIGHT_03 = {"softmax": impl("softmax", "log-sum-exp"), "causal_mask": impl("causal_mask", "comparison"),
            "scaled_dot_product_attention": impl("scaled_dot_product_attention", "einsum")}


def special_notebooks():
    """Broken or unusual submissions (lessons 01 and 03): ``{file name: notebook}``."""
    out = {}
    if student_path("01_qkv_projections").exists():
        def lesson01(source=impl("project_qkv", "einsum")):
            nb = nbformat.read(str(student_path("01_qkv_projections")), as_version=4)
            return nb, replace_function(nb, "project_qkv", source)

        nb, i = lesson01()
        insert_code(nb, i - 1, "import sys\nsys.exit(3)   # before the exercise")
        out["sys_exit.ipynb"] = nb
        nb, _ = lesson01()
        last = exercise_cell(nb, LESSONS["01_qkv_projections"][-1].name)
        insert_code(nb, last + 2, "import sys\nsys.exit(3)   # after the last exercise")
        out["sys_exit_after_last_exercise.ipynb"] = nb
        nb, i = lesson01()
        nb.cells[i].source = "def project_qkv(X, W_q, W_k, W_v):\n    return X @ W_q, X @ W_k X @ W_v\n"
        out["syntax_error.ipynb"] = nb
        nb, i = lesson01()
        del nb.cells[i]
        out["function_missing.ipynb"] = nb
    if student_path(LESSON03).exists():
        def lesson03(**sources):
            nb = nbformat.read(str(student_path(LESSON03)), as_version=4)
            for name, source in {**RIGHT_03, **sources}.items():
                replace_function(nb, name, source)
            return nb, exercise_cell(nb, "softmax")

        nb, i = lesson03()
        insert_code(nb, i + 2, "import time\ntime.sleep(10_000)   # hangs after the first exercise")
        out["00_hangs.ipynb"] = nb
        nb, i = lesson03()
        insert_code(nb, i + 2, "import os\nos._exit(1)   # the kernel dies after the first exercise")
        out["kernel_dies.ipynb"] = nb
        nb, i = lesson03(softmax=impl("softmax", "naive exp overflows"))
        insert_code(nb, i + 2, "from helpers.reference import softmax   # rebinds the name")
        insert_code(nb, 2, "1 / 0   # a cell that raises, before the exercises")
        out["rebound_after_error.ipynb"] = nb
    return out


# ------------------------------------------------------------ exercise cells written other ways
STUB = object()   # the untouched stub, as the student notebook has it


class Cell:
    """A whole exercise cell as a learner might write it.

    ``after``: a cell the learner added right after the check cell. ``expected``:
    for the shapes, the notebook check's verdict ("pass", "fail", "not attempted");
    for the routes, the name the grader's feedback must give (None: allowed, full marks).
    """

    def __init__(self, label, source, expected=None, after=None):
        self.label, self.expected, self.after = label, expected, after
        self.source = source if source is STUB else textwrap.dedent(source).strip() + "\n"


SHAPES = {
    "softmax": [
        Cell("def inside try/except", """
            import numpy as np
            try:
                def softmax(x, axis=-1):
                    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
                    return e / e.sum(axis=axis, keepdims=True)
            except ImportError:
                softmax = None
            """, "pass"),
        Cell("%%time on the first line", """
            %%time
            import numpy as np
            def softmax(x, axis=-1):
                e = np.exp(x - x.max(axis=axis, keepdims=True))
                return e / e.sum(axis=axis, keepdims=True)
            """, "pass"),
        Cell("def inside if, wrong", """
            import numpy as np
            if True:
                def softmax(x, axis=-1):
                    return np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)
            """, "fail"),
        Cell("lambda", """
            import numpy as np
            softmax = lambda x, axis=-1: (lambda e: e / e.sum(axis=axis, keepdims=True))(
                np.exp(x - x.max(axis=axis, keepdims=True)))
            """, "pass"),
    ],
    "causal_mask": [
        Cell("functools.partial", """
            import functools
            import numpy as np
            causal_mask = functools.partial(np.tri, dtype=bool)
            """, "pass"),
        Cell("tuple assignment", """
            import numpy as np
            causal_mask, unused = (lambda n: np.tri(n, dtype=bool)), None
            """, "pass"),
        Cell("functools.partial, wrong", """
            import functools
            import numpy as np
            causal_mask = functools.partial(np.tri, k=-1, dtype=bool)
            """, "fail"),
        Cell("right, then rebound to a wrong one after the check", """
            import numpy as np
            def causal_mask(n):
                return np.tril(np.ones((n, n), dtype=bool))
            """, "pass", after="causal_mask = lambda n: np.triu(np.ones((n, n), dtype=bool))"),
    ],
    "scaled_dot_product_attention": [
        Cell("def inside with", """
            import numpy as np
            from helpers.reference import softmax as stable_softmax
            with np.errstate(all="ignore"):
                def scaled_dot_product_attention(Q, K, V, mask=None):
                    scores = Q @ K.T / np.sqrt(Q.shape[-1])
                    if mask is not None:
                        scores = np.where(mask, scores, -np.inf)
                    weights = stable_softmax(scores, axis=-1)
                    return weights @ V, weights
            """, "pass"),
        Cell("def in a try inside an if", """
            import numpy as np
            from helpers.reference import softmax as stable_softmax
            if np:
                try:
                    def scaled_dot_product_attention(Q, K, V, mask=None):
                        scores = np.einsum("qd,kd->qk", Q, K) / np.sqrt(Q.shape[1])
                        if mask is not None:
                            scores[~mask] = -np.inf
                        weights = stable_softmax(scores)
                        return weights @ V, weights
                finally:
                    pass
            """, "pass"),
        Cell("wrong, then rebound to the reference after the check", """
            import numpy as np
            from helpers.reference import softmax as stable_softmax
            def scaled_dot_product_attention(Q, K, V, mask=None):
                weights = stable_softmax(Q @ K.T)
                return weights @ V, weights
            """, "fail", after="from helpers.reference import scaled_dot_product_attention"),
        Cell("the untouched stub", STUB, "not attempted"),
    ],
}

ROUTES = {   # calls into the course's own answer: 0 points, the feedback names what was called
    "project_qkv": [
        Cell("from helpers.reference import", """
            from helpers.reference import project_qkv as _ref
            def project_qkv(X, W_q, W_k, W_v):
                return _ref(X, W_q, W_k, W_v)
            """, "helpers.reference.project_qkv"),
        Cell("import helpers.reference as r", """
            import helpers.reference as r
            def project_qkv(X, W_q, W_k, W_v):
                Q, K, V = r.project_qkv(X, W_q, W_k, W_v)
                return Q, K, V
            """, "helpers.reference.project_qkv"),
        Cell("importlib", """
            import importlib
            def project_qkv(X, W_q, W_k, W_v):
                return importlib.import_module("helpers.reference").project_qkv(X, W_q, W_k, W_v)
            """, "helpers.reference.project_qkv"),
    ],
    "softmax": [
        Cell("the function the check handed back", """
            from helpers.checks import check as _check
            _given = _check("softmax", lambda x, axis=-1: (_ for _ in ()).throw(NotImplementedError()))
            def softmax(x, axis=-1):
                return _given(x, axis=axis)
            """, "helpers.reference.softmax"),
        Cell("a helper of the checks", """
            from helpers.exercises.lesson03 import _plain_softmax
            def softmax(x, axis=-1):
                return _plain_softmax(x, axis)
            """, "helpers.exercises.lesson03._plain_softmax"),
    ],
    "causal_mask": [
        Cell("the reference bound to the name", """
            from helpers.reference import causal_mask
            """, "helpers.reference.causal_mask"),
        Cell("the catalogue's reference", """
            from helpers.exercises import EXERCISES
            def causal_mask(n):
                return EXERCISES["causal_mask"].reference(n)
            """, "helpers.reference.causal_mask"),
    ],
    "scaled_dot_product_attention": [
        Cell("a private helper of the reference", """
            from helpers.reference.attention import _attention
            def scaled_dot_product_attention(Q, K, V, mask=None):
                return _attention(Q, K, V, mask)
            """, "helpers.reference._attention"),
        Cell("another step's function (softmax, attention_scores): allowed", """
            import numpy as np
            from helpers.reference import attention_scores, softmax as given_softmax
            def scaled_dot_product_attention(Q, K, V, mask=None):
                scores = attention_scores(Q, K)
                if mask is not None:
                    scores = np.where(mask, scores, -np.inf)
                weights = given_softmax(scores, axis=-1)
                return weights @ V, weights
            """),
    ],
    "multi_head_attention": [
        Cell("scaled_dot_product_attention from the reference: allowed", """
            from helpers.reference import scaled_dot_product_attention as attend
            def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
                Qh, Kh, Vh = (split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))
                out, weights = attend(Qh, Kh, Vh, mask)
                return merge_heads(out) @ W_o, weights
            """),
    ],
}


def check_cell(nb, name):
    """Index of the check cell of ``name``."""
    return next(i for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and name in notebook.checked_names(c.source))


def write_cell(nb, name, cell):
    """Put ``cell`` in place of the exercise cell of ``name`` (and its extra cell after the check)."""
    if cell.source is not STUB:
        nb.cells[exercise_cell(nb, name)].source = cell.source
    if cell.after:
        insert_code(nb, check_cell(nb, name) + 1, cell.after)


def right_impl(name):
    return next(i for i in IMPLEMENTATIONS[name] if not i.wrong).source


def packed_notebooks(table, prefix):
    """``{(exercise, label): file name}`` and ``{file name: notebook}`` for a table of cells.

    Notebook k of a lesson holds cell k of each of its exercises in the table; its
    other exercises get a right implementation.
    """
    where, notebooks = {}, {}
    for lesson, exercises in LESSONS.items():
        names = [e.name for e in exercises]
        count = max((len(table.get(n, [])) for n in names), default=0)
        if not count or not student_path(lesson).exists():
            continue
        for k in range(count):
            nb = nbformat.read(str(student_path(lesson)), as_version=4)
            file = f"{prefix}_{lesson}_{k}.ipynb"
            for name in names:
                cells = table.get(name, [])
                if k < len(cells):
                    write_cell(nb, name, cells[k])
                    where[(name, cells[k].label)] = file
                else:
                    replace_function(nb, name, right_impl(name))
            notebooks[file] = nb
    return where, notebooks


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Grade every test submission in one command-line run; cache the gradebook."""
    folder = tmp_path_factory.mktemp("class")    # outside the repository
    files = {}
    for kind, source in (("solutions", ROOT / "solutions"), ("untouched", ROOT / "notebooks")):
        for path in sorted(source.glob("*.ipynb")):
            target = folder / kind / path.name
            target.parent.mkdir(exist_ok=True)
            target.write_bytes(path.read_bytes())
            files[f"{kind}/{path.name}"] = target
    where, variants = variant_notebooks()
    shapes, shape_notebooks = packed_notebooks(SHAPES, "shape")
    routes, route_notebooks = packed_notebooks(ROUTES, "route")
    specials = special_notebooks()
    for name, nb in {**variants, **shape_notebooks, **route_notebooks, **specials}.items():
        nbformat.write(nb, str(folder / name))
        files[name] = folder / name
    if student_path("01_qkv_projections").exists():   # a learner's download, metadata kept
        renamed = folder / "downloads" / "Copy of 01_qkv_projections (2).ipynb"
        renamed.parent.mkdir()
        nb = nbformat.read(str(student_path("01_qkv_projections")), as_version=4)
        for exercise in LESSONS["01_qkv_projections"]:   # every exercise right: full marks
            right = next(i for i in IMPLEMENTATIONS[exercise.name] if not i.wrong)
            replace_function(nb, exercise.name, right.source)
        nbformat.write(nb, str(renamed))
        files["renamed"] = renamed
    before = {key: sha256(path) for key, path in files.items()}

    json_out, csv_out = folder.parent / "gradebook.json", folder.parent / "gradebook.csv"
    first = [str(folder / "00_hangs.ipynb")] if "00_hangs.ipynb" in specials else []
    proc = subprocess.run(
        [sys.executable, "-m", "helpers.grade", "--json", str(json_out), "--csv", str(csv_out),
         "--jobs", "2", "--timeout", str(BATCH_TIMEOUT), "--seed", str(SEED), *first, str(folder)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    rows = json.loads(json_out.read_text()) if json_out.exists() else []
    by_file = {}
    for row in rows:
        rel = Path(row["submission"]).relative_to(folder).as_posix()
        by_file[rel] = row
    by_file["renamed"] = by_file.get("downloads/Copy of 01_qkv_projections (2).ipynb")
    with open(csv_out, newline="") as f:
        csv_rows = list(csv.DictReader(f)) if csv_out.exists() else []
    return {"proc": proc, "rows": rows, "by_file": by_file, "where": where, "files": files,
            "shapes": shapes, "routes": routes,
            "before": before, "csv": csv_rows, "folder": folder}


def row_of(run, file):
    assert run["proc"].returncode == 0, run["proc"].stderr
    return run["by_file"][file]


# ------------------------------------------------------------ the lessons' own notebooks
SOLUTIONS = sorted(p.name for p in (ROOT / "solutions").glob("*.ipynb"))
STUDENTS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def _lesson_ready(file):
    lesson = Path(file).stem
    if not LESSONS.get(lesson):
        pytest.skip(f"lesson {lesson} has no exercises in helpers.exercises yet")


@pytest.mark.parametrize("file", SOLUTIONS)
def test_solution_notebook_gets_full_marks(run, file):
    _lesson_ready(file)
    row = row_of(run, f"solutions/{file}")
    assert row["lesson"] == Path(file).stem
    assert row["error"] is None
    assert row["max_score"] == 10 * len(LESSONS[row["lesson"]])
    assert row["score"] == row["max_score"]
    assert all(e["passed"] for e in row["exercises"].values())


@pytest.mark.parametrize("file", STUDENTS)
def test_untouched_student_notebook_gets_zero_without_error(run, file):
    _lesson_ready(file)
    row = row_of(run, f"untouched/{file}")
    assert row["lesson"] == Path(file).stem
    assert row["error"] is None
    assert row["score"] == 0
    assert set(row["exercises"]) == {e.name for e in LESSONS[row["lesson"]]}
    for exercise in row["exercises"].values():
        assert exercise["points"] == 0 and "not attempted" in exercise["feedback"]


# ------------------------------------------------------------ wrong and right implementations
PARAMS = [pytest.param(name, impl, id=f"{name}-{impl.label}")
          for name, impls in IMPLEMENTATIONS.items() for impl in impls]


def _variant_row(run, name, impl):
    lesson = lesson_of(name) if name in EXERCISES else None
    if lesson is None or not student_path(lesson).exists():
        pytest.skip(f"the student notebook of {name}'s lesson does not exist yet")
    return row_of(run, run["where"][(name, impl.label)])


@pytest.mark.parametrize("name, impl", [p for p in PARAMS if p.values[1].wrong])
def test_wrong_implementation_loses_points_on_its_exercise_with_the_mistake_named(run, name, impl):
    row = _variant_row(run, name, impl)
    graded = row["exercises"][name]
    assert graded["points"] < graded["max_points"]
    assert not graded["passed"]
    assert impl.feedback in graded["feedback"]
    if impl.points is not None:
        assert graded["points"] == impl.points


@pytest.mark.parametrize("name, impl", [p for p in PARAMS if not p.values[1].wrong])
def test_correct_but_different_implementation_gets_full_marks(run, name, impl):
    row = _variant_row(run, name, impl)
    graded = row["exercises"][name]
    assert graded["passed"], graded["feedback"]
    assert graded["points"] == graded["max_points"] == 10


def test_a_wrong_exercise_costs_only_its_own_points(run):
    """In each variant notebook, every exercise is graded on its own implementation."""
    where = run["where"]
    if not where:
        pytest.skip("no student notebook exists yet")
    for (name, label), file in where.items():
        impl = next(i for i in IMPLEMENTATIONS[name] if i.label == label)
        row = row_of(run, file)
        expected_full = not impl.wrong
        assert row["exercises"][name]["passed"] is expected_full, (file, name, label)
    for file in set(where.values()):
        row = row_of(run, file)
        assert row["score"] == round(sum(e["points"] for e in row["exercises"].values()), 1)
        assert row["error"] is None


# ------------------------------------------------------------ agreement with the notebook's check
def check_verdict(name, cell):
    """The notebook check's verdict on the function ``cell`` binds, run as a kernel runs it."""
    from IPython.core.interactiveshell import InteractiveShell

    from helpers.checking import ExerciseError
    from helpers.checks import check

    source = cell.source
    if source is STUB:
        nb = nbformat.read(str(student_path(lesson_of(name))), as_version=4)
        source = nb.cells[exercise_cell(nb, name)].source
    shell = InteractiveShell.instance()
    shell.user_ns.pop(name, None)
    assert shell.run_cell(source).success
    fn = shell.user_ns[name]
    try:
        given = check(name, fn)
    except ExerciseError:
        return "fail"
    return "pass" if given is fn else "not attempted"


SHAPE_PARAMS = [pytest.param(name, cell, id=f"{name}-{cell.label}")
                for name, cells in SHAPES.items() for cell in cells]
ROUTE_PARAMS = [pytest.param(name, cell, id=f"{name}-{cell.label}")
                for name, cells in ROUTES.items() for cell in cells]


@pytest.mark.parametrize("name, cell", SHAPE_PARAMS)
def test_grade_agrees_with_the_notebooks_check_however_the_cell_is_written(run, name, cell):
    verdict = check_verdict(name, cell)
    assert verdict == cell.expected            # the table says what it means to
    graded = row_of(run, run["shapes"][(name, cell.label)])["exercises"][name]
    if verdict == "pass":
        assert graded["passed"] and graded["points"] == 10, graded["feedback"]
    elif verdict == "fail":
        assert not graded["passed"] and graded["points"] < 10
    else:
        assert graded["points"] == 0 and "not attempted" in graded["feedback"]


@pytest.mark.parametrize("name, cell", [p for p in ROUTE_PARAMS if p.values[1].expected])
def test_calling_the_course_answer_to_the_exercise_earns_zero_and_says_so(run, name, cell):
    graded = row_of(run, run["routes"][(name, cell.label)])["exercises"][name]
    assert graded["points"] == 0 and not graded["passed"]
    assert cell.expected in graded["feedback"] and "own answer" in graded["feedback"]


@pytest.mark.parametrize("name, cell", [p for p in ROUTE_PARAMS if not p.values[1].expected])
def test_the_lessons_functions_for_other_steps_may_be_used(run, name, cell):
    graded = row_of(run, run["routes"][(name, cell.label)])["exercises"][name]
    assert graded["passed"] and graded["points"] == 10, graded["feedback"]


def test_a_tripped_exercise_costs_only_its_own_points(run):
    routed = {}   # file -> the exercises written as a route in it (the others are right)
    for (name, _), file in run["routes"].items():
        routed.setdefault(file, set()).add(name)
    for file, names in routed.items():
        for other, graded in row_of(run, file)["exercises"].items():
            if other not in names:
                assert graded["passed"], (file, other, graded["feedback"])


# ------------------------------------------------------------ fresh hidden cases
def test_every_row_records_the_runs_seed(run):
    assert {row["seed"] for row in run["rows"]} == {SEED}


def _arguments(cases):
    return [(case.args, case.kwargs) for case in cases]


def _same(a, b):
    if callable(a):   # a function argument (lesson 07's f): the same code and captured data
        inside = lambda f: [c.cell_contents for c in f.__closure__ or ()]
        return callable(b) and a.__qualname__ == b.__qualname__ and _same(inside(a), inside(b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(map(_same, a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_hidden_cases_are_the_same_for_a_seed_and_differ_between_seeds(name):
    exercise = EXERCISES[name]
    draw = lambda seed: _arguments(exercise.cases(hidden=True, seed=kernel.exercise_seed(seed, name)))
    assert _same(draw(7), draw(7))
    assert not _same(draw(7), draw(8))


def _hidden(name, seed):
    return EXERCISES[name].cases(hidden=True, seed=kernel.exercise_seed(seed, name))


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_every_seeds_hidden_cases_pass_the_reference_and_name_every_catalogued_mistake(name):
    exercise = EXERCISES[name]
    for seed in range(20):
        cases = _hidden(name, seed)
        report = evaluate(exercise, exercise.reference, cases)
        assert report.passed == report.total == len(cases), (seed, report.failures)
        for mistake in exercise.mistakes:
            report = evaluate(exercise, mistake.fn, cases, stop_at_first_failure=True)
            assert report.failures and mistake.message in report.failures[0], (seed, mistake.message)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_hidden_shapes_vary_between_seeds(name):
    def shape(a):       # arrays by shape; a dict (a KV cache) or a list of arrays by their shapes
        if isinstance(a, dict):
            return tuple(sorted((key, shape(value)) for key, value in a.items()))
        if isinstance(a, (list, tuple)):
            return tuple(shape(x) for x in a)
        return np.shape(a) if isinstance(a, np.ndarray) else a

    def shapes(seed):   # array arguments by shape, numbers (sizes, head counts) by value
        return tuple(shape(a) for case in _hidden(name, seed) for a in case.args)
    assert len({shapes(seed) for seed in range(10)}) > 1


def test_the_same_seed_grades_the_same_and_another_seed_draws_other_cases():
    def wrong(X, W_q, W_k, W_v):   # off by one in Q: the feedback quotes the numbers
        return X @ W_q + 1, X @ W_k, X @ W_v

    first = kernel.grade_function("project_qkv", wrong, seed=1)
    assert kernel.grade_function("project_qkv", wrong, seed=1) == first
    assert kernel.grade_function("project_qkv", wrong, seed=2)["failures"] != first["failures"]


def test_without_seed_each_run_draws_a_fresh_one_and_prints_it(tmp_path):
    submission = tmp_path / "nothing.ipynb"   # no lesson: graded without a kernel
    nbformat.write(_nb("x = 1"), str(submission))
    seeds = []
    for i in range(2):
        out = tmp_path / f"{i}.json"
        proc = grade_cli("--json", str(out), str(submission))
        seeds.append(json.loads(out.read_text())[0]["seed"])
        assert f"--seed {seeds[-1]}" in proc.stderr
    assert seeds[0] != seeds[1]


# ------------------------------------------------------------ broken submissions
needs_lesson01 = pytest.mark.skipif(not student_path("01_qkv_projections").exists(),
                                    reason="lesson 01's student notebook is missing")
needs_lesson03 = pytest.mark.skipif(not student_path(LESSON03).exists(),
                                    reason="lesson 03's student notebook is missing")


@needs_lesson03
def test_hanging_notebook_times_out_and_keeps_what_it_earned(run):
    row = row_of(run, "00_hangs.ipynb")
    assert "timed out" in row["error"]
    assert row["exercises"]["softmax"]["points"] == 10
    assert "never reached" in row["exercises"]["causal_mask"]["feedback"]


@needs_lesson03
def test_notebook_whose_kernel_dies_keeps_what_it_earned(run):
    row = row_of(run, "kernel_dies.ipynb")
    assert "kernel died" in row["error"]
    assert row["exercises"]["softmax"]["points"] == 10
    assert "never reached" in row["exercises"]["causal_mask"]["feedback"]


@needs_lesson01
def test_sys_exit_is_reported_and_grading_goes_on(run):
    row = row_of(run, "sys_exit.ipynb")
    assert "sys.exit" in row["error"]
    assert row["score"] == 10


@needs_lesson01
def test_cells_after_the_last_exercise_do_not_run_by_default(run):
    row = row_of(run, "sys_exit_after_last_exercise.ipynb")
    assert row["error"] is None
    assert row["score"] == 10


@needs_lesson01
def test_run_all_reports_a_crash_after_the_last_exercise_with_the_same_grade(run):
    path = run["files"]["sys_exit_after_last_exercise.ipynb"]
    row = runner.grade_one(path, timeout=BATCH_TIMEOUT, seed=SEED, run_all=True)
    assert "sys.exit" in row["error"]
    assert row["exercises"] == row_of(run, "sys_exit_after_last_exercise.ipynb")["exercises"]


@needs_lesson01
def test_syntax_error_in_the_exercise_cell_is_reported_and_scores_zero(run):
    row = row_of(run, "syntax_error.ipynb")
    assert "SyntaxError" in row["error"]
    assert row["exercises"]["project_qkv"]["points"] == 0
    assert "syntax error" in row["exercises"]["project_qkv"]["feedback"]


@needs_lesson01
def test_missing_exercise_function_is_reported_and_scores_zero(run):
    row = row_of(run, "function_missing.ipynb")
    assert "project_qkv is not defined" in row["error"]
    assert row["score"] == 0


@needs_lesson03
def test_learners_function_is_graded_even_when_a_later_cell_rebinds_the_name(run):
    row = row_of(run, "rebound_after_error.ipynb")
    assert "overflow to NaN" in row["exercises"]["softmax"]["feedback"]
    assert row["exercises"]["softmax"]["points"] < 10


@needs_lesson03
def test_a_cell_that_raises_does_not_stop_grading(run):
    row = row_of(run, "rebound_after_error.ipynb")
    assert row["exercises"]["causal_mask"]["points"] == 10
    assert row["exercises"]["scaled_dot_product_attention"]["points"] == 10


@needs_lesson01
def test_renamed_download_outside_the_repository_is_recognised(run):
    row = row_of(run, "renamed")
    assert row["lesson"] == "01_qkv_projections"
    assert row["score"] == row["max_score"] == 10 * len(LESSONS["01_qkv_projections"])


def test_submission_files_are_byte_for_byte_unchanged(run):
    after = {key: sha256(path) for key, path in run["files"].items()}
    assert after == run["before"]


def test_no_scratch_files_are_left_next_to_the_submissions(run):
    files = {p for p in run["folder"].rglob("*") if p.is_file()}
    assert files == set(run["files"].values())


# ------------------------------------------------------------ outputs
def test_every_submission_gets_a_row_and_exit_status_zero(run):
    assert run["proc"].returncode == 0, run["proc"].stderr
    assert len(run["rows"]) == len(run["files"])


def test_json_rows_have_the_contract_keys(run):
    for row in run["rows"]:
        assert set(row) == {"submission", "lesson", "score", "max_score", "error", "seed", "exercises"}
        for exercise in row["exercises"].values():
            assert set(exercise) == {"points", "max_points", "passed", "feedback"}


def test_csv_has_one_row_per_submission_and_one_column_per_exercise(run):
    assert len(run["csv"]) == len(run["rows"])
    header = list(run["csv"][0])
    present = {name for row in run["rows"] for name in row["exercises"]}
    assert header[:2] == ["submission", "lesson"] and header[-3:] == ["score", "max_score", "error"]
    assert set(header[2:-3]) == present
    for line, row in zip(run["csv"], run["rows"]):
        assert float(line["score"]) == row["score"]
        for name, exercise in row["exercises"].items():
            assert float(line[name]) == exercise["points"]


def test_terminal_shows_a_summary_table_and_progress(run):
    out, err = run["proc"].stdout, run["proc"].stderr
    assert out.splitlines()[0].split() == ["submission", "lesson", "score", "notes"]
    for row in run["rows"]:
        assert Path(row["submission"]).name[:30] in out
    total = len(run["rows"])
    assert f"[{total}/{total}]" in err


# ------------------------------------------------------------ killing what a submission started
def _tagged(tag):
    """Process ids whose environment carries ``tag`` (the grader's children inherit it)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if tag.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:   # gone meanwhile
            pass
    return found


def _sleeping(tag):
    """Whether the notebook's child process (``sleep 1000``) runs."""
    for pid in _tagged(tag):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep"):
                return True
        except OSError:
            pass
    return False


def _wait_until(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


# A killed process is gone within milliseconds on a quiet machine; on a loaded one
# (a browser test beside this one) it may wait seconds for a core. What is left
# behind by a leak (``sleep 1000``) lives far longer than this grace period.
GRACE_SECONDS = 30


def _left_behind(tag):
    """``pid state command`` for each process still carrying ``tag``."""
    lines = []
    for pid in _tagged(tag):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:   # gone meanwhile
            continue
        lines.append(f"{pid} {state} {command.strip()[:120]}")
    return lines


def _all_gone(tag):
    """Whether every process carrying ``tag`` is gone within the grace period (else say which)."""
    if _wait_until(lambda: not _tagged(tag), GRACE_SECONDS):
        return True
    left = _left_behind(tag)
    assert not left, "processes left behind:\n" + "\n".join(left)
    return True


@pytest.fixture
def spawning_notebook(tmp_path):
    """Lesson 01, solved, with a cell that starts a child process and then hangs."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("needs /proc to find the processes left behind")
    if not student_path("01_qkv_projections").exists():
        pytest.skip("lesson 01's student notebook is missing")
    nb = nbformat.read(str(student_path("01_qkv_projections")), as_version=4)
    i = replace_function(nb, "project_qkv", impl("project_qkv", "einsum"))
    spawned = tmp_path / "spawned"            # written once the child process is running
    insert_code(nb, i + 2, "import subprocess, time\nsubprocess.Popen(['sleep', '1000'])\n"
                           f"open({str(spawned)!r}, 'w').close()\ntime.sleep(1000)")
    path = tmp_path / "spawns.ipynb"
    nbformat.write(nb, str(path))
    tag = f"COURSE_GRADER_TEST={uuid.uuid4().hex}"
    env = dict(os.environ, COURSE_GRADER_TEST=tag.split("=", 1)[1])
    return path, tag, env


def test_timeout_kills_the_kernel_and_everything_it_started(spawning_notebook):
    path, tag, env = spawning_notebook
    proc = subprocess.run([sys.executable, "-m", "helpers.grade", "--run-all", "--timeout", "6",
                           str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "timed out" in proc.stdout
    assert (path.parent / "spawned").exists(), "the notebook timed out before it started its child"
    assert _all_gone(tag)


def _ctrl_c_as_in_a_terminal():
    """In the grader's process: SIGINT's default action, even when the test run ignores it.

    A command started in the background by a shell without job control (``make test &``
    in a script) ignores SIGINT, and so would the grader it starts.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_the_run_and_kills_every_kernel(spawning_notebook):
    path, tag, env = spawning_notebook
    grader = subprocess.Popen([sys.executable, "-m", "helpers.grade", "--run-all", str(path)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, preexec_fn=_ctrl_c_as_in_a_terminal)
    try:
        # wait for the notebook's child process: then the kernel is deep in the notebook
        assert _wait_until(lambda: _sleeping(tag), 90)
        grader.send_signal(signal.SIGINT)
        _, err = grader.communicate(timeout=60)
    finally:
        grader.kill()
    assert grader.returncode == 130 and "interrupted" in err
    assert _all_gone(tag)


# Ctrl-C's SIGINT goes to whichever thread the operating system picks; this sends it to
# the thread that waits on the notebook's worker, not to the main thread.
SIGINT_TO_A_WORKER_THREAD = textwrap.dedent('''
    import signal, sys, threading
    from helpers.instructor.grading import runner

    def press_ctrl_c_in_a_worker_thread():
        sys.stdin.readline()          # the test says when the notebook is deep in its run
        grader = next(t for t in threading.enumerate() if t.name.startswith("grader"))
        signal.pthread_kill(grader.ident, signal.SIGINT)

    threading.Thread(target=press_ctrl_c_in_a_worker_thread, daemon=True).start()
    try:
        runner.grade_many([sys.argv[1]], timeout=600, run_all=True)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
''')


def test_ctrl_c_received_by_a_worker_thread_still_stops_the_run(spawning_notebook):
    path, tag, env = spawning_notebook
    grader = subprocess.Popen([sys.executable, "-c", SIGINT_TO_A_WORKER_THREAD, str(path)],
                              cwd=ROOT, env=env, stdin=subprocess.PIPE, text=True,
                              preexec_fn=_ctrl_c_as_in_a_terminal)
    try:
        assert _wait_until(lambda: _sleeping(tag), 90)
        grader.stdin.write("go\n")
        grader.stdin.flush()
        grader.wait(timeout=60)
    finally:
        grader.kill()
    assert grader.returncode == 130
    assert _all_gone(tag)


# ------------------------------------------------------------ the kernel server
@pytest.fixture(scope="module")
def kernel_server():
    """The grader's kernel server, as a run starts it; its socket in the worker's variable."""
    server = runner.KernelServer()
    before = os.environ.get(worker.FORKSERVER_ENV)
    os.environ[worker.FORKSERVER_ENV] = server.address
    yield server
    if before is None:
        os.environ.pop(worker.FORKSERVER_ENV)
    else:
        os.environ[worker.FORKSERVER_ENV] = before
    server.close()


def _run_in_kernel(kernel_, code):
    """Run ``code`` in a grading kernel; its reply's status ("ok" or "error")."""
    reply = worker._reply(kernel_, kernel_.client.execute(code), timeout=60)
    return reply["content"]["status"]


def _started_kernel(workdir):
    kernel_ = worker.Kernel(workdir)
    worker._reply(kernel_, kernel_.client.kernel_info(), timeout=60)
    return kernel_


def test_a_kernel_sees_nothing_another_kernel_changed(kernel_server, tmp_path):
    first = _started_kernel(tmp_path)
    try:
        assert _run_in_kernel(first, "import numpy, matplotlib\nnumpy.left_behind = 1\n"
                                     "matplotlib.rcParams['lines.linewidth'] = 9.5\n"
                                     "seen = 1") == "ok"
    finally:
        first.close()
    second = _started_kernel(tmp_path)
    try:
        assert second.pid != first.pid
        assert _run_in_kernel(second, "import numpy, matplotlib\n"
                                      "assert not hasattr(numpy, 'left_behind')\n"
                                      "assert matplotlib.rcParams['lines.linewidth'] != 9.5\n"
                                      "assert 'seen' not in globals()") == "ok"
    finally:
        second.close()


def test_a_kernel_runs_in_the_submissions_folder_in_a_process_group_of_its_own(kernel_server, tmp_path):
    kernel_ = _started_kernel(tmp_path)
    try:
        code = textwrap.dedent(f"""
            import json, os, sys
            json.dump({{"cwd": os.getcwd(), "pid": os.getpid(), "group": os.getpgid(0),
                        "backend": os.environ.get("MPLBACKEND"), "path": sys.path,
                        "server": os.environ.get({worker.FORKSERVER_ENV!r})}},
                      open("seen.json", "w"))
        """)
        assert _run_in_kernel(kernel_, code) == "ok"
    finally:
        kernel_.close()
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert Path(seen["cwd"]) == tmp_path
    assert seen["pid"] == kernel_.pid == seen["group"]
    assert int((tmp_path / worker.KERNEL_PID_FILE).read_text()) == kernel_.pid
    assert seen["backend"] == "agg" and seen["server"] is None
    grading_folder = str(Path(runner.__file__).parent)
    assert grading_folder not in seen["path"], "the grader's own modules importable by name"


def test_each_kernel_draws_its_own_random_numbers(kernel_server, tmp_path):
    draws = []
    for k in range(2):
        kernel_ = _started_kernel(tmp_path)
        try:
            assert _run_in_kernel(kernel_, "import json, random, numpy\njson.dump("
                                           "[random.random(), numpy.random.rand()], open('draw%d', 'w'))"
                                           % k) == "ok"
        finally:
            kernel_.close()
        draws.append(json.loads((tmp_path / f"draw{k}").read_text()))
    assert draws[0][0] != draws[1][0], "Python's random module"
    assert draws[0][1] != draws[1][1], "numpy's global random state"


def test_a_kernel_exits_when_its_worker_is_gone(kernel_server, tmp_path):
    kernel_ = _started_kernel(tmp_path)
    try:
        kernel_.connection.close()          # as when the worker process dies
        assert _wait_until(lambda: not kernel_.is_alive(), 10)
    finally:
        kernel_.close()


def test_a_worker_and_its_kernel_exit_when_the_grader_is_gone(kernel_server, tmp_path):
    (tmp_path / worker.RUN_NOTEBOOK).write_text(json.dumps(
        {"cells": [{"cell_type": "code", "source": "import time\ntime.sleep(1000)"}]}))
    process = runner.Worker(kernel_server, tmp_path)
    pid_file = tmp_path / worker.KERNEL_PID_FILE
    try:
        assert _wait_until(lambda: pid_file.exists() and pid_file.read_text(), 30)
        kernel_pid = int(pid_file.read_text())
        assert not process.wait(0.5)                # deep in the sleeping cell
        process.close()                             # as when the grader process is killed
        assert _wait_until(lambda: not _alive(process.pid) and not _alive(kernel_pid), 10)
    finally:
        runner.kill(process, tmp_path)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_closing_the_server_stops_it(tmp_path):
    server = runner.KernelServer()
    server.close()
    assert server.process.poll() is not None
    assert not Path(server.address).exists()


def test_a_server_that_cannot_start_is_a_clear_error(tmp_path, monkeypatch):
    broken = tmp_path / "forkserver.py"
    broken.write_text("import sys\nsys.exit('no ipykernel here')\n")
    monkeypatch.setattr(runner, "FORKSERVER", broken)
    with pytest.raises(RuntimeError, match="kernel server did not start: no ipykernel here"):
        runner.KernelServer()


# ------------------------------------------------------------ command line, no kernel needed
def grade_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "helpers.grade", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, message", [
    ((), "no submissions given"),
    (("no/such/file.ipynb",), "no such file or folder"),
    (("README.md",), "not a notebook"),
    (("--jobs", "0", "notebooks"), "--jobs must be at least 1"),
    (("--timeout", "0", "notebooks"), "--timeout must be positive"),
    (("--json", "no/such/folder/grades.json", "notebooks"), "does not exist"),
])
def test_usage_errors_exit_nonzero_with_a_clear_message(args, message):
    proc = grade_cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_empty_folder_is_a_usage_error(tmp_path):
    proc = grade_cli(str(tmp_path))
    assert proc.returncode == 2 and "holds no notebooks" in proc.stderr


# ------------------------------------------------------------ recognising a lesson
def _nb(*sources, lesson=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    if lesson:
        nb.metadata["course"] = {"lesson": lesson}
    return nb


@pytest.mark.parametrize("nb, path, expected", [
    (_nb("x = 1", lesson="01_qkv_projections"), "anything.ipynb", "01_qkv_projections"),
    (_nb("%matplotlib inline\ndef project_qkv(X, W_q, W_k, W_v):\n    pass"), "a.ipynb",
     "01_qkv_projections"),
    (_nb("x = 1"), "Copy of 01_qkv_projections (2).ipynb", "01_qkv_projections"),
    (_nb("x = 1"), "untitled.ipynb", None),
    (_nb("x = 1", lesson="99_not_a_lesson"), "untitled.ipynb", None),
], ids=["metadata", "defined functions", "file name", "nothing", "unknown metadata"])
def test_recognise_lesson(nb, path, expected):
    assert notebook.recognise_lesson(nb, path) == expected


BINDINGS = [  # (cell source, names it binds in the notebook)
    ("def f(x):\n    return x", ["f"]),
    ("!ls\n%matplotlib inline\ndef f(x):\n    return x\nclass C: pass", ["f", "C"]),
    ("try:\n    def f(x):\n        return x\nexcept ImportError:\n    f = None", ["f"]),
    ("if True:\n    def f(x):\n        return x\nelse:\n    def g(x):\n        return x", ["f", "g"]),
    ("with open('x') as fh:\n    def f(x):\n        return x", ["fh", "f"]),
    ("def outer():\n    def inner():\n        pass\n    local = 1", ["outer"]),
    ("g = lambda x: x\nf = check('f', f)", ["g"]),
    ("import functools\nf = functools.partial(max, 0)", ["functools", "f"]),
    ("f, (g, *h) = 1, (2, 3)", ["f", "g", "h"]),
    ("from helpers.reference import softmax as f\nimport numpy.linalg", ["f", "numpy"]),
    ("%%time\ndef f(x):\n    return x", ["f"]),
    ("%%bash\necho $((1 + 1))", []),
    ("x: int = 3\ny: int", ["x"]),
]


@pytest.mark.parametrize("source, names", BINDINGS, ids=[s.split("\n")[0] for s, _ in BINDINGS])
def test_bound_names_finds_every_binding_at_notebook_level(source, names):
    assert notebook.bound_names(source) == (names, None)


def test_bound_names_reports_a_syntax_error_and_still_finds_the_def():
    names, error = notebook.bound_names("def g(x):\n    return x x")
    assert names == ["g"] and error.startswith("SyntaxError")


def _cells(*sources):
    return _nb(*sources)


@pytest.mark.parametrize("sources, expected", [
    (["def f(): pass", "f = check('f', f)", "def f(): return 1"], {"f": 0}),
    (["def f(): pass", "def f(): return 1", "f = check('f', f)"], {"f": 1}),
    (["def f(): pass", "f = check('f', f)", "def f(): return 1", "f = check('f', f)"], {"f": 2}),
    (["x = 1", "def f(): pass", "def f(): return 1"], {"f": 1}),
    (["x = 1"], {}),
], ids=["rebound after the check", "two drafts before the check", "checked again",
        "no check cell: the first", "not bound"])
def test_the_exercise_cell_is_the_last_binding_before_the_last_check(sources, expected):
    assert notebook.exercise_cells(_cells(*sources), ["f"]) == expected
