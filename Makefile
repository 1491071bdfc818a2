# Two commands do all set-up on a fresh machine: `make lab` and `make test`.
# PYTHON picks the interpreter (`make test PYTHON=python3.13`): the venv is rebuilt when its
# Python's version differs from $(PYTHON)'s, and the stamp names the version, so switching works.
PYTHON ?= python3
# pyenv's shims run python3.13 only while 3.13 is the active version: fall back to the
# interpreter of that name among pyenv's installed versions
PYTHON_EXE := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null \
	|| ls "$$(pyenv root 2>/dev/null)"/versions/*/bin/$(PYTHON) 2>/dev/null | tail -n 1)
VENV ?= .venv
BIN := $(VENV)/bin
PY_VERSION := $(if $(PYTHON_EXE),$(shell $(PYTHON_EXE) -c 'import sys; print("%d.%d" % sys.version_info[:2])'))
STAMP := $(VENV)/.installed-py$(PY_VERSION)
# `make lab` listens here; LAB_IP=0.0.0.0 to reach it from outside a container
LAB_IP ?= 127.0.0.1
LAB_PORT ?= 8888
NPM_STAMP := node_modules/.installed-stamp
# the IPython directory of make test's notebook kernels: it loads the figure audit
AUDIT_IPYTHONDIR := $(CURDIR)/build/ipython-audit

.PHONY: lab test lint bench serve install clean contracts render site chromium ipfs-cid

$(STAMP): pyproject.toml
	@test -n "$(PY_VERSION)" || { echo "PYTHON=$(PYTHON) is not a runnable Python" >&2; exit 2; }
	@if [ -x $(BIN)/python ] && [ "$$($(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$(PY_VERSION)" ]; then \
		echo "$(VENV) has another Python than $(PYTHON) ($(PY_VERSION)): rebuilding it"; rm -rf $(VENV); fi
	$(PYTHON_EXE) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[devnet,dev]'  # the devnet for make lab; dev has it too
	@# 3.13+: the executable spec without its coincurve<21 pin (no wheel): see pyproject's dev extra
	if $(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 13))'; then \
		$(BIN)/python -m pip install --quiet --no-deps ethereum-execution==2.20.0; fi
	touch $(STAMP)

# The pinned npm packages (solc, and ganache for tests/devnet/test_reference_node.py)
$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NPM_STAMP)

install: $(STAMP)

# JupyterLab on notebooks/; with no INFURA_API_KEY the notebooks run on the embedded devnet.
# Headless and root-safe (containers, CI): no browser is opened; open the printed URL (with its token).
lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks --no-browser --allow-root --ip=$(LAB_IP) --port=$(LAB_PORT)

# Debian's headless Chromium, for the browser tests (tests/test_watch_browser.py and
# tests/test_site_browser.py) and make render
chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; } || { \
			echo "the browser test needs Debian's chromium: apt-get install -y chromium" >&2; exit 2; }; \
		echo "installing Debian's chromium (apt-get) for the browser test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends chromium >/dev/null; }

# Debian's ipfs_cid, the independent CID implementation the UnixFS tests compare against
# (tests/test_unixfs.py, tests/devnet/test_ipfs.py): they fail without it
ipfs-cid:
	@command -v ipfs_cid >/dev/null || { \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; } || { \
			echo "the UnixFS tests need Debian's ipfs_cid: apt-get install -y ipfs-cid" >&2; exit 2; }; \
		echo "installing Debian's ipfs-cid (apt-get) for the UnixFS tests"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			ipfs-cid >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends ipfs-cid >/dev/null; }; }

test: $(STAMP) $(NPM_STAMP) chromium ipfs-cid lint
	# worker processes overlap the tests that wait (paced scans, servers); a file's tests share a worker
	$(BIN)/python -m pytest -n auto --maxprocesses=4 --dist loadfile tests
	# a notebook a worker (each its own kernel): 96 s -> 51 s on two cores, outputs unchanged.
	# Every figure a notebook displays is audited (feeslab.plots.audit: title "Figure N. ", bars
	# from zero, log axes labelled, no legend on data): the kernels load the audit from the
	# IPYTHONDIR written here (absolute: each kernel starts in its notebook's folder), and a
	# figure breaking a rule fails its cell, naming the rule
	$(BIN)/python -m feeslab.plots.audit $(AUDIT_IPYTHONDIR)
	IPYTHONDIR=$(AUDIT_IPYTHONDIR) $(BIN)/python -m pytest -n 2 --dist loadfile --nbval \
		--nbval-sanitize-with notebooks/nbval_sanitize.cfg notebooks

lint: $(STAMP)
	$(BIN)/ruff check feeslab tests benchmarks
	$(BIN)/lint-imports  # the one-way flow and no import cycle: pyproject.toml [tool.importlinter]
	$(BIN)/lint-imports --config tests/import_cycles.toml  # no cycle, TYPE_CHECKING imports counted
	$(BIN)/mypy  # strict over feeslab/ except the devnet: pyproject.toml [tool.mypy]

# every notebook as a reader sees it: HTML, each figure as PNG, a screenshot of the whole page
# (headless Chromium through Playwright) under build/render/; RENDER_FLAGS=--execute restarts and
# runs each notebook first
render: $(STAMP)
	$(BIN)/python notebooks/render.py $(RENDER_FLAGS)

# the course as a static site under build/site/ (open build/site/index.html; offline, no CDN): the
# lessons in reading order with their goals, a page per lesson and appendix, every figure an image
# and in an index of figures; never the solutions. From the saved outputs, which nbval checks;
# SITE_FLAGS=--execute runs each notebook first, with make test's figure audit
site: $(STAMP)
	$(BIN)/python notebooks/course_site.py $(SITE_FLAGS)

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/cluster.py  # the era1 uncle scan on dask: 1 and 2 workers

serve: $(STAMP)
	$(BIN)/feeslab serve

# Compile feeslab/devnet/contracts/*.sol with the pinned solc-js into the committed artifacts.json
contracts:
	npm ci --no-audit --no-fund
	node feeslab/devnet/contracts/build.js

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
