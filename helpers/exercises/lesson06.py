"""Lesson 06 exercise: ``online_softmax_attention``.

The cases are built so that each known mistake gives a different answer from the
right one:

- the keys' scores grow from block to block, so the running maximum increases at
  every block (a missing rescale of the running sum or accumulator shows);
- n_k is not a multiple of block_size (a dropped or padded last block shows),
  including block_size > n_k (a single, partial block) and block_size = 1;
- n_q, n_k, d_k and d_v all differ (a transposed product cannot pass by luck).

The tolerance is tight (1e-10 absolute in float64): tiling changes only rounding.
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake


def _growing_keys(rng, n_k, d_k, growth):
    """Keys whose scores with positive queries grow with the key index."""
    K = np.abs(rng.standard_normal((n_k, d_k))) + 0.1
    return K * np.linspace(1.0, growth, n_k)[:, None]


def _case(rng, n_q, n_k, d_k, d_v, block_size, label, growth=None):
    if growth is None:
        Q = rng.standard_normal((n_q, d_k))
        K = rng.standard_normal((n_k, d_k))
    else:  # positive queries, keys growing: every block raises the running maximum
        Q = np.abs(rng.standard_normal((n_q, d_k))) + 0.1
        K = _growing_keys(rng, n_k, d_k, growth)
    V = rng.standard_normal((n_k, d_v))
    return Case((Q, K, V), {"block_size": block_size},
                label=f"{label}: Q {Q.shape}, K {K.shape}, V {V.shape}, block_size={block_size}")


def make_cases(rng, hidden):
    # (n_q, n_k, d_k, d_v, block_size, label, growth)
    specs = [
        (5, 10, 4, 3, 4, "the max grows every block, last block partial (10 = 4 + 4 + 2)", 3.0),
        (6, 12, 3, 5, 4, "the max grows every block, n_k a multiple of block_size", 3.0),
        (4, 3, 2, 2, 8, "block_size larger than n_k (one partial block)", None),
        (3, 7, 5, 4, 1, "block_size = 1", 2.0),
        (7, 33, 8, 6, 16, "random scores, last block of 1 key", None),
        (2, 9, 4, 3, 4, "large scores (up to ~100)", 25.0),
    ]
    if hidden:
        specs = [
            (6, 12, 3, 4, 5, "the max grows every block, last block partial (12 = 5 + 5 + 2)", 4.0),
            (5, 16, 4, 2, 4, "the max grows every block, n_k a multiple of block_size", 2.5),
            (3, 2, 3, 3, 5, "block_size larger than n_k", None),
            (4, 5, 2, 6, 1, "block_size = 1", 2.0),
            (9, 50, 8, 5, 7, "random scores", None),
            (3, 13, 6, 4, 3, "large scores", 20.0),
        ]
    return [_case(rng, *spec[:6], growth=spec[6]) for spec in specs]


def _naive(Q, K, V):
    return reference.scaled_dot_product_attention(Q, K, V)[0]


def _online(Q, K, V, block_size, *, rescale_l=True, rescale_acc=True, divide=True,
            blocks=None, scale=True):
    """Online softmax with switchable mistakes (the reference is all defaults)."""
    n_q, n_k = Q.shape[0], K.shape[0]
    m = np.full((n_q, 1), -np.inf)
    l = np.zeros((n_q, 1))
    acc = np.zeros((n_q, V.shape[1]))
    starts = range(0, n_k, block_size) if blocks is None else blocks(n_k, block_size)
    for start in starts:
        s = Q @ K[start:start + block_size].T
        if scale:
            s = s / np.sqrt(Q.shape[1])
        m_new = np.maximum(m, s.max(axis=1, keepdims=True))
        p = np.exp(s - m_new)
        r = np.exp(m - m_new)
        l = (l * r if rescale_l else l) + p.sum(axis=1, keepdims=True)
        acc = (acc * r if rescale_acc else acc) + p @ V[start:start + block_size]
        m = m_new
    return acc / l if divide else acc


def _full_blocks_only(n_k, b):
    return range(0, (n_k // b) * b, b)


def _padded_last_block(Q, K, V, block_size):
    """The last block filled up with zero keys and zero values."""
    pad = (-K.shape[0]) % block_size
    K = np.vstack([K, np.zeros((pad, K.shape[1]))])
    V = np.vstack([V, np.zeros((pad, V.shape[1]))])
    return _naive(Q, K, V)


_RESCALE = ("when a block raises the running max m, the running sum l and the accumulator acc "
            "must both be rescaled by exp(m_old - m_new) before the new block is added: they "
            "were computed relative to the old max.")
_PARTIAL = ("off by one at the last block: n_k is not a multiple of block_size, and the last, "
            "shorter block of keys was {what}. Loop with range(0, n_k, block_size) and slice "
            "K[start:start + block_size] (Python's slice stops at the end by itself).")

MISTAKES = [
    Mistake("the running sum l and the accumulator acc are not rescaled when the max changes: "
            + _RESCALE,
            lambda Q, K, V, block_size: _online(Q, K, V, block_size, rescale_l=False,
                                                rescale_acc=False)),
    Mistake("the accumulator acc is not rescaled when the max changes (l is): " + _RESCALE,
            lambda Q, K, V, block_size: _online(Q, K, V, block_size, rescale_acc=False)),
    Mistake("the running sum l is not rescaled when the max changes (acc is): " + _RESCALE,
            lambda Q, K, V, block_size: _online(Q, K, V, block_size, rescale_l=False)),
    Mistake("the final division is missing: acc is a sum of exp-weighted values; the output "
            "is acc / l, so that the weights sum to 1.",
            lambda Q, K, V, block_size: _online(Q, K, V, block_size, divide=False)),
    Mistake("the final division is missing and the running sums are not rescaled: divide acc "
            "by l at the end, and rescale both by exp(m_old - m_new) when the max changes.",
            lambda Q, K, V, block_size: _online(Q, K, V, block_size, divide=False,
                                                rescale_l=False, rescale_acc=False)),
    Mistake(_PARTIAL.format(what="skipped"),
            lambda Q, K, V, block_size: _online(Q, K, V, block_size, blocks=_full_blocks_only)),
    Mistake(_PARTIAL.format(what="padded with zero keys, which still get weight exp(0 - m)"),
            _padded_last_block),
    Mistake(_PARTIAL.format(what="cut one key short"),
            lambda Q, K, V, block_size: _naive(Q, K[:-1], V[:-1])),
    Mistake("the scores are not divided by sqrt(d_k): each block's scores are "
            "Q @ K_block.T / sqrt(d_k), as in the naive attention.",
            lambda Q, K, V, block_size: _online(Q, K, V, block_size, scale=False)),
]

EXERCISES = [
    Exercise(
        name="online_softmax_attention",
        lesson="06_tiled_attention",
        reference=reference.online_softmax_attention,
        make_cases=make_cases,
        mistakes=MISTAKES,
        outputs=("out",),
        rtol=1e-8,
        atol=1e-10,
    ),
]
