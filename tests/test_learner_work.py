"""A learner's work is never lost (the README: a learner works in my-notebooks/).

A learner works where the README says: ``my-notebooks/``, the copy of the lessons that
``make lab`` makes on first use (git-ignored). In a checkout of the course (a git clone of
a stand-in upstream, with this worktree's ``.venv``), the learner fills in lesson 01's first
exercise there, then runs every command a learner could run: ``git pull`` (after the
upstream changed that very lesson), ``make lab`` (the real JupyterLab, started and stopped),
``make student``, ``make test`` (limited to the notebook-sync test), ``make release`` and the
setup cell, outside Colab and in a stand-in Colab. The answer is still there, byte for byte.

``make student`` itself never overwrites a file of ``notebooks/`` holding someone's edits
(a learner who worked there anyway): it names the file, exits 1, and writes the others.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from helpers import course

# A clone, JupyterLab and make: an integration test (make test-integration, .ci/run), scheduled first.
pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[1]
LESSON = "01_qkv_projections.ipynb"
STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"
ANSWER = "    return X @ W_q, X @ W_k, X @ W_v   # my answer"
COPIED = ["Makefile", "README.md", "requirements.txt", "pyproject.toml", "conftest.py",
          "helpers", "notebooks", "solutions", "tests"]


def git(*args, cwd, check=True):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "init.defaultBranch=main", "-c", "advice.detachedHead=false", *args],
                          cwd=cwd, check=check, capture_output=True, text=True)


def make(*args, cwd, env=None, timeout=300):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def fill_in(path):
    """The learner's edit: lesson 01's ``project_qkv`` answered, saved as JupyterLab would."""
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if "def project_qkv(" in c.source)
    assert STUB in cell.source
    cell.source = cell.source.replace(STUB, ANSWER)
    nbformat.write(nb, str(path))
    return path.read_bytes()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A learner's clone of the course (and its upstream), using this worktree's .venv."""
    if shutil.which("git") is None or shutil.which("make") is None:
        pytest.skip("git and make are needed")
    if not (ROOT / ".venv" / ".test-installed").exists():
        pytest.skip("no .venv with the test tools here (make .venv/.test-installed)")
    base = tmp_path_factory.mktemp("learner")
    upstream = base / "upstream" / course.folder_name()
    upstream.mkdir(parents=True)
    for name in COPIED:     # copy2 keeps the times: make sees .venv as up to date
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, upstream / name, copy_function=shutil.copy2,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, upstream / name)
    shutil.copy2(ROOT / ".gitignore", upstream / ".gitignore")
    git("init", "-q", cwd=upstream)
    git("add", ".", cwd=upstream)
    git("commit", "-q", "-m", "the course", cwd=upstream)
    clone = base / "learner" / course.folder_name()
    git("clone", "-q", str(upstream), str(clone), cwd=base)
    os.symlink(ROOT / ".venv", clone / ".venv")
    for path in [clone / name for name in ("Makefile", "requirements.txt", "pyproject.toml")]:
        stat = (ROOT / path.name).stat()     # the clone's files are new: give them the originals' times
        os.utime(path, (stat.st_atime, stat.st_mtime))
    return upstream, clone


