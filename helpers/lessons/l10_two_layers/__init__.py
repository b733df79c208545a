"""Lesson 10 (``solutions/10_two_layers.ipynb``): two layers, a residual stream, and how they compose.

- :mod:`.adjective_corpus`, :mod:`.induction_corpus` -- the two tasks' data;
- :mod:`.model`     -- the stack (residual connections, a pointer readout), its training
  (lesson 08's loop), ablation, and lesson 08's model on this corpus;
- :mod:`.head_view` -- where a word looks, in every layer and head of a trained model;
- :mod:`.plots`     -- the lesson's figure of routes over seeds.

Entry points: ``train(task, *, num_layers=1, ...)``, ``evaluate(result, params=None)``,
``ablate(result, layer, at)`` and ``train_word_readout(task, ...)``.
"""

from ... import run_cache
from ...threads import on_one_thread
from . import model
from .model import ablate, evaluate

# tests only: each computed once per test run (helpers/run_cache.py)
train = run_cache.shared(on_one_thread(model.train))
train_word_readout = run_cache.shared(on_one_thread(model.train_word_readout))

__all__ = ["ablate", "evaluate", "train", "train_word_readout"]
