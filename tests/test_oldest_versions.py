"""The oldest supported versions (constraints-oldest.txt) are what requirements.txt promises.

``make test-oldest`` (run by .ci/run) installs requirements.txt under these constraints into
``.venv-oldest`` and runs the whole suite there with ``COURSE_OLDEST=1``; then the last test
also checks that the versions installed really are the oldest ones.
"""

import importlib.metadata
import os
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def parse(path):
    reqs = {}
    for line in (ROOT / path).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            reqs[req.name.lower().replace("_", "-")] = req
    return reqs


REQUIREMENTS = parse("requirements.txt")
CONSTRAINTS = parse("constraints-oldest.txt")


def lower_bound(req):
    return next(Version(s.version) for s in req.specifier if s.operator == ">=")


def pinned(req):
    (spec,) = req.specifier
    assert spec.operator == "==", f"constraints-oldest.txt: pin {req} with =="
    return spec.version


@pytest.mark.parametrize("name", ["numpy", "matplotlib"])
def test_oldest_numpy_and_matplotlib_sit_at_the_requirements_lower_bound(name):
    version = Version(pinned(CONSTRAINTS[name]))
    bound = lower_bound(REQUIREMENTS[name])
    assert version == bound, \
        f"constraints-oldest.txt pins {name}=={version} but requirements.txt's lower bound is {bound}"


def test_oldest_ipywidgets_is_colabs_7_7():
    assert re.fullmatch(r"7\.7\.[\d*]+", pinned(CONSTRAINTS["ipywidgets"]))


def test_oldest_ipython_is_older_than_8_like_colabs():
    assert Version(pinned(CONSTRAINTS["ipython"]).replace("*", "0")).major == 7


@pytest.mark.parametrize("name", sorted(set(CONSTRAINTS) & set(REQUIREMENTS)))
def test_every_oldest_version_is_allowed_by_requirements(name):
    version = pinned(CONSTRAINTS[name]).replace(".*", ".0")
    assert REQUIREMENTS[name].specifier.contains(version), \
        f"constraints-oldest.txt pins {name}=={version}, outside requirements.txt's {REQUIREMENTS[name]}"


@pytest.mark.skipif(os.environ.get("COURSE_OLDEST") != "1",
                    reason="not the oldest-versions run (make test-oldest sets COURSE_OLDEST=1)")
@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_this_run_has_the_oldest_versions_installed(name):
    installed = importlib.metadata.version(name)
    assert CONSTRAINTS[name].specifier.contains(installed), \
        f"{name} {installed} is installed, not {CONSTRAINTS[name].specifier}"
