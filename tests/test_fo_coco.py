"""Import and export of the multi-rater COCO layout through FiftyOne and the operators."""

import json

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone


@pytest.fixture
def operators(fo):
    import fiftyone.operators as foo

    return foo


def _check_round_trip(src_path, out_path, polygons=True):
    src = json.loads(src_path.read_text())
    out = json.loads(out_path.read_text())
    a0 = {a["id"]: a for a in src["annotations"]}
    a1 = {a["id"]: a for a in out["annotations"]}
    assert a0.keys() == a1.keys()
    for k, a in a0.items():
        b = a1[k]
        img = next(i for i in src["images"] if i["id"] == a["image_id"])
        scale = np.array([img["width"], img["height"]] * 2, dtype=float)
        np.testing.assert_allclose(np.array(b["bbox"]) / scale, np.array(a["bbox"]) / scale, atol=1e-6)
        assert (b["category_id"], b["rater_id"], b["image_id"]) == (a["category_id"], a["rater_id"], a["image_id"])
        if polygons:
            assert len(b["segmentation"]) == len(a["segmentation"])
            for r0, r1 in zip(a["segmentation"], b["segmentation"]):
                np.testing.assert_allclose(r1, r0, atol=1e-6 * max(img["width"], img["height"]))
    assert {i["id"]: i["rater_list"] for i in src["images"]} == {i["id"]: i["rater_list"] for i in out["images"]}


@pytest.mark.shared_data
@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_lvis_import_counts_absence_and_lossless_export(fo, operators, lvis_path, tmp_path, layout):
    from agreement.fo.storage.reading import read_annotations

    name = f"lvis_{layout}"
    result = operators.execute_operator(
        "@iaa/agreement/import_multi_rater_coco",
        ctx=dict(params=dict(coco_path=str(lvis_path), dataset_name=name, layout=layout, persistent=False)),
    ).result
    assert result["num_samples"] == 200 and result["num_labels"] == 3521
    assert result["per_rater"]["r1"]["annotations"] == 1751 and result["per_rater"]["r2"]["annotations"] == 1770
    ds = fo.load_dataset(name)
    try:
        if layout == "fields":
            a = read_annotations(ds, fields=["r1", "r2"]).annotations
            assert ds.count("r1.detections") == 1751 and ds.count("r2.detections") == 1770
        else:
            a = read_annotations(ds, field="ground_truth", raters_field="raters").annotations
            assert ds.count_values("ground_truth.detections.annotator") == {"r1": 1751, "r2": 1770}
        counts = a.counts()
        neither = counts.sum(axis=1) == 0
        assert neither.sum() == 14
        assert a.assigned[neither].all()  # explicit absence for both raters, not missing
        for s in np.flatnonzero(neither):
            assert len(a.get(s, "r1")) == 0 and len(a.get(s, "r2")) == 0
        out = tmp_path / "export.json"
        summary = operators.execute_operator(
            "@iaa/agreement/export_multi_rater_coco", ctx=dict(view=ds.view(), params=dict(coco_path=str(out)))
        ).result
        assert summary["annotations"] == 3521
        _check_round_trip(lvis_path, out)
    finally:
        ds.delete()


