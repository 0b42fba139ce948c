# rungrade: `make run` grades the sample runs in data/; `make test` runs the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNS   ?= data/runs
OUT    ?= results
# Every install takes the versions the suite last passed with (see the file's header).
# setuptools warns on each editable build that a folder named like the package may shadow
# it: that folder is the package itself, so the warning is left out of the output.
PIP_INSTALL = PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet \
	--constraint constraints.txt

.PHONY: run test lint bench bytecode clean lock

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP_INSTALL) -e ".[s3,report]"
	touch $@

$(VENV)/.installed-test: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP_INSTALL) -e ".[s3,dask,report,test]"
	touch $@ $(VENV)/.installed-run

# constraints.txt again, from a fresh install of every extra at the newest versions
# pyproject.toml allows (its header kept); then `make test`, and commit both if it passes
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" .venv-lock/bin/pip install --quiet \
		-e ".[s3,dask,report,test]"
	{ grep '^#' constraints.txt; .venv-lock/bin/pip freeze --exclude-editable; } > constraints.new
	mv constraints.new constraints.txt
	rm -rf .venv-lock

# Compiled once here, not on every start: an editable install leaves pipeline/ uncompiled, and
# where PYTHONDONTWRITEBYTECODE is set every `rungrade` (and every worker's fork server) would
# compile it from source again (~60 ms each). Up-to-date files are skipped (~0.1 s).
bytecode: $(BIN)/python
	$(BIN)/python -m compileall -q pipeline

run: $(VENV)/.installed-run bytecode
	$(BIN)/rungrade grade $(RUNS) --out $(OUT)

# The suite runs on every core (up to 4): most of its time is spent in tests that wait on
# subprocesses, servers and kernels, so two workers on two cores finish it in about 3/4 of the
# time one takes. PYTEST_ARGS="-n 0" runs it in one process.
PYTEST_ARGS ?= -n auto --maxprocesses 4
test: $(VENV)/.installed-test bytecode
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check pipeline tests bench

bench: $(VENV)/.installed-test bytecode
	$(BIN)/python bench/grade_bench.py $(BENCH_ARGS)
	$(BIN)/python bench/stage_bench.py --breakdown
	$(BIN)/python bench/pattern_bench.py
	$(BIN)/python bench/s3_bench.py

clean:
	rm -rf $(OUT) .pytest_cache .ruff_cache
