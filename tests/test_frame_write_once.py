"""Frame runs write their results once (issue 51, "write once, write raw"): every frame document gets at most
one bulk ``UpdateOne`` (straight into the frames collection, no temporary copy merged back, never
``set_values``), the per-video aggregates one update per video computed in memory; the numbers are those
MongoDB's own grouping of the frames gives; a failed run leaves nothing on the frames, and FiftyOne's
``rename_run``/``delete_run`` still clean up.

The database calls are counted by wrapping pymongo's ``Collection`` write methods and FiftyOne's
``set_values`` for the duration of a run."""

from __future__ import annotations

from collections import defaultdict

import pytest

KEY = "wo"


@pytest.fixture
def video(fo):
    from agreement.fo.simulate.video import simulate_video_dataset

    ds, _ = simulate_video_dataset(num_videos=4, num_frames=8, num_raters=3, num_objects=3, seed=5)
    yield ds
    ds.delete()


def _fields(ds) -> list[str]:
    return sorted(f"frames.{f}" for f in ds.get_frame_field_schema() if f.startswith("r"))


def _run(ds, operator: str, key: str = KEY, view=None, **params):
    import fiftyone.operators as foo

    return foo.get_operator(f"@iaa/agreement/{operator}")(view if view is not None else ds, key=key,
                                                          fields=_fields(ds), **params)


class _Recorder:
    """Wraps the write methods of every pymongo ``Collection`` and FiftyOne's ``set_values``."""

    def __init__(self, monkeypatch) -> None:
        from pymongo.collection import Collection

        import fiftyone.core.collections as focl

        self.bulk: dict[str, list] = defaultdict(list)  # collection name -> every op sent
        self.calls: dict[str, list[str]] = defaultdict(list)  # collection name -> other write methods called
        self.set_values: list[str] = []
        for name in ("update_one", "update_many", "replace_one", "insert_many", "insert_one"):
            monkeypatch.setattr(Collection, name, self._wrap(getattr(Collection, name), name))
        bulk_write, aggregate, set_values = Collection.bulk_write, Collection.aggregate, focl.SampleCollection.set_values

        def bulk(coll, ops, *args, **kwargs):
            ops = list(ops)
            self.bulk[coll.name].extend(ops)
            return bulk_write(coll, ops, *args, **kwargs)

        def agg(coll, pipeline, *args, **kwargs):
            for stage in pipeline or []:
                if "$merge" in stage or "$out" in stage:
                    target = (stage.get("$merge") or {}).get("into") if "$merge" in stage else stage["$out"]
                    self.calls[str(target)].append("aggregate $merge/$out")
            return aggregate(coll, pipeline, *args, **kwargs)

        def values(samples, field_name, *args, **kwargs):
            self.set_values.append(field_name)
            return set_values(samples, field_name, *args, **kwargs)

        monkeypatch.setattr(Collection, "bulk_write", bulk)
        monkeypatch.setattr(Collection, "aggregate", agg)
        monkeypatch.setattr(focl.SampleCollection, "set_values", values)

    def _wrap(self, method, name: str):
        def wrapped(coll, *args, **kwargs):
            self.calls[coll.name].append(name)
            return method(coll, *args, **kwargs)

        return wrapped


def _frame_docs_with_results(ds, key: str) -> set:
    """Ids of the frame documents holding a value or a label attribute of run ``key``."""
    out = set()
    for doc in ds._frame_collection.find({}):
        held = any(k.startswith(f"{key}_") for k in doc)
        for value in doc.values():
            if isinstance(value, dict) and isinstance(value.get("detections"), list):
                held |= any(a.startswith(f"{key}_") for d in value["detections"] for a in d)
        if held:
            out.add(doc["_id"])
    return out


@pytest.mark.parametrize("operator", ["compute_kalos", "compute_consensus"])
def test_each_frame_document_is_written_once_in_bulk_and_never_through_set_values(fo, video, monkeypatch, operator):
    rec = _Recorder(monkeypatch)
    _run(video, operator)
    monkeypatch.undo()
    frames, samples = video._frame_collection_name, video._sample_collection_name
    assert not [f for f in rec.set_values if f.startswith("frames.") or f.startswith(f"{KEY}_")], rec.set_values
    assert not rec.calls.get(frames), f"frames written other than by one bulk pass: {rec.calls.get(frames)}"
    ids = [op._filter["_id"] for op in rec.bulk.get(frames, [])]
    assert all(type(op).__name__ == "UpdateOne" for op in rec.bulk.get(frames, []))
    assert len(ids) == len(set(ids)), "a frame document was updated twice"
    assert set(ids) == _frame_docs_with_results(video, KEY)
    videos = [op._filter["_id"] for op in rec.bulk.get(samples, [])]
    assert sorted(map(str, videos)) == sorted(video.values("id")), "one update per video for its aggregates"


