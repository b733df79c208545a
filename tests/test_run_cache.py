"""helpers.run_cache: training shared by the notebook kernels of one test run.

A toy function counts its calls; each test sets (or not) the cache folder itself.
"""

import pytest

from helpers import run_cache


def counted():
    calls = []

    @run_cache.shared
    def train(task, *, steps=10, seed=0):
        calls.append((task, steps, seed))
        return {"task": task, "steps": steps, "seed": seed, "draws": [seed * 7 + steps]}

    return train, calls


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    return tmp_path


def test_without_the_variable_every_call_runs(monkeypatch):
    monkeypatch.delenv(run_cache.ENV, raising=False)
    train, calls = counted()
    assert train("a") == train("a")
    assert len(calls) == 2


def test_a_folder_that_does_not_exist_turns_sharing_off(monkeypatch, tmp_path):
    monkeypatch.setenv(run_cache.ENV, str(tmp_path / "missing"))
    train, calls = counted()
    train("a"), train("a")
    assert len(calls) == 2


def test_a_repeated_call_reads_the_first_result(folder):
    train, calls = counted()
    first = train("a", steps=5, seed=3)
    second = train("a", steps=5, seed=3)
    assert calls == [("a", 5, 3)]
    assert second == first == {"task": "a", "steps": 5, "seed": 3, "draws": [26]}


def test_another_process_reads_the_result_from_the_folder(folder):
    train, calls = counted()
    train("a")
    other_train, other_calls = counted()        # a new function object, as in another kernel
    assert other_train("a")["draws"] == [10]
    assert other_calls == []


@pytest.mark.parametrize("first, second", [
    ((("a",), {}), (("a",), {"seed": 0})),               # a default written out
    ((("a",), {"steps": 10}), (("a",), {"steps": 10, "seed": 0})),
    ((("a",), {"seed": 2, "steps": 4}), (("a",), {"steps": 4, "seed": 2})),   # keyword order
])
def test_the_same_call_written_differently_is_one_key(folder, first, second):
    train, calls = counted()
    train(*first[0], **first[1])
    train(*second[0], **second[1])
    assert len(calls) == 1


@pytest.mark.parametrize("other", [(("b",), {}), (("a",), {"seed": 1}), (("a",), {"steps": 11})])
def test_a_different_argument_trains_again(folder, other):
    train, calls = counted()
    train("a")
    result = train(*other[0], **other[1])
    assert len(calls) == 2 and result == {"task": calls[1][0], "steps": calls[1][1],
                                          "seed": calls[1][2], "draws": [calls[1][2] * 7 + calls[1][1]]}


def test_changed_course_code_trains_again(folder, monkeypatch):
    train, calls = counted()
    train("a")
    monkeypatch.setattr(run_cache, "code_version", lambda helpers=None: "another version")
    train("a")
    assert len(calls) == 2


def test_a_call_that_raises_stores_nothing(folder):
    calls = []

    @run_cache.shared
    def fails(x):
        calls.append(x)
        raise ValueError("fails: x must be positive")

    for _ in range(2):
        with pytest.raises(ValueError, match="x must be positive"):
            fails(-1)
    assert len(calls) == 2
    assert not list(folder.glob("*.pickle"))


def test_code_version_changes_with_a_learners_module_not_with_instructor_tools(tmp_path):
    helpers = tmp_path / "helpers"
    (helpers / "instructor").mkdir(parents=True)
    (helpers / "training.py").write_text("STEPS = 1000\n")
    (helpers / "instructor" / "grading.py").write_text("x = 1\n")
    before = run_cache.code_version(helpers)
    (helpers / "instructor" / "grading.py").write_text("x = 2\n")
    run_cache.code_version.cache_clear()
    assert run_cache.code_version(helpers) == before
    (helpers / "training.py").write_text("STEPS = 999\n")
    run_cache.code_version.cache_clear()
    assert run_cache.code_version(helpers) != before
