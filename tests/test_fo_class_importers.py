"""Importers of image-level labels (issue 39 item 6): Label Studio choices, CVAT tags, FiftyOne's classification
directory tree and segmentation directory, one export per rater, in both layouts.

Every export is generated in tmp_path in its format's documented layout (no network); each import is checked
for the exact labels, the layout, the assignment (who was assigned which image) and the media type.
"""

from __future__ import annotations

import json
import os

import cv2
import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

W, H = 12, 8


def _png(path, value: int = 127, shape=(H, W, 3)) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cv2.imwrite(str(path), np.full(shape, value, np.uint8))
    return str(path)


def _by_name(ds, path: str) -> dict:
    """``{file name: value}`` of a field (labels as their label, or sorted labels, or (annotator, label) pairs)."""
    import fiftyone as fo

    def show(v):
        if v is None:
            return None
        if isinstance(v, fo.Classification):
            return v.label
        if isinstance(v, fo.Classifications):
            return sorted((c["annotator"], c.label) if c.has_field("annotator") else c.label for c in v.classifications)
        return v
    return {os.path.basename(p): show(v) for p, v in zip(ds.values("filepath"), ds.values(path))}


# --- Label Studio choices ------------------------------------------------------------------------------------------

CONFIG = """<View>
  <Image name="image" value="$image"/>
  <Choices name="quality" toName="image" choice="single-radio">
    <Choice value="bad"/><Choice value="ok"/><Choice value="good"/>
  </Choices>
  <Choices name="content" toName="image" choice="multiple">
    <Choice value="cat"/><Choice value="dog"/><Choice value="person"/>
  </Choices>
  <Choices name="attr" toName="image" perRegion="true"><Choice value="x"/></Choices>
</View>"""


def _choice(control: str, values: list[str]) -> dict:
    return {"id": f"{control}-{'-'.join(values) or 'none'}", "type": "choices", "from_name": control,
            "to_name": "image", "value": {"choices": values}}


def _ls_tasks():
    from labelstudio_export import annotation, task

    return [
        task(1, "a.jpg", [annotation(11, [_choice("quality", ["good"]), _choice("content", ["cat", "dog"])]),
                          annotation(12, [_choice("quality", ["ok"]), _choice("content", ["cat"])])]),
        # 11 answered nothing: no class, no tag (explicit absence); 13 not assigned
        task(2, "b.jpg", [annotation(11, []), annotation(12, [_choice("quality", ["bad"])])]),
        task(3, "c.jpg", [annotation(13, [_choice("quality", ["good"]), _choice("content", ["person"])]),
                          annotation(12, [], cancelled=True)]),
    ]


