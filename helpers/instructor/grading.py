"""Grade submitted lesson notebooks into a gradebook (``python -m helpers.grade``).

    python -m helpers.grade [--json FILE] [--csv FILE] [--timeout SECONDS] [--jobs N]
                            [--run-all] SUBMISSION.ipynb|FOLDER ...

How one submission is graded
----------------------------
1. The notebook is read (never written: the run happens on a scratch copy in a
   temporary folder). Its lesson comes from the notebook itself: the metadata
   ``course.lesson`` that the student-notebook generator stamps, or, failing
   that, from which exercise functions its code cells define; the file name is
   only a last resort.
2. After every code cell that defines an exercise function (``def project_qkv(``),
   a small grader cell is inserted. It takes the function the learner *just*
   defined -- before the lesson's check cell can rebind the name to the
   reference implementation -- and runs it right away on the exercise's hidden
   cases (:meth:`helpers.checking.Exercise.cases` with ``hidden=True``, which
   differ from the cases the notebook's visible check uses). The result goes to
   a file in the scratch folder, so whatever was graded survives a kernel that
   later dies or hangs.
3. The notebook runs top to bottom in a fresh kernel (the ``python3`` of the
   interpreter running the grader, with the course's ``helpers`` importable
   wherever the notebook lives), continuing past cells that raise, within a
   time limit for the whole notebook. A notebook that exceeds it has its kernel
   killed and keeps what it had earned. The run stops after the last cell that
   defines an exercise function: nothing after it can change a grade, and the
   rest of a lesson (figures, timing measurements) is most of its run time.
   ``--run-all`` runs every cell (then a crash further down is reported too).

Points
------
Every exercise is worth :data:`POINTS_PER_EXERCISE` points; a learner gets the
fraction of hidden cases their function passes (rounded to 0.1). Not attempted
(the stub still raises ``NotImplementedError``), missing, or never reached: 0.
The feedback names the mistake the way the notebook's own checks do.
"""

import argparse
import asyncio
import atexit
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

POINTS_PER_EXERCISE = 10
DEFAULT_TIMEOUT = 120.0
GRADER_TAG = "course-grader"
COURSE_ROOT = Path(__file__).resolve().parents[2]   # the folder that holds `helpers/`
RESULTS_FILE = "grades.jsonl"
_MAX_FEEDBACK_MESSAGES = 3


class UsageError(Exception):
    """A problem with the command line itself (no files, a missing path, not a notebook)."""


# =========================================================== inside the kernel
def kernel_capture(name, cell_number, namespace, results_path):
    """Grade the exercise function ``name`` as it stands right now in ``namespace``.

    Runs inside the grading kernel, in the cell the grader inserts after a cell
    that defines ``name``. Appends JSON lines to ``results_path``: one saying the
    evaluation started (so a kernel that dies or hangs while grading is
    reported), then the result.
    """
    fn = namespace.get(name)
    record = {"exercise": name, "cell": cell_number}
    if not callable(fn) or getattr(fn, "__module__", None) != namespace.get("__name__"):
        # Not defined (e.g. the cell had a syntax error), or not the learner's own
        # (e.g. the reference, imported or handed back by the lesson's check).
        record["status"] = "undefined"
        _append(results_path, record)
        return
    _append(results_path, dict(record, status="evaluating"))
    try:
        from helpers.checking import evaluate
        from helpers.exercises import EXERCISES

        exercise = EXERCISES[name]
        cases = exercise.cases(hidden=True)
        report = evaluate(exercise, fn, cases)
        record.update(status="graded", passed=report.passed, total=report.total,
                      not_attempted=report.not_attempted, failures=list(report.failures))
    except BaseException as exc:   # even SystemExit raised by the learner's function
        record.update(status="crashed", message=f"{type(exc).__name__}: {exc}")
    _append(results_path, record)


def _append(path, record):
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


# =========================================================== reading a notebook
def _nbformat():
    """Import nbformat, without the URI grammar its schema validator never needs here.

    jsonschema imports ``rfc3987_syntax`` when it is installed (it comes with
    JupyterLab), which compiles a grammar at import: seconds of CPU for a format
    check nbformat does not use. Blocking it in this process makes jsonschema skip it.
    """
    if "nbformat" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)
    import nbformat
    return nbformat


