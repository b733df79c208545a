"""Lesson 04 (``solutions/04_multi_head.ipynb``): several heads side by side.

- :mod:`.figures` -- which columns go to which head, and the head-count slider.
"""