@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_label_studio_choices_become_classes_and_tags(fo, tmp_path, layout):
    import fiftyone.operators as foo

    path = tmp_path / "project.json"
    path.write_text(json.dumps(_ls_tasks()))
    (tmp_path / "config.xml").write_text(CONFIG)
    names = {"11": "alice", "12": "bob", "13": "carol"}
    params = dict(json_path=str(path), dataset_name=f"ls-choices-{layout}", rater_names=names, layout=layout,
                  label_config=str(tmp_path / "config.xml"), persistent=False)
    result = foo.execute_operator("@iaa/agreement/import_label_studio", ctx=dict(params=params))
    assert result.error is None, result.error
    out = result.result
    ds = fo.load_dataset(params["dataset_name"])
    try:
        assert ds.media_type == "image" and out["media_type"] == "image" and out["layout"] == layout
        assert out["choices"]["quality"] == {
            "label_type": "classification", "classes": ["bad", "ok", "good"], "source": "label config",
            "answered": 4, "not_answered": 1, "not_answered_means": "missing (no class)"}
        assert out["choices"]["content"]["label_type"] == "tags" and out["choices"]["content"]["not_answered"] == 2
        assert "attr" not in out["choices"] and out["skipped"] == {"cancelled annotations": 1}
        assert ds.values("raters") == [["alice", "bob"], ["alice", "bob"], ["carol"]]
        schema = ds.get_field_schema()
        # no rectangles anywhere: no box field
        assert not any(getattr(f, "document_type", None) is fo.Detections for f in schema.values())
        if layout == "fields":
            assert schema["alice_quality"].document_type is fo.Classification
            assert schema["alice_content"].document_type is fo.Classifications
            assert _by_name(ds, "alice_quality") == {"a.jpg": "good", "b.jpg": None, "c.jpg": None}
            assert _by_name(ds, "bob_quality") == {"a.jpg": "ok", "b.jpg": "bad", "c.jpg": None}
            assert _by_name(ds, "carol_quality") == {"a.jpg": None, "b.jpg": None, "c.jpg": "good"}
            # tags: assigned and ticked none = [] (explicit absence), not assigned = None
            assert _by_name(ds, "alice_content") == {"a.jpg": ["cat", "dog"], "b.jpg": [], "c.jpg": None}
            assert _by_name(ds, "bob_content") == {"a.jpg": ["cat"], "b.jpg": [], "c.jpg": None}
            assert ds.classes["alice_quality"] == ["bad", "ok", "good"]
            assert ds.classes["bob_content"] == ["cat", "dog", "person"]
            assert out["rater_fields"] == {"alice": "alice_quality", "bob": "bob_quality", "carol": "carol_quality"}
        else:
            assert schema["ground_truth_quality"].document_type is fo.Classifications
            assert _by_name(ds, "ground_truth_quality") == {
                "a.jpg": [("alice", "good"), ("bob", "ok")], "b.jpg": [("bob", "bad")], "c.jpg": [("carol", "good")]}
            assert _by_name(ds, "ground_truth_content") == {
                "a.jpg": [("alice", "cat"), ("alice", "dog"), ("bob", "cat")], "b.jpg": [],
                "c.jpg": [("carol", "person")]}
            info = ds.info["iaa_assignment"]
            for f in ("ground_truth_quality", "ground_truth_content"):
                assert info[f] == {"raters_field": "raters", "raters": ["alice", "bob", "carol"]}
            assert out["field"] == "ground_truth_quality"
            assert ds.classes["ground_truth_quality"] == ["bad", "ok", "good"]
    finally:
        ds.delete()


def test_label_studio_boxes_and_choices_together(fo, tmp_path):
    from agreement.fo.importers import import_label_studio
    from labelstudio_export import annotation, rectangle, task

    tasks = [task(1, "a.jpg", [annotation(1, [rectangle([0.1, 0.1, 0.2, 0.2], "car", 100, 80),
                                              _choice("quality", ["good"])]),
                               annotation(2, [_choice("quality", ["bad"])])])]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(tasks))
    ds, report = import_label_studio(path, "ls-both")
    try:
        # numeric annotator ids name the fields rater_<id>
        assert ds.values("rater_1.detections.label") == [["car"]] and ds.values("rater_2.detections") == [[]]
        assert ds.values("rater_1_quality.label") == ["good"] and ds.values("rater_2_quality.label") == ["bad"]
        # the boxes stay the primary fields
        assert ds.info["iaa_coco"]["rater_fields"] == {"1": "rater_1", "2": "rater_2"}
        assert report["choices"]["quality"]["source"] == "inferred from the export"
    finally:
        ds.delete()


def test_label_studio_bad_choices_are_clear_errors_and_leave_nothing(fo, tmp_path):
    from agreement.core.validation import AnnotationError
    from agreement.fo.importers import import_label_studio
    from labelstudio_export import annotation, task

    before = set(fo.list_datasets())
    cases = [
        ([annotation(5, [_choice("content", ["cat", "horse"])])], r"task 1, annotation \d+ \(annotator '5'\): "
         r"\['horse'\] not listed in the label config's <Choices name='content'>"),
        ([annotation(5, [_choice("quality", ["ok", "good"])])], r"annotator '5'.*2 choices .* single-choice"),
        ([annotation(5, [_choice("mood", ["ok"])])], "control 'mood' is not a <Choices> control"),
        ([annotation(5, []), annotation(5, [_choice("quality", ["ok"])])],
         "annotator '5' has a second annotation on this task"),
    ]
    for anns, message in cases:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps([task(1, "a.jpg", anns)]))
        with pytest.raises(AnnotationError, match=message):
            import_label_studio(path, "bad", label_config=CONFIG)
    assert set(fo.list_datasets()) == before


# --- CVAT for images: <tag> ----------------------------------------------------------------------------------------


