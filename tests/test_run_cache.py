"""tests/run_cache.py: training shared by the pytest processes and notebook kernels of one test run.

A toy function counts its calls; each test sets (or not) the cache folder itself. The last
tests check that the lessons' entry points are wrapped in a test run's kernel, and only there.
"""

import json
import os
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

import run_cache


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


WRAPPED = sorted(f"{module}.{name}" for module, names in run_cache.ENTRY_POINTS.items() for name in names)
# prints the entry points that are wrapped, as JSON
PRINT_WRAPPED = """
import importlib, json
print(json.dumps([f"{m}.{n}" for m, names in %r.items() for n in names
                  if getattr(getattr(importlib.import_module(m), n), "shared_by_the_test_run", False)]))
""" % (run_cache.ENTRY_POINTS,)


def test_a_notebook_kernel_of_the_run_shares_every_entry_point_and_keeps_no_name(notebook_kernel_env):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(PRINT_WRAPPED),
        nbformat.v4.new_code_cell("print(sorted(n for n in globals() if 'shar' in n or 'run_cache' in n))")])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute(env=notebook_kernel_env)
    assert sorted(json.loads(nb.cells[0].outputs[0]["text"])) == WRAPPED
    assert nb.cells[1].outputs[0]["text"].strip() == "[]"


def test_outside_a_test_run_no_entry_point_is_wrapped():
    env = {k: v for k, v in os.environ.items() if k not in (run_cache.ENV, "PYTHONSTARTUP")}
    out = subprocess.run([sys.executable, "-c", PRINT_WRAPPED], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == []
