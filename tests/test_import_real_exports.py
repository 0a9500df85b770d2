"""Real-tool exports of the same 14 images meet in one multi-rater dataset (issue 41, "Imports that meet").

The fixtures (tests/fixtures_imports/real_exports.py) are a Label Studio JSON
export in its published format (upload-id prefixed image names,
``completed_by`` as a user object or an id, one annotation with only
``updated_by``), the COCO, YOLO and VOC files that Label Studio's own
converter (the ``label-studio-converter`` package, ``Converter``) writes from
it, a CVAT for images 1.1 XML written following CVAT's published format
(``cvat-sdk`` cannot write an export offline; ``datumaro`` would replace the
environment's pandas and Pillow), and the same labels in the KαLOS
multi-rater COCO layout. Boxes are on whole pixels that every tool's
arithmetic returns exactly, so agreement must be equal to 1e-9.
"""

from __future__ import annotations

import json
import shutil

import pytest

from fixtures_imports import real_exports as rx
from test_fo_importers import _assert_same  # the same comparison of headline numbers (1e-9)

pytestmark = pytest.mark.fiftyone
pytest.importorskip("label_studio_converter", reason="label-studio-converter (requirements-test.txt) writes the fixtures")

OP = "@iaa/agreement/{}"
RATERS = list(rx.RATERS)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """The images, the labels, and every tool's export of them."""
    root = tmp_path_factory.mktemp("real-exports")
    data = rx.labels()
    images = rx.write_images(root / "images")
    out = {"root": root, "data": data, "images": images}
    out["cvat"] = rx.cvat_xml(root / "cvat" / "annotations.xml", data["alice"])
    for r, fmt in (("bob", "COCO"), ("carol", "YOLO"), ("dave", "VOC")):
        out[r] = rx.convert(rx.label_studio_tasks([r], data), root / f"ls-{r}-{fmt.lower()}", fmt)
    out["kalos"] = rx.kalos_coco(root / "kalos.json", data, RATERS)
    return out


def _specs(ex, **cvat) -> list[dict]:
    return [{"rater": "alice", "path": str(cvat.get("path", ex["cvat"])), "format": "cvat_image"},
            {"rater": "bob", "path": str(ex["bob"] / "result.json"), "format": "coco"},
            {"rater": "carol", "path": str(ex["carol"]), "format": "yolo"},
            {"rater": "dave", "path": str(ex["dave"]), "format": "voc"}]


def _run(ds, op: str, **params) -> dict:
    import fiftyone.operators as foo

    result = foo.execute_operator(OP.format(op), ctx=dict(view=ds.view(), params=params))
    assert result.error is None, result.error
    return result.result


def _headline(ds, raters) -> dict:
    kalos = _run(ds, "compute_kalos", key=f"k{len(raters)}", fields=list(raters))
    ot = _run(ds, "compute_ot_agreement", key=f"o{len(raters)}", fields=list(raters))
    return {"global_alpha": kalos["global_alpha"], "mean_alpha": kalos["mean_alpha"], "n_units": kalos["n_units"],
            "alpha_ot": ot["alpha_ot"], "mean_ot": ot["mean_ot"], "n_scored": ot["n_scored"], "f1": ot["f1"]}


@pytest.fixture(scope="module")
def reference(fo, exports):
    """The agreement of the same labels imported from the KaLOS COCO layout."""
    from agreement.fo.importers.coco import import_multi_rater_coco

    ds = import_multi_rater_coco(exports["kalos"], "real-kalos", overwrite=True)
    got = {"all": _headline(ds, RATERS), "ls": _headline(ds, RATERS[1:])}
    ds.delete()
    return got


def _boxes(ds, rater) -> dict:
    """{image name: sorted (label, pixel box)} of one rater's field."""
    import os

    out = {}
    for path, (w, h), dets in zip(ds.values("filepath"), zip(*ds.values(["metadata.width", "metadata.height"])),
                                  ds.values(f"{rater}.detections")):
        out[os.path.basename(path)] = sorted((d.label, tuple(round(v * s, 6) for v, s in zip(d.bounding_box,
                                                                                             (w, h, w, h))))
                                             for d in dets or [])
    return out


