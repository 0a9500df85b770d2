"""Right by default on real designs: recorded rater assignment, the crossed-design refusal, box_policy.

Every computation goes through ``execute_operator`` on an embedded-MongoDB
dataset, called the way users call it (``field`` and ``rater_attr`` only).
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

OPS = {
    "kalos": ("compute_kalos", ("global_alpha", "mean_alpha", "n_undefined", "n_units")),
    "ot": ("compute_ot_agreement", ("alpha_ot", "mean_ot", "observed_cost", "expected_cost", "n_scored", "f1")),
    "geometry": ("compute_geometry_agreement", ("sigma", "distance_alpha", "ks", "detection_alpha",
                                                "classification_alpha", "n_samples_measured")),
}


def _run(ds, op, **params):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionError

    try:
        res = foo.execute_operator(f"@iaa/agreement/{op}", ctx=dict(view=ds.view(), params=params))
    except ExecutionError as e:  # the operator's own error, with its message
        raise RuntimeError(str(e)) from None
    if res.error:
        raise RuntimeError(res.error)
    return res.result


def _import(tmp_path, coco, name, layout="attribute"):
    import fiftyone as fo
    import fiftyone.operators as foo

    from agreement.io.coco import write_multi_rater_coco

    path = tmp_path / f"{name}.json"
    write_multi_rater_coco(coco, path)
    res = foo.execute_operator("@iaa/agreement/import_multi_rater_coco", ctx=dict(params=dict(
        coco_path=str(path), dataset_name=name, layout=layout, field="ground_truth", rater_attr="annotator",
        polygons="none")))
    assert not res.error, res.error
    return fo.load_dataset(name)


@pytest.fixture
def crowd_coco():
    """A sparse-assignment crowd corpus as multi-rater COCO: 40 samples, 30 raters, 4 per sample."""
    from agreement.io.coco import MultiRaterCoco
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(40, 30, raters_per_sample=4, min_objects=1, max_objects=5, seed=3)
    corpus = type(corpus)(
        sample_ids=np.arange(1, corpus.num_samples + 1), raters=corpus.raters, assigned=corpus.assigned,
        boxes=corpus.boxes, labels=corpus.labels, label_ids=np.arange(1, len(corpus) + 1),
        sample_index=corpus.sample_index, rater_index=corpus.rater_index, image_sizes=corpus.image_sizes,
    )
    images = [{"id": int(i), "file_name": f"{i:04d}.jpg", "width": 640, "height": 480} for i in corpus.sample_ids]
    cats = [{"id": k + 1, "name": c} for k, c in enumerate(sorted(set(corpus.labels.tolist())))]
    return MultiRaterCoco(corpus, images, cats, {}, {r: r for r in corpus.raters}, {})


def _headline(result: dict, keys) -> dict:
    return {k: result[k] for k in keys}


@pytest.mark.parametrize("method", sorted(OPS))
def test_recorded_assignment_is_used_without_raters_field(tmp_path, crowd_coco, method):
    ds = _import(tmp_path, crowd_coco, f"crowd-{method}")
    try:
        op, keys = OPS[method]
        default = _run(ds, op, field="ground_truth", rater_attr="annotator", key="d")
        explicit = _run(ds, op, field="ground_truth", rater_attr="annotator", raters_field="raters", key="e")
        assert _headline(default, keys) == _headline(explicit, keys)
        from agreement.fo.runs import get_agreement_run_info

        info = get_agreement_run_info(ds, "d")["input"]
        assert info["raters_field"] == "raters" and info["raters_field_source"] == "recorded by the importer"
        assert not info["assumed_crossed"]
        assert get_agreement_run_info(ds, "e")["input"]["raters_field_source"] == "given"
    finally:
        ds.delete()


def test_kalos_default_on_crowd_equals_the_pure_library_with_the_assignment(tmp_path, crowd_coco):
    from agreement.methods.kalos import kalos_alpha

    ds = _import(tmp_path, crowd_coco, "crowd-pure")
    try:
        r = _run(ds, "compute_kalos", field="ground_truth", rater_attr="annotator", key="k")
        assert r["global_alpha"] == pytest.approx(kalos_alpha(crowd_coco.annotations).global_alpha, abs=1e-12)
    finally:
        ds.delete()


def test_implausible_crossed_design_is_refused_and_assume_crossed_accepts(tmp_path, crowd_coco):
    ds = _import(tmp_path, crowd_coco, "crowd-refuse")
    try:
        ds.info.pop("iaa_coco")
        ds.save()
        for op, _ in OPS.values():
            with pytest.raises(RuntimeError) as err:
                _run(ds, op, field="ground_truth", rater_attr="annotator", key="x")
            msg = str(err.value)
            assert "no rater assignment" in msg and "median rater labelled" in msg
            assert "raters_field=" in msg and "assume_crossed=True" in msg and "raters" in msg
        r = _run(ds, "compute_kalos", field="ground_truth", rater_attr="annotator", key="x", assume_crossed=True)
        assert r["global_alpha"] is not None
        from agreement.fo.runs import get_agreement_run_info

        info = get_agreement_run_info(ds, "x")["input"]
        assert info["assumed_crossed"] and "accepted with assume_crossed=True" in info["assignment"]
        assert info["crossed_evidence"]["median_coverage"] < 0.5
        # the panel's cards say what was assumed
        from agreement.fo.panel.data import run_panel_data

        cards = {c["label"]: c["text"] for c in run_panel_data(ds.view(), "x")["cards"]}
        assert cards["rater assignment"].startswith("assumed fully crossed")
    finally:
        ds.delete()


def test_declared_raters_field_is_used(fo, make_dataset):
    from agreement.fo.storage.reading import declare_raters_field, read_annotations

    det = lambda who, box: fo.Detection(label="x", bounding_box=box, annotator=who)  # noqa: E731
    ds = make_dataset([
        fo.Sample(filepath=f"/d/{s}.jpg", assigned=[f"u{s % 5}", f"u{(s + 1) % 5}"],
                  gt=fo.Detections(detections=[det(f"u{s % 5}", [0.1, 0.1, 0.2, 0.2])]))
        for s in range(10)
    ])
    read = read_annotations(ds, field="gt", assume_crossed=True)
    assert read.annotations.assigned.all()  # crossed: every rater seen, everywhere
    declare_raters_field(ds, "gt", "assigned", raters=["u0", "u1", "u2", "u3", "u4"])
    read = read_annotations(ds, field="gt")
    assert read.layout["raters_field"] == "assigned" and read.layout["raters_field_source"] == "declared"
    assert read.annotations.assigned.sum(axis=1).tolist() == [2] * 10


def test_lvis_attribute_layout_default_equals_explicit_raters_field(tmp_path, lvis_path):
    import fiftyone as fo
    import fiftyone.operators as foo

    res = foo.execute_operator("@iaa/agreement/import_multi_rater_coco", ctx=dict(params=dict(
        coco_path=str(lvis_path), dataset_name="lvis-attr", layout="attribute", polygons="none")))
    assert not res.error, res.error
    ds = fo.load_dataset("lvis-attr")
    try:
        for op, keys in OPS.values():
            a = _run(ds, op, field="ground_truth", rater_attr="annotator", key="d", overwrite=True)
            b = _run(ds, op, field="ground_truth", rater_attr="annotator", raters_field="raters", key="e",
                     overwrite=True)
            assert _headline(a, keys) == _headline(b, keys)
    finally:
        ds.delete()


# ---------------------------------------------------------------- bad raters_field and rater attributes


def _attr_ds(fo, make_dataset, assigned_values, who=("u1", "u2")):
    det = lambda w, box: fo.Detection(label="x", bounding_box=box, **({"annotator": w} if w else {}))  # noqa: E731
    return make_dataset([
        fo.Sample(filepath=f"/d/{s}.jpg", assigned=a,
                  gt=fo.Detections(detections=[det(w, [0.1, 0.1, 0.2, 0.2]) for w in who]))
        for s, a in enumerate(assigned_values)
    ])


@pytest.mark.parametrize("assigned, message", [
    ([["u1", "u2"], None, ["u1", "u2"]], r"missing \(None\) on 1 sample.*1\.jpg"),
    ([[1, 2], [1, 2], [2]], r"list of rater names \(strings\).*3 sample.*\[1, 2\]"),
    ([["u1", "u2"], ["u1", "u2", "u9"], ["u1", "u2"]], r"names 1 rater\(s\) that no label.*'u9'.*1\.jpg"),
])
def test_bad_raters_field_is_a_clear_error(fo, make_dataset, assigned, message):
    from agreement.core.validation import AnnotationError
    from agreement.fo.storage.reading import read_annotations

    ds = _attr_ds(fo, make_dataset, assigned)
    with pytest.raises(AnnotationError, match=message):
        read_annotations(ds, field="gt", raters_field="assigned")


def test_labels_without_rater_name_the_count_and_first_samples(fo, make_dataset):
    from agreement.core.validation import AnnotationError
    from agreement.fo.storage.reading import read_annotations

    ds = _attr_ds(fo, make_dataset, [["u1", "u2"]] * 4, who=("u1", None))
    with pytest.raises(AnnotationError, match=r"4 label\(s\) on 4 sample\(s\) have no 'annotator'.*0\.jpg.*1\.jpg"):
        read_annotations(ds, field="gt", raters_field="assigned")


def test_form_preselects_the_recorded_assignment_and_layout(tmp_path, crowd_coco):
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    ds = _import(tmp_path, crowd_coco, "crowd-form")
    try:
        op = foo.get_operator("@iaa/agreement/compute_kalos")
        ctx = ExecutionContext(request_params={"dataset_name": ds.name, "view": ds.view()._serialize(), "params": {}})
        props = op.resolve_input(ctx).type.properties
        assert props["layout"].default == "attribute" and props["field"].default == "ground_truth"
        assert props["raters_field"].default == "raters"
        assert "assume_crossed" not in props
        assert props["box_policy"].default == "clip"
    finally:
        ds.delete()


# ---------------------------------------------------------------- box_policy through the operators


@pytest.fixture
def border_ds(fo, make_dataset):
    """Two raters; 'b' drew one box past the right border and one entirely outside the image."""
    det = lambda box: fo.Detection(label="x", bounding_box=box)  # noqa: E731
    return make_dataset([
        fo.Sample(filepath="/d/0.jpg", a=fo.Detections(detections=[det([0.8, 0.1, 0.19, 0.2]), det([0.1, 0.5, 0.2, 0.2])]),
                  b=fo.Detections(detections=[det([0.8, 0.1, 0.3, 0.2]), det([1.2, 0.5, 0.2, 0.2])])),
        fo.Sample(filepath="/d/1.jpg", a=fo.Detections(detections=[det([0.3, 0.3, 0.2, 0.2])]),
                  b=fo.Detections(detections=[det([0.31, 0.3, 0.2, 0.2])])),
    ])


@pytest.mark.parametrize("op", ["compute_kalos", "compute_ot_agreement", "compute_geometry_agreement"])
def test_box_policy_clip_keeps_the_outside_box_as_a_zero_area_box(border_ds, op):
    from agreement.fo.runs import load_agreement_results

    r = _run(border_ds, op, fields=["a", "b"], key="c")
    assert (r["clipped_boxes"], r["outside_boxes"], r["dropped_boxes"]) == (1, 1, 0)
    per = load_agreement_results(border_ds, "c")["detail"]["repairs"]["per_rater"]
    assert per == {"b": {"clipped_boxes": 1, "outside_boxes": 1, "dropped_boxes": 0}}
    assert border_ds.values("b.detections.bounding_box")[0][1] == [1.2, 0.5, 0.2, 0.2]  # user data untouched


def test_box_policy_clip_counts_the_outside_box_as_disagreement(border_ds):
    clip = _run(border_ds, "compute_kalos", fields=["a", "b"], key="c")
    drop = _run(border_ds, "compute_kalos", fields=["a", "b"], key="d", box_policy="drop")
    assert clip["n_units"] == drop["n_units"] + 1  # the zero-area box is its own unit: b's annotation is kept
    assert drop["dropped_boxes"] == 2 and drop["clipped_boxes"] == 0


@pytest.mark.parametrize("op", ["compute_kalos", "compute_ot_agreement", "compute_geometry_agreement",
                                "calibrate_agreement"])
def test_box_policy_error_refuses_naming_sample_field_and_box(border_ds, op):
    with pytest.raises(RuntimeError, match=r"0\.jpg.*field 'b'.*extends outside the image.*2 such box"):
        _run(border_ds, op, fields=["a", "b"], key="e", box_policy="error")
    from agreement.fo.runs import list_agreement_runs

    assert "e" not in list_agreement_runs(border_ds)


def test_box_policy_drop_leaves_labels_without_results(border_ds):
    _run(border_ds, "compute_ot_agreement", fields=["a", "b"], key="d", box_policy="drop")
    costs = border_ds.values("b.detections.d_cost")[0]
    assert costs[0] is None and costs[1] is None  # dropped labels get no per-label result
    assert border_ds.values("a.detections.d_cost")[0][0] is not None


def test_unknown_box_policy_is_refused(border_ds):
    from agreement.fo.methods.kalos import compute_kalos

    with pytest.raises(RuntimeError, match="box_policy.*(Invalid enum value|must be one of)"):
        _run(border_ds, "compute_kalos", fields=["a", "b"], key="u", box_policy="ignore")
    with pytest.raises(ValueError, match="box_policy must be one of"):
        compute_kalos(border_ds, "u", fields=["a", "b"], box_policy="ignore")


@pytest.mark.parametrize("op", ["compute_ot_agreement", "compute_kalos", "compute_geometry_agreement"])
def test_form_preselects_the_rater_fields_the_dataset_records(fo, make_dataset, op):
    """A fields-layout import (or the demo) records its rater fields: the form offers them preselected,
    and only those of a fitting label type."""
    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    D = fo.Detections
    ds = make_dataset([fo.Sample(filepath="/d/f.jpg", a=D(), b=D(), c=D(), truth=D())])
    op_ = foo.get_operator(f"@iaa/agreement/{op}")

    def props():
        ctx = ExecutionContext(request_params={"dataset_name": ds.name, "view": ds.view()._serialize(), "params": {}})
        return op_.resolve_input(ctx).type.properties

    assert props()["fields"].default is None  # nothing recorded: the user picks
    prefix = {"compute_ot_agreement": "ot", "compute_kalos": "kalos", "compute_geometry_agreement": "geometry"}[op]
    assert props()["key"].default == prefix
    ds.add_sample_field(f"{prefix}_mine", fo.FloatField)  # a user field with that prefix: the next key is offered
    assert props()["key"].default == f"{prefix}_2"
    ds.info["iaa_coco"] = {"layout": "fields", "rater_fields": {"ann_a": "a", "ann_b": "b", "gone": "missing"}}
    ds.save()
    assert props()["layout"].default == "fields" and props()["fields"].default == ["a", "b"]
    ds.info = {"iaa_demo": {"rater_fields": ["a", "b", "c"]}}
    ds.save()
    assert props()["fields"].default == ["a", "b", "c"]
