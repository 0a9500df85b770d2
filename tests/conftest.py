"""Test set-up: a private FiftyOne database per run, the repository as plugins dir.

``make test`` already sets these through ``scripts/with-temp-fiftyone.sh``; a
bare ``pytest`` gets the same here, before any test imports FiftyOne. Tests of
the pure library never import FiftyOne.
"""

from __future__ import annotations

import atexit
import functools
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
os.environ.setdefault("FIFTYONE_DATABASE_VALIDATION", "false")
os.environ["FIFTYONE_PLUGINS_DIR"] = str(REPO)

# Parallel runs (pytest-xdist, ``make test`` runs ``-n 3``): the workers share the run's MongoDB but each has a
# database of its own (FiftyOne's ``database_name``) and its own default dataset folder, so a test that lists
# every dataset, or a fixed dataset name used by two modules, sees only its worker's datasets. Set here, before
# any test imports FiftyOne; the processes a test starts (the App's server, scripts) inherit them.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER:
    os.environ["FIFTYONE_DATABASE_NAME"] = f"{os.environ.get('FIFTYONE_DATABASE_NAME', 'fiftyone')}-{_WORKER}"
    if "FIFTYONE_DEFAULT_DATASET_DIR" in os.environ:
        os.environ["FIFTYONE_DEFAULT_DATASET_DIR"] = os.path.join(os.environ["FIFTYONE_DEFAULT_DATASET_DIR"], _WORKER)

try:  # a time limit per example is no property of the code: a loaded machine (three workers) must not fail it
    from hypothesis import settings as _hypothesis_settings  # (CI's own profile, chosen by CI=true, is kept)

    _hypothesis_settings.register_profile("iaa", parent=_hypothesis_settings.default, deadline=None)
    _hypothesis_settings.load_profile("iaa")
