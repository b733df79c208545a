"""Benchmark: speed and memory of the reference attention, and each lesson's Run All time.

    make bench                       # or: .venv/bin/python benchmarks/run.py
    .venv/bin/python benchmarks/run.py --no-notebooks --repeat 9

A benchmark, not a test: it prints figures measured on this machine and whether they
meet the course's targets; it never fails because of them (exit status 0 unless
something crashes). Timings depend on the machine and on what else runs on it.

1. ``helpers.reference.multi_head_attention`` at n = 1024, d_model = 512, 8 heads
   (weights returned), float64 and float32: median time, and its FLOP rate as a share of
   this machine's matrix-multiply peak, measured in the same run by a large ``A @ A``
   (timed in turn with the attention, so both see the same load).
   Target: >= 35 % of the matmul peak in both dtypes.
2. ``online_softmax_attention`` (n = 4096, d = 64, blocks of 128) against the naive
   ``scaled_dot_product_attention``: largest difference, peak traced memory, time.
   Targets: identical to 1e-10, <= 10 % of the naive peak memory, <= 2x its time.
3. Lesson 08's training: ``l08_training.train("coreference")``, the default run (1000 steps
   of 16 sentences, d_model = 32), in float64 and float32: run time (the final held-out
   evaluation included), steps per second, held-out accuracy. Target: <= 10 s to >= 0.95.
   Then the two-relation task with two heads over several seeds: accuracy and whether each
   relation has its own head (>= 0.6 of that head's weight), seed by seed.
   Lesson 09: ``l09_position.train("two_relations", num_heads=2, position=..., shifts=(0, 1, 2, 4, 8))``
   for each way of encoding position: run time (wall and this process's CPU time) and the
   held-out accuracy at each shift; then the two-back task (``l09_position.train_two_back``),
   scored by band of positions (``two_back.by_band``).
   Target: <= 2 s per run (a quiet machine).
4. One step of each lesson's slider (lesson 02's d_k, lesson 03's query of "sat", lesson
   04's head count, lesson 11's kv heads), built by the same ``helpers`` calls the lessons make: median time
   per value. Target: well under 0.2 s.
3c. Lesson 10's training: ``l10_two_layers.train("adjective")`` with one and two layers,
   and the lesson's induction cell (``induction.train_runs(L, seeds=range(5))``: five seeds of
   next-token prediction at once), the default steps: run time (wall and CPU), held-out
   accuracy. Targets (a quiet machine): "adjective" <= 2 s per run, "induction" <= 12 s for
   the five seeds of one model (the lesson's Run All must stay under a minute).
5. Each lesson's Run All time: ``notebooks/*.ipynb`` executed with nbclient in a fresh
   kernel, kernel start included.
5b. Each lesson's Run All as a learner gets it: a fresh kernel with none of the tests'
   variables (BLAS picks its own thread count, as in ``make lab``, Binder and Colab), quiet and
   beside as many busy processes (``while True: pass``) as the machine has cores, next to the
   tests' setting (one BLAS thread). Target: <= 30 s quiet and loaded. ``--lessons 08,09``
   runs only those.
6. Lesson 11's generation: tokens per second generating a sequence one token at a time with
   ``attention_decode_step`` (the KV cache) and by recomputing causal multi-head attention
   over the whole prefix for every token; the outputs compared; and the cache's bytes after
   the sequence for num_kv_heads = h, h/4 and 1 (measured, and 2 * n * g * d_head * 8).
"""

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from helpers import reference  # noqa: E402
from helpers.lessons import l08_training, l09_position, l10_two_layers  # noqa: E402
from helpers.lessons.l08_training import training  # noqa: E402
from helpers.measure import format_bytes, traced_peak  # noqa: E402