def _cvat_xml(path, images: dict[str, list[str]], boxes: bool = False, labels=("cat", "dog", "person")) -> str:
    """A CVAT for images 1.1 XML: ``{file name: [tags]}``; a box per image with ``boxes``."""
    meta = "".join(f"<label><name>{n}</name><attributes/></label>" for n in labels)
    body = []
    for i, (name, tags) in enumerate(images.items()):
        inner = "".join(f'<tag label="{t}" source="manual"></tag>' for t in tags)
        if boxes:
            inner += '<box label="cat" source="manual" occluded="0" xtl="1" ytl="1" xbr="5" ybr="4" z_order="0"></box>'
        body.append(f'<image id="{i}" name="{name}" width="{W}" height="{H}">{inner}</image>')
    path.write_text('<?xml version="1.0" encoding="utf-8"?>\n<annotations><version>1.1</version>'
                    f"<meta><task><labels>{meta}</labels></task></meta>{''.join(body)}</annotations>")
    return str(path)


@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_cvat_tags_one_per_image_are_classifications(fo, tmp_path, layout):
    from agreement.fo.importers import import_multi_rater

    exports = [
        {"rater": "alice", "path": _cvat_xml(tmp_path / "alice.xml", {"a.png": ["cat"], "b.png": [], "c.png": ["dog"]}),
         "format": "cvat_image"},
        {"rater": "bob", "path": _cvat_xml(tmp_path / "bob.xml", {"a.png": ["dog"], "b.png": ["cat"]}),
         "format": "cvat_image"},
    ]
    ds, report = import_multi_rater(exports, f"cvat-tags-{layout}", layout=layout)
    try:
        assert ds.media_type == "image" and report["label_fields"] == {"class": "Classification"}
        assert ds.values("raters") == [["alice", "bob"], ["alice", "bob"], ["alice"]]
        assert ds.values("metadata.width") == [W] * 3
        if layout == "fields":
            assert ds.get_field_schema()["alice"].document_type is fo.Classification
            assert _by_name(ds, "alice") == {"a.png": "cat", "b.png": None, "c.png": "dog"}
            assert _by_name(ds, "bob") == {"a.png": "dog", "b.png": "cat", "c.png": None}
            assert ds.info["iaa_coco"]["rater_fields"] == {"alice": "alice", "bob": "bob"}
        else:
            assert ds.get_field_schema()["ground_truth"].document_type is fo.Classifications
            assert _by_name(ds, "ground_truth") == {"a.png": [("alice", "cat"), ("bob", "dog")],
                                                    "b.png": [("bob", "cat")], "c.png": [("alice", "dog")]}
            assert ds.info["iaa_assignment"]["ground_truth"]["raters_field"] == "raters"
        assert ds.classes[ds.info["iaa_coco"]["rater_fields"]["alice"]] == ["cat", "dog"]
        assert report["per_rater"]["alice"]["labels_by_kind"] == {"class": 2}
    finally:
        ds.delete()


def test_cvat_several_tags_with_boxes_are_tags_beside_the_boxes(fo, tmp_path):
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    exports = [
        ("alice", _cvat_xml(tmp_path / "alice.xml", {"a.png": ["cat", "dog", "cat"], "b.png": []}, boxes=True),
         "cvat_image"),
        ("bob", _cvat_xml(tmp_path / "bob.xml", {"a.png": ["cat"], "b.png": ["person"]}, boxes=True), "cvat_image"),
    ]
    ds, report = import_multi_rater(exports, "cvat-tags-boxes")
    try:
        assert ds.get_field_schema()["alice_tags"].document_type is fo.Classifications
        assert ds.values("alice.detections.label") == [["cat"], ["cat"]]
        assert _by_name(ds, "alice_tags") == {"a.png": ["cat", "dog"], "b.png": []}
        assert _by_name(ds, "bob_tags") == {"a.png": ["cat"], "b.png": ["person"]}
        assert report["per_rater"]["alice"]["repaired"] == {"the same tag twice on an image -> once": 1}
        assert ds.info["iaa_coco"]["rater_fields"] == {"alice": "alice", "bob": "bob"}
    finally:
        ds.delete()
    before = set(fo.list_datasets())
    with pytest.raises(MultiRaterImportError, match=r"rater 'alice': .*alice.xml', image 'a.png' has 2 classes "
                                                     r"\['cat', 'dog'\].*label_type='tags'"):
        import_multi_rater(exports, "bad", label_type="classification")
    unlisted = _cvat_xml(tmp_path / "carol.xml", {"a.png": ["horse"]}, labels=("cat", "dog"))
    with pytest.raises(MultiRaterImportError, match=r"rater 'carol': .*carol.xml', image 'a.png': tag\(s\) \['horse'\] "
                                                     "not among the labels"):
        import_multi_rater(exports + [("carol", unlisted, "cvat_image")], "bad")
    assert set(fo.list_datasets()) == before