def test_import_bad_file_names_the_image(fo, operators, tmp_path):
    from fiftyone.operators.executor import ExecutionError

    bad = {"images": [{"id": 5, "file_name": "x.jpg", "width": 10, "height": 10, "rater_list": ["a", "b"]}],
           "categories": [{"id": 1, "name": "c"}],
           "annotations": [{"id": 1, "image_id": 6, "category_id": 1, "bbox": [0, 0, 1, 1], "rater_id": "a"}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ExecutionError, match="annotation 1 refers to unknown image id 6"):
        operators.execute_operator("@iaa/agreement/import_multi_rater_coco",
                                   ctx=dict(params=dict(coco_path=str(path), dataset_name="bad")))
    assert not fo.dataset_exists("bad")


def test_masks_import_rasterises_polygons(fo, tmp_path):
    from agreement.fo.importers.coco import import_multi_rater_coco

    data = {"images": [{"id": 1, "file_name": "m.jpg", "width": 100, "height": 100, "rater_list": [1, 2]}],
            "categories": [{"id": 1, "name": "sq"}],
            "annotations": [
                {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "rater_id": 1,
                 "segmentation": [[10, 10, 30, 10, 30, 30, 10, 30]]},
                {"id": 2, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 10], "rater_id": 2,
                 "segmentation": [[10, 10, 30, 10, 10, 20]]}]}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    ds = import_multi_rater_coco(path, dataset_name="masks", polygons="masks")
    try:
        # integer rater ids become valid field names, and export restores them
        assert set(ds.info["iaa_coco"]["rater_fields"].values()) == {"rater_1", "rater_2"}
        m1 = ds.first()["rater_1"].detections[0].mask
        m2 = ds.first()["rater_2"].detections[0].mask
        assert m1.shape == (20, 20) and m1.mean() > 0.9
        assert m2.shape == (10, 20) and 0.35 < m2.mean() < 0.65  # a triangle fills about half its box
        from agreement.fo.importers.coco import export_multi_rater_coco

        export_multi_rater_coco(ds, tmp_path / "out.json")
        out = json.loads((tmp_path / "out.json").read_text())
        assert sorted(a["rater_id"] for a in out["annotations"]) == [1, 2]
        assert out["images"][0]["rater_list"] == [1, 2]
    finally:
        ds.delete()


# --- strict reading through the bridge: nothing is half-imported, a failed overwrite keeps the old dataset


def _small(**changes):
    data = {"images": [{"id": 1, "file_name": "a.jpg", "width": 100, "height": 50, "rater_list": ["u1", "u2"]},
                       {"id": 2, "file_name": "b.jpg", "width": 200, "height": 100, "rater_list": ["u1"]}],
            "categories": [{"id": 7, "name": "cat"}, {"id": 9, "name": "dog"}],
            "annotations": [
                {"id": 10, "image_id": 1, "category_id": 7, "bbox": [10, 5, 20, 10], "rater_id": "u1",
                 "segmentation": [[10, 5, 30, 5, 30, 15]]},
                {"id": 11, "image_id": 1, "category_id": 9, "bbox": [12, 6, 20, 10], "rater_id": "u2"},
                {"id": 12, "image_id": 2, "category_id": 9, "bbox": [0, 0, 200, 100], "rater_id": "u1"}]}
    data.update(changes)
    return data


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _bad_files(tmp_path):
    """Malformed files, each failing a different stage of the checks."""
    good = _small()
    dup = _small()
    dup["annotations"][2]["id"] = 10
    rater = _small()
    rater["annotations"][2]["rater_id"] = "u2"
    return {
        "top level": _write(tmp_path, "top.json", [good]),
        "duplicate id": _write(tmp_path, "dup.json", dup),
        "unknown rater": _write(tmp_path, "rater.json", rater),
        "reserved key": _write(tmp_path, "key.json", _small(annotations=[{**good["annotations"][0], "label": "x"}])),
    }


def _snapshot(ds):
    return (len(ds), ds.values("coco_id"), ds.values("u1.detections.label"), ds.values("u2.detections.coco_id"),
            ds.values("u1_polygons.polylines.points"), dict(ds.info["iaa_coco"]["rater_fields"]))


@pytest.fixture
def old_dataset(fo, tmp_path):
    """A dataset named ``keep`` imported from a different file (three images)."""
    from agreement.fo.importers.coco import import_multi_rater_coco

    data = _small()
    data["images"].append({"id": 3, "file_name": "c.jpg", "width": 10, "height": 10, "rater_list": ["u1", "u2"]})
    data["annotations"].append({"id": 13, "image_id": 3, "category_id": 7, "bbox": [1, 1, 2, 2], "rater_id": "u2"})
    ds = import_multi_rater_coco(_write(tmp_path, "old.json", data), dataset_name="keep")
    yield ds
    if fo.dataset_exists("keep"):
        fo.delete_dataset("keep")


