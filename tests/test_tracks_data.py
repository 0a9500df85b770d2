"""Tracks (one rater's boxes in one video) and the spatio-temporal IoU; the shared Hypothesis strategies of the
track tests (``videos``, ``relabel``, ``shuffle_rows``) live here and are imported by the other test_tracks_* files."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.geometry.boxes import pairwise_iou
from agreement.methods.tracks import Tracks, VideoTracks, spatio_temporal_iou
from agreement.methods.tracks.data import majority_labels


# ---------------------------------------------------------------------------- shared helpers and strategies
def T(rows, rater=None, video=None) -> Tracks:
    """Tracks from ``(frame, track, label, [x, y, w, h])`` rows."""
    return Tracks.from_records(rows, rater=rater, video=video)


def relabel(t: Tracks, mapping: dict[int, int]) -> Tracks:
    """The same boxes with track ids renamed by ``mapping``."""
    return Tracks(t.frames, t.boxes, np.array([mapping[int(i)] for i in t.track_ids], dtype=np.int64), t.labels)


def shuffle_rows(t: Tracks, seed: int) -> Tracks:
    """The same boxes in another row order."""
    p = np.random.default_rng(seed).permutation(len(t))
    return Tracks(t.frames[p], t.boxes[p], t.track_ids[p], t.labels[p])


@st.composite
def rater_tracks(draw, objects, n_frames: int) -> Tracks:
    """One rater following some of ``objects`` (grid boxes, so ties happen), with gaps, jitter, id changes and a
    spurious track now and then."""
    rows, next_id = [], draw(st.integers(0, 3))
    for obj_boxes, label in objects:
        if not draw(st.booleans()) and draw(st.booleans()):
            continue  # this rater missed the object (a quarter of the time)
        start = draw(st.integers(0, n_frames - 1))
        stop = draw(st.integers(start + 1, n_frames))
        dx, dy = draw(st.integers(-1, 1)), draw(st.integers(-1, 1))
        cut = draw(st.integers(start, stop))  # from here on, a new id (an identity change) unless cut == stop
        lab = label if draw(st.integers(0, 4)) else "other"
        for f in range(start, stop):
            if draw(st.integers(0, 5)) == 0:
                continue  # a missed frame
            x, y, w, h = obj_boxes[f]
            rows.append((f, next_id + (f >= cut), lab, [(x + dx) / 16, (y + dy) / 16, w / 16, h / 16]))
        next_id += 2 + draw(st.integers(0, 2))
    if draw(st.integers(0, 3)) == 0:
        f0 = draw(st.integers(0, n_frames - 1))
        rows += [(f, next_id, "ghost", [0.7, 0.7, 0.1, 0.1]) for f in range(f0, min(n_frames, f0 + 3))]
    return T(rows)


@st.composite
def videos(draw, min_raters: int = 2, max_raters: int = 3, max_objects: int = 3, n_frames: int = 8):
    """``{rater: Tracks}`` of one video: moving grid boxes seen by 2-3 raters."""
    objects = []
    for _ in range(draw(st.integers(1, max_objects))):
        x, y = draw(st.integers(1, 8)), draw(st.integers(1, 8))
        w, h = draw(st.integers(2, 5)), draw(st.integers(2, 5))
        vx = draw(st.integers(-1, 1))
        objects.append(([(x + vx * (f // 3), y, w, h) for f in range(n_frames)], draw(st.sampled_from("ab"))))
    n = draw(st.integers(min_raters, max_raters))
    return {name: draw(rater_tracks(objects, n_frames)) for name in ["r1", "r2", "r3", "r4"][:n]}


def stiou_brute(a: Tracks, b: Tracks) -> np.ndarray:
    """STIoU by its definition, track pair by track pair and frame by frame (ids in increasing order)."""
    ia, ib = np.unique(a.track_ids), np.unique(b.track_ids)
    out = np.zeros((len(ia), len(ib)))
    for k, s in enumerate(ia):
        for m, t in enumerate(ib):
            fs = {int(f): a.boxes[i] for i, f in enumerate(a.frames) if a.track_ids[i] == s}
            ft = {int(f): b.boxes[i] for i, f in enumerate(b.frames) if b.track_ids[i] == t}
            union = set(fs) | set(ft)
            total = sum(pairwise_iou([fs[f]], [ft[f]])[0, 0] for f in set(fs) & set(ft))
            out[k, m] = total / len(union)
    return out


# ---------------------------------------------------------------------------- Tracks
def test_from_records_and_arrays_agree():
    rows = [(3, 7, "car", [0.1, 0.2, 0.3, 0.4]), (1, 7, None, [0.1, 0.2, 0.3, 0.4]), (1, 2, "dog", [0, 0, 1, 1])]
    t = T(rows)
    assert len(t) == 3 and t.n_tracks == 2
    assert t.frames.dtype == np.int64 and t.boxes.shape == (3, 4) and t.labels.tolist() == ["car", None, "dog"]
    u = Tracks(np.array([3.0, 1.0, 1.0]), [r[3] for r in rows], [7, 7, 2], ["car", None, "dog"])
    assert np.array_equal(u.track_ids, t.track_ids) and np.array_equal(u.boxes, t.boxes)
    assert len(Tracks.empty()) == 0 and Tracks.empty().n_tracks == 0
    assert len(Tracks.from_records([])) == 0


@pytest.mark.parametrize("rows, message", [
    ([(0, 1, "a", [np.nan, 0, 0.1, 0.1])], "NaN or infinite"),
    ([(0, 1, "a", [0, np.inf, 0.1, 0.1])], "NaN or infinite"),
    ([(0, 1, "a", [0, 0, -0.1, 0.1])], "negative width or height"),
    ([(-1, 1, "a", [0, 0, 0.1, 0.1])], "frame numbers must be >= 0"),
    ([(2, 5, "a", [0, 0, 0.1, 0.1]), (2, 5, "b", [0.5, 0, 0.1, 0.1])], "two boxes on the same frame"),
])
def test_bad_tracks_are_refused_naming_video_rater_frame_and_track(rows, message):
    with pytest.raises(ValueError, match=message) as err:
        T(rows, rater="ann", video="clip.mp4")
    text = str(err.value)
    assert "video 'clip.mp4'" in text and "rater 'ann'" in text and "frame" in text and "track" in text


def test_a_repeated_track_names_the_frame_and_track():
    with pytest.raises(ValueError, match=r"video 'v', rater 'r', frame 4, track 9"):
        T([(4, 9, "a", [0, 0, 0.1, 0.1]), (5, 9, "a", [0, 0, 0.1, 0.1]), (4, 9, "a", [0, 0, 0.2, 0.1])], "r", "v")


def test_shape_and_type_errors():
    with pytest.raises(ValueError, match=r"\(n, 4\)"):
        Tracks([0], [[0, 0, 1]], [1])
    with pytest.raises(ValueError, match="one entry per box"):
        Tracks([0, 1], [[0, 0, 1, 1]], [1])
    with pytest.raises(ValueError, match="whole numbers"):
        Tracks([0.5], [[0, 0, 1, 1]], [1])
    with pytest.raises(ValueError, match="whole numbers"):
        Tracks([0], [[0, 0, 1, 1]], ["a"])
    with pytest.raises(ValueError, match="labels"):
        Tracks([0], [[0, 0, 1, 1]], [1], ["a", "b"])
    with pytest.raises(ValueError, match="must be a Tracks"):
        VideoTracks.build({"a": [(0, 1, "a", [0, 0, 1, 1])]})


def test_majority_labels_ties_go_to_the_first_label_in_str_order_and_none_does_not_vote():
    track = np.array([0, 0, 0, 1, 1, 2, 3])
    labels = np.array(["b", "a", None, "z", "y", None, "b"], dtype=object)
    assert majority_labels(track, labels, 4).tolist() == ["a", "y", None, "b"]
    t = T([(0, 1, "dog", [0, 0, 1, 1]), (1, 1, "cat", [0, 0, 1, 1]), (2, 1, "dog", [0, 0, 1, 1])])
    assert t.index.label.tolist() == ["dog"]


def test_canonical_order_follows_content_not_ids():
    rows = [(5, 1, "a", [0.1, 0.1, 0.2, 0.2]), (0, 2, "a", [0.5, 0.5, 0.2, 0.2]), (0, 3, "a", [0.2, 0.5, 0.2, 0.2])]
    t = T(rows)
    assert t.index.ids.tolist() == [3, 2, 1]  # first frame, then the first box's x
    u = relabel(t, {1: 30, 2: 10, 3: 20})
    assert u.index.ids.tolist() == [20, 10, 30]
    assert t.index.length.tolist() == [1, 1, 1] and t.index.first.tolist() == [0, 0, 5]


# ---------------------------------------------------------------------------- STIoU
def test_stiou_by_hand():
    a = T([(f, 1, "car", [0.0, 0.0, 0.5, 0.5]) for f in range(4)])
    b = T([(f, 7, "car", [0.25, 0.0, 0.5, 0.5]) for f in range(2, 6)])
    st_, ia, ib = spatio_temporal_iou(a, b)
    # two common frames with IoU 1/3, six frames in the union
    assert ia.tolist() == [1] and ib.tolist() == [7]
    assert st_[0, 0] == pytest.approx(2 * (1 / 3) / 6, abs=1e-15)
    same, _, _ = spatio_temporal_iou(a, a)
    assert same[0, 0] == 1.0
    disjoint, _, _ = spatio_temporal_iou(a, T([(f, 1, "car", [0.0, 0.0, 0.5, 0.5]) for f in range(4, 8)]))
    assert disjoint[0, 0] == 0.0
    empty, ia, ib = spatio_temporal_iou(a, Tracks.empty())
    assert empty.shape == (1, 0)


@settings(max_examples=60, deadline=None)
@given(videos(min_raters=2, max_raters=2))
def test_stiou_equals_its_definition_is_symmetric_and_in_range(video):
    a, b = video["r1"], video["r2"]
    m, ia, ib = spatio_temporal_iou(a, b)
    np.testing.assert_allclose(m, stiou_brute(a, b), rtol=0, atol=1e-12)
    mt, _, _ = spatio_temporal_iou(b, a)
    np.testing.assert_allclose(m, mt.T, rtol=0, atol=1e-15)
    assert ((m >= 0) & (m <= 1 + 1e-12)).all()


def test_stiou_over_many_blocks_of_frames_equals_the_definition():
    """More than 256 boxes: the IoU is computed block by block (and one frame larger than a block)."""
    rng = np.random.default_rng(3)
    rows_a, rows_b = [], []
    for f in range(60):
        n = 300 if f == 30 else 6
        for k in range(n):
            box = [*rng.uniform(0, 0.8, 2), *rng.uniform(0.05, 0.2, 2)]
            rows_a.append((f, k, "x", box))
            if rng.random() < 0.8:
                rows_b.append((f, k + 1000 * (rng.random() < 0.1), "x", [box[0] + 0.01, *box[1:]]))
    a, b = T(rows_a), T(rows_b)
    video = VideoTracks(("a", "b"), (a, b))
    s, t, v = video.track_pairs
    dense = np.zeros((video.n_tracks, video.n_tracks))
    dense[s, t] = v
    block = video.stiou_block(0, 1)
    np.testing.assert_allclose(block, dense[:a.n_tracks, a.n_tracks:], atol=0)
    few = [k for k in range(0, 300, 37)]
    sub_a = T([r for r in rows_a if r[1] in few])
    sub_b = T([r for r in rows_b if r[1] in few])
    m, _, _ = spatio_temporal_iou(sub_a, sub_b)
    np.testing.assert_allclose(m, stiou_brute(sub_a, sub_b), rtol=0, atol=1e-12)
    full, ia, ib = spatio_temporal_iou(a, b)
    pos_a = {int(i): k for k, i in enumerate(ia)}
    pos_b = {int(i): k for k, i in enumerate(ib)}
    ref = stiou_brute(sub_a, sub_b)
    for k, s_ in enumerate(np.unique(sub_a.track_ids)):
        for m_, t_ in enumerate(np.unique(sub_b.track_ids)):
            assert abs(full[pos_a[int(s_)], pos_b[int(t_)]] - ref[k, m_]) < 1e-12


def test_video_index_orders_detections_by_frame_rater_track():
    a = T([(2, 5, "x", [0, 0, 0.1, 0.1]), (1, 5, "x", [0, 0, 0.1, 0.1]), (1, 3, "x", [0.5, 0, 0.1, 0.1])])
    b = T([(1, 0, "x", [0, 0, 0.1, 0.1])])
    v = VideoTracks.build({"b": b, "a": a})
    assert v.raters == ("a", "b")
    assert v.det_frame.tolist() == [1, 1, 1, 2] and v.det_rater.tolist() == [0, 0, 1, 0]
    assert v.track_id.tolist() == [3, 5, 0] and v.track_of(0, 5) == 1  # track 3 ends first
    with pytest.raises(KeyError):
        v.track_of(1, 99)
    p = v.rater_pair(0, 1)
    assert p.i.tolist() == [1] and p.j.tolist() == [0] and p.iou.tolist() == [1.0]  # a: track 3, then 5
    with pytest.raises(ValueError):
        v.rater_pair(0, 0)
