"""import_multi_rater: one export per rater, written by FiftyOne's exporters, read back by its importers.

Round trips compare agreement results of the re-imported dataset with the
original's. Every format quantises coordinates (COCO and CVAT to pixels with
decimals, VOC to whole pixels, YOLO to six decimals of relative centre and
size), so the original boxes are put on a grid every format represents
exactly: whole-pixel corners and even whole-pixel sizes on a 500 x 400 image
(the YOLO centre is then a whole pixel, k/500 or k/400 relative, which six
decimals hold exactly). The round trip is then lossless and the results must
agree to floating-point precision (1e-9), not to a loose tolerance that could
hide a real difference such as a lost image or rater.
"""

from __future__ import annotations

import json
import os

import cv2
import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

W, H = 500, 400
OP = "@iaa/agreement/{}"


def _grid_corpus(num_samples: int = 10, seed: int = 3):
    """A 3-rater corpus (2 of 3 raters per image, some explicit absence) with boxes on the pixel grid."""
    from agreement.core.data import MultiRaterAnnotations
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(num_samples, 3, raters_per_sample=2, min_objects=0, max_objects=5, seed=seed)
    px = corpus.boxes * [W, H, W, H]
    x0 = np.clip(np.floor(px[:, 0]), 0, W - 4)
    y0 = np.clip(np.floor(px[:, 1]), 0, H - 4)
    w = np.clip(2 * np.round(px[:, 2] / 2), 2, W - x0)
    h = np.clip(2 * np.round(px[:, 3] / 2), 2, H - y0)
    w, h = w - w % 2, h - h % 2
    boxes = np.stack([x0 / W, y0 / H, w / W, h / H], axis=1)
    return MultiRaterAnnotations(
        sample_ids=corpus.sample_ids, raters=("alice", "bob", "carol"), assigned=corpus.assigned, boxes=boxes,
        labels=corpus.labels, label_ids=corpus.label_ids, sample_index=corpus.sample_index,
        rater_index=corpus.rater_index, image_sizes=np.tile([W, H], (corpus.num_samples, 1)).astype(float),
    )


@pytest.fixture
def original(fo, make_dataset, tmp_path):
    """A dataset with one field per rater, images on disk (YOLO and VOC list the image files)."""
    from agreement.fo.importers.build import samples_from_corpus

    corpus = _grid_corpus()
    image = np.full((H, W, 3), 127, np.uint8)
    paths = []
    for s in range(corpus.num_samples):
        p = tmp_path / "images" / f"img_{s:03d}.png"
        p.parent.mkdir(exist_ok=True)
        cv2.imwrite(str(p), image)
        paths.append(str(p))
    ds = make_dataset()
    ds.add_samples(samples_from_corpus(corpus, paths), progress=False)
    return ds, corpus


def _export(fo, ds, rater: str, fmt: str, out) -> dict:
    """The rater's export as FiftyOne writes it: only the images the rater was assigned."""
    types = {"coco": fo.types.COCODetectionDataset, "cvat_image": fo.types.CVATImageDataset,
             "yolo": fo.types.YOLOv5Dataset, "voc": fo.types.VOCDetectionDataset}
    d = str(out / fmt / rater)
    ds.exists(rater).export(export_dir=d, dataset_type=types[fmt], label_field=rater, progress=False)
    return {"rater": rater, "path": d, "format": fmt}


def _run(fo, ds, op: str, **params) -> dict:
    import fiftyone.operators as foo

    result = foo.execute_operator(OP.format(op), ctx=dict(view=ds.view(), params=params))
    assert result.error is None, result.error
    return result.result


def _headline(fo, ds, **layout) -> dict:
    kalos = _run(fo, ds, "compute_kalos", key="k", **layout)
    ot = _run(fo, ds, "compute_ot_agreement", key="o", **layout)
    return {"global_alpha": kalos["global_alpha"], "mean_alpha": kalos["mean_alpha"], "n_units": kalos["n_units"],
            "alpha_ot": ot["alpha_ot"], "mean_ot": ot["mean_ot"], "n_scored": ot["n_scored"], "f1": ot["f1"]}


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=1e-9), (k, a[k], b[k])


