"""α of track presence, class and localisation: class against the `krippendorff` package, presence and
localisation against their chance baseline (tracks of other videos through the same matching) by hand, at
chance for independent random raters, 1 for identical raters, falling with jitter, None with the reason
where undefined.

The class oracle builds the raters x units reliability matrix itself from the units and computes nominal α
with ``krippendorff.alpha``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.methods.tracks import (
    Tracks,
    VideoTracks,
    track_agreement,
    track_alpha,
    track_reliability,
    track_units,
)
from agreement.methods.tracks.alpha import (
    REASON_NO_CHANCE,
    REASON_NO_CHANCE_OVERLAP,
    REASON_NO_OVERLAP,
    REASON_NO_TRACKS,
)
from agreement.methods.tracks.chance import ChanceVideo
from agreement.simulate.video import VideoNoise, generate_videos, simulate_video_raters
from test_tracks_data import T, relabel, shuffle_rows, videos

krippendorff = pytest.importorskip("krippendorff", reason="the krippendorff package (requirements-test.txt)")


def box_rows(track, frames, x, label="car"):
    return [(f, track, label, [x, 0.1, 0.2, 0.2]) for f in frames]


def oracle_alphas(video_list: list[dict]) -> tuple[float, float, float]:
    """Presence, class and localisation α by the krippendorff package over the units of ``video_list``."""
    raters = sorted({r for v in video_list for r in v})
    pres_cols, class_cols, loc_cols, dists = [], [], [], []
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


def test_presence_and_localisation_by_hand():
    # v1: b is a's track shifted by 0.02 (IoU 0.18 / 0.22); v2: identical; chance pairs: v1 against v2
    v1 = {"a": T(box_rows(1, range(10), 0.10)), "b": T(box_rows(1, range(10), 0.12))}
    v2 = {"a": T(box_rows(1, range(10), 0.20)), "b": T(box_rows(1, range(10), 0.20))}
    r = ours([v1, v2])
    within = [1 - 0.18 / 0.22, 0.0]
    chance = [1 - 1 / 3, 1 - 0.12 / 0.28, 1 - 0.12 / 0.28, 1 - 1 / 3]  # a1-b2, b1-a2, a2-b1, b2-a1: all < 0.5
    assert r.localisation.observed == pytest.approx(np.mean(within))
    assert r.localisation.expected == pytest.approx(np.mean(chance))
    assert r.localisation.alpha == pytest.approx(1 - np.mean(within) / np.mean(chance))
    assert r.presence.observed == 0.0 and r.presence.expected == 1.0 and r.presence.alpha == 1.0
    assert r.chance_pairs == 4 and r.presence.n_pairable == 4 and r.localisation.n_pairable == 2


def test_undefined_cases_give_none_with_the_reason():
    a = T(box_rows(1, range(10), 0.10, "car") + box_rows(2, range(10), 0.5, "dog"))
    single = ours([{"a": a, "b": a}])  # one video: no chance pair
    for part in (single.presence, single.localisation):
        assert np.isnan(part.alpha) and part.reason == REASON_NO_CHANCE
    assert single.classes.alpha == 1.0
    lone = ours([{"a": a}, {"a": a}])
    assert np.isnan(lone.presence.alpha) and lone.presence.reason == REASON_NO_TRACKS
    assert np.isnan(lone.localisation.alpha) and lone.localisation.reason == REASON_NO_OVERLAP
    far = T(box_rows(1, range(10), 0.7))  # the other video's tracks never overlap: chance distance unknown
    apart = ours([{"a": a, "b": a}, {"a": far, "b": far}])
    assert apart.presence.alpha == 1.0
    assert np.isnan(apart.localisation.alpha) and apart.localisation.reason == REASON_NO_CHANCE_OVERLAP
    empty = track_alpha([])
    assert empty.n_units == 0 and np.isnan(empty.localisation.alpha) and empty.localisation.reason


def test_presence_alpha_is_not_bounded_by_zero():
    """Issue 47: present/absent α over units is (1 - u) / (n - u) <= 0; the chance-corrected one is not."""
    video_list = corpus(VideoNoise.scaled(0.3), seed=1)
    got = ours(video_list)
    assert got.presence.alpha > 0.5 and got.localisation.alpha > 0.5


def corpus(noise, seed=0, videos=10, frames=40, objects=6):
    ref = generate_videos(num_videos=videos, num_frames=frames, num_objects=objects, seed=seed)
    sim = simulate_video_raters(ref, noise, num_raters=3, seed=seed, names=("r0", "r1", "r2"))
    return [{r: Tracks(sim.videos[r][v].frames, sim.videos[r][v].boxes, sim.videos[r][v].tracks,
                       sim.videos[r][v].labels) for r in sim.raters} for v in range(videos)]


def random_raters(seed, videos=10, frames=40, objects=6):
    """Three raters each tracking their own random objects (independent draws) in every video."""
    out = []
    for v in range(videos):
        d = {}
        for k, r in enumerate(("r0", "r1", "r2")):
            t = generate_videos(num_videos=1, num_frames=frames, num_objects=objects, seed=1000 * seed + 10 * v + k)[0]
            d[r] = Tracks(t.frames, t.boxes, t.tracks, t.labels)
        out.append(d)
    return out


def test_identical_raters_give_one():
    ref = corpus(VideoNoise(), seed=3)
    got = ours([{r: d["r0"] for r in d} for d in ref])
    assert got.presence.alpha == 1.0 and got.localisation.alpha == 1.0 and got.classes.alpha == 1.0


def test_random_raters_are_at_chance():
    vals = np.array([[getattr(ours(random_raters(s)), k).alpha for k in ("presence", "localisation")]
                     for s in range(3)])
    assert np.isfinite(vals).all()
    m = vals.mean(axis=0)
    se = vals.std(axis=0, ddof=1) / np.sqrt(len(vals))
    assert (np.abs(m) <= np.maximum(0.05, 3 * se)).all(), (m, se)


def test_alphas_fall_as_jitter_grows():
    ref = corpus(VideoNoise(), seed=4)
    rng = np.random.default_rng(0)
    out = []
    for sigma in (0.0, 0.01, 0.03, 0.08):
        move = np.array([1.0, 1.0, 0.0, 0.0])  # jitter the corner, keep the size
        jit = [{r: Tracks(t.frames, t.boxes + (rng.normal(0, sigma, t.boxes.shape) * move if r != "r0" else 0),
                          t.track_ids, t.labels) for r, t in d.items()} for d in ref]
        got = ours(jit)
        out.append((got.presence.alpha, got.localisation.alpha))
    out = np.array(out)
    assert out[0].tolist() == [1.0, 1.0]
    assert (np.diff(out, axis=0) <= 1e-9).all() and out[-1, 1] < 0.8, out


def test_localisation_alpha_falls_with_worse_overlap():
    a = T(box_rows(1, range(10), 0.10) + box_rows(2, range(10), 0.5))
    other = {"a": T(box_rows(1, range(10), 0.3)), "b": T(box_rows(1, range(10), 0.32))}
    close = T(box_rows(1, range(10), 0.11) + box_rows(2, range(10), 0.51))
    far = T(box_rows(1, range(10), 0.15) + box_rows(2, range(3, 10), 0.55))
    assert ours([{"a": a, "b": close}, other]).localisation.alpha > ours([{"a": a, "b": far}, other]).localisation.alpha


def test_class_alpha_equals_the_krippendorff_package():
    rng = np.random.default_rng(5)
    video_list = []
    for v in range(3):
        video = {}
        for r in ["ann", "bob", "cy"][: 2 + v % 2]:
            rows = [(f, obj, "ab"[obj % 2] if rng.random() < 0.8 else "c", [0.1 + 0.2 * obj, 0.3, 0.12, 0.2])
                    for obj in range(4) for f in range(20)]
            video[r] = T(rows)
        video_list.append(video)
    assert ours(video_list).classes.alpha == pytest.approx(oracle_alphas(video_list)[1], abs=1e-9)


def test_chance_pairs_use_the_video_lengths():
    """Frame counts put videos of very different lengths in different strata: no chance pair between them."""
    a = T(box_rows(1, range(10), 0.10))
    vids = [track_agreement({"a": a, "b": a}, video="short", frame_count=60),
            track_agreement({"a": a, "b": a}, video="long", frame_count=6000)]
    same = [track_agreement({"a": a, "b": a}, video="short", frame_count=60),
            track_agreement({"a": a, "b": a}, video="short2", frame_count=62)]
    assert track_alpha([v.reliability for v in same]).chance_pairs == 4
    assert track_alpha([v.reliability for v in vids]).chance_pairs == 4  # strata of fewer than 2 videos merge
    assert ChanceVideo.of(VideoTracks.build({"a": a}), None).frame_count == 9.0


@settings(max_examples=30, deadline=None)
@given(st.lists(videos(), min_size=1, max_size=3))
def test_alphas_are_at_most_one_or_none_with_a_reason(video_list):
    got = ours(video_list)
    for mine in (got.presence, got.classes, got.localisation):
        if np.isnan(mine.alpha):
            assert mine.reason
        else:
            assert mine.alpha <= 1 + 1e-12 and mine.reason == ""


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
    assert rel.det_size == 3 and rel.det_unmatched == 1
    assert rel.loc_n == 1 and rel.loc_units == 1 and rel.loc_observed == 0.0
