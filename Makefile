# Two commands, each doing its own set-up on a fresh machine with Python 3.11:
#   make book   build the whole book (executing every chapter) into _build/html
#   make test   every test: unit, property, nbval over the chapters, book build with -W
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MATHJAX := _vendor/mathjax/tex-chtml.js
MATHJAX_VERSION := 3.2.2

.PHONY: book test setup clean

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

book: setup
	$(VENV)/bin/jupyter-book build . --keep-going
	@echo "The book is at $(CURDIR)/_build/html/index.html"

# The book build (one core, executing every chapter) runs beside pytest (two xdist workers, one
# notebook per worker at a time); its log is printed when it fails.
test: setup
	mkdir -p _build
	$(VENV)/bin/jupyter-book build . --all -W -n --keep-going > _build/book-build.log 2>&1 & book=$$!; \
	$(PY) -m pytest -q -n 2 --dist loadfile && tests=0 || tests=$$?; \
	if wait $$book; then echo "book build: ok (log in _build/book-build.log)"; \
	else tail -n 80 _build/book-build.log; echo "book build: FAILED"; exit 1; fi; \
	exit $$tests
	@echo "All tests passed; the book is at $(CURDIR)/_build/html/index.html"

clean:
	rm -rf _build $(VENV) _vendor/mathjax
