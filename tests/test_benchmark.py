"""benchmarks/run.py's own machinery: a learner's kernel, busy neighbours, one Run All row.

What the benchmark prints is not tested here: running a benchmark proves nothing a test of
the code it times does not (``make bench`` runs it whole).
"""

import importlib.util
import os
import re
from pathlib import Path

import nbformat

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_learners_kernel_has_none_of_the_tests_variables(bench, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setenv("COURSE_RUN_CACHE", "/somewhere")
    monkeypatch.setenv("PYTHONSTARTUP", "/somewhere/kernel_startup.py")
    env = bench.default_kernel_env({"OMP_NUM_THREADS": "1"})
    assert "OPENBLAS_NUM_THREADS" not in env and "COURSE_RUN_CACHE" not in env and "PYTHONSTARTUP" not in env
    assert env["OMP_NUM_THREADS"] == "1" and env["PATH"] == os.environ["PATH"]


def test_busy_processes_spin_while_the_block_runs_and_are_gone_after(bench):
    with bench.busy_processes(2) as busy:
        assert [p.poll() for p in busy.processes] == [None, None]      # running
    assert all(p.poll() is not None for p in busy.processes)


def test_benchmark_prints_each_lessons_run_all_in_a_default_kernel_quiet_loaded_and_pinned(
        bench, capsys, monkeypatch, tmp_path):
    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nassert 'COURSE_RUN_CACHE' not in os.environ")]
    nbformat.write(nb, str(tmp_path / "notebooks" / "01_tiny.ipynb"))
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    assert bench.bench_default_kernel(timeout=60, busy=1) in (True, False)
    out = capsys.readouterr().out
    assert "raised" not in out and "failed" not in out      # the kernel had none of the tests' variables
    row = next(line for line in out.splitlines() if "01_tiny.ipynb" in line)
    timings = re.findall(r"\d+\.\d s\b", row)             # "12.3 s": a note may follow ("... slower ...")
    assert len(timings) == 3 and "nan" not in row and "MET" in row      # three timings and a verdict
