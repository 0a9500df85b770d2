"""The review loop on a crowd: media type from the files, a queue of exactly the flagged consensus labels,
decisions that tag only those labels, and counts that agree with the queue."""

from __future__ import annotations

import json
import warnings

import cv2
import numpy as np
import pytest

fo = pytest.importorskip("fiftyone")

from agreement.fo.importers.coco import import_multi_rater_coco  # noqa: E402
from agreement.fo.importers.media_types import ImportMediaWarning, decide_media_type, sniff_media_type  # noqa: E402
from agreement.simulate.synthetic.crowd_export import write_crowd_export  # noqa: E402


# ------------------------------------------------------------------ media type
def _png(path: str) -> None:
    ok, buf = cv2.imencode(".png", np.zeros((4, 5, 3), np.uint8))
    with open(path, "wb") as f:
        f.write(buf.tobytes())


def test_sniff_tells_images_and_videos_by_their_first_bytes(tmp_path):
    _png(tmp_path / "a")
    ok, jpg = cv2.imencode(".jpg", np.zeros((4, 5, 3), np.uint8))
    (tmp_path / "b").write_bytes(jpg.tobytes())
    (tmp_path / "c").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 16)
    (tmp_path / "d").write_bytes(b"\x00\x00\x00\x18ftypavif" + b"\x00" * 16)
    (tmp_path / "e").write_bytes(b"hello world, not media")
    assert [sniff_media_type(str(tmp_path / n)) for n in "abcde"] == ["image", "image", "video", "image", None]
    assert sniff_media_type(str(tmp_path / "missing")) is None


def test_decide_media_type_by_name_then_content_then_the_format_with_a_warning(tmp_path):
    _png(tmp_path / "x")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImportMediaWarning)  # nothing assumed: no warning
        rep = decide_media_type([str(tmp_path / "a.jpg"), str(tmp_path / "x")])
    assert (rep.media_type, rep.by_name, rep.by_content, rep.assumed, rep.note) == ("image", 1, 1, 0, "")
    with pytest.warns(ImportMediaWarning, match=r"1 of 2 files .* taken as image because the format says so"):
        rep = decide_media_type([str(tmp_path / "x"), str(tmp_path / "gone")], reason="the format says so")
    assert rep.assumed == 1 and "gone" in rep.note
    (tmp_path / "v").write_bytes(b"\x1a\x45\xdf\xa3" + b"\x00" * 12)
    with pytest.raises(ValueError, match="mixes media types"):
        decide_media_type([str(tmp_path / "x"), str(tmp_path / "v")])


def _coco(tmp_path, names: list[str], segmentation: bool = False) -> str:
    images = [{"id": i + 1, "file_name": n, "width": 100, "height": 80, "rater_list": ["a", "b"]}
              for i, n in enumerate(names)]
    anns = []
    for img in images:
        for r in "ab":
            ann = {"id": len(anns) + 1, "image_id": img["id"], "category_id": 1, "bbox": [10, 10, 20, 20],
                   "rater_id": r}
            if segmentation:
                ann["segmentation"] = [[10, 10, 30, 10, 30, 30, 10, 30]]
            anns.append(ann)
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "x"}]}))
    return str(path)


def test_coco_import_of_extensionless_images_is_an_image_dataset_that_makes_patches(tmp_path):
    for n in ("img0", "img1"):
        _png(tmp_path / n)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImportMediaWarning)
        ds = import_multi_rater_coco(_coco(tmp_path, ["img0", "img1"]), layout="attribute")
    try:
        assert ds.media_type == "image" and ds._sample_collection.distinct("_media_type") == ["image"]
        assert ds.info["iaa_coco"]["media"]["by_content"] == 2
        assert len(ds.to_patches("ground_truth")) == 4
        # no segmentation in the file: no empty polygons field
        assert "ground_truth_polygons" not in ds.get_field_schema()
    finally:
        ds.delete()


def test_coco_import_warns_when_files_cannot_be_told_and_records_why(tmp_path):
    with pytest.warns(ImportMediaWarning, match="2 of 2 files .* taken as image because COCO annotations"):
        ds = import_multi_rater_coco(_coco(tmp_path, ["n0", "n1"], segmentation=True), layout="attribute")
    try:
        assert ds.media_type == "image"
        assert ds.info["iaa_coco"]["media"]["assumed"] == 2 and ds.info["iaa_coco"]["media"]["note"]
        assert len(ds.values("ground_truth_polygons.polylines")) == 2  # segmentations: the polygons field
    finally:
        ds.delete()


def test_merged_import_decides_the_media_type_too(tmp_path):
    from agreement.fo.importers.common import MergedImages, write_merged_dataset

    _png(tmp_path / "p0")
    det = fo.Detection(label="x", bounding_box=[0.1, 0.1, 0.2, 0.2])
    merged = MergedImages(keys=["p0"], filepaths=[str(tmp_path / "p0")], sizes=[(5, 4)], raters=["a", "b"],
                          labels=[{"a": {"detections": [det.copy()]}, "b": {"detections": [det.copy()]}}],
                          extra=[])
    ds = write_merged_dataset(merged, "merged-media", source="test export")
    try:
        assert ds.media_type == "image" and ds.info["iaa_import"]["media"]["by_content"] == 1
    finally:
        ds.delete()


