"""Lesson 03 (``solutions/03_softmax_and_attention.ipynb``): softmax, and attention as a weighted average.

- :mod:`.figures` -- the lesson's figures (a row of scores beside its softmax, one blend of
  values) and its "the cat sat" sliders.
"""