def test_cvat_and_label_studio_exports_meet_by_default_and_agree_with_kalos_coco(fo, exports, reference):
    """Done when: CVAT XML and Label Studio's converter outputs (COCO, YOLO without dataset.yaml, VOC without
    images) of the same 14 images import together; the upload id is recognised without being told."""
    from agreement.fo.importers import import_multi_rater

    ds, report = import_multi_rater(_specs(exports), "real-default", image_dir=str(exports["images"]), complete=True,
                                    overwrite=True)
    try:
        assert len(ds) == rx.N_IMAGES and report["warnings"] == []
        match = report["match"]["per_rater"]
        assert {r: (m["images"], m["unmatched"]) for r, m in match.items()} == {
            "alice": (14, 0), "bob": (14, 0), "carol": (14, 0), "dave": (sum(1 for b in exports["data"]["dave"] if b), 0)}
        assert match["alice"]["renamed_by"] == {"file name": 14}
        assert match["bob"]["renamed_by"] == {"upload_id": 14}
        assert match["carol"]["renamed_by"] == {"upload_id": 14}  # the converter's label files, paired with images
        assert report["converted"]["carol"]["classes_from"] == "classes.txt in the export"
        assert sorted(ds.values("filepath")) == sorted(str(exports["images"] / n) for n in rx.image_names())
        for r in RATERS:  # the labels themselves, on the pixel grid
            want = {n: sorted((c, tuple(float(v) for v in b)) for c, b in per)
                    for n, per in zip(rx.image_names(), exports["data"][r])}
            assert _boxes(ds, r) == want, r
        _assert_same(_headline(ds, RATERS), reference["all"])
    finally:
        ds.delete()


def test_a_name_map_file_matches_exports_whose_names_differ(fo, exports, reference, tmp_path):
    """Done when, second case: CVAT names its frames frame_000000.jpg...; a CSV (through the operator) or a JSON
    name map says which image each is. Without it, no image is shared and the message says how to map them."""
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    frames = [f"frame_{i:06d}.jpg" for i in range(rx.N_IMAGES)]
    cvat = rx.cvat_xml(tmp_path / "cvat" / "annotations.xml", exports["data"]["alice"], names=frames)
    with pytest.raises(MultiRaterImportError) as err:
        import_multi_rater(_specs(exports, path=cvat), "real-nomap", image_dir=str(exports["images"]))
    msg = str(err.value)
    assert "rater 'alice'" in msg and "frame_000000.jpg" in msg and "matched by file name" in msg
    assert "upload id" in msg and "name_map=" in msg and "strip_prefix=" in msg
    assert not fo.dataset_exists("real-nomap")

    pairs = dict(zip(frames, rx.image_names()))
    csv_map = rx.name_map_csv(tmp_path / "names.csv", pairs)
    out = _import_op(fo, exports=_specs(exports, path=cvat), dataset_name="real-csvmap", complete=True,
                     image_dir=str(exports["images"]), name_map=str(csv_map), persistent=False)
    try:
        assert out["match"]["per_rater"]["alice"]["renamed_by"] == {"name_map": 14}
        assert out["match"]["rule"]["name_map"] == str(csv_map) and out["num_samples"] == rx.N_IMAGES
        _assert_same(_headline(fo.load_dataset("real-csvmap"), RATERS), reference["all"])
    finally:
        fo.delete_dataset("real-csvmap")
    json_map = tmp_path / "names.json"
    json_map.write_text(json.dumps(pairs))
    ds, report = import_multi_rater(_specs(exports, path=cvat), "real-jsonmap", image_dir=str(exports["images"]),
                                    complete=True, name_map=str(json_map))
    try:
        assert report["match"]["per_rater"]["alice"]["matched"] == 14
        _assert_same(_headline(ds, RATERS), reference["all"])
    finally:
        ds.delete()


def _import_op(fo, op: str = "import_multi_rater", **params) -> dict:
    import fiftyone.operators as foo

    result = foo.execute_operator(OP.format(op), ctx=dict(params=params))
    assert result.error is None, result.error
    return result.result


def _import_op_error(op: str, **params) -> str:
    import fiftyone.operators as foo

    with pytest.raises(Exception) as err:
        foo.execute_operator(OP.format(op), ctx=dict(params=params))
    return str(err.value)


