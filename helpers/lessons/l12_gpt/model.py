"""Lesson 12's model: a small GPT, read top to bottom like nanoGPT's ``model.py``.

One config, a list of blocks. For token ids ``(B, T)``::

    x = tok[ids]                                                    (B, T, d)
    for each block:
        a = LN(x; ln1)
        x = x + attention(a)     lesson 04's heads, lesson 09's rope on q and k (positions 0..T-1),
                                 lesson 03's causal mask, scaled by 1/sqrt(d_head), merged, @ W_o
        x = x + gelu(LN(x; ln2) @ W_1 + b_1) @ W_2 + b_2             GELU's tanh form (GPT-2's)
    logits = LN(x; lnf) @ W_out                                     (B, T, V)

The loss is the mean cross-entropy of the next character. The backward pass goes through the
same steps in reverse, each with the course's own backward function: lesson 07's
``attention_backward``, lesson 09's ``rope_backward``, and this lesson's
``layer_norm_backward`` and ``mlp_backward`` (``parts`` replaces them with a learner's).
A training step keeps what the forward pass computed (``cache``) for the backward pass.
"""

import numpy as np

from ... import reference
from ...reference.gpt import GELU_C, gelu

EPS = 1e-5                  # LayerNorm's epsilon


def make_config(vocab, *, d_model=64, num_heads=4, num_layers=2, d_ff=None, context=64,
                base=10000.0, seed=0, steps=0, batch_size=16, dtype="float32"):
    """Everything that defines a model and its training run, as a plain dict."""
    if d_model % num_heads:
        raise ValueError(f"make_config: d_model={d_model} is not divisible by num_heads={num_heads}")
    if (d_model // num_heads) % 2:
        raise ValueError(f"make_config: d_head={d_model // num_heads} must be even (RoPE rotates pairs)")
    return {"vocab": str(vocab), "d_model": int(d_model), "num_heads": int(num_heads),
            "num_layers": int(num_layers), "d_ff": int(4 * d_model if d_ff is None else d_ff),
            "context": int(context), "base": float(base), "seed": int(seed), "steps": int(steps),
            "batch_size": int(batch_size), "dtype": str(np.dtype(dtype))}


def init_params(config, rng):
    """GPT-2's initialisation: normal(0, 0.02) matrices and embeddings, the two matrices that
    write into the residual stream (``W_o``, ``W_2``) scaled by ``1/sqrt(2 * num_layers)``;
    LayerNorm gains 1, biases 0."""
    V, d, d_ff, L = len(config["vocab"]), config["d_model"], config["d_ff"], config["num_layers"]
    dtype = np.dtype(config["dtype"])

    def normal(*shape, std=0.02):
        return (std * rng.standard_normal(shape)).astype(dtype)

    def block():
        return {"ln1_g": np.ones(d, dtype), "ln1_b": np.zeros(d, dtype),
                "W_q": normal(d, d), "W_k": normal(d, d), "W_v": normal(d, d),
                "W_o": normal(d, d, std=0.02 / np.sqrt(2 * L)),
                "ln2_g": np.ones(d, dtype), "ln2_b": np.zeros(d, dtype),
                "W_1": normal(d, d_ff), "b_1": np.zeros(d_ff, dtype),
                "W_2": normal(d_ff, d, std=0.02 / np.sqrt(2 * L)), "b_2": np.zeros(d, dtype)}

    return {"tok": normal(V, d), "blocks": [block() for _ in range(L)],
            "lnf_g": np.ones(d, dtype), "lnf_b": np.zeros(d, dtype), "W_out": normal(d, V)}


def count_parameters(params):
    """How many numbers the model has."""
    blocks = sum(a.size for block in params["blocks"] for a in block.values())
    return int(blocks + sum(a.size for key, a in params.items() if key != "blocks"))


# ------------------------------------------------------------------- the forward pass
def layer_norm(x, gamma, beta):
    """LayerNorm over the last axis: ``gamma * (x - mean) / sqrt(var + eps) + beta`` (var without Bessel)."""
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + EPS) * gamma + beta