def test_per_video_aggregates_are_mongodb_grouping_of_the_frame_scores(fo, video):
    _run(video, "compute_kalos")
    score = video.get_run_info(KEY).config.params["frames"]
    f = f"${KEY}_{score['suffix']}"
    threshold = score["threshold"]
    rows = video._frame_collection.aggregate([{"$group": {
        "_id": "$_sample_id", "mean": {"$avg": f}, "worst": {"$min": f}, "n": {"$sum": {"$cond": [{"$isNumber": f}, 1, 0]}},
        "low": {"$sum": {"$cond": [{"$and": [{"$isNumber": f}, {"$lt": [f, threshold]}]}, 1, 0]}}}}])
    got = {str(i): (m, w, lo, n) for i, m, w, lo, n in zip(*video.values(
        ["id", f"{KEY}_frames_mean", f"{KEY}_frames_worst", f"{KEY}_frames_low", f"{KEY}_frames_n"]))}
    want = {str(r["_id"]): (r["mean"] if r["n"] else None, r["worst"] if r["n"] else None,
                            r["low"] / r["n"] if r["n"] else None, r["n"]) for r in rows}
    assert got == want  # bit for bit: no tolerance
    assert any(v[0] is not None for v in got.values())


def _by_label(ds, list_path: str, attr: str) -> dict:
    """``{label id: value}`` of a label attribute over every frame of ``ds``."""
    ids = ds.values(f"{list_path}.id", unwind=True)
    return dict(zip(ids, ds.values(f"{list_path}.{attr}", unwind=True), strict=True))


def test_a_filtered_view_writes_each_value_on_its_own_label(fo, video):
    """A view that leaves labels out: the values land on the labels they were computed for (matched by id,
    not by their position in the view's lists), exactly as a run on a copy holding only those labels."""
    from fiftyone import ViewField as F

    first = _fields(video)[0]
    classes = sorted(set(video.values(f"{first}.detections.label", unwind=True)))
    view = video.filter_labels(first, F("label") != classes[0], only_matches=False)
    copy = view.clone()
    try:
        _run(video, "compute_ot_agreement", key="filtered", view=view)
        _run(copy, "compute_ot_agreement", key="filtered")
        list_path = f"{first}.detections"
        for attr in ("filtered_cost", "filtered_match"):
            got, want = _by_label(video, list_path, attr), _by_label(copy, list_path, attr)
            left_out = set(got) - set(want)
            assert left_out and all(got[i] is None for i in left_out)
            assert {i: got[i] for i in want} == want and any(x is not None for x in want.values())
    finally:
        copy.delete()


def test_a_failed_frame_run_leaves_nothing_on_the_frames(fo, video, monkeypatch):
    import agreement.fo.frames.aggregates as aggregates

    def boom(*args, **kwargs):
        raise RuntimeError("planted failure after the frames were written")

    monkeypatch.setattr(aggregates, "video_aggregates", boom)
    with pytest.raises(Exception, match="planted failure"):
        _run(video, "compute_kalos")
    monkeypatch.undo()
    assert KEY not in video.list_runs()
    assert not _frame_docs_with_results(video, KEY)
    assert not [p for p in video.get_frame_field_schema(flat=True) if KEY + "_" in p]
    assert not [n for n in fo.list_datasets() if n.startswith("iaa-frames-")]


def test_rename_and_delete_run_clean_up_the_frames(fo, video):
    _run(video, "compute_consensus")
    assert _frame_docs_with_results(video, KEY)
    video.rename_run(KEY, "wo2")
    assert not _frame_docs_with_results(video, KEY) and _frame_docs_with_results(video, "wo2")
    video.delete_run("wo2")
    assert not _frame_docs_with_results(video, "wo2")
    assert not [p for p in video.get_frame_field_schema(flat=True) if "wo2_" in p]
    assert not [p for p in video.get_field_schema() if p.startswith("wo2_")]


def test_finalizing_a_frame_consensus_writes_each_frame_once(fo, video, monkeypatch):
    from agreement.fo.methods.consensus import finalize_consensus

    _run(video, "compute_consensus")
    labels = video.values(f"frames.{KEY}_consensus.detections", unwind=True)
    video.set_label_values(f"frames.{KEY}_consensus.detections.{KEY}_review", {x.id: True for x in labels[::2]})
    video.select_labels(ids=[x.id for x in labels[::4]]).tag_labels("rejected")
    rec = _Recorder(monkeypatch)
    counts = finalize_consensus(video, KEY)
    monkeypatch.undo()
    assert counts["rejected"] == len(labels[::4]) and counts["kept"] == len(labels) - counts["rejected"]
    assert not [f for f in rec.set_values if f.startswith("frames.")]
    ids = [op._filter["_id"] for op in rec.bulk.get(video._frame_collection_name, [])]
    assert len(ids) == len(set(ids)) == len(video.values("frames.id", unwind=True))
    kept = video.values(f"frames.{KEY}_final.detections", unwind=True)
    assert len(kept) == counts["kept"] and not any("rejected" in x.tags for x in kept)