except ImportError:  # pragma: no cover
    pass


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (``make test``), with the browser tests' modules counted as two files (two groups, see
    :data:`_SECOND_HALF`): a worker takes one module at a time (its module-scoped fixtures are built once), and
    the browser tests of a group run one after another on one worker. One group left the other worker idle
    for minutes (the browser tests mostly wait on the App), so at most two Chromiums and App servers run at once.
    (``--dist loadgroup`` with ``xdist_group`` marks would say the same, but pytest 9.2's structured node ids
    drop the group xdist 3.8 writes into them: pytest-xdist issue 1386.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class _BrowserTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            if not _is_browser_module(config.rootpath / path):
                return _param_unit(path, nodeid) or path
            return f"browser tests {_browser_half(path)}"

    return _BrowserTogether(config, log)


#: Modules whose tests are split into work units by their (single) parameter's id: the validation matrix's
#: units (``tests/test_validation_matrix.py``: ``UNITS``, one module-scoped fixture per unit) compute on
#: different workers; as one module, one worker computed the whole matrix (4.6 min, the suite's critical path).
_SPLIT_BY_PARAM = ("test_validation_matrix.py",)


def _param_unit(path: str, nodeid: str) -> str | None:
    """``"<module>[<parameter id>]"`` for a parametrized test of a :data:`_SPLIT_BY_PARAM` module, else None."""
    name = Path(path).name
    if name not in _SPLIT_BY_PARAM or not nodeid.endswith("]") or "[" not in nodeid:
        return None
    return f"{name}[{nodeid[nodeid.index('[') + 1:-1]}]"


#: The slowest work units, slowest first (a worker's seconds in a full run on 2 cores, December 2026: the two
#: browser groups, then install ~145 s, panel ~120, doc snippets ~120, ...; the validation matrix, 4.6 min as
#: one module, is now eight units of about 25–60 s, :data:`_SPLIT_BY_PARAM`). Under xdist they are collected,
#: and so handed out, first (longest processing time first): with ``--dist loadfile`` a worker takes the next
#: unit in collection order, and a long module taken last kept one worker busy for minutes after the other had
#: finished. The other modules follow in their usual order, the short ones last.
_SLOWEST_FIRST = (
    "browser tests 1", "browser tests 2", "test_install.py", "test_panel.py", "test_doc_snippets.py",
    "test_validation_matrix.py[tracks]", "test_validation_matrix.py[classes_segments_frames]",
    "test_fo_consensus_labels.py", "test_fo_streaming.py", "test_fo_coco.py",
    "test_validation_matrix.py[polygons]", "test_validation_matrix.py[boxes_keypoints]",
    "test_validation_matrix.py[semantic_masks]", "test_validation_matrix.py[cuboids]",
    "test_validation_matrix.py[instance_masks]", "test_validation_matrix.py[polylines_points]",
    "test_class_consensus.py", "test_fo_video_frames.py", "test_geometry_agreement.py", "test_fo_lifecycle.py",
    "test_operators_forms.py", "test_report_assets.py", "test_fo_ot.py", "test_demo.py", "test_fo_reports.py",
    "test_temporal_operators.py", "test_tracks_alpha.py", "test_panel_video.py", "test_operators_python.py",
    "test_fo_assignment.py", "test_review_video_queues.py", "test_fo_kalos.py", "test_consensus_sparse.py",
    "test_panel_classes.py", "test_architecture.py", "test_tutorial.py",
)


def _work_unit(path: Path, nodeid: str) -> str:
    """The unit a worker takes whole: the browser group of a browser module, a parameter's tests of a
    :data:`_SPLIT_BY_PARAM` module, else the module's file name."""
    if _is_browser_module(path):
        return f"browser tests {_browser_half(str(path))}"
    return _param_unit(str(path), nodeid) or path.name


def pytest_collection_modifyitems(session, config, items) -> None:
    """Under xdist (each worker collects, all in the same order): the units of :data:`_SLOWEST_FIRST` first,
    in that order; a stable sort, so each module's tests keep their order and stay together."""
    if not _WORKER:
        return
    rank = {unit: i for i, unit in enumerate(_SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(_work_unit(Path(item.path), item.nodeid), len(rank)))


#: The browser modules of the second group (about half of the browser tests' time): two groups let both
#: workers run browser tests, one Chromium and App server each; the suite waited on one worker's browser tests
#: (10.5 min) while the other sat idle.
_SECOND_HALF = ("test_browser_review.py", "test_browser_crowd.py", "test_browser_filters.py",
                "test_browser_masks.py", "test_browser_report.py", "test_browser_delegation.py",
                "test_browser_video.py")  # with test_browser_relabel.py in the first: about 445 s each, loaded


def _browser_half(path: str) -> int:
    """Which of the two browser groups module ``path`` runs in."""
    return 2 if Path(path).name in _SECOND_HALF else 1


@functools.lru_cache(maxsize=None)
def _is_browser_module(path: Path) -> bool:
    """A module of browser tests: ``tests/test_browser*.py`` or any marked ``pytest.mark.browser``."""
    try:
        return path.name.startswith("test_browser") or "mark.browser" in path.read_text()
    except OSError:
        return False


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


def _dataset_maker(fo):
    """Yields a function making datasets (optionally with samples), then deletes every dataset it made."""
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


def crowd_with_runs(make, *, n: int, raters: int, seed: int, folder: str, runs) -> tuple:
    """A simulated crowd of boxes (``n`` samples, ``raters`` raters, 3 a sample) as a dataset made by ``make``
    (:func:`make_dataset`), with ``runs`` (``(operator, key, extra params)``) computed through
    ``execute_operator`` on the rater fields. Returns ``(dataset, corpus, {key: result dict})``."""
    import fiftyone.operators as foo

    from agreement.fo.importers.build import samples_from_corpus
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(n, raters, raters_per_sample=3, seed=seed)
    ds = make()
    ds.add_samples(samples_from_corpus(corpus, [f"{folder}/{i:03d}.jpg" for i in range(n)]), progress=False)
    out = {}
    for op, key, extra in runs:
        r = foo.execute_operator(f"@iaa/agreement/{op}", ctx=dict(view=ds.view(),
                                                                  params=dict(fields=list(corpus.raters), key=key,
                                                                              **extra)))
        assert r.error is None, r.error
        out[key] = r.result
    return ds, corpus, out


@pytest.fixture
def make_dataset(fo):
    """Creates throw-away datasets and deletes them after the test."""
    yield from _dataset_maker(fo)


@pytest.fixture(scope="module")
def module_dataset(fo):
    """Creates datasets that the tests of one module share (built once, with their runs: hand each test a
    :func:`clone_dataset` of them) and deletes them after the module."""
    yield from _dataset_maker(fo)


@pytest.fixture
def clone_dataset(fo):
    """A test's own copy of a shared dataset (:func:`module_dataset`): ``dataset.clone()`` keeps the sample and
    label ids, fields, info and runs (with their times), at a fraction of building it and computing its runs
    again; deleted after the test."""
    made = []

    def _clone(ds):
        copy = ds.clone()
        made.append(copy)
        # clone() stamps every run with the time of the copy; the panel lists the newest run first: keep the times
        for kind in ("runs", "evaluations", "brain_methods", "annotation_runs"):
            originals = getattr(ds._doc, kind)
            for key, run_doc in getattr(copy._doc, kind).items():
                run_doc.timestamp = originals[key].timestamp
                run_doc.save()
        return copy

    yield _clone
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


@pytest.fixture
def delegated_progress(monkeypatch) -> list[tuple[float, str]]:
    """Records the progress (fraction, label) that FiftyOne's delegated-operation service stores on its
    operations (``DelegatedOperationService.set_progress``, spied, still called)."""
    from fiftyone.operators.delegated import DelegatedOperationService

    calls: list[tuple[float, str]] = []
    original = DelegatedOperationService.set_progress

    def spy(self, doc_id, progress):
        calls.append((progress.progress, progress.label))
        return original(self, doc_id, progress)

    monkeypatch.setattr(DelegatedOperationService, "set_progress", spy)
    return calls


@pytest.fixture(scope="session")
def labelstudio_server(tmp_path_factory):
    """A real Label Studio server (:mod:`labelstudio_server`), one per test run, shared by the xdist workers;
    skipped when ``.venv/labelstudio`` is absent, unless ``IAA_REQUIRE_LABELSTUDIO=1`` (``make test``)."""
    import labelstudio_server as ls

    why = ls.missing()
    if why:
        if os.environ.get("IAA_REQUIRE_LABELSTUDIO") == "1":
            pytest.fail(f"IAA_REQUIRE_LABELSTUDIO=1 and {why}")
        pytest.skip(why)
    base = tmp_path_factory.getbasetemp()
    yield from ls.shared_server(base.parent if _WORKER else base)  # the workers' shared folder under xdist
