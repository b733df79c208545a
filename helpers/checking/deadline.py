"""Stopping a learner's function that runs too long (an endless loop, say).

:func:`call_with_time_limit` calls the function on the thread that asks, and stops it
after a number of seconds by raising :class:`TimeLimit` inside it:

- on the main thread of a POSIX process (a Jupyter or Colab kernel, a script), with a
  ``SIGALRM`` timer (:func:`signal.setitimer`): the function runs at full speed. A timer
  already running (pytest-timeout's, say) is put back afterwards with the time it had
  left, less the time the call took;
- elsewhere (another thread, Windows, or a timer already running that is due first), with
  a trace function (:func:`sys.settrace`) that looks at the clock on every line the
  function runs: slower, but it needs no signal, and no second thread is started, so none
  is left running.

Either way the function is stopped between two Python steps: a single long NumPy call is
not interrupted, only what follows it. :class:`TimeLimit` is a ``BaseException`` (like
``KeyboardInterrupt``), so a learner's ``except Exception:`` does not swallow it. On the
signal path the timer keeps firing until the function gives up, even through a bare
``except:``; on the trace path a bare ``except:`` that swallows it ends the tracing (Python
switches a trace function off once it raises), so such a function is not stopped there.

While a debugger (or a coverage tool) traces the thread, there is no limit: a function
paused at a breakpoint must not be stopped.
"""

import signal
import sys
import threading
import time


class TimeLimit(BaseException):
    """Raised inside a function that ran past its time limit."""


#: How often the timer fires again after the limit, in case the function caught TimeLimit.
_REPEAT = 0.05


def call_with_time_limit(fn, args, kwargs, seconds):
    """``fn(*args, **kwargs)``, stopped with :class:`TimeLimit` after ``seconds``.

    Parameters
    ----------
    fn : callable
    args : tuple
    kwargs : dict
    seconds : float or None
        None: no limit.

    Returns
    -------
    What ``fn`` returned.

    Raises
    ------
    TimeLimit
        When ``fn`` was still running after ``seconds``.
    """
    if seconds is None or _active.on or _debugged():   # no limit, one already, or a debugger
        return fn(*args, **kwargs)
    _active.on = True
    try:
        if _can_use_a_timer(seconds):
            return _with_timer(fn, args, kwargs, seconds)
        return _with_trace(fn, args, kwargs, seconds)
    finally:
        _active.on = False


def _debugged():
    """Whether a debugger or coverage tool watches this thread (then no limit: it may pause)."""
    monitoring = getattr(sys, "monitoring", None)              # Python 3.12+
    return sys.gettrace() is not None or (
        monitoring is not None and monitoring.get_tool(monitoring.DEBUGGER_ID) is not None)


class _Active(threading.local):
    on = False        # a limited call is running on this thread


_active = _Active()


def _can_use_a_timer(seconds):
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    return left == 0.0 or left > seconds + 1.0     # no timer running, or one not due before ours


def _with_timer(fn, args, kwargs, seconds):
    state = {"running": True, "expired": False}

    def on_alarm(signum, frame):
        if state["running"]:
            state["expired"] = True
            raise TimeLimit()

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    left, interval = signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT)   # returns the old timer
    try:
        result = fn(*args, **kwargs)
    finally:
        state["running"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if left:                  # put the timer that was running back, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - started), 1e-3), interval)
    if state["expired"]:          # it caught TimeLimit and returned anyway, too late
        raise TimeLimit()
    return result


def _with_trace(fn, args, kwargs, seconds):
    end = time.monotonic() + seconds
    state = {"expired": False}

    def on_line(frame, event, arg):
        if time.monotonic() > end:
            state["expired"] = True
            raise TimeLimit()
        return on_line

    def on_call(frame, event, arg):
        return on_line

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        result = fn(*args, **kwargs)
    finally:
        sys.settrace(previous)
    if state["expired"]:
        raise TimeLimit()
    return result