def lessons():
    """``{lesson: [exercise names]}`` from :data:`helpers.exercises.LESSONS`."""
    from helpers.exercises import LESSONS
    return {lesson: [ex.name for ex in exercises] for lesson, exercises in LESSONS.items()}


def _python_source(source):
    """Cell source with IPython syntax (``%magic``, ``!cmd``) turned into Python."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        return TransformerManager().transform_cell(source)
    except Exception:
        return source


def defined_functions(source):
    """Names of the functions a cell's code defines at top level, and its syntax error.

    A function is defined by ``def name(...)`` or by an assignment ``name = ...``
    (a lambda, say) -- except ``name = check(...)``, the lesson's check cell.
    Returns ``(names, error)``: ``error`` is None, or a one-line description of the
    syntax error (then ``names`` comes from a plain-text scan of ``def name(``).
    """
    import ast
    code = _python_source(source)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        names = re.findall(r"^def\s+([A-Za-z_]\w*)\s*\(", code, flags=re.MULTILINE)
        return names, f"SyntaxError: {exc.msg} (line {exc.lineno})"
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and value.func.id == "check"):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names, None


def recognise_lesson(nb, path=None):
    """The lesson a notebook belongs to, or None.

    In order: the metadata ``course.lesson`` stamped into every student (and
    solution) notebook; the lesson whose exercise functions the code cells define
    most of; a lesson name in the file name.
    """
    known = lessons()
    stamped = (nb.get("metadata", {}).get("course") or {})
    if isinstance(stamped, dict) and stamped.get("lesson") in known:
        return stamped["lesson"]
    defined = set()
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            defined.update(defined_functions(cell.get("source", ""))[0])
    best, best_count = None, 0
    for lesson, names in known.items():
        count = len(defined & set(names))
        if count > best_count:
            best, best_count = lesson, count
    if best:
        return best
    if path is not None:
        for lesson in known:
            if lesson in Path(path).name:
                return lesson
    return None


def instrument(nb, exercise_names, results_path, run_all=False):
    """Insert the grader cells; return (notebook to run, cell numbers, syntax errors).

    ``cell_numbers[i]`` is the 1-based number in the submission of cell i of the
    notebook to run (None for an inserted grader cell). ``syntax_errors`` lists
    ``"cell N: SyntaxError: ..."`` for every code cell of the submission.

    Unless ``run_all``, the notebook to run stops after the last cell that defines
    an exercise function: every exercise has been graded by then, and the rest of
    the lesson (figures, measurements) cannot change a grade.
    """
    nbformat = _nbformat()
    cells, numbers, syntax_errors = [], [], []
    last = 0
    for number, cell in enumerate(nb.cells, start=1):
        cells.append(cell)
        numbers.append(number)
        if cell.cell_type != "code":
            continue
        names, error = defined_functions(cell.source)
        if error:
            syntax_errors.append(f"cell {number}: {error}")
        for name in names:
            if name not in exercise_names:
                continue
            last = len(cells) + 1
            source = (f"__import__('helpers.instructor.grading', fromlist=['_']).kernel_capture("
                      f"{name!r}, {number}, globals(), {str(results_path)!r})")
            grader = nbformat.v4.new_code_cell(source)
            grader.metadata["tags"] = [GRADER_TAG]
            cells.append(grader)
            numbers.append(None)
    if not run_all:
        cells, numbers = cells[:last], numbers[:last]
    out = nbformat.v4.new_notebook(metadata=nb.metadata)
    out.cells = cells
    return out, numbers, syntax_errors


# =========================================================== running a notebook
def _kernel_env():
    pythonpath = os.environ.get("PYTHONPATH")
    return {
        # `helpers` importable in the kernel, wherever the submission sits.
        "PYTHONPATH": str(COURSE_ROOT) + (os.pathsep + pythonpath if pythonpath else ""),
        # Figures are built but never rendered to PNG: nobody looks at them here.
        "MPLBACKEND": "agg",
        "PYTHONWARNINGS": "ignore",
    }


# ipykernel_launcher, minus the debugger: ipykernel imports debugpy when it can (a
# quarter of a second per kernel, for a debugger nobody attaches while grading).
_LAUNCHER = ("import sys; sys.path[0:1] = [] if sys.path and sys.path[0] == '' else sys.path[0:1]; "
             "sys.modules['debugpy'] = None; "
             "from ipykernel import kernelapp; kernelapp.launch_new_instance()")


def _kernel_manager():
    """A kernel manager for the ``python3`` kernel of *this* interpreter (e.g. the venv's)."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class ThisPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[sys.executable, "-c", _LAUNCHER, "-f", "{connection_file}"],
                              display_name="Python 3 (grader)", language="python",
                              env=_kernel_env())

    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=ThisPython())