def run_lab(clone, env):
    """``make lab`` with the real JupyterLab: wait until it answers, then stop it (its process group)."""
    port = free_port()
    state = clone.parent / "jupyter-state"
    for sub in ("config", "runtime", "data"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    env = dict(env, JUPYTER_CONFIG_DIR=str(state / "config"), JUPYTER_RUNTIME_DIR=str(state / "runtime"),
               JUPYTER_DATA_DIR=str(state / "data"), BROWSER="true")
    args = (f"LAB_ARGS=--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
            f"--ServerApp.port_retries=0")
    log = open(clone.parent / "lab.log", "w")
    process = subprocess.Popen(["make", "--no-print-directory", "lab", args], cwd=clone, env=env,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert process.poll() is None, (clone.parent / "lab.log").read_text()
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("make lab: JupyterLab did not answer within 120 s:\n"
                        + (clone.parent / "lab.log").read_text())
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
    return (clone.parent / "lab.log").read_text()


def setup_cell(cwd, env, colab=None, repository=course.REPOSITORY):
    source = course.setup_cell_source(repository)
    code = (("import google.colab\n" if colab else "")
            + f"exec(compile({source!r}, 'setup', 'exec'))\nimport helpers")
    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    if colab:
        env["PYTHONPATH"] = str(colab)
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr


def fake_colab(folder):
    (folder / "google" / "colab").mkdir(parents=True)
    (folder / "google" / "__init__.py").write_text("")
    (folder / "google" / "colab" / "__init__.py").write_text("# stand-in for Colab\n")
    return folder


def test_an_answer_in_my_notebooks_survives_every_command_a_learner_can_run(checkout):
    upstream, clone = checkout
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MAKE", "MFLAGS"))}
    env.pop("PYTHONPATH", None)
    work = clone / "my-notebooks"

    log = run_lab(clone, env)                                   # first use: the copy is made
    lessons = sorted(p.name for p in (clone / "notebooks").glob("*.ipynb"))
    assert sorted(p.name for p in work.glob("*.ipynb")) == lessons, log
    answered = fill_in(work / LESSON)
    assert git("check-ignore", "-q", f"my-notebooks/{LESSON}", cwd=clone, check=False).returncode == 0, \
        "my-notebooks/ is not git-ignored"

    # upstream changes the very lesson the learner answered, and adds a lesson
    for folder in ("notebooks", "solutions"):
        nb = nbformat.read(str(upstream / folder / LESSON), as_version=4)
        nb.cells.append(nbformat.v4.new_markdown_cell("A correction from upstream."))
        nbformat.write(nb, str(upstream / folder / LESSON))
    shutil.copy2(upstream / "notebooks" / LESSON, upstream / "notebooks" / "99_new_lesson.ipynb")
    git("add", ".", cwd=upstream)
    git("commit", "-q", "-m", "a correction and a new lesson", cwd=upstream)

    steps = {"git pull": git("pull", "-q", cwd=clone, check=False)}
    steps["make lab (again)"] = run_lab(clone, env)
    steps["make student"] = make("student", cwd=clone, env=env)
    only_sync = dict(env, PYTEST_ADDOPTS="-n 0 -q tests/test_student_notebooks.py")
    steps["make test"] = make("test", cwd=clone, env=only_sync)
    steps["make release"] = make("release", f"DIR={clone.parent / 'release'}", cwd=clone, env=env)
    setup_cell(work, env)
    setup_cell(work, env, colab=fake_colab(clone.parent / "colab"), repository=upstream.as_uri())
    assert (work / LESSON).read_bytes() == answered, f"the answer in my-notebooks/{LESSON} changed: {steps}"
    assert (work / "99_new_lesson.ipynb").exists(), "make lab did not copy in the new lesson"
    assert "A correction from upstream." in (clone / "notebooks" / LESSON).read_text(), "git pull failed"


def test_make_student_keeps_a_notebook_a_learner_edited_in_notebooks_and_names_it(checkout, tmp_path):
    upstream, _ = checkout
    course_copy = tmp_path / course.folder_name()
    git("clone", "-q", str(upstream), str(course_copy), cwd=tmp_path)
    os.symlink(ROOT / ".venv", course_copy / ".venv")
    answered = fill_in(course_copy / "notebooks" / LESSON)
    other = course_copy / "notebooks" / "02_scaled_scores.ipynb"
    other.write_text(other.read_text().replace("Lesson 02", "Lesson 02 (stale)", 1))   # out of date
    git("commit", "-q", "-am", "my answer, and an out-of-date lesson 02", cwd=course_copy)   # both committed
    result = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "helpers.instructor.student"],
                            cwd=course_copy, capture_output=True, text=True, timeout=300)
    assert (course_copy / "notebooks" / LESSON).read_bytes() == answered
    assert result.returncode == 1
    assert f"notebooks/{LESSON}: cell" in result.stderr and "Nothing was overwritten" in result.stderr, \
        result.stderr
    assert "(stale)" not in other.read_text(), "a notebook without anyone's edits was not regenerated"
