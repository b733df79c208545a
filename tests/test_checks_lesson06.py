"""Lesson 06 checks: online_softmax_attention and causal_online_softmax_attention name the
known mistakes (building the whole score grid among them) and pass any correct implementation.
The wrong versions are written the way a learner would; both tables (``WRONG_BY_EXERCISE``,
``RIGHT_BY_EXERCISE``) are run in test_checks_versions.py."""

import numpy as np
import pytest

from helpers import reference
from helpers.checking import evaluate
from helpers.exercises import EXERCISES, lesson06


def tiled(Q, K, V, block_size, *, rescale=True, divide=True, stop=None, pad=False):
    """A learner's loop over key blocks, with one switch per mistake."""
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    running_max = np.full(n_q, -np.inf)
    running_sum = np.zeros(n_q)
    acc = np.zeros((n_q, V.shape[1]))
    for start in range(0, n_k if stop is None else stop(n_k, block_size), block_size):
        K_b, V_b = K[start:start + block_size], V[start:start + block_size]
        if pad and len(K_b) < block_size:
            K_b = np.vstack([K_b, np.zeros((block_size - len(K_b), d_k))])
            V_b = np.vstack([V_b, np.zeros((block_size - len(V_b), V.shape[1]))])
        s = Q @ K_b.T / np.sqrt(d_k)
        new_max = np.maximum(running_max, s.max(axis=1))
        p = np.exp(s - new_max[:, None])
        if rescale:
            factor = np.exp(running_max - new_max)
            running_sum = running_sum * factor
            acc = acc * factor[:, None]
        running_sum = running_sum + p.sum(axis=1)
        acc = acc + p @ V_b
        running_max = new_max
    return acc / running_sum[:, None] if divide else acc


def only_acc_rescaled(Q, K, V, block_size=128):
    n_q = Q.shape[0]
    m, l, acc = np.full((n_q, 1), -np.inf), np.zeros((n_q, 1)), np.zeros((n_q, V.shape[1]))
    for start in range(0, K.shape[0], block_size):
        s = Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1])
        m_new = np.maximum(m, s.max(axis=1, keepdims=True))
        p = np.exp(s - m_new)
        l = l + p.sum(axis=1, keepdims=True)                       # forgot: * exp(m - m_new)
        acc = acc * np.exp(m - m_new) + p @ V[start:start + block_size]
        m = m_new
    return acc / l


def plain_exp_sums(Q, K, V, block_size=128):
    """No running maximum: the learner sums exp(s) and exp(s) @ V block by block."""
    num, den = np.zeros((len(Q), V.shape[1])), np.zeros((len(Q), 1))
    for start in range(0, len(K), block_size):
        w = np.exp(Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1]))
        num += w @ V[start:start + block_size]
        den += w.sum(axis=1, keepdims=True)
    return num / den


def max_starts_at_zero(Q, K, V, block_size=128):
    n_q = Q.shape[0]
    m, l, acc = np.zeros((n_q, 1)), np.zeros((n_q, 1)), np.zeros((n_q, V.shape[1]))  # m: should be -inf
    for start in range(0, K.shape[0], block_size):
        s = Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1])
        m, l, acc = online_step(m, l, acc, s, V[start:start + block_size])
    return acc / l


WRONG = {
    "no running max (plain exp sums)": (plain_exp_sums, "no running maximum: the exponentials"),
    "running max starts at 0": (max_starts_at_zero, "the running max starts at 0"),
    "no rescale": (lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size, rescale=False),
                   "are not rescaled when the max changes"),
    "no final division": (lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size, divide=False),
                          "the final division is missing"),
    "last partial block skipped": (
        lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size,
                                              stop=lambda n, b: n - b + 1),
        "off by one at the last block"),
    "last block zero-padded": (lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size, pad=True),
                               "padded with zero keys"),
    "no sqrt(d_k)": (lambda Q, K, V, block_size=128: tiled(Q * np.sqrt(Q.shape[1]), K, V, block_size),
                     "not divided by sqrt(d_k)"),
    "only the accumulator rescaled": (only_acc_rescaled, "the running sum l is not rescaled"),
}


def two_pass(Q, K, V, block_size=128):
    # correct but different: first pass finds the row max, second pass sums (still blockwise)
    n_k = K.shape[0]
    scale = 1 / np.sqrt(Q.shape[1])
    m = np.max([np.max(Q @ K[s:s + block_size].T * scale, axis=1)
                for s in range(0, n_k, block_size)], axis=0)[:, None]
    num, den = 0.0, 0.0
    for s in range(0, n_k, block_size):
        p = np.exp(Q @ K[s:s + block_size].T * scale - m)
        num = num + p @ V[s:s + block_size]
        den = den + p.sum(axis=1, keepdims=True)
    return num / den