MATMUL_SIZE = 2048          # A is (2048, 2048): large enough for the BLAS's peak
MHA = dict(n=1024, d_model=512, num_heads=8)
ONLINE = dict(n=4096, d=64, block_size=128)
TARGET_SHARE = 0.35
TARGET_DIFF = 1e-10
TARGET_MEMORY = 0.10
TARGET_TIME = 2.0
TARGET_RUN_ALL = 10.0       # seconds: every untouched student notebook, well under this ...
RUN_ALL_TARGETS = {"08_training.ipynb": 60.0,   # ... but the ones that train models
                   "09_position.ipynb": 60.0,
                   "10_two_layers.ipynb": 60.0,
                   "11_inference.ipynb": 60.0}  # ... and the one that measures generation
TARGET_DEFAULT_KERNEL = 30.0  # seconds: Run All in a learner's default kernel, quiet and loaded
TARGET_SLIDER = 0.2         # seconds: one slider step
TRAINING = dict(steps=None, seeds=range(6))      # None: the task's default number of steps
TARGET_TRAINING_TIME = 10.0
TARGET_ACCURACY = 0.95
TARGET_HEAD_SHARE = 0.6
GENERATION = dict(n=256, d_model=64, num_heads=8)   # lesson 11: tokens generated, model size
TARGET_POSITION_RUN = 2.0   # seconds: one lesson 09 training run
POSITION = dict(shifts=(0, 1, 2, 4, 8))     # lesson 09's shifts
LAYERS = dict(steps=None, targets={"adjective": 2.0, "induction": 12.0})   # lesson 10, seconds


def verdict(ok):
    return "MET" if ok else "NOT MET"


def timed(fn):
    """Seconds of one call of fn()."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved_times(fns, repeat):
    """Median and best seconds of each function, timed in turn (a, b, a, b, ...).

    Timing them in turn means a burst of load from another program hits both alike, so
    their ratio is steadier than either time alone. The best (shortest) run is what a
    quiet machine would show; the median is the headline figure.

    Returns
    -------
    dict name -> (median seconds, best seconds)
    """
    for fn in fns.values():
        fn()   # warm-up: caches, memory pages, BLAS threads
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            times[name].append(timed(fn))
    return {name: (float(np.median(t)), float(np.min(t))) for name, t in times.items()}


def machine():
    """One line about the machine and the BLAS NumPy uses."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older NumPy: no dict mode
        blas = "unknown BLAS"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {load}; "
          f"Python {platform.python_version()}, NumPy {np.__version__}, {blas}")
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                     "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if variable in os.environ:
            print(f"  note: {variable}={os.environ[variable]} is set (it changes BLAS speed)")
    if "OPENBLAS_CORETYPE" in os.environ:
        print("  (for this machine's best BLAS kernel: "
              "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/run.py)")


# --------------------------------------------------------------------------- 1
def bench_multi_head(repeat):
    n, d, h = MHA["n"], MHA["d_model"], MHA["num_heads"]
    flops = sum(reference.attention_flops(n, d).values())   # 8 n d^2 + 4 n^2 d
    print(f"\n1. multi_head_attention, n = {n}, d_model = {d}, {h} heads, weights returned "
          f"({flops / 1e9:.2f} GFLOP a call); peak = {MATMUL_SIZE} x {MATMUL_SIZE} A @ A; "
          f"median of {repeat}, timed in turn")
    print(f"   {'dtype':<8} {'A @ A':>14} {'attention':>11} {'GFLOP/s':>8} {'share of peak':>14}  "
          f"target >= {TARGET_SHARE:.0%}   (best runs: share)")
    rng = np.random.default_rng(0)
    met = True
    for dtype in (np.float64, np.float32):
        A = rng.standard_normal((MATMUL_SIZE, MATMUL_SIZE)).astype(dtype)
        X = rng.standard_normal((n, d)).astype(dtype)
        W = [(rng.standard_normal((d, d)) / np.sqrt(d)).astype(dtype) for _ in range(4)]
        t = interleaved_times({"matmul": lambda: A @ A,
                               "mha": lambda: reference.multi_head_attention(X, *W, h)},
                              repeat)
        peak = 2 * MATMUL_SIZE ** 3 / t["matmul"][0]       # FLOP/s of the medians
        rate = flops / t["mha"][0]
        share = rate / peak
        best_share = (flops / t["mha"][1]) / (2 * MATMUL_SIZE ** 3 / t["matmul"][1])
        met &= share >= TARGET_SHARE
        print(f"   {np.dtype(dtype).name:<8} {peak / 1e9:>8.1f} GF/s {1e3 * t['mha'][0]:>8.1f} ms "
              f"{rate / 1e9:>8.1f} {share:>13.0%}  {verdict(share >= TARGET_SHARE):<8}"
              f"      ({best_share:.0%}: A @ A {2 * MATMUL_SIZE ** 3 / t['matmul'][1] / 1e9:.1f} "
              f"GF/s, attention {1e3 * t['mha'][1]:.1f} ms)")
    return met


