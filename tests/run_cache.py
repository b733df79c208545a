"""Training computed once per test run: the lessons' training entry points, wrapped by the tests.

``make test`` runs every lesson twice: the student notebook and the solution. Lessons 08-10
train the same models in both, with the same helpers, arguments and seeds, and the unit
tests of those models train them a third time. The lessons' code knows nothing of this: the
test run wraps their entry points (:data:`ENTRY_POINTS`) itself, in every process it starts.

- ``conftest.py`` makes one folder for the run (``COURSE_RUN_CACHE``, inherited by the
  pytest-xdist workers and by every notebook kernel they start) and calls :func:`install`
  in each pytest process;
- a notebook kernel (nbval's, nbclient's, grading's, JupyterLab's) runs ``PYTHONSTARTUP``
  at start (IPython does, plain scripts do not): ``conftest.py`` points it at
  ``tests/kernel_startup.py``, which calls :func:`install` there.

:func:`install` wraps an entry-point module's functions in :func:`shared` as the module is
imported (an import hook: the kernel imports ``helpers`` later, from whichever folder its
notebook's setup cell finds). A wrapped function stores its result in the folder the first
time, and every later call with the same arguments, in any process of that run, reads that
result back instead of training again.

Without the variable (a learner's JupyterLab, Colab, the website build, a benchmark) nothing is wrapped and
every call runs. The key of a result is the function, its arguments, the text of every
module of the imported ``helpers`` a learner gets, and the versions of Python and NumPy: a
result is only reused where running the call again would give the very same numbers.
"""

import functools
import hashlib
import importlib.abc
import inspect
import os
import pickle
import platform
import sys
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl                    # POSIX: one kernel trains, the other waits for its result
except ImportError:                 # Windows: both may train; the result is the same
    fcntl = None

ENV = "COURSE_RUN_CACHE"

#: The lessons' training entry points: module -> the functions computed once per test run.
ENTRY_POINTS = {
    "helpers.lessons.l08_training": ("train", "train_with_W_q_start"),
    "helpers.lessons.l09_position": ("train", "train_two_back"),
    "helpers.lessons.l10_two_layers": ("train", "train_word_readout", "train_runs"),
}


def _helpers_folder():
    return Path(sys.modules["helpers"].__file__).resolve().parent


@functools.lru_cache(maxsize=None)
def code_version(helpers=None):
    """A hash of every module in the ``helpers`` folder a learner gets (no instructor tools).

    ``helpers`` defaults to the folder of the imported ``helpers`` package.
    """
    import numpy as np
    from helpers.course import INSTRUCTOR_ONLY

    helpers = Path(helpers) if helpers is not None else _helpers_folder()
    h = hashlib.sha256(f"{platform.python_version()} numpy {np.__version__}".encode())
    for path in sorted(helpers.rglob("*.py")):
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

    wrapper.shared_by_the_test_run = True
    return wrapper


def wrap(module):
    """Wrap ``module``'s entry points (:data:`ENTRY_POINTS`) in :func:`shared`, once."""
    for name in ENTRY_POINTS.get(module.__name__, ()):
        function = getattr(module, name)
        if not getattr(function, "shared_by_the_test_run", False):
            setattr(module, name, shared(function))


class _WrapOnImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An import hook: the entry-point modules load as usual, then :func:`wrap` runs on them."""

    def find_spec(self, name, path, target=None):
        if name not in ENTRY_POINTS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                self._loaders = getattr(self, "_loaders", {})
                self._loaders[name] = spec.loader
                spec.loader = self
                return spec
        return None

    def create_module(self, spec):
        return self._loaders[spec.name].create_module(spec)

    def exec_module(self, module):
        loader = self._loaders.pop(module.__name__)
        module.__spec__.loader = module.__loader__ = loader      # the module's own loader again
        loader.exec_module(module)
        wrap(module)


def install():
    """With ``COURSE_RUN_CACHE`` set: wrap the entry points, loaded now or imported later."""
    if not os.environ.get(ENV):
        return
    for name in ENTRY_POINTS:
        if name in sys.modules:
            wrap(sys.modules[name])
    if not any(isinstance(finder, _WrapOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _WrapOnImport())
