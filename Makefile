# Two entry points: `make demo` (the seed scenario on the embedded simulator) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kueue-webhook simulate manifests/examples/seed.yaml

lint: $(STAMP)
	$(BIN)/ruff check webhook tests bench
	$(BIN)/ruff format --check webhook tests bench

typecheck: $(STAMP)
	$(BIN)/mypy --strict webhook

unit: $(STAMP)
	$(BIN)/pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m bench.core

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