# --- FiftyOne's image classification directory tree ---------------------------------------------------------------


def _tree(root, classes: dict[str, str | list[str] | None]) -> str:
    """``root/<class>/<file>`` per file (``None``: ``_unlabeled``; a list: the file in several folders)."""
    for name, cls in classes.items():
        for c in cls if isinstance(cls, list) else [cls]:
            _png(root / (c or "_unlabeled") / name)
    return str(root)


@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_classification_directory_trees_one_per_rater(fo, make_dataset, tmp_path, layout):
    import fiftyone.operators as foo

    # alice's tree as FiftyOne's own exporter writes it
    src = make_dataset()
    src.add_samples([fo.Sample(filepath=_png(tmp_path / "img" / n), gt=fo.Classification(label=c) if c else None)
                     for n, c in [("a.png", "cat"), ("b.png", "dog"), ("c.png", None)]], progress=False)
    src.export(export_dir=str(tmp_path / "alice"), dataset_type=fo.types.ImageClassificationDirectoryTree,
               label_field="gt", progress=False)
    bob = _tree(tmp_path / "bob", {"a.png": "cat", "b.png": "cat", "d.png": "dog"})
    exports = [{"rater": "alice", "path": str(tmp_path / "alice"), "format": "classification_tree"},
               {"rater": "bob", "path": bob, "format": "classification_tree"}]
    name = f"tree-{layout}"
    result = foo.execute_operator("@iaa/agreement/import_multi_rater", ctx=dict(params=dict(
        exports=exports, dataset_name=name, layout=layout, label_type="classification", persistent=False)))
    assert result.error is None, result.error
    out = result.result
    ds = fo.load_dataset(name)
    try:
        assert ds.media_type == "image" and out["media_type"] == "image" and out["num_samples"] == 4
        assert out["label_fields"] == {"class": "Classification"}
        assert _by_name(ds, "raters") == {"a.png": ["alice", "bob"], "b.png": ["alice", "bob"],
                                          "c.png": ["alice"], "d.png": ["bob"]}
        if layout == "fields":
            assert _by_name(ds, "alice") == {"a.png": "cat", "b.png": "dog", "c.png": None, "d.png": None}
            assert _by_name(ds, "bob") == {"a.png": "cat", "b.png": "cat", "c.png": None, "d.png": "dog"}
            assert ds.classes["alice"] == ["cat", "dog"]
        else:
            assert _by_name(ds, "ground_truth") == {"a.png": [("alice", "cat"), ("bob", "cat")],
                                                    "b.png": [("alice", "dog"), ("bob", "cat")], "c.png": [],
                                                    "d.png": [("bob", "dog")]}
    finally:
        ds.delete()


def test_an_image_in_several_class_folders_is_tags_or_an_error(fo, tmp_path):
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    alice = _tree(tmp_path / "alice", {"a.png": ["cat", "dog"], "b.png": None})
    bob = _tree(tmp_path / "bob", {"a.png": "cat", "b.png": "dog"})
    exports = [("alice", alice, "classification_tree"), ("bob", bob, "classification_tree")]
    before = set(fo.list_datasets())
    with pytest.raises(MultiRaterImportError, match=r"rater 'alice': .*image 'a.png' has 2 classes"):
        import_multi_rater(exports, "bad", label_type="classification")
    assert set(fo.list_datasets()) == before
    ds, report = import_multi_rater(exports, "tree-tags")  # auto: tags
    try:
        assert ds.get_field_schema()["alice"].document_type is fo.Classifications
        assert _by_name(ds, "alice") == {"a.png": ["cat", "dog"], "b.png": []}  # _unlabeled: no tag
        assert _by_name(ds, "bob") == {"a.png": ["cat"], "b.png": ["dog"]}
    finally:
        ds.delete()


def test_an_export_matching_no_other_is_an_error(fo, tmp_path):
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    alice = _tree(tmp_path / "alice", {"a.png": "cat"})
    bob = _tree(tmp_path / "bob", {"a.png": "dog"})
    dave = _tree(tmp_path / "dave", {"z.png": "cat"})
    trees = [("alice", alice, "classification_tree"), ("bob", bob, "ImageClassificationDirectoryTree"),
             ("dave", dave, "classification_tree")]
    with pytest.raises(MultiRaterImportError, match=r"rater 'dave': no image of export .*dave' matches"):
        import_multi_rater(trees, "bad")
    assert not fo.dataset_exists("bad")