def attention(a, block, config, mask=None, positions=None, keep=None):
    """Multi-head causal self-attention with RoPE on ``a (B, T, d)``: ``(out (B, T, d), weights)``.

    Lesson 04's heads (head i = columns ``i*d_head:(i+1)*d_head``), lesson 09's ``rope`` on every
    head's q and k, lesson 03's causal mask (or ``mask``), heads merged, then ``@ W_o``.
    ``keep`` (num_heads,), optional, multiplies each head's output (0: the head ablated).
    """
    h, T = config["num_heads"], a.shape[-2]
    positions = np.arange(T) if positions is None else positions
    mask = reference.causal_mask(T) if mask is None else mask
    q, k, v = (reference.split_heads(a @ block[name], h) for name in ("W_q", "W_k", "W_v"))  # (B, h, T, dh)
    q, k = reference.rope(q, positions, config["base"]), reference.rope(k, positions, config["base"])
    heads, weights = reference.scaled_dot_product_attention(q, k, v, mask)    # (B, h, T, dh), (B, h, T, T)
    if keep is not None:
        heads = heads * np.asarray(keep, dtype=heads.dtype)[:, None, None]
    return reference.merge_heads(heads) @ block["W_o"], weights


def mlp(x, block):
    """GPT-2's MLP: ``gelu(x @ W_1 + b_1) @ W_2 + b_2``."""
    return gelu(x @ block["W_1"] + block["b_1"]) @ block["W_2"] + block["b_2"]


def block_forward(x, block, config, mask=None, positions=None, keep=None):
    """One block: ``x + attention(LN1(x))``, then ``+ mlp(LN2(x))``. Returns ``(x, weights)``."""
    out, weights = attention(layer_norm(x, block["ln1_g"], block["ln1_b"]), block, config, mask, positions,
                             keep)
    x = x + out
    return x + mlp(layer_norm(x, block["ln2_g"], block["ln2_b"]), block), weights


def forward(params, config, ids, return_weights=False, keep=None):
    """The logits of the next character at every position.

    Parameters
    ----------
    params : dict (see the module's docstring; ``params["blocks"]`` a list, one dict per block)
    config : dict (:func:`make_config`)
    ids : int array, shape (B, T) (or (T,)), T <= config["context"]
    return_weights : bool
    keep : array (num_layers, num_heads), optional: multiplies each head's output (0 = ablated)

    Returns
    -------
    logits : ndarray, shape (B, T, V) (or (T, V)); with ``return_weights``, also a list of
    each block's attention weights, (B, num_heads, T, T) each.
    """
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"forward: ids must be whole numbers (token ids), got dtype {ids.dtype}")
    if ids.shape[-1] > config["context"]:
        raise ValueError(f"forward: {ids.shape[-1]} tokens, more than the model's context of "
                         f"{config['context']}")
    x = params["tok"][ids]                                            # (B, T, d)
    maps = []
    for l, block in enumerate(params["blocks"]):
        x, weights = block_forward(x, block, config, keep=None if keep is None else keep[l])
        maps.append(weights)
    logits = layer_norm(x, params["lnf_g"], params["lnf_b"]) @ params["W_out"]
    return (logits, maps) if return_weights else logits


def cross_entropy(logits, targets):
    """Mean cross-entropy (nats) of ``targets (B, T)`` under ``logits (B, T, V)``."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return float(-np.take_along_axis(log_p, targets[..., None], axis=-1).mean())


# ------------------------------------------------------------------- the backward pass
# The reference functions of lesson 12's exercises (``reference.layer_norm_backward``,
# ``reference.mlp_backward``) recompute what they need from their inputs, as exercises do.
# Training runs them thousands of times, so it uses twins that take what the forward pass
# kept instead: the same numbers (a test checks it), less work. ``parts`` puts the exercise
# versions (the reference's, or a learner's) in their place.
PART_NAMES = ("layer_norm_backward", "mlp_backward", "attention_backward")


def _ln(x, gamma, beta):
    """LayerNorm keeping ``(xhat, rstd)`` for :func:`_ln_backward`: ``(y, cache)``."""
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    rstd = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + EPS)
    xhat = centred * rstd
    return xhat * gamma + beta, (x, xhat, rstd)


def _ln_backward(d_out, gamma, cache):
    """``layer_norm_backward`` from the forward pass's ``(x, xhat, rstd)``."""
    _, xhat, rstd = cache
    dxhat = d_out * gamma
    dx = (dxhat - dxhat.mean(axis=-1, keepdims=True)
          - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)) * rstd
    return dx, (_rows(d_out) * _rows(xhat)).sum(axis=0), _rows(d_out).sum(axis=0)


def _mlp(m, block):
    """:func:`mlp`, keeping the pre-activation and its tanh for :func:`_mlp_backward`."""
    h = m @ block["W_1"] + block["b_1"]                                # (B, T, d_ff)
    t = np.tanh(GELU_C * (h + 0.044715 * (h * h * h)))
    act = 0.5 * h * (1.0 + t)                                          # gelu(h)
    return act @ block["W_2"] + block["b_2"], (m, h, t, act)


