"""One submission's process: run its instrumented notebook in a fresh kernel.

The grader (:mod:`helpers.instructor.grading.runner`) has one of these forked per
submission by the run's kernel server (:mod:`~helpers.instructor.grading.forkserver`),
in a process group of its own, and kills it -- with its kernel -- when the time
limit passes or the instructor presses Ctrl-C. (By hand, with a server running:
``COURSE_GRADER_FORKSERVER=SOCKET python -m helpers.instructor.grading.worker WORKDIR``.) So this process
needs no time limit of its own: it runs the notebook ``WORKDIR/run.ipynb`` top
to bottom, continuing past cells that raise, shuts its kernel down, and leaves
in ``WORKDIR``:

- ``kernel.pid``: the kernel's process id (the kernel leads a process group of its own);
- ``cells.jsonl``: one line as each cell starts (``{"start": i}``) and one for each
  cell that raised (``{"error": i, "message": "Ename: value"}``);
- ``status.json``: ``{"problem": null | "died" | "..."}`` once the run is over.

The kernel is forked by the same server (its socket in ``COURSE_GRADER_FORKSERVER``):
a fresh process of this interpreter with ipykernel, numpy and matplotlib already
imported, and the course's ``helpers`` importable wherever the submission lives.
"""

import json
import os
import queue
import signal
import socket
import sys
import time
import uuid
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parents[3]   # the folder that holds `helpers/`
RUN_NOTEBOOK = "run.ipynb"
CELLS_FILE = "cells.jsonl"
STATUS_FILE = "status.json"
KERNEL_PID_FILE = "kernel.pid"
#: How many times to start a kernel that dies before running any cell.
KERNEL_START_TRIES = 3

#: The environment variable that names the kernel server's socket (set by the runner).
FORKSERVER_ENV = "COURSE_GRADER_FORKSERVER"
CONNECTION_FILE = "kernel.json"
#: Seconds a new kernel has to answer before it counts as not started.
READY_TIMEOUT = 120


def kernel_env(workdir):
    """Environment variables of the grading kernel (besides the worker's own)."""
    pythonpath = os.environ.get("PYTHONPATH")
    return {
        # `helpers` importable in the kernel's subprocesses too, wherever the submission sits.
        "PYTHONPATH": str(COURSE_ROOT) + (os.pathsep + pythonpath if pythonpath else ""),
        # Figures are built but never rendered to PNG: nobody looks at them here.
        "MPLBACKEND": "agg",
        "PYTHONWARNINGS": "ignore",
        "COURSE_GRADER_KERNEL_PID": str(Path(workdir) / KERNEL_PID_FILE),
    }


def fork(address, request):
    """Ask the kernel server at ``address`` for a process; ``(connection, pid)``.

    The process lives while ``connection`` is open, and closes its end when it exits.
    """
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(address)
        connection.sendall(json.dumps(request).encode("utf-8") + b"\n")
        with connection.makefile("rb") as reader:
            reply = reader.readline()
        if not reply:
            raise ConnectionError("the kernel server closed the connection without starting it")
        return connection, json.loads(reply)["pid"]
    except BaseException:
        connection.close()
        raise


class Kernel:
    """A kernel forked for ``workdir`` by the kernel server, and a client connected to it.

    ``close()`` kills the kernel's process group (with anything the notebook started).
    The kernel also exits by itself when this worker is gone: it watches ``connection``.
    """

    def __init__(self, workdir):
        from jupyter_client import BlockingKernelClient
        from jupyter_client.connect import write_connection_file

        connection_file, info = write_connection_file(
            str(Path(workdir) / CONNECTION_FILE), ip="127.0.0.1",
            key=uuid.uuid4().hex.encode("ascii"))
        env = {name: value for name, value in os.environ.items() if name != FORKSERVER_ENV}
        request = {"kind": "kernel", "argv": ["-f", connection_file], "cwd": str(workdir),
                   "env": {**env, **kernel_env(workdir)}}
        self.connection, self.pid = fork(os.environ[FORKSERVER_ENV], request)
        self.client = BlockingKernelClient()
        self.client.load_connection_info(info)
        self.client.start_channels()

    def is_alive(self):
        try:
            os.kill(self.pid, 0)   # the server reaps its kernels: a dead one is gone
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def close(self):
        self.client.stop_channels()
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.connection.close()


def _log(workdir, record):
    with open(Path(workdir) / CELLS_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def read_cells(path):
    """``[(cell_type, source)]`` of the notebook at ``path`` (plain JSON: no nbformat needed)."""
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    return [(cell.get("cell_type"), "".join(cell.get("source", ""))) for cell in nb["cells"]]


class _Died(Exception):
    """The kernel stopped while a cell ran."""


def _reply(kernel, msg_id, timeout=None):
    """Wait for the kernel's reply to ``msg_id`` (its outputs are not needed: results go to files).

    Raises :class:`_Died` if the kernel stops first, ``TimeoutError`` after ``timeout`` seconds.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            reply = kernel.client.get_shell_msg(timeout=1)
        except queue.Empty:
            if not kernel.is_alive():
                raise _Died()
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"no answer in {timeout} s")
            continue
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return reply


def execute(cells, workdir):
    """Run ``cells`` in a fresh kernel with ``workdir`` as its folder; return the problem or None.

    Every cell is logged as it starts; a code cell that raises is logged and the run goes
    on (as Run All with errors allowed). Returns ``"died"``, ``"not started: ..."`` (the
    kernel failed before its first cell), or None when every cell ran.
    """
    try:
        kernel = Kernel(workdir)
    except Exception as exc:
        return f"not started: {type(exc).__name__}: {exc}"
    try:
        try:
            _reply(kernel, kernel.client.kernel_info(), timeout=READY_TIMEOUT)
        except Exception as exc:   # it died at start (_Died), or never answered
            return f"not started: {type(exc).__name__}: {exc}"
        for index, (cell_type, source) in enumerate(cells):
            _log(workdir, {"start": index})
            if cell_type != "code" or not source.strip():
                continue
            msg_id = kernel.client.execute(source, allow_stdin=False, stop_on_error=False)
            content = _reply(kernel, msg_id).get("content", {})
            if content.get("status") == "error":
                _log(workdir, {"error": index,
                               "message": f"{content.get('ename')}: {content.get('evalue')}"})
    except _Died:
        return "died"
    except Exception as exc:   # protocol trouble
        return f"{type(exc).__name__}: {exc}"
    finally:
        kernel.close()
    return None


def main(workdir):
    workdir = Path(workdir)
    cells = read_cells(workdir / RUN_NOTEBOOK)
    for _ in range(KERNEL_START_TRIES):
        problem = execute(cells, workdir)
        # A kernel that failed to start is the machine's fault, not the submission's:
        # on a busy machine two kernels started at once can race for the same port.
        if not (problem or "").startswith("not started: "):
            break
    (workdir / STATUS_FILE).write_text(json.dumps({"problem": problem}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
