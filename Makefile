# The two commands a new user needs:
#   make demo   set up .venv, generate the demo dataset and run every agreement computation
#   make test   set up .venv (with test-only dependencies) and run the test suite
# and, for contributors:
#   make test-fiftyone-oldest   the FiftyOne integration tests on the oldest FiftyOne that
#                               fiftyone.yml claims, in a second environment (not part of `make test`)
#   make test-lowest-deps       the tests without FiftyOne on the lowest numpy, scipy, shapely and
#                               OpenCV that requirements.txt allows (the first release series of each range)
#   make wheel                  build the core library's wheel (no FiftyOne) into dist/
#   make docs                   build the documentation site (mkdocs build --strict) into site/
#   make bench                  the benchmarks, their tables written to docs/benchmarks.md
#   make lint                   the static checks alone: ruff (pyflakes, bugbear, import order, Google-style
#                               docstrings) and mypy (strict on agreement.core, .geometry, .methods); `make test`
#                               runs them first and stops if they fail. .pre-commit-config.yaml runs the same two.
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

.PHONY: demo test lint bench bench-extra bench-page docs experiments app setup setup-test test-fiftyone-oldest test-lowest-deps wheel clean

demo: $(VENV)/.runtime
	FIFTYONE_PLUGINS_DIR=$(CURDIR) FIFTYONE_DO_NOT_TRACK=true $(PY) -m agreement.fo.demo $(DEMO_ARGS)

# PYTEST_XDIST: the tests in three worker processes (pytest-xdist) sharing the run's MongoDB, each with a
# database of its own (tests/conftest.py); a test module, each of the two groups of browser tests, or each of the
# validation matrix's units (tests/test_validation_matrix.py), stays on one worker,
# the slowest first (tests/conftest.py). Three on two cores: the browser tests mostly wait on the App (two workers
# left ~40% of the CPU idle). `make test PYTEST_XDIST=` runs them in one process; PYTEST_ARGS adds pytest's own options;
# the 30 slowest tests are listed at the end (what the suite's time goes to).
PYTEST_XDIST ?= -n 3 --dist loadfile --no-loadscope-reorder

# IAA_REQUIRE_LABELSTUDIO=1: the Label Studio round trip (tests/test_fo_labelstudio_roundtrip.py) fails, rather
# than skips, when its server ($(VENV)/.labelstudio) cannot start.
test: $(VENV)/.test $(VENV)/.labelstudio lint
	IAA_REQUIRE_LABELSTUDIO=1 scripts/with-temp-fiftyone.sh $(PY) -m pytest $(PYTEST_XDIST) --durations=30 $(PYTEST_ARGS)

# The static checks (settings in pyproject.toml: [tool.ruff], [tool.mypy]); the same commands as the
# hooks of .pre-commit-config.yaml. Ruff checks the whole repository, mypy the plugin (agreement,
# operators, panels).
lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# SCALE_SAMPLES: size of the end-to-end scale benchmark (100000 by default; 1000000 for the
# million-sample figures, about an hour with the Dask rows)
SCALE_SAMPLES ?= 100000
# SCALE_ARGS: e.g. --writes-alone (each operator again with its write-back not overlapped: the writes' own time),
# --dask-workers 1 2 (a Dask row per worker count; 0: none)
SCALE_ARGS ?=
# BENCH_QUICK=1: every benchmark at small sizes (a few minutes), to check that they run and write the
# page; their tables say "quick run" and go to a temporary folder ($TMPDIR/iaa-bench-quick, or
# IAA_BENCH_QUICK_DIR), with the page assembled there: they never replace recorded figures. Each benchmark
# writes its table to bench/results/<name>.json and bench/write_page.py assembles docs/benchmarks.md from them.
# PROFILE_SAMPLES: size of the operators' cProfile run (bench/profile_ops.py: the page's "Profiles").
BENCH_QUICK ?=
QUICK := $(if $(BENCH_QUICK),--quick,)
SCALE_SIZE := $(if $(BENCH_QUICK),--quick,--samples $(SCALE_SAMPLES))
CROWD_REPEAT := $(if $(BENCH_QUICK),1,3)
PROFILE_SAMPLES ?= 100000
PROFILE_SIZE := $(if $(BENCH_QUICK),--quick,--samples $(PROFILE_SAMPLES))

bench: $(VENV)/.test
	scripts/with-temp-fiftyone.sh $(PY) bench/run.py $(QUICK) $(BENCH_ARGS)
	$(PY) bench/kalos_bench.py $(QUICK)
	$(PY) bench/geometry_bench.py $(QUICK)
	scripts/with-temp-fiftyone.sh $(PY) bench/crowd_bench.py --repeat $(CROWD_REPEAT) $(QUICK)
	scripts/with-temp-fiftyone.sh $(PY) bench/scale_bench.py $(SCALE_SIZE) $(SCALE_ARGS)
	scripts/with-temp-fiftyone.sh $(PY) bench/import_bench.py $(QUICK)
	scripts/with-temp-fiftyone.sh $(PY) bench/profile_ops.py $(PROFILE_SIZE)
	$(PY) bench/write_page.py $(QUICK)

# The class, mask and video benchmarks: each builds its own large dataset (the video one about an hour),
# so they are not part of `make bench`; their tables go to the same page.
bench-extra: $(VENV)/.test
	scripts/with-temp-fiftyone.sh $(PY) bench/class_bench.py $(QUICK)
	scripts/with-temp-fiftyone.sh $(PY) bench/mask_bench.py $(QUICK)
	scripts/with-temp-fiftyone.sh $(PY) bench/video_bench.py $(QUICK)
	$(PY) bench/write_page.py $(QUICK)

# docs/benchmarks.md again from the recorded tables (bench/results/), without running anything
bench-page: $(VENV)/.test
	$(PY) bench/write_page.py

# The documentation site: mkdocs (Material, mkdocstrings) into .venv, then a strict build into site/,
# so that a broken link, anchor or API reference fails it.
docs: $(VENV)/.docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

$(VENV)/.docs: requirements-docs.txt | $(VENV)/bin/python
	$(PIP) install -q -r requirements-docs.txt
	touch $@

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

# The Label Studio server of the round-trip tests, in an environment of its own (its pins fight FiftyOne's):
# installed from requirements-labelstudio.txt, then a template data folder migrated once (a first start takes
# 40-85 s; the tests copy the template and start in seconds). tests/labelstudio_server.py starts and stops it.
LABELSTUDIO_VENV := $(VENV)/labelstudio

$(VENV)/.labelstudio: requirements-labelstudio.txt | $(VENV)/bin/python
	$(PYTHON) -m venv $(LABELSTUDIO_VENV)
	$(LABELSTUDIO_VENV)/bin/python -m pip --disable-pip-version-check install -q --upgrade pip
	$(LABELSTUDIO_VENV)/bin/python -m pip --disable-pip-version-check install -q -r requirements-labelstudio.txt
	$(PY) tests/labelstudio_server.py --make-template $(LABELSTUDIO_VENV)/template
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
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache dist build site
