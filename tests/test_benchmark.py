"""benchmarks/run.py runs and prints every figure it promises (at tiny sizes; no timing asserted)."""

import importlib.util
import os
import re
from pathlib import Path

import nbformat

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "MATMUL_SIZE", 64)
    monkeypatch.setattr(module, "MHA", dict(n=16, d_model=32, num_heads=4))
    monkeypatch.setattr(module, "ONLINE", dict(n=300, d=8, block_size=64))
    monkeypatch.setattr(module, "TRAINING", dict(steps=3, seeds=range(1)))
    monkeypatch.setattr(module, "GENERATION", dict(n=12, d_model=16, num_heads=4))
    monkeypatch.setattr(module, "POSITION", dict(shifts=(0, 2), lengths=(16, 24)))
    monkeypatch.setattr(module, "LAYERS", dict(steps=2, targets={"adjective": 2.0, "induction": 20.0}))
    return module


def test_benchmark_prints_multi_head_share_for_both_dtypes(bench, capsys):
    bench.bench_multi_head(repeat=1)
    out = capsys.readouterr().out
    assert "float64" in out and "float32" in out and "share of peak" in out


def test_benchmark_prints_online_difference_memory_and_time(bench, capsys):
    bench.bench_online(repeat=1)
    out = capsys.readouterr().out
    difference = next(line for line in out.splitlines() if "largest |tiled - naive|" in line)
    assert difference.endswith(": MET")     # the same numbers up to rounding: not a timing
    assert "peak traced memory" in out and "median time" in out


def test_benchmark_prints_one_step_of_every_lessons_slider(bench, capsys):
    assert bench.bench_sliders(repeat=1) in (True, False)
    out = capsys.readouterr().out
    assert "lesson 02, d_k" in out and "lesson 03" in out and "lesson 04, heads" in out
    assert "lesson 11, kv heads" in out


def test_benchmark_main_without_notebooks_exits_0_with_a_summary(bench, capsys):
    assert bench.main(["--no-notebooks", "--repeat", "1"]) == 0
    assert "summary:" in capsys.readouterr().out


def test_benchmark_prints_lesson_08_training_for_both_dtypes_and_each_seed(bench, capsys, monkeypatch):
    monkeypatch.setattr(bench, "TRAINING", dict(steps=3, seeds=range(2)))   # tiny: runs, not speed
    assert bench.bench_training(repeat=1) in (True, False)
    out = capsys.readouterr().out
    assert "float64" in out and "float32" in out and "steps/s" in out
    assert "seed 0:" in out and "seed 1:" in out


def test_benchmark_prints_lesson_11_tokens_per_second_and_cache_bytes(bench, capsys):
    assert bench.bench_generation(repeat=1) is True     # the same outputs: not a timing
    out = capsys.readouterr().out
    for way in ("with the KV cache", "no cache, last row", "no cache, every row"):
        assert way in out
    assert all(f"num_kv_heads = {g:>2}:" in out for g in (4, 1))
    assert out.count("tokens/s") == 3 + 2                 # the three ways, then each kv-head count


def test_benchmark_prints_lesson_10_training_for_both_tasks_and_layer_counts(bench, capsys):
    assert bench.bench_layers(repeat=1) in (True, False)
    out = capsys.readouterr().out
    assert out.count("adjective ") == 2 and out.count("induction ") == 2 and "accuracy" in out


def test_a_learners_kernel_has_none_of_the_tests_variables(bench, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setenv("COURSE_RUN_CACHE", "/somewhere")
    env = bench.default_kernel_env({"OMP_NUM_THREADS": "1"})
    assert "OPENBLAS_NUM_THREADS" not in env and "COURSE_RUN_CACHE" not in env
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
