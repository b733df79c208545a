"""Running submissions: each in a fresh kernel by nbclient, ``jobs`` at a time.

How one submission is graded (:func:`grade_one`):

1. The notebook is read (never written). Its lesson comes from the notebook
   itself (:func:`~helpers.instructor.grading.notebook.recognise_lesson`).
2. A grader cell is inserted after each exercise cell
   (:func:`~helpers.instructor.grading.notebook.instrument`); it grades the
   function the exercise cell bound on fresh hidden cases, each case under the
   checks' per-case time limit (:mod:`~helpers.instructor.grading.kernel`).
3. nbclient's :class:`~nbclient.NotebookClient` runs that notebook as nbgrader's
   ``Execute`` preprocessor does: a fresh kernel of this Python, in a scratch
   folder, every cell in turn, errors allowed. Each cell may run until the
   notebook's time limit (``timeout_func``: the time left); past it, or when the
   kernel dies, the run stops there. The kernel is then killed at once, with
   anything the notebook started (jupyter_client signals the kernel's process
   group), and the submission keeps what it had earned.
4. The row is scored from what the run left (:mod:`~helpers.instructor.grading.scoring`):
   the grader cells' records, the cells that raised, the cell running at the end.
   The scratch folder is removed.

:func:`grade_many` grades submissions ``jobs`` at a time from a thread pool
(:mod:`concurrent.futures`), each thread running its own notebook client. Ctrl-C
kills every running kernel (:class:`Kernels`) and raises ``KeyboardInterrupt``.
"""

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from . import kernel
from .notebook import exercise_cells, instrument, lessons, nbformat, recognise_lesson, syntax_errors
from .scoring import Run, fill_row, new_row

DEFAULT_TIMEOUT = 120.0
RESULTS_FILE = "grades.jsonl"
COURSE_ROOT = Path(__file__).resolve().parents[3]   # the folder that holds `helpers/`
#: Seconds a new kernel has to answer before the submission counts as not run.
STARTUP_TIMEOUT = 120

# nbclient logs a timeout or a dead kernel as an error: the gradebook says it already.
_QUIET = logging.getLogger(__name__ + ".nbclient")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


class Stopped(Exception):
    """Grading was stopped (Ctrl-C) before or while this submission ran."""


def kernel_env():
    """The grading kernel's environment: this one, and the course's ``helpers`` importable."""
    pythonpath = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        # `helpers` importable in the kernel (and its subprocesses), wherever the submission sits.
        "PYTHONPATH": str(COURSE_ROOT) + (os.pathsep + pythonpath if pythonpath else ""),
        # Figures are built but never rendered to PNG: nobody looks at them here.
        "MPLBACKEND": "agg",
        "PYTHONWARNINGS": "ignore",
    }


