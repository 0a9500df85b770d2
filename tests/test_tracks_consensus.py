"""Consensus tracks: weighted mean boxes, majority classes and confidences per track unit and frame."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from agreement.methods.tracks import Tracks, consensus_tracks, track_units
from test_tracks_data import T, videos


def rows(track, frames, x, label="car"):
    return [(f, track, label, [x, 0.1, 0.2, 0.2]) for f in frames]


def test_identical_raters_give_their_tracks_with_full_confidence():
    a = T(rows(1, range(5), 0.1) + rows(2, range(5), 0.5, "dog"))
    c = consensus_tracks({"a": a, "b": a, "c": a})
    assert c.tracks.n_tracks == 2 and len(c.tracks) == 10
    np.testing.assert_allclose(np.sort(c.tracks.boxes[:, 0]), np.sort(a.boxes[:, 0]))
    assert (c.confidence == 1.0).all() and (c.n_raters == 3).all() and (c.unit_raters == 3).all()
    assert sorted(set(c.tracks.labels.tolist())) == ["car", "dog"]


def test_mean_box_majority_class_and_confidence_by_hand():
    a = T(rows(1, range(4), 0.10, "car"))
    b = T(rows(1, range(4), 0.12, "car"))
    c = T(rows(1, range(3), 0.11, "truck"))
    d = Tracks.empty()
    out = consensus_tracks({"a": a, "b": b, "c": c, "d": d})
    t = out.tracks
    assert t.n_tracks == 1
    first = np.flatnonzero(t.frames == 0)[0]
    assert t.boxes[first, 0] == pytest.approx((0.10 + 0.12 + 0.11) / 3)
    assert t.labels[first] == "car" and out.confidence[first] == pytest.approx(2 / 4)  # 4 assigned raters
    last = np.flatnonzero(t.frames == 3)[0]
    assert t.boxes[last, 0] == pytest.approx(0.11) and out.n_raters[last] == 2
    weighted = consensus_tracks({"a": a, "b": b, "c": c, "d": d}, weights={"a": 1, "b": 1, "c": 3, "d": 1})
    w0 = np.flatnonzero(weighted.tracks.frames == 0)[0]
    assert weighted.tracks.labels[w0] == "truck" and weighted.confidence[w0] == pytest.approx(3 / 6)
    assert weighted.tracks.boxes[w0, 0] == pytest.approx((0.10 + 0.12 + 3 * 0.11) / 5)


def test_quorum_and_min_raters():
    a = T(rows(1, range(10), 0.1) + rows(2, range(3), 0.7))
    b = T(rows(1, range(5), 0.1))
    c = T(rows(1, range(3), 0.1))
    video = {"a": a, "b": b, "c": c}
    every = consensus_tracks(video, quorum=1.0, tau=0.25)
    assert sorted(every.tracks.frames[every.unit_raters == 3].tolist()) == [0, 1, 2]
    half = consensus_tracks(video, quorum=0.5, tau=0.25)
    assert sorted(half.tracks.frames[half.unit_raters == 3].tolist()) == [0, 1, 2, 3, 4]
    assert (half.unit_raters == 1).sum() == 3  # the object only rater a saw: 1 of its 1 rater
    two = consensus_tracks(video, min_raters=2, tau=0.25)
    assert (two.unit_raters >= 2).all() and len(two.tracks) == 5


def test_ties_go_to_the_first_label_and_unlabelled_boxes_agree():
    a = T(rows(1, range(2), 0.1, "zebra"))
    b = T(rows(1, range(2), 0.1, "ant"))
    out = consensus_tracks({"a": a, "b": b})
    assert out.tracks.labels.tolist() == ["ant", "ant"] and (out.confidence == 0.5).all()
    n = Tracks(a.frames, a.boxes, a.track_ids)
    out = consensus_tracks({"a": n, "b": n})
    assert out.tracks.labels.tolist() == [None, None] and (out.confidence == 1.0).all()


def test_bad_arguments():
    a = T(rows(1, range(2), 0.1))
    with pytest.raises(ValueError, match="quorum"):
        consensus_tracks({"a": a}, quorum=0)
    with pytest.raises(ValueError, match="min_raters"):
        consensus_tracks({"a": a}, min_raters=0)
    with pytest.raises(ValueError, match="no weight"):
        consensus_tracks({"a": a, "b": a}, weights={"a": 1.0})
    with pytest.raises(ValueError, match="positive and finite"):
        consensus_tracks({"a": a, "b": a}, weights={"a": 1.0, "b": -1})
    with pytest.raises(ValueError, match="units are of raters"):
        consensus_tracks({"a": a, "b": a}, units=track_units({"a": a}))
    assert len(consensus_tracks({"a": Tracks.empty()}).tracks) == 0


@settings(max_examples=50, deadline=None)
@given(videos())
def test_consensus_is_well_formed(video):
    units = track_units(video)
    out = consensus_tracks(video, units=units)
    t = out.tracks
    assert len(t) == len(out.confidence) == len(out.n_raters)
    assert ((out.confidence > 0) & (out.confidence <= 1 + 1e-12)).all()
    assert (out.n_raters >= 0.5 * out.unit_raters - 1e-9).all() and (out.n_raters <= out.unit_raters).all()
    assert set(t.track_ids.tolist()) <= set(range(len(units)))
    # a unit's consensus box lies within the hull of its raters' boxes on that frame
    lo, hi = np.full((len(t), 4), np.inf), np.full((len(t), 4), -np.inf)
    for k, (u, f) in enumerate(zip(t.track_ids.tolist(), t.frames.tolist())):
        for r, tid in units.unit(u).items():
            tr = video[r]
            hit = (tr.track_ids == tid) & (tr.frames == f)
            if hit.any():
                lo[k] = np.minimum(lo[k], tr.boxes[hit][0])
                hi[k] = np.maximum(hi[k], tr.boxes[hit][0])
    assert (t.boxes >= lo - 1e-12).all() and (t.boxes <= hi + 1e-12).all()


def test_lone_rater_and_raters_who_never_meet_have_no_confidence():
    """Issue 47: a lone rater's share of agreeing raters is 1 by construction; raters who never meet too."""
    from agreement.methods.tracks import mean_confidence
    from agreement.methods.tracks.consensus import LONE_RATER_REASON, NEVER_MEET_REASON

    a = T(rows(1, range(5), 0.1) + rows(2, range(5), 0.5, "dog"))
    lone = consensus_tracks({"a": a})
    assert len(lone.tracks) == 10 and np.isnan(lone.confidence).all() and lone.reason == LONE_RATER_REASON
    assert mean_confidence([lone, consensus_tracks({"a": a})]) == (None, LONE_RATER_REASON)
    apart = [consensus_tracks({"a": a}), consensus_tracks({"b": a})]
    assert mean_confidence(apart) == (None, NEVER_MEET_REASON)
    both = consensus_tracks({"a": a, "b": T(rows(1, range(5), 0.1))})
    value, why = mean_confidence(apart + [both])  # the lone videos do not count
    assert value == pytest.approx(both.confidence.mean()) and why == "" and both.reason == ""
    assert 0 < value < 1
