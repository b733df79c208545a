"""The machinery behind every exercise check (and the grader).

An :class:`Exercise` says what the learner must write: its name, the reference
implementation, a set of test cases and a catalogue of known mistakes. A
learner's function is run on every case and compared with the reference. When
it disagrees, we try each known mistake on the same input: if the learner's
answer matches a mistake's answer, the learner is told *that* mistake in plain
words ("K was computed with W_q"). Otherwise they are told what their answer
looks like, when it has a pattern that can be seen (transposed, a constant factor,
a float mask where a boolean one is asked, ...: :mod:`.describe`), or else a
generic but concrete difference (wrong shape, NaN, largest difference and where:
:mod:`.compare`). In a notebook each case has a time limit (:mod:`.deadline`); a
function that calls another exercise's wrong function is told so (:mod:`.blame`).

Any correct implementation passes: only the returned values are compared, with
the tolerances stated on the exercise.

**float32, one policy for every exercise, check and grader.** The inputs are float64 and
so is every answer: a float32 answer, or a float64 one computed in float32 somewhere
(whose values agree only to float32's precision), is told so with one message ("... only to
float32's precision ... compute in float64 throughout"), on every case alike. Why not
accept it: the lessons' later cells use the learner's function and state results to 1e-9 or
1e-12 (gradient checks, RoPE's relative-position identity, a padded batch equal to each
sentence alone), which float32 cannot keep. Its logic is right, though: the notebook check
stops at it, and the grader takes **one** case off for it, however many cases show it, as it
does for right values reached a way the exercise forbids (``inspect``). A catalogued
mistake computed in float32 is still named (matched within float32's precision), with the
float32 note added.
"""

import copy
import functools
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .blame import blame_helper
from .compare import Float32Only, agrees, describe_case, difference, parameter_names
from .deadline import TimeLimit, call_with_time_limit
from .describe import describe
from .explain import FILLS, explain_raised, leave_filled_memory, unwritten_entries, what


class ExerciseError(AssertionError):
    """A learner's function gave a wrong answer; the message says what is wrong.

    In Jupyter it is shown as its message alone, without a traceback into the
    check's own code (IPython calls ``_render_traceback_`` when it exists).
    """

    def _render_traceback_(self):
        return ["\x1b[31mNot right yet.\x1b[0m " + str(self)]


