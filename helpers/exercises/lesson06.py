"""Lesson 06 exercises: ``online_softmax_attention`` and the transfer exercise
``causal_online_softmax_attention``.

The cases are built so that each known mistake gives a different answer from the
right one:

- the keys' scores grow from block to block, so the running maximum increases at
  every block (a missing rescale of the running sum or accumulator shows);
- n_k is not a multiple of block_size (a dropped or padded last block shows),
  including block_size > n_k (a single, partial block) and block_size = 1; in the
  first case the last block holds 2 keys, so dropping it differs from cutting one
  key short;
- n_q, n_k, d_k and d_v all differ (a transposed product cannot pass by luck);
- one case has scores around +1000 for some queries and -1000 for the others: exp(1000)
  overflows and exp(-1000) underflows to 0, so a version with no running maximum (plain
  exp sums) and one whose running maximum starts at 0 both give NaN there (scores up to
  ~100, as in the other cases, let both pass).

The tolerance is tight (1e-10 absolute in float64): tiling changes only rounding.

The causal cases have as many queries as keys, keys that grow (so the running maximum of
query i rises at every block up to its own), and block sizes that do not divide n, so a
mask off by one, the wrong way round, or taken inside the block each give other numbers.
The last causal case has future keys that score about a thousand more than the visible
ones: a version that takes the running max over every key and masks after the
exponential gets exp(-1000) = 0 for every visible key there, and NaN.

A function that gives the right numbers by building the whole ``(n_q, n_k)`` score grid
is told so by :func:`full_grid_message`, which traces the largest memory it allocates
(``tracemalloc`` counts every NumPy buffer: a count, not a timing, so a busy machine
does not change it).
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import distinct, sizer
from ..measure import format_bytes, traced_peak

LESSON = "06_tiled_attention"


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


def _huge_scores_case(rng, n_q, n_k, d_k, d_v, block_size, label):
    """Scores of about +1000 (even queries) and -1000 (odd queries), spread by O(1) within a row.

    The first coordinate of every key is 1000 * sqrt(d_k) and of every query +-1: each
    query's scores are shifted by +-1000, so its softmax weights stay spread over the keys.
    """
    Q = rng.standard_normal((n_q, d_k))
    Q[:, 0] = (-1.0) ** np.arange(n_q)
    K = rng.standard_normal((n_k, d_k))
    K[:, 0] = 1000.0 * np.sqrt(d_k)
    V = rng.standard_normal((n_k, d_v))
    return Case((Q, K, V), {"block_size": block_size},
                label=f"{label}: Q {Q.shape}, K {K.shape}, V {V.shape}, block_size={block_size}")


_HUGE = "scores around +1000 and -1000"


def make_cases(rng, hidden):
    # (n_q, n_k, d_k, d_v, block_size, label, growth)
    specs = [
        (5, 10, 4, 3, 4, "the max grows every block, last block partial (10 = 4 + 4 + 2)", 3.0),
        (6, 12, 3, 5, 4, "the max grows every block, n_k a multiple of block_size", 3.0),
        (4, 3, 2, 2, 8, "block_size larger than n_k (one partial block)", None),
        (3, 7, 5, 4, 1, "block_size = 1", 2.0),
        (7, 33, 8, 6, 16, "random scores, last block of 1 key", None),
        (2, 9, 4, 3, 4, "large scores (up to ~100)", 25.0),
        (4, 11, 3, 2, 4, _HUGE, "huge"),
    ]
    if hidden:
        specs = _hidden_specs(rng)
    return [_huge_scores_case(rng, *spec[:6]) if spec[6] == "huge"
            else _case(rng, *spec[:6], growth=spec[6]) for spec in specs]


def _hidden_specs(rng):
    """The grader's cases, their sizes drawn afresh for each grading run (same purposes)."""
    size = sizer(rng)

    def dims():
        return distinct(rng, 2, 8, 3)

    block = size(3, 6)
    blocks = size(2, 4)
    n_q, d_k, d_v = dims()
    return [
        (n_q, block * blocks + size(2, block - 1), d_k, d_v, block,   # a last block of 2 or more
         "the max grows every block, last block partial", 4.0),
        (*dims()[:1], block * size(3, 5), *dims()[1:], block,
         "the max grows every block, n_k a multiple of block_size", 2.5),
        (size(2, 5), size(1, 4), size(2, 5), size(2, 5), size(5, 9),
         "block_size larger than n_k", None),
        (size(2, 6), size(3, 7), *dims()[:2], 1, "block_size = 1", 2.0),
        (size(6, 12), size(30, 60), size(4, 10), size(3, 8), size(5, 9), "random scores", None),
        (size(2, 5), size(9, 16), *dims()[:2], size(2, 4), "large scores", 20.0),
        (size(4, 8), size(12, 30), *dims()[:2], size(3, 6), _HUGE, "huge"),
    ]


