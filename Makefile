# Two commands, each doing its own set-up on a fresh machine with Python 3.11:
#   make book   build the whole book (executing every chapter) into _build/html
#   make test   ruff and mypy on shuffle_lib, then every test: unit, property, the chapters' outputs,
#               book build with -W, browser check
# Each chapter is executed once per command: tests/execute_chapters.py runs them
# on two processes into the book's jupyter-cache; the build renders that cache, and the tests
# compare the same outputs with tests/notebooks/ (nbval's rules).
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MATHJAX := _vendor/mathjax/tex-chtml.js
MATHJAX_VERSION := 3.2.2
JOBS ?= 2
BOOK_CONFIG := _build/book-config.yml
# the cache keys on code cells, not on the library: emptied so that every run executes afresh
EXECUTE := rm -rf _build/.jupyter_cache && $(PY) tests/execute_chapters.py --jobs $(JOBS) --book-config $(BOOK_CONFIG)
# --all: Sphinx does not see that the cache under a page changed, and would keep the old page
BUILD := $(VENV)/bin/jupyter-book build . --all --config $(BOOK_CONFIG) --keep-going

.PHONY: book test setup clean chromium lab verify audit

setup: $(STAMP) $(MATHJAX)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# MathJax 3 from the npm registry (not committed), so equations render offline.
$(MATHJAX):
	rm -rf _vendor/mathjax .mathjax-tmp && mkdir -p _vendor .mathjax-tmp
	cd .mathjax-tmp && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null && tar xzf mathjax-$(MATHJAX_VERSION).tgz
	mv .mathjax-tmp/package/es5 _vendor/mathjax && rm -rf .mathjax-tmp

# Debian's chromium for tests/test_book_browser.py; where it cannot be installed the test skips
# and says so.
chromium:
	@command -v chromium >/dev/null || { echo "installing chromium (Debian) for the browser check ..."; \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; }; } \
	  || echo "chromium could not be installed: the browser check will be skipped"; }

book: setup
	$(EXECUTE)
	$(BUILD)
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# 1. execute every chapter once (two processes);
# 2. beside each other: pytest on two workers (unit and property tests; the chapters' outputs read
#    from the cache) and the book build with -W from the same cache, followed by the browser check;
#    a build that executes anything (a cache miss) fails.  The build's log is printed when it fails,
#    and the executor's at the end when a chapter failed (CI shows the end of the output).
test: setup chromium
	$(VENV)/bin/ruff check shuffle_lib
	$(VENV)/bin/mypy shuffle_lib
	mkdir -p _build
	$(EXECUTE) 2>&1 | tee _build/execute.log && executed=0 || executed=$$?; \
	{ if test $$executed -ne 0; then echo "book build: skipped (a chapter failed to execute)"; false; \
	  elif ! $(BUILD) -W -n > _build/book-build.log 2>&1; then tail -n 80 _build/book-build.log; echo "book build: FAILED"; false; \
	  elif grep -n "Executing notebook" _build/book-build.log; then echo "book build: FAILED, it executed a chapter (a cache miss)"; false; \
	  else echo "book build: ok (log in _build/book-build.log)"; \
	    SHUFFLE_BOOK_HTML=_build/html $(PY) -m pytest -q -p no:xdist tests/test_book_browser.py; fi; \
	} > _build/book-check.log 2>&1 & book=$$!; \
	SHUFFLE_EXECUTED=1 $(PY) -m pytest -q -n 2 --dist loadfile --ignore=tests/test_book_browser.py && tests=0 || tests=$$?; \
	wait $$book && book=0 || book=$$?; \
	cat _build/book-check.log; \
	if test $$executed -ne 0; then echo "chapter execution FAILED; the end of its log (_build/execute.log):"; \
	  tail -n 60 _build/execute.log; fi; \
	test $$executed -eq 0 -a $$book -eq 0 -a $$tests -eq 0
	@echo "All tests passed; the book is at $(CURDIR)/_build/html/index.html"

# JupyterLab on the project: a chapter (chapters/NN_slug.md) opens as a notebook on a double-click
# (.jupyter/lab/settings/overrides.json, the project's defaults: a user's own settings still win),
# jupyterlab-myst renders its tables, equations, cross-references and theorem boxes, and saving it
# keeps its header (jupytext.toml).  LAB_ARGS=... passes options, e.g. LAB_ARGS="--port 8899".
LAB_ARGS ?=
lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR) \
	  --LabApp.app_settings_dir=$(CURDIR)/.jupyter/lab/settings \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# One claim of the ledger, all its checks in one pytest process: make verify CLAIM="Proposition 4.1"
# (CHAPTERS=1 also executes and compares the chapters its entries cite).
verify: $(STAMP)
	@test -n "$(CLAIM)" || { echo 'make verify: CLAIM is required, e.g. make verify CLAIM="Proposition 4.1"'; exit 2; }
	$(PY) -m tests.verify "$(CLAIM)" $(if $(CHAPTERS),--chapters)

# The mutation audit of the ledger (tests/mutations.csv): minutes, not part of make test.
audit: $(STAMP)
	$(PY) -m tests.mutation_audit $(if $(CLAIM),"$(CLAIM)")

clean:
	rm -rf _build $(VENV) _vendor/mathjax
