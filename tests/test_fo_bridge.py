"""The FiftyOne bridge on a real embedded-MongoDB dataset: reading, bad input, runs."""

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone


def _det(fo, label, box, **attrs):
    return fo.Detection(label=label, bounding_box=box, **attrs)


@pytest.fixture
def per_rater_ds(fo, make_dataset):
    """Three samples, raters r1/r2/r3 as fields; r3 unassigned on s1, r2 found nothing on s2."""
    D = fo.Detections
    return make_dataset([
        fo.Sample(filepath="/data/s0.jpg", r1=D(detections=[_det(fo, "cat", [0.1, 0.1, 0.2, 0.2])]),
                  r2=D(detections=[_det(fo, "cat", [0.12, 0.1, 0.2, 0.2]), _det(fo, "dog", [0.5, 0.5, 0.2, 0.2])]),
                  r3=D(detections=[_det(fo, "dog", [0.1, 0.1, 0.2, 0.2])])),
        fo.Sample(filepath="/data/s1.jpg", r1=D(detections=[_det(fo, "dog", [0.3, 0.3, 0.1, 0.1])]),
                  r2=D(detections=[_det(fo, "dog", [0.3, 0.3, 0.1, 0.1])]), r3=None),
        fo.Sample(filepath="/data/s2.jpg", r1=D(detections=[_det(fo, "cat", [0.6, 0.6, 0.1, 0.1])]),
                  r2=D(), r3=D(detections=[_det(fo, "cat", [0.6, 0.6, 0.1, 0.1])])),
    ])


def _to_attribute_layout(fo, ds, make_dataset, with_raters_field=True):
    samples = []
    for s in ds.iter_samples():
        dets, raters = [], []
        for r in ("r1", "r2", "r3"):
            if s[r] is None:
                continue
            raters.append(r)
            for d in s[r].detections:
                dets.append(fo.Detection(label=d.label, bounding_box=d.bounding_box, annotator=r))
        kw = {"raters": raters} if with_raters_field else {}
        samples.append(fo.Sample(filepath=s.filepath, gt=fo.Detections(detections=dets), **kw))
    return make_dataset(samples)


def test_both_layouts_read_the_same_corpus(fo, per_rater_ds, make_dataset):
    from agreement.fo.storage.reading import read_annotations

    a = read_annotations(per_rater_ds, fields=["r3", "r1", "r2"]).annotations
    attr_ds = _to_attribute_layout(fo, per_rater_ds, make_dataset)
    b = read_annotations(attr_ds, field="gt", raters_field="raters").annotations
    assert a.raters == b.raters == ("r1", "r2", "r3")
    assert a.assigned.tolist() == b.assigned.tolist() == [[True, True, True], [True, True, False], [True, True, True]]
    assert a.counts().tolist() == b.counts().tolist() == [[1, 2, 1], [1, 1, 0], [1, 0, 1]]
    np.testing.assert_allclose(a.boxes, b.boxes)
    assert a.labels.tolist() == b.labels.tolist()
    # explicit absence (empty Detections) vs implicit absence (None)
    assert a.get(2, "r2") is not None and len(a.get(2, "r2")) == 0
    assert a.get(1, "r3") is None
    # label ids round-trip to the dataset's labels
    ids = set(per_rater_ds.values("r2.detections.id", unwind=True))
    assert set(a.label_ids[a.rater_index == 1]) == ids


def test_attribute_layout_without_raters_field_assumes_fully_crossed(fo, per_rater_ds, make_dataset):
    from agreement.fo.storage.reading import read_annotations

    ds = _to_attribute_layout(fo, per_rater_ds, make_dataset, with_raters_field=False)
    ds.add_sample(fo.Sample(filepath="/data/none.jpg", gt=None))
    read = read_annotations(ds, field="gt")
    assert read.annotations.assigned[:3].all()  # every rater seen, on every sample with a label list
    assert not read.annotations.assigned[3].any()  # None: nobody assigned
    assert "assumed" in read.layout["assignment"]


@pytest.mark.parametrize(
    "box, message",
    [
        ([float("nan"), 0.1, 0.2, 0.2], "NaN or infinite"),
        ([0.1, 0.1, -0.2, 0.2], "negative width"),
        ([float("inf"), 0.1, 0.2, 0.2], "NaN or infinite"),
    ],
)
def test_bad_boxes_name_sample_and_field(fo, make_dataset, box, message):
    from agreement.core.validation import AnnotationError
    from agreement.fo.storage.reading import read_annotations

    ds = make_dataset([
        fo.Sample(filepath="/data/good.jpg", a=fo.Detections(detections=[_det(fo, "x", [0.1, 0.1, 0.1, 0.1])]),
                  b=fo.Detections()),
        fo.Sample(filepath="/data/bad.jpg", a=fo.Detections(), b=fo.Detections(detections=[_det(fo, "x", box)])),
    ])
    with pytest.raises(AnnotationError, match=message) as err:
        read_annotations(ds, fields=["a", "b"])
    assert "bad.jpg" in str(err.value) and "field 'b'" in str(err.value)