@dataclass
class Case:
    """One input to try: positional and keyword arguments, and a label for messages."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    label: str = ""


@dataclass
class Mistake:
    """A known wrong way to solve an exercise, and what to tell a learner who made it.

    ``fn`` takes the same arguments as the exercise and returns what the mistaken
    code would return; ``message`` explains the mistake in the learner's terms,
    without giving away the solution code.

    ``like`` is for a mistake whose code has more than one possible answer on the same
    input (which of several tied values ``np.argpartition`` keeps is up to NumPy's
    algorithm, and that differs between NumPy versions and processors): ``like(got, case)``
    returns the one of the mistake's answers that ``got`` would be, or None when ``got``
    cannot be any of them, and ``got`` is compared with that instead of with ``fn``'s
    answer. ``fn`` still returns one of the mistake's answers: it tells on which cases the
    mistake shows (those where it differs from the reference).
    """

    message: str
    fn: Callable
    like: Optional[Callable] = None


@dataclass
class Exercise:
    """Everything needed to check (or grade) one exercise function.

    Attributes
    ----------
    name : str
        The function's name, e.g. ``"project_qkv"``.
    lesson : str
        The lesson's file stem, e.g. ``"01_qkv_projections"``.
    reference : callable
        The correct implementation (from :mod:`helpers.reference`).
    make_cases : callable (rng, hidden) -> list of Case
        Builds the inputs. ``hidden=True`` gives the grader's cases, which differ
        from the ones the notebook's visible check uses.
    mistakes : list of Mistake
        Tried in order on a failing case; the first whose output matches wins.
    outputs : tuple of str
        Names of the returned values when the function returns a tuple
        (e.g. ``("Q", "K", "V")``); ``("result",)`` for a single value.
    rtol, atol : float
        Tolerances of ``numpy.allclose`` when comparing with the reference.
    validate : callable (got, case) -> str or None, optional
        Run on an answer whose values already match the reference; returns a
        message when something beyond the values is wrong (e.g. a mask that
        must be boolean), else None.
    inspect : callable (fn) -> str or None, optional
        Run once on a function whose values are right on every case; returns a
        message when *how* it works breaks the exercise's rules (e.g. it builds
        the whole score grid where only blocks are allowed), else None.
    float64_rtol : float or None
        The largest difference a float64 computation may show, relative to the
        largest expected entry. A float64 answer further off, but within float32's
        precision, was computed in float32 somewhere: it is told so, on every case
        alike (the float32 policy above; see
        :func:`helpers.checking.compare.difference`). None: not judged (for an
        exercise whose float64 answers legitimately differ more, e.g. by cancellation).
    time_limit : float
        Seconds the notebook's check lets the learner's function run on one case
        before stopping it (``inspect`` gets four times as long). Generous: a
        correct function takes a small fraction of it.
    """

    name: str
    lesson: str
    reference: Callable
    make_cases: Callable
    mistakes: list = field(default_factory=list)
    outputs: tuple = ("result",)
    rtol: float = 1e-6
    atol: float = 1e-9
    validate: Optional[Callable] = None
    inspect: Optional[Callable] = None
    time_limit: float = 5.0
    float64_rtol: Optional[float] = 1e-9

    def cases(self, hidden=False, seed=None):
        """The visible (``hidden=False``) or grading (``hidden=True``) cases.

        ``seed`` (anything ``numpy.random.default_rng`` takes) draws other cases:
        the grader draws fresh hidden cases for each grading run. None: the fixed
        cases (seed 0 visible, 2718 hidden).
        """
        if seed is None:
            seed = 2718 if hidden else 0
        return self.make_cases(np.random.default_rng(seed), hidden)


@dataclass
class Report:
    """What running a function over an exercise's cases found."""

    name: str
    passed: int = 0
    total: int = 0
    not_attempted: bool = False
    failures: list = field(default_factory=list)   # one message per failing case
    notes: list = field(default_factory=list)      # said with a pass (e.g. it is slow)

    @property
    def ok(self):
        return not self.not_attempted and self.total > 0 and self.passed == self.total


# ----------------------------------------------------------------- running a function
_UNFINISHED = object()   # what _failure returns when fn raised NotImplementedError