def _import(fo, **params) -> dict:
    import fiftyone.operators as foo

    result = foo.execute_operator(OP.format("import_multi_rater"), ctx=dict(params=params))
    assert result.error is None, result.error
    return result.result


def _cleanup(fo, name: str) -> None:
    if fo.dataset_exists(name):
        fo.delete_dataset(name)


@pytest.mark.parametrize("fmt", ["coco", "cvat_image", "yolo"])
def test_round_trip_through_fiftyone_exporters_gives_identical_results(fo, original, tmp_path, fmt):
    ds, corpus = original
    exports = [_export(fo, ds, r, fmt, tmp_path) for r in corpus.raters]
    name = f"rt-{fmt}"
    try:
        out = _import(fo, exports=exports, dataset_name=name, persistent=False)
        new = fo.load_dataset(name)
        assert out["num_samples"] == len(ds) == len(new)
        for r, rep in out["per_rater"].items():
            assigned = int(corpus.assigned[:, corpus.raters.index(r)].sum())
            assert rep["images"] == assigned
            assert rep["images_missing"] == len(ds) - assigned
            assert rep["labels"] == ds.count(f"{r}.detections")
        # implicit absence (None) and explicit absence (empty Detections) survive
        by_name = {os.path.basename(p): s for p, s in zip(ds.values("filepath"), ds.values("id"))}
        for r in corpus.raters:
            old = dict(zip(ds.values("filepath"), ds.values(f"{r}.detections")))
            got = dict(zip(new.values("filepath"), new.values(f"{r}.detections")))
            old = {os.path.basename(k): (None if v is None else len(v)) for k, v in old.items()}
            got = {os.path.basename(k): (None if v is None else len(v)) for k, v in got.items()}
            assert got == old and set(got) == set(by_name)
        _assert_same(_headline(fo, new, fields=list(corpus.raters)), _headline(fo, ds, fields=list(corpus.raters)))
    finally:
        _cleanup(fo, name)


def test_mixed_formats_and_attribute_layout(fo, original, tmp_path):
    """One rater in COCO, one in CVAT, one in VOC; the attribute layout uses the recorded assignment."""
    ds, corpus = original
    exports = [_export(fo, ds, r, fmt, tmp_path) for r, fmt in zip(corpus.raters, ["coco", "cvat_image", "voc"])]
    name = "rt-mixed"
    try:
        out = _import(fo, exports=exports, dataset_name=name, layout="attribute", persistent=False)
        assert out["layout"] == "attribute" and out["field"] == "ground_truth"
        new = fo.load_dataset(name)
        assert sorted(new.distinct("ground_truth.detections.annotator")) <= sorted(corpus.raters)
        # no raters_field given: the compute operators use the one the importer declared
        got = _headline(fo, new, field="ground_truth", rater_attr="annotator")
        _assert_same(got, _headline(fo, ds, fields=list(corpus.raters)))
    finally:
        _cleanup(fo, name)


def test_complete_exports_make_missing_images_explicit_absence(fo, original, tmp_path):
    from agreement.fo.importers import import_multi_rater

    ds, corpus = original
    exports = [_export(fo, ds, r, "coco", tmp_path) for r in corpus.raters]
    exports[0]["complete"] = True
    new, report = import_multi_rater(exports, "rt-complete")
    try:
        first = corpus.raters[0]
        missing = report["per_rater"][first]["images_missing"]
        assert missing > 0 and report["per_rater"][first]["missing_means"].startswith("explicit")
        values = new.values(f"{first}.detections")
        assert all(v is not None for v in values)
        assert sum(1 for v in values if len(v) == 0) >= missing
        # the other raters' missing images stay implicit absence
        assert None in new.values(f"{corpus.raters[1]}.detections")
    finally:
        new.delete()


