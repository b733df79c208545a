"""Scoring and reports: a submission's row from what its run left, and the gradebook files.

Points
------
Every exercise is worth :data:`POINTS_PER_EXERCISE` points; a learner gets the
fraction of hidden cases their function passes (rounded to 0.1); a case it does not
finish within the checks' per-case time limit is failed, and only that case. Not attempted
(the stub still raises ``NotImplementedError``), missing, never reached, or
computed with the course's own answer to that exercise: 0. The feedback names
the mistake the way the notebook's own checks do.

A row (one per submission, the JSON's list items)::

    {"submission", "lesson", "score", "max_score", "error", "seed",
     "exercises": {NAME: {"points", "max_points", "passed", "feedback"}}}

The CSV (:func:`write_csv`) has the same rows, each exercise's points and feedback side
by side.
"""

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .notebook import lessons

POINTS_PER_EXERCISE = 10
_MAX_FEEDBACK_MESSAGES = 3


@dataclass
class Run:
    """What running one instrumented notebook left behind.

    ``problem``: None, ``"timeout"``, ``"died"`` or a description of why the
    notebook could not run. ``at``: index (in the notebook run) of the cell running
    at the end, or None. ``errors``: ``{index: "Ename: value"}`` of the cells that
    raised. ``records``: the grader cells' JSON records.
    """

    problem: Optional[str] = None
    at: Optional[int] = None
    errors: dict = field(default_factory=dict)
    records: list = field(default_factory=list)


def new_row(submission, seed, lesson=None, error=None):
    """An empty row (no exercise graded yet)."""
    max_score = POINTS_PER_EXERCISE * len(lessons().get(lesson, [])) if lesson else 0
    return {"submission": str(submission), "lesson": lesson, "score": 0.0,
            "max_score": max_score, "error": error, "seed": seed, "exercises": {}}


def _failure_feedback(name, result):
    passed, total = result["passed"], result["total"]
    messages = list(dict.fromkeys(result["failures"]))   # unique, in order
    shown = messages[:_MAX_FEEDBACK_MESSAGES]
    more = len(messages) - len(shown)
    return (f"{name} passed {passed} of {total} hidden checks. "
            + " | ".join(f"{name} {m}" for m in shown)
            + (f" | (+{more} more)" if more else ""))


def exercise_row(name, records, problem, syntax_error=None):
    """Points, passed flag and feedback of one exercise from its grader records.

    ``syntax_error``: the syntax error of the exercise's cell, if any.
    """
    row = {"points": 0.0, "max_points": POINTS_PER_EXERCISE, "passed": False, "feedback": ""}
    mine = [r for r in records if r.get("exercise") == name]
    finished = [r for r in mine if r.get("status") in ("graded", "crashed")]
    last = mine[-1] if mine else None
    if last is not None and last.get("status") == "evaluating":
        what = {"timeout": "grading it ran past the notebook's time limit (one step too long "
                           "for the per-case limit to stop, such as a huge NumPy call?)",
                "died": "grading it made the kernel die (os._exit, a crash, out of memory?)"}
        row["feedback"] = f"{name}: {what.get(problem, 'grading it did not finish')}"
        return row
    if syntax_error and not finished:
        row["feedback"] = f"{name}: its cell has a syntax error ({syntax_error})"
        return row
    if not finished:
        if last is not None:
            row["feedback"] = f"{name} is not a function after its exercise cell (cell {last['cell']})"
        elif problem in ("timeout", "died"):
            row["feedback"] = f"{name} was never reached: the notebook stopped before its cell"
        else:
            row["feedback"] = f"{name} is not defined anywhere in the notebook"
        return row
    result = finished[-1]
    if result["status"] == "crashed":
        row["feedback"] = f"{name}: grading it raised {result['message']}"
    elif result["used"]:
        row["feedback"] = (f"{name}: 0 points: it calls the course's own answer to this exercise "
                           f"({', '.join(result['used'])}). Write it yourself; the lesson's "
                           f"functions for other steps are fine to use.")
    elif result["not_attempted"]:
        row["feedback"] = f"{name}: not attempted (it still raises NotImplementedError)"
    else:
        passed, total = result["passed"], result["total"]
        row["points"] = round(POINTS_PER_EXERCISE * passed / total, 1) if total else 0.0
        row["passed"] = total > 0 and passed == total
        row["feedback"] = (f"{name} passed all {total} hidden checks" if row["passed"]
                           else _failure_feedback(name, result))
    if result.get("replaced"):
        row["feedback"] += (f" (It was stopped, so the rest of the notebook ran with the "
                            f"course's {name}: the other exercises were graded as usual.)")
    return row