# --------------------------------------------------------------------------- 2
def bench_online(repeat):
    n, d, b = ONLINE["n"], ONLINE["d"], ONLINE["block_size"]
    print(f"\n2. online_softmax_attention against the naive attention, n = {n}, d = {d}, "
          f"block_size = {b}, float64")
    rng = np.random.default_rng(1)
    Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))

    def naive():
        return reference.scaled_dot_product_attention(Q, K, V)[0]

    def tiled():
        return reference.online_softmax_attention(Q, K, V, block_size=b)

    diff = float(np.max(np.abs(tiled() - naive())))
    peak = {"naive": traced_peak(naive), "tiled": traced_peak(tiled)}
    t = interleaved_times({"naive": naive, "tiled": tiled}, repeat)
    memory_ratio = peak["tiled"] / peak["naive"]
    time_ratio = t["tiled"][0] / t["naive"][0]
    best_ratio = t["tiled"][1] / t["naive"][1]
    print(f"   largest |tiled - naive|: {diff:.1e}   target <= {TARGET_DIFF:.0e}: "
          f"{verdict(diff <= TARGET_DIFF)}")
    print(f"   peak traced memory: naive {format_bytes(peak['naive'])}, tiled "
          f"{format_bytes(peak['tiled'])} = {memory_ratio:.1%} of naive   "
          f"target <= {TARGET_MEMORY:.0%}: {verdict(memory_ratio <= TARGET_MEMORY)}")
    print(f"   median time (of {repeat}, in turn): naive {1e3 * t['naive'][0]:.1f} ms, tiled "
          f"{1e3 * t['tiled'][0]:.1f} ms = {time_ratio:.2f}x naive   "
          f"target <= {TARGET_TIME:.0f}x: {verdict(time_ratio <= TARGET_TIME)}   "
          f"(best runs: {1e3 * t['naive'][1]:.1f} / {1e3 * t['tiled'][1]:.1f} ms = {best_ratio:.2f}x)")
    return diff <= TARGET_DIFF and memory_ratio <= TARGET_MEMORY and time_ratio <= TARGET_TIME


# --------------------------------------------------------------------------- 3
def bench_training(repeat):
    steps = TRAINING["steps"] or training.TASKS["coreference"][1]
    print(f"\n3. lesson 08: l08_training.train(\"coreference\"), {steps} steps of "
          f"{training.BATCH_SIZE} sentences, d_model = 32; median of {repeat} runs "
          f"(run time includes the held-out evaluation)")
    print(f"   {'dtype':<8} {'run time':>9} {'steps/s':>8} {'accuracy':>9}   "
          f"target <= {TARGET_TRAINING_TIME:.0f} s to >= {TARGET_ACCURACY}")
    training.load_corpus()                               # built once, outside the timings
    met = True
    for dtype in ("float64", "float32"):
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            result = l08_training.train("coreference", steps=TRAINING["steps"], dtype=dtype)
            runs.append(time.perf_counter() - start)
        seconds = float(np.median(runs))
        ok = seconds <= TARGET_TRAINING_TIME and result["accuracy"] >= TARGET_ACCURACY
        met &= ok
        print(f"   {dtype:<8} {seconds:>7.2f} s {steps / seconds:>8.0f} {result['accuracy']:>9.3f}   "
              f"{verdict(ok)}")
    print(f"   two_relations, 2 heads, seeds {list(TRAINING['seeds'])}: held-out accuracy; "
          f"attention table (relations x heads); own head per relation >= {TARGET_HEAD_SHARE}?")
    for seed in TRAINING["seeds"]:
        result = l08_training.train("two_relations", num_heads=2, steps=TRAINING["steps"],
                                          seed=seed)
        table = result["attention_to_targets"]
        best = table.argmax(axis=1)
        own = best[0] != best[1] and all(table[r, best[r]] >= TARGET_HEAD_SHARE for r in range(2))
        print(f"   seed {seed}: accuracy {result['accuracy']:.3f}   table "
              f"{np.array2string(table, precision=2, separator=', ').replace(chr(10), '')}   "
              f"{'each relation has its own head' if own else 'heads NOT separated'}")
    return met


