"""Track agreement against independent implementations: TrackEval's HOTA, py-motmetrics' IDF1 and CLEAR-MOT.

The oracles see the same data as ours: per frame, each rater's boxes in canonical track order
(``Tracks.index.of_box``, the order that decides ties in the Hungarian matchings), TrackEval's own box IoU
(``_BaseDataset._calculate_box_ious``) as the similarity, and for py-motmetrics the distance ``1 - IoU``
with NaN where ``IoU < 0.5``, given precomputed (its ``iou_matrix`` calls ``np.asfarray``, gone in
NumPy 2). py-motmetrics is pinned in requirements-test.txt; TrackEval (``trackeval`` on PyPI) requires
``opencv-python`` (clashing with the project's ``opencv-python-headless``) and NumPy >= 2.3 on Python 3.11
(clashing with ``make test-lowest-deps``), so it is not pinned: install it with
``pip install --no-deps trackeval==1.3.0`` (it needs only NumPy and SciPy for HOTA). Each test skips with
that message when its oracle is missing. TrackEval 1.3.0 uses no removed NumPy alias: no monkeypatch.

LocA where nothing is matched at a threshold alpha: TrackEval reports LocA_alpha 1; ours is NaN per threshold,
and the summary LocA leaves it out (``loca_unmatched="skip"``, the default: the mean over the matched thresholds)
or counts it 1 (``"one"``: equal to TrackEval's mean); both conventions are asserted against TrackEval.
Known differences, asserted here: where nothing is matched at any threshold TrackEval reports LocA 1 (ours NaN
with a reason, under either convention); where neither rater has a box TrackEval reports 0 (ours NaN with a
reason).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agreement.methods.tracks import (
    Tracks,
    clear_mot,
    hota,
    idf1,
    pool_clear_mot,
    pool_hota,
    pool_idf1,
)

TRACKEVAL_MISSING = ("TrackEval is not installed: pip install --no-deps trackeval==1.3.0 "
                     "(not pinned: it requires opencv-python and NumPy >= 2.3)")
MOTMETRICS_MISSING = "py-motmetrics is not installed: pip install -r requirements-test.txt"


def _trackeval():
    te = pytest.importorskip("trackeval", reason=TRACKEVAL_MISSING)
    from trackeval.datasets._base_dataset import _BaseDataset
    from trackeval.metrics import HOTA
    return te, HOTA, _BaseDataset._calculate_box_ious


def _motmetrics():
    return pytest.importorskip("motmetrics", reason=MOTMETRICS_MISSING)


# ---------------------------------------------------------------------------- data
def T(rows) -> Tracks:
    """Tracks from ``(frame, track, [x, y, w, h])`` rows (label "car")."""
    return Tracks.from_records([(f, t, "car", box) for f, t, box in rows])


def moving(track: int, frames, x0=0.1, y0=0.1, dx=0.01, w=0.2, h=0.2, jitter=0.0):
    return [(f, track, [x0 + dx * f + jitter, y0, w, h]) for f in frames]


def _iou_np(a, b):
    """IoU like TrackEval's, for building the oracles' inputs without TrackEval."""
    a, b = np.asarray(a, float).reshape(-1, 4), np.asarray(b, float).reshape(-1, 4)
    ax2, ay2 = a[:, 0] + a[:, 2], a[:, 1] + a[:, 3]
    bx2, by2 = b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]
    iw = np.maximum(np.minimum(ax2[:, None], bx2[None]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0)
    ih = np.maximum(np.minimum(ay2[:, None], by2[None]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0)
    inter = iw * ih
    union = ((ax2 - a[:, 0]) * (ay2 - a[:, 1]))[:, None] + ((bx2 - b[:, 0]) * (by2 - b[:, 1]))[None] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def per_frame(t: Tracks) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{frame: (canonical track numbers, boxes)}`` in canonical track order."""
    rank = t.index.of_box
    out = {}
    for f in np.unique(t.frames).tolist():
        k = np.flatnonzero(t.frames == f)
        k = k[np.argsort(rank[k])]
        out[f] = (rank[k], t.boxes[k])
    return out


