"""Lesson 12: the model writes. One character at a time, with or without lesson 11's KV cache.

Each step turns the last position's logits into probabilities (``next_token_probabilities``:
a temperature and top-k), draws a character from them, appends it and goes on. Two ways to
get the logits, the same numbers (up to rounding) and so, for the same seed, the same text:

- **without a cache**: run the model over the whole text so far, every step;
- **with a cache** (lesson 11): run the prompt once (prefill), keeping every block's keys and
  values; then each new character alone, its query meeting the cached keys. Its key is rotated
  by RoPE at its own position (the number of characters before it) before it is cached.

The model was trained on windows of ``context`` characters. Once the text is longer, each
character attends to itself and the ``context - 1`` before it (lesson 11's sliding window), in
both ways alike, and the cache keeps only the last ``context`` keys and values. While the text
fits in the context this is exactly :func:`~.model.forward`.
"""

import numpy as np

from ... import reference
from ...reference.inference import band
from ...threads import on_one_thread
from . import model, text


def empty_caches(config, dtype=np.float64):
    """One empty cache per block: ``{"K", "V"}`` of shape (num_heads, 0, d_head), and the positions."""
    h, d_head = config["num_heads"], config["d_model"] // config["num_heads"]
    return [{"K": np.zeros((h, 0, d_head), dtype), "V": np.zeros((h, 0, d_head), dtype),
             "positions": np.zeros(0, dtype=np.int64)} for _ in range(config["num_layers"])]


def run(params, config, ids, positions, caches):
    """The logits of ``m`` new tokens at ``positions``, after the tokens held in ``caches``.

    Every block: LayerNorm, then each head's query, key and value; query and key rotated by
    ``rope`` at the tokens' positions; the new keys and values appended to the cached ones;
    each query attends to the keys at most ``context - 1`` positions before it (and not after);
    merge, ``@ W_o``, the residual; the MLP and its residual.

    Parameters
    ----------
    ids : int array (m,)
    positions : int array (m,), the positions of the new tokens
    caches : list (one per block) of dicts {"K", "V": (h, t, d_head), "positions": (t,)}

    Returns
    -------
    logits : ndarray (m, V)
    new_caches : the same list's new version, the last ``context`` keys and values kept
    """
    h, context = config["num_heads"], config["context"]
    x = params["tok"][ids]                                             # (m, d)
    new_caches = []
    for block, cache in zip(params["blocks"], caches):
        a = model.layer_norm(x, block["ln1_g"], block["ln1_b"])
        q, k, v = (reference.split_heads(a @ block[name], h) for name in ("W_q", "W_k", "W_v"))  # (h, m, dh)
        q, k = reference.rope(q, positions, config["base"]), reference.rope(k, positions, config["base"])
        K = np.concatenate([cache["K"], k], axis=1)                    # (h, t + m, dh), keys rotated
        V = np.concatenate([cache["V"], v], axis=1)
        key_positions = np.concatenate([cache["positions"], positions])
        mask = band(positions, key_positions, 0, context - 1)          # (m, t + m): causal, windowed
        heads, _ = reference.scaled_dot_product_attention(q, K, V, mask)
        x = x + reference.merge_heads(heads) @ block["W_o"]
        x = x + model.mlp(model.layer_norm(x, block["ln2_g"], block["ln2_b"]), block)
        new_caches.append({"K": K[:, -context:], "V": V[:, -context:],
                           "positions": key_positions[-context:]})
    return model.layer_norm(x, params["lnf_g"], params["lnf_b"]) @ params["W_out"], new_caches


def logits_without_cache(params, config, ids):
    """The last position's logits, the whole text run again: ``(V,)``."""
    ids = np.asarray(ids)
    return run(params, config, ids, np.arange(len(ids)), empty_caches(config, params["tok"].dtype))[0][-1]


def draw(probabilities, u):
    """The token whose slice of [0, 1) holds ``u``: the first i with ``cumsum(p)[i] > u``."""
    cumulative = np.cumsum(probabilities)
    return int(min(np.searchsorted(cumulative, u * cumulative[-1], side="right"), len(cumulative) - 1))


def _as_float64(params):
    return {k: ([{n: a.astype(np.float64) for n, a in b.items()} for b in v] if k == "blocks"
                else v.astype(np.float64)) for k, v in params.items()}


@on_one_thread            # small matrices: one BLAS thread is fastest, busy machine or not
def generate_ids(params, config, prompt_ids, steps, *, temperature=1.0, top_k=None, seed=0,
                 use_cache=True, probabilities=None):
    """The prompt's ids followed by ``steps`` drawn ones (an int64 array). See :func:`generate`."""
    probabilities = reference.next_token_probabilities if probabilities is None else probabilities
    params = _as_float64(params)             # both ways in float64: their rounding differs by ~1e-15
    rng = np.random.default_rng(seed)
    ids = [int(i) for i in prompt_ids]
    if not ids:
        raise ValueError("generate: the prompt must hold at least one character")
    if use_cache:
        logits, caches = run(params, config, np.array(ids), np.arange(len(ids)), empty_caches(config))
        last = logits[-1]                                              # prefill: the prompt at once
    for _ in range(steps):
        if not use_cache:
            last = logits_without_cache(params, config, ids)           # the whole text again
        token = draw(probabilities(last, temperature=temperature, top_k=top_k), rng.random())
        ids.append(token)
        if use_cache:                                                  # decode: the new token alone
            logits, caches = run(params, config, np.array([token]), np.array([len(ids) - 1]), caches)
            last = logits[-1]
    return np.array(ids, dtype=np.int64)


def generate(params, config, prompt, steps, *, temperature=1.0, top_k=None, seed=0, use_cache=True,
             probabilities=None):
    """The prompt and ``steps`` more characters drawn from the model: a string.

    Parameters
    ----------
    params, config : the model (e.g. ``load_checkpoint()``)
    prompt : str, at least one character of the model's vocabulary
    steps : int, how many characters to add
    temperature : float > 0; top_k : int or None (``next_token_probabilities``)
    seed : int, the random draws: the same seed gives the same text, with or without the cache
    use_cache : bool, lesson 11's KV cache (prefill, then one token at a time) or not
    probabilities : function (logits, temperature=, top_k=) -> probabilities, optional
        e.g. a learner's ``next_token_probabilities`` (default: the reference)
    """
    ids = generate_ids(params, config, text.encode(prompt, config), steps, temperature=temperature,
                       top_k=top_k, seed=seed, use_cache=use_cache, probabilities=probabilities)
    return text.decode(ids, config)
