"""Streamed runs: the same bits for every shard size and every sample order, per-shard progress, clean failure.

A streamed method (``MethodSpec.kernel``) reads, computes and writes one shard
of samples at a time, in the canonical corpus order (sample ids sorted as
strings), and merges exact corpus statistics at the end; these tests run it
through ``execute_operator`` on a real dataset and compare every number the
run stores: the operator result, the run results, every per-sample field and
every per-label attribute.
"""

from __future__ import annotations

import contextlib
import math

import pytest

pytestmark = pytest.mark.fiftyone

def _same(a, b) -> bool:
    """Equal, NaN equal to NaN, through dicts and lists (bit-identical floats)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


@pytest.fixture
def sparse_crowd(fo, make_dataset):
    """60 samples, 12 raters, 4 assigned per sample (attribute layout, assignment recorded), one box past the
    border, several classes."""
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.fo.storage.reading import declare_raters_field
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(60, 12, raters_per_sample=4, min_objects=1, max_objects=6, seed=3)
    samples = samples_from_corpus(corpus, [f"/stream/{i:03d}.jpg" for i in range(60)], layout="attribute",
                                  field="ground_truth", raters_field="raters")
    first = next(s for s in samples if s["ground_truth"] is not None and s["ground_truth"].detections)
    first["ground_truth"].detections[0].bounding_box = [0.95, 0.1, 0.2, 0.2]  # past the right border
    ds = make_dataset(samples)
    declare_raters_field(ds, "ground_truth", "raters")
    return ds


STREAMED = ["compute_kalos", "compute_geometry_agreement", "compute_ot_agreement"]


def _run(fo, view, key: str, op: str = "compute_kalos", **params):
    import fiftyone.operators as foo

    # the view given is the target (a request naming none runs on the whole dataset)
    params = {"field": "ground_truth", "rater_attr": "annotator", "key": key, "view_target": "CURRENT_VIEW",
              **params}
    return foo.execute_operator(f"@iaa/agreement/{op}", ctx=dict(view=view, params=params)).result


def _stored(ds, key: str) -> tuple[dict, dict, dict]:
    """Every per-sample field by sample id, every per-label attribute by label id, and the run results
    without the shard record (fields and attributes named as the run declares them)."""
    from agreement.fo.runs import get_agreement_run_info, load_agreement_results

    info = get_agreement_run_info(ds, key)
    ids = ds.values("id")
    samples = {f[len(key):]: dict(zip(ids, ds.values(f))) for f in info["sample_fields"]}
    labels = {}
    for lf, attr in info["label_attrs"]:
        lids, vals = ds.values([f"{lf}.detections.id", f"{lf}.detections.{attr}"], unwind=True)
        labels[(lf, attr[len(key):])] = dict(zip(lids, vals))
    results = load_agreement_results(ds, key)
    results["detail"].pop("shards")
    return samples, labels, results


@pytest.mark.parametrize("op", STREAMED)
def test_streamed_methods_are_bit_identical_for_every_shard_size_and_sample_order(fo, sparse_crowd, op):
    ds = sparse_crowd
    # a chance sample drawn (not exact) for geometry: its sets are read back after the last shard
    extra = {"compute_geometry_agreement": {"bootstrap": 200, "max_pairs": 3000},
             "compute_ot_agreement": {"max_pairs": 5000}}.get(op, {})  # drawn chance samples
    runs = {
        "whole": _run(fo, ds.view(), "whole", op, **extra),
        "one": _run(fo, ds.view(), "one", op, shard_size=1, **extra),
        "seven": _run(fo, ds.view(), "seven", op, shard_size=7, **extra),
        "reversed": _run(fo, ds.sort_by("filepath", reverse=True), "reversed", op, shard_size=7, **extra),
    }
    ref = _stored(ds, "whole")
    assert ref[2]["summary"]["clipped_boxes"] == 1
    if op == "compute_geometry_agreement":
        assert ref[2]["summary"]["between_exact"] is False and ref[2]["summary"]["n_samples_skipped"] == 0
    if op == "compute_ot_agreement":
        assert ref[2]["summary"]["alpha_ot_exact"] is False and ref[2]["summary"]["n_cross_pairs_evaluated"] > 1000
    assert ref[1] and all(len(v) > 100 for v in ref[1].values())
    assert any(v is not None for values in ref[1].values() for v in values.values())
    for key, result in runs.items():
        result = dict(result)
        assert result.pop("key") == key
        assert _same(result, {k: v for k, v in runs["whole"].items() if k != "key"}), key
        samples, labels, results = _stored(ds, key)
        assert _same(samples, ref[0]), key
        assert _same(labels, ref[1]), key
        assert _same(results, ref[2]), key


def test_streamed_run_records_its_shards_and_reports_each(fo, sparse_crowd):
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.fo.runs import get_agreement_run_info, load_agreement_results

    stages = []
    compute_kalos(sparse_crowd, "k", field="ground_truth", shard_size=25, progress=lambda f, s: stages.append((f, s)))
    assert load_agreement_results(sparse_crowd, "k")["detail"]["shards"] == {"n_shards": 3, "shard_size": 25,
                                                                          "backend": "serial"}
    labels = [s for _, s in stages]
    for k in (1, 2, 3):
        assert [f"shard {k} of 3: reading", f"shard {k} of 3: computing", f"shard {k} of 3: writing"] == \
            [s for s in labels if s.startswith(f"shard {k} of 3")]
    fractions = [f for f, _ in stages]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert get_agreement_run_info(sparse_crowd, "k")["status"] == "complete"


def test_default_shard_size_follows_the_view():
    from agreement.fo.runs.engine import DEFAULT_SHARD_SIZE, MIN_DEFAULT_SHARD_SIZE, default_shard_size

    assert default_shard_size(1) == MIN_DEFAULT_SHARD_SIZE == 500
    assert default_shard_size(2000) == 500
    assert default_shard_size(10_001) == 2501
    assert default_shard_size(80_000) == DEFAULT_SHARD_SIZE == 20_000
    assert default_shard_size(1_000_000) == DEFAULT_SHARD_SIZE


def test_a_run_without_shard_size_streams_the_view_in_four_shards(fo, sparse_crowd, monkeypatch):
    import agreement.fo.runs.engine as engine
    from agreement.fo.runs import load_agreement_results

    monkeypatch.setattr(engine, "MIN_DEFAULT_SHARD_SIZE", 1)
    whole = _run(fo, sparse_crowd.view(), "whole", "compute_ot_agreement", shard_size=60)
    default = _run(fo, sparse_crowd.view(), "default", "compute_ot_agreement")
    assert load_agreement_results(sparse_crowd, "default")["detail"]["shards"] == {
        "n_shards": 4, "shard_size": 15, "backend": "serial"}
    assert _same({k: v for k, v in default.items() if k != "key"}, {k: v for k, v in whole.items() if k != "key"})
    assert _same(_stored(sparse_crowd, "default")[:2], _stored(sparse_crowd, "whole")[:2])
    # geometry's finish reads its chance sample again: one shard, served from memory
    _run(fo, sparse_crowd.view(), "geo", "compute_geometry_agreement")
    assert load_agreement_results(sparse_crowd, "geo")["detail"]["shards"]["n_shards"] == 1


def test_a_streamed_run_reloads_the_dataset_document_twice_whatever_its_shards(fo, sparse_crowd, monkeypatch):
    """Once to register the run and declare its schema (the first shard), once to complete it: a reload
    of the dataset document costs ~0.02-0.04 s on a crowd dataset, so it is never done per shard."""
    import fiftyone.core.dataset as fod

    from agreement.fo.methods.kalos import compute_kalos

    reloads = []
    reload = fod.Dataset.reload
    monkeypatch.setattr(fod.Dataset, "reload", lambda self: (reloads.append(1), reload(self))[1])
    compute_kalos(sparse_crowd, "reloads", field="ground_truth", shard_size=10)
    assert len(reloads) == 2


def test_a_shard_that_fails_after_the_first_write_leaves_nothing(fo, sparse_crowd, monkeypatch):
    import dataclasses

    import agreement.fo.methods.kalos as fo_kalos
    from agreement.fo.runs import list_agreement_runs
    from agreement.fo.runs.declaration import run_declared
    from agreement.fo.runs.engine import MethodSpec

    calls = []
    kernel = fo_kalos.SPEC.kernel

    def failing(read, params, extra):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("worker lost")
        return kernel(read, params, extra)

    spec = MethodSpec(**{**{f: getattr(fo_kalos.SPEC, f) for f in fo_kalos.SPEC.__dataclass_fields__},
                         "kernel": failing})
    with pytest.raises(RuntimeError, match="worker lost"):
        run_declared(dataclasses.replace(fo_kalos.DECLARATION, spec=spec), sparse_crowd, "broken",
                     field="ground_truth", shard_size=20)
    assert len(calls) == 2  # the first shard was written before the second failed
    assert "broken" not in list_agreement_runs(sparse_crowd)
    schema = sparse_crowd.get_field_schema(flat=True)
    assert not [name for name in schema if "broken_" in name]
    doc = sparse_crowd._sample_collection.find_one({"$or": [{"broken_alpha": {"$exists": True}},
                                                            {"ground_truth.detections.broken_unit": {"$exists": True}}]})
    assert doc is None


def _leftovers(ds, key: str) -> list:
    """Fields of run ``key`` in the schema, and one document still holding a value of it (``None``: none)."""
    schema = ds.get_field_schema(flat=True)
    doc = ds._sample_collection.find_one({"$or": [{f"{key}_alpha": {"$exists": True}},
                                                  {f"ground_truth.detections.{key}_unit": {"$exists": True}}]})
    return [name for name in schema if f"{key}_" in name] + ([doc["_id"]] if doc else [])


def test_shards_are_written_by_the_writer_thread_and_its_error_discards_the_run(fo, sparse_crowd, monkeypatch):
    """A serial run sends each shard's updates from its writer thread (overlapping the next shard's read); a
    write that fails there stops the run with that error, and the run is discarded."""
    import threading

    import agreement.fo.storage.writing as w
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.fo.runs import list_agreement_runs

    threads, real = [], w.write_columns

    def failing(*args, **kwargs):
        threads.append(threading.current_thread().name)
        if len(threads) == 2:
            raise RuntimeError("connection to the database lost")
        return real(*args, **kwargs)

    monkeypatch.setattr(w, "write_columns", failing)
    with pytest.raises(RuntimeError, match="connection to the database lost"):
        compute_kalos(sparse_crowd, "lost", field="ground_truth", shard_size=20)
    assert len(threads) == 2 and all(t.startswith("iaa-shard-writer") for t in threads)
    assert "lost" not in list_agreement_runs(sparse_crowd)
    assert not _leftovers(sparse_crowd, "lost")


def test_a_write_in_flight_when_a_later_shard_fails_lands_before_the_run_is_discarded(fo, sparse_crowd,
                                                                                      monkeypatch):
    """The next shard fails while the previous shard's write is still being sent: the run waits for that
    write before deleting what it wrote, so nothing is left behind."""
    import dataclasses
    import time

    import agreement.fo.methods.kalos as fo_kalos
    import agreement.fo.storage.writing as w
    from agreement.fo.runs import list_agreement_runs
    from agreement.fo.runs.declaration import run_declared
    from agreement.fo.runs.engine import MethodSpec

    real, kernel, calls = w.write_columns, fo_kalos.SPEC.kernel, []

    def slow(*args, **kwargs):
        time.sleep(1.0)
        return real(*args, **kwargs)

    def failing(read, params, extra):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("worker lost")
        return kernel(read, params, extra)

    monkeypatch.setattr(w, "write_columns", slow)
    spec = MethodSpec(**{**{f: getattr(fo_kalos.SPEC, f) for f in fo_kalos.SPEC.__dataclass_fields__},
                         "kernel": failing})
    with pytest.raises(RuntimeError, match="worker lost"):
        run_declared(dataclasses.replace(fo_kalos.DECLARATION, spec=spec), sparse_crowd, "late",
                     field="ground_truth", shard_size=20)
    time.sleep(1.5)  # a write left running would land by now
    assert "late" not in list_agreement_runs(sparse_crowd)
    assert not _leftovers(sparse_crowd, "late")


def test_fields_layout_streams_with_the_same_numbers(fo, make_dataset):
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(30, 3, raters_per_sample=3, min_objects=0, max_objects=5, seed=8)
    ds = make_dataset(samples_from_corpus(corpus, [f"/f/{i}.jpg" for i in range(30)], layout="fields",
                                          raters_field=None))
    fields = sorted(corpus.raters)
    a = compute_kalos(ds, "a", fields=fields)
    b = compute_kalos(ds.sort_by("filepath", reverse=True), "b", fields=fields, shard_size=4)
    assert _same(a, b)
    for f in fields:
        assert ds.values(f"{f}.detections.a_unit") == ds.values(f"{f}.detections.b_unit")
    assert ds.values("a_alpha") == ds.values("b_alpha")  # undefined values are stored as None


def test_bad_shard_sizes_are_refused_before_anything_is_read(fo, sparse_crowd):
    from agreement.fo.methods.kalos import compute_kalos

    for bad in (0, -3, 2.5, "10", True):
        with pytest.raises(ValueError, match="shard_size must be a positive number of samples"):
            compute_kalos(sparse_crowd, "bad", field="ground_truth", shard_size=bad)
    with pytest.raises(ValueError, match="intra-annotator consistency"):
        compute_kalos(sparse_crowd, "bad", field="ground_truth", session_attr="session", shard_size=5)


@pytest.fixture(scope="module")
def dask_scheduler():
    """A local Dask cluster of two worker processes, for the module's tests (closed after them)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    yield cluster.scheduler_address
    cluster.close()


