"""Running submissions: one process per submission, ``jobs`` at a time.

How one submission is graded (:func:`grade_one`):

1. The notebook is read (never written). Its lesson comes from the notebook
   itself (:func:`~helpers.instructor.grading.notebook.recognise_lesson`).
2. A grader cell is inserted after each exercise cell
   (:func:`~helpers.instructor.grading.notebook.instrument`); it grades the
   function the exercise cell bound on fresh hidden cases
   (:mod:`~helpers.instructor.grading.kernel`).
3. The instrumented notebook is written to a scratch folder, and a worker process
   (:mod:`~helpers.instructor.grading.worker`) runs it there in a fresh kernel. Both
   are forked by the run's kernel server (:mod:`~helpers.instructor.grading.forkserver`),
   with ipykernel, jupyter_client, numpy and matplotlib already imported.
   The worker leads a process group of its own, and so does its kernel: when
   the time limit passes, both groups are killed (with anything the notebook
   started), and the submission keeps what it had earned.
4. The row is scored from what the run left in the scratch folder
   (:mod:`~helpers.instructor.grading.scoring`), and the folder is removed.

:func:`grade_many` grades submissions ``jobs`` at a time from a thread pool, each
thread waiting on its own worker process. Ctrl-C kills every running worker and
kernel, and the kernel server, and raises ``KeyboardInterrupt``.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from . import kernel, worker
from .notebook import exercise_cells, instrument, lessons, nbformat, recognise_lesson, syntax_errors
from .scoring import Run, fill_row, new_row

DEFAULT_TIMEOUT = 120.0
RESULTS_FILE = "grades.jsonl"
FORKSERVER = Path(__file__).with_name("forkserver.py")   # run as a script, never imported here


class Stopped(Exception):
    """Grading was stopped (Ctrl-C) before this submission's worker started."""


