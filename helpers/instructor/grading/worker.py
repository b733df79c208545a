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
import queue
import subprocess
import sys
from pathlib import Path

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
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class ThisPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[sys.executable, "-c", _LAUNCHER, "-f", "{connection_file}"],
                              display_name="Python 3 (grader)", language="python",
                              env=kernel_env(workdir))

    return KernelManager(kernel_name="python3", kernel_spec_manager=ThisPython())


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


def _reply(client, manager, msg_id):
    """Wait for the kernel's reply to ``msg_id`` (its outputs are not needed: results go to files)."""
    while True:
        try:
            reply = client.get_shell_msg(timeout=1)
        except queue.Empty:
            if not manager.is_alive():
                raise _Died()
            continue
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return reply


def execute(cells, workdir):
    """Run ``cells`` in a fresh kernel with ``workdir`` as its folder; return the problem or None.

    Every cell is logged as it starts; a code cell that raises is logged and the run goes
    on (as Run All with errors allowed). Returns ``"died"``, ``"not started: ..."`` (the
    kernel failed before its first cell), or None when every cell ran.
    """
    manager = kernel_manager(workdir)
    try:
        manager.start_kernel(cwd=str(workdir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except Exception as exc:
        return f"not started: {type(exc).__name__}: {exc}"
    client = manager.client()
    client.start_channels()
    try:
        try:
            client.wait_for_ready(timeout=120)
        except Exception as exc:   # it died at start, or never answered
            return f"not started: {type(exc).__name__}: {exc}"
        for index, (cell_type, source) in enumerate(cells):
            _log(workdir, {"start": index})
            if cell_type != "code" or not source.strip():
                continue
            msg_id = client.execute(source, allow_stdin=False, stop_on_error=False)
            content = _reply(client, manager, msg_id).get("content", {})
            if content.get("status") == "error":
                _log(workdir, {"error": index,
                               "message": f"{content.get('ename')}: {content.get('evalue')}"})
    except _Died:
        return "died"
    except Exception as exc:   # protocol trouble
        return f"{type(exc).__name__}: {exc}"
    finally:
        client.stop_channels()
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)
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
