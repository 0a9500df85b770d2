# The two commands a new user needs:
#   make demo   set up .venv, generate the demo dataset and run every agreement computation
#   make test   set up .venv (with test-only dependencies) and run the test suite
# and, for contributors:
#   make test-fiftyone-oldest   the FiftyOne integration tests on the oldest FiftyOne that
#                               fiftyone.yml claims, in a second environment (not part of `make test`)
#   make test-lowest-deps       the tests without FiftyOne on the lowest numpy, scipy, shapely and
#                               OpenCV that requirements.txt allows (the first release series of each range)
#   make wheel                  build the core library's wheel (no FiftyOne) into dist/
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check

# The oldest FiftyOne the plugin claims (fiftyone.yml `fiftyone.version`), and
# where its environment is built (inside .venv/, which git ignores).
FIFTYONE_OLDEST ?= 1.0.0
COMPAT_VENV     ?= $(VENV)/compat/fiftyone-$(FIFTYONE_OLDEST)
COMPAT_PY       := $(COMPAT_VENV)/bin/python
COMPAT_PIP      := $(COMPAT_PY) -m pip --disable-pip-version-check
LOWEST_VENV     ?= $(VENV)/compat/lowest-deps
LOWEST_PY       := $(LOWEST_VENV)/bin/python

.PHONY: demo test bench experiments app setup setup-test test-fiftyone-oldest test-lowest-deps wheel clean

demo: $(VENV)/.runtime
	FIFTYONE_PLUGINS_DIR=$(CURDIR) FIFTYONE_DO_NOT_TRACK=true $(PY) -m agreement.fo.demo $(DEMO_ARGS)

# PYTEST_XDIST: the tests in two worker processes (pytest-xdist) sharing the run's MongoDB, each with a
# database of its own (tests/conftest.py); a test module, or all the browser tests, stays on one worker.
# `make test PYTEST_XDIST=` runs them in one process; PYTEST_ARGS adds pytest's own options either way.
PYTEST_XDIST ?= -n 2 --dist loadfile --no-loadscope-reorder

test: $(VENV)/.test
	scripts/with-temp-fiftyone.sh $(PY) -m pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

# SCALE_SAMPLES: size of the end-to-end scale benchmark (the README's figures; 1000000 for the
# million-sample figures, about an hour with the Dask rows; 20000 for a quick look)
SCALE_SAMPLES ?= 100000
# SCALE_ARGS: e.g. --writes-alone (each operator again with its write-back not overlapped: the writes' own time)
SCALE_ARGS ?=

bench: $(VENV)/.test
	scripts/with-temp-fiftyone.sh $(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/kalos_bench.py
	$(PY) bench/geometry_bench.py
	scripts/with-temp-fiftyone.sh $(PY) bench/crowd_bench.py --repeat 3
	scripts/with-temp-fiftyone.sh $(PY) bench/scale_bench.py --samples $(SCALE_SAMPLES) $(SCALE_ARGS)

experiments: $(VENV)/.test
	$(PY) experiments/run_all.py

app: $(VENV)/.runtime
	FIFTYONE_PLUGINS_DIR=$(CURDIR) FIFTYONE_DO_NOT_TRACK=true $(PY) -m agreement.fo.demo --app

setup: $(VENV)/.runtime
setup-test: $(VENV)/.test

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.runtime: requirements.txt requirements-db.txt requirements-dev.txt | $(VENV)/bin/python
	$(PIP) install -q -r requirements-dev.txt
	touch $@

$(VENV)/.test: requirements.txt requirements-db.txt requirements-dev.txt requirements-test.txt requirements-test-nodeps.txt | $(VENV)/bin/python
	$(PIP) install -q -r requirements-dev.txt -r requirements-test.txt
	$(PIP) install -q --no-deps -r requirements-test-nodeps.txt
	touch $(VENV)/.runtime $@

# The FiftyOne integration tests (marker `fiftyone`, without the browser test)
# against the oldest claimed FiftyOne. Its environment is built the way a user
# installs the plugin: that FiftyOne and its database first, then
# `fiftyone plugins requirements @iaa/agreement --install`, then the test tools;
# the last step checks that nothing replaced that FiftyOne.
test-fiftyone-oldest: $(COMPAT_VENV)/.test
	scripts/with-temp-fiftyone.sh $(COMPAT_PY) -m pytest -m "fiftyone and not browser" $(PYTEST_ARGS)

$(COMPAT_VENV)/.test: requirements.txt requirements-db.txt requirements-test.txt
	$(PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_PIP) install -q --upgrade pip
	$(COMPAT_PIP) install -q "fiftyone==$(FIFTYONE_OLDEST)" -r requirements-db.txt
	FIFTYONE_PLUGINS_DIR=$(CURDIR) FIFTYONE_DO_NOT_TRACK=true $(COMPAT_VENV)/bin/fiftyone plugins requirements @iaa/agreement --install
	$(COMPAT_PIP) install -q -r requirements-test.txt
	$(COMPAT_PY) -c 'import fiftyone.constants as c, sys; v = c.VERSION; print("FiftyOne", v); sys.exit(v != "$(FIFTYONE_OLDEST)")'
	touch $@

# The library's tests (not those needing FiftyOne) on the lower bounds of the
# plugin's ranges: `numpy>=1.26` becomes the constraint `numpy==1.26.*`.
test-lowest-deps: $(LOWEST_VENV)/.test
	$(LOWEST_PY) -m pytest -m "not fiftyone and not browser" $(PYTEST_ARGS)

$(LOWEST_VENV)/.test: requirements.txt requirements-test.txt
	$(PYTHON) -m venv $(LOWEST_VENV)
	$(LOWEST_PY) -m pip --disable-pip-version-check install -q --upgrade pip
	sed -n 's/^\([A-Za-z0-9_.-]*\)>=\([0-9.]*\).*/\1==\2.*/p' requirements.txt > $(LOWEST_VENV)/lowest.txt
	$(LOWEST_PY) -m pip --disable-pip-version-check install -q -r requirements-test.txt -c $(LOWEST_VENV)/lowest.txt
	touch $@

wheel: $(VENV)/.test
	$(PIP) wheel --no-deps --no-build-isolation -q -w dist .

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis dist build