def _frames(gt: Tracks, tr: Tracks):
    G, H = per_frame(gt), per_frame(tr)
    empty = (np.zeros(0, np.int64), np.zeros((0, 4)))
    for f in sorted(set(G) | set(H)):
        yield f, G.get(f, empty), H.get(f, empty)


def trackeval_hota(gt: Tracks, tr: Tracks) -> dict:
    _, HOTA, box_ious = _trackeval()
    data = {"gt_ids": [], "tracker_ids": [], "similarity_scores": [], "num_gt_ids": gt.n_tracks,
            "num_tracker_ids": tr.n_tracks, "num_gt_dets": len(gt), "num_tracker_dets": len(tr)}
    for _, (gi, gb), (hi, hb) in _frames(gt, tr):
        data["gt_ids"].append(gi.astype(int))
        data["tracker_ids"].append(hi.astype(int))
        data["similarity_scores"].append(box_ious(gb.copy(), hb.copy(), box_format="xywh"))
    return HOTA().eval_sequence(data)


def motmetrics_accumulator(gt: Tracks, tr: Tracks, threshold: float = 0.5):
    mm = _motmetrics()
    acc = mm.MOTAccumulator(auto_id=False)
    for f, (gi, gb), (hi, hb) in _frames(gt, tr):
        iou = _iou_np(gb, hb)
        acc.update(gi.tolist(), hi.tolist(), np.where(iou >= threshold, 1.0 - iou, np.nan), frameid=f)
    return acc


MM_FIELDS = ["num_switches", "num_fragmentations", "idf1", "idp", "idr", "idtp", "mota", "motp",
             "num_matches", "num_misses", "num_false_positives", "num_objects"]


def motmetrics_row(acc) -> dict:
    mm = _motmetrics()
    with mm.lap.set_default_solver("scipy"):
        return mm.metrics.create().compute(acc, metrics=MM_FIELDS, name="x").iloc[0].to_dict()


# ---------------------------------------------------------------------------- comparisons
TOL = 1e-9


def assert_hota_equal(gt: Tracks, tr: Tracks) -> None:
    te = trackeval_hota(gt, tr)
    ours = hota(gt, tr)
    np.testing.assert_array_equal(ours.tp, te["HOTA_TP"])
    np.testing.assert_array_equal(ours.fn, te["HOTA_FN"])
    np.testing.assert_array_equal(ours.fp, te["HOTA_FP"])
    if not ours.defined:  # neither rater has a box: TrackEval says 0, we say undefined
        assert np.isnan(ours.hota) and ours.reason and te["HOTA"].max() == 0
        return
    matched = ours.tp > 0
    for mine, theirs in ((ours.hota_alpha, "HOTA"), (ours.det_a_alpha, "DetA"), (ours.det_re_alpha, "DetRe"),
                         (ours.det_pr_alpha, "DetPr")):
        np.testing.assert_allclose(np.nan_to_num(mine, nan=0.0), te[theirs], rtol=0, atol=TOL, err_msg=theirs)
    for mine, theirs in ((ours.ass_a_alpha, "AssA"), (ours.ass_re_alpha, "AssRe"), (ours.ass_pr_alpha, "AssPr"),
                         (ours.loc_a_alpha, "LocA")):
        np.testing.assert_allclose(mine[matched], te[theirs][matched], rtol=0, atol=TOL, err_msg=theirs)
        assert np.isnan(mine[~matched]).all()
    np.testing.assert_allclose(te["LocA"][~matched], 1.0)  # TrackEval's convention where nothing matched
    assert abs(ours.hota - te["HOTA"].mean()) < TOL
    assert abs(ours.det_a - te["DetA"].mean()) < TOL
    assert abs(ours.ass_a - te["AssA"].mean()) < TOL
    assert_loca_conventions(hota(gt, tr, loca_unmatched="one"), ours, te)


