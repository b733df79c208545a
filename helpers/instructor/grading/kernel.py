"""What runs inside the grading kernel: grading one exercise function where it stands.

The grader inserts, right after each exercise cell of a submission, a cell that
calls :func:`capture`. It grades the function the exercise cell just bound --
before the lesson's check cell can rebind the name -- on fresh hidden cases, and
appends the result to a file, so that whatever was graded survives a kernel that
later dies or hangs.

While the learner's function runs, a :class:`ReferenceWatch` notes every call into
the course's own answer to that exercise: its reference implementation (however
the learner reached it: an import, ``importlib``, the function the check handed
back, the catalogue), a private helper of :mod:`helpers.reference`, or the checks'
machinery. Such a function earns no points. The lesson's other functions (say
``scaled_dot_product_attention`` in lesson 04) may be used freely.

This module imports only the standard library at the top: the kernel pays for
numpy and the catalogue only when a cell calls in.
"""

import json
import sys
import zlib
from pathlib import Path


def exercise_seed(seed, name):
    """The seed of one exercise's hidden cases in a grading run seeded with ``seed``."""
    return [int(seed), zlib.crc32(name.encode("utf-8"))]


def _append(path, record):
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def read_records(path):
    """The records :func:`capture` appended to ``path``, in order (none if it has no file)."""
    records = []
    if Path(path).exists():
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                pass   # a line cut short by a kill
    return records


# ----------------------------------------------------------------- the watch
def _course_files():
    """``({files of helpers.reference}, {files of the checks' machinery})`` as code objects name them."""
    import helpers.checking
    import helpers.checking.deadline
    import helpers.checks
    import helpers.exercises
    import helpers.reference

    machinery = {helpers.checks.__file__}
    machinery |= {str(p) for p in Path(helpers.checking.__file__).parent.glob("*.py")}
    # The time limit's timer fires inside the learner's function: it stops it, it answers nothing.
    machinery.discard(helpers.checking.deadline.__file__)
    machinery |= {str(p) for p in Path(helpers.exercises.__file__).parent.glob("*.py")}
    reference = {str(p) for p in Path(helpers.reference.__file__).parent.glob("*.py")}
    return reference, machinery


