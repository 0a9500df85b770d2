"""Simulated video raters: each error process does what it claims, alone and at its rate.

The synthetic reference (sizes, motion, lifetimes as segments, determinism);
zero noise reproduces the reference bit for bit; box drift grows with its
magnitude and along a track; identity switches, missed frame runs and
spurious tracks at their rates; segment jitter; determinism by seed and
independence of video order; bad input. Pure library: no FiftyOne.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.simulate.video import (
    COUNTS,
    VideoLabels,
    VideoNoise,
    check_video,
    generate_videos,
    simulate_video_rater,
    simulate_video_raters,
)


@pytest.fixture(scope="module")
def reference() -> list[VideoLabels]:
    return generate_videos(num_videos=40, num_frames=200, num_objects=5, seed=7)


def _same(a: VideoLabels, b: VideoLabels) -> bool:
    return (np.array_equal(a.frames, b.frames) and np.array_equal(a.tracks, b.tracks)
            and np.array_equal(a.boxes, b.boxes) and list(a.labels) == list(b.labels)
            and np.array_equal(a.segments, b.segments) and list(a.segment_labels) == list(b.segment_labels))


# ----------------------------------------------------------------------------- the synthetic reference
def test_synthetic_videos_have_every_box_in_the_frame_and_move_smoothly():
    videos = generate_videos(num_videos=5, num_frames=120, num_objects=4, seed=1)
    assert [v.name for v in videos] == [f"video_{i:04d}.mp4" for i in range(1, 6)]
    for v in videos:
        check_video(v)
        assert len(v) == 120 * 4 and v.num_tracks == 4 and set(v.tracks) == {1, 2, 3, 4}
        assert np.all(v.boxes >= 0) and np.all(v.boxes[:, :2] + v.boxes[:, 2:] <= 1 + 1e-12)
        assert np.array_equal(v.segments, [[1, 120]] * 4)
        for j in range(1, 5):
            xy = v.boxes[v.tracks == j, :2]
            assert np.abs(np.diff(xy, axis=0)).max() < 0.05  # smooth: a few thousandths per frame
            assert len(set(v.labels[v.tracks == j])) == 1


def test_synthetic_lifetimes_are_the_segments_and_videos_do_not_depend_on_their_count():
    short = generate_videos(num_videos=3, num_frames=100, num_objects=6, seed=4, min_lifetime=0.3)
    long = generate_videos(num_videos=8, num_frames=100, num_objects=6, seed=4, min_lifetime=0.3)
    for a, b in zip(short, long):
        assert _same(a, b)
    for v in short:
        for j, (first, last) in enumerate(v.segments, start=1):
            frames = v.frames[v.tracks == j]
            assert frames.min() == first and frames.max() == last and len(frames) == last - first + 1
            assert last - first + 1 >= 30
    assert not _same(generate_videos(num_videos=1, seed=5)[0], generate_videos(num_videos=1, seed=6)[0])


# ----------------------------------------------------------------------------- zero noise, determinism
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 31), lifetime=st.floats(0.1, 1.0))
def test_zero_noise_reproduces_the_reference_exactly(seed, lifetime):
    for v in generate_videos(num_videos=3, num_frames=60, num_objects=4, seed=seed % 1000, min_lifetime=lifetime):
        out, counts = simulate_video_rater(v, VideoNoise(), seed=seed)
        assert _same(out, v)
        assert np.array_equal(out.sources, np.arange(len(v)))
        assert counts == {**dict.fromkeys(COUNTS, 0), "boxes": len(v), "segments": len(v.segments)}
    assert _same(simulate_video_rater(v, VideoNoise.scaled(0.0), seed=seed)[0], v)


def test_same_seed_same_raters_other_seed_or_rater_differs_and_video_order_does_not_matter(reference):
    noise = VideoNoise.scaled(1.0)
    a = simulate_video_raters(reference[:10], noise, num_raters=2, seed=3)
    b = simulate_video_raters(reference[:10], noise, num_raters=2, seed=3)
    rev = simulate_video_raters(reference[:10][::-1], noise, num_raters=2, seed=3)
    other = simulate_video_raters(reference[:10], noise, num_raters=2, seed=4)
    assert a.raters == ("r1", "r2") and a.counts == b.counts
    for r in a.raters:
        for x, y, z in zip(a.videos[r], b.videos[r], rev.videos[r][::-1]):
            assert _same(x, y) and _same(x, z)
    assert not all(_same(x, y) for x, y in zip(a.videos["r1"], other.videos["r1"]))
    assert not all(_same(x, y) for x, y in zip(a.videos["r1"], a.videos["r2"]))


# ----------------------------------------------------------------------------- drift
def _centre_offsets(ref: VideoLabels, out: VideoLabels) -> np.ndarray:
    """``(n, 2)`` centre offsets of each kept box in its reference box's sizes."""
    src = ref.boxes[out.sources]
    c_ref = src[:, :2] + src[:, 2:] / 2
    c_out = out.boxes[:, :2] + out.boxes[:, 2:] / 2
    return (c_out - c_ref) / src[:, 2:]