@pytest.mark.parametrize("op", STREAMED)
def test_dask_backend_gives_the_serial_numbers(fo, sparse_crowd, dask_scheduler, op):
    ds = sparse_crowd
    extra = {"compute_geometry_agreement": {"bootstrap": 100, "max_pairs": 3000},
             "compute_ot_agreement": {"max_pairs": 5000}}.get(op, {})
    serial = _run(fo, ds.view(), "serial", op, shard_size=9, **extra)
    dask = _run(fo, ds.view(), "dask", op, shard_size=9, backend="dask", dask_address=dask_scheduler, **extra)
    assert serial.pop("key") == "serial" and dask.pop("key") == "dask"
    assert _same(serial, dask)
    a, b = _stored(ds, "serial"), _stored(ds, "dask")
    assert _same(a[0], b[0]) and _same(a[1], b[1]) and _same(a[2], b[2])
    from agreement.fo.runs import load_agreement_results

    assert load_agreement_results(ds, "dask")["detail"]["shards"] == {"n_shards": 7, "shard_size": 9, "backend": "dask"}


def test_dask_tasks_carry_the_prepared_state_by_reference(fo, sparse_crowd, dask_scheduler, monkeypatch):
    """OT's chance plan (50 MB at 1,000,000 samples) is sent to the cluster once: no task carries it
    (inside each of 50 jobs it took 2.5 GB of the driver's memory until the shards ran)."""
    import distributed

    import agreement.fo.runs.distributed as dist
    from agreement.fo.methods.ot_agreement import compute_ot_agreement

    submitted, scattered = [], []
    opened = dist.dask_client

    class Recording:
        def __init__(self, client):
            self.client = client

        def scatter(self, data, **kw):
            scattered.append(data)
            return self.client.scatter(data, **kw)

        def submit(self, fn, *args, **kw):
            submitted.append(args)
            return self.client.submit(fn, *args, **kw)

        def gather(self, futures):
            return self.client.gather(futures)

    @contextlib.contextmanager
    def recording_client(dask_address=None, workers=None):
        with opened(dask_address, workers) as client:
            yield Recording(client)

    monkeypatch.setattr(dist, "dask_client", recording_client)
    dask = compute_ot_agreement(sparse_crowd, "byref", field="ground_truth", raters_field="raters", max_pairs=5000,
                                shard_size=9, backend="dask", dask_address=dask_scheduler)
    serial = compute_ot_agreement(sparse_crowd, "inline", field="ground_truth", raters_field="raters",
                                  max_pairs=5000, shard_size=9)
    assert _same(dask, serial)
    assert len(scattered) == 1 and type(scattered[0]).__name__ == "ChancePlan"
    assert len(submitted) == 7
    for _where, job, state, spec, process in submitted:
        assert job.state is None and isinstance(state, distributed.Future)
        assert spec.method == "iaa.ot_agreement" and process.__name__ == "process_shard"