def assert_loca_conventions(one, skip, te: dict) -> None:
    """``loc_a`` under ``"one"`` is TrackEval's mean LocA; under ``"skip"`` its mean over the matched thresholds."""
    matched = one.tp > 0
    assert one.loca_unmatched == "one" and skip.loca_unmatched == "skip"
    if matched.any():
        assert abs(one.loc_a - te["LocA"].mean()) < TOL
        assert abs(skip.loc_a - te["LocA"][matched].mean()) < TOL
    else:  # nothing matched anywhere: TrackEval's 1 would be a silent perfect score
        assert np.isnan(one.loc_a) and np.isnan(skip.loc_a) and one.reason


def assert_motmetrics_equal(gt: Tracks, tr: Tracks, threshold: float = 0.5) -> None:
    m = motmetrics_row(motmetrics_accumulator(gt, tr, threshold))
    c, i = clear_mot(gt, tr, threshold=threshold), idf1(gt, tr, threshold=threshold)
    assert c.id_switches == m["num_switches"]
    assert c.fragmentations == m["num_fragmentations"]
    assert c.matches == m["num_matches"] + m["num_switches"]
    assert c.misses == m["num_misses"] and c.false_positives == m["num_false_positives"]
    assert i.idtp == m["idtp"]
    for mine, theirs in ((i.idf1, "idf1"), (i.idp, "idp"), (i.idr, "idr"), (c.mota, "mota")):
        if np.isnan(mine):
            continue  # undefined here; py-motmetrics' quiet_divide gives NaN or inf
        assert abs(mine - m[theirs]) < TOL, (theirs, mine, m[theirs])
    if c.matches:
        assert abs(c.motp - (1.0 - m["motp"])) < TOL  # py-motmetrics reports the mean distance 1 - IoU


