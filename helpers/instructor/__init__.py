"""Tools for instructors and maintainers (not used by the lessons, and not released to learners).

- :mod:`helpers.instructor.student` -- generate ``notebooks/`` from ``solutions/``
  (``make student``), and keep the solutions valid nbgrader source notebooks;
- :mod:`helpers.instructor.grading` -- grade submitted notebooks (``python -m helpers.grade``);
- :mod:`helpers.instructor.release` -- write the learners' copy of the course (``make release``).
"""