def test_an_image_without_labels_in_an_export_is_explicit_absence(fo, make_dataset, tmp_path):
    from agreement.fo.importers import import_multi_rater

    ds = make_dataset()
    ds.add_samples([
        fo.Sample(filepath=str(tmp_path / f"{i}.jpg"), metadata=fo.ImageMetadata(width=W, height=H),
                  a=fo.Detections(detections=[fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.2, 0.2])] if i else []),
                  b=fo.Detections(detections=[fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.2, 0.2])]))
        for i in range(3)
    ], progress=False)
    paths = {}
    for r in ("a", "b"):
        paths[r] = str(tmp_path / f"{r}.json")
        ds.export(labels_path=paths[r], dataset_type=fo.types.COCODetectionDataset, label_field=r,
                  export_media=False, progress=False)
    new, report = import_multi_rater([(r, paths[r], "coco") for r in ("a", "b")], "rt-empty", image_dir=str(tmp_path))
    try:
        assert report["per_rater"]["a"]["images"] == 3 and report["per_rater"]["a"]["labels"] == 2
        assert sorted(len(v) for v in new.values("a.detections")) == [0, 1, 1]
        assert new.values("filepath")[0].startswith(str(tmp_path))
    finally:
        new.delete()


def _datasets(fo) -> set:
    return set(fo.list_datasets())


def test_bad_inputs_are_clear_errors_and_leave_nothing(fo, original, tmp_path):
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    ds, corpus = original
    good = [_export(fo, ds, r, "coco", tmp_path) for r in corpus.raters]
    before = _datasets(fo)

    # an export whose images match none of the others
    other = tmp_path / "other.json"
    json.dump({"images": [{"id": 1, "file_name": "elsewhere.jpg", "width": W, "height": H}], "annotations": [],
               "categories": [{"id": 1, "name": "c0"}]}, open(other, "w"))
    with pytest.raises(MultiRaterImportError, match=r"rater 'dave': no image of export .* matches"):
        import_multi_rater(good + [{"rater": "dave", "path": str(other), "format": "coco"}], "bad")
    # two raters with the same name
    with pytest.raises(MultiRaterImportError, match="same rater name 'alice'"):
        import_multi_rater(good + [dict(good[0])], "bad")
    # a format FiftyOne has no importer for
    with pytest.raises(MultiRaterImportError, match="format 'labelme' is not one FiftyOne can import"):
        import_multi_rater(good[:2] + [{"rater": "carol", "path": good[2]["path"], "format": "labelme"}], "bad")
    # a file FiftyOne cannot read in the format given
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    with pytest.raises(MultiRaterImportError, match=r"rater 'carol': FiftyOne could not read .*garbage.json"):
        import_multi_rater(good[:2] + [{"rater": "carol", "path": str(garbage), "format": "coco"}], "bad")
    # an export that does not exist: refused before anything is read
    with pytest.raises(MultiRaterImportError, match="does not exist"):
        import_multi_rater(good[:2] + [{"rater": "carol", "path": str(tmp_path / "nope"), "format": "coco"}], "bad")
    assert _datasets(fo) == before
    assert not fo.dataset_exists("bad")


def test_failed_overwrite_keeps_the_old_dataset(fo, original, tmp_path):
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    ds, corpus = original
    good = [_export(fo, ds, r, "coco", tmp_path) for r in corpus.raters]
    old, _ = import_multi_rater(good, "rt-keep")
    try:
        count, fields = len(old), sorted(old.get_field_schema())
        garbage = tmp_path / "garbage.json"
        garbage.write_text("[]")
        with pytest.raises(MultiRaterImportError):
            import_multi_rater(good[:2] + [{"rater": "carol", "path": str(garbage), "format": "coco"}], "rt-keep",
                               overwrite=True)
        kept = fo.load_dataset("rt-keep")
        assert len(kept) == count and sorted(kept.get_field_schema()) == fields
    finally:
        _cleanup(fo, "rt-keep")


