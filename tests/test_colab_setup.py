"""Colab readiness: one repository address, the same badge and setup cell in every notebook,
and the setup cell's Colab path, simulated.

The simulation stands a fake ``google.colab`` module in for Colab and a local git
repository (``file://``) in for the course's address, then runs the setup cell in a
fresh Python in an empty folder, as Colab does in ``/content``.
"""

import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

import nbformat
import pytest

from helpers import course

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [(folder, p.name) for folder in ("solutions", "notebooks")
             for p in sorted((ROOT / folder).glob("*.ipynb"))]


def read(folder, name):
    return nbformat.read(str(ROOT / folder / name), as_version=4)


# --- the one address -------------------------------------------------------------------------

@pytest.mark.parametrize("repository, expected", [
    ("https://github.com/a/b", "a/b"),
    ("https://github.com/a/b/", "a/b"),
    ("https://github.com/a/b.git", "a/b"),
])
def test_github_path_is_owner_slash_name(repository, expected):
    assert course.github_path(repository) == expected


@pytest.mark.parametrize("bad", ["https://gitlab.com/a/b", "https://github.com/a", "a/b",
                                 "https://github.com/a/b/c"])
def test_github_path_rejects_an_address_that_is_not_a_github_repository(bad):
    with pytest.raises(ValueError, match="repository"):
        course.github_path(bad)


def test_colab_url_opens_the_file_on_the_branch():
    url = course.colab_url("notebooks/x.ipynb", repository="https://github.com/a/b", branch="dev")
    assert url == "https://colab.research.google.com/github/a/b/blob/dev/notebooks/x.ipynb"


def test_binder_url_opens_jupyterlab_on_the_folder():
    url = course.binder_url("notebooks", repository="https://github.com/a/b", branch="main")
    assert url == "https://mybinder.org/v2/gh/a/b/main?urlpath=lab/tree/notebooks"


def test_setup_cell_names_the_address_once_and_compiles():
    source = course.setup_cell_source("https://github.com/a/b")
    assert source.count("https://github.com/a/b") == 1
    compile(source, "setup", "exec")


def code_without_comments(source):
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return tokenize.untokenize((t.type, t.string) for t in tokens if t.type != tokenize.COMMENT)


def test_code_without_comments_drops_only_comments():
    assert "pip" not in code_without_comments("x = 1  # pip install y\n")
    assert "pip" in code_without_comments("run('pip')\n")


def test_setup_cell_calls_no_installer():
    code = code_without_comments(course.setup_cell_source())
    assert "pip" not in code and "conda" not in code


# --- every notebook carries them --------------------------------------------------------------

def test_there_are_notebooks_to_check():
    assert NOTEBOOKS


@pytest.mark.parametrize("folder, name", NOTEBOOKS)
def test_notebook_opens_with_a_colab_badge_for_the_student_version(folder, name):
    # Solutions too: nbgrader releases the solution notebooks, and a learner's badge
    # must not open the solutions.
    nb = read(folder, name)
    first_markdown = next(c for c in nb.cells if c.cell_type == "markdown")
    assert course.colab_badge(f"notebooks/{name}") in first_markdown.source, \
        f"{folder}/{name}: no (or a stale) Colab badge: run `make student`"


@pytest.mark.parametrize("folder, name", NOTEBOOKS)
def test_notebook_first_code_cell_is_the_setup_cell(folder, name):
    nb = read(folder, name)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert first_code.source == course.setup_cell_source(), \
        f"{folder}/{name}: the setup cell is missing or stale: run `make student`"


ADDRESS_LIKE = re.compile(r"(?:github\.com|colab\.research\.google\.com/github|mybinder\.org/v2/gh)"
                          r"/([\w.-]+/[\w.-]+)")


def addresses(text):
    return {m.group(1).removesuffix(".git") for m in ADDRESS_LIKE.finditer(text)}


def test_address_pattern_finds_repositories_in_links():
    text = ("[a](https://colab.research.google.com/github/o/n/blob/main/x.ipynb) "
            "https://mybinder.org/v2/gh/o/n/main https://github.com/p/q.git")
    assert addresses(text) == {"o/n", "p/q"}