def test_label_studio_json_with_an_updated_by_annotation(fo, exports, reference, tmp_path):
    """Label Studio's own JSON (3 annotators, upload-id names, one annotation without completed_by): refused
    naming rater_from; with rater_from='updated_by_fallback' the count is reported and agreement equals KaLOS's."""
    from agreement.core.validation import AnnotationError
    from agreement.fo.importers import import_label_studio

    path = tmp_path / "project-7-export.json"
    path.write_text(json.dumps(rx.label_studio_tasks(["bob", "carol", "dave"], exports["data"],
                                                     updated_by_only=("carol", 4))))
    names = {"bob@example.org": "bob", rx.label_studio_user("carol"): "carol", rx.label_studio_user("dave"): "dave"}
    with pytest.raises(AnnotationError, match=r"annotation 1\d\d.*no 'completed_by'.*rater_from='updated_by_fallback'"):
        import_label_studio(path, "real-ls", rater_names=names)
    msg = _import_op_error("import_label_studio", json_path=str(path), dataset_name="real-ls-op")
    assert "rater_from" in msg
    out = _import_op(fo, "import_label_studio", json_path=str(path), dataset_name="real-ls-op", persistent=False,
                     rater_names=names, rater_from="updated_by_fallback", image_dir=str(exports["images"]))
    try:
        assert out["fell_back_to_updated_by"] == 1 and out["warnings"] == []
        assert out["per_rater"]["carol"]["fell_back_to_updated_by"] == 1
        assert out["match"]["per_rater"]["bob"]["renamed_by"] == {"upload_id": 14}
        ds = fo.load_dataset("real-ls-op")
        assert sorted(ds.values("filepath")) == sorted(str(exports["images"] / n) for n in rx.image_names())
        _assert_same(_headline(ds, ["bob", "carol", "dave"]), reference["ls"])
    finally:
        fo.delete_dataset("real-ls-op")
    ds, report = import_label_studio(path, "real-ls", rater_names=names, rater_from="updated_by_fallback",
                                     upload_ids=False)
    try:  # upload ids kept: the names are Label Studio's
        assert report["match"]["per_rater"]["dave"]["renamed_by"] == {"file name": 14}
        assert all("-pexels-photo-" in p for p in ds.values("filepath"))
    finally:
        ds.delete()


def test_label_studio_json_exports_meet_cvat_in_import_multi_rater(fo, exports, reference, tmp_path):
    """format='label_studio': one annotator of Label Studio's JSON export is one rater's export; a file with
    several annotators needs options={'annotator': ...} (the message says so)."""
    from agreement.core.validation import AnnotationError
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    solo = tmp_path / "ls-bob.json"
    solo.write_text(json.dumps(rx.label_studio_tasks(["bob"], exports["data"])))
    project = tmp_path / "ls-project.json"
    project.write_text(json.dumps(rx.label_studio_tasks(["bob", "carol", "dave"], exports["data"],
                                                        updated_by_only=("dave", 2))))
    specs = [{"rater": "alice", "path": str(exports["cvat"]), "format": "cvat_image"},
             {"rater": "bob", "path": str(solo), "format": "label_studio"},
             {"rater": "carol", "path": str(project), "format": "label_studio"}]
    with pytest.raises(AnnotationError, match=r"task 502.*no 'completed_by'.*rater_from='updated_by_fallback'"):
        import_multi_rater(specs, "real-lsjson", image_dir=str(exports["images"]))
    specs[2]["options"] = {"rater_from": "updated_by_fallback"}
    with pytest.raises(MultiRaterImportError, match=r"rater 'carol'.*3 annotators.*options=\{'annotator'"):
        import_multi_rater(specs, "real-lsjson", image_dir=str(exports["images"]))
    specs[2]["options"]["annotator"] = rx.label_studio_user("carol")
    dave = {"rater": "dave", "path": str(project), "format": "label_studio",
            "options": {"annotator": rx.label_studio_user("dave"), "rater_from": "updated_by_fallback"}}
    out = _import_op(fo, exports=specs + [dave], dataset_name="real-lsjson", image_dir=str(exports["images"]),
                     persistent=False)
    try:
        assert out["match"]["per_rater"]["bob"]["renamed_by"] == {"upload_id": 14}
        assert out["converted"]["dave"]["fell_back_to_updated_by"] == 1
        assert out["converted"]["carol"]["annotator"] == rx.label_studio_user("carol")
        _assert_same(_headline(fo.load_dataset("real-lsjson"), RATERS), reference["all"])
    finally:
        fo.delete_dataset("real-lsjson")