def test_operator_reports_errors_by_name(fo, original, tmp_path):
    import fiftyone.operators as foo

    with pytest.raises(Exception, match="exports"):
        foo.execute_operator(OP.format("import_multi_rater"), ctx=dict(params=dict(dataset_name="x")))
    bad = [{"rater": "a", "path": "nowhere.json", "format": "coco"}, {"rater": "b", "path": "nowhere.json"}]
    with pytest.raises(Exception, match=r"exports\[1\]\.format"):
        foo.execute_operator(OP.format("import_multi_rater"), ctx=dict(params=dict(dataset_name="x", exports=bad)))
    bad[1]["format"] = "coco"
    with pytest.raises(Exception, match="rater 'a': export 'nowhere.json' does not exist"):
        foo.execute_operator(OP.format("import_multi_rater"), ctx=dict(params=dict(dataset_name="x", exports=bad)))
    assert not fo.dataset_exists("x")


# --- Label Studio -----------------------------------------------------------------------------------------------


def _ls_corpus():
    """3 annotators on the pixel grid; every third annotation is a polygon (a diamond touching its box)."""
    from agreement.core.data import MultiRaterAnnotations

    c = _grid_corpus(num_samples=12, seed=5)
    polys = []
    for i, (x, y, w, h) in enumerate(c.boxes):
        ring = np.array([[x + w / 2, y], [x + w, y + h / 2], [x + w / 2, y + h], [x, y + h / 2]])
        polys.append([ring] if i % 3 == 0 else None)
    names = np.array([f"img_{s:03d}.jpg" for s in range(c.num_samples)], dtype=object)
    return MultiRaterAnnotations(
        sample_ids=np.arange(1, c.num_samples + 1), raters=c.raters, assigned=c.assigned, boxes=c.boxes,
        labels=c.labels, label_ids=np.arange(1, len(c) + 1), sample_index=c.sample_index, rater_index=c.rater_index,
        image_sizes=c.image_sizes, polygons=polys, sample_names=names,
    )


def _write_kalos_coco(corpus, path) -> None:
    from agreement.io.coco import MultiRaterCoco, write_multi_rater_coco

    cats = [{"id": k + 1, "name": n} for k, n in enumerate(sorted(set(corpus.labels.tolist())))]
    images = [{"id": int(corpus.sample_ids[s]), "file_name": corpus.sample_names[s]} for s in range(corpus.num_samples)]
    write_multi_rater_coco(MultiRaterCoco(corpus, images, cats, {}, {r: r for r in corpus.raters}, {}), path)


def test_label_studio_export_with_three_annotators_equals_the_kalos_coco_file(fo, tmp_path):
    import fiftyone.operators as foo

    from labelstudio_export import from_corpus

    corpus = _ls_corpus()
    ids = {"alice": 11, "bob": 12, "carol": 13}
    ls_path, coco_path = tmp_path / "project-7.json", tmp_path / "same.json"
    ls_path.write_text(json.dumps(from_corpus(corpus, ids)))
    _write_kalos_coco(corpus, coco_path)
    names = {str(v): k for k, v in ids.items()}
    try:
        ls = foo.execute_operator(OP.format("import_label_studio"), ctx=dict(params=dict(
            json_path=str(ls_path), dataset_name="ls", rater_names=names, persistent=False))).result
        foo.execute_operator(OP.format("import_multi_rater_coco"), ctx=dict(params=dict(
            coco_path=str(coco_path), dataset_name="coco", persistent=False)))
        a, b = fo.load_dataset("ls"), fo.load_dataset("coco")
        assert ls["tasks"] == corpus.num_samples and sorted(ls["raters"]) == ["alice", "bob", "carol"]
        assert ls["skipped"] == {} and ls["repaired"] == {}
        # every annotation's image-level choice is a class, in its own field beside the boxes
        assert ls["choices"]["quality"]["answered"] == int(corpus.assigned.sum())
        assert a.count("alice_quality") == int(corpus.assigned[:, 0].sum())
        assert a.distinct("bob_quality.label") == ["good"]
        for r in corpus.raters:
            assert [None if v is None else len(v) for v in a.values(f"{r}.detections")] == \
                   [None if v is None else len(v) for v in b.values(f"{r}.detections")]
        _assert_same(_headline(fo, a, fields=list(corpus.raters)), _headline(fo, b, fields=list(corpus.raters)))
        polys = [f"{r}_polygons" for r in corpus.raters]
        ka = _run(fo, a, "compute_kalos", key="kp", fields=polys)
        kb = _run(fo, b, "compute_kalos", key="kp", fields=polys)
        assert ka["global_alpha"] == pytest.approx(kb["global_alpha"], abs=1e-9) and ka["n_units"] == kb["n_units"]
    finally:
        _cleanup(fo, "ls")
        _cleanup(fo, "coco")