def test_boxes_past_the_border_are_clipped_and_reported(fo, make_dataset):
    from agreement.fo.storage.reading import read_annotations

    ds = make_dataset([fo.Sample(filepath="/data/edge.jpg", a=fo.Detections(detections=[_det(fo, "x", [0.9, 0.9, 0.2, 0.2])]),
                                 b=fo.Detections())])
    read = read_annotations(ds, fields=["a", "b"])
    np.testing.assert_allclose(read.annotations.boxes, [[0.9, 0.9, 0.1, 0.1]])
    assert read.repairs.clipped_boxes == 1 and "edge.jpg" in read.repairs.examples[0]
    assert ds.values("a.detections.bounding_box")[0] == [[0.9, 0.9, 0.2, 0.2]]  # user data untouched


def test_bad_layouts_are_clear_errors(fo, per_rater_ds, make_dataset):
    from agreement.core.validation import AnnotationError
    from agreement.fo.storage.reading import read_annotations

    per_rater_ds.add_sample_field("note", fo.StringField)
    with pytest.raises(AnnotationError, match="field 'note' is a StringField, not a label field"):
        read_annotations(per_rater_ds, fields=["r1", "note"])
    with pytest.raises(AnnotationError, match="field 'nope' does not exist"):
        read_annotations(per_rater_ds, fields=["r1", "nope"])
    with pytest.raises(AnnotationError, match="at least 2 raters"):
        read_annotations(per_rater_ds, fields=["r1"])
    with pytest.raises(AnnotationError, match="has no samples"):
        read_annotations(per_rater_ds.limit(0), fields=["r1", "r2"])
    # labels missing the rater attribute
    ds = make_dataset([fo.Sample(filepath="/data/anon.jpg", gt=fo.Detections(detections=[
        _det(fo, "x", [0.1, 0.1, 0.1, 0.1], annotator="u1"), _det(fo, "x", [0.1, 0.1, 0.1, 0.1])]))])
    with pytest.raises(AnnotationError, match="field 'gt': 1 label.*on 1 sample.*no 'annotator' attribute.*anon.jpg"):
        read_annotations(ds, field="gt")
    # a single rater in the attribute layout
    ds1 = make_dataset([fo.Sample(filepath="/data/one.jpg", gt=fo.Detections(detections=[
        _det(fo, "x", [0.1, 0.1, 0.1, 0.1], annotator="u1")]))])
    with pytest.raises(AnnotationError, match="at least 2 raters"):
        read_annotations(ds1, field="gt")
    # a label by a rater the raters_field does not list
    ds2 = make_dataset([fo.Sample(filepath="/data/who.jpg", raters=["u1", "u2"], gt=fo.Detections(detections=[
        _det(fo, "x", [0.1, 0.1, 0.1, 0.1], annotator="u3")]))])
    with pytest.raises(AnnotationError, match="who.jpg.*rater 'u3'"):
        read_annotations(ds2, field="gt", raters_field="raters")


def _fake_run(ds, key, overwrite=False):
    """Writes a per-sample and a per-label result the way compute operators do."""
    from agreement.fo import runs
    from agreement.fo.storage.reading import read_annotations

    read = read_annotations(ds, fields=["r1", "r2"])
    a = read.annotations
    plan = runs.prepare_run(ds, key, "iaa.test", ["score"], ["r1", "r2"], ["cost"], overwrite=overwrite)
    runs.write_sample_values(ds, plan, "score", {sid: float(i) / 10 for i, sid in enumerate(a.sample_ids)})
    for r, name in enumerate(a.raters):
        rows = np.flatnonzero(a.rater_index == r)
        runs.write_label_values(ds, plan, name, "cost",
                                [(a.sample_ids[a.sample_index[i]], a.label_ids[i], 0.5) for i in rows])
    runs.register_run(ds, plan, {"lam": 0.5}, read.layout, {"summary": {"mean": 0.1, "undefined": float("nan")}})
    return plan


def _user_state(ds):
    schema = ds.get_field_schema(flat=True)
    return {k: str(v) for k, v in schema.items()}, ds.values("r1.detections.label"), ds.values("r1.detections.bounding_box")


