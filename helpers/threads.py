"""How many threads NumPy's matrix products use while the course's helpers train and measure.

NumPy hands a matrix product to a BLAS library (OpenBLAS in NumPy's wheels), which splits
it over every core it sees. The course's models are small (32 to 128 columns): a second
thread saves less than it costs to start and wait for it, and on a busy machine the
threads fight the other programs for the cores. Lesson 08 beside two busy processes took
86-121 s on a 2-core machine with BLAS's own choice, and 16 s on one thread.

So the helpers that train (lessons 08-10: ``fit``'s loop and each lesson's ``train``,
:func:`on_one_thread`) and that measure (lessons 05, 06, 11: ``helpers.measure``) do their
work inside :func:`blas_threads`; outside it, NumPy uses as many threads as before, so
the learner's own code afterwards is not pinned.

    with blas_threads(1):
        loss = train_one_step(...)      # every product in here runs on one thread

Without ``threadpoolctl`` (a requirement of the course; Colab ships it) nothing is changed.
"""

import contextlib
import functools

#: The thread count the helpers use: the fastest for the course's sizes on every machine
#: measured, quiet or busy (``make bench``, section 5b).
FASTEST = 1


@functools.lru_cache(maxsize=None)
def _controller():
    """threadpoolctl's view of the thread pools loaded now (NumPy's BLAS), or None without it."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    import numpy  # noqa: F401  (its BLAS must be loaded to be found)
    return ThreadpoolController()


@contextlib.contextmanager
def blas_threads(count=FASTEST):
    """Within the ``with`` block, NumPy's BLAS uses at most ``count`` threads; after it, as before.

    Parameters
    ----------
    count : int >= 1
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"blas_threads: count must be a whole number >= 1, got {count!r}")
    controller = _controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=count, user_api="blas"):
        yield


def on_one_thread(function):
    """``function``, run inside :func:`blas_threads` each time it is called.

    For a lesson's training entry points (``train``, ...): their evaluations on held-out
    data run after ``fit``'s loop, on batches of hundreds of sentences, and are as slow
    with BLAS's own thread count on a busy machine (lesson 09: 90 s instead of 24 s).
    """
    @functools.wraps(function)
    def run(*args, **kwargs):
        with blas_threads():
            return function(*args, **kwargs)

    return run


def blas_thread_count():
    """How many threads NumPy's BLAS uses here and now (the largest of its pools), or None if unknown."""
    controller = _controller()
    if controller is None:
        return None
    counts = [pool["num_threads"] for pool in controller.info() if pool.get("user_api") == "blas"]
    return max(counts) if counts else None


def in_words(count):
    """``'1 BLAS thread'`` / ``'2 BLAS threads'`` / ``'an unknown number of BLAS threads'``."""
    if count is None:
        return "an unknown number of BLAS threads"
    return f"{count} BLAS thread{'' if count == 1 else 's'}"
