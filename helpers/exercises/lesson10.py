"""Lesson 10 exercises: ``residual_attention_backward``, ``ablated_stack`` and ``patched_stack``.

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
    sentence, a different token in each of three or four sentences, with more tokens than
    sentences: removing it in layer 2 (layers counted from 0), in every layer, at every
    token, at sentence 0's token in every sentence, at every sentence's tokens in all
    (``keep[:, positions]``), zeroing the whole stream there or the layer's input, masking
    attention *to* the token, forgetting the residual or returning layer 1's weights all
    give other numbers. Then three layers and two heads with two tokens per sentence (where
    using only ``positions[b, 0]`` shows, and where sentence 0 lists one token twice: a
    0/1 vector built with ``np.add.at`` counts it twice; the stream reset to the embeddings
    ``X`` instead of the stream before the layer shows there too, at layer 2), a causal mask
    (a dropped mask shows), the last layer (only the stream changes, not the weights: zeroed
    attention rows returned as the weights show), and a single layer.
patched_stack
    the first case is three layers, one head, layer 2 patched at one token per sentence
    from a source close to each sentence: the own update, a zero, the source's stream, the
    update of layer 2 run on the source's embeddings (skipping layer 1), the two runs
    swapped, source sentence 0 for all, the wrong layer, every layer, every position,
    sentence 0's positions, no residual or the patched layer's weights all give other
    numbers; so do the layer's *input* patched from the source's stream (TransformerLens's
    ``resid_pre``), layers 1 .. ``layer`` all patched, the source run's weights returned, the
    source's update added to the own one, and every sentence patched at all sentences'
    positions (``[:, positions]``). Then two layers and two heads with two tokens, one listed
    twice in sentence 0 (``np.add.at`` shows), a causal mask, the last layer and a single
    layer.

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
    if k >= 2:                  # sentence 0 lists one token twice (np.add.at counts it twice)
        positions[0, 1] = positions[0, 0]
    kwargs = {} if mask is None else {"mask": mask}
    return Case((X, layers, num_heads, layer, positions), kwargs,
                label=f"{label}: X {X.shape}, {num_layers} layer{'s' * (num_layers > 1)}, "
                      f"num_heads={num_heads}, layer={layer}, positions {positions.tolist()}"
                      + ("" if mask is None else ", causal mask"))


def make_stack_cases(rng, hidden):
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        n_causal = size(4, 7)
        # the first case has more tokens than sentences: the positions of all sentences
        # together never cover every token (so keep[:, positions] differs from "everywhere")
        specs = [(size(3, 4), size(5, 7), 2 * size(2, 3), 2, 1, 1, 1, "two layers, layer 1"),
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
           how="update", residual=True, weights_of="last", use_mask=True, count=False):
    """ablated_stack with one thing done wrong, for the mistakes below."""
    B, n = X.shape[:2]
    mask = mask if use_mask else None
    embeddings = X
    if count:                                 # keep = 1 - (times listed), as np.add.at builds it
        keep = np.ones((B, n))
        np.add.at(keep, (np.arange(B)[:, None], positions), -1)
        for number, matrices in enumerate(layers, start=1):
            out, weights = reference.multi_head_attention(X, *matrices, num_heads, mask)
            X = X + (out * keep[..., None] if number == layer else out)
        return X, weights
    chosen = np.zeros((B, n), dtype=bool)
    picked = positions if where == "given" else np.broadcast_to(positions[0], positions.shape)
    if where == "first column":                                   # positions[b, 0] only
        picked = positions[:, :1]
    chosen[np.arange(B)[:, None], picked] = True
    if where == "all sentences'":                                 # keep[:, positions] = 0
        chosen[:, np.unique(positions)] = True
    if where == "everywhere":
        chosen[:] = True
    targets = {"right": [layer], "from 0": [layer + 1], "every": range(1, len(layers) + 1),
               "none": []}[which]
    kept = None
    for number, matrices in enumerate(layers, start=1):
        if number in targets and how == "input":                  # the layer's input zeroed there
            X = np.where(chosen[..., None], 0.0, X)
        hide = chosen if (number in targets and how == "keys") else None
        out, weights = _attend(X, matrices, num_heads, mask, hide)
        if number in targets and how in ("update", "rows"):
            out = np.where(chosen[..., None], 0.0, out)
            if how == "rows":                                     # the weights' rows zeroed too
                weights = np.where(chosen[:, None, :, None], 0.0, weights)
        if number in targets and how == "embeddings":             # the stream reset to X there
            X = np.where(chosen[..., None], embeddings, X + out)
            kept = weights if number == layer else kept
            continue
        X = X + out if residual else out
        if number in targets and how == "stream":
            X = np.where(chosen[..., None], 0.0, X)
        if number == layer:
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
    _stack_mistake("every sentence lost the update at *all* sentences' positions (as `keep[:, positions]` "
                   "does): sentence b's are positions[b] only, so index the rows too.",
                   where="all sentences'"),
    _stack_mistake("the mask was ignored: pass it on to every layer's attention (each layer uses "
                   "the same mask).", use_mask=False),
    _stack_mistake("the layer's *input* was zeroed at those positions: the layer runs on the stream as "
                   "it is; only what it adds there (its output at those positions) is removed.",
                   how="input"),
    _stack_mistake("only the first position of each sentence was used: positions[b] may hold several "
                   "tokens (positions is (B, k)); remove the update at all k of them.",
                   where="first column"),
    _stack_mistake("the residual connection is missing: each layer *adds* its output to its "
                   "input, X = X + out (not X = out).", residual=False),
    _stack_mistake("the weights returned are the ablated layer's: return the *last* layer's "
                   "weights (where the pointer reads).", weights_of="ablated"),
    _stack_mistake("the attention weights' rows at those positions were zeroed, and those weights "
                   "returned: the ablation removes what the layer *adds* there; the layer still "
                   "looks where it looks, so its weights stay as they are.", how="rows"),
    _stack_mistake("at those positions the stream was reset to the embeddings X: removing layer "
                   "`layer`'s update leaves the stream as it was *before that layer*, with the "
                   "earlier layers' updates in it (X + 0 with the stream as it is, not X_0).",
                   how="embeddings"),
    _stack_mistake("a token listed twice in positions[b] lost its update twice (a 0/1 vector built "
                   "by adding, as np.add.at does, counts each listing): at a token the update is "
                   "either kept or removed; set the 0, don't subtract.", count=True),
]


# ------------------------------------------------------------------ patched_stack
def _patch_case(rng, B, n, d_model, num_layers, num_heads, layer, k, label, mask=None):
    case = _stack_case(rng, B, n, d_model, num_layers, num_heads, layer, k, label, mask)
    X, layers, num_heads, layer, positions = case.args
    X_source = X + rng.standard_normal(X.shape)             # another sentence, close to each
    return Case((X, X_source, layers, num_heads, layer, positions), case.kwargs,
                label=case.label.replace(f"X {X.shape}", f"X and X_source {X.shape}"))


def make_patch_cases(rng, hidden):
    if hidden:   # the grader's sizes, drawn afresh for each grading run
        size = sizer(rng)
        n_causal = size(4, 7)
        # more tokens than sentences: the positions of all sentences together never cover
        # every token (so patching at all sentences' positions differs from "everywhere")
        specs = [(size(3, 4), size(5, 7), 2 * size(2, 3), 3, 1, 2, 1, "three layers, layer 2"),
                 (size(2, 3), size(5, 7), 2 * size(2, 3), 2, 2, 1, 2, "two layers, layer 1"),
                 (2, n_causal, 4, 2, 1, 2, 2, "a causal mask", reference.causal_mask(n_causal)),
                 (size(2, 3), size(4, 6), 6, 2, 3, 2, 1, "the last layer"),
                 (2, size(3, 5), 4, 1, 1, 1, 1, "a single layer")]
    else:
        specs = [(3, 5, 4, 3, 1, 2, 1, "three layers, layer 2"),
                 (2, 6, 6, 2, 2, 1, 2, "two layers, layer 1"),
                 (2, 5, 4, 2, 1, 2, 2, "a causal mask", reference.causal_mask(5)),
                 (2, 4, 4, 2, 2, 2, 1, "the last layer"),
                 (2, 4, 4, 1, 1, 1, 1, "a single layer")]
    return [_patch_case(rng, *spec) for spec in specs]


def _patched(X, X_source, layers, num_heads, layer, positions, mask=None, *, source="run",
             what="update", which="right", where="given", residual=True, weights_of="last",
             use_mask=True):
    """patched_stack with one thing done wrong, for the mistakes below."""
    mask = mask if use_mask else None
    B, n = X.shape[:2]
    chosen = np.zeros((B, n), dtype=bool)
    picked = positions if where == "given" else np.broadcast_to(positions[0], positions.shape)
    chosen[np.arange(B)[:, None], picked] = True
    if where == "everywhere":
        chosen[:] = True
    if where == "all sentences'":                                 # [:, positions] = True
        chosen[:, np.unique(positions)] = True
    times = np.zeros((B, n))                                      # np.add.at's count of listings
    np.add.at(times, (np.arange(B)[:, None], positions), 1)
    targets = {"right": [layer], "from 0": [layer + 1], "every": range(1, len(layers) + 1),
               "up to": range(1, layer + 1)}[which]
    run, lend = (X, X_source) if source != "swapped" else (X_source, X)
    if source == "sentence 0":
        lend = np.broadcast_to(X_source[:1], X_source.shape)
    # the source run: every layer's update and stream
    updates, streams, S = {}, {}, lend
    for number, matrices in enumerate(layers, start=1):
        inp = lend if source == "embeddings" else S              # "embeddings": this layer on X_source
        updates[number] = reference.multi_head_attention(inp, *matrices, num_heads, mask)[0]
        S = S + updates[number] if residual else updates[number]
        streams[number] = S
    kept = None
    for number, matrices in enumerate(layers, start=1):
        if number in targets and what == "input":                # the stream before the layer
            before = streams.get(number - 1, lend)
            run = np.where(chosen[..., None], before, run)
        out, weights = reference.multi_head_attention(run, *matrices, num_heads, mask)
        if number in targets and what == "counted":
            out = out + times[..., None] * (updates[number] - out)
        elif number in targets and what == "added":
            out = out + np.where(chosen[..., None], updates[number], 0.0)
        elif number in targets and what not in ("stream", "input"):
            given = {"update": updates.get(number, 0.0), "zero": 0.0, "own": out}[what]
            out = np.where(chosen[..., None], given, out)
        run = run + out if residual else out
        if number in targets and what == "stream":
            run = np.where(chosen[..., None], streams[number], run)
        if number == layer:
            kept = weights
    if weights_of == "source":                                   # the source run's last layer
        weights = reference.multi_head_attention(streams.get(len(layers) - 1, lend), *layers[-1],
                                                 num_heads, mask)[1]
    return run, (kept if weights_of == "patched" else weights)


def _patch_mistake(message, **switches):
    return Mistake(message, lambda *a, mask=None: _patched(*a, mask, **switches))


PATCH_MISTAKES = [
    _patch_mistake("nothing was patched: the result is the plain run's. At the given positions, "
                   "layer `layer` must add the *source* run's update, not its own.", what="own"),
    _patch_mistake("the update was removed (set to 0), as in ablated_stack: patching *replaces* it "
                   "with the source run's update at those positions.", what="zero"),
    _patch_mistake("the source's whole stream was copied in at those positions: take only layer "
                   "`layer`'s *update* from the source run (what that layer adds); the stream "
                   "keeps what this run had before the layer.", what="stream"),
    _patch_mistake("the source's update was computed by running layer `layer` on X_source itself: "
                   "in the source run, layer `layer` sees the stream after the layers before it "
                   "(run the source through layers 1 .. layer).", source="embeddings"),
    _patch_mistake("the two runs are swapped: X is the run whose output is returned; X_source only "
                   "lends layer `layer`'s update.", source="swapped"),
    _patch_mistake("every sentence was patched from source sentence 0: sentence b takes its update "
                   "from source sentence b.", source="sentence 0"),
    _patch_mistake("the wrong layer was patched (one layer too late): layers are counted from 1, "
                   "so layer=1 is the first layer, layers[0].", which="from 0"),
    _patch_mistake("every layer was patched: patch layer `layer` only; the other layers add their "
                   "own updates.", which="every"),
    _patch_mistake("the update was patched at every position: patch it only at positions[b] in "
                   "sentence b.", where="everywhere"),
    _patch_mistake("every sentence used sentence 0's positions: sentence b's are positions[b].",
                   where="first"),
    _patch_mistake("the residual connection is missing: each layer *adds* its output to its input, "
                   "X = X + out (not X = out), in both runs.", residual=False),
    _patch_mistake("the weights returned are the patched layer's: return the *last* layer's weights "
                   "(where the pointer reads).", weights_of="patched"),
    _patch_mistake("the mask was ignored: pass it on to every layer's attention, in both runs.",
                   use_mask=False),
    _patch_mistake("the layer's *input* was patched (the source's stream before layer `layer` copied "
                   "in at those positions, TransformerLens's resid_pre): that changes what the layer "
                   "sees there, and so every token that reads them. Patch what the layer *adds* at "
                   "those tokens (its update, as attn_out), and leave its input alone.", what="input"),
    _patch_mistake("layers 1 to `layer` were all patched: patch layer `layer` only; the layers "
                   "before it add their own updates.", which="up to"),
    _patch_mistake("the weights returned are the source run's: return the last layer's weights of "
                   "the patched run on X.", weights_of="source"),
    _patch_mistake("the source's update was added on top of this run's own: patching *replaces* the "
                   "layer's update at those positions.", what="added"),
    _patch_mistake("every sentence was patched at *all* sentences' positions (as `[:, positions]` "
                   "does, TransformerLens's habit with one position for every prompt): sentence b's "
                   "are positions[b] only, so index the rows too.", where="all sentences'"),
    _patch_mistake("a token listed twice in positions[b] was patched twice (a 0/1 weight built by "
                   "adding, as np.add.at does, gives 2 * source - own there): a token is patched or "
                   "not; set it, don't add.", what="counted"),
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
    Exercise(
        name="patched_stack",
        lesson=LESSON,
        reference=reference.patched_stack,
        make_cases=make_patch_cases,
        mistakes=PATCH_MISTAKES,
        outputs=("X_out", "weights"),
        rtol=1e-6,
        atol=1e-10,
    ),
]
