"""How long does grading a class take? (a benchmark, never a test)

    .venv/bin/python benchmarks/grade_bench.py [--count 40] [--jobs 2] [--lesson LESSON|all]
                                               [--run-all]

Builds a class of ``--count`` submissions in a temporary folder outside the
repository -- by default cycling over every lesson, alternating a completed
notebook (the solution) and an untouched student notebook, each under a
learner-style name -- then times one ``python -m helpers.grade --jobs N`` run
over the folder (wall clock, and the CPU seconds of the grader and its kernels).
The machine's load average is printed before and after: on a shared machine the
figure is only as good as the quiet around it.
"""

import argparse
import json
import os
import resource
import shutil
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lesson", default="all", help="a lesson's file stem, or 'all'")
    parser.add_argument("--run-all", action="store_true", help="pass --run-all to the grader")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        build_class(folder, args.count, args.lesson)
        gradebook = Path(tmp) / "gradebook.json"
        command = [sys.executable, "-m", "helpers.grade", "--jobs", str(args.jobs),
                   "--json", str(gradebook), str(folder)] + (["--run-all"] if args.run_all else [])
        load_before = os.getloadavg()
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_after = os.getloadavg()
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            sys.exit(f"the grader exited with status {proc.returncode}")
        rows = json.loads(gradebook.read_text())

    cpu = ((cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime))
    errors = sum(1 for row in rows if row["error"])
    print(f"graded {len(rows)} submissions ({args.lesson}) with --jobs {args.jobs}"
          f"{' --run-all' if args.run_all else ''} on {os.cpu_count()} CPUs")
    print(f"wall clock   {wall:6.1f} s  ({wall / len(rows):.2f} s per submission)")
    print(f"CPU time     {cpu:6.1f} s  (grader + kernels, user + system)")
    print(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after "
          f"(1-minute; other processes share the machine)")
    print(f"rows with an error noted: {errors}")


if __name__ == "__main__":
    main()