class KernelServer:
    """The run's kernel server (:mod:`.forkserver`): started, then waited for until it is ready.

    ``address`` is its Unix socket; ``close()`` kills it (the kernels it forked live on
    in their own process groups, each until its worker kills it).
    """

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="grader-kernels-")
        self.address = os.path.join(self.folder, "socket")
        log = open(os.path.join(self.folder, "server.log"), "wb")
        try:
            self.process = subprocess.Popen(
                [sys.executable, str(FORKSERVER), self.address],
                cwd=self.folder, env={**os.environ, **worker.kernel_env(self.folder)},
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                start_new_session=True)   # its own process group (and off the terminal's Ctrl-C)
        finally:
            log.close()
        if self.process.stdout.readline().strip() != b"ready":   # or it stopped
            self.process.wait()
            problem = self._last_log_line()
            self.close()
            raise RuntimeError(f"the grader's kernel server did not start: {problem}")

    def _last_log_line(self):
        lines = Path(self.folder, "server.log").read_text(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {self.process.poll()}"

    def close(self):
        _kill_group(self.process.pid)
        self.process.wait()
        self.process.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class Worker:
    """One submission's worker process, forked by the kernel server.

    ``pid`` leads its process group. The server's connection stays open while the
    worker lives: it closes when the worker exits (and the worker exits if it is
    closed first, as when the grader is killed).
    """

    def __init__(self, server, workdir):
        request = {"kind": "worker", "workdir": str(workdir), "cwd": str(worker.COURSE_ROOT),
                   "env": {**os.environ, worker.FORKSERVER_ENV: server.address},
                   "log": str(Path(workdir) / "worker.log")}
        self.connection, self.pid = worker.fork(server.address, request)

    def wait(self, timeout=None):
        """Whether the worker has exited, waiting up to ``timeout`` seconds (None: until it has)."""
        self.connection.settimeout(timeout)
        try:
            while self.connection.recv(1024):
                pass
        except (socket.timeout, BlockingIOError):   # still running (BlockingIOError: timeout 0)
            return False
        except OSError:   # the connection was closed here: the worker is on its way out
            pass
        return True

    def close(self):
        self.connection.close()


class _Workers:
    """The worker processes running now, so that Ctrl-C can kill them all; and their kernel server."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running = {}          # worker process -> its scratch folder
        self._server = None         # started with the first worker
        self.stopping = False

    def start(self, workdir):
        with self._lock:
            if self.stopping:
                raise Stopped()
            if self._server is None:
                self._server = KernelServer()
            process = Worker(self._server, workdir)
            self._running[process] = workdir
            return process

    def finished(self, process):
        with self._lock:
            self._running.pop(process, None)
        process.close()

    def kill_all(self):
        with self._lock:
            self.stopping = True
            running = list(self._running.items())
        for process, workdir in running:
            kill(process, workdir)
        self.close()

    def close(self):
        """Stop the kernel server (once every worker is done, or killed)."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.close()


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill(process, workdir):
    """Kill a worker's process group and its kernel's (the kernel leads a group of its own).

    (A kernel starting now, before its process id is written, exits with its worker.)
    """
    _kill_group(process.pid)
    pid_file = Path(workdir) / worker.KERNEL_PID_FILE
    try:
        kernel_pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return   # no kernel yet
    _kill_group(kernel_pid)


def run_worker(workdir, timeout, workers):
    """Run the worker on ``workdir`` within ``timeout`` seconds; return a :class:`Run`."""
    process = workers.start(workdir)
    problem = None
    try:
        if not process.wait(timeout):
            problem = "timeout"
    finally:
        if problem is not None or not process.wait(0):   # timed out, or Ctrl-C in the main thread
            kill(process, workdir)
            process.wait()
        workers.finished(process)
    run = _read_run(Path(workdir))
    if problem is None:
        status = _read_json(Path(workdir) / worker.STATUS_FILE)
        if status is None:   # the worker itself failed: a bug of ours, or it was killed
            log = (Path(workdir) / "worker.log").read_text(errors="replace").strip().splitlines()
            problem = f"the grader's worker stopped ({log[-1] if log else 'no message'})"
        else:
            problem = status["problem"]
    run.problem = problem
    return run


def _read_json(path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _read_lines(path):
    records = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                pass   # a line cut short by a kill
    return records


def _read_run(workdir):
    run = Run(records=_read_lines(workdir / RESULTS_FILE))
    for event in _read_lines(workdir / worker.CELLS_FILE):
        if "start" in event:
            run.at = event["start"]
        elif "error" in event:
            run.errors[event["error"]] = event["message"]
    return run


def _read_submission(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nbformat().reads(Path(path).read_bytes().decode("utf-8"), as_version=4)


def grade_one(path, timeout=DEFAULT_TIMEOUT, seed=0, label=None, run_all=False, workers=None):
    """Grade one submission; return its gradebook row (see :mod:`.scoring`).

    ``seed``: the grading run's seed (the hidden cases). ``run_all``: run every
    cell, not only up to the last exercise (then a crash or hang further down the
    lesson is reported too; the grades are the same). ``workers``: the pool's
    record of running workers (:func:`grade_many` passes its own).
    """
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
            nbformat().write(run_nb, str(workdir / worker.RUN_NOTEBOOK))
            own = workers is None
            workers = _Workers() if own else workers
            try:
                run = run_worker(workdir, timeout, workers)
            finally:
                if own:
                    workers.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return fill_row(row, run, numbers, syntax_errors(nb), cells, timeout)


def _as_completed(futures, poll=0.2):
    """``as_completed``, waking every ``poll`` seconds so that Ctrl-C is never missed.

    The operating system may deliver Ctrl-C's SIGINT to a worker thread (one waiting
    on its process); Python then raises KeyboardInterrupt in the main thread only when
    that thread next runs. A main thread blocked with no time limit would wait for
    the whole notebook first.
    """
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=poll, return_when=FIRST_COMPLETED)
        yield from done


def grade_many(submissions, timeout=DEFAULT_TIMEOUT, jobs=1, seed=0, progress=None, run_all=False):
    """Grade ``submissions`` (notebook paths), ``jobs`` at a time; rows in the same order.

    ``progress(done, total, row, seconds)`` is called after each submission.
    On Ctrl-C every running worker and kernel is killed, and KeyboardInterrupt raised.
    """
    workers = _Workers()

    def one(path):
        start = time.perf_counter()
        try:
            row = grade_one(path, timeout, seed, run_all=run_all, workers=workers)
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
        workers.kill_all()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    workers.close()
    return rows