def test_dask_local_cluster_is_started_and_closed_for_the_run(fo, sparse_crowd):
    pytest.importorskip("distributed")
    from agreement.fo.methods.kalos import compute_kalos

    a = compute_kalos(sparse_crowd, "local", field="ground_truth", shard_size=30, backend="dask", workers=2)
    b = compute_kalos(sparse_crowd, "here", field="ground_truth")
    assert _same(a, b)


def test_execution_options_are_checked_before_anything_is_read(fo, sparse_crowd):
    from agreement.fo.methods.geometry_agreement import compute_geometry_agreement
    from agreement.fo.runs import list_agreement_runs

    bad = [({"backend": "spark"}, "backend must be one of"),
           ({"dask_address": "tcp://x:1"}, "pass backend='dask'"),
           ({"backend": "dask", "dask_address": "tcp://x:1", "workers": 2}, "either dask_address"),
           ({"backend": "dask", "workers": 0}, "positive number of worker processes")]
    for kwargs, message in bad:
        with pytest.raises(ValueError, match=message):
            compute_geometry_agreement(sparse_crowd, "bad", field="ground_truth", **kwargs)
    assert list_agreement_runs(sparse_crowd) == []


def test_an_empty_view_is_refused_with_a_message(fo, make_dataset):
    from agreement.core.validation import AnnotationError
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(5, 3, raters_per_sample=3, seed=1)
    ds = make_dataset(samples_from_corpus(corpus, [f"/e/{i}.jpg" for i in range(5)], layout="fields",
                                          raters_field=None))
    with pytest.raises(AnnotationError, match="has no samples"):
        compute_kalos(ds.limit(0), "empty", fields=sorted(corpus.raters))


def test_a_single_shard_serves_the_chance_sample_from_memory(fo, sparse_crowd, monkeypatch):
    import agreement.fo.runs.engine as engine

    reads = []
    real = engine.read_annotations
    monkeypatch.setattr(engine, "read_annotations", lambda *a, **k: reads.append(1) or real(*a, **k))
    one = _run(fo, sparse_crowd.view(), "one", "compute_geometry_agreement", max_pairs=3000)
    assert len(reads) == 1  # the shard; the chance sample's sets come from it
    two = _run(fo, sparse_crowd.view(), "two", "compute_geometry_agreement", max_pairs=3000, shard_size=30)
    assert len(reads) == 1 + 2 + 1  # two shards, then the chance sample read back
    assert _same({k: v for k, v in one.items() if k != "key"}, {k: v for k, v in two.items() if k != "key"})
