# Self-Attention & Multi-Head -- the course's commands.
#   make lab          create .venv if missing, install, open JupyterLab on my-notebooks/ (your copy
#                     of the lessons, made on first use; nothing of ours overwrites it)
#   make test         create or update .venv, run the tests (on every core: pytest-xdist): unit tests,
#                     every lesson twice (solution with nbval, student as released), the grader
#   make test-fast    the same without the grading module (`slow`)
#   make test-lesson L=03   one lesson: its notebooks (both folders), its tests/*lesson03* files and
#                     its rows of tests/test_checks_versions.py
#   make lint         ruff: the pycodestyle and pyflakes rules of pyproject.toml, on every .py file
#   make student      refresh the Colab badge + setup cell of solutions/, regenerate notebooks/
#                     (a notebook with edits it did not write is left alone, named: exit 1)
#   make bench        print timings and memory figures (a benchmark, never a test)
#   make train-gpt    train lesson 12's GPT from its seed, write its checkpoint (873 s on a busy 2-core machine)
#   make release DIR=folder [REPOSITORY=https://github.com/you/course]
#                     write what learners get (student notebooks + learner-facing helpers)
#   make book         build the course as a website: _build/book/html/index.html
#   make otter [DIR=folder] [SEED=n]
#                     one Gradescope autograder per lesson (Otter-Grader): DIR/NN_topic/autograder.zip
#                     (DIR defaults to _build/otter; docs/otter.md)
# For maintainers and CI (.ci/run runs make lint, make test, then make test-integration):
#   make test-integration  what needs a browser, a website build, nbgrader or Otter (pytest -m
#                     integration; each skips without its install below), then make test-oldest
#   make browser      add Playwright to .venv for the real-browser test (needs a system Chromium)
#   make book-deps    add Sphinx + MyST-NB (requirements-book.txt) to .venv, for make book and its test
#   make nbgrader     create .venv-nbgrader, where tests/test_nbgrader.py finds nbgrader
#   make otter-env    create .venv-otter, where make otter and tests/test_otter.py find otter-grader
#   make test-oldest  in .venv-oldest, with the oldest supported versions: the unit tests and every
#                     solution notebook (what those versions can break), not the grader or integrations

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TESTED := $(VENV)/.test-installed
OLDEST_PYTHON ?= $(PYTHON)
OLDEST := .venv-oldest
NBGRADER := .venv-nbgrader
OTTER  := .venv-otter

.PHONY: lab test test-fast test-integration test-lesson lint student bench train-gpt release book book-deps browser nbgrader otter otter-env test-oldest clean

# (Re)install when requirements.txt or pyproject.toml change.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -e .
	@touch $(STAMP)

# The test tools (pytest, nbval, ruff, ...): the `test` extra of pyproject.toml, not a learner's.
$(TESTED): $(STAMP)
	$(PY) -m pip install --quiet -e ".[test]"
	@touch $(TESTED)

# A learner works in my-notebooks/: a git-ignored copy of notebooks/, made on first use. Each
# `make lab` copies in a lesson it does not have yet (a new one after `git pull`) and never
# overwrites one that is there, so `git pull` and `make student` (which change notebooks/ only)
# never touch a learner's answers.
# As root (a container, a cloud VM) JupyterLab refuses to start without --allow-root.
# LAB_ARGS: more options for jupyter lab (--no-browser, a port; tests/test_learner_work.py).
WORK := my-notebooks
lab: $(STAMP)
	@mkdir -p $(WORK)
	@for lesson in notebooks/*.ipynb; do \
		test -e "$(WORK)/$${lesson##*/}" || { cp "$$lesson" "$(WORK)/" && echo "copied $$lesson into $(WORK)/"; }; \
	done
	@echo "Your lessons are in $(WORK)/: yours to edit; git pull and make student never change them."
	$(VENV)/bin/jupyter lab $(WORK)/$(if $(filter 0,$(shell id -u 2>/dev/null)), --allow-root) $(LAB_ARGS)

# Bytecode for helpers/ first: a hundred kernels import it during a run, and where
# PYTHONDONTWRITEBYTECODE is set (as on CI) each would compile it again.
test: $(TESTED)
	$(PY) -m compileall -q helpers
	$(PY) -m pytest -m "not integration"

test-fast: $(TESTED)
	$(PY) -m compileall -q helpers
	$(PY) -m pytest -m "not slow and not integration"

# On top of make test (.ci/run): each lesson at most once more per kind of run. The modules
# skip what is not installed; REQUIRE_BROWSER=1, REQUIRE_NBGRADER=1, REQUIRE_OTTER=1 (as .ci/run
# sets) make an absence a failure.
test-integration: $(TESTED)
	$(PY) -m compileall -q helpers
	$(PY) -m pytest -m integration
	$(MAKE) test-oldest

