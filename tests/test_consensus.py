"""Consensus labels (agreement.methods.consensus): identity, absence semantics, fusion, EM estimates, results, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.spatial.transform import Rotation

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.methods.consensus import consensus
from agreement.methods.consensus.fusion import fuse_boxes
from agreement.methods.consensus.scale import member_pairs, pairwise_scales
from agreement.methods.consensus.units import units_from_labels
from agreement.simulate.synthetic import generate_scenes, ground_truth, simulate_demo_raters

RATERS = ("a", "b", "c")


def _sets(n_samples=12, seed=0, polygons=False, masks=False, keypoints=False):
    """One rater's random labels per sample (boxes, and optionally polygons/masks/keypoints)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_samples):
        k = int(rng.integers(0, 4))
        xy = np.c_[np.arange(k) * 0.33 + rng.uniform(0, 0.02, k), rng.uniform(0.0, 0.5, k)]  # apart
        wh = rng.uniform(0.1, 0.3, (k, 2))
        boxes = np.c_[xy, wh]
        polys = [[np.array([[x, y], [x + w, y], [x + w / 2, y + h]])] for x, y, w, h in boxes] if polygons else None
        ms = [rng.random((int(h * 100), int(w * 100))) < 0.7 for _, _, w, h in boxes] if masks else None
        kps = np.c_[xy + wh / 3, xy + wh / 2].reshape(k, 2, 2) if keypoints else None
        if keypoints and k:
            kps[0, 1] = np.nan
        out.append(AnnotationSet(boxes, rng.choice(["cat", "dog", "eel"], k), [None] * k, polys, ms, kps))
    return out


def _identical(n_samples=12, **kw):
    sets = _sets(n_samples, **kw)
    return MultiRaterAnnotations.from_sets(
        [f"s{i}" for i in range(n_samples)], RATERS, [{r: s for r in RATERS} for s in sets],
        image_sizes=np.tile([100.0, 100.0], (n_samples, 1)),
    )


