"""Lesson 09 (``solutions/09_position.ipynb``): position, four ways, on lesson 08's model.

- :mod:`.model`    -- the embeddings and RoPE attention of each ``position``, shifted sentences,
  and the entry point ``train(task, position=..., shifts=...)`` (lesson 08's loop);
- :mod:`.two_back` -- a task for sequences longer than any seen in training;
- :mod:`.plots`    -- the lesson's figures.

Entry points: ``train(task, *, position="learned", shifts=None, ...)``, ``evaluate(result, params=None)``
and ``train_two_back(position, ...)``.
"""

from ...threads import on_one_thread
from . import model, two_back
from .model import evaluate, relation_accuracy

train = on_one_thread(model.train)
train_two_back = on_one_thread(two_back.train_two_back)

__all__ = ["evaluate", "relation_accuracy", "train", "train_two_back"]