class ReferenceWatch:
    """Notes calls into the course's own answer while a learner's function runs.

    Functions the case itself passes in (lesson 07's ``f`` for ``numerical_gradient``)
    are the learner's to call, wherever they are defined.

    Parameters
    ----------
    exercise : helpers.checking.Exercise

    Attributes
    ----------
    used : list of str
        What was called, e.g. ``["helpers.reference.softmax"]`` (unique, in order).
    stopped : bool
        Whether the checks' per-case time limit stopped the function (an endless loop?).
    """

    def __init__(self, exercise):
        reference = exercise.reference
        while hasattr(reference, "func"):          # a functools.partial
            reference = reference.func
        reference = getattr(reference, "__wrapped__", reference)
        self._reference_code = getattr(reference, "__code__", None)
        self._reference_files, self._machinery = _course_files()
        self._internal = self._machinery | self._reference_files
        self._hook = self._on_event                # one bound method, to compare with `is`
        self._given = set()                        # code of the functions the case passes in
        self.used = []
        self.stopped = False

    def _note(self, frame):
        code = frame.f_code
        where = frame.f_globals.get("__name__", "?")
        if where.startswith("helpers.reference."):      # helpers.reference.attention -> helpers.reference
            where = "helpers.reference"
        label = f"{where}.{getattr(code, 'co_qualname', code.co_name)}"
        if label not in self.used:
            self.used.append(label)

    def _on_event(self, frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if code in self._given:                    # e.g. lesson 07's f for numerical_gradient
            return
        if code is self._reference_code:           # the exercise's reference, by any route
            self._note(frame)
            return
        private = code.co_filename in self._reference_files and code.co_name.startswith("_")
        if private or code.co_filename in self._machinery:
            caller = frame.f_back
            if caller is None or caller.f_code.co_filename not in self._internal:
                self._note(frame)                  # called from outside the course's answers

    def wrap(self, fn):
        """``fn``, watched while it runs (the profile hook is this thread's only)."""
        from helpers.checking.deadline import TimeLimit

        def watched(*args, **kwargs):
            self._given = {getattr(a, "__code__", None) for a in (*args, *kwargs.values())}
            previous = sys.getprofile()
            sys.setprofile(self._hook)
            stopped = False
            try:
                return fn(*args, **kwargs)
            except TimeLimit:
                # (raised by the timer, perhaps inside this hook: Python then switches the hook
                # off. The case fails: nothing it computed unwatched earns a point.)
                self.stopped = stopped = True
                raise
            finally:
                if (sys.getprofile() is not self._hook and not stopped
                        and "sys.setprofile" not in self.used):
                    self.used.append("sys.setprofile")   # switched the watch off
                sys.setprofile(previous)
        return watched


# ----------------------------------------------------------------- grading
def grade_function(name, fn, seed=None):
    """Run ``fn`` on the exercise's hidden cases, watched; return a JSON-able record.

    Each case runs under the checks' per-case time limit (``Exercise.time_limit``, as the
    notebook's check): a function that never returns fails that case, and only that case.
    ``seed``: the grading run's seed (None: the catalogue's fixed hidden cases).
    Keys: ``passed``, ``total``, ``not_attempted``, ``failures`` (messages),
    ``used`` (calls into the course's answer, see :class:`ReferenceWatch`), ``stopped``
    (whether the time limit stopped it on some case).
    """
    from helpers.checking import evaluate
    from helpers.exercises import EXERCISES

    exercise = EXERCISES[name]
    cases = exercise.cases(hidden=True, seed=None if seed is None else exercise_seed(seed, name))
    watch = ReferenceWatch(exercise)
    report = evaluate(exercise, watch.wrap(fn), cases, catalogue=EXERCISES,
                      time_limit=exercise.time_limit)
    return {"passed": report.passed, "total": report.total, "not_attempted": report.not_attempted,
            "failures": list(report.failures), "used": list(watch.used),
            "stopped": watch.stopped}


def capture(name, cell_number, namespace, results_path, seed):
    """Grade the exercise function ``name`` as it stands right now in ``namespace``.

    Runs in the grader cell inserted after the exercise cell (number
    ``cell_number`` of the submission). Appends JSON lines to ``results_path``:
    one saying the evaluation started (so a kernel that dies while grading is
    reported), then the result.

    A function the time limit had to stop (it never returns, on some hidden case) is
    replaced in ``namespace`` by the course's reference, as the notebook's check does for
    an exercise not attempted: the lesson's later cells that call it (lesson 07's gradient
    checks call ``numerical_gradient``) run on, so it costs only its own exercise's points.
    """
    fn = namespace.get(name)
    record = {"exercise": name, "cell": cell_number}
    if not callable(fn):
        _append(results_path, dict(record, status="undefined"))
        return
    _append(results_path, dict(record, status="evaluating"))
    try:
        record.update(status="graded", **grade_function(name, fn, seed))
    except BaseException as exc:   # even SystemExit raised by the learner's function
        record.update(status="crashed", message=f"{type(exc).__name__}: {exc}")
    if record.get("stopped"):
        from helpers.exercises import EXERCISES
        namespace[name] = EXERCISES[name].reference
        record["replaced"] = True
    _append(results_path, record)


def capture_source(name, cell_number, results_path, seed):
    """The source of the grader cell that calls :func:`capture`."""
    return (f"__import__('helpers.instructor.grading.kernel', fromlist=['_']).capture("
            f"{name!r}, {cell_number}, globals(), {str(results_path)!r}, {int(seed)})")


def hidden_row(name, fn, seed=None):
    """The grader's verdict on one exercise function, as a row of :func:`~.scoring.exercise_row`.

    What nbgrader's hidden tests (:func:`hidden_test`) and Otter's
    (:mod:`helpers.instructor.otter`) score: ``fn`` graded on the hidden cases of the run
    seeded with ``seed`` (None: the catalogue's fixed ones), watched. ``fn`` is what the
    name holds after the notebook's check line: the learner's function, the reference the
    check handed back when the exercise was not attempted (0 points, and the feedback
    says so), or None when the notebook never defined it.

    Returns
    -------
    dict
        ``{"points", "max_points", "passed", "feedback"}``.
    """
    from helpers.exercises import EXERCISES

    from .scoring import exercise_row

    if fn is None:
        return exercise_row(name, [], problem=None)
    if fn is EXERCISES[name].reference:
        row = exercise_row(name, [], problem=None)
        row["feedback"] = f"{name}: not attempted (the check handed back the course's own {name})"
        return row
    record = {"exercise": name, "status": "graded"}
    try:
        record.update(grade_function(name, fn, seed))
    except BaseException as exc:   # even SystemExit raised by the learner's function
        record.update(status="crashed", message=f"{type(exc).__name__}: {exc}")
    return exercise_row(name, [record], problem=None)


def hidden_test(name, fn):
    """nbgrader's hidden test of one exercise (in the solution notebooks' check cells).

    Runs after the notebook's check line, so ``fn`` is the learner's function when
    the check passed, or the reference the check handed back when the exercise
    was not attempted. Raises AssertionError, with the grader's feedback, unless
    ``fn`` is the learner's own and passes every hidden case. The hidden cases are
    the catalogue's fixed ones, or drawn from ``$COURSE_GRADER_SEED`` when it is set.
    """
    import os

    seed = os.environ.get("COURSE_GRADER_SEED")
    row = hidden_row(name, fn, int(seed) if seed else None)
    if not row["passed"]:
        raise AssertionError(row["feedback"])
