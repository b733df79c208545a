"""Helpers shared by the Self-Attention & Multi-Head lessons.

- :mod:`helpers.reference` -- a reference implementation of every exercise;
- :mod:`helpers.checks`    -- the check cell that follows each exercise;
- :mod:`helpers.data`      -- the toy sentences, embeddings and weights;
- :mod:`helpers.plots`     -- labelled heatmaps and other figures;
- :mod:`helpers.widgets`   -- the sliders;
- :mod:`helpers.instructor` -- for instructors only: student-notebook generation, grading.
"""

__version__ = "0.1.0"
