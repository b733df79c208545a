"""Lesson 06 (``solutions/06_tiled_attention.ipynb``): attention one key/value block at a time, measured.

- :mod:`.tables` -- the measured peaks and CPU times of the naive and the tiled attention, as a table.

The measuring itself is the shared :mod:`helpers.measure` (lessons 05, 06 and 11); the tiled
attention is the learner's ``online_softmax_attention`` (its reference: :mod:`helpers.reference`).
"""

from .tables import peaks_and_times_table

__all__ = ["peaks_and_times_table"]
