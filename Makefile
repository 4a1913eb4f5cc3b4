# Both targets bootstrap .venv themselves: a fresh clone needs only `make demo` / `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(VENV)/bin/ruff check src tests $(wildcard benchmarks)
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=25 -p no:cacheprovider

demo: $(STAMP)
	$(PY) -m instancedp.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests $(wildcard benchmarks)
