"""Frame runs at the floor (issue 51): the faster paths give the numbers of the plain ones, bit for bit.

* :class:`agreement.methods.tracks.video.VideoTracks` lists every same-frame detection pair of a video at
  once (one ``paired_iou``); its overlaps equal those of the per-block ``pairwise_iou`` it replaced
  (reimplemented here as the oracle), zero-area and duplicate boxes included;
* :func:`agreement.fo.frames.units.chance_groups` reads the units' videos raw; its codes are those of
  ``np.unique`` over the videos' ids as read by ``values()``;
* a frame run on Dask (``backend="dask"``, a local cluster of worker processes that load the frame units
  by name and write straight to the frames) gives the serial run's numbers and frame values.
"""

from __future__ import annotations

import numpy as np
import pytest

from agreement.geometry.boxes import pairwise_iou
from agreement.methods.tracks import video as video_module
from agreement.methods.tracks.data import Tracks
from agreement.methods.tracks.video import VideoTracks


def _overlaps_by_blocks(video: VideoTracks) -> tuple[np.ndarray, ...]:
    """The overlaps as the per-block implementation computed them: one ``pairwise_iou`` per block of
    frames, the same-frame upper-triangle entries kept, IoU sums per block, then over the blocks."""
    frame, track, boxes = video.det_frame, video.det_track, video.det_box
    T = max(video.n_tracks, 1)
    pi, pj, pv, keys, sums, counts = [], [], [], [], [], []
    for start, stop in video_module._same_frame_blocks(frame):
        f = frame[start:stop]
        ii, jj = np.nonzero(np.triu(f[:, None] == f[None, :], 1))
        if not len(ii):
            continue
        iou = pairwise_iou(boxes[start:stop], boxes[start:stop])[ii, jj]
        key = track[start + ii] * T + track[start + jj]
        uk, inv = np.unique(key, return_inverse=True)
        keys.append(uk)
        sums.append(np.bincount(inv, weights=iou, minlength=len(uk)))
        counts.append(np.bincount(inv, minlength=len(uk)))
        hit = iou > 0
        pi.append(ii[hit] + start)
        pj.append(jj[hit] + start)
        pv.append(iou[hit])
    if not keys:
        return (np.zeros(0, np.int64),) * 2 + (np.zeros(0),) + (np.zeros(0, np.int64),) * 2 + (np.zeros(0),
                                                                                              np.zeros(0, np.int64))
    uk, inv = np.unique(np.concatenate(keys), return_inverse=True)
    s = np.bincount(inv, weights=np.concatenate(sums), minlength=len(uk))
    c = np.bincount(inv, weights=np.concatenate(counts), minlength=len(uk)).astype(np.int64)
    return np.concatenate(pi), np.concatenate(pj), np.concatenate(pv), uk // T, uk % T, s, c


def _tracks(rng, rater: str, n_frames: int, n_objects: int, degenerate: bool) -> Tracks:
    frames = np.repeat(np.arange(1, n_frames + 1), n_objects)
    ids = np.tile(np.arange(n_objects), n_frames)
    keep = rng.random(len(frames)) > 0.2
    frames, ids = frames[keep], ids[keep]
    base = rng.random((n_objects, 4)) * 0.5
    boxes = base[ids] + rng.normal(0, 0.02, (len(frames), 4))
    boxes[:, 2:] = np.abs(boxes[:, 2:]) + 0.01
    if degenerate:  # zero-area boxes, and boxes identical to another rater's
        boxes[rng.random(len(frames)) < 0.1, 2] = 0.0
        same = rng.random(len(frames)) < 0.05
        boxes[same] = base[ids[same]]
    return Tracks(frames, boxes, ids, np.array(["c"] * len(frames), dtype=object), rater=rater, video="v")


@pytest.mark.parametrize("block", [256, 7])
def test_video_overlaps_equal_the_per_block_pairwise_iou_bit_for_bit(monkeypatch, block):
    monkeypatch.setattr(video_module, "_BLOCK", block)
    rng = np.random.default_rng(11)
    for trial in range(25):
        n_frames, n_objects, n_raters = int(rng.integers(1, 120)), int(rng.integers(1, 30)), int(rng.integers(1, 4))
        tracks = {f"r{k}": _tracks(rng, f"r{k}", n_frames, n_objects, trial % 2 == 0) for k in range(n_raters)}
        got = VideoTracks.build(tracks)._overlaps
        want = _overlaps_by_blocks(VideoTracks.build(tracks))
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes(), (trial, n_frames)


def test_same_frame_pairs_list_every_pair_of_a_frame_once_in_order():
    frame = np.array([1, 1, 1, 2, 4, 4, 5, 5, 5, 5])
    ii, jj = video_module._same_frame_pairs(frame)
    want = [(i, j) for i in range(len(frame)) for j in range(i + 1, len(frame)) if frame[i] == frame[j]]
    assert list(zip(ii.tolist(), jj.tolist(), strict=True)) == want
    assert [len(x) for x in video_module._same_frame_pairs(np.array([3]))] == [0, 0]


def test_chance_groups_codes_are_those_of_the_videos_ids_sorted(fo):
    from agreement.fo.frames.units import build_frame_units, chance_groups, delete_frame_units
    from agreement.fo.simulate.video import simulate_video_dataset

    ds, sim = simulate_video_dataset(num_videos=5, num_frames=4, num_raters=2, num_objects=2, seed=2,
                                     reference_field=None, media="none")
    units = build_frame_units(ds, [f for f in ds.get_frame_field_schema() if f.startswith("r")], None,
                              "annotator", None)
    try:
        ids, videos = units.values(["id", "sample_id"])
        order = list(reversed(ids))  # any order of the units asked
        of = dict(zip(ids, videos, strict=True))
        _, want = np.unique(np.asarray([str(of[s]) for s in order], dtype=object), return_inverse=True)
        got = chance_groups(units, order)
        assert got is not None
        assert got.dtype == np.int64 and got.tolist() == want.reshape(-1).tolist()
        assert len(set(got.tolist())) == 5
        assert chance_groups(ds, [ds.first().id]) is None  # not frame units: every sample its own group
    finally:
        delete_frame_units(units)
        ds.delete()


