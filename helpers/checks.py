"""Exercise checks for the lessons.

In a lesson, right after an exercise cell::

    project_qkv = check("project_qkv", project_qkv)

- not attempted yet: a short notice, and ``project_qkv`` becomes the reference
  implementation so the rest of the lesson still runs;
- wrong: an error that says what is wrong (never the solution code);
- right: a pass, and the lesson goes on with your own function.
"""

from . import checking
from .exercises import EXERCISES


def check(name, fn):
    """Check the exercise function ``fn`` called ``name``; return the function to use next."""
    if name not in EXERCISES:
        raise ValueError(f"check: no exercise called {name!r}; the exercises are {sorted(EXERCISES)}")
    return checking.check(EXERCISES[name], fn, EXERCISES)