def _quietly(fn, args=(), kwargs=None, time_limit=None):
    """``fn(*args, **kwargs)`` with NumPy warnings silenced, stopped after ``time_limit`` seconds."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return call_with_time_limit(fn, args, kwargs or {}, time_limit)


def _call_on_copies(fn, case, time_limit=None, prefill=None, fill=FILLS[0]):
    """Call ``fn`` on private copies of the case's inputs (see :func:`_quietly`).

    ``prefill``: an expected answer (array, or tuple/dict of arrays). Just before the call,
    buffers of the sizes of its arrays (and of the inputs') get every byte set to ``fill`` and
    freed, so that an ``np.empty``/``np.empty_like`` inside ``fn`` most likely gets one of them
    back: entries it never writes then hold ``fill`` bytes (NaN) instead of passing by luck as zeros
    (:func:`helpers.checking.explain.leave_filled_memory`).

    Returns
    -------
    result
        What ``fn`` returned.
    args, kwargs
        The copies ``fn`` was given, as they are after the call (to see whether
        ``fn`` changed its inputs in place).
    """
    args = copy.deepcopy(case.args)
    kwargs = copy.deepcopy(case.kwargs)
    if prefill is not None:
        leave_filled_memory([prefill, args, kwargs], fill)
    return _quietly(fn, args, kwargs, time_limit), args, kwargs


def _unchanged(old, new):
    """Whether ``new`` holds what ``old`` held: arrays, and arrays inside dicts, lists and tuples."""
    if isinstance(old, np.ndarray):
        return (isinstance(new, np.ndarray) and new.shape == old.shape and new.dtype == old.dtype
                and np.array_equal(new, old, equal_nan=old.dtype.kind in "fc"))
    if isinstance(old, dict):
        return (isinstance(new, dict) and list(new) == list(old)
                and all(_unchanged(old[k], new[k]) for k in old))
    if isinstance(old, (list, tuple)):
        return (type(new) is type(old) and len(new) == len(old)
                and all(_unchanged(a, b) for a, b in zip(old, new)))
    return True            # numbers, strings, functions: not changed in place


def _inputs(exercise, case):
    """``[(name, value), ...]`` of the case's inputs, positional ones named as the reference names them."""
    names = parameter_names(exercise.reference, len(case.args))
    return list(zip(names, case.args)) + list(case.kwargs.items())


def changed_inputs(exercise, case, args, kwargs):
    """Names of the case's inputs (arrays, or dicts or lists of them) that differ after a call.

    ``args``/``kwargs`` are the copies the function was given, as they are after the call.
    """
    after = list(args) + [kwargs.get(k) for k in case.kwargs]
    return [name for (name, old), new in zip(_inputs(exercise, case), after) if not _unchanged(old, new)]


def _changed_message(exercise, case, changed):
    """What to tell a function that changed its inputs ``changed`` (their names) in place."""
    dicts = [name for name, value in _inputs(exercise, case) if name in changed and isinstance(value, dict)]
    if dicts:
        how = (f"assigning `{dicts[0]}[key] = ...` (or `.update`, `.pop`, `+=` on an entry) changes the "
               f"caller's dict; return a new dict instead, e.g. `{{**{dicts[0]}, key: value}}`")
    else:
        how = ("an operation such as `x -= ...` or `x /= ...` writes into the caller's array; "
               "compute into a new array instead")
    return (f"on input {describe_case(case)}: it changed its input {' and '.join(changed)} in place "
            f"({how}). Leave the inputs as they were.")


def _names(exercise):
    return exercise.outputs if len(exercise.outputs) > 1 else exercise.outputs[0]


def _answer_like(exercise, mistake, got, case, wrong, expected):
    """The mistake's answer to compare ``got`` with: ``wrong`` (``fn``'s), or ``like``'s (None: none).

    A ``like`` answer that is the right one (``got`` is wrong some other way) is None too.
    """
    if mistake.like is None:
        return wrong
    wrong = _safely(mistake.like, got, case)
    if wrong is None or (expected is not None and agrees(wrong, expected, exercise.rtol, exercise.atol,
                                                         False, exercise.float64_rtol)):
        return None
    return wrong


def diagnose(exercise, got, case, expected=None):
    """The message of the first known mistake whose output matches ``got``, or None.

    With ``expected`` (the reference's answer) given, a mistake whose answer on this case is
    the right one is passed over: it explains nothing here (a right-valued answer in the wrong
    dtype is not told "one key too many" because that mistake happens to be right on this
    case). A mistake matched only within float32's precision (the learner made it and computed
    in float32 too) is named with a note that says so, when its answer is not within float32's
    precision of the expected one.
    """
    loose = None
    for mistake in exercise.mistakes:
        try:
            wrong = _call_on_copies(mistake.fn, case)[0]
        except Exception:  # a mistake that cannot run on this case says nothing about it
            continue
        if expected is not None and agrees(wrong, expected, exercise.rtol, exercise.atol, False,
                                           exercise.float64_rtol):
            continue       # this mistake gives the right answer on this case: it explains nothing here
        wrong = _answer_like(exercise, mistake, got, case, wrong, expected)
        if wrong is None:
            continue
        if agrees(got, wrong, exercise.rtol, exercise.atol, False, exercise.float64_rtol):
            return mistake.message
        if (loose is None and expected is not None
                and agrees(got, wrong, exercise.rtol, exercise.atol, True, exercise.float64_rtol)
                and not agrees(wrong, expected, exercise.rtol, exercise.atol, True, exercise.float64_rtol)):
            loose = mistake.message
    if loose is not None:
        return (f"{loose} (Also, it computes in float32 somewhere: its values match that mistake only "
                f"to float32's precision. Compute in float64 throughout.)")
    return None


def _in_place_mistake(exercise, got, case, changed):
    """The message of a known mistake that changes the same inputs in place and returns ``got``."""
    for mistake in exercise.mistakes:
        try:
            wrong, args, kwargs = _call_on_copies(mistake.fn, case)
        except Exception:
            continue
        wrong = _answer_like(exercise, mistake, got, case, wrong, None)
        if (wrong is not None and changed_inputs(exercise, case, args, kwargs) == changed
                and agrees(got, wrong, exercise.rtol, exercise.atol, False,
                           exercise.float64_rtol)):
            return f"on input {describe_case(case)}: {mistake.message}"
    return None


# ----------------------------------------------------------------- evaluating
def evaluate(exercise, fn, cases=None, stop_at_first_failure=False, blame_helpers=True,
             catalogue=None, time_limit=None):
    """Run ``fn`` on the exercise's cases and compare with the reference.

    Parameters
    ----------
    exercise : Exercise
    fn : callable
        The learner's function.
    cases : list of Case, optional
        Defaults to the visible cases.
    stop_at_first_failure : bool
        Stop after the first wrong case (the notebook check does; the grader
        does not, for partial credit).
    blame_helpers : bool
        When ``fn`` fails, look for another exercise function it calls (e.g. the
        learner's own ``softmax`` inside ``scaled_dot_product_attention``) that
        fails its own check, and name it (see :func:`helpers.checking.blame.blame_helper`).
    catalogue : dict of str -> Exercise, optional
        The exercises such a helper may belong to (:data:`helpers.exercises.EXERCISES`:
        this package never imports it, its callers pass it). None: no helper is blamed.
    time_limit : float, optional
        Seconds ``fn`` may run on one case (``exercise.inspect`` gets four times as
        long) before it is stopped and the case fails (see
        :mod:`helpers.checking.deadline`). None: no limit (the grader has its own).

    Returns
    -------
    Report
    """
    cases = exercise.cases() if cases is None else cases
    report = Report(exercise.name, total=len(cases))
    if not callable(fn):
        report.failures.append(f"{exercise.name} is not a function (it is a {type(fn).__name__})")
        return report
    unfinished, right = [], []   # cases on which fn raised NotImplementedError, and those it got right
    precision = []               # messages of cases right only to float32's precision
    for case in cases:
        message = _failure(exercise, fn, case, time_limit, right)
        if message is _UNFINISHED:
            unfinished.append(case)
        elif message is None:
            report.passed += 1
            right.append(case)
        elif isinstance(message, Float32Only):
            precision.append(message)
            if stop_at_first_failure:
                break
        else:
            report.failures.append(message)
            if stop_at_first_failure:
                break
    if precision:                # right values in float32: one case off, however many show it
        report.passed += len(precision) - 1
        report.failures.append(precision[0])
    if unfinished and len(unfinished) == len(cases):
        report.not_attempted = True      # the untouched stub: it raises on every input
        return report
    report.failures += [
        f"on input {describe_case(case)} it raised NotImplementedError: it works on other "
        f"inputs, but this case is not written yet" for case in unfinished]
    if not report.failures and exercise.inspect is not None:
        message = _inspection(exercise, fn, time_limit, report.notes)
        if message:
            report.passed -= 1           # right values, but not the way the exercise asks
            report.failures.append(message)
    if report.failures and blame_helpers:
        blame = blame_helper(exercise, fn, cases, catalogue or {},
                             functools.partial(evaluate, time_limit=time_limit))
        if blame:
            report.failures[0] = blame
    return report


def _inspection(exercise, fn, time_limit, notes=None):
    """``exercise.inspect(fn)``'s message, or None.

    When the inspection does not finish in time (the notebook's limit; the grader has none,
    so it runs it to the end), the function is not judged on it: its values are right, and
    a check must not reject for slowness what the grader accepts. A note saying so is
    appended to ``notes``.
    """
    limit = None if time_limit is None else 4 * time_limit
    try:
        return _quietly(exercise.inspect, (fn,), time_limit=limit)
    except Exception as exc:    # fn raised on the inspection's larger input
        return (f"gives the right values on every case, but on the larger input the check of how it "
                f"works runs it on, it raised {type(exc).__name__}: {exc}")
    except TimeLimit:
        if notes is not None:
            notes.append(f"Its values are right. The check of how it works runs it on larger inputs "
                         f"and stopped it after {limit:g} s, so that part was not judged: it is slow "
                         f"(a Python loop over small blocks or single rows is), which is fine at this "
                         f"lesson's sizes.")
        return None


def _failure(exercise, fn, case, time_limit=None, right=()):
    """What is wrong with ``fn`` on one case: a message, None if right, or ``_UNFINISHED``.

    ``right``: the cases ``fn`` got right before this one (for :func:`describe`).

    Whatever ``fn`` returns (a list of arrays, a dict, an object array, a generator ...),
    judging it never raises: a return value the comparison cannot handle is a wrong answer
    with a message that says what came back (:func:`helpers.checking.explain.what`), and a
    description that fails is left out (the plain difference is said instead).
    """
    expected = _call_on_copies(exercise.reference, case)[0]
    try:
        got, args, kwargs = _call_on_copies(fn, case, time_limit, prefill=expected)
    except NotImplementedError:
        return _UNFINISHED
    except TimeLimit:
        return (f"on input {describe_case(case)}: it did not return within {time_limit:g} s, so "
                f"the check stopped it. Is there a loop that never ends (a `while` whose counter "
                f"or iterator does not move on every pass, e.g. an `it.iternext()` that is skipped)?")
    except Exception as exc:  # the learner's code raised: say what, where, and which input made it
        return f"on input {describe_case(case)} {explain_raised(exercise, fn, case, exc, time_limit, right)}"
    changed = _safely(changed_inputs, exercise, case, args, kwargs) or []
    if changed:
        return (_safely(_in_place_mistake, exercise, got, case, changed)
                or _changed_message(exercise, case, changed))
    try:
        diff = difference(got, expected, _names(exercise), exercise.rtol, exercise.atol,
                          False, exercise.float64_rtol)
    except Exception:                    # a return value our comparison cannot take
        return (f"on input {describe_case(case)}: it returned {what(got)}, which cannot be compared "
                f"with what is expected, {what(expected)}.")
    values_wrong = diff is not None
    if diff is None and exercise.validate is not None:
        try:
            diff = exercise.validate(got, case)
        except Exception:
            diff = (f"the values are right, but it returned {what(got)} where {what(expected)} is "
                    f"expected, and the rest of the check cannot read it.")
    if diff is None:
        return None
    if isinstance(diff, Float32Only):    # float32-close: a catalogued mistake, or right but for float32
        told = _safely(diagnose, exercise, got, case, expected)
        if told:
            return f"on input {describe_case(case)}: {told}"
        return Float32Only(f"on input {describe_case(case)}: {diff}")
    if not values_wrong:                 # the values are right; validate's message says what is not
        return f"on input {describe_case(case)}: {_safely(diagnose, exercise, got, case, expected) or diff}"
    unwritten = _safely(unwritten_entries, exercise, fn, case, got, expected, _call_on_copies, time_limit)
    if unwritten:
        return f"on input {describe_case(case)}: {unwritten}"

    def run(other, trial):               # describe runs fn (other=None) or the reference again
        try:
            return _call_on_copies(fn if other is None else other, trial, time_limit)[0]
        except (Exception, TimeLimit):
            return None

    told = (_safely(diagnose, exercise, got, case, expected)
            or _safely(describe, exercise, run, got, expected, case, right, fn) or diff)
    return f"on input {describe_case(case)}: {told}"


def _safely(function, *args):
    """``function(*args)``, or None if it raises: a diagnosis that cannot run says nothing."""
    try:
        return function(*args)
    except Exception:
        return None


# ----------------------------------------------------------------- in a notebook
def check(exercise, fn, catalogue=None):
    """Check a learner's function in a lesson; return the function to use from now on.

    ``catalogue``: the exercises a helper ``fn`` calls may belong to (see :func:`evaluate`).

    - not attempted yet (it raises ``NotImplementedError``): print a notice and
      return the reference implementation, so the rest of the lesson still runs;
    - wrong: raise :class:`ExerciseError` saying what is wrong;
    - right: print a pass and return the learner's own function.
    """
    report = evaluate(exercise, fn, stop_at_first_failure=True, catalogue=catalogue,
                      time_limit=exercise.time_limit)
    if report.not_attempted:
        print(f"○ {exercise.name}: not attempted yet. The lesson continues with the "
              f"reference {exercise.name} for now; come back, fill in the exercise cell "
              f"and run this check again.")
        return exercise.reference
    if report.failures:
        raise ExerciseError(f"{exercise.name} {report.failures[0]}")
    notes = "".join(f" {note}" for note in report.notes)
    print(f"✓ {exercise.name} passed all {report.total} checks. "
          f"From here on the lesson uses your {exercise.name}.{notes}")
    return fn