async def _run_notebook(nb, workdir, timeout):
    """Execute ``nb`` in ``workdir``; return (problem or None, number of the cell running at the end)."""
    _nbformat()
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    current = {"index": None}

    def on_cell_start(cell, cell_index):
        current["index"] = cell_index

    km = _kernel_manager()
    client = NotebookClient(nb, km=km, timeout=None, allow_errors=True, record_timing=False,
                            shutdown_kernel="immediate", startup_timeout=max(60, timeout),
                            resources={"metadata": {"path": str(workdir)}},
                            on_cell_start=on_cell_start)
    # The kernel process's own stdout/stderr (start-up warnings, not the cells'
    # output, which arrives by messages) would only clutter the terminal.
    task = asyncio.ensure_future(client.async_execute(
        cleanup_kc=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    problem = None
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            problem = "timeout"
            # Kill the kernel first: the client then stops on its own, quickly.
            await _kill(km)
            task.cancel()
            await asyncio.wait({task}, timeout=30)
        exc = task.exception() if task.done() and not task.cancelled() else None
        if problem is None:
            if isinstance(exc, DeadKernelError):
                problem = "died"
            elif exc is not None:   # the kernel failed to start, protocol trouble ...
                problem = f"{type(exc).__name__}: {exc}"
    finally:
        # Also on cancellation (Ctrl-C): let the client unwind first, so that a kernel
        # still starting up is known to its manager, then make sure it is dead.
        try:
            if not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=10)
        finally:
            await _kill(km)
            atexit.unregister(client._cleanup_kernel)   # nbclient's own exit hook, now moot
    return problem, current["index"]


async def _kill(km):
    """Kill the kernel, even one interrupted half-way through starting up."""
    try:
        if km.has_kernel:
            await km.shutdown_kernel(now=True)
    except Exception:
        pass
    process = getattr(getattr(km, "provisioner", None), "process", None)
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


def _cell_errors(nb, numbers):
    """``{cell number: "Ename: value"}`` for every submission cell that raised."""
    errors = {}
    for index, cell in enumerate(nb.cells):
        if numbers[index] is None or cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                errors[numbers[index]] = f"{output.get('ename')}: {output.get('evalue')}"
    return errors


def _read_results(path):
    records = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                pass
    return records


def _exercise_row(name, records, problem):
    """Points, passed flag and feedback of one exercise from its kernel records."""
    row = {"points": 0.0, "max_points": POINTS_PER_EXERCISE, "passed": False, "feedback": ""}
    mine = [r for r in records if r.get("exercise") == name]
    finished = [r for r in mine if r.get("status") in ("graded", "crashed")]
    last = mine[-1] if mine else None
    if last is not None and last.get("status") == "evaluating":
        what = {"timeout": "grading it ran past the time limit",
                "died": "grading it made the kernel die"}.get(problem, "grading it did not finish")
        row["feedback"] = f"{name}: {what} (an endless loop, os._exit, or too slow?)"
        return row
    if not finished:
        if last is not None:   # defined only as something else (the reference, a syntax error)
            row["feedback"] = (f"{name} is not your own function where the exercise defines it "
                               f"(cell {last['cell']}): a syntax error there, or not defined?")
        elif problem in ("timeout", "died"):
            row["feedback"] = f"{name} was never reached: the notebook stopped before its cell"
        else:
            row["feedback"] = f"{name} is not defined anywhere in the notebook"
        return row
    result = finished[-1]
    if result["status"] == "crashed":
        row["feedback"] = f"{name}: grading it raised {result['message']}"
        return row
    if result["not_attempted"]:
        row["feedback"] = f"{name}: not attempted (it still raises NotImplementedError)"
        return row
    passed, total = result["passed"], result["total"]
    row["points"] = round(POINTS_PER_EXERCISE * passed / total, 1) if total else 0.0
    row["passed"] = total > 0 and passed == total
    if row["passed"]:
        row["feedback"] = f"{name} passed all {total} hidden checks"
    else:
        messages = list(dict.fromkeys(result["failures"]))   # unique, in order
        shown = messages[:_MAX_FEEDBACK_MESSAGES]
        more = len(messages) - len(shown)
        row["feedback"] = (f"{name} passed {passed} of {total} hidden checks. "
                           + " | ".join(f"{name} {m}" for m in shown)
                           + (f" | (+{more} more)" if more else ""))
    return row


#: How many times to try starting a kernel that dies before running any cell.
KERNEL_START_TRIES = 3


async def grade_one(path, timeout=DEFAULT_TIMEOUT, label=None, run_all=False):
    """Grade one submission; return its gradebook row (a dict, see the module doc).

    ``run_all``: run every cell, not only up to the last exercise (then a crash or
    hang further down the lesson is reported too; the grades are the same).
    """
    nbformat = _nbformat()
    path = Path(path)
    row = {"submission": label if label is not None else str(path), "lesson": None,
           "score": 0.0, "max_score": 0, "error": None, "exercises": {}}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(path.read_bytes().decode("utf-8"), as_version=4)
    except Exception as exc:
        row["error"] = f"not a readable notebook: {type(exc).__name__}: {exc}"
        return row
    lesson = recognise_lesson(nb, path)
    if lesson is None:
        row["error"] = "could not recognise the lesson (no course metadata, no exercise function)"
        return row
    names = lessons()[lesson]
    row["lesson"] = lesson
    row["max_score"] = POINTS_PER_EXERCISE * len(names)

    workdir = Path(tempfile.mkdtemp(prefix="grade-"))
    try:
        scratch = workdir / "submission.ipynb"
        shutil.copyfile(path, scratch)   # the run's working copy; the original is only read
        results_path = workdir / RESULTS_FILE
        run_nb, numbers, syntax_errors = instrument(nb, set(names), results_path, run_all)
        problem, at = None, None
        if run_nb.cells:   # nothing to run when no cell defines an exercise function
            for _ in range(KERNEL_START_TRIES):
                problem, at = await _run_notebook(run_nb, workdir, timeout)
                # A kernel that failed to start (before its first cell) is the machine's
                # fault, not the submission's: on a busy machine two kernels started at
                # once can race for the same port. Start a fresh one.
                if not (problem and problem not in ("timeout", "died") and at is None):
                    break
        records = _read_results(results_path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    errors = list(syntax_errors)
    where = ""
    if at is not None and numbers[at] is not None:
        where = f" in cell {numbers[at]}"
    elif at:   # in a grader cell: while running the learner's function on the hidden cases
        where = f" while grading the function of cell {numbers[at - 1]}"
    if problem == "timeout":
        errors.append(f"timed out after {timeout:g} s{where}; the kernel was killed")
    elif problem == "died":
        errors.append(f"the kernel died{where} (os._exit, os.kill, a crash, out of memory?)")
    elif problem:
        errors.append(f"could not run the notebook: {problem}")
    for number, message in _cell_errors(run_nb, numbers).items():
        if message.startswith("SystemExit"):
            errors.append(f"cell {number} called sys.exit ({message})")
    for name in names:
        exercise = _exercise_row(name, records, problem)
        row["exercises"][name] = exercise
        if not any(r.get("exercise") == name for r in records) and problem not in ("timeout", "died"):
            errors.append(f"{name} is not defined in the notebook")
    row["score"] = round(sum(e["points"] for e in row["exercises"].values()), 1)
    row["error"] = "; ".join(dict.fromkeys(errors)) or None
    return row


# =========================================================== many submissions
def collect(paths):
    """The notebooks to grade: files as given, folders searched recursively (sorted).

    Raises :class:`UsageError` for no paths, a path that does not exist, or a file
    that is not an ``.ipynb``.
    """
    if not paths:
        raise UsageError("no submissions given: name notebooks (.ipynb) or folders holding them")
    found, seen = [], set()
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise UsageError(f"{given}: no such file or folder")
        if p.is_dir():
            inside = sorted(q for q in p.rglob("*.ipynb")
                            if ".ipynb_checkpoints" not in q.parts and q.is_file())
            if not inside:
                raise UsageError(f"{given}: the folder holds no notebooks (.ipynb)")
        elif p.suffix.lower() != ".ipynb":
            raise UsageError(f"{given}: not a notebook (expected a .ipynb file)")
        else:
            inside = [p]
        for q in inside:
            key = q.resolve()
            if key not in seen:
                seen.add(key)
                found.append(q)
    return found


def grade_all(paths, timeout=DEFAULT_TIMEOUT, jobs=1, progress=None, run_all=False):
    """Grade every notebook in ``paths`` (files or folders), ``jobs`` at a time.

    ``progress(done, total, row, seconds)`` is called after each submission.
    Returns the rows in the order of the submissions.
    """
    submissions = collect(paths)
    return _run(_grade_all(submissions, timeout, jobs, progress, run_all))


def _run(coro):
    """Run ``coro`` to the end on an event loop in a worker thread; return its result.

    Off the main thread, nbclient installs no SIGINT handler of its own (it would
    only stop one notebook), so Ctrl-C stops the whole run: the pending notebooks
    are cancelled and KeyboardInterrupt is raised. (A kernel that outlives the
    grader exits by itself: ipykernel watches its parent process.)
    """
    started, outcome = threading.Event(), {}

    async def main():
        outcome["loop"], outcome["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await coro

    def worker():
        try:
            outcome["value"] = asyncio.run(main())
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=worker, name="grader", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.2)
    except KeyboardInterrupt:
        if started.wait(5):
            outcome["loop"].call_soon_threadsafe(outcome["task"].cancel)
        thread.join(60)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _quiet_leftovers(loop, context):
    """Drop the errors of nbclient's background tasks about a kernel we killed on purpose."""
    task = context.get("future")
    coro = getattr(task, "get_coro", lambda: None)()
    if "NotebookClient" in getattr(coro, "__qualname__", ""):
        return
    loop.default_exception_handler(context)


async def _grade_all(submissions, timeout, jobs, progress, run_all=False):
    asyncio.get_running_loop().set_exception_handler(_quiet_leftovers)
    gate = asyncio.Semaphore(max(1, int(jobs)))
    rows = [None] * len(submissions)
    done = 0

    async def one(i, path):
        nonlocal done
        async with gate:
            start = time.perf_counter()
            try:
                rows[i] = await grade_one(path, timeout, run_all=run_all)
            except Exception as exc:   # a bug of ours must not cost the class its gradebook
                rows[i] = {"submission": str(path), "lesson": None, "score": 0.0, "max_score": 0,
                           "error": f"grader error: {type(exc).__name__}: {exc}", "exercises": {}}
            done += 1
            if progress:
                progress(done, len(submissions), rows[i], time.perf_counter() - start)

    await asyncio.gather(*(one(i, p) for i, p in enumerate(submissions)))
    return rows


# =========================================================== output
def exercise_columns(rows):
    """Exercise names present in ``rows``, in course order."""
    present = {name for row in rows for name in row["exercises"]}
    ordered = [name for names in lessons().values() for name in names if name in present]
    return ordered + sorted(present - set(ordered))


def write_json(rows, path):
    Path(path).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def write_csv(rows, path):
    columns = exercise_columns(rows)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "lesson", *columns, "score", "max_score", "error"])
        for row in rows:
            points = [row["exercises"][c]["points"] if c in row["exercises"] else ""
                      for c in columns]
            writer.writerow([row["submission"], row["lesson"] or "", *points,
                             row["score"], row["max_score"], row["error"] or ""])


