# The two set-up commands of the README: `make demo` and `make test`. Both work on a fresh
# machine with Python 3.11 and make; they create .venv and install what they need.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# mypy cannot follow setuptools' editable import hook, so it reads the sources through a tree
# of links laid out as the installed package (agentgen/dsl -> dsl, ...).
TYPECHECK_TREE := build/typecheck
PACKAGES := dsl codegen runtime templates

EXAMPLES := records company quickstart

.PHONY: demo test lint layers typecheck typecheck-tree regen clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# The quickstart runs the real OpenAI and Anthropic adapters (offline), so it needs their SDKs.
$(VENV)/.installed-demo: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[openai,anthropic]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed $(VENV)/.installed-demo

# Regenerate the examples, then run the quickstart agent end to end on recorded provider
# replies: no credentials, no network.
demo: $(VENV)/.installed-demo regen
	$(BIN)/python -m examples.quickstart.tool_search

typecheck-tree:
	@mkdir -p $(TYPECHECK_TREE)/agentgen
	@for p in $(PACKAGES); do ln -sfn ../../../$$p $(TYPECHECK_TREE)/agentgen/$$p; done

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed-dev typecheck-tree
	MYPYPATH=$(TYPECHECK_TREE) $(BIN)/mypy -p agentgen.dsl -p agentgen.codegen -p agentgen.runtime

# The dependency rule and the layers of docs/architecture.md (.importlinter).
layers: $(VENV)/.installed-dev
	$(BIN)/lint-imports

test: lint layers typecheck
	$(BIN)/python -m pytest -q

# Regenerate the committed packages of every example (the golden tests compare against them).
regen: $(VENV)/.installed
	for e in $(EXAMPLES); do $(BIN)/agentgen gen examples/$$e/design.py -o examples/$$e/gen || exit 1; done

clean:
	rm -rf $(VENV) build dist .mypy_cache .pytest_cache .ruff_cache .hypothesis
