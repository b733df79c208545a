"""helpers/threads.py: the helpers that train and measure run on one BLAS thread, and only they.

The tests start from two BLAS threads (threadpoolctl raises the count above conftest.py's one),
so that "pinned inside, as before outside" can fail.
"""

import importlib
import inspect

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from helpers import measure, threads
from helpers.lessons.l08_training import model, training


@pytest.fixture
def two_threads():
    with threadpool_limits(limits=2, user_api="blas"):
        if threads.blas_thread_count() != 2:
            pytest.skip("this BLAS cannot run two threads here")
        yield


def test_inside_the_block_the_blas_uses_one_thread_and_after_it_as_many_as_before(two_threads):
    with threads.blas_threads(1):
        assert threads.blas_thread_count() == 1
    assert threads.blas_thread_count() == 2


def test_the_count_is_restored_when_the_work_raises(two_threads):
    with pytest.raises(ZeroDivisionError):
        with threads.blas_threads(1):
            1 / 0
    assert threads.blas_thread_count() == 2


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "1"])
def test_a_count_that_is_not_a_whole_number_from_1_is_refused_by_name(count):
    with pytest.raises(ValueError, match=r"blas_threads: count must be a whole number >= 1"):
        with threads.blas_threads(count):
            pass


@pytest.mark.parametrize("count, text", [(1, "1 BLAS thread"), (4, "4 BLAS threads"),
                                         (None, "an unknown number of BLAS threads")])
def test_a_thread_count_is_described_in_words(count, text):
    assert threads.in_words(count) == text


def test_what_median_time_times_runs_on_one_thread(two_threads):
    seen = []
    measure.median_time(lambda: seen.append(threads.blas_thread_count()), repeat=2, number=1, warmup=1)
    assert seen == [1, 1, 1]
    assert threads.blas_thread_count() == 2


def test_what_traced_peak_traces_runs_on_one_thread_and_is_counted_alone(two_threads):
    seen = []

    def work():
        seen.append(threads.blas_thread_count())
        return np.ones(100_000)                       # 800 000 bytes

    peak = measure.traced_peak(work)
    assert seen == [1]
    assert 800_000 <= peak < 800_000 + 4096           # the thread limit's own bytes are not counted


def test_the_measurements_say_which_thread_count_they_used(two_threads):
    assert measure.threads_note() == ("measured on 1 BLAS thread (NumPy uses 2 BLAS threads here "
                                      "outside the measurements)")


def test_the_course_training_loop_runs_on_one_thread_and_leaves_the_count_as_it_was(two_threads):
    seen = []

    def loss_and_grads(params, batch):
        seen.append(threads.blas_thread_count())
        return float(np.sum(params["w"] ** 2)), {"w": 2 * params["w"]}

    training.fit({"w": np.ones(3)}, loss_and_grads, lambda: None, steps=3, d_model=32)
    assert seen == [1, 1, 1]
    assert threads.blas_thread_count() == 2


def test_lesson_08s_entry_point_trains_through_that_loop(two_threads, monkeypatch):
    seen = []
    step = model.loss_and_grads

    def recording(*args, **kwargs):
        seen.append(threads.blas_thread_count())
        return step(*args, **kwargs)

    monkeypatch.setattr(model, "loss_and_grads", recording)
    training.train("coreference", steps=2)                 # the module's own: not the run's cache
    assert seen == [1, 1]
    assert threads.blas_thread_count() == 2


def test_a_function_on_one_thread_keeps_its_name_and_signature_and_restores_the_count(two_threads):
    def work(a, *, b=2):
        """Doc."""
        return threads.blas_thread_count(), a + b

    pinned = threads.on_one_thread(work)
    assert pinned(1, b=3) == (1, 4)
    assert threads.blas_thread_count() == 2
    assert (pinned.__name__, pinned.__doc__) == ("work", "Doc.")
    assert str(inspect.signature(pinned)) == "(a, *, b=2)"     # run_cache keys a call by it


# Each entry point, the module function it evaluates with after fit (looked up when called),
# and tiny arguments: that evaluation is where BLAS's own threads cost lesson 09 a minute.
ENTRY_POINTS = [
    ("l08_training", "train", "l08_training.model", "accuracy_on", ("coreference",), {"steps": 1}),
    ("l09_position", "train", "l09_position.model", "pronoun_accuracy_on", ("two_relations",),
     {"position": "rope", "shifts": (0, 1), "steps": 1}),
    ("l09_position", "train_two_back", "l09_position.two_back", "accuracy", ("rope",),
     {"lengths": (16,), "steps": 1}),
    ("l10_two_layers", "train", "l10_two_layers.model", "accuracy_on", ("adjective",), {"steps": 1}),
]


def _thread_counts_seen_by(module, name, monkeypatch):
    """The BLAS thread count at each call of ``helpers.lessons.<module>.<name>``, from now on (a list)."""
    where = importlib.import_module(f"helpers.lessons.{module}")
    seen, real = [], getattr(where, name)

    def recording(*a, **k):
        seen.append(threads.blas_thread_count())
        return real(*a, **k)

    monkeypatch.setattr(where, name, recording)
    return seen


@pytest.mark.parametrize("package, entry, module, evaluation, args, kwargs", ENTRY_POINTS)
def test_a_lessons_training_entry_point_evaluates_on_one_thread_too(package, entry, module, evaluation,
                                                                     args, kwargs, two_threads, monkeypatch):
    seen = _thread_counts_seen_by(module, evaluation, monkeypatch)
    monkeypatch.delenv("COURSE_RUN_CACHE", raising=False)         # train for real
    getattr(importlib.import_module(f"helpers.lessons.{package}"), entry)(*args, **kwargs)
    assert seen and set(seen) == {1}, seen
    assert threads.blas_thread_count() == 2


# The measurements lesson 09's cells call themselves, after training (on the held-out sentences,
# or thousands of fresh tokens): the function each calls inside, looked up when called.
MEASUREMENTS = [
    ("l09_position.model", "relation_accuracy", "pronoun_answers"),
    ("l09_position.model", "evaluate", "pronoun_accuracy"),
    ("l09_position.model", "evaluate_split_halves", "embed_words"),
    ("l09_position.two_back", "by_band", "forward"),
]


@pytest.fixture(scope="module")
def tiny_runs():
    """A one-step RoPE run of each of lesson 09's tasks, trained without the test cache."""
    import os
    from helpers.lessons.l09_position import model as l09, two_back
    saved = os.environ.pop("COURSE_RUN_CACHE", None)
    try:
        return {"l09_position.model": l09.train("two_relations", position="rope", steps=1),
                "l09_position.two_back": two_back.train_two_back("rope", lengths=(16,), steps=1)}
    finally:
        if saved is not None:
            os.environ["COURSE_RUN_CACHE"] = saved


@pytest.mark.parametrize("module, measurement, inner", MEASUREMENTS, ids=[m for _, m, _ in MEASUREMENTS])
def test_a_measurement_a_lesson_calls_runs_on_one_thread_and_restores_the_count(module, measurement, inner,
                                                                              tiny_runs, two_threads,
                                                                              monkeypatch):
    seen = _thread_counts_seen_by(module, inner, monkeypatch)
    getattr(importlib.import_module(f"helpers.lessons.{module}"), measurement)(tiny_runs[module])
    assert seen and set(seen) == {1}, seen
    assert threads.blas_thread_count() == 2