def _naive(Q, K, V):
    return reference.scaled_dot_product_attention(Q, K, V)[0]


def _online(Q, K, V, block_size, *, rescale_l=True, rescale_acc=True, divide=True,
            blocks=None, scale=True, allowed=None, mask_after_exp=False, max_from=-np.inf,
            track_max=True):
    """Online softmax with switchable mistakes (the reference is all defaults).

    ``allowed(i, j)`` (query positions (n_q, 1), key positions (1, b)) -> bool (n_q, b)
    masks the scores where it is False; None: no mask. ``mask_after_exp``: the running
    max is taken over every key of the block, and the mask zeroes the exponentials.
    ``max_from``: the running max's starting value; ``track_max=False``: no running max at
    all (plain exponentials, exp(s)).
    """
    n_q, n_k = Q.shape[0], K.shape[0]
    m = np.full((n_q, 1), max_from if track_max else 0.0)
    ell = np.zeros((n_q, 1))                 # the running sum l
    acc = np.zeros((n_q, V.shape[1]))
    starts = range(0, n_k, block_size) if blocks is None else blocks(n_k, block_size)
    for start in starts:
        s = Q @ K[start:start + block_size].T
        if scale:
            s = s / np.sqrt(Q.shape[1])
        keep = None
        if allowed is not None:
            keys = np.arange(start, start + s.shape[1])[None, :]          # (1, b)
            keep = allowed(np.arange(n_q)[:, None], keys, start)
            s = s if mask_after_exp else np.where(keep, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=1, keepdims=True)) if track_max else m
        p = np.exp(s - m_new) if not mask_after_exp else np.exp(s - m_new) * keep
        r = np.exp(m - m_new)
        ell = (ell * r if rescale_l else ell) + p.sum(axis=1, keepdims=True)
        acc = (acc * r if rescale_acc else acc) + p @ V[start:start + block_size]
        m = m_new
    return acc / ell if divide else acc


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
_NO_MAX = ("no running maximum: the exponentials are taken of the scores themselves, and exp "
           "overflows to inf for scores above ~709 (here about 1000), then inf / inf = NaN (and "
           "exp underflows to 0 below ~-745, then 0 / 0 = NaN). Keep a running max m per query, "
           "start it at -inf, and take exp(s - m).")
_MAX_FROM_0 = ("the running max starts at 0: when every score of a query is very negative (here "
               "about -1000), m stays 0, every exp(s - m) underflows to 0, and the output is 0 / 0 "
               "= NaN. Start m at -inf, so that the first block's max replaces it.")
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
    Mistake(_NO_MAX, lambda Q, K, V, block_size: _online(Q, K, V, block_size, track_max=False)),
    Mistake(_MAX_FROM_0, lambda Q, K, V, block_size: _online(Q, K, V, block_size, max_from=0.0)),
]

# ----------------------------------------------------------------- causal
_FAR = "future keys score about 1000 more than the visible ones"


def _causal_case(rng, n, d_k, d_v, block_size, label, growth=None):
    if growth == "huge":
        case = _huge_scores_case(rng, n, n, d_k, d_v, block_size, label)
    elif growth == "far":      # key j scores about 300 * j: a future key far above the visible ones
        Q = np.abs(rng.standard_normal((n, d_k))) + 0.5
        K = np.outer(300.0 * np.arange(n) + 1.0, np.ones(d_k)) / Q.sum(axis=1).mean() * np.sqrt(d_k)
        K = K * (1 + 0.01 * rng.standard_normal(K.shape))
        case = Case((Q, K, rng.standard_normal((n, d_v))), {"block_size": block_size})
    else:
        case = _case(rng, n, n, d_k, d_v, block_size, label, growth)
    Q, K, V = case.args
    case.label = f"{label}: Q {Q.shape}, K {K.shape}, V {V.shape}, block_size={block_size}"
    return case


