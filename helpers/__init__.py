"""Helpers shared by the Self-Attention & Multi-Head lessons (CONTRIBUTING.md has the layout).

- :mod:`helpers.checks` (the check cell's ``check``), :mod:`helpers.checking`, :mod:`helpers.comparing`:
  what a check does; :mod:`helpers.reference`: a reference of every exercise; :mod:`helpers.exercises`:
  each lesson's cases and known mistakes;
- the toolbox: :mod:`helpers.data`, :mod:`helpers.plots`, :mod:`helpers.figures`, :mod:`helpers.widgets`,
  :mod:`helpers.measure`, :mod:`helpers.predictions`, :mod:`helpers.measure_inference`,
  :mod:`helpers.widgets_inference`, :mod:`helpers.course`;
- :mod:`helpers.lessons`: each lesson's own lab code (``lessons/lNN_topic/``);
- :mod:`helpers.instructor` and :mod:`helpers.grade`: for instructors only (student notebooks, grading).
"""

__version__ = "0.1.0"
