"""Simulated video raters written as a FiftyOne video dataset, frame documents in bulk.

Both rater layouts read back through FiftyOne exactly as simulated (boxes,
classes, track ids as ``index``, the rater attribute, explicit absence on
frames without boxes, segments, metadata); the layout and assignment are
recorded; bad input and name clashes are errors that leave nothing behind.
"""

from __future__ import annotations

import numpy as np
import pytest

from agreement.simulate.video import VideoNoise, generate_videos, simulate_video_raters

pytestmark = pytest.mark.fiftyone


@pytest.fixture(scope="module")
def corpus():
    reference = generate_videos(num_videos=3, num_frames=15, num_objects=3, seed=2, min_lifetime=0.6)
    sim = simulate_video_raters(reference, VideoNoise(drift=0.1, miss_rate=0.3, switch_rate=0.05,
                                                      spurious_rate=0.1, segment_jitter=2.0), seed=1)
    return reference, sim


def _frames_of(video):
    """``{frame: [(track, label, box), ...]}`` of a VideoLabels, sorted by track."""
    out = {t: [] for t in range(1, video.num_frames + 1)}
    for t, j, lab, box in zip(video.frames, video.tracks, video.labels, video.boxes):
        out[int(t)].append((int(j), str(lab), list(box)))
    return out


def _read(values, frames, attr=None, who=None):
    """The same mapping from FiftyOne values of one video's frame field (optionally one rater's labels)."""
    out = {}
    for t, dets in zip(frames, values):
        assert dets is not None  # every frame of a labelled video: explicit absence at worst
        rows = [(d.index, d.label, list(d.bounding_box)) for d in dets.detections if who is None or d[attr] == who]
        out[t] = sorted(rows, key=lambda r: r[0])
    return out


@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_both_layouts_read_back_exactly_as_simulated(fo, corpus, layout):
    from agreement.fo.simulate.video import build_video_dataset

    reference, sim = corpus
    ds = build_video_dataset(reference, sim, name=f"vsim-{layout}", layout=layout, reference_field="truth")
    try:
        assert ds.media_type == "video" and len(ds) == 3 and ds.count("frames") == 3 * 15
        frames = ds.values("frames.frame_number")
        for i, ref in enumerate(reference):
            sample = ds[ds.values("id")[i]]
            assert sample.metadata.total_frame_count == 15 and sample.metadata.frame_rate == ref.frame_rate
            assert (sample.metadata.frame_width, sample.metadata.frame_height) == (ref.width, ref.height)
            assert sample.filepath.endswith(ref.name) and sample["raters"] == ["r1", "r2", "r3"]
            truth = _read(ds.values("frames.truth")[i], frames[i])
            assert truth == _frames_of(ref)
            assert [list(d.support) for d in sample["truth_segments"].detections] == ref.segments.tolist()
            for r in sim.raters:
                mine = sim.videos[r][i]
                if layout == "fields":
                    got = _read(ds.values(f"frames.{r}")[i], frames[i])
                    segs = sample[f"{r}_segments"].detections
                else:
                    got = _read(ds.values("frames.labels")[i], frames[i], "annotator", r)
                    segs = [d for d in sample["segments"].detections if d["annotator"] == r]
                assert got == _frames_of(mine)
                assert [list(d.support) for d in segs] == mine.segments.tolist()
                assert [d.label for d in segs] == list(mine.segment_labels)
        empty = sum(1 for v in ds.values("frames.truth") for d in v if not d.detections)
        assert empty > 0  # lifetimes < 1: frames where the reference has no box hold an empty Detections
        info = ds.info["iaa_coco"]
        assert info["layout"] == layout and info["source"] == "simulate_video"
        if layout == "fields":
            assert info["rater_fields"] == {r: f"frames.{r}" for r in sim.raters}
        else:
            assert info["field"] == "frames.labels" and info["rater_attr"] == "annotator"
            assigned = ds.info["iaa_assignment"]
            assert assigned["frames.labels"]["raters_field"] == "raters" and "segments" in assigned
        n_labels = sum(len(v) for vs in sim.videos.values() for v in vs)
        field = "frames.labels" if layout == "attribute" else None
        counted = ds.count(f"{field}.detections") if field else sum(ds.count(f"frames.{r}.detections")
                                                                    for r in sim.raters)
        assert counted == n_labels
        ids = ds.values("frames.truth.detections.id", unwind=True)
        assert len(ids) == len(set(ids)) == sum(len(v) for v in reference)
    finally:
        ds.delete()