# --------------------------------------------------------------------------
# A consensus of identical raters is exactly their labels, with confidence -> 1
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["boxes", "polygons", "masks", "keypoints"])
def test_identical_raters_give_exactly_their_labels_with_confidence_near_one(kind):
    data = _identical(**{kind: True} if kind != "boxes" else {})
    res = consensus(data)
    rows = np.flatnonzero(data.rater_index == 0)
    assert res.geometry == kind
    assert res.n_consensus == len(rows) == res.n_units
    assert res.confidence.min() > 1 - 1e-6 and res.class_probability.min() > 1 - 1e-6
    first = res.member_rows[res.member_offsets[:-1]]  # rater a's row of every unit
    order = np.argsort(first)
    assert np.array_equal(first[order], rows)
    assert np.array_equal(res.label[order], data.labels[rows])
    if kind in ("boxes", "keypoints"):
        assert np.array_equal(res.boxes[order], data.boxes[rows])  # bit for bit
    if kind == "keypoints":
        np.testing.assert_array_equal(res.keypoints[order], data.keypoints[rows])
    if kind == "polygons":
        for u, i in zip(order, rows):
            assert all(np.array_equal(a, b) for a, b in zip(res.polygons[u], data.polygons[i]))
    if kind == "masks":
        from agreement.geometry.masks import place_masks

        for u, i in zip(order, rows):
            placed = place_masks([data.masks[i]], data.boxes[i:i + 1], (100, 100))[0]
            ys, xs = np.nonzero(placed.mask)
            tight = placed.mask[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
            assert np.array_equal(res.masks[u], tight)
    assert res.row_agrees.all() and np.allclose(res.row_similarity, 1.0)
    assert res.review.sum() == 0
    rep = res.report
    assert np.all(rep.sensitivity > 0.99) and np.allclose(rep.localisation_error, 0.0)


@pytest.mark.parametrize("method", ["majority", "wbf"])
def test_identical_raters_under_the_baselines(method):
    data = _identical()
    res = consensus(data, method=method)
    rows = np.flatnonzero(data.rater_index == 0)
    assert res.n_consensus == len(rows)
    first = res.member_rows[res.member_offsets[:-1]]
    order = np.argsort(first)
    assert np.array_equal(res.label[order], data.labels[rows])
    np.testing.assert_allclose(res.boxes[order], data.boxes[rows], atol=1e-12)
    assert np.allclose(res.confidence, 1.0)


def test_identical_cuboid_raters():
    rng = np.random.default_rng(1)
    n = 6
    cub = np.c_[rng.uniform(-10, 10, (n, 3)), rng.uniform(1, 4, (n, 3)), rng.uniform(-1, 1, (n, 3))]
    S = 3
    sample = np.repeat(np.arange(S), 2)
    data = MultiRaterAnnotations(
        sample_ids=[f"s{i}" for i in range(S)], raters=RATERS, assigned=np.ones((S, 3), bool),
        boxes=np.full((3 * n, 4), np.nan), labels=np.array(["car", "van"] * (3 * n // 2), dtype=object),
        label_ids=[None] * 3 * n, sample_index=np.tile(sample, 3), rater_index=np.repeat(np.arange(3), n),
        cuboids=np.tile(cub, (3, 1)),
    )
    res = consensus(data, similarity="cuboid_iou", tau=0.3)
    assert res.geometry == "cuboids" and res.n_consensus == n
    first = res.member_rows[res.member_offsets[:-1]]
    order = np.argsort(first)
    rows = np.flatnonzero(data.rater_index == 0)
    assert np.array_equal(res.cuboids[order], data.cuboids[rows])
    assert res.confidence.min() > 1 - 1e-6
    np.testing.assert_allclose(res.row_similarity, 1.0, atol=1e-9)


def test_cuboid_rotations_average_on_so3_and_respect_box_symmetry():
    S, R = 1, 3
    base = np.array([0.0, 0.0, 0.0, 4.0, 2.0, 1.5])
    yaw = [0.2, 0.3, 0.4 + np.pi]  # the third is the same box turned half-way round
    cub = np.array([[*base, 0.0, 0.0, y] for y in yaw])
    data = MultiRaterAnnotations(
        sample_ids=["s"], raters=RATERS, assigned=np.ones((S, R), bool), boxes=np.full((3, 4), np.nan),
        labels=np.array(["car"] * 3, dtype=object), label_ids=[None] * 3, sample_index=[0, 0, 0],
        rater_index=[0, 1, 2], cuboids=cub,
    )
    res = consensus(data, similarity="cuboid_iou", tau=0.3)
    assert res.n_units == 1
    R_mean = Rotation.from_euler("XYZ", res.cuboids[0, 6:])
    R_true = Rotation.from_euler("XYZ", [0, 0, 0.3])
    angle = (R_true.inv() * R_mean).magnitude()
    assert min(angle, abs(np.pi - angle)) < 1e-6  # 0.3 up to the box's half-turn symmetry
    np.testing.assert_allclose(res.cuboids[0, 3:6], base[3:], rtol=1e-12)


# --------------------------------------------------------------------------
# Implicit vs explicit absence
# --------------------------------------------------------------------------


def _absence_corpus(third: str):
    """Many samples where a, b, c draw the same box, and one where a and b draw it and c is
    either not assigned (``third="unassigned"``) or assigned and drew nothing (``"empty"``)."""
    box = AnnotationSet([[0.1, 0.1, 0.3, 0.3]], ["cat"], [None])
    other = AnnotationSet([[0.6, 0.6, 0.2, 0.2]], ["dog"], [None])
    sets = [{"a": box, "b": box, "c": box} for _ in range(30)]
    sets += [{"a": other, "b": AnnotationSet.empty(), "c": AnnotationSet.empty()} for _ in range(10)]
    sets.append({"a": box, "b": box, **({"c": AnnotationSet.empty()} if third == "empty" else {})})
    return MultiRaterAnnotations.from_sets([f"s{i}" for i in range(len(sets))], RATERS, sets)


def test_explicit_absence_is_evidence_and_implicit_absence_is_not():
    unassigned = consensus(_absence_corpus("unassigned"))
    empty = consensus(_absence_corpus("empty"))
    last_u = np.flatnonzero(unassigned.unit_sample == 40)[0]
    last_e = np.flatnonzero(empty.unit_sample == 40)[0]
    assert unassigned.n_assigned[last_u] == 2 and empty.n_assigned[last_e] == 3
    assert unassigned.confidence[last_u] > empty.confidence[last_e]
    assert empty.report.n_samples[2] == 41 and unassigned.report.n_samples[2] == 40


def test_majority_support_counts_only_assigned_raters():
    res = consensus(_absence_corpus("unassigned"), method="majority", quorum=1.0)
    u = np.flatnonzero(res.unit_sample == 40)[0]
    assert res.confidence[u] == 1.0 and res.is_consensus[u]
    res = consensus(_absence_corpus("empty"), method="majority", quorum=1.0)
    u = np.flatnonzero(res.unit_sample == 40)[0]
    assert res.confidence[u] == pytest.approx(2 / 3) and not res.is_consensus[u]


# --------------------------------------------------------------------------
# Fusion and the EM's estimates
# --------------------------------------------------------------------------


def test_box_fusion_is_the_precision_weighted_mean_of_centres_and_log_sizes():
    boxes = np.array([[0.1, 0.1, 0.2, 0.4], [0.12, 0.08, 0.25, 0.3], [0.09, 0.11, 0.22, 0.35]])
    units = units_from_labels(np.zeros(3, np.int64), np.zeros(3, np.int64))
    wt = np.array([1.0, 4.0, 2.0])
    fused = fuse_boxes(boxes, units, wt).boxes[0]
    c = boxes[:, :2] + boxes[:, 2:] / 2
    centre = (wt[:, None] * c).sum(0) / wt.sum()
    size = np.exp((wt[:, None] * np.log(boxes[:, 2:])).sum(0) / wt.sum())
    np.testing.assert_allclose(fused, np.r_[centre - size / 2, size], atol=1e-15)


def test_gaussian_tail_fuses_by_precision_weights_and_the_tail_is_recorded():
    data, _ = _demo(40)
    res = consensus(data, tail=float("inf"))
    assert res.model.tail == float("inf") and res.params["tail"] == float("inf")
    sigma = res.model.localisation_noise
    units = units_from_labels(res.row_unit, data.sample_index, n_units=res.n_units)
    wt = 1.0 / sigma[data.rater_index[units.order]] ** 2
    np.testing.assert_allclose(res.boxes, fuse_boxes(data.boxes, units, wt).boxes, atol=1e-15)


def test_pairwise_scales_recover_each_raters_noise():
    rng = np.random.default_rng(0)
    sigma = np.array([0.01, 0.03, 0.06, 0.1])
    U, R = 4000, 4
    truth = np.c_[rng.uniform(0.1, 0.5, (U, 2)), rng.uniform(0.1, 0.3, (U, 2))]
    rows, unit, rater = [], [], []
    for r in range(R):
        drawn = rng.random(U) < 0.8
        t = truth[drawn]
        c = t[:, :2] + t[:, 2:] / 2 + rng.normal(0, sigma[r], (len(t), 2)) * t[:, 2:]
        wh = t[:, 2:] * np.exp(rng.normal(0, sigma[r], (len(t), 2)))
        rows.append(np.c_[c - wh / 2, wh])
        unit.append(np.flatnonzero(drawn))
        rater.append(np.full(drawn.sum(), r))
    boxes, unit, rater = np.concatenate(rows), np.concatenate(unit), np.concatenate(rater)
    unit = np.unique(unit, return_inverse=True)[1]  # objects nobody drew are no unit
    units = units_from_labels(unit, unit)
    fused = fuse_boxes(boxes, units, np.ones(len(unit)))
    pi, pj = member_pairs(units)
    a, b = boxes[units.order[pi]], boxes[units.order[pj]]
    scale = fused.boxes[units.member_unit[pi], 2:]
    dc = ((a[:, :2] + a[:, 2:] / 2) - (b[:, :2] + b[:, 2:] / 2)) / scale
    dl = np.log(a[:, 2:]) - np.log(b[:, 2:])
    est = pairwise_scales((dc ** 2).sum(1) + (dl ** 2).sum(1), np.full(len(pi), 4.0),
                          rater[units.order[pi]], rater[units.order[pj]], R)
    # The most precise rater's scale is the hardest: every pair it is in is dominated by the other's noise.
    np.testing.assert_allclose(est, sigma, rtol=0.2)
    assert np.all(np.diff(est) > 0)


def _demo(n=150, seed=0):
    scenes = generate_scenes(num_images=n, seed=seed)
    return simulate_demo_raters(scenes, seed=seed), ground_truth(scenes)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 70_000), st.floats(0, 5, allow_nan=False)), min_size=1, max_size=60),
       st.booleans())
