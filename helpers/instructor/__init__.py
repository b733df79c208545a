"""Tools for instructors and maintainers (not used by the lessons, and not released to learners).

- :mod:`helpers.instructor.student` -- generate ``notebooks/`` from ``solutions/``
  (``make student``), and keep the solutions valid nbgrader source notebooks;
- :mod:`helpers.instructor.grading` -- grade submitted notebooks (``python -m helpers.grade``);
- :mod:`helpers.instructor.release` -- write the learners' copy of the course (``make release``).
"""

import sys

# jsonschema, under nbformat, loads rfc3987_syntax when it is installed (JupyterLab brings
# it), and that compiles a URI grammar at import: 1.5 s of CPU for a format check nbformat
# never asks for. Blocked here, jsonschema skips it, for every tool of this package.
sys.modules.setdefault("rfc3987_syntax", None)