def test_failed_import_leaves_no_dataset(fo, tmp_path):
    from agreement.core.validation import AnnotationError
    from agreement.fo.importers.coco import import_multi_rater_coco

    before = fo.list_datasets()
    for case, path in _bad_files(tmp_path).items():
        with pytest.raises(AnnotationError, match=str(path)):
            import_multi_rater_coco(path, dataset_name="fresh")
        assert fo.list_datasets() == before, case


def test_reserved_extra_key_names_the_annotation(fo, tmp_path):
    from agreement.core.validation import AnnotationError
    from agreement.fo.importers.coco import import_multi_rater_coco

    path = _bad_files(tmp_path)["reserved key"]
    with pytest.raises(AnnotationError, match=r"annotation 10 on image 1 \(a.jpg\) has the key\(s\) \['label'\]"):
        import_multi_rater_coco(path, dataset_name="fresh")


@pytest.fixture
def failing_add_samples(fo, monkeypatch):
    """Makes ``add_samples`` write every sample, then fail: a half-written dataset."""
    original = fo.Dataset.add_samples

    def add_then_fail(self, *args, **kwargs):
        original(self, *args, **kwargs)
        assert len(self) > 0
        raise RuntimeError("disk full")

    monkeypatch.setattr(fo.Dataset, "add_samples", add_then_fail)


def test_failure_after_the_dataset_was_created_leaves_nothing(fo, tmp_path, failing_add_samples):
    from agreement.fo.importers.coco import import_multi_rater_coco

    before = fo.list_datasets()
    with pytest.raises(RuntimeError, match="disk full"):
        import_multi_rater_coco(_write(tmp_path, "ok.json", _small()), dataset_name="fresh", persistent=True)
    assert fo.list_datasets() == before


def test_failed_overwrite_keeps_the_previous_dataset(fo, tmp_path, old_dataset):
    from agreement.core.validation import AnnotationError
    from agreement.fo.importers.coco import import_multi_rater_coco

    before, snapshot = fo.list_datasets(), _snapshot(old_dataset)
    for case, path in _bad_files(tmp_path).items():
        with pytest.raises(AnnotationError):
            import_multi_rater_coco(path, dataset_name="keep", overwrite=True)
        assert fo.list_datasets() == before, case
        assert _snapshot(fo.load_dataset("keep")) == snapshot, case


def test_overwrite_failing_while_writing_keeps_the_previous_dataset(fo, tmp_path, old_dataset, failing_add_samples):
    from agreement.fo.importers.coco import import_multi_rater_coco

    before, snapshot = fo.list_datasets(), _snapshot(old_dataset)
    with pytest.raises(RuntimeError, match="disk full"):
        import_multi_rater_coco(_write(tmp_path, "ok.json", _small()), dataset_name="keep", overwrite=True)
    assert fo.list_datasets() == before
    assert _snapshot(fo.load_dataset("keep")) == snapshot and len(old_dataset) == 3


def test_overwrite_failing_during_the_swap_restores_the_previous_dataset(fo, tmp_path, old_dataset, monkeypatch):
    import agreement.fo.importers.coco as bridge

    before, snapshot = fo.list_datasets(), _snapshot(old_dataset)
    renames = []
    original = bridge._rename

    def rename(dataset, name):  # the old one is renamed aside, then renaming the new one in fails
        renames.append(name)
        if len(renames) == 2:
            raise RuntimeError("rename failed")
        original(dataset, name)

    monkeypatch.setattr(bridge, "_rename", rename)
    with pytest.raises(RuntimeError, match="rename failed"):
        bridge.import_multi_rater_coco(_write(tmp_path, "ok.json", _small()), dataset_name="keep", overwrite=True)
    assert renames[1] == "keep" and renames[2] == "keep"
    assert fo.list_datasets() == before
    assert _snapshot(fo.load_dataset("keep")) == snapshot