def test_yolo_without_dataset_yaml_needs_the_classes(fo, exports, tmp_path):
    """Label Studio's YOLO output without its classes.txt: the message names classes=; given as a list or as the
    path of classes.txt it imports; downloaded images (upload-id names in images/) need no image_dir."""
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    bare = tmp_path / "yolo-bare"
    shutil.copytree(exports["carol"], bare)
    (bare / "classes.txt").replace(tmp_path / "classes.txt")
    specs = [{"rater": "carol", "path": str(bare), "format": "yolo"},
             {"rater": "alice", "path": str(exports["cvat"]), "format": "cvat_image"}]
    with pytest.raises(MultiRaterImportError, match=r"rater 'carol'.*no dataset.yaml.*classes="):
        import_multi_rater(specs, "real-yolo", image_dir=str(exports["images"]))
    for given in (list(rx.CLASSES), str(tmp_path / "classes.txt")):
        ds, report = import_multi_rater(specs, "real-yolo", image_dir=str(exports["images"]), classes=given,
                                        overwrite=True)
        assert report["converted"]["carol"]["classes_from"] == "the classes parameter"
        assert sorted(ds.distinct("carol.detections.label")) == sorted({c for per in exports["data"]["carol"]
                                                                         for c, _ in per})
        ds.delete()
    with pytest.raises(MultiRaterImportError, match=r"rater 'alice': classes apply to a YOLO export"):
        import_multi_rater([specs[0], {**specs[1], "classes": list(rx.CLASSES)}], "real-yolo",
                           image_dir=str(exports["images"]), classes=list(rx.CLASSES))
    with pytest.raises(MultiRaterImportError, match=r"classes apply to YOLO exports .* no export here is one"):
        import_multi_rater(specs[1:] + [{"rater": "bob", "path": str(exports["bob"] / "result.json"),
                                         "format": "coco"}], "real-yolo", classes=list(rx.CLASSES))
    msg = _import_op_error("import_multi_rater", exports=specs, dataset_name="real-yolo-op",
                           image_dir=str(exports["images"]))
    assert "classes=" in msg
    out = _import_op(fo, exports=[{**specs[0], "classes": ",".join(rx.CLASSES)}, specs[1]],
                     dataset_name="real-yolo-op", image_dir=str(exports["images"]), persistent=False)
    assert out["converted"]["carol"]["classes_from"] == "the classes parameter"
    fo.delete_dataset("real-yolo-op")
    # with the images downloaded by the converter (upload-id names in images/), no image_dir is needed
    upload = rx.label_studio_upload(exports["images"], tmp_path / "upload")
    yolo = rx.convert(rx.label_studio_tasks(["carol"], exports["data"]), tmp_path / "ls-yolo-images", "YOLO", upload)
    ds, report = import_multi_rater([{"rater": "carol", "path": str(yolo), "format": "yolo"}, specs[1]], "real-yolo2")
    try:
        assert report["match"]["per_rater"]["carol"]["matched"] == 14
        carol = [p for p in ds.values("filepath") if "/ls-yolo-images/images/" in p]
        assert len(carol) == 14 and all(p.split("/")[-1][8] == "-" for p in carol)  # the downloaded images
    finally:
        ds.delete()


def test_two_images_of_one_export_with_one_name_are_refused(fo, exports, tmp_path):
    """Ambiguity is named: after the upload id is removed, and through a name map."""
    from agreement.fo.importers import MultiRaterImportError, import_label_studio, import_multi_rater
    from agreement.io.image_names import NameMatchError

    names = rx.image_names()
    twice = names[:13] + ["0a1b2c3d-" + names[0]]
    cvat = rx.cvat_xml(tmp_path / "twice.xml", exports["data"]["alice"], names=twice)
    specs = [{"rater": "alice", "path": str(cvat), "format": "cvat_image"},
             {"rater": "bob", "path": str(exports["bob"] / "result.json"), "format": "coco"}]
    with pytest.raises(MultiRaterImportError, match=r"rater 'alice'.*both match the name.*upload_ids=False") as err:
        import_multi_rater(specs, "real-twice", image_dir=str(exports["images"]))
    assert f"/{names[0]}'" in str(err.value) and f"/0a1b2c3d-{names[0]}'" in str(err.value)
    with pytest.raises(MultiRaterImportError, match=r"no image of export.*as they are.*upload_ids=False.*name_map="):
        import_multi_rater(specs, "real-twice", image_dir=str(exports["images"]), upload_ids=False)
    mapped = {names[1]: names[2]}  # two names of one export mapped onto one
    with pytest.raises(MultiRaterImportError, match=rf"(?=.*/{names[1]}').*both match the name '{names[2]}'.*name_map"):
        import_multi_rater(specs[:1] + specs[1:], "real-twice", image_dir=str(exports["images"]), name_map=mapped,
                           upload_ids=False)
    tasks = rx.label_studio_tasks(["bob", "carol"], exports["data"])
    tasks[1]["data"]["image"] = "/data/upload/7/ffffffff-" + names[0]
    path = tmp_path / "ls-twice.json"
    path.write_text(json.dumps(tasks))
    with pytest.raises(NameMatchError, match=r"tasks \[500, 501\].*one task per image"):
        import_label_studio(path, "real-ls-twice")
    with pytest.raises(NameMatchError, match="not a regular expression"):
        import_multi_rater(specs, "real-bad", strip_prefix="(")