class Kernels:
    """The notebook clients running now, so that Ctrl-C can stop every kernel.

    Each client registers itself from its own thread's event loop once its kernel is up
    (:meth:`started`), and asks before each cell whether to go on (:meth:`go_on`).
    :meth:`stop_all` refuses new cells, and kills the kernels already up, through
    jupyter_client, in their own event loops. (A kernel that comes up meanwhile is
    stopped at its first cell.)
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._running = {}          # NotebookClient -> its thread's event loop
        self.stopping = False

    def started(self, client):
        with self._lock:
            self._running[client] = asyncio.get_running_loop()

    def finished(self, client):
        with self._lock:
            self._running.pop(client, None)

    def go_on(self):
        if self.stopping:
            raise Stopped()

    def stop_all(self, seconds=10):
        with self._lock:
            self.stopping = True
            running = list(self._running.items())
        futures = []
        for client, loop in running:
            try:
                futures.append(asyncio.run_coroutine_threadsafe(_kill(client), loop))
            except RuntimeError:    # its loop is closed: that run is over
                pass
        wait(futures, timeout=seconds)


async def _kill(client):
    """Kill a client's kernel now (its whole process group: jupyter_client's way)."""
    manager = client.km
    if manager is not None and manager.has_kernel:
        await manager.signal_kernel(signal.SIGKILL)


def execute(run_nb, workdir, timeout, kernels):
    """Run ``run_nb`` in a fresh kernel in ``workdir`` within ``timeout`` seconds; a :class:`Run`.

    Raises :class:`Stopped` when ``kernels`` is stopping (Ctrl-C).
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    run = Run()
    deadline = time.monotonic() + timeout

    def at(cell, cell_index, **_):
        kernels.go_on()
        run.at = cell_index

    def raised(cell, cell_index, execute_reply, **_):
        content = execute_reply.get("content", {})
        run.errors[cell_index] = f"{content.get('ename')}: {content.get('evalue')}"

    client = NotebookClient(
        run_nb, kernel_name="python3", allow_errors=True, shutdown_kernel="immediate",
        timeout=timeout, timeout_func=lambda cell: max(deadline - time.monotonic(), 0.01),
        startup_timeout=STARTUP_TIMEOUT, resources={"metadata": {"path": str(workdir)}},
        on_notebook_start=lambda notebook: kernels.started(client),
        on_cell_execute=at, on_cell_error=raised, log=_QUIET)
    try:
        # The kernel's own output (warnings at start, a crash's traceback) is not the gradebook's.
        asyncio.run(client.async_execute(env=kernel_env(), stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
    except CellTimeoutError:
        run.problem = "timeout"
    except DeadKernelError:
        run.problem = "died"
    except Stopped:
        raise
    except Exception as exc:   # the kernel did not start, or the protocol failed
        run.problem = f"{type(exc).__name__}: {exc}"
    finally:
        kernels.finished(client)
    if kernels.stopping:
        raise Stopped()
    run.records = kernel.read_records(Path(workdir) / RESULTS_FILE)
    return run


def _read_submission(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nbformat().reads(Path(path).read_bytes().decode("utf-8"), as_version=4)


def grade_one(path, timeout=DEFAULT_TIMEOUT, seed=0, label=None, run_all=False, kernels=None):
    """Grade one submission; return its gradebook row (see :mod:`.scoring`).

    ``seed``: the grading run's seed (the hidden cases). ``run_all``: run every
    cell, not only up to the last exercise (then a crash or hang further down the
    lesson is reported too; the grades are the same). ``kernels``: the run's
    :class:`Kernels` (:func:`grade_many` passes its own).
    """
    kernels = Kernels() if kernels is None else kernels
    kernels.go_on()
    path = Path(path)
    submission = label if label is not None else path
    try:
        nb = _read_submission(path)
    except Exception as exc:
        return new_row(submission, seed, error=f"not a readable notebook: {type(exc).__name__}: {exc}")
    lesson = recognise_lesson(nb, path)
    if lesson is None:
        return new_row(submission, seed, error="could not recognise the lesson "
                                               "(no course metadata, no exercise function)")
    row = new_row(submission, seed, lesson)
    names = lessons()[lesson]
    cells = {name: index + 1 for name, index in exercise_cells(nb, names).items()}
    workdir = Path(tempfile.mkdtemp(prefix="grade-"))
    try:
        results = workdir / RESULTS_FILE
        run_nb, numbers = instrument(
            nb, names, lambda name, number: kernel.capture_source(name, number, results, seed),
            run_all)
        run = Run()
        if run_nb.cells:   # nothing to run when no cell binds an exercise function
            run = execute(run_nb, workdir, timeout, kernels)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return fill_row(row, run, numbers, syntax_errors(nb), cells, timeout)


def _as_completed(futures, poll=0.2):
    """``as_completed``, waking every ``poll`` seconds so that Ctrl-C is never missed.

    The operating system may deliver Ctrl-C's SIGINT to a worker thread; Python then
    raises KeyboardInterrupt in the main thread only when that thread next runs. A main
    thread blocked with no time limit would wait for the whole notebook first.
    """
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=poll, return_when=FIRST_COMPLETED)
        yield from done


def grade_many(submissions, timeout=DEFAULT_TIMEOUT, jobs=1, seed=0, progress=None, run_all=False):
    """Grade ``submissions`` (notebook paths), ``jobs`` at a time; rows in the same order.

    ``progress(done, total, row, seconds)`` is called after each submission.
    On Ctrl-C every running kernel is killed, and KeyboardInterrupt raised.
    """
    kernels = Kernels()

    def one(path):
        start = time.perf_counter()
        try:
            row = grade_one(path, timeout, seed, run_all=run_all, kernels=kernels)
        except Stopped:
            raise
        except Exception as exc:   # a bug of ours must not cost the class its gradebook
            row = new_row(path, seed, error=f"grader error: {type(exc).__name__}: {exc}")
        return row, time.perf_counter() - start

    rows = [None] * len(submissions)
    pool = ThreadPoolExecutor(max_workers=max(1, int(jobs)), thread_name_prefix="grader")
    try:
        futures = {pool.submit(one, path): i for i, path in enumerate(submissions)}
        for done, future in enumerate(_as_completed(futures), start=1):
            row, seconds = future.result()
            rows[futures[future]] = row
            if progress:
                progress(done, len(submissions), row, seconds)
    except BaseException:
        kernels.stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return rows
