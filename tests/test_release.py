"""``python -m helpers.instructor.release DIR``: what learners get, and nothing more.

The release is written once per module, outside the repository, for a made-up
repository address; every test reads it. That the released notebooks run, with only
the released helpers, is tested in ``tests/test_notebooks_run.py`` (once per run).
"""

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers import course
from helpers.instructor import release as release_tool
from helpers.instructor import student

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "https://github.com/someone/attention-release"
NOTEBOOKS = sorted(p.name for p in (ROOT / "solutions").glob("*.ipynb"))


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    folder = tmp_path_factory.mktemp("release") / "course"
    proc = subprocess.run([sys.executable, "-m", "helpers.instructor.release", str(folder),
                           "--repository", REPOSITORY],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return folder


def files(folder):
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_release_holds_the_notebooks_the_learner_helpers_and_the_install_files(released):
    top = {p.name for p in released.iterdir()}
    assert top == {"notebooks", "helpers", "README.md", "requirements.txt", "environment.yml",
                   "pyproject.toml", "LICENSE"}
    assert {p.name for p in (released / "notebooks").iterdir()} == set(NOTEBOOKS)


def test_release_ships_the_licence_as_it_is(released):
    assert (released / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()


def test_release_leaves_out_the_instructor_tools(released):
    shipped = {p for p in files(released) if p.startswith("helpers/")}
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "helpers").rglob("*.py")}
    instructor = {p for p in modules
                  if p.startswith("helpers/instructor/") or p == "helpers/grade.py"}
    assert instructor and not instructor & shipped
    assert {p for p in shipped if p.endswith(".py")} == modules - instructor
    assert all((ROOT / p).is_file() for p in shipped)      # and the lessons' data: files of helpers/


def _solution_blocks():
    """Each solution block of every solution notebook: (its code lines, its whole text)."""
    blocks = []
    for name in NOTEBOOKS:
        nb = nbformat.read(str(ROOT / "solutions" / name), as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            lines = cell.source.splitlines()
            for _, begin, end, _ in student.solution_blocks(cell.source):
                body = lines[begin + 1:end]
                code = [l.strip() for l in body if l.strip() and not l.strip().startswith("#")]
                blocks.append((code, "\n".join(body)))
    return blocks


def test_no_solution_markers_or_hidden_tests_ship(released):
    for path in files(released):
        content = (released / path).read_bytes()            # a lesson's data may be binary
        for marker in (student.BEGIN, student.END, student.HIDDEN_BEGIN, "hidden_test("):
            assert marker.encode() not in content, f"{path} carries {marker!r}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_release_notebook_is_the_student_notebook_with_the_new_address(released, name):
    # notebooks/ carries no solution text (tests/test_student_notebooks.py): nor does the release.
    expected = (ROOT / "notebooks" / name).read_text(encoding="utf-8")
    for old, new in ((course.REPOSITORY, REPOSITORY),
                     (course.github_path(), course.github_path(REPOSITORY)),
                     (course.folder_name(), course.folder_name(REPOSITORY))):
        expected = expected.replace(old, new)
    assert (released / "notebooks" / name).read_text(encoding="utf-8") == expected


def test_no_solution_block_ships_in_the_helpers(released):
    # The helpers do ship the reference implementations (a lesson falls back on them
    # while an exercise is not attempted), written their own way: no solution block
    # appears in them as it stands in the solution notebooks.
    texts = [(released / p).read_text(encoding="utf-8") for p in files(released)
             if p.endswith(".py")]
    for _, block in _solution_blocks():
        assert not any(block in text for text in texts), block


def test_badges_and_setup_cells_point_at_the_given_repository(released):
    for name in NOTEBOOKS:
        nb = nbformat.read(str(released / "notebooks" / name), as_version=4)
        first_markdown = next(c for c in nb.cells if c.cell_type == "markdown")
        first_code = next(c for c in nb.cells if c.cell_type == "code")
        assert course.colab_badge(f"notebooks/{name}", REPOSITORY) in first_markdown.source
        assert first_code.source == course.setup_cell_source(REPOSITORY)
    readme = (released / "README.md").read_text(encoding="utf-8")
    assert all(course.colab_badge(f"notebooks/{name}", REPOSITORY) in readme for name in NOTEBOOKS)
    assert f'REPOSITORY = "{REPOSITORY}"' in (released / "helpers" / "course.py").read_text()


def test_no_file_names_the_courses_own_address(released):
    for path in files(released):
        assert course.REPOSITORY.encode() not in (released / path).read_bytes(), path


def test_release_into_a_checkout_replaces_notebooks_and_helpers_and_keeps_the_rest(tmp_path):
    for stale in ("notebooks/old.ipynb", "helpers/old.py", ".git/HEAD", "NOTES.md"):
        (tmp_path / stale).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / stale).write_text("x")
    release_tool.release(tmp_path, REPOSITORY)
    assert not (tmp_path / "notebooks" / "old.ipynb").exists()
    assert not (tmp_path / "helpers" / "old.py").exists()
    assert (tmp_path / ".git" / "HEAD").exists() and (tmp_path / "NOTES.md").exists()


def test_release_refuses_to_write_over_the_course_itself():
    with pytest.raises(ValueError, match="must not be the course itself"):
        release_tool.release(ROOT, REPOSITORY)


def test_release_refuses_an_address_colab_cannot_open(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "helpers.instructor.release", str(tmp_path / "x"),
                           "--repository", "https://gitlab.com/a/b"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "repository" in proc.stderr
    assert not (tmp_path / "x").exists()
