"""environment.yml (conda, Binder) and requirements.txt (pip) must not drift apart."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def requirement_names(lines):
    names = set()
    for line in lines:
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def pip_section():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    for dep in env["dependencies"]:
        if isinstance(dep, dict) and "pip" in dep:
            return dep["pip"]
    return None


def test_environment_yml_installs_pip_and_python():
    deps = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    plain = [d for d in deps if isinstance(d, str)]
    assert "pip" in plain
    assert any(re.fullmatch(r"python=3\.\d+", d) for d in plain), "pin python to a minor version"


def test_environment_yml_pip_section_matches_requirements():
    pip = pip_section()
    assert pip, "environment.yml has no pip section"
    reqs = requirement_names((ROOT / "requirements.txt").read_text().splitlines())
    if pip == ["-r requirements.txt"]:
        return  # the very same file: cannot drift
    assert requirement_names(pip) == reqs


def test_requirements_are_lower_bounds_not_pins():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            assert "==" not in line, f"exact pin in requirements.txt: {line}"
            assert ">=" in line, f"no lower bound in requirements.txt: {line}"


def test_ipywidgets_range_covers_colab():
    line = next(l for l in (ROOT / "requirements.txt").read_text().splitlines()
                if l.startswith("ipywidgets"))
    assert ">=7.7" in line and "<9" in line


# --- Binder (repo2docker) and conda: checked statically, conda cannot be reached here ---------

def requirement_specs(lines):
    from packaging.requirements import Requirement
    specs = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            specs[req.name.lower().replace("_", "-")] = req.specifier
    return specs


def test_environment_yml_is_a_named_conda_environment():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert isinstance(env, dict) and env.get("name") and env.get("channels")
    assert not (ROOT / "environment.yaml").exists(), "repo2docker reads environment.yml, not .yaml"


def test_environment_yml_pip_section_has_the_same_bounds_as_requirements():
    pip = pip_section()
    if pip == ["-r requirements.txt"]:
        pytest.skip("environment.yml installs requirements.txt itself")
    assert requirement_specs(pip) == requirement_specs((ROOT / "requirements.txt").read_text().splitlines())


def test_environment_yml_pip_section_has_no_local_reference():
    # micromamba (Binder) resolves `-r file` against a temporary copy in /tmp, and a local
    # reference makes repo2docker rebuild the environment on every commit.
    local = [line for line in pip_section() if str(line).lstrip().startswith(("-r", "-c", "-e", ".", "/"))]
    assert not local, f"environment.yml pip section refers to local files: {local}"


# --- a hang fails one test, not the run ----------------------------------------------------------

def pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:   # Python 3.10: pytest itself depends on tomli there
        import tomli as tomllib
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def pytest_ini_options():
    return pyproject()["tool"]["pytest"]["ini_options"]


def the_test_extra():
    return requirement_names(pyproject()["project"]["optional-dependencies"]["test"])


def test_a_hung_cell_is_interrupted_before_pytest_timeout_stops_the_test():
    # nbval interrupts the kernel after --nbval-cell-timeout: only that cell fails. If
    # pytest-timeout fired first, the kernel would stay busy and every later cell of the
    # notebook would wait out the timeout again.
    options = pytest_ini_options()
    assert "pytest-timeout" in the_test_extra()
    cell_timeout = float(re.search(r"--nbval-cell-timeout=(\d+)", options["addopts"]).group(1))
    assert 0 < cell_timeout < float(options["timeout"])


# --- learners get what the lessons need; the test tools are the `test` extra ------------------
def test_the_test_tools_are_the_test_extra_and_not_a_learners_requirement():
    extra = the_test_extra()
    assert {"pytest", "pytest-xdist", "pytest-timeout", "nbval", "pyyaml", "ruff"} <= extra
    learners = requirement_names((ROOT / "requirements.txt").read_text().splitlines())
    assert not extra & learners, f"test tools in requirements.txt: {sorted(extra & learners)}"
    assert not extra & requirement_names(pip_section())
