"""One submission's process: run its instrumented notebook in a fresh kernel.

    python -m helpers.instructor.grading.worker WORKDIR

The grader (:mod:`helpers.instructor.grading.runner`) starts one of these per
submission, in a process group of its own, and kills it -- with its kernel --
when the time limit passes or the instructor presses Ctrl-C. So this process
needs no time limit of its own: it runs the notebook ``WORKDIR/run.ipynb`` top
to bottom, continuing past cells that raise, shuts its kernel down, and leaves
in ``WORKDIR``:

- ``kernel.pid``: the kernel's process id (the kernel leads a process group of its own);
- ``cells.jsonl``: one line as each cell starts (``{"start": i}``) and one for each
  cell that raised (``{"error": i, "message": "Ename: value"}``);
- ``status.json``: ``{"problem": null | "died" | "..."}`` once the run is over.

The kernel is the ``python3`` of this interpreter (e.g. the venv's), with the
course's ``helpers`` importable wherever the submission lives.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from .notebook import nbformat

COURSE_ROOT = Path(__file__).resolve().parents[3]   # the folder that holds `helpers/`
RUN_NOTEBOOK = "run.ipynb"
CELLS_FILE = "cells.jsonl"
STATUS_FILE = "status.json"
KERNEL_PID_FILE = "kernel.pid"
#: How many times to start a kernel that dies before running any cell.
KERNEL_START_TRIES = 3

# ipykernel_launcher, minus the debugger (ipykernel imports debugpy when it can: a
# quarter of a second per kernel, for a debugger nobody attaches while grading), and
# writing the kernel's process id where the grader looks for it.
_LAUNCHER = ("import os, sys; sys.path[0:1] = [] if sys.path and sys.path[0] == '' else sys.path[0:1]; "
             "open(os.environ['COURSE_GRADER_KERNEL_PID'], 'w').write(str(os.getpid())); "
             "sys.modules['debugpy'] = None; "
             "from ipykernel import kernelapp; kernelapp.launch_new_instance()")


def kernel_env(workdir):
    """Environment variables of the grading kernel."""
    pythonpath = os.environ.get("PYTHONPATH")
    return {
        # `helpers` importable in the kernel, wherever the submission sits.
        "PYTHONPATH": str(COURSE_ROOT) + (os.pathsep + pythonpath if pythonpath else ""),
        # Figures are built but never rendered to PNG: nobody looks at them here.
        "MPLBACKEND": "agg",
        "PYTHONWARNINGS": "ignore",
        "COURSE_GRADER_KERNEL_PID": str(Path(workdir) / KERNEL_PID_FILE),
    }


def kernel_manager(workdir):
    """A kernel manager for the ``python3`` kernel of *this* interpreter."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class ThisPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[sys.executable, "-c", _LAUNCHER, "-f", "{connection_file}"],
                              display_name="Python 3 (grader)", language="python",
                              env=kernel_env(workdir))

    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=ThisPython())


def _log(workdir, record):
    with open(Path(workdir) / CELLS_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def execute(nb, workdir):
    """Run ``nb`` in a fresh kernel with ``workdir`` as its folder; return the problem or None.

    Returns ``"died"``, ``"not started: ..."`` (the kernel failed before its first
    cell), another description, or None when every cell ran.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    started = []

    def on_cell_start(cell, cell_index):
        started.append(cell_index)
        _log(workdir, {"start": cell_index})

    def on_cell_executed(cell, cell_index, execute_reply):
        content = execute_reply.get("content", {}) if execute_reply else {}
        if content.get("status") == "error":
            _log(workdir, {"error": cell_index,
                           "message": f"{content.get('ename')}: {content.get('evalue')}"})

    client = NotebookClient(nb, km=kernel_manager(workdir), timeout=None, allow_errors=True,
                            record_timing=False, shutdown_kernel="immediate", startup_timeout=120,
                            resources={"metadata": {"path": str(workdir)}},
                            on_cell_start=on_cell_start, on_cell_executed=on_cell_executed)
    try:
        # cleanup_kc: shut the kernel down at the end (nbclient leaves a kernel manager it
        # was given alone otherwise). The kernel process's own stdout/stderr (start-up
        # warnings, not the cells' output, which arrives by messages) would only clutter.
        client.execute(cleanup_kc=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except DeadKernelError:
        return "died"
    except Exception as exc:   # the kernel failed to start, protocol trouble ...
        return f"{'not started: ' if not started else ''}{type(exc).__name__}: {exc}"
    return None


def main(workdir):
    workdir = Path(workdir)
    nb = nbformat().read(str(workdir / RUN_NOTEBOOK), as_version=4)
    for _ in range(KERNEL_START_TRIES):
        problem = execute(nb, workdir)
        # A kernel that failed to start is the machine's fault, not the submission's:
        # on a busy machine two kernels started at once can race for the same port.
        if not (problem or "").startswith("not started: "):
            break
    (workdir / STATUS_FILE).write_text(json.dumps({"problem": problem}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