def make_causal_cases(rng, hidden):
    # (n, d_k, d_v, block_size, label, growth)
    specs = [
        (10, 4, 3, 4, "the max grows every block, last block partial (10 = 4 + 4 + 2)", 3.0),
        (8, 3, 5, 4, "the max grows every block, n a multiple of block_size", 3.0),
        (3, 2, 2, 8, "block_size larger than n (one partial block)", None),
        (6, 5, 4, 1, "block_size = 1", 2.0),
        (1, 3, 2, 4, "a single token", None),
        (33, 8, 6, 16, "random scores, last block of 1 key", None),
        (7, 3, 2, 3, _FAR, "far"),
        (9, 4, 3, 4, _HUGE, "huge"),
    ]
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        block = size(3, 6)
        d_k, d_v = distinct(rng, 2, 8, 2)
        specs = [
            (block * size(2, 3) + size(2, block - 1), d_k, d_v, block,
             "the max grows every block, last block partial", 4.0),
            (block * size(2, 4), d_v, d_k, block, "the max grows every block, n a multiple of block_size",
             2.5),
            (size(2, 5), size(2, 5), size(2, 5), size(6, 9), "block_size larger than n", None),
            (size(4, 7), d_k, d_v, 1, "block_size = 1", 2.0),
            (1, size(2, 5), size(2, 5), size(2, 4), "a single token", None),
            (size(20, 40), size(4, 9), size(3, 7), size(5, 9), "random scores", None),
            (size(6, 9), d_k, d_v, size(2, 4), _FAR, "far"),
            (size(10, 20), d_k, d_v, size(3, 6), _HUGE, "huge"),
        ]
    return [_causal_case(rng, *spec[:5], growth=spec[5]) for spec in specs]


def _causal(i, j, start):
    return j <= i


def _causal_online(Q, K, V, block_size, **mistake):
    return _online(Q, K, V, block_size, allowed=mistake.pop("allowed", _causal), **mistake)


CAUSAL_MISTAKES = [
    Mistake("the mask was left out: with the causal mask, query i may only see keys 0 .. i. "
            "In every block, set the scores of keys after the query to -inf before the "
            "running max and the exponentials.",
            lambda Q, K, V, block_size: _online(Q, K, V, block_size)),
    Mistake("the mask also hides each token's own key: query i may see keys j <= i, itself "
            "included (causal_mask(n) has True on the diagonal). Hiding it leaves query 0 "
            "with nothing to attend to.",
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size,
                                                       allowed=lambda i, j, start: j < i)),
    Mistake("the mask is the wrong way round: it lets query i see the keys after it "
            "(j >= i) instead of the keys up to it (j <= i).",
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size,
                                                       allowed=lambda i, j, start: j >= i)),
    Mistake("the mask compared the query's position with the key's position *inside the "
            "block* (0 .. block_size - 1): key j of the block starting at `start` is key "
            "start + j of the sentence. Compare query i with start + j.",
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size,
                                                       allowed=lambda i, j, start: j - start <= i)),
    Mistake("the running max was taken over every key of the block, future keys included, and "
            "the mask applied after the exponential: when a future key outscores the visible "
            "ones by a few hundred, every visible exp(s - m) is 0 and the output 0 / 0 = NaN "
            "(lesson 03's trap). Set the masked scores to -inf *before* the running max.",
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size, mask_after_exp=True)),
    Mistake("the running sum l and the accumulator acc are not rescaled when the max changes: "
            + _RESCALE,
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size, rescale_l=False,
                                                       rescale_acc=False)),
    Mistake("the accumulator acc is not rescaled when the max changes (l is): " + _RESCALE,
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size, rescale_acc=False)),
    Mistake("the running sum l is not rescaled when the max changes (acc is): " + _RESCALE,
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size, rescale_l=False)),
    Mistake("the final division is missing: acc is a sum of exp-weighted values; the output "
            "is acc / l, so that the weights sum to 1.",
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size, divide=False)),
    Mistake(_PARTIAL.format(what="skipped"),
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size,
                                                       blocks=_full_blocks_only)),
    Mistake("the scores are not divided by sqrt(d_k): each block's scores are "
            "Q @ K_block.T / sqrt(d_k), as in the naive attention.",
            lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size, scale=False)),
    Mistake(_NO_MAX, lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size,
                                                                 track_max=False)),
    Mistake(_MAX_FROM_0, lambda Q, K, V, block_size: _causal_online(Q, K, V, block_size,
                                                                     max_from=0.0)),
]