def _mlp_backward(d_out, block, cache):
    """``mlp_backward`` from the forward pass's ``(m, h, tanh, gelu(h))``."""
    m, h, t, act = cache
    d_act = d_out @ block["W_2"].T
    dh = d_act * (0.5 * (1.0 + t) + 0.5 * h * (1.0 - t * t) * GELU_C * (1.0 + 3 * 0.044715 * (h * h)))
    return {"x": dh @ block["W_1"].T, "W_1": _rows(m).T @ _rows(dh), "b_1": _rows(dh).sum(axis=0),
            "W_2": _rows(act).T @ _rows(d_out), "b_2": _rows(d_out).sum(axis=0)}


def _attention_cached(a, block, config, mask, positions):
    """:func:`attention`, keeping what its backward pass needs."""
    h = config["num_heads"]
    q, k, v = (reference.split_heads(a @ block[name], h) for name in ("W_q", "W_k", "W_v"))
    q, k = reference.rope(q, positions, config["base"]), reference.rope(k, positions, config["base"])
    heads, weights = reference.scaled_dot_product_attention(q, k, v, mask)
    merged = reference.merge_heads(heads)                              # (B, T, d)
    return merged @ block["W_o"], {"a": a, "q": q, "k": k, "v": v, "weights": weights, "merged": merged}


def _rows(x):
    return x.reshape(-1, x.shape[-1])


def _attention_backward(d_out, block, config, cache, positions, attention_backward):
    """Gradients of :func:`attention` for its input ``a`` and its four matrices."""
    h = config["num_heads"]
    grads = {"W_o": _rows(cache["merged"]).T @ _rows(d_out)}
    d_heads = reference.split_heads(d_out @ block["W_o"].T, h)          # (B, h, T, dh)
    dq, dk, dv = attention_backward(cache["q"], cache["k"], cache["v"], cache["weights"], d_heads)
    dq = reference.rope_backward(dq, positions, config["base"])         # the rotation undone
    dk = reference.rope_backward(dk, positions, config["base"])
    da = 0
    for name, d in (("W_q", dq), ("W_k", dk), ("W_v", dv)):
        d = reference.merge_heads(d)                                   # (B, T, d)
        grads[name] = _rows(cache["a"]).T @ _rows(d)
        da = da + d @ block[name].T
    return da, grads


def loss_and_grads(params, config, batch, parts=None):
    """The mean next-character cross-entropy on ``batch`` and its gradient for every parameter.

    Parameters
    ----------
    params : dict
    config : dict
    batch : int array, shape (B, T + 1): inputs ``[:, :-1]``, targets ``[:, 1:]``
    parts : dict, optional
        Backward functions to use instead of the training twins, by name
        (:data:`PART_NAMES`; e.g. ``{"layer_norm_backward": layer_norm_backward}``, a learner's).

    Returns
    -------
    (loss, grads): a float (nats per character) and a dict shaped like ``params``.
    """
    parts = {} if parts is None else parts
    unknown = set(parts) - set(PART_NAMES)
    if unknown:
        raise ValueError(f"loss_and_grads: unknown parts {sorted(unknown)}; the parts are {PART_NAMES}")
    ln_part, mlp_part = parts.get("layer_norm_backward"), parts.get("mlp_backward")

    def ln_backward(d_out, gamma, cache):
        return _ln_backward(d_out, gamma, cache) if ln_part is None else ln_part(d_out, cache[0], gamma)

    def mlp_backward(d_out, block, cache):
        if mlp_part is None:
            return _mlp_backward(d_out, block, cache)
        return dict(mlp_part(d_out, cache[0], block["W_1"], block["b_1"], block["W_2"], block["b_2"]))

    attention_backward = parts.get("attention_backward", reference.attention_backward)
    ids, targets = batch[:, :-1], batch[:, 1:]
    T = ids.shape[1]
    positions, mask = np.arange(T), reference.causal_mask(T)
    # forward, keeping what the backward pass needs
    x = params["tok"][ids]                                             # (B, T, d)
    caches = []
    for block in params["blocks"]:
        a, ln1 = _ln(x, block["ln1_g"], block["ln1_b"])
        out, att = _attention_cached(a, block, config, mask, positions)
        x = x + out
        m, ln2 = _ln(x, block["ln2_g"], block["ln2_b"])
        out, mlp_cache = _mlp(m, block)
        x = x + out
        caches.append((ln1, att, ln2, mlp_cache))
    final, lnf = _ln(x, params["lnf_g"], params["lnf_b"])
    logits = final @ params["W_out"]                                   # (B, T, V)
    # the loss, and its gradient for the logits: (softmax - onehot) / (B T)
    p = reference.softmax(logits)
    picked = np.take_along_axis(p, targets[..., None], axis=-1)
    loss = float(-np.log(picked).mean())
    d_logits = p
    np.put_along_axis(d_logits, targets[..., None], picked - 1, axis=-1)
    d_logits /= targets.size
    # backward, block by block from the last
    grads = {"W_out": _rows(final).T @ _rows(d_logits)}
    dx, grads["lnf_g"], grads["lnf_b"] = ln_backward(d_logits @ params["W_out"].T, params["lnf_g"], lnf)
    block_grads = []
    for block, (ln1, att, ln2, mlp_cache) in reversed(list(zip(params["blocks"], caches))):
        g = mlp_backward(dx, block, mlp_cache)
        d_ln2, g["ln2_g"], g["ln2_b"] = ln_backward(g.pop("x"), block["ln2_g"], ln2)
        dx = dx + d_ln2                                                # the residual's two paths
        da, g_att = _attention_backward(dx, block, config, att, positions, attention_backward)
        d_ln1, g["ln1_g"], g["ln1_b"] = ln_backward(da, block["ln1_g"], ln1)
        dx = dx + d_ln1
        g.update(g_att)
        block_grads.append(g)
    grads["blocks"] = block_grads[::-1]
    one_hot = np.zeros((ids.size, len(params["tok"])), dtype=dx.dtype)
    one_hot[np.arange(ids.size), ids.ravel()] = 1
    grads["tok"] = one_hot.T @ _rows(dx)                               # each character's rows, summed
    return loss, _like(grads, params)