# --- FiftyOne's image segmentation directory -----------------------------------------------------------------------


def _seg_export(fo, make_dataset, tmp_path, rater: str, masks: dict[str, np.ndarray]) -> str:
    """The rater's masks as FiftyOne's ImageSegmentationDirectory exporter writes them."""
    ds = make_dataset()
    ds.add_samples([fo.Sample(filepath=_png(tmp_path / "img" / n), seg=fo.Segmentation(mask=m))
                    for n, m in masks.items()], progress=False)
    out = str(tmp_path / rater)
    ds.export(export_dir=out, dataset_type=fo.types.ImageSegmentationDirectory, label_field="seg", progress=False)
    return out


def test_segmentation_directories_one_per_rater(fo, make_dataset, tmp_path):
    import fiftyone.operators as foo

    m1 = np.zeros((H, W), np.uint8)
    m1[2:5, 3:9] = 1
    m2 = m1.copy()
    m2[6:, :] = 2
    alice = _seg_export(fo, make_dataset, tmp_path, "alice", {"a.png": m1, "b.png": m2})
    bob = _seg_export(fo, make_dataset, tmp_path, "bob", {"a.png": m2, "c.png": m1})
    exports = [{"rater": "alice", "path": alice, "format": "segmentation_dir"},
               {"rater": "bob", "path": bob, "format": "segmentation_dir"}]
    result = foo.execute_operator("@iaa/agreement/import_multi_rater", ctx=dict(params=dict(
        exports=exports, dataset_name="seg", mask_targets='{"1": "road", "2": "car"}', persistent=False)))
    assert result.error is None, result.error
    out = result.result
    ds = fo.load_dataset("seg")
    try:
        assert ds.media_type == "image" and out["label_fields"] == {"segmentation": "Segmentation"}
        assert ds.get_field_schema()["alice"].document_type is fo.Segmentation
        assert ds.mask_targets == {"alice": {1: "road", 2: "car"}, "bob": {1: "road", 2: "car"}}
        assert _by_name(ds, "raters") == {"a.png": ["alice", "bob"], "b.png": ["alice"], "c.png": ["bob"]}
        got = {os.path.basename(p): s for p, s in zip(ds.values("filepath"), ds.values("alice"))}
        assert got["c.png"] is None
        np.testing.assert_array_equal(got["a.png"].get_mask(), m1)
        np.testing.assert_array_equal(got["b.png"].get_mask(), m2)
        bob_a = dict(zip(map(os.path.basename, ds.values("filepath")), ds.values("bob")))["a.png"]
        np.testing.assert_array_equal(bob_a.get_mask(), m2)
        assert out["per_rater"]["alice"]["mask_values"] == [0, 1, 2]
    finally:
        ds.delete()


def test_bad_masks_are_clear_errors(fo, make_dataset, tmp_path):
    from agreement.fo.importers import MultiRaterImportError, import_multi_rater

    m = np.zeros((H, W), np.uint8)
    m[1:3, 1:3] = 7
    alice = _seg_export(fo, make_dataset, tmp_path, "alice", {"a.png": m})
    bob = _seg_export(fo, make_dataset, tmp_path, "bob", {"a.png": m})
    exports = [("alice", alice, "segmentation_dir"), ("bob", bob, "ImageSegmentationDirectory")]
    before = set(fo.list_datasets())
    with pytest.raises(MultiRaterImportError, match=r"rater 'alice': .*image 'a.png', mask .*pixel values \[7\] are "
                                                     "not among mask_targets"):
        import_multi_rater(exports, "bad", mask_targets={1: "road"})
    with pytest.raises(MultiRaterImportError, match="semantic masks .* fields layout only"):
        import_multi_rater(exports, "bad", layout="attribute")
    _png(os.path.join(bob, "labels", "a.png"), shape=(H, W, 3), value=9)  # an RGB mask
    with pytest.raises(MultiRaterImportError, match=r"rater 'bob': .*a semantic mask must be a 2-D image"):
        import_multi_rater(exports, "bad")
    assert set(fo.list_datasets()) == before