def bench_position():
    from helpers.lessons.l09_position import model as positional
    from helpers.lessons.l09_position import two_back as position_tasks
    shifts = POSITION["shifts"]
    print(f"\n3b. lesson 09: l09_position.train(\"two_relations\", num_heads=2, position=..., "
          f"shifts={shifts}); target <= {TARGET_POSITION_RUN:.0f} s per run")
    print(f"   {'position':<11} {'wall':>7} {'CPU':>7}   accuracy at each shift")
    met = True
    for position in positional.POSITIONS:
        wall, cpu = time.perf_counter(), time.process_time()
        result = l09_position.train("two_relations", num_heads=2, position=position,
                                    shifts=shifts, steps=TRAINING["steps"])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        met &= wall <= TARGET_POSITION_RUN
        accuracy = "  ".join(f"k={k} {a:.3f}" for k, a in result["accuracy_by_shift"].items())
        print(f"   {position:<11} {wall:>5.2f} s {cpu:>5.2f} s   {accuracy}   "
              f"{verdict(wall <= TARGET_POSITION_RUN)}")
    print(f"   two back (train on {position_tasks.TRAIN_LENGTH} tokens), seed 0: accuracy / weight on the "
          f"token two back, by band of positions (run on {max(e for _, e in position_tasks.BANDS)} tokens)")
    for position in ("sinusoidal", "rope"):
        wall = time.perf_counter()
        result = l09_position.train_two_back(position, lengths=(position_tasks.TRAIN_LENGTH,),
                                             steps=TRAINING["steps"] or position_tasks.STEPS)
        wall = time.perf_counter() - wall
        bands = "  ".join(f"{band} {v['accuracy']:.3f}/{v['weight']:.2f}"
                          for band, v in position_tasks.by_band(result).items())
        print(f"   {position:<11} {wall:>5.2f} s   {bands}")
    return met


# --------------------------------------------------------------------------- 3c
def bench_layers(repeat):
    from helpers.lessons.l10_two_layers import induction
    from helpers.lessons.l10_two_layers import model as layers
    print(f"\n3c. lesson 10: l10_two_layers.train('adjective', num_layers=L) and the lesson's cell "
          f"induction.train_runs(L, seeds=range(5)) (five seeds at once), the default steps "
          f"(or {LAYERS['steps']}); median of {repeat} runs, wall and CPU seconds")
    met = True
    layers.load_corpus("adjective")                      # built once, outside the timings
    for task, target in LAYERS["targets"].items():
        for num_layers in (1, 2):
            walls, cpus = [], []
            for _ in range(repeat):
                wall, cpu = time.perf_counter(), time.process_time()
                if task == "induction":
                    runs = induction.train_runs(num_layers, seeds=range(5),
                                                steps=LAYERS["steps"] or induction.STEPS)
                    accuracy = float(np.mean([r["accuracy"] for r in runs]))
                else:
                    result = l10_two_layers.train(task, num_layers=num_layers, steps=LAYERS["steps"])
                    accuracy = result["accuracy"]
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
            seconds = float(np.median(walls))
            met &= seconds <= target
            print(f"   {task:<10} {num_layers} layer{'s' if num_layers > 1 else ' '} "
                  f"{seconds:6.2f} s (CPU {float(np.median(cpus)):5.2f} s)   accuracy "
                  f"{accuracy:.3f}{' (mean of 5 seeds, every place in the repeat)' * (task == 'induction')}"
                  f"   target <= {target:.0f} s: {verdict(seconds <= target)}")
    return met


