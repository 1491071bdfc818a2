# Two commands do all set-up on a fresh machine: `make lab` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
NPM_STAMP := node_modules/.installed-stamp

.PHONY: lab test lint bench serve install clean contracts

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[devnet,dev]'  # the devnet for make lab; dev has it too
	touch $(STAMP)

# The pinned npm packages (solc, and ganache for tests/devnet/test_reference_node.py)
$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NPM_STAMP)

install: $(STAMP)

# JupyterLab on notebooks/; with no INFURA_API_KEY the notebooks run on the embedded devnet
lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks

test: $(STAMP) $(NPM_STAMP) lint
	$(BIN)/python -m pytest tests
	$(BIN)/python -m pytest --nbval --nbval-sanitize-with notebooks/nbval_sanitize.cfg notebooks

lint: $(STAMP)
	$(BIN)/ruff check feeslab tests benchmarks
	$(BIN)/lint-imports  # the one-way flow: pyproject.toml [tool.importlinter]

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

serve: $(STAMP)
	$(BIN)/feeslab serve

# Compile feeslab/devnet/contracts/*.sol with the pinned solc-js into the committed artifacts.json
contracts:
	npm ci --no-audit --no-fund
	node feeslab/devnet/contracts/build.js

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