def test_drift_grows_with_its_magnitude_and_along_the_track(reference):
    videos = reference[:20]
    means = []
    for drift in (0.02, 0.05, 0.1, 0.2):
        offs = [_centre_offsets(v, simulate_video_rater(v, VideoNoise(drift=drift), seed=0)[0]) for v in videos]
        means.append(float(np.mean(np.abs(np.concatenate(offs)))))
    assert means == sorted(means) and means[-1] > 5 * means[0]
    # the same draws at every magnitude: far from the borders the offset is exactly proportional
    assert means[1] / means[0] == pytest.approx(2.5, rel=0.15)
    # after t frames the walk's standard deviation is ~ drift sqrt(t / 100)
    v = reference[0]
    stack = []
    for seed in range(30):
        out = simulate_video_rater(v, VideoNoise(drift=0.05, smoothing=0.0), seed=seed)[0]
        stack.append(_centre_offsets(v, out).reshape(-1, v.num_tracks, 2))  # every track in every frame
    offs = np.stack(stack)  # (seeds, frames, tracks, 2)
    early, late = offs[:, 24].std(), offs[:, 99].std()
    assert late == pytest.approx(0.05, rel=0.25) and early == pytest.approx(0.05 * math.sqrt(0.25), rel=0.25)


def test_scale_drift_changes_sizes_around_the_same_centre():
    v = generate_videos(num_videos=1, num_frames=100, num_objects=3, seed=2)[0]
    out, counts = simulate_video_rater(v, VideoNoise(scale_drift=0.1), seed=1)
    inside = (out.boxes[:, :2] > 0).all(axis=1) & (out.boxes[:, :2] + out.boxes[:, 2:] < 1).all(axis=1)
    ref = v.boxes[out.sources]
    ratio = np.log(out.boxes[:, 2:] / ref[:, 2:])
    assert np.abs(ratio).max() > 0.01
    np.testing.assert_allclose((out.boxes[:, :2] + out.boxes[:, 2:] / 2)[inside],
                               (ref[:, :2] + ref[:, 2:] / 2)[inside], atol=1e-12)
    assert counts["boxes"] + counts["drifted_out"] == len(v)


def test_drifted_boxes_stay_in_the_frame():
    v = generate_videos(num_videos=3, num_frames=150, num_objects=5, seed=11)
    sim = simulate_video_raters(v, VideoNoise(drift=1.0, scale_drift=0.5), num_raters=1, seed=0)
    out = sim.videos["r1"]
    assert sim.counts["r1"]["clipped"] > 0
    for o in out:
        check_video(o)
        assert np.all(o.boxes >= 0) and np.all(o.boxes[:, :2] + o.boxes[:, 2:] <= 1 + 1e-12)
        assert np.all(o.boxes[:, 2:] > 0)


# ----------------------------------------------------------------------------- identity switches
def _switch_frames(ref: VideoLabels, out: VideoLabels) -> int:
    """How many (track, frame) steps change the rater's id of a reference track (each switch changes two)."""
    ref_track = ref.tracks[out.sources]
    changes = 0
    for j in np.unique(ref_track):
        ids = out.tracks[ref_track == j]
        changes += int(np.count_nonzero(np.diff(ids)))
    return changes


def test_identity_switches_at_their_rate_exchange_two_present_tracks(reference):
    rate = 0.004
    sim = simulate_video_raters(reference, VideoNoise(switch_rate=rate), num_raters=1, seed=5)
    counts = sim.counts["r1"]
    n = sum(len(v) for v in reference)  # every box shares its frame with 4 others
    expected, sd = rate * n, math.sqrt(rate * (1 - rate) * n)
    assert abs(counts["switches"] - expected) < 4 * sd and counts["switches_without_partner"] == 0
    for ref, out in zip(reference, sim.videos["r1"]):
        assert np.array_equal(out.frames, ref.frames)
        bounds = ref.frame_bounds()
        for t in range(1, ref.num_frames + 1, 17):  # a permutation of the ids in every frame
            assert sorted(out.tracks[bounds[t - 1]:bounds[t]]) == sorted(ref.tracks[bounds[t - 1]:bounds[t]])
    changes = sum(_switch_frames(r, o) for r, o in zip(reference, sim.videos["r1"]))
    assert 0 < changes <= 2 * counts["switches"]
    fewer = simulate_video_raters(reference, VideoNoise(switch_rate=rate / 4), num_raters=1, seed=5)
    assert fewer.counts["r1"]["switches"] < counts["switches"]