def log_sum_exp_running(Q, K, V, block_size=128):
    # correct but different: keep the running log-sum-exp and the running normalised output
    lse = np.full((Q.shape[0], 1), -np.inf)
    out = np.zeros((Q.shape[0], V.shape[1]))
    for s in range(0, K.shape[0], block_size):
        scores = np.einsum("qd,kd->qk", Q, K[s:s + block_size]) / np.sqrt(Q.shape[1])
        block_lse = np.logaddexp.reduce(scores, axis=1, keepdims=True)
        block_out = np.exp(scores - block_lse) @ V[s:s + block_size]
        new_lse = np.logaddexp(lse, block_lse)
        out = np.exp(lse - new_lse) * out + np.exp(block_lse - new_lse) * block_out
        lse = new_lse
    return out


def flash2_port(Q, K, V, block_size=128):
    """A FlashAttention-2 port (Dao 2023, Algorithm 1): an outer Python loop per query block,
    an inner one per key block, each query tile with its own running max, sum and output."""
    n_q, d = Q.shape
    out = np.zeros((n_q, V.shape[1]))
    for i in range(0, n_q, block_size):
        Q_i = Q[i:i + block_size]
        m_i, l_i = np.full(len(Q_i), -np.inf), np.zeros(len(Q_i))
        O_i = np.zeros((len(Q_i), V.shape[1]))
        for j in range(0, K.shape[0], block_size):
            S_ij = Q_i @ K[j:j + block_size].T / np.sqrt(d)
            m_new = np.maximum(m_i, S_ij.max(axis=1))
            P_ij = np.exp(S_ij - m_new[:, None])
            alpha = np.exp(m_i - m_new)
            l_i = alpha * l_i + P_ij.sum(axis=1)
            O_i = alpha[:, None] * O_i + P_ij @ V[j:j + block_size]
            m_i = m_new
        out[i:i + block_size] = O_i / l_i[:, None]
    return out


RIGHT = {
    "FlashAttention-2 port, a loop per query block": flash2_port,
    "per-row running sum": lambda Q, K, V, block_size=128: tiled(Q, K, V, block_size),
    "two passes": two_pass,
    "running log-sum-exp": log_sum_exp_running,
}


# ----------------------------------------------------------------- causal
def causal_tiled(Q, K, V, block_size=128, *, allowed=lambda i, j: j <= i, rescale=True,
                 skip_rows=False, mask_after_exp=False, rescale_sum=True, max_from=-np.inf):
    """A learner's causal loop: mask each block by global positions (one switch per mistake)."""
    n, d_k = Q.shape
    running_max = np.full(n, max_from)
    running_sum = np.zeros(n)
    acc = np.zeros((n, V.shape[1]))
    for start in range(0, n, block_size):
        stop = min(start + block_size, n)
        rows = np.arange(start if skip_rows else 0, n)              # queries that may see this block
        s = Q[rows] @ K[start:stop].T / np.sqrt(d_k)
        seen = np.broadcast_to(allowed(rows[:, None], np.arange(start, stop)[None, :]), s.shape)
        if not mask_after_exp:
            s[~seen] = -np.inf
        new_max = np.maximum(running_max[rows], s.max(axis=1))
        p = np.exp(s - new_max[:, None])
        if mask_after_exp:                                          # max over every key, then zeroed
            p[~seen] = 0.0
        factor = np.exp(running_max[rows] - new_max) if rescale else 1.0
        running_sum[rows] = running_sum[rows] * (factor if rescale_sum else 1.0) + p.sum(axis=1)
        acc[rows] = acc[rows] * np.reshape(factor, (-1, 1)) + p @ V[start:stop]
        running_max[rows] = new_max
    return acc / running_sum[:, None]


def online_step(m, l, acc, s, V_b):
    """One key block of the online softmax: the new running max m, sum l and output acc.

    ``m, l`` are ``(n_q, 1)``, ``acc`` ``(n_q, d_v)``, the block's scores ``s`` ``(n_q, b)``
    and its values ``V_b`` ``(b, d_v)``; the output is ``acc / l`` after the last block.
    """
    m_new = np.maximum(m, s.max(axis=1, keepdims=True))
    p = np.exp(s - m_new)
    l = l * np.exp(m - m_new) + p.sum(axis=1, keepdims=True)
    return m_new, l, acc * np.exp(m - m_new) + p @ V_b


def causal_local_positions(Q, K, V, block_size=128):
    """Masks with the key's index inside the block, as np.tril on each block would."""
    n = len(Q)
    m, l, out = np.full((n, 1), -np.inf), np.zeros((n, 1)), np.zeros((n, V.shape[1]))
    for start in range(0, n, block_size):
        s = Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1])
        s = np.where(np.tri(*s.shape, dtype=bool), s, -np.inf)     # forgot: shift by start
        m, l, out = online_step(m, l, out, s, V[start:start + block_size])
    return out / l


