"""Lesson 07 (``solutions/07_backward.ipynb``): gradients through attention by hand.

- :mod:`.plots` -- the lesson's figures (finite-difference errors, Jacobians, gradient sizes).
"""
