"""HOTA, IDF1 and CLEAR-MOT between two raters: formulas by hand, ranges, symmetry, invariances, pooling
(the oracle comparisons are in test_tracks_oracles.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.methods.tracks import (
    HOTA_ALPHAS,
    Tracks,
    clear_mot,
    hota,
    idf1,
    pool_clear_mot,
    pool_hota,
    pool_idf1,
)
from test_tracks_data import T, relabel, shuffle_rows, videos


def box_rows(track, frames, x, y=0.1, w=0.2):
    return [(f, track, "car", [x, y, w, 0.2]) for f in frames]


TWO = T(box_rows(1, range(20), 0.1) + box_rows(2, range(20), 0.5))


def test_identical_raters_score_one():
    h = hota(TWO, TWO)
    assert h.hota == 1.0 and h.det_a == 1.0 and h.ass_a == 1.0 and h.loc_a == 1.0 and h.reason == ""
    assert (h.tp == 40).all() and (h.fn == 0).all() and (h.fp == 0).all()
    i = idf1(TWO, TWO)
    assert i.idf1 == 1.0 and i.idp == 1.0 and i.idr == 1.0 and i.idtp == 40
    c = clear_mot(TWO, TWO)
    assert c.mota == 1.0 and c.motp == 1.0 and c.id_switches == 0 and c.fragmentations == 0


def test_hota_by_hand_with_a_constant_iou():
    # one object, boxes shifted so that IoU = 0.6 on every frame
    a = T(box_rows(1, range(10), 0.0, w=0.4))
    b = T(box_rows(1, range(10), 0.1, w=0.4))  # intersection 0.3 x 0.2, union 0.5 x 0.2
    h = hota(a, b)
    matched = HOTA_ALPHAS <= 0.6 + 1e-12
    assert h.tp[matched].tolist() == [10] * matched.sum() and (h.tp[~matched] == 0).all()
    np.testing.assert_allclose(h.det_a_alpha, np.where(matched, 1.0, 0.0))
    np.testing.assert_allclose(h.ass_a_alpha[matched], 1.0)
    assert np.isnan(h.ass_a_alpha[~matched]).all() and np.isnan(h.loc_a_alpha[~matched]).all()
    np.testing.assert_allclose(h.loc_a_alpha[matched], 0.6)
    assert h.hota == pytest.approx(matched.mean()) and h.det_a == pytest.approx(matched.mean())
    assert h.ass_a == pytest.approx(matched.mean())  # thresholds without a match count 0 (TrackEval)
    assert h.loc_a == pytest.approx(0.6)  # the thresholds with a match only (loca_unmatched="skip", the default)
    k = int(matched.sum())  # TrackEval's convention: the unmatched thresholds count 1
    assert hota(a, b, loca_unmatched="one").loc_a == pytest.approx((0.6 * k + (len(HOTA_ALPHAS) - k)) / len(HOTA_ALPHAS))


def test_identity_switch_by_hand():
    gt = T(box_rows(1, range(20), 0.1) + box_rows(2, range(20), 0.5))
    tr = T(box_rows(7, range(10), 0.1) + box_rows(8, range(10), 0.5) + box_rows(8, range(10, 20), 0.1)
           + box_rows(7, range(10, 20), 0.5))
    h = hota(gt, tr)
    assert h.det_a == 1.0 and h.ass_a == pytest.approx(1 / 3) and h.hota == pytest.approx(np.sqrt(1 / 3))
    assert idf1(gt, tr).idf1 == pytest.approx(0.5)
    c = clear_mot(gt, tr)
    assert c.id_switches == 2 and c.fragmentations == 0 and c.mota == pytest.approx(1 - 2 / 40)
    assert clear_mot(tr, gt).id_switches == 2


def test_fragmentation_and_misses_by_hand():
    gt = T(box_rows(1, range(30), 0.1))
    tr = T(box_rows(1, list(range(0, 10)) + list(range(15, 20)) + list(range(25, 28)), 0.1))
    c = clear_mot(gt, tr)
    assert c.fragmentations == 2 and c.misses == 12 and c.false_positives == 0 and c.id_switches == 0
    assert c.mota == pytest.approx(1 - 12 / 30)
    # the reverse direction: every reference box is matched, nothing is interrupted
    r = clear_mot(tr, gt)
    assert r.fragmentations == 0 and r.false_positives == 12
    # a gap in the reference track itself is not a fragmentation
    gap = T(box_rows(1, list(range(5)) + list(range(10, 15)), 0.1))
    assert clear_mot(gap, gap).fragmentations == 0


def test_a_split_track_is_a_switch_only_when_it_is_the_hypothesis():
    one = T(box_rows(1, range(20), 0.1))
    split = T(box_rows(1, range(10), 0.1) + box_rows(2, range(10, 20), 0.1))
    assert clear_mot(one, split).id_switches == 1
    assert clear_mot(split, one).id_switches == 0
    assert idf1(one, split).idf1 == idf1(split, one).idf1 == pytest.approx(0.5)


def test_empty_raters_are_undefined_or_zero_with_reasons():
    e = Tracks.empty()
    h = hota(e, e)
    assert np.isnan(h.hota) and np.isnan(h.det_a) and np.isnan(h.ass_a) and np.isnan(h.loc_a)
    assert "neither rater" in h.reason
    h = hota(TWO, e)
    assert h.hota == 0.0 and h.det_a == 0.0 and np.isnan(h.loc_a) and "no detection pair matched" in h.reason
    assert np.isnan(idf1(e, e).idf1) and idf1(e, e).reason
    assert idf1(TWO, e).idf1 == 0.0 and np.isnan(idf1(TWO, e).idp)
    assert np.isnan(clear_mot(e, TWO).mota) and clear_mot(e, TWO).reason
    assert clear_mot(TWO, e).mota == 0.0 and np.isnan(clear_mot(TWO, e).motp)


def test_thresholds_are_checked():
    for bad in (0.0, -0.1, 1.5, np.nan):
        with pytest.raises(ValueError, match="threshold"):
            idf1(TWO, TWO, threshold=bad)
        with pytest.raises(ValueError, match="threshold"):
            clear_mot(TWO, TWO, threshold=bad)


def test_pooling_adds_counts():
    a, b = TWO, T(box_rows(1, range(5, 20), 0.12) + box_rows(3, range(20), 0.8))
    one = hota(a, b)
    pooled = pool_hota([one, hota(a, a)])
    np.testing.assert_array_equal(pooled.tp, one.tp + 40)
    np.testing.assert_allclose(pooled.ass_sum, one.ass_sum + hota(a, a).ass_sum)
    assert pool_hota([one]).hota == pytest.approx(one.hota, abs=1e-15)
    assert np.isnan(pool_hota([]).hota)
    i = pool_idf1([idf1(a, b), idf1(a, a)])
    assert i.idtp == idf1(a, b).idtp + 40 and i.n_ground_truth == 80
    c = pool_clear_mot([clear_mot(a, b), clear_mot(a, a)])
    assert c.matches == clear_mot(a, b).matches + 40 and c.n_hypothesis == len(b) + 40
    assert pool_idf1([]).idtp == 0 and pool_clear_mot([]).matches == 0


def _invariant(a: Tracks, b: Tracks, seed: int):
    rng = np.random.default_rng(seed)
    maps = []
    for t in (a, b):
        ids = np.unique(t.track_ids).tolist()
        maps.append(dict(zip(ids, (rng.permutation(len(ids)) * 3 + 11).tolist())))
    return shuffle_rows(relabel(a, maps[0]), seed), shuffle_rows(relabel(b, maps[1]), seed + 1)


@settings(max_examples=80, deadline=None)
@given(videos(min_raters=2, max_raters=2), st.integers(0, 2**16))
def test_ranges_symmetry_and_invariance_to_ids_and_rows(video, seed):
    a, b = video["r1"], video["r2"]
    h, i, c = hota(a, b), idf1(a, b), clear_mot(a, b)
    if h.defined:
        for v in (h.hota, h.det_a, h.ass_a):
            assert 0.0 <= v <= 1.0 + 1e-12
        assert np.isnan(h.loc_a) or 0.05 - 1e-12 <= h.loc_a <= 1.0 + 1e-12
        assert np.all(h.tp + h.fn == len(a)) and np.all(h.tp + h.fp == len(b))
        assert np.all(np.diff(h.tp) <= 0)  # fewer matches at stricter thresholds
    assert np.isnan(i.idf1) or 0.0 <= i.idf1 <= 1.0
    assert idf1(b, a).idtp == i.idtp  # IDF1 is symmetric
    assert c.matches + c.misses == len(a) and c.matches + c.false_positives == len(b)
    assert np.isnan(c.mota) or c.mota <= 1.0
    assert np.isnan(c.motp) or 0.5 - 1e-12 <= c.motp <= 1.0 + 1e-12
    # DetA and LocA do not depend on the direction; HOTA does only through Hungarian ties
    hb = hota(b, a)
    np.testing.assert_array_equal(h.tp + h.fn + h.fp, hb.tp + hb.fn + hb.fp)
    # renumbering the tracks and shuffling the rows changes nothing
    a2, b2 = _invariant(a, b, seed)
    h2, c2 = hota(a2, b2), clear_mot(a2, b2)
    np.testing.assert_array_equal(h.tp, h2.tp)
    np.testing.assert_allclose(h.ass_sum, h2.ass_sum, rtol=0, atol=1e-12)
    np.testing.assert_allclose(h.loc_sum, h2.loc_sum, rtol=0, atol=1e-12)
    assert idf1(a2, b2).idtp == i.idtp
    assert (c2.id_switches, c2.fragmentations, c2.matches) == (c.id_switches, c.fragmentations, c.matches)


@settings(max_examples=40, deadline=None)
@given(videos(min_raters=2, max_raters=2))
def test_hota_is_symmetric_without_ties(video):
    """With generic (non-grid) boxes there are no ties: HOTA(a, b) = HOTA(b, a) and IDSW/frag stay counts."""
    rng = np.random.default_rng(len(video["r1"]) + 7 * len(video["r2"]))
    a, b = video["r1"], video["r2"]
    a = Tracks(a.frames, a.boxes + rng.uniform(0, 1e-3, a.boxes.shape), a.track_ids, a.labels)
    b = Tracks(b.frames, b.boxes + rng.uniform(0, 1e-3, b.boxes.shape), b.track_ids, b.labels)
    h, hb = hota(a, b), hota(b, a)
    if h.defined:
        assert h.hota == pytest.approx(hb.hota, abs=1e-12)
        assert h.loc_a == pytest.approx(hb.loc_a, abs=1e-12, nan_ok=True)
