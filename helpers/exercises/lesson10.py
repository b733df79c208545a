"""Lesson 10 exercises: ``residual_attention_backward`` and ``ablated_stack``.

How the cases make each known mistake show, in the order a check meets them:

residual_attention_backward
    the first case has 2 heads, 5 tokens and ``d_model = 8``, with weights of moderate
    size (the softmax is soft, so the layer's own ``dX`` is not small next to ``d_out``):
    a ``dX`` without the residual's ``d_out``, with ``d_out`` alone, with ``2 d_out``,
    with ``d_out @ W_o.T`` or taken at the output ``Y`` instead of the input ``X`` all
    differ from the answer there. Then a causal mask (a function that drops the mask
    shows), one head, and a batch of sentences ``(B, n, d_model)`` (the lesson's use).
ablated_stack
    the first case is two layers, one head, layer 1's update removed at one token per
    sentence, a different token in each of three sentences: removing it in layer 2
    (layers counted from 0), in every layer, at every token, at sentence 0's token in
    every sentence, zeroing the whole stream there, masking attention *to* the token,
    forgetting the residual or returning layer 1's weights all give other numbers.
    Then three layers and two heads with two tokens per sentence, a causal mask, the
    last layer (only the stream changes, not the weights), and a single layer.

Tolerances: ``rtol=1e-6, atol=1e-10``; every order of the same operations agrees to
about 1e-14 here.
"""

import numpy as np

from .. import reference
from ..checking import Case, Exercise, Mistake
from ._cases import sizer

LESSON = "10_two_layers"


def _matrices(rng, d_model, spread=1.5):
    """Four (d_model, d_model) matrices of moderate size: the softmax is soft, not one-hot."""
    return tuple(rng.standard_normal((d_model, d_model)) * spread / np.sqrt(d_model)
                 for _ in range(4))


# ------------------------------------------------------------------ residual_attention_backward
def _residual_case(rng, batch, n, d_model, num_heads, label, mask=None):
    X = rng.standard_normal((*batch, n, d_model))
    d_out = rng.standard_normal(X.shape)
    kwargs = {} if mask is None else {"mask": mask}
    return Case((X, *_matrices(rng, d_model), num_heads, d_out), kwargs,
                label=f"{label}: X {X.shape}, four ({d_model}, {d_model}) matrices, "
                      f"num_heads={num_heads}, d_out {d_out.shape}" + ("" if mask is None else ", mask"))


def make_residual_cases(rng, hidden):
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        heads, n_causal = size(2, 3), size(4, 7)
        specs = [((), size(4, 7), heads * size(2, 4), heads, f"{heads} heads", None),
                 ((), n_causal, 2 * size(2, 3), 2, "2 heads, causal mask", reference.causal_mask(n_causal)),
                 ((), size(2, 5), size(3, 6), 1, "one head", None),
                 ((size(2, 4),), size(3, 6), 4, 2, "a batch of sentences", None)]
    else:
        specs = [((), 5, 8, 2, "2 heads of 4", None),
                 ((), 6, 6, 3, "3 heads, causal mask", reference.causal_mask(6)),
                 ((), 4, 4, 1, "one head", None),
                 ((3,), 5, 4, 2, "a batch of 3 sentences", None)]
    return [_residual_case(rng, *spec) for spec in specs]


def _residual_grads(X, W_q, W_k, W_v, W_o, num_heads, d_out, mask=None, *, residual="d_out",
                    layer=True, at_output=False, use_mask=True):
    """residual_attention_backward with one thing done wrong, for the mistakes below."""
    at = X
    if at_output:                                            # the backward taken at Y, not X
        at = X + reference.multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask)[0]
    grads = reference.multi_head_attention_backward(at, W_q, W_k, W_v, W_o, num_heads, d_out,
                                                    mask if use_mask else None)
    skip = {"d_out": d_out, "none": 0.0, "twice": 2 * d_out, "through W_o": d_out @ W_o.T}[residual]
    grads["X"] = (grads["X"] if layer else 0.0) + skip
    return grads


def _residual_mistake(message, **switches):
    return Mistake(message, lambda *a, mask=None: _residual_grads(*a, mask, **switches))


RESIDUAL_MISTAKES = [
    _residual_mistake("dX is missing the residual's gradient: Y = X + attention(X), so X reaches "
                      "the loss twice, straight through the addition and through the layer. "
                      "Add d_out (the addition's gradient) to the layer's dX.", residual="none"),
    _residual_mistake("dX is only the residual's gradient d_out: X also feeds the attention layer "
                      "(its queries, keys and values), so add the layer's own dX to it.",
                      layer=False),
    _residual_mistake("the residual's gradient was added twice: the addition Y = X + out passes "
                      "d_out to X once (and the layer's gradients come from its own backward).",
                      residual="twice"),
    _residual_mistake("the residual's gradient went through W_o: the addition Y = X + out skips "
                      "the layer, so it passes d_out to X unchanged, with no matrix.",
                      residual="through W_o"),
    _residual_mistake("the layer's backward was taken at its output Y = X + out: it must be taken "
                      "at the layer's input X (the X its queries, keys and values were made from).",
                      at_output=True),
    _residual_mistake("the mask was ignored: pass it on to the layer's backward (a masked weight "
                      "is 0 and passes no gradient).", use_mask=False),
]


