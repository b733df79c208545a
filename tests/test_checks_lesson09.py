"""The lesson 09 checks (sinusoidal_encoding, rope, rotary_attention, rope_backward).

Wrong versions are written here the way a learner might write them, independently of
the mistake catalogue in helpers/exercises/lesson09.py; each must get its specific
message, on the visible and on the hidden cases. Correct versions written in other
ways must pass. Both tables (``WRONG_BY_EXERCISE``, ``RIGHT_BY_EXERCISE``) are run in
test_checks_versions.py. (That every catalogued mistake is named by its own message is
checked for the whole catalogue at once, in test_catalogue.py.)
"""

import math

import numpy as np
import pytest

from helpers import reference
from helpers.checking import evaluate
from helpers.exercises import EXERCISES, LESSONS, lesson09


# ------------------------------------------------------------------ sinusoidal_encoding
def pe_loops(n, d_model, base=10000.0):
    """Entry by entry with math (right)."""
    PE = np.zeros((n, d_model))
    for p in range(n):
        for i in range(0, d_model, 2):
            PE[p, i] = math.sin(p / base ** (i / d_model))        # i here is the column, 2 * pair
            PE[p, i + 1] = math.cos(p / base ** (i / d_model))
    return PE


def pe_exp_log(n, d_model, base=10000.0):
    """The Annotated Transformer's form: div_term = exp(-(2i) ln(base) / d) (right)."""
    position = np.arange(n)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * -(np.log(base) / d_model))
    PE = np.zeros((n, d_model))
    PE[:, 0::2] = np.sin(position * div_term)
    PE[:, 1::2] = np.cos(position * div_term)
    return PE


