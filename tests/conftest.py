"""Test set-up: a private FiftyOne database per run, the repository as plugins dir.

``make test`` already sets these through ``scripts/with-temp-fiftyone.sh``; a
bare ``pytest`` gets the same here, before any test imports FiftyOne. Tests of
the pure library never import FiftyOne.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
LVIS_PATH = SHARED_DATA / "lvis_v1.0_val_doubly_annos_subset200.json"

if "FIFTYONE_DATABASE_DIR" not in os.environ:
    _tmp = tempfile.mkdtemp(prefix="iaa-tests-")
    os.environ["FIFTYONE_DATABASE_DIR"] = os.path.join(_tmp, "db")
    os.environ.setdefault("FIFTYONE_DEFAULT_DATASET_DIR", os.path.join(_tmp, "datasets"))
    atexit.register(shutil.rmtree, _tmp, True)
os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")
# the plugin records its directory in site-packages when FiftyOne loads it (see the root __init__.py);
# the test processes do not (tests/test_install.py checks it in an environment of its own)
os.environ.setdefault("IAA_AGREEMENT_NO_PTH", "1")
os.environ.setdefault("FIFTYONE_DATABASE_VALIDATION", "false")
os.environ["FIFTYONE_PLUGINS_DIR"] = str(REPO)


@pytest.fixture(scope="session")
def fo():
    """FiftyOne, backed by the embedded MongoDB of this test run."""
    return pytest.importorskip("fiftyone")


@pytest.fixture
def lvis_path() -> Path:
    """The shared LVIS double-annotation subset (skips when absent)."""
    if not LVIS_PATH.exists():
        pytest.skip(f"shared data not found: {LVIS_PATH.name} is expected in ../shared/data beside the repository")
    return LVIS_PATH


@pytest.fixture
def make_dataset(fo):
    """Creates throw-away datasets and deletes them after the test."""
    made = []

    def _make(samples=(), name=None):
        ds = fo.Dataset(name)
        if samples:
            ds.add_samples(list(samples), dynamic=True, progress=False)
        made.append(ds)
        return ds

    yield _make
    for ds in made:
        if not ds.deleted:
            ds.delete()


@pytest.fixture
def three_rater_samples(fo):
    """Four samples, raters a/b/c as fields with shifted copies of the same three boxes (a: +0, b: +0.01,
    c: +0.05 in x; one dog, two cats); on the third sample a found nothing, on the fourth c is not assigned."""
    import numpy as np

    D = fo.Detections
    rng = np.random.default_rng(0)
    samples = []
    for i in range(4):
        boxes = [[float(x), float(y), 0.2, 0.2] for x, y in rng.uniform(0, 0.7, (3, 2))]
        kw = {}
        for r, shift in (("a", 0.0), ("b", 0.01), ("c", 0.05)):
            kw[r] = D(detections=[fo.Detection(label="cat" if k else "dog", bounding_box=[b[0] + shift, *b[1:]])
                                  for k, b in enumerate(boxes)])
        if i == 2:
            kw["a"] = D()
        if i == 3:
            kw["c"] = None
        samples.append(fo.Sample(filepath=f"/data/{i}.jpg", **kw))
    return samples
