# rungrade: `make run` grades the sample runs in data/; `make test` runs the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNS   ?= data/runs
OUT    ?= results

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[s3,report]"
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[s3,dask,report,test]"
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/rungrade grade $(RUNS) --out $(OUT)

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check pipeline tests bench

bench: $(VENV)/.installed-test
	$(BIN)/python bench/grade_bench.py $(BENCH_ARGS)
	$(BIN)/python bench/pattern_bench.py

clean:
	rm -rf $(OUT) .pytest_cache .ruff_cache
