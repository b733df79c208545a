"""Lesson 08 (``solutions/08_training.ipynb``): train a one-layer attention model in NumPy.

- :mod:`.corpus`   -- the synthetic sentences (a pronoun and the noun it means);
- :mod:`.model`    -- embeddings, one attention layer, a readout; its loss and gradients;
- :mod:`.training` -- the hyperparameters, AdamW and :func:`fit`, the course's one training loop;
- :mod:`.plots`    -- the lesson's figures.

Entry points: ``train(task, *, num_heads=1, d_model=32, scale=True, steps=None, seed=0)``,
``evaluate(result, params=None)`` (of a ``train`` result) and
``train_with_W_q_start(*, factor, scale, seed, ...)`` (the √d_k section's controls: ``train`` with
another starting ``W_q``, and how saturated the pronoun's row is on the way) (:mod:`.training`).
"""

from ...threads import on_one_thread
from . import training
from .training import AT_STEPS, evaluate, fit

train = on_one_thread(training.train)
train_with_W_q_start = on_one_thread(training.train_with_W_q_start)

__all__ = ["AT_STEPS", "evaluate", "fit", "train", "train_with_W_q_start"]
