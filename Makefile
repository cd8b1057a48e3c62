# The two set-up commands of the README: `make demo` and `make test`. Both work on a fresh
# machine with Python 3.11 and make; they create .venv and install what they need.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# mypy cannot follow setuptools' editable import hook (ours, or an application's mypy run in
# this environment), so the editable install also puts a path entry on the environment: a tree
# of links laid out as the installed package (.venv/agentgen-src/agentgen/dsl -> dsl, ...),
# named by agentgen-src.pth in site-packages. Python and mypy both read agentgen through it, and
# a new module needs no reinstall (the links are to folders).
LINK_TREE := $(VENV)/agentgen-src
PACKAGES := dsl codegen runtime templates

EXAMPLES := records company quickstart

.PHONY: demo demo-registry test lint layers typecheck link-tree regen clean redis-server

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(MAKE) --no-print-directory link-tree
	touch $@

# The quickstart runs the real OpenAI and Anthropic adapters (offline), so it needs their SDKs,
# and prints the run's trace with rich (the trace extra).
$(VENV)/.installed-demo: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[openai,anthropic,trace]'
	touch $@

# The distributed company example runs the registry service and the real OpenAI adapter, and
# prints each turn's trace with rich (the trace extra).
$(VENV)/.installed-registry: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[openai,registry,trace]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(MAKE) --no-print-directory link-tree
	touch $@ $(VENV)/.installed $(VENV)/.installed-demo $(VENV)/.installed-registry

# Regenerate the examples, then run the quickstart agent end to end on recorded provider
# replies: no credentials, no network.
demo: $(VENV)/.installed-demo regen
	$(BIN)/python -m examples.quickstart.tool_search

# The registry, a provider process and an agent (recorded model replies, no credentials),
# then a second provider revision replacing the first while the agent keeps running.
demo-registry: $(VENV)/.installed-registry regen
	$(BIN)/python -m examples.company

# The registry tests start Debian's redis-server on a free 127.0.0.1 port; installed here when
# missing (RUNLEVEL=1: the package must not start a server of its own).
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO env RUNLEVEL=1 apt-get install -y -qq redis-server; }

link-tree: | $(BIN)/python
	@mkdir -p $(LINK_TREE)/agentgen
	@for p in $(PACKAGES); do ln -sfn $(CURDIR)/$$p $(LINK_TREE)/agentgen/$$p; done
	@$(BIN)/python -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "agentgen-src.pth").write_text(str(pathlib.Path("$(LINK_TREE)").resolve()) + "\n")'

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy -p agentgen.dsl -p agentgen.codegen -p agentgen.runtime

# The dependency rule and the layers of docs/architecture.md (.importlinter).
layers: $(VENV)/.installed-dev
	$(BIN)/lint-imports

test: lint layers typecheck redis-server
	$(BIN)/python -m pytest -q

# Regenerate the committed packages of every example (the golden tests compare against them).
regen: $(VENV)/.installed
	for e in $(EXAMPLES); do $(BIN)/agentgen gen examples/$$e/design.py -o examples/$$e/gen || exit 1; done

clean:
	rm -rf $(VENV) build dist .mypy_cache .pytest_cache .ruff_cache .hypothesis
