"""Setup for the whole test run (tests/, notebooks/, solutions/); tests/conftest.py adds the unit tests' own.

`make test` runs pytest on every core (pytest-xdist, ``-n auto --dist loadscope`` in
pyproject.toml): each test file -- a test module, or one notebook with all its cells -- and
each student lesson of tests/test_notebooks_run.py runs whole on one worker. `make test`
leaves out the INTEGRATION modules below (browser, website, nbgrader, Otter: `make
test-integration`). Three things make the run fast:

- one BLAS thread per process. Each worker, and each kernel it starts, already has a core;
  a second BLAS thread per process only fights the other workers for it (lesson 08's
  d_model = 128 runs took five times longer so on a busy 2-core machine). Set
  OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) yourself to override.
- training computed once per run (tests/run_cache.py). The student notebooks, the
  solutions of lessons 08-10 and the unit tests of their models train the same models;
  every process of the run (pytest's workers, and each notebook kernel they start) gets
  one shared folder (COURSE_RUN_CACHE), so the first to train a model stores it and the
  others read it. The lessons' entry points are wrapped here, in each pytest process, and
  in each kernel by tests/kernel_startup.py (PYTHONSTARTUP, which IPython runs at start).
- the longest first, so that no worker is left with a long file at the end: modules
  marked ``slow`` (each runs many notebooks), then the solution notebooks, later lessons
  first (they run longer), then the student lessons (their training is stored by then),
  then the unit-test modules, most tests first.
  Lessons are found, never listed: a new lesson's notebooks take their place by name.
"""

import os
import shutil
import sys
import tempfile

# jsonschema, under nbformat, loads rfc3987_syntax when it is installed (JupyterLab brings
# it), and that compiles a URI grammar at import: 1 s of CPU for a format check nbformat
# never asks for. Blocked here, before nbval (and so nbformat) loads: pyproject.toml's
# `-p no:nbval` keeps pytest from loading it earlier, and pytest_plugins loads it now.
sys.modules.setdefault("rfc3987_syntax", None)
pytest_plugins = ("nbval.plugin",)

import pytest  # noqa: E402

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")     # before numpy loads; kernels inherit it

import importlib.util  # noqa: E402
from pathlib import Path  # noqa: E402

# tests/run_cache.py, as the module ``run_cache`` (the name tests/ modules import it by).
_spec = importlib.util.spec_from_file_location("run_cache", Path(__file__).parent / "tests" / "run_cache.py")
run_cache = sys.modules.setdefault("run_cache", importlib.util.module_from_spec(_spec))
if not hasattr(run_cache, "install"):
    _spec.loader.exec_module(run_cache)
RUN_CACHE_ENV = run_cache.ENV

# The run's shared training folder: made by the process that starts the run, inherited by
# the pytest-xdist workers and every kernel they start, removed at the end. One given
# beforehand is used and kept (.ci/run gives one to make test and make test-integration).
_MADE_HERE = RUN_CACHE_ENV not in os.environ
if _MADE_HERE:
    os.environ[RUN_CACHE_ENV] = tempfile.mkdtemp(prefix="course-run-cache-")
RUN_CACHE = os.environ[RUN_CACHE_ENV]
# Every notebook kernel of the run wraps the entry points too (IPython runs PYTHONSTARTUP).
os.environ["PYTHONSTARTUP"] = str(Path(__file__).parent / "tests" / "kernel_startup.py")
run_cache.install()


_MPLBACKEND = os.environ.get("MPLBACKEND")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """nbval's kernels (started with a notebook's first cell) draw figures off-screen: nbval
    compares no output, and rendering PNGs nobody reads was up to a quarter of a lesson's run.
    (The student notebooks' own run keeps the inline figures.)
    """
    if str(item.fspath).endswith(".ipynb"):
        os.environ["MPLBACKEND"] = _MPLBACKEND or "agg"
    elif _MPLBACKEND is None:
        os.environ.pop("MPLBACKEND", None)


def pytest_unconfigure(config):
    if _MADE_HERE:
        shutil.rmtree(RUN_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def notebook_kernel_env():
    """The environment of a notebook kernel a test starts itself: with the shared training."""
    return {**os.environ, RUN_CACHE_ENV: RUN_CACHE}


def _file_of(item):
    return item.nodeid.split("::", 1)[0]


#: What needs a browser, a website build, nbgrader or Otter: `make test-integration` runs it
#: (`pytest -m integration`); `make test` leaves it out (`-m "not integration"`).
INTEGRATION = ("tests/test_browser.py", "tests/test_book.py", "tests/test_nbgrader.py", "tests/test_otter.py")


def _group_of(item):
    """What one worker runs whole (``--dist loadscope``): a file, or a class of tests in it.

    tests/test_notebooks_run.py has a class per student lesson: each its own unit of work.
    """
    cls = getattr(item, "cls", None)
    return f"{_file_of(item)}::{cls.__name__}" if cls is not None else _file_of(item)


@pytest.hookimpl(tryfirst=True)        # before pytest's own -m selection reads the markers
def pytest_collection_modifyitems(items):
    for item in items:
        if _file_of(item) in INTEGRATION:
            item.add_marker(pytest.mark.integration)
    _longest_first(items)


def _longest_first(items):
    groups = {}
    for item in items:
        entry = groups.setdefault(_group_of(item), {"slow": False, "count": 0})
        entry["slow"] |= bool(item.get_closest_marker("slow"))
        entry["count"] += 1

    def rank(group):
        entry = groups[group]
        lesson = tuple(-ord(c) for c in group.rsplit("/", 1)[-1])     # 11 before 10 ...
        if entry["slow"]:
            return (0, -entry["count"], group)
        if group.endswith(".ipynb"):                   # nbval: solutions/ (and notebooks/, asked for)
            return (1, lesson, group)
        if group.startswith("tests/test_notebooks_run.py::"):   # a student lesson, after its solution
            return (2, lesson, group)
        return (3, -entry["count"], group)

    order = {group: i for i, group in enumerate(sorted(groups, key=rank))}
    items.sort(key=lambda item: order[_group_of(item)])     # stable: cells keep their order