def causal_plain_exp_sums(Q, K, V, block_size=128):
    """No running maximum: exp of the masked scores (exp(-inf) = 0), summed block by block."""
    n = len(Q)
    num, den = np.zeros((n, V.shape[1])), np.zeros(n)
    for start in range(0, n, block_size):
        s = Q @ K[start:start + block_size].T / np.sqrt(Q.shape[1])
        s[np.arange(start, start + s.shape[1])[None, :] > np.arange(n)[:, None]] = -np.inf
        w = np.exp(s)
        num += w @ V[start:start + block_size]
        den += w.sum(axis=1)
    return num / den[:, None]


CAUSAL_WRONG = {
    "no running max (plain exp sums)": (causal_plain_exp_sums, "no running maximum: the exponentials"),
    "running max starts at 0": (lambda Q, K, V, block_size=128: causal_tiled(Q, K, V, block_size,
                                                                             max_from=0.0),
                                "the running max starts at 0"),
    "no mask": (lambda Q, K, V, block_size=128: causal_tiled(Q, K, V, block_size,
                                                             allowed=lambda i, j: j >= 0),
                "the mask was left out"),
    "own key hidden": (lambda Q, K, V, block_size=128: causal_tiled(Q, K, V, block_size,
                                                                    allowed=lambda i, j: j < i),
                       "also hides each token's own key"),
    "mask the wrong way round": (
        lambda Q, K, V, block_size=128: causal_tiled(Q, K, V, block_size, allowed=lambda i, j: j >= i),
        "the wrong way round"),
    "positions inside the block": (causal_local_positions, "inside the block"),
    "no rescale": (lambda Q, K, V, block_size=128: causal_tiled(Q, K, V, block_size, rescale=False),
                   "are not rescaled when the max changes"),
    "max over all keys, mask after exp": (
        lambda Q, K, V, block_size=128: causal_tiled(Q, K, V, block_size, mask_after_exp=True),
        "the mask applied after the exponential"),
    "sum not rescaled": (lambda Q, K, V, block_size=128: causal_tiled(Q, K, V, block_size,
                                                                      rescale_sum=False),
                         "the running sum l is not rescaled when the max changes (acc is)"),
}

CAUSAL_RIGHT = {
    "mask every block": lambda Q, K, V, block_size=128: causal_tiled(Q, K, V, block_size),
    "skip the queries before the block":
        lambda Q, K, V, block_size=128: causal_tiled(Q, K, V, block_size, skip_rows=True),
}


# ----------------------------------------------------------------- the whole grid
def grid_then_nothing_else(Q, K, V, block_size=128):
    return reference.scaled_dot_product_attention(Q, K, V)[0]          # the (n, n) grid


def grid_in_float32(Q, K, V, block_size=128):
    S = (Q.astype(np.float32) @ K.T.astype(np.float32)) / np.float32(np.sqrt(Q.shape[1]))
    W = np.exp(S - S.max(axis=1, keepdims=True))
    return (W / W.sum(axis=1, keepdims=True)).astype(np.float64) @ V


def blocks_of_a_precomputed_grid(Q, K, V, block_size=128):
    S = Q @ K.T / np.sqrt(Q.shape[1])                                  # all scores first ...
    return tiled_from_scores(S, V, block_size)                         # ... then "blocks"


def tiled_from_scores(S, V, block_size):
    m, l, acc = np.full((len(S), 1), -np.inf), np.zeros((len(S), 1)), 0.0
    for start in range(0, S.shape[1], block_size):
        m, l, acc = online_step(m, l, acc, S[:, start:start + block_size], V[start:start + block_size])
    return acc / l


def causal_with_a_full_mask(Q, K, V, block_size=128):
    mask = np.tril(np.ones((len(Q), len(K)), dtype=bool))             # (n, n) booleans: n^2 bytes
    return causal_tiled(Q, K, V, block_size,
                        allowed=lambda i, j: mask[i, j])


GRID_BUILDERS = {
    "online_softmax_attention": [grid_then_nothing_else, grid_in_float32,
                                 blocks_of_a_precomputed_grid],
    "causal_online_softmax_attention": [causal_with_a_full_mask],
}
TILED = {
    "online_softmax_attention": [*RIGHT.values(), reference.online_softmax_attention],
    "causal_online_softmax_attention": [*CAUSAL_RIGHT.values(),
                                        reference.causal_online_softmax_attention],
}


@pytest.mark.parametrize("name, fn", [(n, f) for n, fns in GRID_BUILDERS.items() for f in fns],
                         ids=lambda v: getattr(v, "__name__", v))
def test_a_function_that_builds_the_whole_grid_is_told_so(name, fn):
    message = lesson06.full_grid_message(fn)
    assert message is not None and "builds the whole score grid" in message