def test_pair_medians_are_the_median_of_each_key(rows, few_keys):
    """The grouped median (argsort of values, then a stable sort of the keys, narrowed to 16 bits when
    they fit) against np.median per key, for keys under and over 2**16."""
    from agreement.methods.consensus.scale import _pair_medians

    key = np.array([k % 5 if few_keys else k for k, _ in rows], dtype=np.int64)
    z = np.array([v for _, v in rows])
    uk, med, cnt = _pair_medians(key, z)
    assert uk.tolist() == sorted(set(key.tolist()))
    for k, m, n in zip(uk, med, cnt):
        assert n == (key == k).sum() and m == np.median(z[key == k])


def test_box_pair_terms_give_the_pair_differences_of_the_boxes():
    """The EM's precomputed box pair terms (BoxPairs, selected by a mask) equal the differences of
    the boxes computed directly (centre over the fused size, log sizes), bit for bit."""
    from agreement.methods.consensus.fusion import BoxOffsets, Fused
    from agreement.methods.consensus.scale import BoxPairs

    rng = np.random.default_rng(3)
    unit = np.repeat(np.arange(40), rng.integers(1, 5, 40))
    units = units_from_labels(unit, np.zeros(len(unit), np.int64), n_units=40)
    boxes = np.column_stack([rng.uniform(0, 0.5, (len(unit), 2)), rng.uniform(0, 0.4, (len(unit), 2))])
    fused = fuse_boxes(boxes, units, np.ones(len(unit)))
    assert np.array_equal(fused.boxes, fuse_boxes(boxes, units, np.ones(len(unit)),
                                                  offsets=BoxOffsets.of(boxes, units)).boxes)
    pi, pj = member_pairs(units)
    keep = rng.random(len(pi)) < 0.6
    sq, dim = BoxPairs.of(boxes, units, pi, pj).select(keep).differences(fused)
    a, b = boxes[units.order[pi[keep]]], boxes[units.order[pj[keep]]]
    s = np.maximum(fused.boxes[units.member_unit[pi[keep]], 2:], 1e-9)
    dc = ((a[:, :2] + a[:, 2:] / 2) - (b[:, :2] + b[:, 2:] / 2)) / s
    dl = np.log(np.maximum(a[:, 2:], 1e-9)) - np.log(np.maximum(b[:, 2:], 1e-9))
    assert np.array_equal(sq, (dc ** 2).sum(axis=1) + (dl ** 2).sum(axis=1)) and (dim == 4).all()
    assert isinstance(fused, Fused)


