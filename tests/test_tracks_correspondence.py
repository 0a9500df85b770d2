"""Track correspondence: pairwise Hungarian matching by STIoU and track units over several raters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import linear_sum_assignment

from agreement.methods.tracks import Tracks, VideoTracks, match_tracks, spatio_temporal_iou, track_units
from test_tracks_data import T, relabel, shuffle_rows, videos


def box_rows(track, frames, x, label="car", w=0.2):
    return [(f, track, label, [x, 0.1, w, 0.2]) for f in frames]


def test_match_tracks_maximises_total_stiou_over_pairs_above_tau():
    a = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.5))
    b = T(box_rows(5, range(10), 0.12) + box_rows(6, range(10), 0.52) + box_rows(7, range(3), 0.8))
    m = match_tracks(a, b)
    assert m.ids_a.tolist() == [1, 2] and m.ids_b.tolist() == [5, 6]
    assert (m.stiou >= 0.5).all() and m.unmatched_a.tolist() == [] and m.unmatched_b.tolist() == [7]
    strict = match_tracks(a, b, tau=1.0)
    assert len(strict.ids_a) == 0 and strict.unmatched_a.tolist() == [1, 2]
    with pytest.raises(ValueError, match="tau"):
        match_tracks(a, b, tau=0.0)
    with pytest.raises(ValueError, match="tau"):
        match_tracks(a, b, tau=1.5)


def test_match_tracks_prefers_the_better_total_not_the_greedy_pair():
    # a1 overlaps b1 a lot and b2 less; a2 overlaps only b1: greedy (a1, b1) leaves a2 alone, Hungarian does not
    a = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.16))
    b = T(box_rows(1, range(10), 0.13) + box_rows(2, range(10), 0.07))
    st_, _, _ = spatio_temporal_iou(a, b)
    rows, cols = linear_sum_assignment(np.where(st_ >= 0.5, st_, 0), maximize=True)
    m = match_tracks(a, b)
    assert sorted(zip(m.ids_a.tolist(), m.ids_b.tolist())) == sorted(
        (int(np.unique(a.track_ids)[r]), int(np.unique(b.track_ids)[c])) for r, c in zip(rows, cols) if st_[r, c] >= 0.5)
    assert m.stiou.sum() == pytest.approx(st_[rows, cols][st_[rows, cols] >= 0.5].sum())


def test_units_of_two_raters_are_the_hungarian_matches_and_singletons():
    a = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.5) + box_rows(3, range(5), 0.8))
    b = T(box_rows(4, range(10), 0.12) + box_rows(5, range(10), 0.52))
    u = track_units({"b": b, "a": a})
    assert u.raters == ("a", "b")
    # units by first frame (all 0 here), then by their first track in canonical order (a3 ends first)
    assert u.as_dicts() == [{"a": 3}, {"a": 1, "b": 4}, {"a": 2, "b": 5}]
    m = match_tracks(a, b)
    pairs = {(d["a"], d["b"]) for d in u.as_dicts() if len(d) == 2}
    assert pairs == set(zip(m.ids_a.tolist(), m.ids_b.tolist()))
    assert np.isnan(u.min_stiou[u.n_raters == 1]).all() and (u.min_stiou[u.n_raters == 2] >= 0.5).all()


def test_complete_linkage_refuses_a_chain_whose_ends_do_not_overlap_enough():
    # a~b and b~c overlap >= 0.5, a~c less: single linkage would chain all three
    a = T(box_rows(1, range(10), 0.10))
    b = T(box_rows(1, range(10), 0.16))
    c = T(box_rows(1, range(10), 0.22))
    st_ab = spatio_temporal_iou(a, b)[0][0, 0]
    st_ac = spatio_temporal_iou(a, c)[0][0, 0]
    assert st_ab >= 0.5 and st_ac < 0.5
    u = track_units({"a": a, "b": b, "c": c})
    assert sorted(len(d) for d in u.as_dicts()) == [1, 2]
    assert (u.min_stiou[u.n_raters == 2] >= 0.5).all()
    loose = track_units({"a": a, "b": b, "c": c}, tau=st_ac)
    assert [len(d) for d in loose.as_dicts()] == [3]


def test_three_raters_agreeing_make_one_unit_per_object():
    raters = {r: T(box_rows(10 + k, range(8), 0.1 + 0.01 * k) + box_rows(20 + k, range(2, 9), 0.6))
              for k, r in enumerate("xyz")}
    u = track_units(raters)
    assert u.as_dicts() == [{"x": 10, "y": 11, "z": 12}, {"x": 20, "y": 21, "z": 22}]
    assert u.present.all() and len(u) == 2


def test_empty_and_single_rater_videos():
    u = track_units({"a": Tracks.empty(), "b": Tracks.empty()})
    assert len(u) == 0 and u.members.shape == (0, 2)
    u = track_units({"a": T(box_rows(1, range(3), 0.1))})
    assert u.as_dicts() == [{"a": 1}]
    u = track_units({})
    assert len(u) == 0


def _canonical(units) -> list:
    return sorted(tuple(sorted(d.items())) for d in units.as_dicts())


def _check_unit_rules(video: dict, units, tau: float) -> None:
    vt = VideoTracks.build(video)
    assert units.members.shape == (len(units), len(vt.raters))
    seen = units.members[units.present]
    assert sorted(seen.tolist()) == list(range(vt.n_tracks))  # every track in exactly one unit
    s, t, v = vt.track_pairs
    stiou = dict(zip(zip(s.tolist(), t.tolist()), v.tolist()))
    for row in units.members:
        g = sorted(row[row >= 0].tolist())
        for k, x in enumerate(g):
            for y in g[k + 1:]:
                assert stiou.get((x, y), 0.0) >= tau


@settings(max_examples=80, deadline=None)
@given(videos(), st.sampled_from([0.3, 0.5, 0.7]), st.integers(0, 2**16))
def test_units_are_valid_and_do_not_depend_on_rater_order_ids_or_row_order(video, tau, seed):
    units = track_units(video, tau=tau)
    _check_unit_rules(video, units, tau)
    # the mapping's order
    reordered = dict(reversed(list(video.items())))
    assert _canonical(track_units(reordered, tau=tau)) == _canonical(units)
    # track ids renumbered (each rater its own permutation) and rows shuffled
    rng = np.random.default_rng(seed)
    maps, renamed = {}, {}
    for r, t in video.items():
        ids = np.unique(t.track_ids).tolist()
        new = (rng.permutation(len(ids)) * 7 + 100).tolist()
        maps[r] = dict(zip(ids, new))
        renamed[r] = shuffle_rows(relabel(t, maps[r]), seed)
    back = {r: {v: k for k, v in m.items()} for r, m in maps.items()}
    got = [{r: back[r][i] for r, i in d.items()} for d in track_units(renamed, tau=tau).as_dicts()]
    assert sorted(tuple(sorted(d.items())) for d in got) == _canonical(units)