# --------------------------------------------------------------------------- 5
def bench_notebooks(timeout):
    print(f"\n5. Run All of each student notebook (fresh kernel, kernel start included; "
          f"target well under {TARGET_RUN_ALL:.0f} s, lessons 08 and 10 under "
          f"{RUN_ALL_TARGETS['08_training.ipynb']:.0f} s)")
    try:
        import nbclient  # noqa: F401  (run_all needs it)
    except ImportError as exc:
        print(f"   skipped: {exc}")
        return
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not paths:
        print("   no notebooks found in notebooks/")
    for path in paths:
        seconds, status = run_all(path, timeout, dict(os.environ))   # this process's environment
        target = RUN_ALL_TARGETS.get(path.name, TARGET_RUN_ALL)
        print(f"   {path.name:<34} {seconds:>6.1f} s   {status:<4} "
              f"{verdict(seconds < target) if status == 'ok' else ''}")


# --------------------------------------------------------------------------- 5b
# What a learner's kernel has that a test's has not: none of these (conftest.py sets the BLAS
# threads, the shared training folder and the kernels' startup file; pytest and nbval add their own).
TEST_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "COURSE_RUN_CACHE",
                  "PYTHONSTARTUP", "MPLBACKEND", "PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER",
                  "PYTEST_XDIST_WORKER_COUNT")
#: Each setting of 5b: (what it is called, how many busy processes run beside it, the kernel's
#: extra environment). The last is the tests' own setting (conftest.py: one BLAS thread).
KERNEL_SETTINGS = [("default kernel, quiet", 0, {}),
                   ("default kernel, {busy} busy", None, {}),
                   ("tests' setting (1 BLAS thread)", 0, {"OPENBLAS_NUM_THREADS": "1",
                                                          "OMP_NUM_THREADS": "1"})]


def default_kernel_env(extra=None):
    """The environment of a learner's kernel: this one without the test variables, plus ``extra``."""
    env = {name: value for name, value in os.environ.items() if name not in TEST_VARIABLES}
    env.update(extra or {})
    return env


class busy_processes:
    """``with busy_processes(2):`` -- that many processes that only spin (``while True: pass``)."""

    def __init__(self, count):
        self.count, self.processes = count, []

    def __enter__(self):
        self.processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                          for _ in range(self.count)]
        return self

    def __exit__(self, *exc):
        for process in self.processes:
            process.kill()
        for process in self.processes:
            process.wait()


def run_all(path, timeout, env):
    """Run All of the notebook at ``path`` in a fresh kernel with ``env``: (seconds, status)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute(stderr=subprocess.DEVNULL, env=env)   # the kernel's start-up warnings
        status = "ok"
    except Exception as exc:  # a timeout or a dead kernel: report it, go on
        status = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
    seconds = time.perf_counter() - start
    errors = [o.ename for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.output_type == "error"]
    if errors and status == "ok":
        status = f"{len(errors)} cell(s) raised: {', '.join(sorted(set(errors)))}"
    return seconds, status


def bench_default_kernel(timeout, lessons=None, busy=None):
    """5b: each lesson's Run All as a learner gets it (a fresh kernel, no test variables), quiet and
    beside as many busy processes as the machine has cores, next to the tests' setting."""
    busy = (os.cpu_count() or 1) if busy is None else busy
    paths = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
             if lessons is None or p.name[:2] in lessons]
    names = [name.format(busy=busy) for name, _, _ in KERNEL_SETTINGS]
    print(f"\n5b. Run All of each student notebook in a fresh DEFAULT kernel (no test variables: "
          f"BLAS picks its own threads), quiet and beside {busy} busy processes (one per core), next to "
          f"the tests' setting; kernel start included; target <= {TARGET_DEFAULT_KERNEL:.0f} s in both, "
          f"and the default no slower than the tests' setting")
    print(f"   {'lesson':<30}" + "".join(f"{name:>33}" for name in names))
    met = True
    for path in paths:
        seconds = []
        for _, count, extra in KERNEL_SETTINGS:
            with busy_processes(busy if count is None else count):
                t, status = run_all(path, timeout, default_kernel_env(extra))
            seconds.append(t if status == "ok" else float("nan"))
            if status != "ok":
                print(f"   {path.name}: {status}")
        quiet, loaded, tests = seconds
        ok = quiet <= TARGET_DEFAULT_KERNEL and loaded <= TARGET_DEFAULT_KERNEL
        met &= ok
        print(f"   {path.name:<30}" + "".join(f"{t:>31.1f} s" for t in seconds)
              + f"   {verdict(ok)}{'' if quiet <= 1.2 * tests + 1 else '  (default slower than 1 thread)'}")
    return met


