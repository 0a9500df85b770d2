"""Temporal segments (TemporalDetections on videos) through every compute operator, in both rater layouts, as
the SDK calls them (``foo.get_operator(uri)(dataset, ...)``) and as ``execute_operator`` runs them: per-label
results on the TemporalDetection labels, known values on tiny cases, consensus segments in frames, the review
queue as clips, and every bad input refused (or repaired and reported) before anything is written."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

RATERS = ("a", "b", "c")
URI = "@iaa/agreement/{}"


def _clip(fo, i: int, n: int | None, per_rater: dict, attribute: bool = True):
    """A video sample of ``n`` frames (``None``: no metadata) with rater fields and the one ``ann`` field."""
    sample = fo.Sample(filepath=f"/nonexistent/clip{i:02d}.mp4")
    if n is not None:
        sample["metadata"] = fo.VideoMetadata(total_frame_count=n, frame_rate=30.0)
    labels = []
    for r, segs in per_rater.items():
        if segs is None:
            continue
        sample[r] = fo.TemporalDetections(detections=[fo.TemporalDetection(label=c, support=list(s)) for s, c in segs])
        labels += [fo.TemporalDetection(label=c, support=list(s), annotator=r) for s, c in segs]
    if attribute:
        sample["ann"] = fo.TemporalDetections(detections=labels)
    return sample


def _jittered(seed: int = 0, S: int = 8, jitter: dict | None = None) -> list:
    """Per clip ``(n, {rater: [(support, class)]})``: clips of 60-600 frames, two or three true segments at
    random relative times, each rater's boundaries off by ``jitter[rater]`` frames (0, 2, 6 by default)."""
    rng = np.random.default_rng(seed)
    jitter = jitter or {"a": 0, "b": 2, "c": 6}
    out = []
    for _ in range(S):
        n = int(rng.integers(60, 601))
        k = int(rng.integers(2, 4))
        starts = np.sort(rng.choice(np.arange(1, n - 20), k, replace=False))
        truth = [(int(f), int(min(n, f + rng.integers(10, max(11, n // 4)))), str(rng.choice(["run", "jump"])))
                 for f in starts]
        raters = {}
        for r, j in jitter.items():
            off = rng.integers(-j, j + 1, (k, 2)) if j else np.zeros((k, 2), int)
            raters[r] = [((int(np.clip(f + o[0], 1, n)), int(np.clip(max(f + o[0], t + o[1]), 1, n))), c)
                         for (f, t, c), o in zip(truth, off)]
        out.append((n, raters))
    return out


@pytest.fixture
def clips(fo, make_dataset):
    return make_dataset([_clip(fo, i, n, raters) for i, (n, raters) in enumerate(_jittered())])


def _call(ds, name: str, key: str, **params):
    """The SDK call ``foo.get_operator(uri)(dataset, key=..., ...)``: its headline numbers."""
    import fiftyone.operators as foo

    return dict(foo.get_operator(URI.format(name))(ds, key=key, **params).summary)


def _execute(ds, name: str, **params) -> dict:
    import fiftyone.operators as foo

    return foo.execute_operator(URI.format(name), ctx=dict(view=ds.view(), params=params)).result


FIELDS = dict(fields=list(RATERS))
ATTRIBUTE = dict(field="ann", rater_attr="annotator")
#: operator -> (headline numbers compared across layouts, per-label attributes written on the raters' labels)
OPERATORS = {
    "compute_kalos": (("global_alpha", "mean_alpha", "n_units"), ("unit",)),
    "compute_ot_agreement": (("alpha_ot", "mean_ot", "f1", "threshold_alpha"), ("cost", "match", "match_rater")),
    "compute_geometry_agreement": (("sigma", "distance_alpha", "ks", "detection_alpha", "classification_alpha"),
                                   ("distance",)),
    "compute_consensus": (("n_consensus", "n_review", "mean_confidence"), ("consensus_id", "agrees")),
    "calibrate_agreement": (("best_distance", "ks", "tau_star"), ()),
}


@pytest.mark.parametrize("name", list(OPERATORS))
def test_every_compute_operator_reads_segments_in_both_layouts(clips, name):
    ds = clips
    numbers, label_attrs = OPERATORS[name]
    by_fields = _call(ds, name, "f", **FIELDS)
    by_attr = _execute(ds, name, key="t", **ATTRIBUTE)
    for k in numbers:
        assert by_fields[k] == pytest.approx(by_attr[k], abs=1e-9), k
        assert by_fields[k] is not None, k
    for suffix in label_attrs:  # per-label results land on the TemporalDetection labels of each layout
        for key, path in (("f", "a.detections"), ("t", "ann.detections")):
            values = ds.values(f"{path}.{key}_{suffix}", unwind=True)
            assert len(values) == len(ds.values(f"{path}.id", unwind=True)) and any(v is not None for v in values)
    assert ds.load_run_results("f").detail["raters"] == list(RATERS)
    assert {"f", "t"} <= set(ds.list_runs())


def test_jittered_raters_agree_less_than_identical_ones(fo, make_dataset):
    same = make_dataset([_clip(fo, i, n, r) for i, (n, r) in enumerate(_jittered(1, jitter={"a": 0, "b": 0}))])
    loose = make_dataset([_clip(fo, i, n, r) for i, (n, r) in enumerate(_jittered(1, jitter={"a": 0, "b": 8}))])
    params = dict(fields=["a", "b"])
    kalos = [_call(d, "compute_kalos", "k", **params) for d in (same, loose)]
    ot = [_call(d, "compute_ot_agreement", "o", **params) for d in (same, loose)]
    geo = [_call(d, "compute_geometry_agreement", "g", intervals=False, **params) for d in (same, loose)]
    assert kalos[0]["global_alpha"] == 1.0 and kalos[0]["mean_alpha"] == 1.0  # undefined: one class in a clip
    assert ot[0]["mean_ot"] == pytest.approx(1.0) and ot[0]["threshold_alpha"] == pytest.approx(1.0)
    assert geo[0]["distance_alpha"] == pytest.approx(1.0) and geo[0]["classification_alpha"] == pytest.approx(1.0)
    assert ot[1]["alpha_ot"] < ot[0]["alpha_ot"] and geo[1]["distance_alpha"] < geo[0]["distance_alpha"]
    assert ot[1]["mean_ot"] < 1.0


def test_temporal_iou_of_two_known_segments_is_the_label_attribute(fo, make_dataset):
    # [11, 30] and [21, 40] of 100 frames share 10 of 30 frames: IoU 1/3, distance 2/3; the same relative times
    # in a clip of 50 frames ([6, 15], [11, 20]) give the same value; a third clip gives the chance baseline
    ds = make_dataset([
        _clip(fo, 0, 100, {"a": [((11, 30), "run")], "b": [((21, 40), "run")]}),
        _clip(fo, 1, 50, {"a": [((6, 15), "run")], "b": [((11, 20), "run")]}),
        _clip(fo, 2, 80, {"a": [((60, 80), "jump")], "b": [((1, 12), "jump")]}),
    ])
    _call(ds, "compute_geometry_agreement", "g", fields=["a", "b"], distance="iou", threshold=0.2, intervals=False)
    got = ds.values("a.detections.g_distance", unwind=True)
    assert got[0] == pytest.approx(2 / 3) and got[1] == pytest.approx(2 / 3) and got[2] is None
    assert ds.values("b.detections.g_distance", unwind=True)[:2] == pytest.approx([2 / 3, 2 / 3])
    _execute(ds, "compute_kalos", key="k", fields=["a", "b"], tau=0.3)
    units = list(zip(ds.values("a.detections.k_unit", unwind=True), ds.values("b.detections.k_unit", unwind=True)))
    assert units[0][0] == units[0][1] and units[1][0] == units[1][1] and units[2][0] != units[2][1]


@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_consensus_is_a_temporal_detections_field_in_frames(fo, make_dataset, layout):
    ds = make_dataset([
        _clip(fo, 0, 60, {"a": [((10, 50), "run")], "b": [((12, 52), "run")], "c": [((14, 54), "run")]}),
        _clip(fo, 1, 600, {"a": [((1, 100), "jump"), ((400, 600), "run")], "b": [((1, 100), "jump"),
              ((400, 600), "run")], "c": [((1, 100), "jump"), ((400, 600), "run")]}),
    ])
    res = _execute(ds, "compute_consensus", key="m", **(FIELDS if layout == "fields" else ATTRIBUTE))
    assert res["n_consensus"] == 3
    assert ds.get_field("m_consensus").document_type is fo.TemporalDetections
    first, second = ds.values("m_consensus")
    assert [d.support for d in first.detections] == [[12, 52]]  # the mean segment, in frames
    assert sorted(d.support for d in second.detections) == [[1, 100], [400, 600]]  # identical: exactly theirs
    assert all(d.label in ("run", "jump") and d.confidence > 0.5 for d in first.detections + second.detections)
    path = "a.detections" if layout == "fields" else "ann.detections"
    ids = {d.id for d in first.detections + second.detections}
    assert set(ds.values(f"{path}.m_consensus_id", unwind=True)) <= ids


def test_review_queue_of_temporal_consensus_is_one_clip_per_flagged_segment(fo, make_dataset):
    from agreement.fo.methods.consensus import review_view
    from agreement.fo.views.review import queue_key, review_progress

    # four raters; 'extra' drawn by two of them (half the votes: flagged under a majority of one half)
    segs = {r: [((5, 40), "run")] + ([((60, 90), "extra")] if r in "ab" else []) for r in "abcd"}
    ds = make_dataset([_clip(fo, i, 100 + 10 * i, segs) for i in range(4)])
    res = _execute(ds, "compute_consensus", key="m", fields=list("abcd"), method="majority")
    assert res["n_review"] == 4
    shown = _execute(ds, "load_agreement_view", key="m", mode="review")
    queue = review_view(ds, "m")
    assert queue._is_clips and len(queue) == shown["count"] == 4 and queue_key(queue) == "m"
    assert shown["label_ids"] == queue.values("m_consensus.id")
    flagged = ds.filter_labels("m_consensus", fo.ViewField("label") == "extra").values("m_consensus.detections.id",
                                                                                       unwind=True)
    assert sorted(shown["label_ids"]) == sorted(flagged)
    supports = {d.id: d.support for labels in ds.values("m_consensus") for d in labels.detections}
    assert queue.values("support") == [supports[i] for i in shown["label_ids"]]  # each clip is its segment's frames
    _execute(queue, "review_consensus_labels", key="m", decision="reject", label_ids=flagged[:1])
    _execute(queue, "review_consensus_labels", key="m", decision="accept", label_ids=flagged[1:2])
    assert review_progress(ds, "m") == {"flagged": 4, "accepted": 1, "rejected": 1, "pending": 2}
    counts = _execute(ds, "finalize_consensus", key="m")
    assert counts["rejected"] == 1 and counts["kept"] == res["n_consensus"] - 1
    final = ds.values("m_final")
    assert all(isinstance(f, fo.TemporalDetections) for f in final)
    assert flagged[0] not in {d.id for f in final for d in f.detections}


def test_streamed_shards_give_the_same_numbers(clips):
    whole = _call(clips, "compute_kalos", "w", **FIELDS)
    sharded = _call(clips, "compute_kalos", "s", shard_size=3, **FIELDS)
    assert sharded["global_alpha"] == pytest.approx(whole["global_alpha"], abs=1e-12)
    assert clips.values("s_alpha") == pytest.approx(clips.values("w_alpha"), nan_ok=True)


def test_deleting_a_run_removes_its_attributes_from_the_segments(clips):
    _call(clips, "compute_ot_agreement", "o", **ATTRIBUTE)
    assert any(v is not None for v in clips.values("ann.detections.o_cost", unwind=True))
    _execute(clips, "delete_agreement_run", key="o")
    doc = clips._sample_collection.find_one({"ann.detections.o_cost": {"$exists": True}})
    assert doc is None and "o" not in clips.list_runs()


# ------------------------------------------------------------------ bad input
def _untouched(ds, before: set) -> None:
    assert set(ds.get_field_schema()) == before and not ds.list_runs()


def test_a_video_without_a_frame_count_is_named_with_the_fix(fo, make_dataset):
    ds = make_dataset([_clip(fo, 0, 100, {"a": [((1, 10), "x")], "b": [((2, 10), "x")]}),
                       _clip(fo, 1, None, {"a": [((1, 10), "x")], "b": [((2, 10), "x")]})])
    sid = ds.values("id")[1]
    before = set(ds.get_field_schema())
    for name in ("compute_kalos", "compute_consensus"):
        with pytest.raises(Exception, match=rf"sample 'clip01.mp4' \(id {sid}\), field 'a'.*no frame count "
                                             r"\(metadata.total_frame_count\).*compute_metadata\(\).*"
                                             r"fo.VideoMetadata\(total_frame_count=\.\.\., frame_rate=\.\.\.\)"):
            _execute(ds, name, key="bad", fields=["a", "b"])
    _untouched(ds, before)


def test_supports_outside_the_video_follow_box_policy_in_frames(fo, make_dataset):
    ds = make_dataset([_clip(fo, 0, 100, {"a": [((90, 130), "x"), ((5, 20), "x")], "b": [((90, 100), "x"),
                                                                                        ((5, 20), "x")]}),
                       _clip(fo, 1, 50, {"a": [((1, 10), "x")], "b": [((1, 12), "x")]})])
    sid = ds.values("id")[0]
    clipped = _call(ds, "compute_kalos", "c", fields=["a", "b"])
    assert (clipped["clipped_boxes"], clipped["dropped_boxes"]) == (1, 0)
    examples = ds.load_run_results("c").detail["repairs"]["examples"]
    assert len(examples) == 1 and "support [90, 130] clipped to [90, 100] (video of 100 frames)" in examples[0]
    assert ds.values("a.detections.c_unit", unwind=True)[0] == ds.values("b.detections.c_unit", unwind=True)[0]
    dropped = _call(ds, "compute_kalos", "d", fields=["a", "b"], box_policy="drop")
    assert dropped["dropped_boxes"] == 1 and ds.values("a.detections.d_unit", unwind=True)[0] is None
    before = set(ds.get_field_schema())
    with pytest.raises(Exception, match=rf"sample 'clip00.mp4' \(id {sid}\), field 'a', label 'x': support "
                                         r"\[90, 130\] reaches outside the video's frames \[1, 100\]"):
        _execute(ds, "compute_ot_agreement", key="e", fields=["a", "b"], box_policy="error")
    assert set(ds.get_field_schema()) == before and "e" not in ds.list_runs()


def test_a_segment_that_ends_before_it_starts_is_refused(fo, make_dataset):
    ds = make_dataset([_clip(fo, 0, 100, {"a": [((20, 30), "x")], "b": [((20, 30), "x")]}),
                       _clip(fo, 1, 100, {"a": [((1, 10), "x")], "b": [((1, 10), "x")]})])
    # FiftyOne refuses such a support when a label is made; an import that writes documents directly does not
    import gc

    from bson import ObjectId

    gc.collect()  # the samples added are in memory until collected: FiftyOne's reload would validate them
    first = ObjectId(ds.values("id")[0])
    ds._sample_collection.update_one({"_id": first}, {"$set": {"ann.detections.0.support": [30, 20]}})
    before = set(ds.get_field_schema())
    with pytest.raises(Exception, match=r"clip00.mp4.*field 'ann' \(rater 'a'\), label 'x': support \[30, 20\] "
                                         r"starts after it ends"):
        _call(ds, "compute_geometry_agreement", "bad", **ATTRIBUTE)
    _untouched(ds, before)


def test_temporal_segments_on_an_image_dataset_are_refused(fo, make_dataset):
    ds = make_dataset([fo.Sample(filepath=f"/nonexistent/img{i}.jpg",
                                 a=fo.TemporalDetections(detections=[fo.TemporalDetection(label="x", support=[1, 5])]),
                                 b=fo.TemporalDetections(detections=[fo.TemporalDetection(label="x", support=[2, 5])]))
                       for i in range(2)])
    assert ds.media_type == "image"
    before = set(ds.get_field_schema())
    for name in ("compute_kalos", "compute_ot_agreement", "compute_geometry_agreement", "compute_consensus"):
        with pytest.raises(Exception, match=r"\['a', 'b'\] hold TemporalDetections .* holds image media, not "
                                             r"videos"):
            _execute(ds, name, key="bad", fields=["a", "b"])
    _untouched(ds, before)
