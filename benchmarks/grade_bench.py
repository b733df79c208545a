"""How long does grading a class take? (a benchmark, never a test)

    .venv/bin/python benchmarks/grade_bench.py [--count 40] [--jobs 2] [--lesson LESSON|all]
                                               [--run-all] [--repeat N] [--course DIR]

Builds a class of ``--count`` submissions in a temporary folder outside the
repository -- by default cycling over every lesson, alternating a completed
notebook (the solution) and an untouched student notebook, each under a
learner-style name -- then times ``python -m helpers.grade --jobs N`` over the
folder, ``--repeat`` times (wall clock, and the CPU seconds of the grader and its
kernels; with their spread). ``--course DIR`` grades with another checkout's
``helpers`` (say, the main branch's, to compare before and after a change; the
class is built from this checkout's notebooks either way). The machine's load
average is printed before and after each run, and the CPU time one kernel's imports take
now (NumPy and matplotlib, as every lesson's first cell): on a shared machine (a VM whose
host is busy) the same work can take half as long again, and the figure is only as good as
the quiet around it.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_class(folder, count, lesson):
    solutions = sorted((ROOT / "solutions").glob("*.ipynb"))
    if lesson != "all":
        solutions = [p for p in solutions if p.stem == lesson]
        if not solutions:
            sys.exit(f"no solution notebook called {lesson}.ipynb")
    pairs = [(p, ROOT / "notebooks" / p.name) for p in solutions]
    for i in range(count):
        solution, student = pairs[i % len(pairs)]
        source = solution if (i // len(pairs)) % 2 == 0 else student
        shutil.copyfile(source, folder / f"Copy of {source.stem} ({i + 1}).ipynb")


def grade_once(folder, args, course):
    """One timed grading run: (wall seconds, CPU seconds, load before, load after, rows)."""
    gradebook = folder.parent / "gradebook.json"
    command = [sys.executable, "-m", "helpers.grade", "--jobs", str(args.jobs),
               "--json", str(gradebook), str(folder)] + (["--run-all"] if args.run_all else [])
    load_before = os.getloadavg()[0]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=course, capture_output=True, text=True)
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_after = os.getloadavg()[0]
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        sys.exit(f"the grader exited with status {proc.returncode}")
    cpu = ((cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime))
    return wall, cpu, load_before, load_after, json.loads(gradebook.read_text())


def import_probe(repeat=3):
    """Median CPU seconds of a fresh Python importing NumPy and matplotlib.pyplot: the machine's speed now."""
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", "import numpy, matplotlib.pyplot"], check=True,
                       env={**os.environ, "MPLBACKEND": "agg"})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(times)


def spread(values):
    return (f"median {statistics.median(values):6.1f} s, min {min(values):.1f}, max {max(values):.1f}"
            if len(values) > 1 else f"{values[0]:6.1f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lesson", default="all", help="a lesson's file stem, or 'all'")
    parser.add_argument("--run-all", action="store_true", help="pass --run-all to the grader")
    parser.add_argument("--repeat", type=int, default=1, help="time the run this many times")
    parser.add_argument("--course", type=Path, default=ROOT,
                        help="the checkout whose helpers grade (default: this one)")
    args = parser.parse_args()

    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        build_class(folder, args.count, args.lesson)
        print(f"grading {args.count} submissions ({args.lesson}) with --jobs {args.jobs}"
              f"{' --run-all' if args.run_all else ''} on {os.cpu_count()} CPUs, "
              f"helpers of {args.course.resolve()}")
        print(f"speed probe: importing NumPy + matplotlib.pyplot takes {import_probe():.2f} s of CPU now "
              f"(each grading kernel does it once)")
        for i in range(args.repeat):
            wall, cpu, before, after, rows = grade_once(folder, args, args.course.resolve())
            walls.append(wall)
            cpus.append(cpu)
            errors = sum(1 for row in rows if row["error"])
            print(f"run {i + 1}: wall clock {wall:6.1f} s ({wall / len(rows):.2f} s per submission), "
                  f"CPU {cpu:6.1f} s (grader + kernels), load average {before:.2f} -> {after:.2f} "
                  f"(1-minute; other processes share the machine), {errors} rows with an error")
    print(f"wall clock   {spread(walls)}")
    print(f"CPU time     {spread(cpus)}")


if __name__ == "__main__":
    main()