# --------------------------------------------------------------------------- 4
def slider_steps():
    """``{slider name: (redraw, values)}``: each lesson's slider, as the lesson builds it."""
    import matplotlib
    matplotlib.use("Agg")
    from helpers import data, widgets
    from helpers.lessons.l02_scaled_scores import figures as lesson02
    from helpers.lessons.l03_softmax_and_attention import figures as lesson03
    from helpers.lessons.l04_multi_head import figures as lesson04

    words = data.tokens(data.IT_SENTENCE)
    fig, update, animated = lesson02.dk_figure(words, reference.softmax)
    d_k = lesson02.dk_slider()
    _, dk_redraw = widgets.live_figure(fig, update, animated=animated, d_k=d_k)

    cat = data.tokens(data.CAT_SAT)
    Q = np.array([[0.0, 0.0], [0.0, 1.4], [2.0, 1.0]])
    K = np.array([[0.0, 0.0], [1.38, 0.0], [0.0, 1.0]])
    V = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    fig, update, animated = lesson03.query_figure(
        Q, K, V, cat, ["animal", "action", "article"], "sat",
        lambda q, k: reference.softmax(reference.attention_scores(q, k)))
    noun = widgets.choice_slider([0.0, 2.0, 5.0], 2.0, "noun")
    _, sat_redraw = widgets.live_figure(fig, lambda noun: update(noun, 1.0), animated=animated,
                                        noun=noun)

    X = data.embed(words, d_model=64)
    W = [1.5 * data.weight_matrix(64, 64, seed=s) for s in (10, 11, 12, 13)]
    heads_box, heads_redraw = lesson04.head_count_explorer(reference.multi_head_attention, X, *W,
                                                          words, value=8)
    from helpers.lessons.l11_inference import widgets as lesson11_widgets
    kv_box, kv_redraw = lesson11_widgets.kv_heads_explorer(reference.grouped_query_attention, X, *W,
                                                            words, num_heads=8, value=2)
    return {"lesson 02, d_k": (lambda v: dk_redraw(d_k=v), list(d_k.options)),
            "lesson 03, sat's query": (lambda v: sat_redraw(noun=v), list(noun.options)),
            "lesson 04, heads": (heads_redraw, list(heads_box.children[0].options)),
            "lesson 11, kv heads": (kv_redraw, list(kv_box.children[1].options))}


def bench_sliders(repeat):
    print(f"\n4. One slider step (median of {repeat}; target well under "
          f"{1000 * TARGET_SLIDER:.0f} ms)")
    worst = 0.0
    for name, (redraw, values) in slider_steps().items():
        times = {v: float(np.median([timed(lambda: redraw(v)) for _ in range(repeat)]))
                 for v in values}
        worst = max(worst, *times.values())
        shown = ", ".join(f"{v}: {1000 * t:.0f}" for v, t in times.items())
        print(f"   {name:<24} ms per step   {shown}")
    print(f"   slowest step {1000 * worst:.0f} ms: {verdict(worst < TARGET_SLIDER)}")
    return worst < TARGET_SLIDER