def test_em_on_the_demo_estimates_its_raters_and_beats_single_raters():
    data, truth = _demo()
    res = consensus(data)
    assert res.converged
    rep = {name: i for i, name in enumerate(res.raters)}
    se = res.report.sensitivity
    assert se[rep["careful"]] > 0.97 and se[rep["misses_small"]] < 0.8
    sig = res.report.localisation_noise
    assert sig[rep["sloppy"]] > 2 * sig[rep["careful"]]
    conf = res.report.confusion[rep["confuses_classes"]]
    ci, ei = res.classes.index("circle"), res.classes.index("ellipse")
    assert conf[ci, ei] > 0.3 and conf[ei, ci] > 0.3
    assert res.report.confusion[rep["careful"]][ci, ci] > 0.9
    assert res.report.n_samples[rep["part_time"]] < res.report.n_samples[rep["careful"]]
    from agreement.methods.ot.baselines import f1_at_iou

    def f1(ann, rater):
        tp = n = 0
        for s in range(ann.num_samples):
            a, t = ann.rows(s, rater), truth.rows(s, 0)
            m = f1_at_iou(ann.boxes[a], ann.labels[a], truth.boxes[t], truth.labels[t])
            tp += m.n_matched
            n += m.n_a + m.n_b
        return 2 * tp / n

    cons = f1(res.to_annotations(), 0)
    best_single = max(f1(data, r) for r in range(data.num_raters))
    assert cons > best_single