def test_extreme_rates_stay_well_defined():
    v = generate_videos(num_videos=2, num_frames=300, num_objects=3, seed=1)
    for rate, missed in ((1e-300, 0), (5e-324, 0), (1 - 1e-16, len(v[0]))):
        out, c = simulate_video_rater(v[0], VideoNoise(miss_rate=rate, miss_length=1e6), seed=0)
        check_video(out)
        assert c["missed"] == missed


def test_a_lonely_track_cannot_switch():
    v = generate_videos(num_videos=2, num_frames=100, num_objects=1, seed=0)
    sim = simulate_video_raters(v, VideoNoise(switch_rate=0.5), num_raters=1, seed=0)
    assert sim.counts["r1"]["switches"] == 0 and sim.counts["r1"]["switches_without_partner"] > 50
    assert all(np.array_equal(o.tracks, r.tracks) for o, r in zip(sim.videos["r1"], v))


# ----------------------------------------------------------------------------- missed frames
def _runs(mask: np.ndarray) -> list[int]:
    padded = np.concatenate([[False], mask, [False]])
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    return list(edges[1::2] - edges[0::2])


@pytest.mark.parametrize("rate, length", [(0.2, 10.0), (0.05, 4.0), (0.95, 1.0)])
def test_missed_frames_at_their_rate_in_runs_of_their_length(reference, rate, length):
    sim = simulate_video_raters(reference, VideoNoise(miss_rate=rate, miss_length=length), num_raters=1, seed=2)
    n = sum(len(v) for v in reference)
    assert sim.counts["r1"]["missed"] == n - sim.counts["r1"]["boxes"]
    assert sim.counts["r1"]["missed"] / n == pytest.approx(rate, rel=0.12)
    runs = []
    for ref, out in zip(reference, sim.videos["r1"]):
        kept = np.zeros(len(ref), dtype=bool)
        kept[out.sources] = True
        for j in np.unique(ref.tracks):
            runs += _runs(~kept[ref.tracks == j])
    if length > 1:  # runs cut at a track's ends are a little shorter
        assert np.mean(runs) == pytest.approx(length, rel=0.2)


# ----------------------------------------------------------------------------- spurious tracks
def test_spurious_tracks_at_their_rate_with_new_ids_and_reference_classes(reference):
    rate, length = 0.02, 8.0
    sim = simulate_video_raters(reference, VideoNoise(spurious_rate=rate, spurious_length=length),
                                num_raters=1, seed=9)
    c = sim.counts["r1"]
    expected = rate * sum(v.num_frames for v in reference)
    assert abs(c["spurious_tracks"] - expected) < 4 * math.sqrt(expected)
    assert c["spurious_boxes"] / c["spurious_tracks"] == pytest.approx(length, rel=0.2)
    classes = {str(x) for v in reference for x in v.labels}
    for ref, out in zip(reference, sim.videos["r1"]):
        check_video(out)
        fake = out.sources == -1
        assert np.all(out.tracks[fake] > ref.tracks.max()) and set(out.labels[fake]) <= classes
        assert np.all(out.boxes[fake] >= 0) and np.all(out.boxes[fake, :2] + out.boxes[fake, 2:] <= 1 + 1e-12)
        for j in np.unique(out.tracks[fake]):  # consecutive frames
            assert np.all(np.diff(out.frames[out.tracks == j]) == 1)


# ----------------------------------------------------------------------------- segments
def test_segment_jitter_moves_ends_by_its_standard_deviation_within_the_video():
    videos = generate_videos(num_videos=60, num_frames=200, num_objects=5, seed=3, min_lifetime=0.2)
    sim = simulate_video_raters(videos, VideoNoise(segment_jitter=4.0), num_raters=1, seed=1)
    shifts = []
    for ref, out in zip(videos, sim.videos["r1"]):
        check_video(out)
        assert np.all(out.segments >= 1) and np.all(out.segments <= ref.num_frames)
        assert np.all(out.segments[:, 0] <= out.segments[:, 1]) and list(out.segment_labels) == list(ref.segment_labels)
        interior = (ref.segments[:, 0] > 20) & (ref.segments[:, 1] < ref.num_frames - 20) \
            & (ref.segments[:, 1] - ref.segments[:, 0] > 20)
        shifts.append((out.segments - ref.segments)[interior].ravel())
    shifts = np.concatenate(shifts)
    assert len(shifts) > 100 and shifts.std() == pytest.approx(4.0, rel=0.15) and abs(shifts.mean()) < 1.0
    # boxes are untouched by segment jitter
    assert all(_same(dataclasses.replace(o, segments=r.segments), r) for o, r in zip(sim.videos["r1"], videos))