# --------------------------------------------------------------------------- 6
def bench_generation(repeat):
    """Lesson 11: tokens per second three ways (cache, last row, every row) and per kv-head count."""
    from helpers.lessons.l11_inference import generate
    from helpers.lessons.l11_inference import costs

    n, d_model, h = GENERATION["n"], GENERATION["d_model"], GENERATION["num_heads"]
    d_head = d_model // h
    print(f"\n6. lesson 11: generating n = {n} tokens one at a time, d_model = {d_model}, {h} heads, "
          f"one layer (median of {repeat})")
    X = np.random.default_rng(0).standard_normal((n, d_model))
    W = costs.random_weights(d_model, h)
    costs.keep_freed_memory()          # time the steps, not the OS's fresh pages

    def with_cache(g=h, weights=W):
        return generate.decode_sequence(reference.attention_decode_step, X, weights, h, g)[0]

    def last_row():      # no cache: every key and value projected again, one row per token
        return np.array([generate.last_row(X[:t + 1], W, h) for t in range(n)])

    def every_row():     # no cache: the whole prefix, every row, for every token
        return np.array([reference.multi_head_attention(X[:t + 1], *W, h,
                                                        mask=reference.causal_mask(t + 1))[0][-1]
                         for t in range(n)])

    ways = {"with the KV cache": with_cache, "no cache, last row": last_row, "no cache, every row": every_row}
    seconds = {name: float(np.median([timed(fn) for _ in range(repeat if name != "no cache, every row"
                                                                 else max(1, repeat // 3))]))
               for name, fn in ways.items()}
    same = all(np.allclose(with_cache(), fn(), rtol=0, atol=1e-12) for fn in (last_row, every_row))
    for name, s in seconds.items():
        print(f"   {name:<20} {n / s:>10,.0f} tokens/s   ({1e3 * s:.1f} ms for {n} tokens)")
    print(f"   same outputs (within 1e-12): {verdict(same)}")
    print(f"   grouped-query attention, {h} query heads (cache bytes after {n} tokens, float64):")
    for g in sorted({h, max(1, h // 4), 1}, reverse=True):
        W_g = costs.random_weights(d_model, h, g)
        s = float(np.median([timed(lambda: with_cache(g, W_g)) for _ in range(repeat)]))
        measured = costs.cache_bytes_after(reference.attention_decode_step, n,
                                               d_model=d_model, num_heads=h, num_kv_heads=g)
        ok = measured == 2 * n * g * d_head * 8
        same = same and ok
        print(f"   num_kv_heads = {g:>2}: {n / s:>10,.0f} tokens/s; cache {format_bytes(measured):>10} "
              f"(2·n·g·d_head·8: {verdict(ok)})")
    return same


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per measurement")
    parser.add_argument("--no-notebooks", action="store_true", help="skip the Run All times")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per notebook cell")
    parser.add_argument("--lessons", default=None,
                        help="5b only for these lessons, e.g. 08,09 (default: every lesson)")
    args = parser.parse_args(argv)

    machine()
    results = {"multi-head share of peak": bench_multi_head(args.repeat),
               "online softmax attention": bench_online(args.repeat),
               "lesson 08 training": bench_training(min(args.repeat, 3)),
               "lesson 09 training runs": bench_position(),
               "lesson 10 training": bench_layers(min(args.repeat, 3)),
               "slider steps": bench_sliders(args.repeat),
               "lesson 11 cached = recomputed, cache bytes": bench_generation(args.repeat)}
    if not args.no_notebooks:
        bench_notebooks(args.timeout)
        lessons = None if args.lessons is None else args.lessons.split(",")
        results["Run All in a default kernel"] = bench_default_kernel(args.timeout, lessons)
    print("\nsummary: " + "; ".join(f"{name}: {verdict(ok)}" for name, ok in results.items()))
    print("(timings are of this machine under its current load; rerun on a quiet machine "
          "before drawing conclusions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
