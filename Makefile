# Self-Attention & Multi-Head -- the course's commands.
#   make lab      create .venv if missing, install, open JupyterLab on the course
#   make test     create or update .venv, run every test
#   make student  regenerate notebooks/ from solutions/
#   make bench    print timings and memory figures (a benchmark, never a test)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: lab test student bench clean

# (Re)install when requirements.txt or pyproject.toml change.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -e .
	@touch $(STAMP)

# Opens lesson 01, with the whole course in the file browser. (--allow-root only when run as root.)
lab: $(STAMP)
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/01_qkv_projections.ipynb

test: $(STAMP)
	$(PY) -m pytest

student: $(STAMP)
	$(PY) -m helpers.instructor.student

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) .pytest_cache
