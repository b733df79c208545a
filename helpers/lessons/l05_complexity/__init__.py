"""Lesson 05 (``solutions/05_complexity.ipynb``): what attention costs, counted and measured.

- :mod:`.figures` -- power laws on two kinds of axes, the measured times as a table, and
  where two measured curves cross.
"""
