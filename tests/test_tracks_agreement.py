"""The entry points: track_agreement (one video) and pool_track_agreement (a corpus)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.methods.tracks import (
    Tracks,
    clear_mot,
    hota,
    idf1,
    pool_track_agreement,
    track_agreement,
    track_alpha,
    track_units,
)
from test_tracks_data import T, videos


def rows(track, frames, x, label="car"):
    return [(f, track, label, [x, 0.1, 0.2, 0.2]) for f in frames]


A = T(rows(1, range(20), 0.1) + rows(2, range(20), 0.5, "dog"))
B = T(rows(4, range(10), 0.11) + rows(5, range(10, 20), 0.11) + rows(6, range(20), 0.5, "cat"))
C = T(rows(9, range(5, 20), 0.1))


def test_one_video_result_holds_units_alpha_pairs_and_consensus():
    r = track_agreement({"c": C, "a": A, "b": B}, video="v1.mp4", consensus=True)
    assert r.video == "v1.mp4" and r.raters == ("a", "b", "c")
    assert [(p.rater_a, p.rater_b) for p in r.pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    ab = r.pair("b", "a")
    assert ab is r.pair("a", "b")
    assert ab.hota.hota == pytest.approx(hota(A, B).hota) and ab.idf1.idtp == idf1(A, B).idtp
    assert ab.clear_ab == clear_mot(A, B) and ab.clear_ba == clear_mot(B, A)
    assert ab.id_switches == clear_mot(A, B).id_switches + clear_mot(B, A).id_switches == 1
    assert ab.fragmentations == clear_mot(A, B).fragmentations + clear_mot(B, A).fragmentations
    assert r.units.as_dicts() == track_units({"a": A, "b": B, "c": C}).as_dicts()
    assert r.alpha.as_dict() == track_alpha([r.reliability]).as_dict()
    assert r.consensus is not None and r.consensus.tracks.n_tracks >= 2
    record = ab.as_dict()
    assert {"hota", "det_a", "ass_a", "loc_a", "idf1", "id_switches", "fragmentations"} <= set(record)
    with pytest.raises(KeyError):
        r.pair("a", "zz")


def test_bad_input():
    with pytest.raises(ValueError, match="tau"):
        track_agreement({"a": A}, tau=0)
    with pytest.raises(ValueError, match="iou_threshold"):
        track_agreement({"a": A}, iou_threshold=2)
    with pytest.raises(ValueError, match="must be a Tracks"):
        track_agreement({"a": A, "b": "not tracks"}, video="v")


def test_pooled_corpus_adds_counts_and_pools_alpha_over_units():
    v1 = track_agreement({"a": A, "b": B, "c": C}, video="v1")
    v2 = track_agreement({"a": A, "b": A}, video="v2")
    v3 = track_agreement({"b": B, "c": Tracks.empty()}, video="v3")
    corpus = pool_track_agreement([v1, v2, v3])
    assert corpus.n_videos == 3
    assert corpus.alpha.as_dict() == track_alpha([v.reliability for v in (v1, v2, v3)]).as_dict()
    ab = corpus.pair("a", "b")
    assert ab.n_videos == 2 and corpus.pair("b", "c").n_videos == 2 and corpus.pair("a", "c").n_videos == 1
    np.testing.assert_array_equal(ab.hota.tp, v1.pair("a", "b").hota.tp + v2.pair("a", "b").hota.tp)
    assert ab.idf1.idtp == v1.pair("a", "b").idf1.idtp + v2.pair("a", "b").idf1.idtp
    assert ab.clear_ab.id_switches == v1.pair("a", "b").clear_ab.id_switches
    assert len(corpus.pair_records()) == 3
    again = pool_track_agreement([v3, v1, v2])
    for a, b in zip(again.pairs, corpus.pairs):  # the order of the videos does not matter
        assert (a.rater_a, a.rater_b) == (b.rater_a, b.rater_b)
        assert a.hota.tp.tolist() == b.hota.tp.tolist() and a.idf1 == b.idf1 and a.clear_ab == b.clear_ab
        assert a.hota.hota == pytest.approx(b.hota.hota, abs=1e-12, nan_ok=True)
    assert again.alpha.localisation.alpha == pytest.approx(corpus.alpha.localisation.alpha, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(videos(), st.integers(0, 1000))
def test_mapping_order_does_not_matter(video, seed):
    order = list(video)
    np.random.default_rng(seed).shuffle(order)
    r1 = track_agreement(video)
    r2 = track_agreement({k: video[k] for k in order})
    assert r1.raters == r2.raters and r1.units.as_dicts() == r2.units.as_dicts()
    for p, q in zip(r1.pairs, r2.pairs):
        assert p.as_dict() == pytest.approx(q.as_dict(), nan_ok=True)


def test_a_video_of_thousands_of_boxes_is_quick():
    """3 raters x 30 objects x 300 frames (about 27,000 boxes)."""
    rng = np.random.default_rng(0)
    n_obj, n_frames = 30, 300
    start = rng.uniform(0.05, 0.8, (n_obj, 2))
    vel = rng.normal(0, 0.001, (n_obj, 2))
    video = {}
    for r in range(3):
        f = np.repeat(np.arange(n_frames), n_obj)
        o = np.tile(np.arange(n_obj), n_frames)
        keep = rng.random(len(f)) > 0.1
        xy = start[o] + vel[o] * f[:, None] + rng.normal(0, 0.003, (len(f), 2))
        boxes = np.concatenate([xy, np.full((len(f), 2), 0.08)], axis=1)
        ids = o + 100 * ((f > 150) & (o % 7 == r))  # some identity changes
        video[f"r{r}"] = Tracks(f[keep], boxes[keep], ids[keep], np.where(o[keep] % 2, "car", "person"))
    t0 = time.perf_counter()
    result = track_agreement(video, consensus=True)
    elapsed = time.perf_counter() - t0
    assert elapsed < 30, elapsed
    assert len(result.units) >= n_obj and np.isfinite(result.alpha.localisation.observed)  # one video: no chance pair
    assert all(p.hota.hota > 0.5 for p in result.pairs)
