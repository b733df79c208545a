"""Grade submitted notebooks: ``python -m helpers.grade [--json FILE] [--csv FILE]
[--timeout SECONDS] [--jobs N] [--seed N] [--run-all] SUBMISSION.ipynb|FOLDER ...``

The work is done in :mod:`helpers.instructor.grading` (read its modules' docstrings
for how a submission is run and scored). Grading runs the submitted code with your
rights: grade untrusted submissions inside a container or a throwaway VM.
"""

import sys

from .instructor.grading.cli import main

if __name__ == "__main__":
    sys.exit(main())