# ---------------------------------------------------------------------------- named cases
A_TWO = T(moving(1, range(30)) + moving(2, range(30), y0=0.6, dx=0.015))
CASES = {
    "identical tracks": (A_TWO, A_TWO),
    "missed frame range": (A_TWO, T(moving(1, list(range(10)) + list(range(20, 30)))
                                    + moving(2, range(30), y0=0.6, dx=0.015))),
    "identity switch": (T(moving(1, range(20)) + moving(2, range(20), y0=0.45)),
                        T(moving(7, range(10)) + moving(8, range(10), y0=0.45)
                          + moving(8, range(10, 20)) + moving(7, range(10, 20), y0=0.45))),
    "fragmented track": (T(moving(1, range(30))),
                         T(moving(5, range(0, 12)) + moving(6, range(15, 30), jitter=0.02))),
    "jittered boxes": (A_TWO, T(moving(1, range(30), jitter=0.03) + moving(2, range(30), y0=0.61, dx=0.015))),
    "disjoint raters": (T(moving(1, range(10))), T(moving(1, range(10), y0=0.7))),
    "disjoint in time": (T(moving(1, range(10))), T(moving(1, range(10, 20)))),
    "empty tracker": (A_TWO, Tracks.empty()),
    "empty ground truth": (Tracks.empty(), A_TWO),
    "both empty": (Tracks.empty(), Tracks.empty()),
    "crowded frames": (T(moving(1, range(15), w=0.3) + moving(2, range(15), x0=0.15, w=0.3)
                         + moving(3, range(15), x0=0.2, w=0.3)),
                       T(moving(4, range(15), x0=0.12, w=0.3) + moving(5, range(15), x0=0.17, w=0.3)
                         + moving(6, range(5, 15), x0=0.22, w=0.3))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hota_equals_trackeval(name):
    gt, tr = CASES[name]
    assert_hota_equal(gt, tr)
    assert_hota_equal(tr, gt)


@pytest.mark.parametrize("name", sorted(CASES))
def test_idf1_and_clear_mot_equal_motmetrics(name):
    gt, tr = CASES[name]
    assert_motmetrics_equal(gt, tr)
    assert_motmetrics_equal(tr, gt)


def test_named_cases_have_the_expected_events():
    """The cases test what their names say (so that the oracle comparisons cover them)."""
    gt, tr = CASES["identity switch"]
    assert clear_mot(gt, tr).id_switches == 2 and clear_mot(gt, tr).fragmentations == 0
    gt, tr = CASES["fragmented track"]
    c = clear_mot(gt, tr)
    assert c.fragmentations == 1 and c.id_switches == 1
    gt, tr = CASES["missed frame range"]
    assert clear_mot(gt, tr).fragmentations == 1 and clear_mot(gt, tr).misses == 10
    gt, tr = CASES["identical tracks"]
    assert hota(gt, tr).hota == 1.0 and idf1(gt, tr).idf1 == 1.0
    gt, tr = CASES["disjoint raters"]
    assert hota(gt, tr).hota == 0.0 and idf1(gt, tr).idf1 == 0.0


# ---------------------------------------------------------------------------- simulated raters
def simulated(seed: int, n_obj: int = 5, n_frames: int = 30, jitter: float = 0.05, drop: float = 0.2,
              swap: float = 0.1) -> Tracks:
    """A rater tracking ``n_obj`` moving objects, missing boxes (``drop``) and swapping ids (``swap``)."""
    rng = np.random.default_rng(seed)
    obj = np.random.default_rng(1000 + seed % 7)  # the same objects for every rater of one video
    base, size = obj.uniform(0.1, 0.6, (n_obj, 2)), obj.uniform(0.05, 0.3, (n_obj, 2))
    vel = obj.normal(0, 0.01, (n_obj, 2))
    ids, rows = np.arange(n_obj), []
    for f in range(n_frames):
        if rng.random() < swap:
            a, b = rng.choice(n_obj, 2, replace=False)
            ids[[a, b]] = ids[[b, a]]
        for o in range(n_obj):
            if rng.random() < drop:
                continue
            xy = base[o] + vel[o] * f + rng.normal(0, jitter * size[o])
            wh = np.abs(size[o] * (1 + rng.normal(0, jitter, 2)))
            rows.append((f, int(ids[o]), "car", [*xy, *wh]))
    return Tracks.from_records(rows)


def _simulated_pair(seed: int) -> tuple[Tracks, Tracks]:
    return simulated(7 * seed, jitter=0.0, drop=0.0, swap=0.0), simulated(7 * seed + 1, jitter=0.1, drop=0.25, swap=0.15)


@pytest.mark.parametrize("seed", range(8))
def test_simulated_raters_hota_equals_trackeval(seed):
    gt, tr = _simulated_pair(seed)
    assert_hota_equal(gt, tr)


@pytest.mark.parametrize("seed", range(8))
def test_simulated_raters_idf1_and_clear_mot_equal_motmetrics(seed):
    gt, tr = _simulated_pair(seed)
    assert_motmetrics_equal(gt, tr)
    assert_motmetrics_equal(tr, gt, threshold=0.3)


# grid boxes (multiples of 1/16): exact ties in the Hungarian matchings are common
_box = st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(1, 6), st.integers(1, 6)).map(
    lambda b: [b[0] / 16, b[1] / 16, b[2] / 16, b[3] / 16])
_rows = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 4), _box), max_size=25)


def _dedup(rows):
    seen, out = set(), []
    for f, t, b in rows:
        if (f, t) not in seen:
            seen.add((f, t))
            out.append((f, t, b))
    return T(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rows, _rows)
def test_random_grid_tracks_hota_equals_trackeval(a, b):
    _trackeval()
    assert_hota_equal(_dedup(a), _dedup(b))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rows, _rows)
def test_random_grid_tracks_equal_motmetrics(a, b):
    _motmetrics()
    assert_motmetrics_equal(_dedup(a), _dedup(b))


