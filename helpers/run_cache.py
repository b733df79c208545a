"""Training computed once per test run (plumbing for the course's own tests; learners never use it).

``make test`` runs every lesson twice: the student notebook and the solution. Lessons 08-10
train the same models in both, with the same helpers, arguments and seeds, and the unit
tests of those models train them a third time. When the environment variable
``COURSE_RUN_CACHE`` names a folder (the test run sets it for every process and kernel it
starts, see ``conftest.py``), a function decorated with :func:`shared` stores its result
there the first time, and every later call with the same arguments, in any process of that
run, reads that result back instead of training again.

Without the variable (JupyterLab, Colab, the website) the function always runs. The key
of a result is the function, its arguments, the text of every helpers
module and the versions of Python and NumPy: a result is only reused where running the
call again would give the very same numbers.
"""

import functools
import hashlib
import inspect
import os
import pickle
import platform
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .course import INSTRUCTOR_ONLY

try:
    import fcntl                    # POSIX: one kernel trains, the other waits for its result
except ImportError:                 # Windows: both may train; the result is the same
    fcntl = None

ENV = "COURSE_RUN_CACHE"
HELPERS = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=None)
def code_version(helpers=HELPERS):
    """A hash of every module in the ``helpers`` folder a learner gets (no instructor tools)."""
    h = hashlib.sha256(f"{platform.python_version()} numpy {np.__version__}".encode())
    for path in sorted(Path(helpers).rglob("*.py")):
        relative = path.relative_to(helpers)
        if relative.parts[0] not in INSTRUCTOR_ONLY:
            h.update(relative.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def key(function, args, kwargs):
    """The file name of one call's result (defaults filled in: ``seed=0`` or not, one key)."""
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    call = repr((function.__module__, function.__qualname__, sorted(bound.arguments.items())))
    return hashlib.sha256((code_version() + call).encode()).hexdigest()[:32]


@contextmanager
def _locked(path):
    with open(path, "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def shared(function):
    """Decorator: with ``COURSE_RUN_CACHE`` set, compute each distinct call once per test run."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        folder = os.environ.get(ENV)
        if not folder or not Path(folder).is_dir():
            return function(*args, **kwargs)
        path = Path(folder) / f"{key(function, args, kwargs)}.pickle"
        with _locked(path.with_suffix(".lock")):
            if path.exists():
                return pickle.loads(path.read_bytes())
            result = function(*args, **kwargs)
            partial = path.with_suffix(f".{os.getpid()}.part")
            partial.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(partial, path)           # whole, or not there at all
            return result

    return wrapper

