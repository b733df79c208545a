"""Lesson 01 (``solutions/01_qkv_projections.ipynb``): queries, keys and values as projections.

- :mod:`.figures` -- the lesson's one-call figure (a query's scores as bars).
"""
