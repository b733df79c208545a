"""The notebook's check stops a learner's function that does not return, and says so.

The function here is one the course really met: a central-difference loop whose
``it.iternext()`` sits inside ``if verbose:``, so the loop never moves on. It is stopped
on the main thread (a SIGALRM timer), on another thread (a trace deadline), and in a real
Jupyter kernel, both ways; no thread is left running, and a function that swallows the
stop with ``except Exception`` is stopped all the same.
"""

import dataclasses
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from helpers.checking import Case, Exercise, ExerciseError, check, evaluate
from helpers.checking.deadline import TimeLimit, call_with_time_limit
from helpers.exercises import EXERCISES

ROOT = Path(__file__).resolve().parents[1]

HANGING = '''
def numerical_gradient(f, x, eps=1e-6, verbose=False):
    grad = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"], op_flags=["readwrite"])
    while not it.finished:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        fp = f(x)
        x[i] = old - eps
        fm = f(x)
        x[i] = old
        grad[i] = (fp - fm) / (2 * eps)
        if verbose:
            print(i, grad[i])
            it.iternext()
    return grad
'''


def _hanging():
    namespace = {"np": np}
    exec(HANGING, namespace)
    return namespace["numerical_gradient"]


def _quick(exercise_name, seconds=0.5):
    """The exercise with a short time limit, so that the tests wait little."""
    return dataclasses.replace(EXERCISES[exercise_name], time_limit=seconds)


def test_a_function_that_never_returns_is_stopped_and_the_message_says_so():
    exercise = _quick("numerical_gradient")
    start = time.monotonic()
    with pytest.raises(ExerciseError) as error:
        check(exercise, _hanging())
    assert time.monotonic() - start < 5
    message = str(error.value)
    assert "did not return within 0.5 s" in message
    assert exercise.cases()[0].label in message               # the case it was on


def test_it_is_stopped_off_the_main_thread_too_and_no_thread_is_left():
    exercise = _quick("numerical_gradient")
    before = threading.active_count()
    found = {}

    def run():
        found["report"] = evaluate(exercise, _hanging(), stop_at_first_failure=True, time_limit=0.5)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive()
    assert "did not return within 0.5 s" in found["report"].failures[0]
    assert threading.active_count() == before


def test_a_right_function_is_not_stopped_and_its_result_kept():
    exercise = _quick("numerical_gradient", seconds=5)
    assert evaluate(exercise, exercise.reference, time_limit=5).ok


def _swallows(seconds):
    def stubborn():
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                while True:
                    pass
            except Exception:                   # a learner's catch-all: TimeLimit is not an Exception
                pass
        return "finished"
    return stubborn


def test_a_catch_all_except_exception_does_not_keep_it_running():
    start = time.monotonic()
    with pytest.raises(TimeLimit):
        call_with_time_limit(_swallows(10), (), {}, 0.3)
    assert time.monotonic() - start < 3


def test_a_bare_except_that_swallows_the_stop_is_stopped_again_on_the_main_thread():
    def very_stubborn():
        for _ in range(100):
            try:
                while True:
                    pass
            except BaseException:               # swallows even TimeLimit, once
                pass
        return "finished"

    start = time.monotonic()
    with pytest.raises(TimeLimit):
        call_with_time_limit(very_stubborn, (), {}, 0.2)
    assert time.monotonic() - start < 10


def test_no_limit_calls_the_function_as_it_is():
    assert call_with_time_limit(lambda a, b=1: a + b, (2,), {"b": 3}, None) == 5


def test_a_timer_already_running_is_put_back_and_the_alarm_handler_restored():
    handler = signal.getsignal(signal.SIGALRM)
    left_before = signal.getitimer(signal.ITIMER_REAL)[0]       # pytest-timeout's, if it runs one
    call_with_time_limit(lambda: None, (), {}, 1.0)
    with pytest.raises(TimeLimit):
        call_with_time_limit(_swallows(5), (), {}, 0.1)
    left_after = signal.getitimer(signal.ITIMER_REAL)[0]
    assert (left_after == 0.0) == (left_before == 0.0)
    assert left_after <= left_before
    assert signal.getsignal(signal.SIGALRM) is handler


def test_a_timer_of_our_own_running_is_put_back_with_the_time_it_had_left():
    previous = signal.signal(signal.SIGALRM, lambda *a: None)
    old = signal.setitimer(signal.ITIMER_REAL, 100.0)
    try:
        call_with_time_limit(lambda: None, (), {}, 1.0)
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 95.0 < left <= 100.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, *old)
        signal.signal(signal.SIGALRM, previous)


def test_the_check_of_how_it_works_has_a_time_limit_and_passing_values_pass_with_a_note():
    # the grader runs the inspection with no limit and accepts a slow right function:
    # the notebook's check must not reject it for its speed alone
    def slow_inspection(fn):
        while True:
            fn(1)

    exercise = Exercise(name="double", lesson="00", reference=lambda x: 2 * x,
                        make_cases=lambda rng, hidden: [Case((3.0,))], inspect=slow_inspection,
                        time_limit=0.1)
    report = evaluate(exercise, lambda x: 2 * x, time_limit=0.1)
    assert report.ok and "stopped it after 0.4 s, so that part was not judged" in report.notes[0]


# ------------------------------------------------------------ in a real kernel
KERNEL_CELLS = [
    f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
    "import numpy as np, threading\n"
    "from helpers.checks import check\n"
    "from helpers.exercises import EXERCISES\n"
    "EXERCISES['numerical_gradient'].time_limit = 0.5",
    HANGING,
    "numerical_gradient = check('numerical_gradient', numerical_gradient)",
    textwrap.dedent("""
        found = []
        def run():
            try:
                check('numerical_gradient', numerical_gradient)
            except Exception as exc:
                found.append(str(exc))
        worker = threading.Thread(target=run); worker.start(); worker.join(30)
        print('THREAD', worker.is_alive(), threading.active_count(), found)
    """),
]


def test_in_a_jupyter_kernel_it_is_stopped_on_the_main_thread_and_on_another():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in KERNEL_CELLS])
    start = time.monotonic()
    NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    assert time.monotonic() - start < 50
    main = nb.cells[2].outputs
    assert main and main[0].output_type == "error"
    assert "did not return within 0.5 s" in "".join(main[0].traceback)
    printed = "".join(o.get("text", "") for o in nb.cells[3].outputs)
    assert "THREAD False" in printed and "did not return within 0.5 s" in printed


def test_under_a_debugger_there_is_no_limit():
    def tracer(frame, event, arg):          # what pdb or a coverage tool installs
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        assert call_with_time_limit(lambda: (time.sleep(0.3), "done")[1], (), {}, 0.05) == "done"
    finally:
        sys.settrace(previous)
