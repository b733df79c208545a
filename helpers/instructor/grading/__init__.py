"""Grade submitted lesson notebooks into a gradebook (``python -m helpers.grade``).

    python -m helpers.grade [--json FILE] [--csv FILE] [--timeout SECONDS] [--jobs N]
                            [--seed N] [--run-all] SUBMISSION.ipynb|FOLDER ...

The modules, by job:

- :mod:`.notebook` -- reading a submission: its lesson, each exercise's cell (the
  one the notebook's check cell checks), the notebook the grader runs;
- :mod:`.kernel` -- what runs inside the grading kernel: each exercise function
  graded on hidden cases right after its exercise cell, watched for calls into
  the course's own answer;
- :mod:`.worker` and :mod:`.runner` -- running submissions: one worker process
  (and its kernel) per submission, ``--jobs`` at a time, killed as process groups
  on a timeout or Ctrl-C;
- :mod:`.forkserver` -- the run's kernel server: it imports ipykernel, jupyter_client,
  numpy and matplotlib once, and forks each submission's worker and fresh kernel from there;
- :mod:`.scoring` -- points, feedback and the gradebook files;
- :mod:`.cli` -- the command line.

Nothing here is imported by the lessons; the kernel imports :mod:`.kernel` only.
"""