def pe_stack(n, d_model, base=10000.0):
    """Sines and cosines stacked on a last axis, then reshaped (right: interleaved)."""
    angles = np.outer(np.arange(n), 1 / np.power(base, np.arange(d_model // 2) * 2 / d_model))
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(n, d_model)


def pe_swapped(n, d_model, base=10000.0):
    angles = np.outer(np.arange(n), base ** (-np.arange(0, d_model, 2) / d_model))
    PE = np.zeros((n, d_model))
    PE[:, 0::2], PE[:, 1::2] = np.cos(angles), np.sin(angles)
    return PE


def pe_pair_index(n, d_model, base=10000.0):
    PE = np.zeros((n, d_model))
    for p in range(n):
        for i in range(d_model // 2):
            PE[p, 2 * i] = np.sin(p / base ** (i / d_model))     # forgot the 2 in 2i/d
            PE[p, 2 * i + 1] = np.cos(p / base ** (i / d_model))
    return PE


def pe_column_index(n, d_model, base=10000.0):
    PE = np.zeros((n, d_model))
    for p in range(n):
        for j in range(d_model):
            angle = p / base ** (j / d_model)                    # each column its own exponent
            PE[p, j] = np.sin(angle) if j % 2 == 0 else np.cos(angle)
    return PE


def pe_from_one(n, d_model, base=10000.0):
    angles = np.outer(np.arange(1, n + 1), base ** (-np.arange(0, d_model, 2) / d_model))
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(n, d_model)


def pe_concatenated(n, d_model, base=10000.0):
    angles = np.outer(np.arange(n), base ** (-np.arange(0, d_model, 2) / d_model))
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def pe_default_base(n, d_model, base=10000.0):
    return pe_exp_log(n, d_model)


def pe_four_i(n, d_model, base=10000.0):
    two_i = 2 * np.arange(0, d_model, 2)                       # the column index, doubled again
    angles = np.arange(n)[:, None] / base ** (two_i / d_model)
    PE = np.zeros((n, d_model))
    PE[:, 0::2], PE[:, 1::2] = np.sin(angles), np.cos(angles)
    return PE


def pe_int_table(n, d_model, base=10000.0):
    PE = np.zeros((n, d_model), dtype=int)                     # assignments are cut to whole numbers
    angles = np.arange(n)[:, None] * base ** (-np.arange(0, d_model, 2) / d_model)
    PE[:, 0::2], PE[:, 1::2] = np.sin(angles), np.cos(angles)
    return PE


def pe_float32(n, d_model, base=10000.0):
    PE = np.zeros((n, d_model), dtype=np.float32)
    angles = np.arange(n)[:, None] * base ** (-np.arange(0, d_model, 2) / d_model)
    PE[:, 0::2], PE[:, 1::2] = np.sin(angles), np.cos(angles)
    return PE


def pe_float32_halves(n, d_model, base=10000.0):
    angles = np.arange(n)[:, None] * base ** (-np.arange(0, d_model, 2) / d_model)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype(np.float32)


def pe_turned_row_by_row(n, d_model, base=10000.0):
    """Row 0, then each row turned from the one before by the one-step rotation (right)."""
    speed = base ** (-np.arange(0, d_model, 2) / d_model)
    c, s = np.cos(speed), np.sin(speed)
    PE = np.zeros((n, d_model))
    PE[0, 1::2] = 1.0
    for p in range(1, n):
        sin, cos = PE[p - 1, 0::2], PE[p - 1, 1::2]
        PE[p, 0::2], PE[p, 1::2] = sin * c + cos * s, cos * c - sin * s
    return PE


_KEPT = {}


def pe_kept_per_call(n, d_model, base=10000.0):
    """Tables kept from earlier calls, keyed by every argument, a copy returned (right)."""
    if (n, d_model, base) not in _KEPT:
        _KEPT[(n, d_model, base)] = pe_exp_log(n, d_model, base)
    return _KEPT[(n, d_model, base)].copy()


_BY_SIZE = {}


def pe_kept_by_size(n, d_model, base=10000.0):
    """A table kept per (n, d_model): a later call with another base gets the old table."""
    if (n, d_model) not in _BY_SIZE:
        _BY_SIZE[(n, d_model)] = pe_exp_log(n, d_model, base)
    return _BY_SIZE[(n, d_model)]


def pe_max_len(n, d_model, base=10000.0):
    """The Annotated Transformer's habit with a smaller max_len: a fixed table, sliced."""
    return pe_exp_log(50, d_model, base)[:n]


PE_RIGHT = {"loops with math": pe_loops, "exp-log form": pe_exp_log, "stack and reshape": pe_stack,
            "row by row, each turned from the one before": pe_turned_row_by_row,
            "tables kept per call, copied": pe_kept_per_call,
            "the lesson's own": reference.sinusoidal_encoding}
PE_WRONG = {
    "sin and cos swapped": (pe_swapped, "sin and cos are swapped"),
    "i/d instead of 2i/d": (pe_pair_index, "the exponent is i/d_model"),
    "column index in the exponent": (pe_column_index, "the cos columns use the exponent (2i + 1)/d_model"),
    "positions from 1": (pe_from_one, "the positions are counted from 1"),
    "sines then cosines": (pe_concatenated, "split halves"),
    "base ignored": (pe_default_base, "base is ignored"),
    "4i/d instead of 2i/d": (pe_four_i, "the exponent is 4i/d_model"),
    "an integer table": (pe_int_table, "integer dtype"),
    "a float32 table": (pe_float32, "PE is float32: its values are right"),
    "float32 sines then cosines": (pe_float32_halves, "split halves"),
    "a table kept per size, whatever the base": (pe_kept_by_size, "base is ignored"),
    "a table for 50 positions, sliced": (pe_max_len, "n can be any whole number"),
}


# ------------------------------------------------------------------ rope
def rope_complex(x, positions, base=10000.0):
    """Pairs as complex numbers, times exp(i angle) (right)."""
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    theta = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
    z = z * np.exp(1j * theta)
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def rope_matrices(x, positions, base=10000.0):
    """A 2 x 2 rotation matrix per pair and position, in loops (right)."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    d = x.shape[-1]
    for r, p in enumerate(positions):
        for i in range(d // 2):
            t = p * base ** (-2 * i / d)
            R = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
            out[..., r, 2 * i:2 * i + 2] = x[..., r, 2 * i:2 * i + 2] @ R.T
    return out


def rope_rotate_half(x, positions, base=10000.0):
    """x * cos + rotate_every_two(x) * sin, the "rotate every two" trick (right)."""
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    theta = np.repeat(np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d), 2, axis=-1)
    turned = np.empty_like(x)
    turned[..., 0::2], turned[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return x * np.cos(theta) + turned * np.sin(theta)


def rope_clockwise(x, positions, base=10000.0):
    return rope_complex(x, -np.asarray(positions), base)


def rope_llama(x, positions, base=10000.0):
    """Hugging Face LLaMA's rotate_half: pairs (x[i], x[i + d/2])."""
    d = x.shape[-1]
    theta = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
    theta = np.concatenate([theta, theta], axis=-1)
    rotated = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * np.cos(theta) + rotated * np.sin(theta)


def rope_pair_index(x, positions, base=10000.0):
    d = x.shape[-1]
    theta = np.asarray(positions)[:, None] * base ** (-np.arange(d // 2) / d)   # forgot the 2
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * theta)
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def rope_linspace(x, positions, base=10000.0):
    """Exponents spread with np.linspace from 0 to 1."""
    d = x.shape[-1]
    theta = np.asarray(positions)[:, None] * base ** (-np.linspace(0, 1, d // 2))
    return _turn(x, theta)


def _turn(x, theta):
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * theta)
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def rope_arange(x, positions, base=10000.0):
    return rope_complex(x, np.arange(x.shape[-2]), base)


def rope_in_place(x, positions, base=10000.0):
    x = np.array(x, dtype=float)
    d = x.shape[-1]
    theta = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
    x[..., 0::2] = x[..., 0::2] * np.cos(theta) - x[..., 1::2] * np.sin(theta)
    x[..., 1::2] = x[..., 0::2] * np.sin(theta) + x[..., 1::2] * np.cos(theta)   # uses the new one
    return x


def rope_plus_one(x, positions, base=10000.0):
    return rope_complex(x, np.asarray(positions) + 1, base)


def rope_four_i(x, positions, base=10000.0):
    d = x.shape[-1]
    theta = np.asarray(positions)[:, None] / base ** (2 * np.arange(0, d, 2) / d)   # 2 * 2i
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * theta)
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def rope_cos_sin_swapped(x, positions, base=10000.0):
    d = x.shape[-1]
    t = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * np.sin(t) - x[..., 1::2] * np.cos(t)
    out[..., 1::2] = x[..., 0::2] * np.cos(t) + x[..., 1::2] * np.sin(t)
    return out


def rope_table_for_the_positions_given(x, positions, base=10000.0):
    """Angles tabulated for min(positions) .. max(positions), then looked up (right)."""
    p = np.asarray(positions)
    d = x.shape[-1]
    rows = np.arange(p.min(), p.max() + 1)[:, None] * base ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(rows)[p - p.min()], np.sin(rows)[p - p.min()]
    out = np.empty_like(x, dtype=float)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    return out


def rope_cached_table(x, positions, base=10000.0, max_len=2048):
    """Hugging Face's habit: cos and sin tabulated once for positions 0 .. max_len - 1, then indexed."""
    d = x.shape[-1]
    angles = np.arange(max_len)[:, None] * base ** (-np.arange(0, d, 2) / d)
    p = np.asarray(positions)
    cos, sin = np.cos(angles)[p], np.sin(angles)[p]            # a negative p counts from the end
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * (cos + 1j * sin)
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def rope_halves_float32(x, positions, base=10000.0):
    """torch-style split halves: inv_freq, positions and cos/sin tables in float32."""
    d = x.shape[-1]
    inv_freq = 1.0 / (np.float32(base) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d)))
    freqs = np.outer(np.asarray(positions, dtype=np.float32), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    rotated = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * np.cos(emb) + rotated * np.sin(emb)


def rope_no_asarray(x, positions, base=10000.0):
    d = x.shape[-1]
    t = positions[:, None] * base ** (-np.arange(0, d, 2) / d)   # fine for an array, not a list
    return rope_complex(x, np.asarray(positions), base) + 0 * t[..., :1]


def rope_second_axis(x, positions, base=10000.0):
    """Pairs taken with x[:, 0::2]: right for (n, d), the wrong axis once there is a head axis."""
    d = x.shape[-1]
    t = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
    out = np.empty_like(x, dtype=float)
    out[:, 0::2] = x[:, 0::2] * np.cos(t) - x[:, 1::2] * np.sin(t)
    out[:, 1::2] = x[:, 0::2] * np.sin(t) + x[:, 1::2] * np.cos(t)
    return out


ROPE_RIGHT = {"complex numbers": rope_complex, "rotation matrices in loops": rope_matrices,
              "rotate every two": rope_rotate_half,
              "a table for the positions given": rope_table_for_the_positions_given,
              "the lesson's own": reference.rope}
ROPE_WRONG = {
    "turns clockwise": (rope_clockwise, "the angle has the wrong sign"),
    "LLaMA's split halves": (rope_llama, "split-halves convention"),
    "i/d instead of 2i/d": (rope_pair_index, "the exponent is i/d"),
    "positions ignored": (rope_arange, "the positions given are ignored"),
    "second coordinate from the new first": (rope_in_place, "already rotated"),
    "positions + 1": (rope_plus_one, "counted from 1"),
    "4i/d instead of 2i/d": (rope_four_i, "the exponent is 4i/d"),
    "cos and sin swapped in the rotation": (rope_cos_sin_swapped, "cos and sin are swapped inside"),
    "angles from a 2048-row table": (rope_cached_table, "its angles come from a table indexed by position"),
    "split halves with float32 tables": (rope_halves_float32, "split-halves convention"),
    "positions[:, None] on a list": (rope_no_asarray, "np.asarray(positions) makes one"),
    "x[:, 0::2] on a head axis": (rope_second_axis, "the pairs are on the last axis"),
    "exponents by np.linspace(0, 1)": (rope_linspace, "the exponents run evenly from 0 to 1"),
}


# ------------------------------------------------------------------ rotary_attention
def softmax_rows(S):
    """Row-wise softmax; a row with every score -inf (fully masked) gets weights 0, as lesson 03's."""
    top = S.max(axis=-1, keepdims=True)
    e = np.exp(S - np.where(np.isfinite(top), top, 0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def rotary_by_hand(Q, K, V, positions, mask=None):
    """Rotated scores written out, with the lesson's own rope (right)."""
    q, k = rope_complex(Q, positions), rope_complex(K, positions)
    S = q @ np.swapaxes(k, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    W = softmax_rows(S)
    return W @ V, W


def rotary_reference_parts(Q, K, V, positions, mask=None):
    """The course's rope and attention, composed (right)."""
    return reference.scaled_dot_product_attention(reference.rope(Q, positions),
                                                  reference.rope(K, positions), V, mask)


def rotary_v_too(Q, K, V, positions, mask=None):
    return reference.scaled_dot_product_attention(reference.rope(Q, positions), reference.rope(K, positions),
                                                  reference.rope(V, positions), mask)


def rotary_q_only(Q, K, V, positions, mask=None):
    return reference.scaled_dot_product_attention(reference.rope(Q, positions), K, V, mask)


def rotary_none(Q, K, V, positions, mask=None):
    return reference.scaled_dot_product_attention(Q, K, V, mask)


def rotary_own_positions(Q, K, V, positions, mask=None):
    rows = np.arange(Q.shape[-2])                              # 0..n-1, whatever was given
    return reference.scaled_dot_product_attention(rope_complex(Q, rows), rope_complex(K, rows), V, mask)


def rotary_mask_dropped(Q, K, V, positions, mask=None):
    Q, K = reference.rope(Q, positions), reference.rope(K, positions)
    return reference.scaled_dot_product_attention(Q, K, V)


def rotary_unscaled(Q, K, V, positions, mask=None):
    q, k = rope_complex(Q, positions), rope_complex(K, positions)
    S = q @ np.swapaxes(k, -1, -2)                             # forgot / sqrt(d)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    W = softmax_rows(S)
    return W @ V, W


def rotary_keys_as_rows(Q, K, V, positions, mask=None):
    q, k = rope_complex(Q, positions), rope_complex(K, positions)
    S = k @ np.swapaxes(q, -1, -2) / np.sqrt(Q.shape[-1])      # k . q
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    W = softmax_rows(S)
    return W @ V, W


def rotary_true_blocks(Q, K, V, positions, mask=None):
    """PyTorch's nn.MultiheadAttention habit: True = blocked."""
    q, k = rope_complex(Q, positions), rope_complex(K, positions)
    S = q @ np.swapaxes(k, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, -np.inf, S)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ V, W


def rotary_mask_after_softmax(Q, K, V, positions, mask=None):
    q, k = rope_complex(Q, positions), rope_complex(K, positions)
    W = softmax_rows(q @ np.swapaxes(k, -1, -2) / np.sqrt(Q.shape[-1]))
    if mask is not None:
        W = W * mask                                           # blocked weights zeroed afterwards
    return W @ V, W


ROTARY_RIGHT = {"by hand": rotary_by_hand, "composed": rotary_reference_parts,
                "the lesson's own": reference.rotary_attention}
ROTARY_WRONG = {
    "V rotated too": (rotary_v_too, "V was rotated too"),
    "only Q rotated": (rotary_q_only, "only Q was rotated"),
    "nothing rotated": (rotary_none, "nothing was rotated"),
    "positions ignored (0..n-1)": (rotary_own_positions, "the positions given are ignored"),
    "mask not passed on": (rotary_mask_dropped, "the mask was not passed on"),
    "no 1/sqrt(d)": (rotary_unscaled, "not divided by sqrt(d)"),
    "k . q": (rotary_keys_as_rows, "the scores are k . q"),
    "True = blocked": (rotary_true_blocks, "the mask is read the other way round"),
    "mask after the softmax": (rotary_mask_after_softmax, "the mask was applied after the softmax"),
}


# ------------------------------------------------------------------ rope_backward
def backward_negated(d_out, positions, base=10000.0):
    """The forward rotation with minus the positions (right)."""
    return reference.rope(d_out, -np.asarray(positions), base)


def backward_conjugate(d_out, positions, base=10000.0):
    """Complex pairs times exp(-i angle), the conjugate (right)."""
    d = d_out.shape[-1]
    z = d_out[..., 0::2] + 1j * d_out[..., 1::2]
    theta = np.asarray(positions)[:, None] * base ** (-np.arange(0, d, 2) / d)
    z = z * np.exp(-1j * theta)
    return np.stack([z.real, z.imag], axis=-1).reshape(d_out.shape)


def backward_transposed_matrices(d_out, positions, base=10000.0):
    """R.T @ d_out per pair, in loops (right)."""
    out = np.empty_like(d_out)
    d = d_out.shape[-1]
    for r, p in enumerate(positions):
        for i in range(d // 2):
            t = p * base ** (-2 * i / d)
            R = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
            out[..., r, 2 * i:2 * i + 2] = d_out[..., r, 2 * i:2 * i + 2] @ R   # row @ R = R.T @ col
    return out


def backward_forward_again(d_out, positions, base=10000.0):
    return rope_complex(d_out, positions, base)


def backward_identity(d_out, positions, base=10000.0):
    return d_out.copy()


def backward_minus(d_out, positions, base=10000.0):
    return -rope_complex(d_out, positions, base)


def backward_base_dropped(d_out, positions, base=10000.0):
    return reference.rope(d_out, -np.asarray(positions))       # base not handed on


def backward_negates_a_list(d_out, positions, base=10000.0):
    return reference.rope(d_out, -positions, base)              # fine for arrays, not for lists


def backward_halves_float32(d_out, positions, base=10000.0):
    """Liger's backward in the split-halves convention, tables in float32: turned back by -angle."""
    return rope_halves_float32(d_out, -np.asarray(positions), base)


BACKWARD_RIGHT = {"negated positions": backward_negated, "complex conjugate": backward_conjugate,
                  "transposed matrices": backward_transposed_matrices,
                  "the lesson's own": reference.rope_backward}
BACKWARD_WRONG = {
    "the forward rotation again": (backward_forward_again, "this is the forward rotation again"),
    "not rotated": (backward_identity, "d_out is returned unrotated"),
    "minus the forward": (backward_minus, "the whole gradient has the wrong sign"),
    "base not passed on": (backward_base_dropped, "base was not passed on"),
    "-positions of a list": (backward_negates_a_list, "-positions needs one"),
    "split halves with float32 tables": (backward_halves_float32, "split halves"),
}


WRONG_BY_EXERCISE = {"sinusoidal_encoding": PE_WRONG, "rope": ROPE_WRONG,
                     "rotary_attention": ROTARY_WRONG, "rope_backward": BACKWARD_WRONG}
RIGHT_BY_EXERCISE = {"sinusoidal_encoding": PE_RIGHT, "rope": ROPE_RIGHT,
                     "rotary_attention": ROTARY_RIGHT, "rope_backward": BACKWARD_RIGHT}


def test_the_lesson_is_registered_with_its_exercises_in_order():
    assert [e.name for e in LESSONS[lesson09.LESSON]] == ["sinusoidal_encoding", "rope",
                                                           "rotary_attention", "rope_backward"]


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_rope_cases_include_positions_that_are_not_0_to_n(hidden):
    # Only such a case tells "positions ignored" from the right answer.
    cases = EXERCISES["rope"].cases(hidden)
    assert any(list(np.asarray(c.args[1])) != list(range(c.args[0].shape[-2])) for c in cases)


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_every_rope_case_has_even_d(hidden):
    assert all(c.args[0].shape[-1] % 2 == 0 for c in EXERCISES["rope"].cases(hidden))


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_the_first_sinusoidal_case_has_at_least_two_pairs(hidden):
    # With one pair (d_model = 2) the interleaved and split-halves layouts are the same.
    assert EXERCISES["sinusoidal_encoding"].cases(hidden)[0].args[1] >= 4


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_rotary_attention_cases_include_positions_with_gaps(hidden):
    # Only gaps tell "rows numbered 0..n-1" from the given positions: RoPE sees offsets only.
    cases = EXERCISES["rotary_attention"].cases(hidden)
    assert any(len(set(np.diff(np.asarray(c.args[3])))) > 1 for c in cases)


@pytest.mark.parametrize("exercise", ["rope", "rotary_attention", "rope_backward"])
@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_positions_come_as_a_list_a_tuple_and_negative(exercise, hidden):
    index = 3 if exercise == "rotary_attention" else 1
    given = [c.args[index] for c in EXERCISES[exercise].cases(hidden)]
    assert any(isinstance(p, list) for p in given) and any(isinstance(p, tuple) for p in given)
    assert any(min(p) < 0 for p in given if len(p))


@pytest.mark.parametrize("exercise", ["rope", "rotary_attention", "rope_backward"])
def test_hidden_cases_have_a_longer_sequence_than_any_visible_one(exercise):
    rows = lambda hidden: max(c.args[0].shape[-2] for c in EXERCISES[exercise].cases(hidden))
    assert rows(True) > rows(False)


def test_rotary_attention_has_a_fully_masked_row_case():
    masks = [c.kwargs["mask"] for c in EXERCISES["rotary_attention"].cases() if "mask" in c.kwargs]
    assert any((~np.asarray(m)).all(axis=-1).any() for m in masks)


def rope_float32(x, positions, base=10000.0):
    return rope_complex(x, positions, base).astype(np.float32)


@pytest.mark.parametrize("seed", range(50))
def test_a_float32_rope_gets_the_same_dtype_verdict_on_every_grading_seed(seed):
    # One verdict per function (the float32 policy): a float32 rope is refused for its dtype
    # on every draw, and loses one case, whatever the number of cases that show it.
    report = evaluate(EXERCISES["rope"], rope_float32, EXERCISES["rope"].cases(True, seed=seed))
    assert report.passed == report.total - 1 and len(report.failures) == 1
    assert all("float32" in failure for failure in report.failures)
