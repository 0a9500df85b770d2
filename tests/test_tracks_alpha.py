"""Krippendorff's α over track units (presence, class, localisation), against the `krippendorff` package.

The oracle builds the raters x units reliability matrices itself from the units and computes α with
``krippendorff.alpha``: nominal for presence and class, and for localisation a callable distance
``1 - STIoU`` between tracks (every track its own value; tracks of different videos at distance 1).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agreement.methods.tracks import (
    Tracks,
    VideoTracks,
    track_agreement,
    track_alpha,
    track_reliability,
    track_units,
)
from test_tracks_data import T, relabel, shuffle_rows, videos

krippendorff = pytest.importorskip("krippendorff", reason="the krippendorff package (requirements-test.txt)")


def box_rows(track, frames, x, label="car"):
    return [(f, track, label, [x, 0.1, 0.2, 0.2]) for f in frames]


def oracle_alphas(video_list: list[dict]) -> tuple[float, float, float]:
    """Presence, class and localisation α by the krippendorff package over the units of ``video_list``."""
    raters = sorted({r for v in video_list for r in v})
    pres_cols, class_cols, loc_cols, offsets, dists = [], [], [], [], []
    base = 0
    for video in video_list:
        vt = VideoTracks.build(video)
        units = track_units(video)
        D = np.ones((vt.n_tracks, vt.n_tracks))
        s, t, v = vt.track_pairs
        D[s, t] = D[t, s] = 1.0 - v
        np.fill_diagonal(D, 0.0)
        dists.append(D)
        for row in units.members:
            p, c, l = (np.full(len(raters), np.nan) for _ in range(3))
            for k, r in enumerate(vt.raters):
                i = raters.index(r)
                p[i] = float(row[k] >= 0)
                if row[k] >= 0:
                    lab = vt.track_label[row[k]]
                    c[i] = np.nan if lab is None else float(ord(lab[0]))
                    l[i] = base + row[k]
            pres_cols.append(p)
            class_cols.append(c)
            loc_cols.append(l)
        base += vt.n_tracks
    n = base
    full = np.ones((max(n, 1), max(n, 1)))
    k = 0
    for D in dists:
        full[k:k + len(D), k:k + len(D)] = D
        k += len(D)
    np.fill_diagonal(full, 0.0)

    def metric(v1, v2, i1, i2, n_v, dtype=np.float64):
        return full[v1.astype(int), v2.astype(int)].astype(dtype)

    def alpha(cols, **kw):
        data = np.array(cols, dtype=float).T if cols else np.zeros((len(raters), 0))
        try:
            with np.errstate(invalid="ignore", divide="ignore"):
                return float(krippendorff.alpha(reliability_data=data, **kw))
        except (ValueError, ZeroDivisionError):
            return np.nan

    return (alpha(pres_cols, level_of_measurement="nominal"), alpha(class_cols, level_of_measurement="nominal"),
            alpha(loc_cols, level_of_measurement=metric, value_domain=np.arange(n, dtype=float)))


def ours(video_list: list[dict]):
    return track_alpha([track_agreement(v).reliability for v in video_list])


def test_alpha_by_hand_two_raters_one_miss():
    a = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.5, "dog"))
    b = T(box_rows(1, range(10), 0.10))
    r = ours([{"a": a, "b": b}])
    # presence: unit 1 (1, 1), unit 2 (1, 0): o_11 = 2, o_10 = o_01 = 1; n = 4
    assert r.presence.alpha == pytest.approx(1 - 3 * 2 / (16 - 10))  # 1 - (n-1)(n - o_cc)/(n^2 - Σ n_c^2)
    assert np.isnan(r.classes.alpha) and "fewer than 2" not in r.classes.reason  # one unit, one class: no variation
    # one pairable unit of two identical tracks: the only pair is within the unit, D_e = 0
    assert np.isnan(r.localisation.alpha) and "no variation" in r.localisation.reason
    assert r.localisation.n_units == 1 and r.localisation.observed == 0.0


def test_implicit_absence_is_missing_explicit_absence_is_a_value():
    a = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.5))
    b = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.5))
    c = T(box_rows(1, range(10), 0.10))
    assigned = ours([{"a": a, "b": b, "c": c}, {"a": a, "b": b, "c": Tracks.empty()}])
    unassigned = ours([{"a": a, "b": b, "c": c}, {"a": a, "b": b}])
    assert assigned.presence.n_pairable == 12 and unassigned.presence.n_pairable == 10
    assert assigned.presence.alpha < unassigned.presence.alpha


def test_perfect_agreement_and_undefined_cases():
    a = T(box_rows(1, range(10), 0.10, "car") + box_rows(2, range(10), 0.5, "dog"))
    r = ours([{"a": a, "b": a}])
    assert np.isnan(r.presence.alpha) and "no variation" in r.presence.reason
    assert r.classes.alpha == 1.0 and r.localisation.alpha == 1.0
    single = ours([{"a": a}])
    for part in (single.presence, single.classes, single.localisation):
        assert np.isnan(part.alpha) and "fewer than 2" in part.reason
    empty = track_alpha([])
    assert empty.n_units == 0 and np.isnan(empty.localisation.alpha)


def test_localisation_alpha_falls_with_worse_overlap():
    a = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.5))
    close = T(box_rows(1, range(10), 0.11) + box_rows(2, range(10), 0.51))
    far = T(box_rows(1, range(10), 0.15) + box_rows(2, range(3, 10), 0.55))
    assert ours([{"a": a, "b": close}]).localisation.alpha > ours([{"a": a, "b": far}]).localisation.alpha


def test_pooled_alpha_is_over_all_units_not_a_mean_of_videos():
    a = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.5))
    b = T(box_rows(1, range(10), 0.12))
    v1, v2 = {"a": a, "b": b}, {"a": a, "b": a}
    pooled = ours([v1, v2])
    expected = oracle_alphas([v1, v2])
    assert pooled.presence.alpha == pytest.approx(expected[0], abs=1e-12)
    assert pooled.localisation.alpha == pytest.approx(expected[2], abs=1e-12)
    assert pooled.n_videos == 2 and pooled.n_units == 4


@pytest.mark.parametrize("seed", range(6))
def test_alphas_equal_the_krippendorff_package_on_simulated_videos(seed):
    rng = np.random.default_rng(seed)
    video_list = []
    for v in range(3):
        video = {}
        for r in ["ann", "bob", "cy"][: 2 + (v + seed) % 2]:
            rows = []
            for obj in range(4):
                if rng.random() < 0.2:
                    continue
                x, start = 0.1 + 0.2 * obj, int(rng.integers(0, 5))
                lab = "ab"[obj % 2] if rng.random() < 0.85 else "c"
                rows += [(f, obj + 10 * (f > 15 and rng.random() < 0.1), lab,
                          [x + rng.normal(0, 0.01), 0.3 + rng.normal(0, 0.01), 0.12, 0.2])
                         for f in range(start, 20)]
            video[r] = T([row for k, row in enumerate(rows) if (row[0], row[1]) not in {(q[0], q[1]) for q in rows[:k]}])
        video_list.append(video)
    got = ours(video_list)
    want = oracle_alphas(video_list)
    for mine, theirs in zip((got.presence.alpha, got.classes.alpha, got.localisation.alpha), want):
        if np.isnan(theirs):
            assert np.isnan(mine)
        else:
            assert mine == pytest.approx(theirs, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(videos(), min_size=1, max_size=3))
def test_alphas_equal_the_oracle_and_are_at_most_one(video_list):
    got = ours(video_list)
    want = oracle_alphas(video_list)
    for mine, theirs in zip((got.presence, got.classes, got.localisation), want):
        if np.isnan(mine.alpha):
            assert mine.reason
        else:
            assert mine.alpha <= 1 + 1e-12 and mine.reason == ""
            assert mine.alpha == pytest.approx(theirs, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(videos(), min_size=1, max_size=3), st.integers(0, 1000))
def test_alphas_do_not_depend_on_video_order_rater_order_ids_or_rows(video_list, seed):
    base = ours(video_list).as_dict()
    rng = np.random.default_rng(seed)
    changed = []
    for video in reversed(video_list):
        new = {}
        for r, t in reversed(list(video.items())):
            ids = np.unique(t.track_ids).tolist()
            new[r] = shuffle_rows(relabel(t, dict(zip(ids, (rng.permutation(len(ids)) + 50).tolist()))), seed)
        changed.append(new)
    other = ours(changed).as_dict()
    for part in ("presence", "classes", "localisation"):
        a, b = base[part]["alpha"], other[part]["alpha"]
        assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, abs=1e-12)


def test_reliability_parts():
    a = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.5, "dog"))
    b = T(box_rows(1, range(10), 0.10, "cat"))
    vt = VideoTracks.build({"a": a, "b": b})
    rel = track_reliability(vt, track_units({"a": a, "b": b}))
    assert rel.raters == ("a", "b") and rel.n_units == 2
    assert rel.present.tolist() == [[True, True], [True, False]]
    assert rel.classes.tolist() == [["car", "cat"], ["dog", None]]
    assert rel.loc_n == 2 and rel.loc_units == 1 and rel.loc_observed == 0.0 and rel.loc_pairs == 0.0
