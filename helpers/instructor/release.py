"""Write what learners get, ready to publish.

    python -m helpers.instructor.release DIR [--repository URL] [--branch NAME]
    make release DIR=folder [REPOSITORY=URL]

``DIR`` receives:

- ``notebooks/``: the student notebooks, generated afresh from ``solutions/``, their
  "Open in Colab" badges and setup cells pointing at ``--repository`` (where you
  will publish ``DIR``);
- ``helpers/``: the learner-facing package -- the reference implementations the
  lessons fall back on, the checks, plots, widgets, data -- with
  ``helpers/course.py`` naming ``--repository``;
- ``README.md`` (the lessons and their badges), ``requirements.txt``,
  ``environment.yml`` (Binder) and ``pyproject.toml`` (``pip install -e .``).

Left out: ``solutions/``, the instructor tools (``helpers/instructor/``: the grader,
this tool, the student-notebook generator) and ``helpers/grade.py``, the tests,
the benchmarks and the nbgrader settings. The hidden cases do not ship either:
the grader draws them afresh for each grading run.

``DIR`` may be a checkout of the repository you publish to: its ``notebooks/`` and
``helpers/`` are replaced, the files above overwritten, anything else left alone.
"""

import argparse
import re
import shutil
import sys
from pathlib import Path

import nbformat

from helpers import course

from .student import ROOT, student_text

#: Files copied as they are from the course's root.
TOP_FILES = ("requirements.txt", "environment.yml", "pyproject.toml", "LICENSE")


def _learner_file(relative):
    parts = Path(relative).parts
    return (parts[0] not in course.INSTRUCTOR_ONLY and "__pycache__" not in parts
            and not relative.name.endswith((".pyc", ".pyo")))


def copy_helpers(target, repository, branch):
    """Copy the learner-facing part of ``helpers/`` into ``target`` (replaced)."""
    source = ROOT / "helpers"
    if target.exists():
        shutil.rmtree(target)
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_file() and _learner_file(relative):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target / relative)
    address = target / "course.py"
    text = address.read_text(encoding="utf-8")
    text = re.sub(r'^REPOSITORY = ".*"$', f'REPOSITORY = "{repository}"', text, count=1, flags=re.M)
    text = re.sub(r'^BRANCH = ".*"$', f'BRANCH = "{branch}"', text, count=1, flags=re.M)
    address.write_text(text, encoding="utf-8")


def write_notebooks(target, repository, branch):
    """Write the student notebooks into ``target`` (replaced); return their paths."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    written = []
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        path = target / solution.name
        path.write_text(student_text(solution, repository, branch), encoding="utf-8")
        written.append(path)
    return written


def lesson_title(path):
    """The title of a lesson notebook: its first markdown heading, without the ``#``."""
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
            if first.startswith("#"):
                return first.lstrip("#").strip()
    return path.stem


def readme(notebooks, repository, branch):
    """A learner's README: how to open the course, and each lesson with its Colab badge."""
    lines = ["# Self-Attention & Multi-Head", "",
             course.binder_badge("notebooks", repository, branch), "",
             "A hands-on course, in Jupyter notebooks, on how attention works. Open a lesson "
             "in Colab (its badge below), on Binder (the badge above), or on your machine:", "",
             "```bash",
             "python -m venv .venv && .venv/bin/pip install -r requirements.txt -e .",
             ".venv/bin/jupyter lab notebooks/",
             "```", "",
             "Fill in each exercise cell, then run the check cell below it.", "",
             "| lesson | Colab |", "|---|---|"]
    for path in notebooks:
        where = f"notebooks/{path.name}"
        lines.append(f"| [{lesson_title(path)}]({where}) | "
                     f"{course.colab_badge(where, repository, branch)} |")
    return "\n".join(lines) + "\n"


def release(directory, repository=course.REPOSITORY, branch=course.BRANCH):
    """Write the learners' copy of the course into ``directory``; return the files written."""
    directory = Path(directory).resolve()
    if directory == ROOT.resolve():
        raise ValueError(f"release: DIR must not be the course itself ({ROOT})")
    course.github_path(repository)   # a clear ValueError for an address Colab cannot open
    directory.mkdir(parents=True, exist_ok=True)
    notebooks = write_notebooks(directory / "notebooks", repository, branch)
    copy_helpers(directory / "helpers", repository, branch)
    for name in TOP_FILES:
        if (ROOT / name).exists():
            shutil.copyfile(ROOT / name, directory / name)
    (directory / "README.md").write_text(readme(notebooks, repository, branch), encoding="utf-8")
    return sorted(p for p in directory.rglob("*") if p.is_file() and ".git" not in p.parts)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m helpers.instructor.release",
                                     description="Write what learners get (student notebooks and "
                                                 "the learner-facing helpers) into DIR.")
    parser.add_argument("directory", metavar="DIR", help="the folder to write (created if missing)")
    parser.add_argument("--repository", default=course.REPOSITORY,
                        help=f"the GitHub address where DIR will be published: the Colab badges "
                             f"and setup cells point there (default {course.REPOSITORY})")
    parser.add_argument("--branch", default=course.BRANCH,
                        help=f"the branch the badges open (default {course.BRANCH})")
    args = parser.parse_args(argv)
    try:
        files = release(args.directory, args.repository, args.branch)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"wrote {len(files)} files into {args.directory} (badges: {args.repository}, "
          f"branch {args.branch})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