def test_model_reuse_gives_shard_results_equal_to_the_whole():
    data, _ = _demo(80)
    full = consensus(data)
    half = np.arange(0, 80, 2)
    part = consensus(data.select_samples(half), model=full.model)
    again = consensus(data, model=full.model)
    np.testing.assert_allclose(again.confidence, full.confidence, atol=1e-3)
    pos = {s: k for k, s in enumerate(half)}
    mine = np.isin(again.unit_sample, half)
    keep = np.lexsort((again.boxes[mine, 0], np.array([pos[s] for s in again.unit_sample[mine]])))
    keep2 = np.lexsort((part.boxes[:, 0], part.unit_sample))
    np.testing.assert_array_equal(part.confidence[keep2], again.confidence[mine][keep])
    np.testing.assert_array_equal(part.boxes[keep2], again.boxes[mine][keep])


def test_rater_and_sample_order_do_not_change_the_consensus():
    data, _ = _demo(60)
    res = consensus(data)
    perm = np.random.default_rng(0).permutation(60)
    shuffled = data.select_samples(perm)
    res2 = consensus(shuffled)
    assert res2.n_consensus == res.n_consensus
    key = lambda r, samples: sorted(  # noqa: E731
        (str(samples[s]), *np.round(b, 9), str(lab), round(float(c), 3))
        for s, b, lab, c in zip(r.unit_sample, r.boxes, r.label, r.confidence))
    # The same units, boxes and classes; confidences to the EM's stopping tolerance.
    assert key(res, data.sample_ids) == key(res2, shuffled.sample_ids)


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


def test_result_fields_are_consistent():
    data, _ = _demo(40)
    res = consensus(data, review_band=(0.2, 0.8))
    U, N, S = res.n_units, len(data), data.num_samples
    assert res.member_offsets[-1] == len(res.member_rows) == N
    assert np.array_equal(np.sort(res.member_rows), np.arange(N))
    for u in range(0, U, 7):
        assert np.all(res.row_unit[res.members(u)] == u)
        assert res.support[u] == len(res.members(u))
    kept = res.is_consensus
    assert np.array_equal(kept, res.confidence >= 0.5)
    assert np.array_equal(res.consensus_index[kept], np.arange(kept.sum()))
    assert np.all(res.consensus_index[~kept] == -1)
    assert res.sample_n_consensus.sum() == kept.sum() and len(res.sample_n_review) == S
    assert res.sample_n_review.sum() == res.review.sum()
    assert not np.any(res.review & ~kept)  # only consensus labels are flagged: the queue holds them all
    for s in range(S):
        c = (res.confidence * res.class_probability)[(res.unit_sample == s) & kept]  # label confidence
        assert (np.isnan(res.sample_min_confidence[s]) and not len(c)) or res.sample_min_confidence[s] == c.min()
    agrees = res.row_agrees
    assert np.all(res.row_consensus[agrees] >= 0)
    assert np.all(res.label[res.row_unit[agrees]] == data.labels[agrees])
    ann = res.to_annotations()
    assert len(ann) == kept.sum() and ann.raters == ("consensus",)
    json.dumps(res.report.as_dict())
    json.dumps(res.summary())
    json.dumps(res.model.as_dict())
    for field in ("sensitivity", "false_positive_rate", "precision", "localisation_error", "agreement"):
        v = getattr(res.report, field)
        assert v.shape == (data.num_raters,) and np.all((v >= 0) | np.isnan(v))


def test_review_flags_follow_the_band():
    data, _ = _demo(40)
    res = consensus(data, method="majority", review_band=(0.3, 0.9))
    lo, hi = 0.3, 0.9
    expect = ((res.confidence >= lo) & (res.confidence < hi)) | ((res.confidence >= lo) & (res.class_probability < hi))
    assert np.array_equal(res.review, expect)


