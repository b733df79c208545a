"""Starts the grader's processes -- workers and kernels -- by forking, with their imports done once.

    python helpers/instructor/grading/forkserver.py SOCKET

A fresh kernel spends most of its start importing ipykernel, numpy and matplotlib
(about 1.2 s of CPU here, more than most submissions' cells), and a worker
process importing jupyter_client (0.4 s). The grader
(:mod:`~helpers.instructor.grading.runner`) starts this server once per run. It
imports those modules, prints ``ready``, and then answers requests on the Unix
socket ``SOCKET``, each by forking a child:

- ``{"kind": "worker", "workdir": ..., "cwd": ..., "env": {...}, "log": ...}``, from
  the runner: the child runs :func:`~helpers.instructor.grading.worker.main` on
  ``workdir``, its output going to the file ``log``;
- ``{"kind": "kernel", "argv": [...], "cwd": ..., "env": {...}}``, from a worker: the
  child becomes the submission's kernel (``argv``: ``["-f", connection_file]``).
  Before it starts it writes its process id where the grader looks for it
  (``COURSE_GRADER_KERNEL_PID``) and draws fresh random seeds.

The reply is ``{"pid": N}``. A child starts from the server as it was after those
imports: it has run no code of any other submission, and what it changes stays
in its own memory. It takes the folder and environment of the request and a
process group of its own (so that the grader can kill it with anything it
starts). It keeps the request's connection open while it lives, and exits when
the other end closes it: a worker when the runner is gone, a kernel when its
worker is gone. So the runner knows that its worker has finished when the
connection closes.

Only the standard library and the modules in ``WARM`` are imported here: this
file runs as a script, so that no module of the course is loaded before the
submission's own imports. It must stay single-threaded: a fork copies only the
thread that calls it.
"""

import json
import os
import signal
import socket
import sys
import threading
import traceback

#: Imported once here; each child starts with them loaded.
WARM = ("numpy", "matplotlib.pyplot", "ipykernel.kernelapp", "jupyter_client")


def _warm_up():
    sys.modules["debugpy"] = None   # no debugger: nobody attaches one while grading
    for name in WARM:
        __import__(name)


def _read_line(connection):
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the connection closed before the request ended")
        data += chunk
    return json.loads(data)


def _exit_when_closed(connection):
    """In a child: exit once the process that asked for it closes the connection (or is gone)."""
    def watch():
        try:
            while connection.recv(1024):
                pass
        except OSError:
            pass
        os._exit(1)

    threading.Thread(target=watch, name="grader-parent-watch", daemon=True).start()


def _take_over(request, connection, output):
    """In a forked child: the request's process group, folder, environment and output."""
    os.setsid()                                    # a process group of its own
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server's settings, not a child's
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    out = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if output else devnull
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(devnull)
    if out != devnull:
        os.close(out)
    _exit_when_closed(connection)


def _run_kernel(request):
    sys.modules["numpy"].random.seed()             # fresh, as in a new process (`random` reseeds itself)
    pid_file = os.environ.get("COURSE_GRADER_KERNEL_PID")
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    sys.argv = [sys.executable, *request["argv"]]
    from ipykernel import kernelapp
    kernelapp.launch_new_instance()
    return 0


def _run_worker(request):
    from helpers.instructor.grading import worker
    return worker.main(request["workdir"])


def _child(request, connection):
    """The forked child's whole life: never returns to the server's loop."""
    status = 1
    try:
        _take_over(request, connection, request.get("log"))
        status = _run_worker(request) if request["kind"] == "worker" else _run_kernel(request)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _reap(signum, frame):
    """Collect every child that has exited (its CPU time then counts as the server's children's)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(address):
    """Answer requests on the Unix socket ``address`` until the grader that started us is gone."""
    grader = os.getppid()
    signal.signal(signal.SIGCHLD, _reap)           # children are reaped as they exit
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(16)
    listener.settimeout(1.0)
    print("ready", flush=True)
    while os.getppid() == grader:
        try:
            connection, _ = listener.accept()
        except socket.timeout:
            continue
        connection.settimeout(None)
        try:
            request = _read_line(connection)
        except (OSError, ValueError) as exc:
            print(f"bad request: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            connection.close()
            continue
        pid = os.fork()
        if pid == 0:
            listener.close()
            _child(request, connection)
        try:
            connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        except OSError:
            pass   # the asker is gone; the child sees the closed connection and exits
        connection.close()


if __name__ == "__main__":
    # Run as a script, sys.path[0] is this folder: its modules must not be importable
    # by a submission as `kernel`, `notebook`...
    del sys.path[0]
    _warm_up()
    serve(sys.argv[1])
