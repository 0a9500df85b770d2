"""compute_consensus through execute_operator: the consensus field, per-label links, review queue, report.

The consensus field is an ordinary FiftyOne label field: it exports to COCO
and evaluate_detections runs against it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from label_kinds import KINDS, kind_dataset, kind_label

pytestmark = pytest.mark.fiftyone


def _run(ds, op, **params):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    try:
        res = foo.execute_operator(f"@iaa/agreement/{op}", ctx=dict(view=ds.view(), params=params))
    except ExecutionError as e:
        raise RuntimeError(str(e)) from None
    if res.error:
        raise RuntimeError(res.error)
    return res.result


@pytest.fixture
def crowd_ds(fo, make_dataset):
    """60 samples, 5 raters (all assigned), true objects in 'truth'."""
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.simulate.synthetic.crowd import CrowdNoise, crowd_corpus

    corpus, truth = crowd_corpus(60, 5, raters_per_sample=5, min_objects=1, max_objects=5, seed=11,
                                 noise=CrowdNoise(miss=0.1, false_positive=0.1))
    samples = samples_from_corpus(corpus, [f"/c/{i}.jpg" for i in range(60)], layout="fields", raters_field=None)
    ref = samples_from_corpus(truth, [f"/c/{i}.jpg" for i in range(60)], layout="fields", raters_field=None)
    for s, r in zip(samples, ref):
        s["truth"] = r["truth"]
    ds = make_dataset(samples)
    return ds, list(corpus.raters)


def test_the_forms_review_band_is_the_python_review_band(crowd_ds):
    """The App form's two numbers (review_lo, review_hi) give the run the review band a Python call gives as
    review_band; both given must agree (neither is silently ignored)."""
    from agreement.fo.runs import get_agreement_run_info

    ds, raters = crowd_ds
    py = _run(ds, "compute_consensus", fields=raters, key="py", review_band=[0.5, 0.999])
    form = _run(ds, "compute_consensus", fields=raters, key="form", review_lo=0.5, review_hi=0.999)
    default = _run(ds, "compute_consensus", fields=raters, key="default")
    assert py["n_review"] == form["n_review"] != default["n_review"]
    assert get_agreement_run_info(ds, "form")["params"]["review_band"] == [0.5, 0.999]
    both = _run(ds, "compute_consensus", fields=raters, key="both", review_band=[0.5, 0.999], review_lo=0.5,
                review_hi=0.999)  # the same band both ways
    assert both["n_review"] == py["n_review"]
    with pytest.raises(RuntimeError, match=r"review_band \[0.5, 0.999\] and the form's review_lo/review_hi .*disagree"):
        _run(ds, "compute_consensus", fields=raters, key="clash", review_band=[0.5, 0.999], review_hi=0.8)


def test_consensus_field_links_and_run_results(crowd_ds):
    from agreement.fo.runs import get_agreement_run_info, load_agreement_results

    ds, raters = crowd_ds
    r = _run(ds, "compute_consensus", fields=raters, key="cons", review_band=[0.5, 0.999])  # some flagged
    assert r["n_consensus"] > 0 and 0 < r["mean_confidence"] <= 1
    dets = [d for v in ds.values("cons_consensus") for d in (v.detections if v else [])]
    assert len(dets) == r["n_consensus"]
    d = dets[0]
    assert 0 < d.confidence <= 1 and 0 < d["cons_support"] <= 1 and 0 < d["cons_class_confidence"] <= 1
    assert isinstance(d["cons_review"], bool) and d["cons_members"]
    # every member id is a rater label whose consensus_id points back to this label
    by_id = {lab.id: lab for f in raters for v in ds.values(f) for lab in (v.detections if v else [])}
    for det in dets[:20]:
        for mid in det["cons_members"]:
            assert by_id[mid]["cons_consensus_id"] == det.id
    # per sample: the number of its consensus labels flagged for review, and their lowest confidence
    n_review, low = ds.values("cons_n_review"), ds.values("cons_min_confidence")
    for labels, n, m in zip(ds.values("cons_consensus"), n_review, low):
        dets = labels.detections if labels else []
        assert n == sum(bool(d["cons_review"]) for d in dets)
        # the lowest label confidence (existence times class posterior): what the review queue sorts by
        assert m == (pytest.approx(min(d.confidence for d in dets), rel=1e-12) if dets else None)
    assert sum(n_review) == r["n_review"] > 0 and len(n_review) == len(ds)
    report = load_agreement_results(ds, "cons")["detail"]["rater_report"]
    assert set(report) == set(raters)
    for entry in report.values():
        assert {"sensitivity", "false_positive_rate", "precision", "localisation_error", "confusion",
                "n_labels", "n_samples"} <= set(entry)
    assert get_agreement_run_info(ds, "cons")["status"] == "complete"


@pytest.mark.parametrize("params, tau, selection", [
    ({}, None, "auto"),                                   # default: chosen from the data
    ({"tau_auto": True, "tau": 0.45}, None, "auto"),      # the form's checkbox wins over a stale number
    ({"tau_auto": False, "tau": 0.45}, 0.45, "given"),    # the form, checkbox off
    ({"tau": 0.4}, 0.4, "given"),                         # an SDK call with a number
    ({"tau": "auto"}, None, "auto"),
])
def test_the_consensus_tau_is_chosen_from_the_data_unless_given(crowd_ds, params, tau, selection):
    from agreement.fo.runs import load_agreement_results
    from agreement.fo.storage.reading import read_annotations
    from agreement.methods.consensus import consensus

    ds, raters = crowd_ds
    r = _run(ds, "compute_consensus", fields=raters, key="ct", **params)
    detail = load_agreement_results(ds, "ct")["detail"]
    assert r["tau_selection"] == selection and r["tau"] == detail["tau"]
    if tau is None:
        expected = consensus(read_annotations(ds, fields=raters).annotations).params
        assert detail["tau"] == expected["tau"] == detail["tau_auto"]["tau"]
        assert 0.3 <= detail["tau"] <= 0.5 and detail["tau_auto"]["n_cross_pairs"] > 0
    else:
        assert detail["tau"] == tau and detail["tau_auto"] is None
    with pytest.raises(RuntimeError, match="'auto'"):
        _run(ds, "compute_consensus", fields=raters, key="bad", tau_auto=False, tau=0.0)


def test_consensus_exports_to_coco_and_evaluates(crowd_ds, tmp_path):
    import fiftyone as fo

    ds, raters = crowd_ds
    _run(ds, "compute_consensus", fields=raters, key="cons")
    out = tmp_path / "coco"
    for s in ds:  # COCO export needs image sizes
        s.metadata = fo.ImageMetadata(width=640, height=480)
        s.save()
    ds.export(labels_path=str(out / "labels.json"), dataset_type=fo.types.COCODetectionDataset,
              label_field="cons_consensus")
    coco = json.loads((out / "labels.json").read_text())
    n = sum(len(v.detections) for v in ds.values("cons_consensus") if v)
    assert len(coco["annotations"]) == n
    res = ds.evaluate_detections("cons_consensus", gt_field="truth", eval_key="ev")
    assert 0.5 < res.metrics()["precision"] <= 1 and 0.5 < res.metrics()["recall"] <= 1


def test_identical_raters_give_their_labels_with_high_confidence(fo, make_dataset):
    det = lambda lab, box: fo.Detection(label=lab, bounding_box=box)  # noqa: E731
    boxes = [("cat", [0.1, 0.1, 0.2, 0.2]), ("dog", [0.5, 0.5, 0.3, 0.2])]
    ds = make_dataset([fo.Sample(filepath=f"/i/{s}.jpg", **{
        r: fo.Detections(detections=[det(l, b) for l, b in boxes]) for r in ("a", "b", "c", "d")})
        for s in range(12)])
    _run(ds, "compute_consensus", fields=["a", "b", "c", "d"], key="same")
    for v in ds.values("same_consensus"):
        got = sorted((d.label, tuple(np.round(d.bounding_box, 9))) for d in v.detections)
        assert got == sorted((l, tuple(b)) for l, b in boxes)
        assert all(d.confidence > 0.99 for d in v.detections)
    assert all(all(x) for x in ds.values("a.detections.same_agrees"))


def test_review_queue_and_finalize(crowd_ds):
    from agreement.fo.methods.consensus import finalize_consensus, review_view
    from agreement.fo.runs import delete_agreement_run

    ds, raters = crowd_ds
    r = _run(ds, "compute_consensus", fields=raters, key="cons", review_band=[0.5, 0.999])
    queue = review_view(ds, "cons")
    assert len(queue) > 0
    conf, ids = queue.values(["cons_consensus.confidence", "cons_consensus.id"])
    assert list(zip(conf, ids)) == sorted(zip(conf, ids))  # least confident first; ties in id order
    first = queue.first()
    first.cons_consensus.tags.append("rejected")
    first.save()
    second = queue.skip(1).first()
    second.cons_consensus.tags.append("accepted")
    second.save()
    counts = finalize_consensus(ds, "cons")
    assert counts["rejected"] == 1 and counts["accepted"] == 1
    assert counts["kept"] == r["n_consensus"] - 1
    final_ids = {d.id for v in ds.values("cons_final") for d in (v.detections if v else [])}
    assert first.cons_consensus.id not in final_ids
    delete_agreement_run(ds, "cons")
    assert not any(f.startswith("cons_") for f in ds.get_field_schema())


def test_rater_report_export(crowd_ds, tmp_path):
    ds, raters = crowd_ds
    _run(ds, "compute_consensus", fields=raters, key="cons")
    out = _run(ds, "export_rater_report", key="cons", output_dir=str(tmp_path))
    assert out["raters"] == len(raters)
    assert set(json.loads(open(out["json"]).read())) == set(raters)
    lines = open(out["csv"]).read().splitlines()
    assert lines[0].startswith("rater,sensitivity") and len(lines) == len(raters) + 1


@pytest.mark.parametrize("params, message", [
    ({"min_confidence": 0.0}, "min_confidence must be in"),
    ({"min_confidence": 1.5}, "min_confidence must be in"),
    ({"quorum": 0.0, "method": "majority"}, "quorum must be in"),
    ({"method": "vote"}, "method"),
])
def test_bad_parameters_are_refused_before_writing(crowd_ds, params, message):
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.runs import list_agreement_runs

    ds, raters = crowd_ds
    with pytest.raises(ValueError, match=message):
        compute_consensus(ds, "bad", fields=raters, **params)
    assert "bad" not in list_agreement_runs(ds)


def test_one_rater_and_mixed_label_types_are_refused(fo, make_dataset):
    from agreement.fo.methods.consensus import compute_consensus

    det = fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.2, 0.2])
    ds = make_dataset([fo.Sample(filepath="/o/1.jpg", a=fo.Detections(detections=[det]),
                                 p=fo.Polylines(polylines=[fo.Polyline(label="x", points=[[(0.1, 0.1), (0.2, 0.1),
                                                                                           (0.2, 0.2)]])]))])
    from agreement.fo.runs import list_agreement_runs

    schema = dict(ds.get_field_schema(flat=True))
    with pytest.raises(Exception, match="at least 2 raters|at least two"):
        compute_consensus(ds, "one", fields=["a"])
    with pytest.raises(Exception, match="same label type"):
        compute_consensus(ds, "mixed", fields=["a", "p"])
    with pytest.raises(Exception, match="same label type"):  # the operator refuses it the same way
        _run(ds, "compute_consensus", fields=["a", "p"], key="mixed_op")
    ds.reload()
    assert not list_agreement_runs(ds)
    assert dict(ds.get_field_schema(flat=True)).keys() == schema.keys()  # nothing declared, nothing written
    assert ds.first().a.detections[0].to_dict().keys() == det.to_dict().keys()


def test_review_mode_of_load_agreement_view_opens_the_queue(crowd_ds):
    ds, raters = crowd_ds
    _run(ds, "compute_consensus", fields=raters, key="cons", review_band=[0.5, 0.999])
    out = _run(ds, "load_agreement_view", key="cons", mode="review")
    from agreement.fo.methods.consensus import review_view

    assert out["count"] == len(review_view(ds, "cons")) > 0


def test_written_in_parts_equals_written_at_once(crowd_ds, monkeypatch):
    """A whole-corpus run writes its output in parts (the next part's label documents are made while
    one is in the database): parts of 7 samples store what one part stores, with every member's
    consensus_id pointing at the label that lists it (the label ids differ between runs)."""
    import agreement.fo.runs.engine as engine

    ds, raters = crowd_ds
    _run(ds, "compute_consensus", fields=raters, key="whole")
    monkeypatch.setattr(engine, "DEFAULT_SHARD_SIZE", 7)
    written = []
    real = engine._write

    def counting(*args, **kwargs):
        written.append(kwargs.get("part", args[6] if len(args) > 6 else None))
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "_write", counting)
    _run(ds, "compute_consensus", fields=raters, key="parts")
    assert len(written) == 9 and [p.start for p in written] == list(range(0, 60, 7))

    def stored(key):
        out = []
        for labels in ds.values(f"{key}_consensus"):
            out.append([(d.label, d.bounding_box, d.confidence, d[f"{key}_support"], d[f"{key}_class_confidence"],
                         sorted(d[f"{key}_members"]), d[f"{key}_review"]) for d in labels.detections])
        return out, ds.values(f"{key}_n_review"), ds.values(f"{key}_min_confidence")

    assert stored("whole") == stored("parts")
    by_id = {d.id: d for v in ds.values("parts_consensus") for d in v.detections}
    linked = 0
    for f in raters:
        for labs in ds.values(f):
            for lab in labs.detections:
                get = lambda name: lab[name] if lab.has_field(name) else None  # noqa: E731, B023  (None: not written)
                cid = get("parts_consensus_id")
                assert (cid is None) == (get("whole_consensus_id") is None)
                assert get("parts_agrees") == get("whole_agrees")
                if cid is not None:
                    assert lab.id in by_id[cid]["parts_members"]
                    linked += 1
    assert linked == sum(len(d["parts_members"]) for d in by_id.values()) > 0  # every member links back


def test_read_in_parts_equals_read_at_once(crowd_ds, monkeypatch):
    """A view larger than one part is read in parts (canonical order) and joined, so that only one part's
    documents are in memory: the run stores what a read at once (view order, here reversed) stores."""
    import fiftyone.operators as foo

    import agreement.fo.runs.engine as engine
    import agreement.fo.storage.reading as reading

    ds, raters = crowd_ds
    view = ds.sort_by("filepath", reverse=True)

    def run(key):
        foo.execute_operator("@iaa/agreement/compute_consensus",
                             ctx=dict(view=view, params={"fields": raters, "key": key,
                                                         "view_target": "CURRENT_VIEW"}))

    run("once")
    monkeypatch.setattr(engine, "WHOLE_READ_PART", 7)
    joined = []
    real = reading.join_reads
    monkeypatch.setattr(engine, "join_reads", lambda parts: joined.append(len(parts)) or real(parts))
    run("parts")
    assert joined == [9]

    def stored(key):
        by_sample = {}
        for sid, labels, n_review, low in zip(*ds.values(["id", f"{key}_consensus", f"{key}_n_review",
                                                          f"{key}_min_confidence"])):
            by_sample[sid] = (sorted((d.label, d.bounding_box, d.confidence, d[f"{key}_support"],
                                      d[f"{key}_class_confidence"], sorted(d[f"{key}_members"]), d[f"{key}_review"])
                                     for d in labels.detections), n_review, low)
        return by_sample

    once, parts = stored("once"), stored("parts")
    assert once.keys() == parts.keys()
    for sid in once:
        a, b = once[sid], parts[sid]
        assert a[1] == b[1] and len(a[0]) == len(b[0])
        np.testing.assert_allclose(a[2], b[2], rtol=1e-12)
        for x, y in zip(a[0], b[0]):
            assert x[0] == y[0] and x[5] == y[5] and x[6] == y[6]
            np.testing.assert_allclose(x[1], y[1], rtol=1e-12)
            np.testing.assert_allclose(x[2:5], y[2:5], rtol=1e-12)
    from agreement.fo.runs import load_agreement_results

    a, b = (load_agreement_results(ds, k)["detail"]["rater_report"] for k in ("once", "parts"))
    for r in raters:
        np.testing.assert_allclose([a[r]["sensitivity"], a[r]["false_positive_rate"]],
                                   [b[r]["sensitivity"], b[r]["false_positive_rate"]], rtol=1e-12)


@pytest.mark.parametrize("layout", ["fields", "attribute"])
@pytest.mark.parametrize("kind", KINDS)
def test_every_label_type_gets_a_consensus_field_that_fiftyone_loads(fo, make_dataset, kind, layout):
    """Four raters draw object 0 alike and two of them object 1: object 0's consensus label is their
    label, with confidence near 1. The field is of the raters' label type and every sample, the review
    queue (a quorum vote, under which object 1 has half the votes and is queued; patches of images, the
    samples of a point cloud dataset) and the panel load (a keypoint's ``confidence`` is FiftyOne's
    per-point list)."""
    from agreement.fo.methods.consensus import review_view
    from agreement.fo.panel.data import run_panel_data

    ds, rater_params, container, items = kind_dataset(fo, make_dataset, kind, layout)
    out = _run(ds, "compute_consensus", key="k", review_band=[0.05, 0.999], **rater_params)
    assert out["n_samples"] == 8 and out["n_consensus"] >= 8
    ds.reload()
    for sample in ds:  # every sample loads: each stored value is valid for its FiftyOne field
        consensus = sample["k_consensus"]
        assert isinstance(consensus, container)
        labels = {lab.label: lab for lab in consensus[items]}
        certain, reference = labels["c0"], kind_label(fo, kind, 0, "a")
        for name in ("bounding_box", "points", "location", "dimensions", "rotation"):
            if name in reference and reference[name] is not None and name in certain:
                if name == "bounding_box" and kind in ("masks", "3d"):
                    continue  # a mask's box is its foreground's; a cuboid has none
                np.testing.assert_allclose(np.asarray(certain[name], float), np.asarray(reference[name], float),
                                           atol=1e-9)
        if kind == "masks":  # the raters' foreground, in the tight box of it
            assert certain.mask.sum() == reference.mask.sum() and certain.mask.all()
        if kind == "keypoints":
            assert len(certain.confidence) == 3 and min(certain.confidence) > 0.9
        else:
            assert certain.confidence > 0.9
        assert certain["k_review"] is False and len(certain["k_members"]) == 4
    _run(ds, "compute_consensus", key="m", method="majority", quorum=0.5, review_band=[0.05, 0.999],
         **rater_params)
    queue = review_view(ds, "m")
    flagged = [lab for v in ds.values("m_consensus") for lab in v[items] if lab["m_review"]]
    assert len(flagged) == 8
    if kind == "3d":  # no patches of point clouds: the samples, showing only their flagged labels
        assert len(queue) == 8 and all(len(p["m_consensus"][items]) == 1 for p in queue)
        shown = {lab.label for p in queue for lab in p["m_consensus"][items]}
    else:
        assert len(queue) == 8
        shown = {p["m_consensus"].label for p in queue}  # the patches of the uncertain objects load
    assert shown == {"c1"}
    from agreement.fo.methods.consensus import finalize_consensus

    first = ds.first()["m_consensus"][items]  # a reviewer rejects the first sample's uncertain label
    ds.select_labels(ids=[lab.id for lab in first if lab.label == "c1"]).tag_labels("rejected", "m_consensus")
    counts = finalize_consensus(ds, "m")
    assert counts["rejected"] == 1 and counts["kept"] == len(flagged) + 8 - 1
    assert all(isinstance(v, container) for v in ds.values("m_final"))
    for key in ("k", "m"):
        cards = {c["label"]: c for c in run_panel_data(ds, key)["consensus"]["cards"]}
        assert 0 < cards["mean confidence of the consensus labels"]["value"] <= 1