# --------------------------------------------------------------------------
# Degenerate designs: nothing labelled, raters who never meet (issue 47)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["em", "majority", "wbf"])
def test_nothing_labelled_gives_no_consensus_and_says_why(method):
    """Every rater looked and drew nothing: the EM divided by zero classes. Now: no unit, no consensus
    label, agreement and mean confidence NaN with the reason, on the result and in its summary."""
    empty = AnnotationSet.empty()
    data = MultiRaterAnnotations.from_sets([f"s{i}" for i in range(5)], RATERS, [{r: empty for r in RATERS}] * 5,
                                           image_sizes=np.tile([100.0, 100.0], (5, 1)))
    res = consensus(data, method=method)
    assert res.n_units == 0 and res.n_consensus == 0 and res.converged
    assert np.isnan(res.agreement) and res.agreement_reason.startswith("no rater labelled anything")
    assert np.isnan(res.mean_confidence) and res.mean_confidence_reason.startswith("no rater labelled anything")
    s = res.summary()
    assert np.isnan(s["agreement"]) and s["agreement_reason"] == res.agreement_reason
    assert np.isnan(s["mean_confidence"]) and s["mean_confidence_reason"] == res.mean_confidence_reason
    assert res.to_annotations().num_samples == 5 and len(res.to_annotations()) == 0


def test_raters_who_never_meet_leave_the_library_result_undefined_with_the_reason():
    """alice labels samples 0-9, bob 10-19: the result itself (not only the bridge's summary) has agreement
    and mean confidence NaN with the reason, and the single-rater labels are kept."""
    box = AnnotationSet([[0.1, 0.1, 0.3, 0.3]], ["cat"], [None])
    sets = [{"alice": box} if i < 10 else {"bob": box} for i in range(20)]
    res = consensus(MultiRaterAnnotations.from_sets([f"s{i}" for i in range(20)], ["alice", "bob"], sets))
    assert np.isnan(res.agreement) and "never meet" in res.agreement_reason
    assert np.isnan(res.mean_confidence) and "never meet" in res.mean_confidence_reason
    assert res.n_consensus == 20 and res.summary()["n_single_rater"] == 20
    assert res.summary()["agreement_reason"] == res.agreement_reason


def test_defined_headline_has_no_reason():
    res = consensus(_identical())
    assert res.agreement == pytest.approx(1.0) and res.agreement_reason == ""
    assert 0.5 < res.mean_confidence <= 1.0 and res.mean_confidence_reason == ""


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------


def test_one_rater_is_an_error():
    data = MultiRaterAnnotations.from_sets(["s"], ["a"], [{"a": AnnotationSet([[0, 0, 0.1, 0.1]], ["x"], [None])}])
    with pytest.raises(ValueError, match="at least two"):
        consensus(data)


@pytest.mark.parametrize("name", ["min_confidence", "quorum"])
@pytest.mark.parametrize("value", [0.0, -0.1, 1.5, float("nan"), True, "0.5", None])
def test_probabilities_outside_the_unit_interval_are_errors(name, value):
    with pytest.raises(ValueError, match=name):
        consensus(_identical(3), **{name: value})


@pytest.mark.parametrize("kw, match", [
    (dict(method="vote"), "unknown method"),
    (dict(tau=0.0), "tau"),
    (dict(review_band=(0.8, 0.2)), "review_band"),
    (dict(review_band=0.5), "review_band"),
    (dict(geometry="lines"), "unsupported geometry"),
    (dict(geometry="masks"), "masks"),
    (dict(solver="magic"), "solver"),
    (dict(smoothing=-1.0), "smoothing"),
    (dict(coincidence=1.0), "coincidence"),
    (dict(tail=0), "tail"),
    (dict(max_iter=0), "max_iter"),
])
def test_bad_parameters_are_clear_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        consensus(_identical(3), **kw)