# The grid builders whose values are right in float64 (grid_in_float32 already fails on values):
# wrong only in building the grid, which the check and the grader must say.
GRID_WRONG = {
    "online_softmax_attention": {
        "the whole grid, then nothing else": (grid_then_nothing_else, "builds the whole score grid"),
        "blocks of a precomputed grid": (blocks_of_a_precomputed_grid, "builds the whole score grid")},
    "causal_online_softmax_attention": {
        "an (n, n) boolean mask": (causal_with_a_full_mask, "builds the whole score grid")},
}
RIGHT_VALUES_GRID_BUILDERS = [(n, fn) for n, versions in GRID_WRONG.items() for fn, _ in versions.values()]


@pytest.mark.parametrize("name, fn", RIGHT_VALUES_GRID_BUILDERS, ids=lambda v: getattr(v, "__name__", v))
def test_the_grader_takes_one_case_off_a_grid_builder(name, fn):
    exercise = EXERCISES[name]
    report = evaluate(exercise, fn, exercise.cases(hidden=True))
    assert report.passed == report.total - 1 and not report.ok


@pytest.mark.parametrize("name, fn", [(n, f) for n, fns in TILED.items() for f in fns],
                         ids=lambda v: getattr(v, "__name__", v))
def test_a_function_that_works_block_by_block_is_not(name, fn):
    assert lesson06.full_grid_message(fn) is None


def one_query_at_a_time(Q, K, V, block_size=128):
    """Right, and slow in Python: each query walks the key blocks with scalars."""
    out = np.zeros((len(Q), V.shape[1]))
    for i, q in enumerate(Q):
        m, l, acc = -np.inf, 0.0, np.zeros(V.shape[1])
        for start in range(0, len(K), block_size):
            s = K[start:start + block_size] @ q / np.sqrt(len(q))
            m_new = max(m, float(s.max()))
            p = np.exp(s - m_new)
            l = l * np.exp(m - m_new) + float(p.sum())
            acc = acc * np.exp(m - m_new) + p @ V[start:start + block_size]
            m = m_new
        out[i] = acc / l
    return out


def sizes_it_ran_on(fn):
    """``fn``, and the list of query counts it is called with."""
    sizes = []

    def recorded(Q, K, V, block_size=128):
        sizes.append(len(Q))
        return fn(Q, K, V, block_size=block_size)
    return recorded, sizes


def test_a_function_that_keeps_one_row_at_a_time_is_cleared_on_the_small_probe_alone():
    Q, K, V = (np.random.default_rng(1).standard_normal((7, 3)) for _ in range(3))
    np.testing.assert_allclose(one_query_at_a_time(Q, K, V, block_size=2),
                               reference.scaled_dot_product_attention(Q, K, V)[0], atol=1e-12)
    fn, sizes = sizes_it_ran_on(one_query_at_a_time)
    assert lesson06.full_grid_message(fn, n=2048, small_n=512) is None
    assert sizes == [512]                  # never run at the full size


@pytest.mark.parametrize("fn", [grid_then_nothing_else, reference.online_softmax_attention],
                         ids=lambda f: f.__name__)
def test_a_function_that_holds_more_on_the_small_probe_is_traced_at_the_full_size(fn):
    recorded, sizes = sizes_it_ran_on(fn)
    lesson06.full_grid_message(recorded, n=2048, small_n=512)
    assert sizes == [512, 2048]


# ----------------------------------------------------------------- both, table-driven
WRONG_BY_EXERCISE = {"online_softmax_attention": {**WRONG, **GRID_WRONG["online_softmax_attention"]},
                     "causal_online_softmax_attention": {
                         **CAUSAL_WRONG, **GRID_WRONG["causal_online_softmax_attention"]}}
RIGHT_BY_EXERCISE = {"online_softmax_attention": RIGHT, "causal_online_softmax_attention": CAUSAL_RIGHT}


def test_a_loop_per_query_block_that_the_probe_stops_passes_with_a_note():
    # the grader runs the probe with no time limit and gives full marks: the check must not
    # reject it for its speed (here a limit small enough to stop the probe: 4 x 5 ms, where the
    # probe took 0.11 s on the course's machine when idle; 4 x 50 ms let it finish there)
    exercise = EXERCISES["online_softmax_attention"]
    report = evaluate(exercise, flash2_port, time_limit=0.005)
    assert report.ok and "so that part was not judged" in report.notes[0]


def test_the_probe_runs_a_quarter_as_many_queries_as_keys_where_n_q_may_differ():
    fn, sizes = sizes_it_ran_on(flash2_port)
    assert EXERCISES["online_softmax_attention"].inspect(fn) is None
    assert sizes[-1] == lesson06.PROBE_N // 4