def test_run_lifecycle_deletes_exactly_its_fields(per_rater_ds):
    from agreement.fo import runs

    before = _user_state(per_rater_ds)
    _fake_run(per_rater_ds, "ag")
    assert runs.list_agreement_runs(per_rater_ds) == ["ag"]
    info = runs.get_agreement_run_info(per_rater_ds, "ag")
    assert info["sample_fields"] == ["ag_score"] and ["r1", "ag_cost"] in info["label_attrs"]
    assert per_rater_ds.values("ag_score") == [0.0, 0.1, 0.2]
    assert per_rater_ds.values("r1.detections.ag_cost") == [[0.5], [0.5], [0.5]]
    res = runs.load_agreement_results(per_rater_ds, "ag")
    assert res["summary"] == {"mean": 0.1, "undefined": None}
    runs.rename_agreement_run(per_rater_ds, "ag", "ag2")
    assert runs.list_agreement_runs(per_rater_ds) == ["ag2"]
    assert per_rater_ds.values("ag2_score") == [0.0, 0.1, 0.2]
    assert "ag_score" not in per_rater_ds.get_field_schema()
    assert per_rater_ds.values("r2.detections.ag2_cost")[0] == [0.5, 0.5]
    out = runs.delete_agreement_run(per_rater_ds, "ag2")
    assert out["deleted_sample_fields"] == ["ag2_score"]
    assert runs.list_agreement_runs(per_rater_ds) == []
    assert _user_state(per_rater_ds) == before


def test_runs_never_overwrite_fields_they_do_not_own(fo, per_rater_ds):
    from agreement.fo import runs

    per_rater_ds.add_sample_field("mine_score", fo.FloatField)
    per_rater_ds.set_values("mine_score", [1.0, 2.0, 3.0])
    with pytest.raises(runs.RunError, match="'mine_score' already exists"):
        _fake_run(per_rater_ds, "mine")
    assert per_rater_ds.values("mine_score") == [1.0, 2.0, 3.0]
    # an existing run needs overwrite=True, which replaces exactly its own fields
    _fake_run(per_rater_ds, "ok")
    with pytest.raises(runs.RunError, match="overwrite=True"):
        _fake_run(per_rater_ds, "ok")
    _fake_run(per_rater_ds, "ok", overwrite=True)
    assert runs.list_agreement_runs(per_rater_ds) == ["ok"]
    with pytest.raises(runs.RunError, match="invalid run key"):
        _fake_run(per_rater_ds, "1bad key")
    with pytest.raises(runs.RunError, match="no agreement run 'nope'"):
        runs.delete_agreement_run(per_rater_ds, "nope")
    # a user label attribute with a run's name is protected too
    per_rater_ds.set_label_values("r1.detections.lab_cost",
                                  {i: 1 for i in per_rater_ds.values("r1.detections.id", unwind=True)}, dynamic=True)
    with pytest.raises(runs.RunError, match="'lab_cost' already exists on field 'r1'"):
        _fake_run(per_rater_ds, "lab")


def test_an_undeclared_label_attribute_with_a_run_name_is_found_in_the_documents(per_rater_ds):
    """Stored on one label of one sample without a declaration (e.g. imported with ``dynamic=False``): the
    document scan finds it whichever field and attribute it is, and the run is refused before it writes."""
    from bson import ObjectId

    from agreement.fo import runs

    coll = per_rater_ds._sample_collection
    sid = per_rater_ds.values("id")[0]
    coll.update_one({"_id": ObjectId(sid)}, {"$set": {"r2.detections.1.und_reason": "mine"}})
    assert per_rater_ds.get_field("r2.detections.und_reason") is None
    with pytest.raises(runs.RunError, match="'und_reason' already exists on field 'r2'"):
        runs.prepare_run(per_rater_ds, "und", "iaa.test", ["score"], ["r1", "r2", "r3"], ["cost", "reason", "match"])
    runs.prepare_run(per_rater_ds, "und", "iaa.test", ["score"], ["r1", "r2", "r3"], ["cost", "reason"],
                     scan_documents=False, check_only=True)  # the second call of a computation skips the scan
    runs.prepare_run(per_rater_ds, "und", "iaa.test", ["score"], ["r1", "r3"], ["cost", "reason"], check_only=True)
    assert coll.find_one({"_id": ObjectId(sid)})["r2"]["detections"][1]["und_reason"] == "mine"
    # in the background (as a streamed run scans while it reads its first shard): the same refusal, at the
    # check before the first write
    check = runs.prepare_run(per_rater_ds, "und", "iaa.test", ["score"], ["r1", "r2", "r3"], ["reason"],
                             check_only=True, scan_documents="background")
    with pytest.raises(runs.RunError, match="'und_reason' already exists on field 'r2'"):
        check.check_documents()
    with pytest.raises(ValueError, match="scan_documents='background' needs check_only=True"):
        runs.prepare_run(per_rater_ds, "und2", "iaa.test", ["score"], ["r1"], ["reason"],
                         scan_documents="background")
    assert "und2" not in runs.list_agreement_runs(per_rater_ds)
    # through a computation: refused, nothing written, the user's value kept
    from agreement.fo.methods.ot_agreement import compute_ot_agreement

    with pytest.raises(runs.RunError, match="'und_reason' already exists on field 'r2'"):
        compute_ot_agreement(per_rater_ds, "und", fields=["r1", "r2", "r3"])
    assert "und" not in runs.list_agreement_runs(per_rater_ds)
    assert not [f for f in per_rater_ds.get_field_schema(flat=True) if "und_" in f]
    assert coll.find_one({"und_ot": {"$exists": True}}) is None
    assert coll.find_one({"_id": ObjectId(sid)})["r2"]["detections"][1]["und_reason"] == "mine"