def test_unsupported_label_type_is_an_error():
    data = MultiRaterAnnotations(
        sample_ids=["s"], raters=RATERS, assigned=np.ones((1, 3), bool), boxes=np.full((3, 4), np.nan),
        labels=np.array(["p"] * 3, dtype=object), label_ids=[None] * 3, sample_index=[0, 0, 0],
        rater_index=[0, 1, 2], points3d=np.zeros((3, 3)),
    )
    with pytest.raises(ValueError, match="unsupported label type"):
        consensus(data)


def test_mixed_label_types_across_raters_are_an_error_naming_them():
    masks = _sets(4, masks=True)
    plain = _sets(4)
    sets = [{"a": m, "b": m, "c": p} for m, p in zip(masks, plain)]
    data = MultiRaterAnnotations.from_sets([f"s{i}" for i in range(4)], RATERS, sets,
                                           image_sizes=np.tile([100.0, 100.0], (4, 1)))
    with pytest.raises(ValueError, match=r"mixed label types across raters \(boxes: c; masks: a, b\)"):
        consensus(data)
    assert consensus(data, geometry="boxes").geometry == "boxes"


def test_wbf_refuses_other_geometry_and_non_corpus_input():
    with pytest.raises(ValueError, match="wbf"):
        consensus(_identical(4, masks=True), method="wbf")
    with pytest.raises(TypeError, match="MultiRaterAnnotations"):
        consensus({"a": []})


def test_an_annotation_without_class_is_an_error():
    data = _identical(3)
    labels = data.labels.copy()
    labels[0] = None
    bad = MultiRaterAnnotations(sample_ids=data.sample_ids, raters=data.raters, assigned=data.assigned,
                                boxes=data.boxes, labels=labels, label_ids=data.label_ids,
                                sample_index=data.sample_index, rater_index=data.rater_index)
    with pytest.raises(ValueError, match="no class label"):
        consensus(bad)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_unknowns=st.integers(2, 40), lower=st.sampled_from([0.0, 1e-8, 0.3]))
def test_bounded_least_squares_equals_scipy_lsq_linear(seed, n_unknowns, lower):
    """The normal-equation NNLS of pairwise_scales against SciPy's bounded least squares (the oracle)."""
    from scipy.optimize import lsq_linear
    from scipy.sparse import csr_matrix

    from agreement.methods.consensus.scale import bounded_least_squares

    rng = np.random.default_rng(seed)
    rows = 3 * n_unknowns
    dense = rng.normal(size=(rows, n_unknowns)) * (rng.random((rows, n_unknowns)) < 0.3)
    dense[np.arange(n_unknowns), np.arange(n_unknowns)] += 1.0  # full column rank
    rhs = rng.normal(size=rows)  # some unknowns end on the bound, some not
    A = csr_matrix(dense)
    ours = bounded_least_squares(A, rhs, lower)
    ref = lsq_linear(dense, rhs, bounds=(lower, np.inf), method="bvls", tol=1e-14).x
    assert np.all(ours >= lower - 1e-12)
    cost = lambda x: float(np.sum((dense @ x - rhs) ** 2))  # noqa: E731
    assert cost(ours) <= cost(ref) + 1e-9 * max(1.0, cost(ref))
    np.testing.assert_allclose(ours, ref, atol=1e-7)


def test_em_stops_once_every_raters_noise_moves_by_under_a_tenth_of_its_standard_error(monkeypatch):
    """The crowd stopping rule: each σ_r within a small fraction of its standard error of the fully settled EM."""
    import agreement.methods.consensus.em as em
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(300, 120, raters_per_sample=8, seed=3)
    quick = consensus(corpus)
    assert quick.converged and quick.n_iter <= 8
    monkeypatch.setattr(em, "_sigma_tolerance", lambda n_pairs: np.full(len(n_pairs), 1e-7))
    settled = consensus(corpus, max_iter=500)
    assert settled.n_iter > quick.n_iter
    a, b = quick.model.localisation_noise, settled.model.localisation_noise
    ok = np.isfinite(a) & np.isfinite(b)
    assert ok.sum() > 100
    # log σ from n_r member pairs has a standard error of ~1/sqrt(n_r); the quick stop is far inside it
    np.testing.assert_allclose(np.log(a[ok]), np.log(b[ok]), atol=1e-3)
    np.testing.assert_allclose(quick.confidence, settled.confidence, atol=1e-6)