def test_successful_overwrite_replaces_and_leaves_no_temporary_dataset(fo, tmp_path, old_dataset):
    from agreement.fo.importers.coco import import_multi_rater_coco

    before = fo.list_datasets()
    ds = import_multi_rater_coco(_write(tmp_path, "ok.json", _small()), dataset_name="keep", overwrite=True,
                                 persistent=True)
    assert fo.list_datasets() == before and ds.name == "keep" and ds.persistent
    assert len(fo.load_dataset("keep")) == 2 and old_dataset.deleted
    assert ds.values("u1.detections.label") == [["cat"], ["dog"]]
    with pytest.raises(ValueError, match="already exists"):
        import_multi_rater_coco(_write(tmp_path, "ok.json", _small()), dataset_name="keep")


def test_operator_failure_leaves_no_dataset_and_keeps_the_old_one(fo, operators, tmp_path, old_dataset):
    from fiftyone.operators.executor import ExecutionError

    before, snapshot = fo.list_datasets(), _snapshot(old_dataset)
    path = _bad_files(tmp_path)["duplicate id"]
    for name, overwrite in (("fresh", False), ("keep", True)):
        with pytest.raises(ExecutionError, match=r"repeats the annotation id 10 of annotation 10 on image 1 \(a.jpg\)"):
            operators.execute_operator(
                "@iaa/agreement/import_multi_rater_coco",
                ctx=dict(params=dict(coco_path=str(path), dataset_name=name, overwrite=overwrite)),
            )
        assert fo.list_datasets() == before
    assert _snapshot(fo.load_dataset("keep")) == snapshot


def test_boxes_past_the_border_are_repaired_and_reported_or_refused(fo, operators, tmp_path):
    """The import says what it did to boxes past the image border (box_policy): clipped and counted per rater,
    dropped, or the file refused; a file without such boxes reports no repair."""
    coco = {"images": [{"id": 1, "file_name": "a.jpg", "width": 100, "height": 50, "rater_list": ["u1", "u2"]}],
            "categories": [{"id": 1, "name": "c"}],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "rater_id": "u1", "bbox": [90, 0, 20, 10]},
                            {"id": 2, "image_id": 1, "category_id": 1, "rater_id": "u2", "bbox": [80, 0, 20, 10]}]}
    path = tmp_path / "past.json"
    path.write_text(json.dumps(coco))

    def run(name, **params):
        return operators.execute_operator("@iaa/agreement/import_multi_rater_coco", ctx=dict(params=dict(
            coco_path=str(path), dataset_name=name, persistent=False, **params)))

    r = run("past_clip").result
    assert r["repairs"]["clipped_boxes"] == 1 and r["repairs"]["per_rater"]["u1"]["clipped_boxes"] == 1
    assert any("past the image border" in w and "box_policy" in w for w in r["warnings"])
    box = fo.load_dataset("past_clip").first()["u1"].detections[0].bounding_box
    np.testing.assert_allclose(box, [0.9, 0.0, 0.1, 0.2])
    r = run("past_drop", box_policy="drop").result
    assert r["repairs"]["dropped_boxes"] == 1 and r["per_rater"]["u1"]["annotations"] == 0
    with pytest.raises(Exception, match=r"annotation 1 on image 1 \(a.jpg\) by rater 'u1'.*outside the image"):
        run("past_error", box_policy="error")
    assert not fo.dataset_exists("past_error")
    coco["annotations"][0]["bbox"] = [70, 0, 20, 10]
    path.write_text(json.dumps(coco))
    r = run("inside").result
    assert r["repairs"]["clipped_boxes"] == 0 and not any("border" in w for w in r["warnings"])