def test_label_studio_attribute_layout_keypoints_and_counts(fo, tmp_path):
    from agreement.fo.importers import import_label_studio
    from labelstudio_export import annotation, keypoint, polygon, rectangle, task

    W_, H_ = 640, 480
    rot = rectangle([0.5, 0.5, 0.1, 0.1], "car", W_, H_, rotation=30)
    tasks = [
        task(1, "a.jpg", [annotation(1, [rectangle([0.1, 0.1, 0.2, 0.2], "car", W_, H_), keypoint([0.3, 0.3], "nose", W_, H_)]),
                          annotation(2, [rectangle([0.11, 0.1, 0.2, 0.2], "car", W_, H_), rot])]),
        task(2, "b.jpg", [annotation(1, []), annotation(2, [polygon([[0.1, 0.1], [0.3, 0.1], [0.2, 0.4]], "tree", W_, H_)]),
                          annotation(3, [], cancelled=True)]),
        task(3, "c.jpg", [annotation(3, [{"id": "x", "type": "brushlabels", "value": {"brushlabels": ["car"]}}])]),
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    before = _datasets(fo)
    from agreement.core.validation import AnnotationError

    with pytest.raises(AnnotationError, match=r"export.json: task 1, annotation \d+, region 'r\d+' .*rotated by 30"):
        import_label_studio(path, "ls-attr", layout="attribute")
    assert _datasets(fo) == before
    ds, report = import_label_studio(path, "ls-attr", layout="attribute", rotated="bbox")
    try:
        assert report["repaired"] == {"rotated rectangles -> bounding box": 1}
        assert report["skipped"] == {"cancelled annotations": 1, "brushlabels regions": 1}
        assert report["per_rater"]["3"] == {"tasks": 1, "regions": 0, "skipped": {"cancelled annotations": 1,
                                                                                  "brushlabels regions": 1},
                                            "repaired": {}}
        assert ds.values("raters") == [["1", "2"], ["1", "2"], ["3"]]
        assert ds.values("ls_task_id") == [1, 2, 3]
        assert ds.count("ground_truth.detections") == 4 and ds.count("ground_truth_polygons.polylines") == 1
        assert ds.count("ground_truth_keypoints.keypoints") == 1
        assert ds.values("metadata.width")[:2] == [W_, W_]
        assert sorted(ds.distinct("ground_truth.detections.annotator")) == ["1", "2"]
        info = ds.info["iaa_assignment"]
        assert info["ground_truth"]["raters_field"] == "raters" and info["ground_truth"]["raters"] == ["1", "2", "3"]
        out = _run(fo, ds, "compute_kalos", key="k", field="ground_truth")
        assert out["n_defined"] + out["n_undefined"] == 3
    finally:
        ds.delete()


def test_a_label_already_naming_another_rater_is_an_error(fo):
    from agreement.fo.importers.common import MergedImages, MultiRaterImportError, write_merged_dataset

    det = lambda **kw: fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.2, 0.2], **kw)
    merged = MergedImages(["a.jpg"], ["/d/a.jpg"], [(W, H)], ["alice", "bob"],
                          [{"alice": {"detections": [det(annotator="zed")]}, "bob": {"detections": [det()]}}])
    before = _datasets(fo)
    with pytest.raises(MultiRaterImportError, match=r"image 'a.jpg': a label of rater 'alice' already has .*'zed'"):
        write_merged_dataset(merged, "clash", layout="attribute")
    assert _datasets(fo) == before
    ds = write_merged_dataset(merged, "clash", layout="attribute", rater_attr="who")
    try:
        assert sorted(ds.values("ground_truth.detections.who")[0]) == ["alice", "bob"]
    finally:
        ds.delete()