# ---------------------------------------------------------------------------- pooled over videos
def test_pooled_hota_equals_trackeval_combine_sequences():
    _, HOTA, _ = _trackeval()
    videos = [(simulated(s, drop=0.0, swap=0.0, jitter=0.0), simulated(s + 49)) for s in range(4)]
    videos.append((Tracks.empty(), simulated(99)))
    te = HOTA().combine_sequences({str(k): trackeval_hota(g, t) for k, (g, t) in enumerate(videos)})
    ours = pool_hota([hota(g, t) for g, t in videos])
    assert abs(ours.hota - te["HOTA"].mean()) < TOL
    assert abs(ours.det_a - te["DetA"].mean()) < TOL
    assert abs(ours.ass_a - te["AssA"].mean()) < TOL
    matched = ours.tp > 0
    np.testing.assert_allclose(ours.loc_a_alpha[matched], te["LocA"][matched], rtol=0, atol=TOL)
    np.testing.assert_array_equal(ours.tp, te["HOTA_TP"])
    assert_loca_conventions(pool_hota([hota(g, t, loca_unmatched="one") for g, t in videos]), ours, te)


def test_pooled_idf1_and_clear_mot_equal_motmetrics_overall():
    mm = _motmetrics()
    videos = [(simulated(s, drop=0.0, swap=0.0, jitter=0.0), simulated(s + 49)) for s in range(4)]
    accs = [motmetrics_accumulator(g, t) for g, t in videos]
    with mm.lap.set_default_solver("scipy"):
        table = mm.metrics.create().compute_many(accs, metrics=MM_FIELDS, names=list("abcd"), generate_overall=True)
    overall = table.loc["OVERALL"]
    i = pool_idf1([idf1(g, t) for g, t in videos])
    c = pool_clear_mot([clear_mot(g, t) for g, t in videos])
    assert abs(i.idf1 - overall["idf1"]) < TOL and i.idtp == overall["idtp"]
    assert c.id_switches == overall["num_switches"] and c.fragmentations == overall["num_fragmentations"]
    assert abs(c.mota - overall["mota"]) < TOL


# ---------------------------------------------------------------------------- LocA's convention (issue 47)
JITTERS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.8)


def test_loca_conventions_against_trackeval_as_jitter_grows():
    """``"one"`` equals TrackEval's LocA and rises with noise once high thresholds stop matching; ``"skip"``
    (the default) equals TrackEval's mean over the matched thresholds and falls monotonically."""
    _trackeval()
    gt = simulated(0, jitter=0.0, drop=0.0, swap=0.0)
    one, skip = [], []
    for j in JITTERS:
        tr = simulated(7, jitter=j, drop=0.0, swap=0.0)  # seeds 0 and 7: the same objects
        te = trackeval_hota(gt, tr)
        h_one, h_skip = hota(gt, tr, loca_unmatched="one"), hota(gt, tr)
        assert_loca_conventions(h_one, h_skip, te)
        assert h_one.hota == h_skip.hota and h_one.det_a == h_skip.det_a  # only LocA depends on it
        one.append(h_one.loc_a)
        skip.append(h_skip.loc_a)
    assert np.all(np.diff(skip) < 0), skip
    assert one[-1] > one[-2], one  # TrackEval's convention is lifted by the thresholds that stopped matching
    assert one[-1] - skip[-1] > 0.25


def test_loca_convention_reaches_the_pooled_corpus_and_is_validated():
    from agreement.methods.tracks import pool_track_agreement, track_agreement

    gt, tr = simulated(0, jitter=0.0, drop=0.0, swap=0.0), simulated(7, jitter=0.8, drop=0.0, swap=0.0)
    by = {c: pool_track_agreement([track_agreement({"a": gt, "b": tr}, loca_unmatched=c)]).pair("a", "b").hota
          for c in ("one", "skip")}
    assert by["one"].loc_a == pytest.approx(hota(gt, tr, loca_unmatched="one").loc_a, abs=1e-12)
    assert by["skip"].loc_a == pytest.approx(hota(gt, tr).loc_a, abs=1e-12)
    assert by["one"].loc_a > by["skip"].loc_a
    with pytest.raises(ValueError, match="loca_unmatched"):
        hota(gt, tr, loca_unmatched="zero")
    with pytest.raises(ValueError, match="loca_unmatched"):
        track_agreement({"a": gt, "b": tr}, loca_unmatched="trackeval")
    with pytest.raises(ValueError, match="different LocA conventions"):
        pool_hota([hota(gt, tr), hota(gt, tr, loca_unmatched="one")])