@pytest.mark.parametrize("path", [f"{f}/{n}" for f, n in NOTEBOOKS] + ["README.md"])
def test_only_the_course_address_is_named(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    assert addresses(text) <= {course.github_path()}, \
        f"{path} names another repository than helpers/course.py's REPOSITORY"


@pytest.mark.parametrize("lesson", course.lessons())
def test_readme_lists_every_lesson_with_its_colab_badge(lesson):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"(notebooks/{lesson}.ipynb)" in readme, f"README.md's lesson table has no row for {lesson}"
    assert course.colab_badge(f"notebooks/{lesson}.ipynb") in readme, \
        f"README.md's row for {lesson} has no (or a stale) Colab badge"


# --- the Colab path, simulated ------------------------------------------------------------------

def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main",
                    *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def stand_in_repository(tmp_path_factory):
    """A git repository holding the course's helpers, standing in for the real address."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path_factory.mktemp("remote") / "self-attention-multi-head"
    shutil.copytree(ROOT / "helpers", repo / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "marker.txt").write_text("stand-in for the course repository\n")
    git("init", "-q", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "course", cwd=repo)
    return repo


@pytest.fixture(scope="module")
def fake_colab(tmp_path_factory):
    """A folder to put on PYTHONPATH whose ``google.colab`` stands in for Colab's."""
    folder = tmp_path_factory.mktemp("fake_colab")
    (folder / "google" / "colab").mkdir(parents=True)
    (folder / "google" / "__init__.py").write_text("")
    (folder / "google" / "colab" / "__init__.py").write_text("# stand-in for Colab\n")
    return folder


PROBE = textwrap.dedent("""
    import importlib.metadata, json, sys
    {preamble}
    before = sorted((d.metadata["Name"], d.version) for d in importlib.metadata.distributions())
    for _ in range({runs}):
        exec(compile({source!r}, "setup-cell", "exec"))
    after = sorted((d.metadata["Name"], d.version) for d in importlib.metadata.distributions())
    import helpers, helpers.checks, numpy, matplotlib, ipywidgets
    print(json.dumps({{"helpers": helpers.__file__, "numpy": numpy.__file__,
                      "path": sys.path, "installed_before": before, "installed_after": after}}))
""")


def run_setup_cell(cwd, repository, colab_folder=None, runs=1):
    """Run the setup cell (for ``repository``) in a fresh Python in ``cwd``; return what it saw."""
    preamble = "import google.colab" if colab_folder else ""
    code = PROBE.format(preamble=preamble, runs=runs, source=course.setup_cell_source(repository))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if colab_folder:
        env["PYTHONPATH"] = str(colab_folder)
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_in_colab_the_setup_cell_clones_the_course_and_imports_its_helpers(
        tmp_path, stand_in_repository, fake_colab):
    seen = run_setup_cell(tmp_path, stand_in_repository.as_uri(), fake_colab)
    clone = tmp_path / "self-attention-multi-head"
    assert (clone / "marker.txt").exists(), "the course was not cloned into the working folder"
    assert Path(seen["helpers"]).resolve().is_relative_to(clone.resolve())


def test_in_colab_the_setup_cell_installs_nothing(tmp_path, stand_in_repository, fake_colab):
    seen = run_setup_cell(tmp_path, stand_in_repository.as_uri(), fake_colab)
    assert seen["installed_after"] == seen["installed_before"]
    assert not Path(seen["numpy"]).resolve().is_relative_to(tmp_path.resolve())


def test_in_colab_running_the_setup_cell_again_clones_once_and_adds_one_path(
        tmp_path, stand_in_repository, fake_colab):
    seen = run_setup_cell(tmp_path, stand_in_repository.as_uri(), fake_colab, runs=3)
    clone = str(tmp_path / "self-attention-multi-head")
    assert seen["path"].count(clone) == 1


def test_in_colab_a_second_notebook_reuses_the_clone_without_the_network(
        tmp_path, stand_in_repository, fake_colab):
    run_setup_cell(tmp_path, stand_in_repository.as_uri(), fake_colab)
    unreachable = (tmp_path / "gone" / "self-attention-multi-head").as_uri()
    seen = run_setup_cell(tmp_path, unreachable, fake_colab)   # would fail if it cloned again
    assert Path(seen["helpers"]).resolve().is_relative_to((tmp_path / "self-attention-multi-head").resolve())


def test_outside_colab_the_setup_cell_uses_the_checkout_and_clones_nothing(tmp_path, stand_in_repository):
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "helpers", checkout / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / "notebooks").mkdir()
    seen = run_setup_cell(checkout / "notebooks", stand_in_repository.as_uri())
    assert Path(seen["helpers"]).resolve().is_relative_to(checkout.resolve())
    assert not (checkout / "notebooks" / "self-attention-multi-head").exists()


def test_in_colab_an_unreachable_address_stops_with_one_sentence_saying_what_to_do(tmp_path, fake_colab):
    unreachable = (tmp_path / "nowhere" / "self-attention-multi-head").as_uri()
    code = f"import google.colab\nexec(compile({course.setup_cell_source(unreachable)!r}, 'setup', 'exec'))"
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(fake_colab)), timeout=120)
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode != 0 and "CalledProcessError" not in result.stderr, result.stderr
    expected = f"RuntimeError: The course could not be downloaded from {unreachable} (git: "
    assert last.startswith(expected), last
    assert last.endswith("then run this cell again."), last
