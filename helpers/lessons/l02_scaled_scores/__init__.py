"""Lesson 02 (``solutions/02_scaled_scores.ipynb``): why the scores are divided by sqrt(d_k).

- :mod:`.figures` -- the lesson's figures (measurements against d_k, the saturation panels)
  and its d_k slider.
"""
