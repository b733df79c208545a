"""The command line: ``python -m helpers.grade`` (see :func:`main`)."""

import argparse
import secrets
import sys
from pathlib import Path

from .runner import DEFAULT_TIMEOUT, grade_many
from .scoring import progress_printer, summary_table, write_csv, write_json


class UsageError(Exception):
    """A problem with the command line itself (no files, a missing path, not a notebook)."""


def collect(paths):
    """The notebooks to grade: files as given, folders searched recursively (sorted).

    Raises :class:`UsageError` for no paths, a path that does not exist, or a file
    that is not an ``.ipynb``.
    """
    if not paths:
        raise UsageError("no submissions given: name notebooks (.ipynb) or folders holding them")
    found, seen = [], set()
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise UsageError(f"{given}: no such file or folder")
        if p.is_dir():
            inside = sorted(q for q in p.rglob("*.ipynb")
                            if ".ipynb_checkpoints" not in q.parts and q.is_file())
            if not inside:
                raise UsageError(f"{given}: the folder holds no notebooks (.ipynb)")
        elif p.suffix.lower() != ".ipynb":
            raise UsageError(f"{given}: not a notebook (expected a .ipynb file)")
        else:
            inside = [p]
        for q in inside:
            key = q.resolve()
            if key not in seen:
                seen.add(key)
                found.append(q)
    return found


def parser():
    p = argparse.ArgumentParser(
        prog="python -m helpers.grade",
        description="Grade submitted lesson notebooks: each runs in its own fresh kernel on a "
                    "scratch copy, and every exercise function is checked on hidden cases drawn "
                    "afresh for the run. WARNING: this runs the submitted code with your rights; "
                    "grade untrusted submissions inside a container or a throwaway VM.")
    p.add_argument("submissions", nargs="*", metavar="SUBMISSION",
                   help="a notebook (.ipynb, any name) or a folder searched for notebooks")
    p.add_argument("--json", metavar="FILE", help="write the gradebook as JSON")
    p.add_argument("--csv", metavar="FILE", help="write the gradebook as CSV")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"time limit per notebook (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="grade N notebooks at once (default 1)")
    p.add_argument("--seed", type=int, metavar="N",
                   help="the seed of the hidden cases (default: a fresh one, printed and "
                        "recorded in the JSON; give it again to repeat a run exactly)")
    p.add_argument("--run-all", action="store_true",
                   help="run every cell, not only up to the last exercise (slower; also "
                        "reports a crash or hang further down; the grades are the same)")
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if args.timeout <= 0:
        p.error(f"--timeout must be positive, got {args.timeout:g}")
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.seed is not None and args.seed < 0:
        p.error(f"--seed must be 0 or more, got {args.seed}")
    try:
        submissions = collect(args.submissions)
    except UsageError as exc:
        p.error(str(exc))
    for option, target in (("--json", args.json), ("--csv", args.csv)):
        if target and not Path(target).resolve().parent.is_dir():
            p.error(f"{option} {target}: the folder {Path(target).parent} does not exist")
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    print(f"grading {len(submissions)} submission(s), {args.jobs} at a time, "
          f"time limit {args.timeout:g} s each, seed {seed} (--seed {seed} repeats this run)",
          file=sys.stderr)
    try:
        rows = grade_many(submissions, args.timeout, args.jobs, seed,
                          progress_printer(sys.stderr), args.run_all)
    except KeyboardInterrupt:
        print("\ninterrupted: the kernels were stopped; no gradebook written", file=sys.stderr)
        sys.stderr.flush()
        return 130
    print(summary_table(rows))
    if args.json:
        write_json(rows, args.json)
    if args.csv:
        write_csv(rows, args.csv)
    return 0
