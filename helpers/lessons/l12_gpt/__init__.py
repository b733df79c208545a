"""Lesson 12 (``solutions/12_gpt.ipynb``): a small GPT from the course's parts, trained on Shakespeare.

- :mod:`.text`     -- the five plays (``data/``, source and licence in ``data/README.md``), characters
  as tokens, batches, the unigram and bigram baselines;
- :mod:`.model`    -- the model (one config, a list of blocks), its loss and gradients;
- :mod:`.training` -- training with lesson 08's ``fit``, the held-out loss, the checkpoint
  (``python -m helpers.lessons.l12_gpt.training``, what ``make train-gpt`` runs);
- :mod:`.generation` -- sampling text, with and without a KV cache (the same text);
- :mod:`.inside`   -- what the heads do: the head view on a line, measurements and ablations.

Entry points: ``forward(params, config, ids)``, ``load_checkpoint()``, ``corpus()``,
``encode(text, config)``, ``generate(params, config, prompt, steps, *, temperature=1.0,
top_k=None, seed=0, use_cache=True)``.
"""

from .generation import generate
from .model import forward
from .text import corpus, decode, encode
from .training import load_checkpoint

__all__ = ["corpus", "decode", "encode", "forward", "generate", "load_checkpoint"]