def fill_row(row, run, numbers, syntax_errors, exercise_cells, timeout):
    """Score ``row`` (in place) from a finished run; return it.

    Parameters
    ----------
    run : Run
    numbers : list
        ``numbers[i]``: the submission's cell number of cell i of the run (None
        for a grader cell).
    syntax_errors : dict
        ``{cell number: "SyntaxError: ..."}`` of the submission.
    exercise_cells : dict
        ``{name: cell number}`` of the exercise cells found.
    timeout : float
        The time limit, for the message.
    """
    names = lessons()[row["lesson"]]
    errors = [f"cell {n}: {e}" for n, e in syntax_errors.items()]
    at, where = run.at, ""
    if at is not None and numbers[at] is not None:
        where = f" in cell {numbers[at]}"
    elif at:   # in a grader cell: while running the learner's function on the hidden cases
        where = f" while grading the function of cell {numbers[at - 1]}"
    if run.problem == "timeout":
        errors.append(f"timed out after {timeout:g} s{where}; the kernel was killed")
    elif run.problem == "died":
        errors.append(f"the kernel died{where} (os._exit, os.kill, a crash, out of memory?)")
    elif run.problem:
        errors.append(f"could not run the notebook: {run.problem}")
    for index, message in sorted(run.errors.items()):
        if numbers[index] is not None and message.startswith("SystemExit"):
            errors.append(f"cell {numbers[index]} called sys.exit ({message})")
    for name in names:
        cell = exercise_cells.get(name)
        row["exercises"][name] = exercise_row(name, run.records, run.problem,
                                              syntax_errors.get(cell))
        if cell is None:
            errors.append(f"{name} is not defined in the notebook")
    row["score"] = round(sum(e["points"] for e in row["exercises"].values()), 1)
    row["error"] = "; ".join(dict.fromkeys(errors)) or None
    return row


# ----------------------------------------------------------------- reports
def exercise_columns(rows):
    """Exercise names present in ``rows``, in course order."""
    present = {name for row in rows for name in row["exercises"]}
    ordered = [name for names in lessons().values() for name in names if name in present]
    return ordered + sorted(present - set(ordered))


def write_json(rows, path):
    Path(path).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


#: The CSV column of an exercise's feedback, beside its points' column (``NAME``).
FEEDBACK_COLUMN = "{name} feedback"


def write_csv(rows, path):
    """One line per submission: its points and feedback per exercise, the total, the error.

    Columns: ``submission, lesson``, then for each exercise present (in course order)
    ``NAME`` (points) and ``NAME feedback``, then ``score, max_score, error``. An
    exercise of another lesson than the row's is left empty.
    """
    columns = exercise_columns(rows)
    header = ["submission", "lesson"]
    for name in columns:
        header += [name, FEEDBACK_COLUMN.format(name=name)]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header + ["score", "max_score", "error"])
        for row in rows:
            cells = []
            for name in columns:
                graded = row["exercises"].get(name)
                cells += [graded["points"], graded["feedback"]] if graded else ["", ""]
            writer.writerow([row["submission"], row["lesson"] or "", *cells,
                             row["score"], row["max_score"], row["error"] or ""])


def _short(text, width):
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def summary_table(rows):
    """A plain-text table: one line per submission, then the class average."""
    header = ("submission", "lesson", "score", "notes")
    lines = []
    for row in rows:
        score = f"{row['score']:g}/{row['max_score']:g}"
        notes = row["error"] or ", ".join(
            f"{name} not attempted" if "not attempted" in e["feedback"]
            else f"{name} {e['points']:g}/{e['max_points']:g}"
            for name, e in row["exercises"].items() if not e["passed"]) or "all passed"
        lines.append((_short(Path(row["submission"]).name, 40), row["lesson"] or "?", score,
                      _short(notes, 70)))
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) if lines else len(header[i])
              for i in range(3)]
    fmt = f"{{:<{widths[0]}}}  {{:<{widths[1]}}}  {{:>{widths[2]}}}  {{}}"
    out = [fmt.format(*header), fmt.format(*("-" * w for w in widths), "-----")]
    out += [fmt.format(*line) for line in lines]
    graded = [r for r in rows if r["max_score"]]
    if graded:
        mean = sum(r["score"] / r["max_score"] for r in graded) / len(graded)
        out.append(f"{len(rows)} submissions graded; mean {100 * mean:.0f}% of the points; "
                   f"{sum(1 for r in rows if r['error'])} with an error noted")
    return "\n".join(out)


def progress_printer(stream):
    """``progress(done, total, row, seconds)``: one line per graded submission on ``stream``."""
    tty = stream.isatty()

    def progress(done, total, row, seconds):
        name = _short(Path(row["submission"]).name, 40)
        flag = "  (error noted)" if row["error"] else ""
        text = (f"[{done}/{total}] {name}: {row['score']:g}/{row['max_score']:g} "
                f"in {seconds:.1f} s{flag}")
        if tty:
            stream.write("\r\x1b[K" + text + ("\n" if done == total else ""))
        else:
            stream.write(text + "\n")
        stream.flush()

    return progress
