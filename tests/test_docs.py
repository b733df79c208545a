"""The documents say what is true: README for learners, CONTRIBUTING's layout, LICENSE, the CI workflow."""

import re
from pathlib import Path

import pytest
import yaml

import helpers
from helpers import course

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


# ----------------------------------------------------------------- README
def readme_lessons(text):
    """The lessons of the README's table rows, in the order they appear."""
    return re.findall(r"^\|\s*\d+\s*\|.*?\]\(notebooks/([^)/]+)\.ipynb\)", text, flags=re.M)


def test_readme_lists_every_lesson_once_in_order():
    assert readme_lessons(README) == course.lessons()


def test_readme_row_numbers_are_the_lessons_numbers():
    numbers = re.findall(r"^\|\s*(\d+)\s*\|.*\]\(notebooks/", README, flags=re.M)
    assert numbers == [lesson[:2] for lesson in course.lessons()]


def test_a_lesson_out_of_order_is_caught():
    rows = [line for line in README.splitlines() if readme_lessons(line)]
    swapped = README.replace(rows[6], "@@").replace(rows[8], rows[6]).replace("@@", rows[8])
    assert readme_lessons(swapped) != course.lessons()


def test_readme_is_short_and_links_the_website_and_the_instructors_page():
    assert len(README.encode()) <= 8 * 1024
    assert course.website_url() in README
    assert "(docs/instructors.md)" in README and (ROOT / "docs" / "instructors.md").exists()


def test_the_website_is_the_repositorys_github_pages():
    assert course.website_url("https://github.com/a-b/c.d") == "https://a-b.github.io/c.d/"


@pytest.mark.parametrize("page", ["README.md", "CONTRIBUTING.md", "docs/instructors.md"])
def test_every_relative_link_of_a_page_resolves(page):
    path = ROOT / page
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    local = [link for link in links if "://" not in link]
    assert local
    missing = [link for link in local if not (path.parent / link).exists()]
    assert not missing, f"{page} links to files that do not exist: {missing}"


def test_the_instructors_page_keeps_what_the_readme_gave_instructors():
    text = (ROOT / "docs" / "instructors.md").read_text(encoding="utf-8")
    for needed in ("python -m helpers.grade", "nbgrader generate_assignment", "make release",
                   "docker run", "make student"):
        assert needed in text, needed


# ----------------------------------------------------------------- CONTRIBUTING's layout
def layout_entries(text):
    """``(path, listed_children)`` for every file or folder the layout block names, under helpers/."""
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    entries, stack = [], []                       # stack: (indent, folder path)
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        names = []
        for token in line.split():
            if not re.fullmatch(r"[\w.-]+(\.py|/)", token):
                break
            names.append(token)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else ""
        for name in names:
            entries.append(parent + name)
        if len(names) == 1 and names[0].endswith("/"):
            stack.append((indent, parent + names[0]))
    return [e for e in entries if e.startswith("helpers/")]


def test_the_layout_parser_reads_nesting():
    text = "## Layout\n```\nhelpers/\n  a.py  x\n  sub/    y\n    b.py  z\ntests/  t\n```\n"
    assert layout_entries(text) == ["helpers/", "helpers/a.py", "helpers/sub/", "helpers/sub/b.py"]


def test_every_module_contributing_names_exists():
    missing = [entry for entry in layout_entries(CONTRIBUTING) if not (ROOT / entry).exists()]
    assert not missing, f"CONTRIBUTING.md's layout names what does not exist: {missing}"


def test_every_module_of_helpers_is_named_in_contributing():
    entries = set(layout_entries(CONTRIBUTING))
    listed = {entry.rstrip("/") for entry in entries}
    # a folder with no line of its own below it is named as a whole
    wholes = {e for e in entries if e.endswith("/") and not any(o != e and o.startswith(e) for o in entries)}
    unnamed = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative not in listed and not any(relative.startswith(w) for w in wholes):
            unnamed.append(relative)
    assert not unnamed, f"CONTRIBUTING.md's layout does not name {unnamed}"


def test_the_package_map_names_every_module_of_helpers_and_nothing_else():
    named = set(re.findall(r":mod:`helpers\.(\w+)`", helpers.__doc__))
    folder = ROOT / "helpers"
    modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    packages = {path.parent.name for path in folder.glob("*/__init__.py")}
    assert named == modules | packages, (f"helpers/__init__.py's map names what does not exist: "
                                         f"{sorted(named - modules - packages)}; leaves out: "
                                         f"{sorted((modules | packages) - named)}")


def test_contributing_is_short_and_keeps_no_machine_timings():
    assert len(CONTRIBUTING.encode()) <= 12 * 1024
    assert not re.search(r"\b\d+(\.\d+)? ?(min|minutes|CPU-s)\b|on this \d-core machine", CONTRIBUTING)


# ----------------------------------------------------------------- LICENSE and CI
def test_license_states_mit_for_code_and_cc_by_4_0_for_the_lesson_text():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in text and "Permission is hereby granted, free of charge" in text
    assert "CC BY 4.0" in text and "https://creativecommons.org/licenses/by/4.0/" in text


def test_the_tests_workflow_runs_ci_on_push_and_pull_request():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "tests.yml").read_text())
    triggers = workflow.get("on", workflow.get(True))          # YAML 1.1 reads `on` as True
    assert {"push", "pull_request"} <= set(triggers)
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    assert any(step.get("run", "").strip() == ".ci/run" for step in steps)          # the full job
    assert any(step.get("run", "").strip() == "make test" for step in steps)        # the quick one
    assert (ROOT / ".github" / "workflows" / "book.yml").exists()


@pytest.mark.parametrize("command", ["make lint", "make test", "make test-integration"])
def test_ci_runs_the_lint_the_tests_and_the_integrations(command):
    assert re.search(rf"^(\S+=\S+ )*{command}$", (ROOT / ".ci" / "run").read_text(), flags=re.M)