# The lesson is found by its number: notebooks/L_*.ipynb, solutions/L_*.ipynb, tests/test_*lessonL*.py.
test-lesson: $(TESTED)
	@test -n "$(L)" || { echo "usage: make test-lesson L=03"; exit 2; }
	@test -n "$(wildcard solutions/$(L)_*.ipynb)" || { echo "no lesson $(L) in solutions/"; exit 2; }
	$(PY) -m pytest $(wildcard notebooks/$(L)_*.ipynb solutions/$(L)_*.ipynb tests/test_*lesson$(L)*.py) \
		tests/test_checks_versions.py -k "lesson$(L) or not test_checks_versions"

lint: $(TESTED)
	$(VENV)/bin/ruff check .

student: $(STAMP)
	$(PY) -m helpers.instructor.student

bench: $(STAMP)
	$(PY) benchmarks/run.py

# Lesson 12's checkpoint (helpers/lessons/l12_gpt/data/checkpoint.npz): deterministic from the
# config and seed in helpers/lessons/l12_gpt/training.py (CHECKPOINT_RUN), on one BLAS thread.
train-gpt: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m helpers.lessons.l12_gpt.training

release: $(STAMP)
	@test -n "$(DIR)" || { echo "usage: make release DIR=folder [REPOSITORY=https://github.com/you/course]"; exit 2; }
	$(PY) -m helpers.instructor.release "$(DIR)" $(if $(REPOSITORY),--repository "$(REPOSITORY)")

# The website: every student lesson executed, one page each (helpers/instructor/book.py).
book: $(VENV)/.book-installed
	$(PY) -m helpers.instructor.book _build/book

# Sphinx and MyST-NB only build the website: not a learner's requirement.
book-deps: $(VENV)/.book-installed
$(VENV)/.book-installed: $(STAMP) requirements-book.txt
	$(PY) -m pip install --quiet -r requirements-book.txt
	@touch $@

# Playwright only drives the browser: it is not a learner's requirement.
browser: $(VENV)/.browser-installed
$(VENV)/.browser-installed: $(STAMP) requirements-browser.txt
	$(PY) -m pip install --quiet -r requirements-browser.txt
	@touch $@

# nbgrader 0.9 needs JupyterLab 4 / Notebook 7: its own environment, never a learner's.
nbgrader: $(NBGRADER)/.installed
$(NBGRADER)/.installed: requirements.txt requirements-nbgrader.txt pyproject.toml
	@test -x $(NBGRADER)/bin/python || $(PYTHON) -m venv $(NBGRADER)
	$(NBGRADER)/bin/python -m pip install --quiet --upgrade pip
	$(NBGRADER)/bin/python -m pip install --quiet -r requirements.txt -r requirements-nbgrader.txt -e .
	@touch $@

# Otter-Grader builds the Gradescope autograders: its own environment, never a learner's. It holds
# the course's requirements but not the course: the grading kernels import the helpers/ copy that
# each autograder.zip carries (make otter runs from this folder, where helpers/ is importable).
otter-env: $(OTTER)/.installed
$(OTTER)/.installed: requirements.txt requirements-otter.txt
	@test -x $(OTTER)/bin/python || $(PYTHON) -m venv $(OTTER)
	$(OTTER)/bin/python -m pip install --quiet --upgrade pip
	$(OTTER)/bin/python -m pip install --quiet -r requirements.txt -r requirements-otter.txt
	@touch $@

otter: $(OTTER)/.installed
	OPENBLAS_NUM_THREADS=1 $(OTTER)/bin/python -m helpers.instructor.otter "$(or $(DIR),_build/otter)" $(if $(SEED),--seed $(SEED))

# The oldest versions: requirements.txt under constraints-oldest.txt (ipywidgets 7.7 and
# IPython 7 as in Colab, numpy and matplotlib at requirements.txt's lower bounds).
$(OLDEST)/.installed: requirements.txt pyproject.toml constraints-oldest.txt
	@test -x $(OLDEST)/bin/python || $(OLDEST_PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip
	$(OLDEST)/bin/python -m pip install --quiet --only-binary numpy,matplotlib \
		-r requirements.txt -c constraints-oldest.txt -e ".[test]"
	@touch $@

# What the oldest numpy, matplotlib, ipywidgets and IPython can break: the helpers (unit tests,
# the widgets' included) and a lesson's own code run in an IPython 7 kernel (every solution
# notebook, a superset of its student notebook's code). Not the grader, nbgrader, Otter or the
# website (instructors' tools, in their own environments) nor the student notebooks again.
test-oldest: $(OLDEST)/.installed
	$(OLDEST)/bin/python -m compileall -q helpers
	COURSE_OLDEST=1 $(OLDEST)/bin/python -m pytest -m "not slow and not integration" \
		--ignore=tests/test_notebooks_run.py tests solutions

clean:
	rm -rf $(VENV) $(OLDEST) $(NBGRADER) $(OTTER) .pytest_cache _build
	find helpers -name __pycache__ -prune -exec rm -rf {} +