# ------------------------------------------------------------------ ablated_stack
def _stack_case(rng, B, n, d_model, num_layers, num_heads, layer, k, label, mask=None):
    X = rng.standard_normal((B, n, d_model))
    layers = [_matrices(rng, d_model) for _ in range(num_layers)]
    positions = np.stack([np.sort(rng.choice(n, k, replace=False)) for _ in range(B)])
    while len({tuple(p) for p in positions}) < B:                 # every sentence its own tokens
        positions = np.stack([np.sort(rng.choice(n, k, replace=False)) for _ in range(B)])
    kwargs = {} if mask is None else {"mask": mask}
    return Case((X, layers, num_heads, layer, positions), kwargs,
                label=f"{label}: X {X.shape}, {num_layers} layer{'s' * (num_layers > 1)}, "
                      f"num_heads={num_heads}, layer={layer}, positions {positions.tolist()}"
                      + ("" if mask is None else ", causal mask"))


def make_stack_cases(rng, hidden):
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        n_causal = size(4, 7)
        specs = [(size(3, 4), size(4, 7), 2 * size(2, 3), 2, 1, 1, 1, "two layers, layer 1"),
                 (size(2, 3), size(5, 7), 2 * size(2, 3), 3, 2, 2, 2, "three layers, layer 2"),
                 (2, n_causal, 4, 2, 1, 1, 2, "a causal mask", reference.causal_mask(n_causal)),
                 (size(2, 3), size(4, 6), 6, 2, 3, 2, 1, "the last layer"),
                 (2, size(3, 5), 4, 1, 1, 1, 1, "a single layer")]
    else:
        specs = [(3, 5, 4, 2, 1, 1, 1, "two layers, layer 1"),
                 (2, 6, 6, 3, 2, 2, 2, "three layers, layer 2"),
                 (2, 5, 4, 2, 1, 1, 2, "a causal mask", reference.causal_mask(5)),
                 (2, 4, 4, 2, 2, 2, 1, "the last layer"),
                 (2, 4, 4, 1, 1, 1, 1, "a single layer")]
    return [_stack_case(rng, *spec) for spec in specs]


def _attend(X, matrices, num_heads, mask, hide=None):
    """Multi-head attention; ``hide`` (B, n) True: those tokens' keys are masked (for a mistake)."""
    if hide is None:
        return reference.multi_head_attention(X, *matrices, num_heads, mask)
    W_q, W_k, W_v, W_o = matrices
    Q, K, V = (reference.split_heads(X @ W, num_heads) for W in (W_q, W_k, W_v))
    allowed = ~hide[:, None, None, :]                         # (B, 1, 1, n)
    if mask is not None:
        allowed = allowed & mask
    S = np.where(allowed, Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), -np.inf)
    weights = reference.softmax(S)
    return reference.merge_heads(weights @ V) @ W_o, weights


def _stack(X, layers, num_heads, layer, positions, mask=None, *, which="right", where="given",
           how="update", residual=True, weights_of="last"):
    """ablated_stack with one thing done wrong, for the mistakes below."""
    B, n = X.shape[:2]
    chosen = np.zeros((B, n), dtype=bool)
    picked = positions if where == "given" else np.broadcast_to(positions[0], positions.shape)
    chosen[np.arange(B)[:, None], picked] = True
    if where == "everywhere":
        chosen[:] = True
    targets = {"right": [layer], "from 0": [layer + 1], "every": range(1, len(layers) + 1),
               "none": []}[which]
    kept = None
    for l, matrices in enumerate(layers, start=1):
        hide = chosen if (l in targets and how == "keys") else None
        out, weights = _attend(X, matrices, num_heads, mask, hide)
        if l in targets and how == "update":
            out = np.where(chosen[..., None], 0.0, out)
        X = X + out if residual else out
        if l in targets and how == "stream":
            X = np.where(chosen[..., None], 0.0, X)
        if l == layer:
            kept = weights
    return X, (kept if weights_of == "ablated" else weights)


def _stack_mistake(message, **switches):
    return Mistake(message, lambda *a, mask=None: _stack(*a, mask, **switches))


STACK_MISTAKES = [
    _stack_mistake("nothing was removed: the result is the plain stack's. At the given positions, "
                   "layer `layer` must add nothing (its update multiplied by 0 there).", which="none"),
    _stack_mistake("the wrong layer's update was removed (one layer too late): layers are counted "
                   "from 1, so layer=1 is the first layer, layers[0].", which="from 0"),
    _stack_mistake("the update was removed in every layer: remove it in layer `layer` only; the "
                   "other layers add their updates everywhere.", which="every"),
    _stack_mistake("the whole residual stream was zeroed at those positions: remove only the "
                   "layer's update there (the stream keeps what it had before the layer: "
                   "X + 0 instead of X + out).", how="stream"),
    _stack_mistake("attention *to* those positions was masked (their keys hidden): the ablation "
                   "removes the update *at* them, what those tokens gathered, and leaves what "
                   "other tokens read from them.", how="keys"),
    _stack_mistake("the update was removed at every position: remove it only at positions[b] "
                   "in sentence b.", where="everywhere"),
    _stack_mistake("every sentence used sentence 0's positions: sentence b's are positions[b].",
                   where="first"),
    _stack_mistake("the residual connection is missing: each layer *adds* its output to its "
                   "input, X = X + out (not X = out).", residual=False),
    _stack_mistake("the weights returned are the ablated layer's: return the *last* layer's "
                   "weights (where the pointer reads).", weights_of="ablated"),
]


EXERCISES = [
    Exercise(
        name="residual_attention_backward",
        lesson=LESSON,
        reference=reference.residual_attention_backward,
        make_cases=make_residual_cases,
        mistakes=RESIDUAL_MISTAKES,
        outputs=("gradients",),
        rtol=1e-6,
        atol=1e-10,
    ),
    Exercise(
        name="ablated_stack",
        lesson=LESSON,
        reference=reference.ablated_stack,
        make_cases=make_stack_cases,
        mistakes=STACK_MISTAKES,
        outputs=("X_out", "weights"),
        rtol=1e-6,
        atol=1e-10,
    ),
]