def test_simulate_video_dataset_records_its_parameters(fo):
    from agreement.fo.simulate.video import simulate_video_dataset

    ds, sim = simulate_video_dataset("vsim-one-call", num_videos=2, num_frames=10, num_objects=2, num_raters=2,
                                     magnitude=0.5, seed=3, reference_field=None)
    try:
        rec = ds.info["iaa_video_simulation"]
        assert rec["raters"] == ["r1", "r2"] and rec["magnitude"] == 0.5 and rec["counts"] == sim.counts
        assert rec["noise"]["r1"]["miss_rate"] == pytest.approx(1 - 0.95 ** 0.5)
        assert "reference" not in ds.get_frame_field_schema() and ds.count("frames") == 20
        assert ds.count("frames.r2.detections") == sim.counts["r2"]["boxes"]
    finally:
        ds.delete()
    with pytest.raises(ValueError, match="either `noise`"):
        simulate_video_dataset("x", magnitude=1.0, noise=VideoNoise())
    with pytest.raises(ValueError, match="num_raters=3 but 2"):
        simulate_video_dataset("x", noise=[VideoNoise(), VideoNoise()], num_raters=3, num_videos=1)
    with pytest.raises(TypeError, match="unexpected keyword"):
        simulate_video_dataset("x", num_video=1)


def test_bad_input_is_refused_before_anything_is_written(fo, corpus):
    from agreement.fo.simulate.video import build_video_dataset

    reference, sim = corpus
    before = set(fo.list_datasets())
    with pytest.raises(ValueError, match="rater 'r1' has 2 videos for 3"):
        build_video_dataset(reference, {"r1": sim.videos["r1"][:2]}, name="vsim-bad")
    with pytest.raises(ValueError, match="give them in the reference's order"):
        build_video_dataset(reference, {"r1": sim.videos["r1"][::-1]}, name="vsim-bad")
    with pytest.raises(ValueError, match="clash"):
        build_video_dataset(reference, {"truth": sim.videos["r1"]}, name="vsim-bad", reference_field="truth")
    with pytest.raises(ValueError, match="FiftyOne's own frame fields"):
        build_video_dataset(reference, {"frame_number": sim.videos["r1"]}, name="vsim-bad")
    with pytest.raises(ValueError, match="layout"):
        build_video_dataset(reference, sim, name="vsim-bad", layout="columns")
    assert set(fo.list_datasets()) == before
    build_video_dataset(reference, {"a": sim.videos["r1"]}, name="vsim-exists")
    try:
        with pytest.raises(ValueError, match="already exists"):
            build_video_dataset(reference, {"a": sim.videos["r1"]}, name="vsim-exists")
        again = build_video_dataset(reference, {"b": sim.videos["r2"]}, name="vsim-exists", overwrite=True)
        assert "b" in again.get_frame_field_schema() and "a" not in again.get_frame_field_schema()
    finally:
        fo.delete_datasets("vsim-exists*")


def test_object_ids_are_unique_valid_and_fast_to_make(fo):
    from bson import ObjectId

    from agreement.fo.storage.frame_labels import object_ids

    a, b = object_ids(50_000), object_ids(3)
    assert len(set(a + b)) == 50_003 and all(isinstance(x, ObjectId) for x in b)
    assert ObjectId.is_valid(str(a[0])) and a[0].generation_time.year >= 2024
    counters = [int(str(x)[-6:], 16) for x in b]
    assert np.all(np.diff(counters) % (1 << 24) == 1)
