"""Temporal segments as boxes in relative time (agreement.geometry.temporal): box IoU and GIoU are temporal IoU
and 1-D GIoU, the conversion back to frames inverts it, supports are checked in frames, and a clip resampled
to another frame rate keeps its boxes up to half a frame. No FiftyOne."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.core.validation import AnnotationError, RepairReport
from agreement.geometry.boxes import pairwise_giou, pairwise_iou
from agreement.geometry.temporal import boxes_to_supports, check_supports, supports_to_boxes, temporal_iou


@st.composite
def clip_segments(draw, max_segments: int = 6):
    """A clip of N frames and segments [first, last] within it."""
    n = draw(st.integers(1, 2000))
    k = draw(st.integers(1, max_segments))
    a = np.array(draw(st.lists(st.integers(1, n), min_size=k, max_size=k)))
    b = np.array(draw(st.lists(st.integers(1, n), min_size=k, max_size=k)))
    return n, np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)


def test_a_segment_is_the_full_height_box_of_its_relative_time():
    boxes = supports_to_boxes([[1, 10], [91, 100], [50, 50]], [100, 100, 100])
    np.testing.assert_allclose(boxes, [[0, 0, 0.1, 1], [0.9, 0, 0.1, 1], [0.49, 0, 0.01, 1]])
    # the first tenth of a 60-frame and of a 600-frame clip are the same box
    np.testing.assert_allclose(supports_to_boxes([[1, 6]], 60), supports_to_boxes([[1, 60]], 600))


def test_known_temporal_iou_and_giou():
    # [11, 30] and [21, 40]: 10 shared frames (21..30) of 30 covered; hull [11, 40] has no gap
    a, b = supports_to_boxes([[11, 30]], 100), supports_to_boxes([[21, 40]], 100)
    assert pairwise_iou(a, b)[0, 0] == pytest.approx(1 / 3)
    assert temporal_iou([[11, 30]], [[21, 40]])[0, 0] == pytest.approx(1 / 3)
    # [1, 10] and [31, 40]: disjoint, hull [1, 40] of 40 frames, 20 of them in neither: GIoU = 0 - 20/40
    c, d = supports_to_boxes([[1, 10]], 100), supports_to_boxes([[31, 40]], 100)
    assert pairwise_giou(c, d)[0, 0] == pytest.approx(-0.5)


@settings(max_examples=200, deadline=None)
@given(clip_segments(), clip_segments())
def test_box_iou_is_temporal_iou_and_giou_is_one_dimensional(first, second):
    n, a = first
    b = np.clip(second[1], 1, n)
    ba, bb = supports_to_boxes(a, n), supports_to_boxes(b, n)
    np.testing.assert_allclose(pairwise_iou(ba, bb), temporal_iou(a, b), atol=1e-12)
    hull = np.maximum(a[:, None, 1], b[None, :, 1]) - np.minimum(a[:, None, 0], b[None, :, 0]) + 1
    inter = np.maximum(0, np.minimum(a[:, None, 1], b[None, :, 1]) - np.maximum(a[:, None, 0], b[None, :, 0]) + 1)
    union = (a[:, 1] - a[:, 0] + 1)[:, None] + (b[:, 1] - b[:, 0] + 1)[None, :] - inter
    np.testing.assert_allclose(pairwise_giou(ba, bb), inter / union - (hull - union) / hull, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(clip_segments())
def test_boxes_back_to_frames_invert_the_conversion(clip):
    n, s = clip
    boxes = supports_to_boxes(s, n)
    assert ((boxes >= 0) & (boxes <= 1 + 1e-12)).all()
    np.testing.assert_array_equal(boxes_to_supports(boxes, n), s)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.data(), st.sampled_from([0.5, 2.0, 25 / 30, 3.0]))
def test_a_resampled_clip_keeps_its_boxes_within_half_a_frame(k, data, factor):
    n = 6 * k  # a whole number of frames at every rate tried: m = n * factor exactly
    m = int(round(n * factor))
    ends = np.array(data.draw(st.lists(st.integers(1, n), min_size=2, max_size=12)))
    s = np.sort(ends[: len(ends) // 2 * 2].reshape(-1, 2), axis=1)
    resampled = boxes_to_supports(supports_to_boxes(s, n), m)  # each end rounded to the new frames
    a, b = supports_to_boxes(s, n), supports_to_boxes(resampled, m)
    err = np.abs(np.stack([a[:, 0] - b[:, 0], a[:, 0] + a[:, 2] - b[:, 0] - b[:, 2]], 1))
    short = np.floor(s[:, 1] * m / n + 0.5) < np.floor((s[:, 0] - 1) * m / n + 0.5) + 1  # under one new frame
    assert (err[~short] <= 0.5 / m + 1e-9).all()
    assert (err[short] <= 1.5 / m + 1e-9).all()  # kept as the one new frame it starts in


def test_boxes_to_supports_clips_to_the_video_and_keeps_one_frame():
    got = boxes_to_supports([[-0.2, 0, 0.5, 1], [0.95, 0, 0.3, 1], [0.5, 0, 0.0, 1]], [10, 10, 10])
    assert got.tolist() == [[1, 3], [10, 10], [6, 6]]


def _where(i: int) -> str:
    return f"sample 'c.mp4', field 'r1', label {i}"


def test_check_supports_clips_drops_or_refuses_supports_outside_the_frames():
    s = np.array([[5, 20], [-3, 4], [95, 130], [120, 140]], float)
    n = np.full(4, 100.0)
    rep = RepairReport()
    fixed, keep = check_supports(s, n, _where, policy="clip", report=rep, raters=["a", "a", "b", "b"])
    assert fixed.tolist() == [[5, 20], [1, 4], [95, 100], [100, 100]] and keep.all()
    assert (rep.clipped_boxes, rep.outside_boxes, rep.dropped_boxes) == (2, 1, 0)
    assert rep.per_rater["b"]["outside_boxes"] == 1
    assert all("support" in e and "frames" in e and "box" not in e for e in rep.examples)
    rep = RepairReport()
    fixed, keep = check_supports(s, n, _where, policy="drop", report=rep, raters=["a", "a", "b", "b"])
    assert keep.tolist() == [True, False, False, False] and rep.dropped_boxes == 3
    with pytest.raises(AnnotationError, match=r"label 1: support \[-3, 4\] reaches outside the video's frames "
                                              r"\[1, 100\] \(3 such segment"):
        check_supports(s, n, _where, policy="error")


@pytest.mark.parametrize("support, match", [
    ([30, 20], r"support \[30, 20\] starts after it ends"),
    ([np.nan, 20], r"two whole frame numbers, got \[nan, 20\]"),
    ([1.5, 20], r"two whole frame numbers"),
])
def test_bad_supports_are_errors_under_every_policy(support, match):
    for policy in ("clip", "drop", "error"):
        with pytest.raises(AnnotationError, match=r"sample .c.mp4., field .r1., label 1: .*" + match):
            check_supports([[1, 2], support], [100, 100], _where, policy=policy)


def test_frame_counts_must_be_positive():
    with pytest.raises(ValueError, match="positive number of frames"):
        supports_to_boxes([[1, 2]], [0])