def _short(text, width):
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def summary_table(rows):
    """A plain-text table: one line per submission, then the class average."""
    header = ("submission", "lesson", "score", "notes")
    lines = []
    for row in rows:
        score = f"{row['score']:g}/{row['max_score']:g}"
        notes = row["error"] or ", ".join(
            f"{name} not attempted" if "not attempted" in e["feedback"]
            else f"{name} {e['points']:g}/{e['max_points']:g}"
            for name, e in row["exercises"].items() if not e["passed"]) or "all passed"
        lines.append((_short(Path(row["submission"]).name, 40), row["lesson"] or "?", score,
                      _short(notes, 70)))
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) if lines else len(header[i])
              for i in range(3)]
    fmt = f"{{:<{widths[0]}}}  {{:<{widths[1]}}}  {{:>{widths[2]}}}  {{}}"
    out = [fmt.format(*header), fmt.format(*("-" * w for w in widths), "-----")]
    out += [fmt.format(*line) for line in lines]
    graded = [r for r in rows if r["max_score"]]
    if graded:
        mean = sum(r["score"] / r["max_score"] for r in graded) / len(graded)
        out.append(f"{len(rows)} submissions graded; mean {100 * mean:.0f}% of the points; "
                   f"{sum(1 for r in rows if r['error'])} with an error noted")
    return "\n".join(out)


