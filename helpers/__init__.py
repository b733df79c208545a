"""Helpers shared by the Self-Attention & Multi-Head lessons (CONTRIBUTING.md has the layout).

- what a check does: :mod:`helpers.checks` (the check cell's ``check``), :mod:`helpers.checking`
  (its machinery), :mod:`helpers.exercises` (each lesson's cases and known mistakes);
- :mod:`helpers.reference`: the answer to every exercise, with its input checks in
  :mod:`helpers.validation`;
- the toolbox, what two lessons or more use: :mod:`helpers.data`, :mod:`helpers.plots`,
  :mod:`helpers.widgets`, :mod:`helpers.measure`, :mod:`helpers.threads`, :mod:`helpers.predictions`,
  :mod:`helpers.course`;
- :mod:`helpers.lessons`: each lesson's own lab code (``lessons/lNN_topic/``);
- :mod:`helpers.instructor` and :mod:`helpers.grade`: for instructors only (student notebooks, grading);
"""

__version__ = "0.1.0"