# ----------------------------------------------------------------- the grid
#: The probe's sizes: the (n, n) grid, 128 MiB in float64 (16 MiB even as booleans), dwarfs
#: an (n, block) block of scores (2 MiB) and the per-block row maxima a two-pass version keeps.
PROBE_N, PROBE_D, PROBE_BLOCK = 4096, 2, 64
#: A first, small probe. A function that holds less than an eighth of even a boolean grid at
#: this size keeps a row or a block at a time; only the others are traced at PROBE_N, where a
#: correct one-query-at-a-time loop would take seconds (tracing slows every allocation).
SMALL_PROBE_N = 1024


def _traced_peak_on(fn, n, d, block_size, n_q=None):
    """The peak memory of ``fn`` on ``n_q`` random queries (default ``n``) and ``n`` keys and values."""
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((n if n_q is None else n_q, d))
    K, V = (rng.standard_normal((n, d)) for _ in range(2))     # made before tracing
    return traced_peak(lambda: fn(Q, K, V, block_size=block_size))


def full_grid_message(fn, n=PROBE_N, d=PROBE_D, block_size=PROBE_BLOCK, small_n=SMALL_PROBE_N,
                      query_share=1):
    """Say so when ``fn(Q, K, V, block_size=...)`` holds an array as big as the score grid.

    Runs ``fn`` on ``n // query_share`` queries and ``n`` keys of size ``d`` with blocks of
    ``block_size`` and traces its peak memory. A function that works block by block peaks at
    a few ``(n_q, block_size)`` arrays; one that makes the ``(n_q, n)`` grid, even as float32
    or as a boolean mask of one byte per entry, peaks at ``n_q * n`` bytes or more. The ratio
    of the two does not depend on ``n_q``: fewer queries (``query_share`` > 1, where the
    exercise allows ``n_q != n_k``) make the probe cheaper for a correct loop over query
    blocks and key blocks (FlashAttention-2's loops: ``(n_q / b) * (n / b)`` tiles in Python).

    First, on ``small_n // query_share`` queries and ``small_n`` keys: a function whose peak
    there stays under an eighth of that (boolean) grid builds no grid and is not run at ``n``.
    (This assumes the function does the same at every size.)

    Returns
    -------
    str or None
        A message for the learner, or None when the peak stays below ``n_q * n`` bytes.
    """
    small_q, n_q = small_n // query_share, n // query_share
    if small_n < n and _traced_peak_on(fn, small_n, d, block_size, small_q) < small_q * small_n / 8:
        return None
    peak = _traced_peak_on(fn, n, d, block_size, n_q)
    if peak < n_q * n:
        return None
    return (f"it gives the right numbers, but on {n_q} queries and {n} keys with "
            f"block_size={block_size} it allocated {format_bytes(peak)} at its peak: at least what "
            f"an ({n_q}, {n}) grid takes even at one byte per entry ({format_bytes(n_q * n)} as "
            f"booleans; {format_bytes(n_q * n * 8)} in float64), where a block of scores is "
            f"({n_q}, {block_size}), {format_bytes(n_q * block_size * 8)}. Somewhere it builds the "
            f"whole score grid (or a mask or weights of that size): compute only one block's "
            f"scores at a time.")


def _online_grid_message(fn):
    """:func:`full_grid_message` with a quarter as many queries as keys (allowed here)."""
    return full_grid_message(fn, query_share=4)


EXERCISES = [
    Exercise(
        name="online_softmax_attention",
        lesson=LESSON,
        reference=reference.online_softmax_attention,
        make_cases=make_cases,
        mistakes=MISTAKES,
        outputs=("out",),
        rtol=1e-8,
        atol=1e-10,
        inspect=_online_grid_message,
    ),
    Exercise(
        name="causal_online_softmax_attention",
        lesson=LESSON,
        reference=reference.causal_online_softmax_attention,
        make_cases=make_causal_cases,
        mistakes=CAUSAL_MISTAKES,
        outputs=("out",),
        rtol=1e-8,
        atol=1e-10,
        inspect=full_grid_message,
    ),
]