def _progress_printer(stream):
    tty = stream.isatty()

    def progress(done, total, row, seconds):
        name = _short(Path(row["submission"]).name, 40)
        flag = "  (error noted)" if row["error"] else ""
        text = (f"[{done}/{total}] {name}: {row['score']:g}/{row['max_score']:g} "
                f"in {seconds:.1f} s{flag}")
        if tty:
            stream.write("\r\x1b[K" + text + ("\n" if done == total else ""))
        else:
            stream.write(text + "\n")
        stream.flush()

    return progress


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m helpers.grade",
        description="Grade submitted lesson notebooks: each runs in its own fresh kernel on a "
                    "scratch copy, and every exercise function is checked on hidden cases. "
                    "WARNING: this runs the submitted code with your rights; grade untrusted "
                    "submissions inside a container or a throwaway VM.")
    parser.add_argument("submissions", nargs="*", metavar="SUBMISSION",
                        help="a notebook (.ipynb, any name) or a folder searched for notebooks")
    parser.add_argument("--json", metavar="FILE", help="write the gradebook as JSON")
    parser.add_argument("--csv", metavar="FILE", help="write the gradebook as CSV")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time limit per notebook (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="grade N notebooks at once (default 1)")
    parser.add_argument("--run-all", action="store_true",
                        help="run every cell, not only up to the last exercise (slower; also "
                             "reports a crash or hang further down; the grades are the same)")
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error(f"--timeout must be positive, got {args.timeout:g}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        submissions = collect(args.submissions)
    except UsageError as exc:
        parser.error(str(exc))
    for option, target in (("--json", args.json), ("--csv", args.csv)):
        if target and not Path(target).resolve().parent.is_dir():
            parser.error(f"{option} {target}: the folder {Path(target).parent} does not exist")
    print(f"grading {len(submissions)} submission(s), {args.jobs} at a time, "
          f"time limit {args.timeout:g} s each", file=sys.stderr)
    try:
        rows = _run(_grade_all(submissions, args.timeout, args.jobs,
                               _progress_printer(sys.stderr), args.run_all))
    except KeyboardInterrupt:
        print("\ninterrupted: the kernels were stopped; no gradebook written", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        # nbclient's exit hooks for an interrupted notebook would only print tracebacks;
        # the kernels stop by themselves once their parent, this process, is gone.
        os._exit(130)
    print(summary_table(rows))
    if args.json:
        write_json(rows, args.json)
    if args.csv:
        write_csv(rows, args.csv)
    return 0
