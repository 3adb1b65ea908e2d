# Two entry points for a fresh machine: `make demo` and `make test`.
# (`make test` needs Debian's chromium and chromium-driver for the report test; .ci/run installs them.)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test install install-dev notebooks bench clean

$(BIN)/python:
	@echo "creating the virtual environment $(VENV) and upgrading its pip (a few seconds)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

# byte-compiled once here: where PYTHONDONTWRITEBYTECODE is set, every command would otherwise
# compile the editable sources again (about 0.1 s of each `ctxreplay` start-up)
install: $(BIN)/python
	@echo "installing ctxreplay and its dependencies into $(VENV) (a minute or two on a fresh machine; pip's progress below)"
	$(BIN)/pip install --progress-bar on -e .
	$(BIN)/python -m compileall -q replay analysis

install-dev: $(BIN)/python
	@echo "installing ctxreplay[dev] into $(VENV) (a few minutes on a fresh machine)"
	$(BIN)/pip install -q -e ".[dev]"
	$(BIN)/python -m compileall -q replay analysis

demo: install
	@echo "running the demo on the embedded synthetic sample: ingest, fidelity, every policy, a sweep, the report"
	$(BIN)/ctxreplay demo

# JupyterLab and a kernel for notebooks/ (they build out/notebooks.duckdb from the embedded sample on first run; notebooks/README.md)
notebooks: install
	$(BIN)/pip install -q -e ".[notebooks]"
	@echo "run: $(BIN)/jupyter lab notebooks/"

test: install-dev
	$(BIN)/python -m pytest -q -n auto --dist loadfile  # a test file stays on one worker (its fixtures are built once)

bench: install
	$(BIN)/python bench/ingest.py

clean:
	rm -rf $(VENV) out *.egg-info
