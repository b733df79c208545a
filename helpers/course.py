"""Where the course lives: its repository address, kept in this ONE place, and its lessons.

Every notebook's "Open in Colab" badge and its setup cell are written from
:data:`REPOSITORY` by ``python -m helpers.instructor.student`` (``make student``).
To move the course, change the address here, run ``make student`` and commit
``solutions/`` and ``notebooks/``; ``tests/test_colab_setup.py`` fails if any
notebook still carries an old address.

The lessons are the notebooks in ``solutions/``: :func:`lessons` lists them, so
adding a lesson is adding its notebook (see CONTRIBUTING.md).

This module uses the standard library only: it must import anywhere.
"""

from pathlib import Path

#: The public Git repository of the course (GitHub: the Colab and Binder links need it).
REPOSITORY = "https://github.com/attention-course/self-attention-multi-head"
#: The branch that the badges open.
BRANCH = "main"
#: What of ``helpers/`` stays with the instructor (paths inside ``helpers/``): never released.
INSTRUCTOR_ONLY = ("instructor", "grade.py")

COLAB_BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
BINDER_BADGE_IMAGE = "https://mybinder.org/badge_logo.svg"

#: The folder that holds ``helpers/``, ``solutions/`` and ``notebooks/`` in a checkout.
ROOT = Path(__file__).resolve().parents[1]


def lessons(solutions=ROOT / "solutions"):
    """The course's lessons, in order: the file stems of the notebooks in ``solutions``.

    ``["01_qkv_projections", "02_scaled_scores", ...]``. A lesson need not have
    exercises; :data:`helpers.exercises.LESSONS` lists the ones that do.
    """
    return sorted(path.stem for path in Path(solutions).glob("*.ipynb"))


def github_path(repository=REPOSITORY):
    """``"owner/name"`` of a GitHub address: ``https://github.com/a/b`` -> ``"a/b"``."""
    prefix = "https://github.com/"
    address = repository.rstrip("/")
    if address.endswith(".git"):
        address = address[:-4]
    if not address.startswith(prefix) or address[len(prefix):].count("/") != 1:
        raise ValueError(f"repository: expected https://github.com/OWNER/NAME, got {repository!r}")
    return address[len(prefix):]


def folder_name(repository=REPOSITORY):
    """The folder a ``git clone`` of the repository creates: its last path part."""
    name = repository.rstrip("/").rsplit("/", 1)[-1]
    return name[:-4] if name.endswith(".git") else name


def website_url(repository=REPOSITORY):
    """The course's website: the repository's GitHub Pages (``.github/workflows/book.yml`` publishes it)."""
    owner, name = github_path(repository).split("/")
    return f"https://{owner}.github.io/{name}/"


def colab_url(path, repository=REPOSITORY, branch=BRANCH):
    """The Colab address that opens ``path`` (e.g. ``"notebooks/01_qkv_projections.ipynb"``)."""
    return f"https://colab.research.google.com/github/{github_path(repository)}/blob/{branch}/{path}"


def colab_badge(path, repository=REPOSITORY, branch=BRANCH):
    """Markdown for an "Open In Colab" badge that opens ``path``."""
    return f"[![Open In Colab]({COLAB_BADGE_IMAGE})]({colab_url(path, repository, branch)})"


def binder_url(path="notebooks", repository=REPOSITORY, branch=BRANCH):
    """The Binder address that opens JupyterLab on ``path`` (a folder or a notebook)."""
    return f"https://mybinder.org/v2/gh/{github_path(repository)}/{branch}?urlpath=lab/tree/{path}"


def binder_badge(path="notebooks", repository=REPOSITORY, branch=BRANCH):
    """Markdown for a "Launch Binder" badge."""
    return f"[![Binder]({BINDER_BADGE_IMAGE})]({binder_url(path, repository, branch)})"


SETUP_TITLE = "# @title Setup: run this cell first (it makes the course's `helpers` importable)"
"""The setup cell's first line. Colab shows a cell whose first line is ``# @title ...`` as a
form: the title, with the code folded away (``SETUP_METADATA`` asks for that too)."""

SETUP_METADATA = {"cellView": "form", "jupyter": {"source_hidden": True}}
"""The setup cell's metadata: a form in Colab, the code collapsed in JupyterLab."""

_SETUP_CELL = SETUP_TITLE + '''
# Makes the course's `helpers` package importable: in a checkout of the course
# (with or without `pip install -e .`), on Binder, and in Google Colab.
import sys
from pathlib import Path

COURSE_REPOSITORY = "{repository}"

if "google.colab" in sys.modules:
    # Colab: fetch the course once (a shallow git clone) and use Colab's own numpy,
    # matplotlib and ipywidgets: nothing is installed.
    course = Path.cwd() / "{folder}"
    if not (course / "helpers" / "__init__.py").exists():
        import subprocess
        clone = ["git", "clone", "--depth", "1", "--quiet", COURSE_REPOSITORY, str(course)]
        git = subprocess.run(clone, capture_output=True, text=True)
        if git.returncode != 0:
            said = (git.stderr.strip().splitlines() or ["no reason given"])[-1]
            raise RuntimeError(
                f"The course could not be downloaded from {{COURSE_REPOSITORY}} "
                f"(git: {{said}}): check that this address opens in your browser "
                "and that Colab is online, then run this cell again.")
    if str(course) not in sys.path:
        sys.path.insert(0, str(course))
else:
    for folder in [Path.cwd(), *Path.cwd().parents]:
        if (folder / "helpers" / "__init__.py").exists():
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
            break'''


def setup_cell_source(repository=REPOSITORY):
    """The source of the setup cell that opens every lesson (its first code cell)."""
    return _SETUP_CELL.format(repository=repository, folder=folder_name(repository))


def next_lesson_line(text, target, path, repository=REPOSITORY, branch=BRANCH):
    """The "Next:" line of a lesson: a relative link, and the same lesson opened in Colab.

    A relative link works in JupyterLab and on GitHub; Colab opens a notebook from its
    address, so the line carries both.

    Parameters
    ----------
    text : str
        The link text, e.g. ``"Lesson 02 — the score grid"``.
    target : str
        The next notebook's file name, e.g. ``"02_scaled_scores.ipynb"``.
    path : str
        The folder both notebooks sit in, inside the repository: ``"notebooks"`` or ``"solutions"``.
    repository, branch : str
        Where the course is published (default: this module's).
    """
    return (f"**Next:** [{text}]({target}) "
            f"([open it in Colab]({colab_url(f'{path}/{target}', repository, branch)}))")

