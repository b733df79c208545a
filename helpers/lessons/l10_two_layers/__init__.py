"""Lesson 10 (``solutions/10_two_layers.ipynb``): two layers, a residual stream, and how they compose.

- :mod:`.adjective_corpus` -- the adjective task's data;
- :mod:`.model`     -- the stack (residual connections, a pointer readout), its training
  (lesson 08's loop), ablation, patching, and lesson 08's model on this corpus;
- :mod:`.induction` -- induction heads: a two-layer model trained by next-token prediction;
- :mod:`.head_view` -- where a word looks, in every layer and head of a trained model;
- :mod:`.plots`     -- the lesson's figures (routes over seeds, induction maps and circuits).

Entry points: ``train(task, *, num_layers=1, ...)``, ``evaluate(result, params=None)``,
``ablate(result, layer, at)``, ``patch(result, layer, at)``, ``train_word_readout(task, ...)``
and ``train_runs(num_layers, seeds)`` (the induction model, five seeds at once).
"""

from ...threads import on_one_thread
from . import induction, model
from .model import ablate, evaluate, patch

train = on_one_thread(model.train)
train_word_readout = on_one_thread(model.train_word_readout)
train_runs = on_one_thread(induction.train_runs)   # the induction model, several seeds

__all__ = ["ablate", "evaluate", "patch", "train", "train_runs", "train_word_readout"]