# ----------------------------------------------------------------------------- presets and properties
def test_the_scaled_preset_degrades_more_at_higher_magnitude(reference):
    low = simulate_video_raters(reference[:10], VideoNoise.scaled(0.5), num_raters=1, seed=0).counts["r1"]
    high = simulate_video_raters(reference[:10], VideoNoise.scaled(2.0), num_raters=1, seed=0).counts["r1"]
    for name in ("missed", "spurious_tracks"):
        assert high[name] > low[name]
    assert VideoNoise.scaled(1.0).miss_rate == pytest.approx(0.05)


@settings(max_examples=15, deadline=None)
@given(drift=st.floats(0, 2), scale=st.floats(0, 1), switch=st.floats(0, 1), miss=st.floats(0, 0.99),
       miss_len=st.floats(1, 50), spurious=st.floats(0, 0.5), jitter=st.floats(0, 50), seed=st.integers(0, 99))
def test_any_noise_gives_valid_videos_whose_counts_add_up(drift, scale, switch, miss, miss_len, spurious,
                                                          jitter, seed):
    noise = VideoNoise(drift=drift, scale_drift=scale, switch_rate=switch, miss_rate=miss, miss_length=miss_len,
                       spurious_rate=spurious, segment_jitter=jitter)
    for v in generate_videos(num_videos=2, num_frames=40, num_objects=3, seed=seed, min_lifetime=0.5):
        out, c = simulate_video_rater(v, noise, seed=seed)
        check_video(out)
        assert np.all(out.boxes >= 0) and np.all(out.boxes[:, :2] + out.boxes[:, 2:] <= 1 + 1e-12)
        assert c["boxes"] == len(v) - c["missed"] - c["drifted_out"] + c["spurious_boxes"] == len(out)
        assert np.array_equal(np.sort(out.sources[out.sources >= 0]), np.unique(out.sources[out.sources >= 0]))


# ----------------------------------------------------------------------------- bad input
def test_bad_input_is_named():
    v = generate_videos(num_videos=1, num_frames=10, num_objects=2, seed=0)[0]
    with pytest.raises(ValueError, match="video 'video_0001.mp4', frame 11"):
        check_video(dataclasses.replace(v, frames=np.where(v.frames == 10, 11, v.frames)))
    with pytest.raises(ValueError, match="track 1 has two boxes"):
        check_video(dataclasses.replace(v, tracks=np.ones(len(v), dtype=int)))
    boxes = v.boxes.copy()
    boxes[3, 2] = np.nan
    with pytest.raises(ValueError, match="not a finite"):
        simulate_video_rater(dataclasses.replace(v, boxes=boxes), VideoNoise())
    with pytest.raises(ValueError, match=r"segment 0 \[5, 2\]"):
        check_video(dataclasses.replace(v, segments=[[5, 2], [1, 10]]))
    with pytest.raises(ValueError, match="not sorted"):
        check_video(v.take(np.arange(len(v))[::-1]))
    assert _same(v.take(np.arange(len(v))[::-1]).sorted(), v)
    for bad in ({"drift": -1}, {"miss_rate": 1.0}, {"switch_rate": 1.5}, {"miss_length": 0.5},
                {"spurious_rate": float("nan")}):
        with pytest.raises(ValueError, match="VideoNoise"):
            VideoNoise(**bad)
    with pytest.raises(ValueError, match="num_raters=3 but 2"):
        simulate_video_raters([v], [VideoNoise(), VideoNoise()], num_raters=3)
    with pytest.raises(ValueError, match="same name"):
        simulate_video_raters([v, v], VideoNoise())
    with pytest.raises(ValueError, match="seed"):
        simulate_video_rater(v, VideoNoise(), seed=-1)
    with pytest.raises(ValueError, match="num_frames"):
        generate_videos(num_videos=1, num_frames=0)
    sim = simulate_video_raters([v], {"alice": VideoNoise(), "bob": VideoNoise(drift=0.1)})
    assert sim.raters == ("alice", "bob") and _same(sim.videos["alice"][0], v)
