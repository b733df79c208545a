"""Starts the grading kernels: each a fresh process, forked with its heavy imports done once.

    python helpers/instructor/grading/forkserver.py SOCKET

A fresh kernel spends most of its start importing: ipykernel, numpy, matplotlib
(about 1.2 s of CPU here, more than most submissions' cells). The grader
(:mod:`~helpers.instructor.grading.runner`) starts this server once per run. It
imports those modules, prints ``ready``, and then, for each worker that asks on
the Unix socket ``SOCKET``, forks a child that becomes the submission's kernel.

A child starts from the server as it was after those imports: it has run no code
of any other submission, and what it changes stays in its own memory. Before
it starts the kernel it takes the worker's folder and environment, a process
group of its own, fresh random seeds, and writes its process id where the
grader looks for it (``COURSE_GRADER_KERNEL_PID``). It exits when the worker
that asked for it is gone (the worker's connection closes), as a kernel started
by the worker would.

The request is one line of JSON: ``{"argv": [...], "cwd": "...", "env": {...}}``,
where ``argv`` are the kernel's arguments (``["-f", connection_file]``). The
reply is ``{"pid": N}``.

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

#: Imported once here; each kernel starts with them loaded.
WARM = ("numpy", "matplotlib.pyplot", "ipykernel.kernelapp")


def _warm_up():
    sys.modules["debugpy"] = None   # no debugger: nobody attaches one while grading
    for name in WARM:
        __import__(name)


def _read_line(connection):
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the worker closed the connection before its request ended")
        data += chunk
    return json.loads(data)


def _exit_when_closed(connection):
    """In the kernel: exit once the worker that asked for it is gone."""
    def watch():
        try:
            while connection.recv(1024):
                pass
        except OSError:
            pass
        os._exit(1)

    threading.Thread(target=watch, name="grader-worker-watch", daemon=True).start()


def _become_kernel(request, connection):
    """In the forked child: set up as a fresh kernel of the worker's, then run it."""
    os.setsid()                                    # a process group of its own
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server's setting, not a kernel's
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.modules["numpy"].random.seed()             # fresh, as in a new process (`random` reseeds itself)
    pid_file = os.environ.get("COURSE_GRADER_KERNEL_PID")
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    _exit_when_closed(connection)
    sys.argv = [sys.executable, *request["argv"]]
    from ipykernel import kernelapp
    kernelapp.launch_new_instance()


def _reap(signum, frame):
    """Collect every kernel that has exited (its CPU time then counts as the server's children's)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(address):
    """Answer workers on the Unix socket ``address`` until the grader that started us is gone."""
    grader = os.getppid()
    signal.signal(signal.SIGCHLD, _reap)           # kernels are reaped as they exit
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
            status = 1
            try:
                _become_kernel(request, connection)
                status = 0
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 1
            finally:
                os._exit(status)   # never back into the server's loop
        try:
            connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        except OSError:
            pass   # the worker is gone; its kernel sees the closed connection and exits
        connection.close()


if __name__ == "__main__":
    # Run as a script, sys.path[0] is this folder: its modules must not be importable
    # by a submission as `kernel`, `notebook`...
    del sys.path[0]
    _warm_up()
    serve(sys.argv[1])
