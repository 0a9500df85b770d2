# The two commands a new user needs:
#   make demo   set up .venv, generate the demo dataset and run every agreement computation
#   make test   set up .venv (with test-only dependencies) and run the test suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check

.PHONY: demo test bench experiments app setup setup-test clean

demo: $(VENV)/.runtime
	FIFTYONE_PLUGINS_DIR=$(CURDIR) FIFTYONE_DO_NOT_TRACK=true $(PY) -m agreement.fo.demo $(DEMO_ARGS)

test: $(VENV)/.test
	scripts/with-temp-fiftyone.sh $(PY) -m pytest $(PYTEST_ARGS)

bench: $(VENV)/.test
	scripts/with-temp-fiftyone.sh $(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/kalos_bench.py
	$(PY) bench/geometry_bench.py

experiments: $(VENV)/.test
	$(PY) experiments/run_all.py

app: $(VENV)/.runtime
	FIFTYONE_PLUGINS_DIR=$(CURDIR) FIFTYONE_DO_NOT_TRACK=true $(PY) -m agreement.fo.demo --app

setup: $(VENV)/.runtime
setup-test: $(VENV)/.test

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.runtime: requirements.txt | $(VENV)/bin/python
	$(PIP) install -q -r requirements.txt
	touch $@

$(VENV)/.test: requirements.txt requirements-test.txt | $(VENV)/bin/python
	$(PIP) install -q -r requirements-test.txt
	touch $(VENV)/.runtime $@

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