def test_run_on_a_view_writes_only_its_samples(per_rater_ds):
    from agreement.fo import runs

    view = per_rater_ds.limit(2)
    _fake_run(view, "v")
    assert per_rater_ds.values("v_score") == [0.0, 0.1, None]
    assert len(per_rater_ds.load_run_view("v")) == 2
    runs.delete_agreement_run(per_rater_ds, "v")


def test_masks_and_keypoints_are_read(fo, make_dataset):
    from agreement.core.validation import AnnotationError
    from agreement.fo.storage.reading import read_annotations

    m = np.zeros((4, 6), dtype=bool)
    m[1:3, 2:5] = True
    D, K, nan = fo.Detections, fo.Keypoints, float("nan")
    ds = make_dataset([fo.Sample(
        filepath="/data/m.jpg",
        a=D(detections=[fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.3, 0.2], mask=m)]),
        b=D(detections=[fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.3, 0.2])]),
        ka=K(keypoints=[fo.Keypoint(label="p", points=[[0.1, 0.2], [nan, nan], [0.3, 0.5]])]),
        kb=K(keypoints=[fo.Keypoint(label="p", points=[[0.12, 0.2], [0.2, 0.3], [0.3, 0.45]])]),
    )])
    read = read_annotations(ds, fields=["a", "b"], masks=True)
    a = read.annotations
    assert a.masks[0].dtype == bool and a.masks[0].tolist() == m.tolist() and a.masks[1] is None
    assert read.repairs.resized_masks == 0  # no image size: nothing to compare the mask with
    ds.set_values("metadata", [fo.ImageMetadata(width=100, height=100)])
    sized = read_annotations(ds, fields=["a", "b"], masks=True, image_sizes=True)
    assert sized.repairs.resized_masks == 1  # a 4 x 6 mask on a 20 x 30 pixel box is stretched, and reported
    assert "stretched" in sized.repairs.examples[0]
    assert read_annotations(ds, fields=["a", "b"]).annotations.masks is None
    k = read_annotations(ds, fields=["ka", "kb"]).annotations
    assert k.keypoints.shape == (2, 3, 2) and np.isnan(k.keypoints[0, 1]).all()
    np.testing.assert_allclose(k.boxes[0], [0.1, 0.2, 0.2, 0.3])  # bounds of the labelled points
    bad = make_dataset([fo.Sample(filepath="/data/k.jpg",
                                  ka=K(keypoints=[fo.Keypoint(label="p", points=[[nan, nan], [nan, nan]])]),
                                  kb=K(keypoints=[fo.Keypoint(label="p", points=[[0.1, 0.1], [0.2, 0.2]])]))])
    with pytest.raises(AnnotationError, match="k.jpg.*field 'ka'.*no labelled point"):
        read_annotations(bad, fields=["ka", "kb"])
    odd = make_dataset([fo.Sample(filepath="/data/o.jpg",
                                  ka=K(keypoints=[fo.Keypoint(label="p", points=[[0.1, 0.1]])]),
                                  kb=K(keypoints=[fo.Keypoint(label="p", points=[[0.1, 0.1], [0.2, 0.2]])]))])
    with pytest.raises(AnnotationError, match="different numbers of points"):
        read_annotations(odd, fields=["ka", "kb"])
