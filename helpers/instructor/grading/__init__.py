"""Grade submitted lesson notebooks into a gradebook (``python -m helpers.grade``).

    python -m helpers.grade [--json FILE] [--csv FILE] [--timeout SECONDS] [--jobs N]
                            [--seed N] [--run-all] SUBMISSION.ipynb|FOLDER ...

The modules, by job:

- :mod:`.notebook` -- reading a submission: its lesson, each exercise's cell (the
  one the notebook's check cell checks), the notebook the grader runs;
- :mod:`.kernel` -- what runs inside the grading kernel: each exercise function
  graded on hidden cases right after its exercise cell, each case under the checks'
  time limit, watched for calls into the course's own answer;
- :mod:`.runner` -- running submissions: each in a fresh kernel by nbclient (as
  nbgrader's ``Execute`` does), ``--jobs`` at a time, every kernel killed on a
  timeout or Ctrl-C;
- :mod:`.scoring` -- points, feedback and the gradebook files;
- :mod:`.cli` -- the command line.

Nothing here is imported by the lessons; the kernel imports :mod:`.kernel` only.
"""