# ------------------------------------------------------------------ the review loop
@pytest.fixture(scope="module")
def crowd(tmp_path_factory):
    from agreement.fo.methods.consensus import compute_consensus

    path = write_crowd_export(tmp_path_factory.mktemp("crowd"), num_samples=80, num_raters=60, raters_per_sample=9)
    ds = import_multi_rater_coco(path, layout="attribute", dataset_name="review-crowd", overwrite=True)
    compute_consensus(ds, "cons", field="ground_truth", rater_attr="annotator")
    compute_consensus(ds, "vote", field="ground_truth", rater_attr="annotator", method="majority")
    yield ds
    ds.delete()


def _all_tags(ds) -> dict:
    return {f: ds.count_label_tags(f) for f in ("ground_truth", "vote_consensus")}


def test_queue_is_exactly_the_flagged_consensus_labels_least_confident_first_and_counts_agree(crowd):
    from agreement.fo.methods.consensus import review_view

    q = review_view(crowd, "cons")
    assert crowd.media_type == "image" and q.patches_field == "cons_consensus"
    # of the label fields only the consensus: tagging "all labels" of a patch cannot reach a rater's or another
    # run's label; the samples' numbers come along (sidebar filters and the panel keep working in the queue)
    schema = q.get_field_schema()
    labels = [f for f, t in schema.items() if isinstance(t, fo.EmbeddedDocumentField) and f != "metadata"]
    assert labels == ["cons_consensus"], labels
    assert {"cons_min_confidence", "cons_n_review", "vote_min_confidence"} <= set(schema)
    assert q.values("cons_min_confidence") == [crowd[s].cons_min_confidence for s in q.values("sample_id")]
    flagged = [(d.confidence, d.id) for v in crowd.values("cons_consensus") for d in v.detections
               if d["cons_review"]]
    assert len(q) == len(flagged) == sum(crowd.values("cons_n_review")) > 0
    assert q.values("cons_consensus.id") == [i for _, i in sorted(flagged)]
    # the sample's lowest confidence is what the queue sorts by: the lowest label confidence
    for v, low in zip(crowd.values("cons_consensus"), crowd.values("cons_min_confidence")):
        if v.detections:
            assert low == pytest.approx(min(d.confidence for d in v.detections), rel=1e-12)


def test_decisions_tag_only_the_flagged_consensus_labels_of_the_run(crowd):
    from agreement.fo.methods.consensus import finalize_consensus, review_view
    from agreement.fo.views.review import ReviewError, next_pending, review_labels, review_progress

    before = _all_tags(crowd)
    q = review_view(crowd, "cons")
    first, second = q.values("cons_consensus.id")[:2]
    out = review_labels(q, "cons", [first], "accepted")
    assert (out["tagged"], out["accepted"], out["pending"]) == (1, 1, out["flagged"] - 1)
    assert q.select_labels(ids=[first]).values("cons_consensus.tags") == [["accepted"]]  # the open queue shows it
    review_labels(crowd, "cons", [second], "rejected")
    review_labels(q, "cons", [first], "rejected")  # a second decision replaces the first
    assert review_progress(crowd, "cons")["rejected"] == 2 and review_progress(crowd, "cons")["accepted"] == 0
    assert next_pending(q, "cons", q.first().id) == q.values("id")[2]  # both decided: the third is next
    rater_label = crowd.first().ground_truth.detections[0].id
    with pytest.raises(ReviewError, match="not consensus labels of run 'cons'"):
        review_labels(crowd, "cons", [first, rater_label], "accepted")
    unflagged = next(d.id for v in crowd.values("cons_consensus") for d in v.detections if not d["cons_review"])
    with pytest.raises(ReviewError, match="not flagged for review"):
        review_labels(crowd, "cons", [unflagged], "rejected")
    with pytest.raises(ReviewError, match="decision must be"):
        review_labels(crowd, "cons", [first], "maybe")
    assert _all_tags(crowd) == before  # no rater label, no other run's label was tagged
    counts = finalize_consensus(crowd, "cons")
    assert counts["rejected"] == 2 and counts["still_flagged"] == review_progress(crowd, "cons")["pending"]
    review_labels(crowd, "cons", [first, second], None)  # undo
    assert review_progress(crowd, "cons")["rejected"] == 0


def test_review_operator_from_python_tags_given_ids_and_refuses_others(crowd):
    import fiftyone.operators as foo

    from agreement.fo.methods.consensus import review_view

    before = _all_tags(crowd)
    q = review_view(crowd, "cons")
    lid = q.values("cons_consensus.id")[-1]
    op = foo.get_operator("@iaa/agreement/review_consensus_labels")
    out = op(q, key="cons", decision="reject", label_ids=[lid, crowd.first().ground_truth.detections[0].id])
    assert (out["tagged"], out["left_alone"], out["decision"]) == (1, 1, "reject")
    assert crowd.select_labels(ids=[lid]).values("cons_consensus.detections.tags")[0] == [["rejected"]]
    out = op(q, key="cons", decision="undo", label_ids=[lid])
    assert out["rejected"] == 0 and _all_tags(crowd) == before
    with pytest.raises(ValueError, match="no flagged consensus label of run 'cons' is selected or given"):
        op(q, key="cons", decision="accept", label_ids=[])  # an empty list is taken, and refused: nothing to do


def test_python_call_with_the_forms_defaults_uses_the_layout_the_import_recorded(crowd):
    """A call that gives only the key: the required label field is the one the import recorded (the App's
    form fills it in; FiftyOne's SDK alone refused the call with 'field: Required property')."""
    import fiftyone.operators as foo

    results = foo.get_operator("@iaa/agreement/compute_kalos")(crowd, key="kalos_defaults")
    info = crowd.get_run_info("kalos_defaults").config
    assert info.input["field"] == "ground_truth" and info.input["raters_field"] == "raters"
    assert results.summary["n_defined"] > 0