@pytest.mark.parametrize("operator", ["compute_kalos", "compute_ot_agreement"])
def test_a_frame_run_on_dask_gives_the_serial_numbers_and_frame_values(fo, operator):
    pytest.importorskip("distributed")
    import fiftyone.operators as foo

    from agreement.fo.runs import load_agreement_results
    from agreement.fo.simulate.video import simulate_video_dataset

    ds, _ = simulate_video_dataset(num_videos=4, num_frames=6, num_raters=3, num_objects=3, seed=4,
                                   reference_field=None, media="none")
    try:
        fields = sorted(f"frames.{f}" for f in ds.get_frame_field_schema() if f.startswith("r"))

        def run(key: str, **params) -> dict:
            res = foo.execute_operator(f"@iaa/agreement/{operator}", ctx=dict(
                view=ds.view(), params=dict(key=key, fields=fields, shard_size=7, **params)))
            assert not res.error, res.error_message or res.error
            return {k: v for k, v in res.result.items() if k != "key"}

        serial = run("ser")
        dask = run("dsk", backend="dask", workers=2)
        shards = load_agreement_results(ds, "dsk")["detail"]["shards"]
        assert shards["backend"] == "dask" and shards["n_shards"] == 4, shards  # 24 frames in shards of 7
        assert repr(sorted(serial.items())) == repr(sorted(dask.items()))
        schema = ds.get_frame_field_schema()
        for suffix in ("alpha", "unit", "score", "cost", "match"):
            for path in [f for f in schema if f == f"ser_{suffix}"]:
                assert ds.values(f"frames.{path}") == ds.values(f"frames.dsk_{suffix}")
        for f in fields:
            flat = [p for p in ds.get_frame_field_schema(flat=True) if p.startswith(f"{f[7:]}.detections.ser_")]
            assert flat, f"the serial run wrote no label attribute on {f}"
            for p in flat:
                attr = p.rsplit(".", 1)[1]
                assert ds.values(f"{f}.detections.{attr}") == ds.values(f"{f}.detections.dsk_{attr[4:]}"), p
        for suffix in ("frames_mean", "frames_worst", "frames_low", "frames_n"):
            assert ds.values(f"ser_{suffix}") == ds.values(f"dsk_{suffix}")
        assert load_agreement_results(ds, "ser")["detail"]["shards"]["backend"] == "serial"
    finally:
        ds.delete()


def test_track_ids_are_looked_up_in_bulk_as_a_dict_of_the_label_ids_would(fo):
    from bson import ObjectId

    from agreement.fo.methods.track_agreement import _TrackIds

    ids = [ObjectId() for _ in range(500)] + [ObjectId(b"\x00" * 11 + b"\x01"), ObjectId(b"\x01" + b"\x00" * 11)]
    tracks = np.random.default_rng(0).integers(0, 50, len(ids)).tolist()
    tracks[5] = None  # a box without a track id
    lookup = _TrackIds(b"".join(i.binary for i in ids), tracks)
    asked = [str(i) for i in reversed(ids)] + ["None", str(ids[3]).upper(), "zz" * 12, str(ObjectId()),
                                               str(ids[7])[:23] + ":"]
    as_dict = {str(i): t for i, t in zip(ids, tracks, strict=True)}
    assert lookup.of(np.asarray(asked, dtype=object)).tolist() == [as_dict.get(a) for a in asked]
    repeated = _TrackIds(ids[0].binary * 2, [1, 2])  # a repeated id: the last value, as a dict keeps it
    assert repeated.of(np.asarray([str(ids[0])], dtype=object)).tolist() == [2]
    assert _TrackIds(b"", []).of(np.asarray(asked, dtype=object)).tolist() == [None] * len(asked)
    # built from the ids as the database's $toString gives them: the same lookups; a string that is no id is
    # left out (with its track id), the others keep theirs
    from agreement.fo.methods.track_agreement import _TrackIdsBuilder

    def of_hex(label_ids, track_ids):
        builder = _TrackIdsBuilder()
        builder.add(label_ids, track_ids)
        return builder.build()

    from_hex = of_hex([str(i) for i in ids], tracks)
    assert from_hex.of(np.asarray(asked, dtype=object)).tolist() == [as_dict.get(a) for a in asked]
    odd = of_hex(["not an id", str(ids[1]), "ZZ" * 12], [7, 8, 9])
    assert odd.of(np.asarray([str(ids[1]), "not an id"], dtype=object)).tolist() == [8, None]
    assert of_hex([], []).of(np.asarray(asked, dtype=object)).tolist() == [None] * len(asked)
    # read in many small lists and converted in chunks (a chunk boundary inside a list, a bad id in a later chunk)
    builder = _TrackIdsBuilder()
    builder.CHUNK = 7
    hexes = [str(i) for i in ids]
    for lo in range(0, len(ids), 5):
        builder.add(hexes[lo:lo + 5] + (["bad"] if lo == 250 else []), tracks[lo:lo + 5] + ([3] if lo == 250 else []))
    assert builder.build().of(np.asarray(asked, dtype=object)).tolist() == [as_dict.get(a) for a in asked]
    with pytest.raises(ValueError, match="2 label ids but 1 track ids"):
        _TrackIdsBuilder().add(hexes[:2], [1])
