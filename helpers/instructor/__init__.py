"""Tools for instructors and maintainers (not used by the lessons themselves).

- :mod:`helpers.instructor.student` -- generate ``notebooks/`` from ``solutions/``;
- :mod:`helpers.grade` -- grade submitted notebooks (``python -m helpers.grade``).
"""