def loss_of_one_array(params, config, batch, owner, key):
    """The loss on ``batch (B, T + 1)`` as a function of one parameter array, the rest held fixed.

    ``owner[key]`` is the array (``owner`` is ``params`` or one of ``params["blocks"]``). The
    returned ``f(value)`` (``value`` shaped like ``owner[key]``) puts ``value`` in its place, takes
    the mean cross-entropy of :func:`forward`, and puts the array back: a float.
    """
    def f(value):
        old, owner[key] = owner[key], value
        try:
            return cross_entropy(forward(params, config, batch[:, :-1]), batch[:, 1:])
        finally:
            owner[key] = old
    return f


def gradient_errors(params, config, batch, numerical_gradient, parts=None, keys=None):
    """:func:`loss_and_grads`'s gradient of every parameter array against central differences.

    Parameters
    ----------
    params, config : the model (a tiny one: ``numerical_gradient`` runs the model twice per number)
    batch : int array, shape (B, T + 1)
    numerical_gradient : callable ``(f, x) -> array shaped like x`` (lesson 07's, or a learner's)
    parts : dict, optional, as for :func:`loss_and_grads` (a learner's backward functions)
    keys : tuple of str, optional: only the arrays of these names (e.g. ``("W_q", "W_k")``)

    Returns
    -------
    dict ``{name: (largest |error|, largest |gradient|)}``, one entry per array, named
    ``"block 1 W_q"`` ... for the blocks' arrays (block by block), then ``tok``, ``lnf_g``,
    ``lnf_b``, ``W_out``.
    """
    _, grads = loss_and_grads(params, config, batch, parts=parts)
    arrays = [(f"block {l + 1} {key}", block, key, grads["blocks"][l][key])
              for l, block in enumerate(params["blocks"]) for key in block]
    arrays += [(key, params, key, grads[key]) for key in ("tok", "lnf_g", "lnf_b", "W_out")]
    return {name: (np.abs(mine - numerical_gradient(loss_of_one_array(params, config, batch, owner, key),
                                                    owner[key])).max(), np.abs(mine).max())
            for name, owner, key, mine in arrays if keys is None or key in keys}


def _like(grads, params):
    """``grads`` in ``params``' dtype (a learner's part may return float64)."""
    dtype = params["tok"].dtype
    out = {k: np.asarray(v, dtype=dtype) for k, v in grads.items() if k != "blocks"}
    out["blocks"] = [{k: np.asarray(v, dtype=dtype) for k, v in g.items()} for g in grads["blocks"]]
    return out


def loss_on(params, config, windows, batch_size=64, keep=None):
    """Mean cross-entropy (nats per character) over ``windows (N, T + 1)``, in batches
    (``keep``: as for :func:`forward`)."""
    total, count = 0.0, 0
    for start in range(0, len(windows), batch_size):
        batch = windows[start:start + batch_size]
        logits = forward(params, config, batch[:, :-1], keep=keep)
        total += cross_entropy(logits, batch[:, 1:]) * batch[:, 1:].size
        count += batch[:, 1:].size
    return total / count