def test_a_prefix_pattern_strips_a_tool_specific_prefix(fo, exports, tmp_path):
    from agreement.fo.importers import import_multi_rater

    prefixed = rx.cvat_xml(tmp_path / "task.xml", exports["data"]["alice"],
                           names=[f"task12_{n}" for n in rx.image_names()])
    specs = [{"rater": "alice", "path": str(prefixed), "format": "cvat_image"},
             {"rater": "bob", "path": str(exports["bob"] / "result.json"), "format": "coco"}]
    ds, report = import_multi_rater(specs, "real-prefix", image_dir=str(exports["images"]), strip_prefix=r"task\d+_")
    try:
        assert report["match"]["per_rater"]["alice"] == {"images": 14, "matched": 14, "unmatched": 0,
                                                         "unmatched_examples": [], "renamed_by": {"strip_prefix": 14}}
        assert report["match"]["rule"]["strip_prefix"] == r"task\d+_" and len(ds) == 14
    finally:
        ds.delete()


def test_a_partial_overlap_lists_unmatched_images(fo, exports, tmp_path):
    from agreement.fo.importers import import_multi_rater

    names = rx.image_names()
    part = rx.cvat_xml(tmp_path / "part.xml", exports["data"]["alice"],
                       names=names[:10] + [f"other-{i}.jpg" for i in range(4)])
    ds, report = import_multi_rater([{"rater": "alice", "path": str(part), "format": "cvat_image"},
                                     {"rater": "bob", "path": str(exports["bob"] / "result.json"), "format": "coco"}],
                                    "real-part", image_dir=str(exports["images"]))
    try:
        alice, bob = (report["match"]["per_rater"][r] for r in ("alice", "bob"))
        assert (alice["matched"], alice["unmatched"]) == (10, 4)
        assert alice["unmatched_examples"] == [f"other-{i}.jpg" for i in range(4)]
        assert (bob["matched"], bob["unmatched"]) == (10, 4)
        assert all(n.split("-", 1)[1] in names[10:] for n in bob["unmatched_examples"])
    finally:
        ds.delete()


def test_a_single_rater_import_warns_that_agreement_needs_two(fo, exports, tmp_path):
    from agreement.fo.importers import import_label_studio, import_multi_rater

    ds, report = import_multi_rater([{"rater": "alice", "path": str(exports["cvat"]), "format": "cvat_image"}],
                                    "real-one", image_dir=str(exports["images"]))
    ds.delete()
    (warning,) = report["warnings"]
    assert "one rater ('alice')" in warning and "at least two raters" in warning and "import_multi_rater" in warning
    path = tmp_path / "ls-one.json"
    path.write_text(json.dumps(rx.label_studio_tasks(["dave"], exports["data"])))
    ds, report = import_label_studio(path, "real-ls-one")
    ds.delete()
    assert len(report["warnings"]) == 1 and "at least two raters" in report["warnings"][0]
    out = _import_op(fo, "import_label_studio", json_path=str(path), dataset_name="real-ls-one-op", persistent=False)
    fo.delete_dataset("real-ls-one-op")
    assert out["raters"] == ["dave@example.org"] and "at least two raters" in out["warnings"][0]


def test_the_kalos_fixture_has_the_layout_of_the_shared_kalos_file(exports, lvis_path):
    """The reference file is laid out as the shared KaLOS COCO file: the keys its images, annotations and
    categories use (rater_list, rater_id) are keys of the shared file's."""
    shared = json.loads(lvis_path.read_text())
    ours = json.loads(exports["kalos"].read_text())
    for part in ("images", "annotations", "categories"):
        assert set(ours[part][0]) <= set(shared[part][0]), part
    assert "rater_list" in ours["images"][0] and "rater_id" in ours["annotations"][0]
