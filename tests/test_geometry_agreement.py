"""Chance-corrected geometry agreement (agreement.methods.geometry_agreement).

Covers issue 5, items 1-6: the ordering property for every offered distance,
chance correction on an easy corpus, label flips, missed objects, both ends
of detection agreement, brute-force oracles (threshold matching, scipy's KS,
numpy's quantile, the ``krippendorff`` package), the bootstrap (weights,
determinism, order invariance, resampling samples), the pair budget,
undefined values, and the shared LVIS data. Issue 10: the pair budget bounds
the chance sample and skips (and lists) only a sample that alone exceeds it;
the chance strata are the rater pairs that share a sample, never all R^2.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy import stats

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.core.krippendorff import encode_values, nominal_alpha
from agreement.core.rater_pairs import RaterPairTable
from agreement.core.validation import AnnotationError
from agreement.methods.geometry_agreement import (
    DISTANCES,
    Cells,
    Engine,
    GeometryAgreementResult,
    PairSums,
    chance_pair_strata,
    geometry_agreement,
    within_set_pairs,
)
from agreement.methods.ot.baselines import threshold_match
from agreement.simulate.synthetic.crowd import crowd_corpus

REPO = Path(__file__).resolve().parent.parent
CLASSES = ("a", "b", "c", "d")
STATS = GeometryAgreementResult._STATS
_ANGLES = np.linspace(0.0, 2.0 * np.pi, 9)[:-1]


# ---------------------------------------------------------------------------
# Synthetic corpora
# ---------------------------------------------------------------------------


def make_truth(n_samples, per=(2, 5), seed=0, centred=False):
    """True objects per sample: centres, sizes, keypoint layouts, classes."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_samples):
        k = 1 if centred else int(rng.integers(per[0], per[1] + 1))
        if centred:  # one large object in the middle of every image
            wh = rng.uniform(0.55, 0.8, size=(1, 2))
            c = np.full((1, 2), 0.5)
        else:
            wh = rng.uniform(0.06, 0.3, size=(k, 2))
            c = rng.uniform(0.2, 0.8, size=(k, 2))
        kp = rng.uniform(-0.5, 0.5, size=(k, 17, 2))
        out.append((c, wh, kp, rng.choice(CLASSES, size=k)))
    return out


def draw(obj, noise, rng, miss=0.0):
    """One rater's annotations of the true objects: jittered boxes, octagon
    polygons, keypoints; each object missed with probability ``miss``."""
    c, wh, kp, labels = obj
    k = len(c)
    cj = c + rng.normal(0.0, noise, (k, 2)) * wh
    whj = wh * np.exp(rng.normal(0.0, noise, (k, 2)))
    x0 = np.clip(cj - whj / 2, 0.0, 1.0)
    x1 = np.clip(cj + whj / 2, 0.0, 1.0)
    boxes = np.hstack([x0, np.maximum(x1 - x0, 1e-4)])
    polys = []
    for i in range(k):
        r = 0.5 * (1.0 + rng.normal(0.0, noise, len(_ANGLES)))
        ring = np.stack([cj[i, 0] + r * whj[i, 0] * np.cos(_ANGLES), cj[i, 1] + r * whj[i, 1] * np.sin(_ANGLES)], 1)
        polys.append([np.clip(ring, 0.0, 1.0)])
    kps = np.clip(cj[:, None] + kp * wh[:, None] + rng.normal(0.0, noise, (k, 17, 2)) * wh[:, None], 0.0, 1.0)
    keep = rng.random(k) >= miss
    idx = np.flatnonzero(keep)
    return AnnotationSet(boxes[idx], labels[idx], [None] * len(idx),
                         polygons=[polys[i] for i in idx], keypoints=kps[idx])


def make_corpus(truth, n_raters=2, noise=0.05, seed=1, miss=0.0, unrelated=False):
    """Every rater annotates every sample. With ``unrelated``, odd raters draw
    the objects of the *previous* sample: their sets are unrelated to the
    sample's other sets."""
    rng = np.random.default_rng(seed)
    S = len(truth)
    raters = [f"r{r}" for r in range(n_raters)]
    sets = []
    for s in range(S):
        sets.append({
            name: draw(truth[(s - 1) % S if (unrelated and r % 2) else s], noise, rng, miss)
            for r, name in enumerate(raters)
        })
    return MultiRaterAnnotations.from_sets(
        [f"img{s:04d}" for s in range(S)], raters, sets, image_sizes=np.tile([[160.0, 120.0]], (S, 1)))


def with_rows(data, keep=None, labels=None):
    """A copy of ``data`` with some rows dropped and / or labels replaced."""
    keep = np.ones(len(data), bool) if keep is None else keep
    labels = data.labels if labels is None else labels
    idx = np.flatnonzero(keep)
    return MultiRaterAnnotations(
        sample_ids=data.sample_ids, raters=data.raters, assigned=data.assigned,
        boxes=data.boxes[idx], labels=np.asarray(labels, dtype=object)[idx], label_ids=data.label_ids[idx],
        sample_index=data.sample_index[idx], rater_index=data.rater_index[idx],
        image_sizes=data.image_sizes,
        polygons=[data.polygons[i] for i in idx] if data.polygons is not None else None,
        keypoints=data.keypoints[idx] if data.keypoints is not None else None,
    )


def with_big_sample(data, n_boxes, sample_id="huge", seed=0, raters=None):
    """``data`` plus one sample on which every rater (or ``raters``) draws the
    same ``n_boxes`` small boxes, jittered: a sample that costs
    ``pairs * n_boxes^2`` within-item comparisons."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.05, 0.9, (n_boxes, 2))
    big = {}
    for name in data.raters if raters is None else raters:
        boxes = np.c_[centres + rng.normal(0, 0.002, centres.shape), np.full((n_boxes, 2), 0.04)]
        big[name] = AnnotationSet(boxes, ["a"] * n_boxes, [None] * n_boxes)
    sets = [data.sets(s) for s in range(data.num_samples)] + [big]
    sizes = np.vstack([data.image_sizes, data.image_sizes[:1]])
    return MultiRaterAnnotations.from_sets([*data.sample_ids, sample_id], list(data.raters), sets, image_sizes=sizes)


def boxes_corpus(sets_per_sample, raters=("r1", "r2"), ids=None):
    """A corpus from plain ``{rater: [(box, label), ...] or None}`` dicts."""
    sets = []
    for m in sets_per_sample:
        sets.append({
            r: None if v is None else AnnotationSet(
                np.asarray([b for b, _ in v], float).reshape(-1, 4), [lab for _, lab in v], [None] * len(v))
            for r, v in m.items()
        })
    ids = ids or [f"s{i}" for i in range(len(sets))]
    return MultiRaterAnnotations.from_sets(ids, list(raters), sets, box_policy="clip")


# ---------------------------------------------------------------------------
# Done-when: ordering, chance correction, label flip, missed object
# ---------------------------------------------------------------------------

def make_cuboid_corpus(n_samples, n_raters, noise, seed=1, truth_seed=0):
    """3D scenes of 2-4 cuboids (metres, yaw and small tilts); every rater
    jitters location, dimensions and rotation."""
    t, rng = np.random.default_rng(truth_seed), np.random.default_rng(seed)
    k = t.integers(2, 5, n_samples)
    loc = [t.uniform(0, 20, (n, 3)) for n in k]
    dim = [t.uniform(1, 4, (n, 3)) for n in k]
    rot = [np.c_[t.uniform(-0.2, 0.2, (n, 2)), t.uniform(-np.pi, np.pi, n)] for n in k]
    cub, si, ri = [], [], []
    for s in range(n_samples):
        for r in range(n_raters):
            n = k[s]
            cub.append(np.hstack([loc[s] + rng.normal(0, noise, (n, 3)) * dim[s],
                                  dim[s] * np.exp(rng.normal(0, noise, (n, 3))),
                                  rot[s] + rng.normal(0, noise, (n, 3))]))
            si += [s] * n
            ri += [r] * n
    cub = np.vstack(cub)
    N = len(cub)
    return MultiRaterAnnotations(
        sample_ids=np.array([f"scene{s}" for s in range(n_samples)], object),
        raters=tuple(f"r{r}" for r in range(n_raters)), assigned=np.ones((n_samples, n_raters), bool),
        boxes=np.full((N, 4), np.nan), labels=np.array(["car"] * N, object), label_ids=np.full(N, None, object),
        sample_index=np.array(si), rater_index=np.array(ri), cuboids=cub)


# Keypoints (OKS) and cuboids of different samples almost never reach a
# similarity of 0.5, so at the default threshold their chance distribution is
# empty (σ undefined, with that reason): they are compared with threshold 0.
_THRESHOLD = {"oks": 0.0, "cuboid_iou": 0.0}


def test_offered_distances_are_similarities():
    from agreement.geometry.similarity import SIMILARITIES

    assert set(DISTANCES) <= set(SIMILARITIES)
    assert DISTANCES[:2] == ("giou", "iou")


# point3d, polyline3d_f1 and segment_jaccard have their own corpora and the
# same ordering test in tests/test_geometry_3d_extras.py
@pytest.mark.parametrize("distance", [d for d in DISTANCES if d not in ("point3d", "polyline3d_f1", "segment_jaccard")])
def test_noisier_annotations_score_lower_for_every_distance(distance):
    truth = make_truth(60, seed=0)
    t = _THRESHOLD.get(distance, 0.5)

    def corpus(noise):
        if distance == "cuboid_iou":
            return make_cuboid_corpus(60, 3, noise)
        return make_corpus(truth, 3, noise, seed=1)

    # 3D IoU of chance pairs is almost always 0, so σ saturates for small
    # noise: cuboids get larger noise levels.
    levels = (0.1, 0.3, 0.6) if distance == "cuboid_iou" else (0.02, 0.08, 0.2)
    results = [
        geometry_agreement(corpus(noise), distance=distance, threshold=t, bootstrap=None, max_pairs=20_000)
        for noise in levels
    ]
    for name in ("sigma", "distance_alpha", "ks_greater"):
        values = [getattr(r, name).value for r in results]
        assert np.all(np.isfinite(values)), (name, values)
        assert values[0] > values[1] > values[2], (distance, name, values)
    means = [r.mean_within for r in results]
    assert means[0] < means[1] < means[2]


@pytest.mark.parametrize("distance", ["giou", "iou", "centroid", "polygon_iou"])
def test_easy_corpus_of_one_large_centred_object_is_not_near_one(distance):
    # Every image holds one large centred object: raw overlap is high for any
    # two annotations, same image or not. Chance correction must see that.
    data = make_corpus(make_truth(150, centred=True, seed=3), 2, noise=0.03, seed=1)
    r = geometry_agreement(data, distance=distance, bootstrap=None)
    if distance in ("giou", "iou", "polygon_iou"):
        assert 1.0 - r.mean_within > 0.8  # the uncorrected similarity looks excellent
    assert r.sigma.value < 0.6
    assert r.distance_alpha.value < 0.6
    # Between-item pairs of such a corpus do match: the baseline is not empty.
    assert r.n_between > 100


def test_label_flip_lowers_classification_and_leaves_localisation():
    data = make_corpus(make_truth(120, seed=4), 2, noise=0.03, seed=2)
    rng = np.random.default_rng(0)
    flip = (data.rater_index == 1) & (rng.random(len(data)) < 0.3)
    labels = data.labels.copy()
    labels[flip] = [CLASSES[(CLASSES.index(x) + 1) % 4] for x in labels[flip]]
    base = geometry_agreement(data, bootstrap=None)
    flipped = geometry_agreement(with_rows(data, labels=labels), bootstrap=None)
    assert base.classification_alpha.value == pytest.approx(1.0)
    assert flipped.classification_alpha.value < 0.8
    # Matching is class-agnostic: localisation and detection do not move.
    for name in ("sigma", "distance_alpha", "ks", "detection_alpha"):
        assert getattr(flipped, name).value == getattr(base, name).value
    assert flipped.distance_alpha.value > 0.7 and flipped.sigma.value > 0.9


def test_missed_object_lowers_detection():
    data = make_corpus(make_truth(120, seed=5), 2, noise=0.03, seed=2)
    rng = np.random.default_rng(1)
    drop = (data.rater_index == 1) & (rng.random(len(data)) < 0.2)
    full = geometry_agreement(data, bootstrap=None)
    missed = geometry_agreement(with_rows(data, keep=~drop), bootstrap=None)
    assert full.detection_alpha.value == 1.0
    assert missed.detection_alpha.value < 0.9
    assert missed.unmatched_within > full.unmatched_within
    # The boxes that are still there are placed as well as before.
    assert abs(missed.distance_alpha.value - full.distance_alpha.value) < 0.05


@pytest.mark.parametrize("distance", ["giou", "iou"])
def test_detection_agreement_is_one_when_all_find_all(distance):
    data = make_corpus(make_truth(80, seed=6), 3, noise=0.02, seed=3)
    r = geometry_agreement(data, distance=distance, bootstrap=20)
    assert r.unmatched_within == 0.0 and r.unmatched_between > 0
    assert r.detection_alpha.value == 1.0
    assert r.detection_alpha.ci_low == r.detection_alpha.ci_high == 1.0


@pytest.mark.parametrize("distance", ["giou", "iou"])
def test_detection_agreement_is_about_zero_for_unrelated_samples(distance):
    data = make_corpus(make_truth(300, seed=7), 2, noise=0.05, seed=4, unrelated=True)
    r = geometry_agreement(data, distance=distance, bootstrap=200)
    assert abs(r.detection_alpha.value) < 0.05
    assert r.detection_alpha.ci_low < 0.0 < r.detection_alpha.ci_high
    # Localisation is at chance too: α near 0, σ near its chance level p.
    assert abs(r.distance_alpha.value) < 0.15
    assert r.sigma.value < 0.15
    # A related corpus from the same objects scores far higher.
    related = geometry_agreement(make_corpus(make_truth(300, seed=7), 2, noise=0.05, seed=4),
                                 distance=distance, bootstrap=None)
    assert related.detection_alpha.value > 0.9


# ---------------------------------------------------------------------------
# Oracles
# ---------------------------------------------------------------------------


def _brute_force(data, t):
    """Every within- and between-item set pair matched by threshold_match (IoU).

    Between-item set pairs: rater ``a`` on sample ``s`` against rater ``b``
    on sample ``u != s``, for every rater pair that shares some sample
    (``a`` the rater whose name sorts first; raters are sorted by name)."""
    names = list(data.raters)
    R = len(names)
    assert names == sorted(names)
    shares = {(a, b) for a in range(R) for b in range(a + 1, R) if (data.assigned[:, a] & data.assigned[:, b]).any()}
    W, B, Uw, Aw, Ub, Ab, la, lb = [], [], 0, 0, 0, 0, [], []
    for s in range(data.num_samples):
        for a in range(R):
            for b in range(a + 1, R):
                if not (data.assigned[s, a] and data.assigned[s, b]):
                    continue
                ra, rb = data.rows(s, a), data.rows(s, b)
                m = threshold_match(data.boxes[ra], data.boxes[rb], iou_threshold=t)
                W.extend(1.0 - m.iou)
                Uw += m.n_a + m.n_b - 2 * m.n_matched
                Aw += m.n_a + m.n_b
                la.extend(data.labels[ra][m.rows])
                lb.extend(data.labels[rb][m.cols])
    for a, b in sorted(shares):
        if True:
            for s in range(data.num_samples):
                for u in range(data.num_samples):
                    if s == u or not (data.assigned[s, a] and data.assigned[u, b]):
                        continue
                    m = threshold_match(data.boxes[data.rows(s, a)], data.boxes[data.rows(u, b)], iou_threshold=t)
                    B.extend(1.0 - m.iou)
                    Ub += m.n_a + m.n_b - 2 * m.n_matched
                    Ab += m.n_a + m.n_b
    return np.sort(W), np.sort(B), Uw / Aw, Ub / Ab, la, lb


def _messy_corpus(n=18, seed=0):
    """Three raters, partial assignment, misses, extra boxes, label noise."""
    rng = np.random.default_rng(seed)
    truth = make_truth(n, per=(1, 5), seed=seed)
    sets = []
    for obj in truth:
        m = {}
        for r in ("r1", "r2", "r3"):
            if rng.random() < 0.15:
                continue  # not assigned
            a = draw(obj, 0.12, rng, miss=0.2)
            boxes, labels = a.boxes, list(a.labels)
            labels = [CLASSES[int(rng.integers(4))] if rng.random() < 0.2 else x for x in labels]
            if rng.random() < 0.3:  # a false positive
                boxes = np.vstack([boxes, [[*rng.uniform(0.1, 0.6, 2), 0.2, 0.2]]])
                labels.append("a")
            m[r] = AnnotationSet(boxes, labels, [None] * len(boxes))
        sets.append(m)
    return MultiRaterAnnotations.from_sets([f"x{i}" for i in range(n)], ["r1", "r2", "r3"], sets)


def test_matches_brute_force_threshold_matching_and_independent_statistics():
    data = _messy_corpus()
    t = 0.3
    r = geometry_agreement(data, distance="iou", threshold=t, bootstrap=None, max_pairs=10**7)
    assert r.between_exact and not r.truncated
    W, B, Uo, Ue, la, lb = _brute_force(data, t)
    np.testing.assert_allclose(np.sort(r.pair_distance), W, atol=1e-12)
    np.testing.assert_allclose(np.sort(np.repeat(r.between_distances, r.between_weights)), B, atol=1e-12)
    assert r.unmatched_within == pytest.approx(Uo) and r.unmatched_between == pytest.approx(Ue)
    assert r.detection_alpha.value == pytest.approx(1.0 - Uo / Ue)
    # σ: numpy's (type 7) quantile and a strict inequality.
    assert r.sigma.value == pytest.approx(np.mean(W < np.quantile(B, 0.05)))
    assert r.between_quantile == pytest.approx(np.quantile(B, 0.05))
    assert r.distance_alpha.value == pytest.approx(1.0 - W.mean() / B.mean())
    # KS: scipy's two-sample statistics, both sides.
    assert r.ks.value == pytest.approx(stats.ks_2samp(W, B).statistic)
    assert r.ks_greater.value == pytest.approx(stats.ks_2samp(W, B, alternative="greater").statistic)
    assert r.ks_less.value == pytest.approx(stats.ks_2samp(W, B, alternative="less").statistic)
    # Classification: nominal α over matched pairs, against ours and the krippendorff package.
    krippendorff = pytest.importorskip("krippendorff")
    codes, _ = encode_values(np.array([la, lb], dtype=object), missing=())
    assert r.classification_alpha.value == pytest.approx(nominal_alpha(codes).alpha)
    assert r.classification_alpha.value == pytest.approx(
        krippendorff.alpha(reliability_data=codes.astype(float), level_of_measurement="nominal"))


def test_sampled_chance_baseline_counts_duplicate_draws():
    data = make_corpus(make_truth(40, seed=8), 3, noise=0.1, seed=5)
    r = geometry_agreement(data, bootstrap=None, max_pairs=6_000)
    assert not r.between_exact and r.between_draws > r.n_between_set_pairs  # some duplicates
    B = np.repeat(r.between_distances, r.between_weights)
    W = r.pair_distance
    assert r.n_between == len(B)
    assert r.sigma.value == pytest.approx(np.mean(W < np.quantile(B, 0.05)))
    assert r.ks.value == pytest.approx(stats.ks_2samp(W, B).statistic)
    # The budget bounds the chance sample; every sample is measured.
    assert r.n_between_comparisons <= 6_000 and r.n_samples_measured == 40 and not r.truncated


@pytest.mark.parametrize("distance", ["giou", "iou", "centroid"])
def test_stacked_box_blocks_give_the_same_numbers(distance):
    data = _messy_corpus(30, seed=2)
    a = geometry_agreement(data, distance=distance, bootstrap=10, stack=True)
    b = geometry_agreement(data, distance=distance, bootstrap=10, stack=False)
    for name in STATS:
        assert getattr(a, name) == pytest.approx(getattr(b, name), nan_ok=True), name
    np.testing.assert_array_equal(a.pair_rows, b.pair_rows)


def _expanded_engine_check(rng):
    S_m = int(rng.integers(2, 6))
    nw, nb = int(rng.integers(1, 30)), int(rng.integers(1, 30))
    dw = rng.choice(np.linspace(0, 0.5, 11), nw)  # ties within and across
    sw = rng.integers(0, S_m, nw)
    db = rng.choice(np.linspace(0, 0.5, 11), nb)
    sa = rng.integers(0, S_m, nb)
    sb = (sa + rng.integers(1, S_m, nb)) % S_m  # a different sample
    mb = rng.integers(1, 3, nb).astype(float)
    K = int(rng.integers(1, 10))
    pa = rng.integers(0, S_m, K)
    pb = (pa + rng.integers(1, S_m, K)) % S_m
    A_k = rng.integers(1, 6, K).astype(float)
    U_k = np.minimum(rng.integers(0, 6, K), A_k).astype(float)
    A_s = rng.integers(1, 6, S_m).astype(float)
    U_s = np.minimum(rng.integers(0, 6, S_m), A_s).astype(float)
    from scipy import sparse

    from agreement.methods.geometry_agreement.engine import _Classification, _Detection, _Localisation

    loc = _Localisation(within_distance=dw, within_sample=sw, between_distance=db, between_a=sa, between_b=sb,
                        between_mult=mb)
    det = _Detection(unmatched=U_s, annotations=A_s, pair_a=pa, pair_b=pb, pair_mult=np.ones(K),
                     pair_unmatched=U_k, pair_annotations=A_k)
    cls = _Classification(pairs=np.zeros(S_m), differ=np.zeros(S_m), classes=sparse.csr_matrix((S_m, 0)))
    e = Engine(S_m, loc, det, cls, 0.05)
    w = rng.integers(0, 4, S_m).astype(float)
    if w.sum() == 0:
        w[0] = 1
    got = e.compute(w[:, None])
    Wx = np.repeat(dw, w[sw].astype(int))
    Bx = np.repeat(db, (w[sa] * w[sb] * mb).astype(int))
    if len(Wx) and len(Bx):
        assert got["sigma"][0] == pytest.approx(np.mean(Wx < np.quantile(Bx, 0.05)))
        assert got["ks"][0] == pytest.approx(stats.ks_2samp(Wx, Bx).statistic)
        assert got["ks_greater"][0] == pytest.approx(stats.ks_2samp(Wx, Bx, alternative="greater").statistic)
        assert got["ks_less"][0] == pytest.approx(stats.ks_2samp(Wx, Bx, alternative="less").statistic)
        if Bx.mean() > 0:
            assert got["distance_alpha"][0] == pytest.approx(1 - Wx.mean() / Bx.mean())
    else:
        assert np.isnan(got["sigma"][0]) and np.isnan(got["ks"][0])
    wk = w[pa] * w[pb]
    if (w * A_s).sum() > 0 and (wk * A_k).sum() > 0 and (wk * U_k).sum() > 0:
        Uo = (w * U_s).sum() / (w * A_s).sum()
        Ue = (wk * U_k).sum() / (wk * A_k).sum()
        assert got["detection_alpha"][0] == pytest.approx(1 - Uo / Ue)


def test_bootstrap_weights_equal_explicit_resampled_multisets():
    # A resample weighs a sample drawn w times by w in the within-item
    # distribution and a between-item pair (i, j) by w_i w_j: the multisets
    # one would get by listing the draws, without pairing a sample with itself.
    rng = np.random.default_rng(0)
    for _ in range(200):
        _expanded_engine_check(rng)


def test_bootstrap_resamples_samples_not_instances():
    # Identical samples: any resample of samples leaves both distributions'
    # shapes unchanged, so the interval collapses to the estimate. Resampling
    # instances would not.
    one = draw(make_truth(1, per=(6, 6), seed=9)[0], 0.1, np.random.default_rng(0))
    two = draw(make_truth(1, per=(6, 6), seed=9)[0], 0.1, np.random.default_rng(1))
    data = MultiRaterAnnotations.from_sets(
        [f"copy{i}" for i in range(12)], ["r1", "r2"], [{"r1": one, "r2": two}] * 12)
    r = geometry_agreement(data, bootstrap=50)
    for name in ("sigma", "distance_alpha", "ks"):
        e = getattr(r, name)
        assert e.ci_low == pytest.approx(e.value) and e.ci_high == pytest.approx(e.value), name
    assert r.distance_alpha.value == pytest.approx(0.0, abs=1e-12)  # same-image = cross-image here


# ---------------------------------------------------------------------------
# Bootstrap: determinism, order invariance, parameters
# ---------------------------------------------------------------------------


def _permuted(data, seed):
    """The same corpus with samples and each rater's annotations reordered."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(data.num_samples)
    sets = []
    for s in order:
        m = {}
        for name, aset in data.sets(int(s)).items():
            p = rng.permutation(len(aset))
            m[name] = AnnotationSet(aset.boxes[p], aset.labels[p], aset.ids[p])
        sets.append(m)
    return MultiRaterAnnotations.from_sets(data.sample_ids[order], list(reversed(data.raters)), sets), order


def _assert_same(a: GeometryAgreementResult, b: GeometryAgreementResult, rtol=1e-10):
    ha, hb = a.headline(), b.headline()
    assert ha.keys() == hb.keys()
    for k in ha:
        if isinstance(ha[k], float):
            assert ha[k] == pytest.approx(hb[k], rel=rtol, abs=1e-12, nan_ok=True), k
        else:
            assert ha[k] == hb[k], k


def test_bootstrap_is_deterministic_and_invariant_to_sample_order():
    data = with_big_sample(_messy_corpus(40, seed=3), 60)
    kw = dict(distance="giou", bootstrap=40, max_pairs=800, seed=7)
    a = geometry_agreement(data, **kw)
    # both a skipped sample and a sampled chance baseline are exercised
    assert a.truncated and a.n_samples_skipped == 1 and not a.between_exact
    _assert_same(a, geometry_agreement(data, **kw))
    perm, order = _permuted(data, 1)
    p = geometry_agreement(perm, **kw)
    _assert_same(a, p)
    assert a.skipped_samples == p.skipped_samples and a.skipped_samples[0]["sample_id"] == "huge"
    # Per-sample results follow their samples.
    np.testing.assert_array_equal(a.sample_measured[order], p.sample_measured)
    np.testing.assert_array_equal(a.sample_skipped[order], p.sample_skipped)
    np.testing.assert_allclose(a.sample_distance[order], p.sample_distance, rtol=1e-12)
    # Another seed: another chance sample and other resamples.
    other = geometry_agreement(data, **{**kw, "seed": 8})
    assert other.sigma.ci_low != a.sigma.ci_low or other.distance_alpha.ci_high != a.distance_alpha.ci_high


def test_identical_numbers_after_a_restart():
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(REPO)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_geometry_agreement import _messy_corpus
        from agreement.methods.geometry_agreement import geometry_agreement
        r = geometry_agreement(_messy_corpus(30, seed=4), bootstrap=30, max_pairs=2_000)
        print(json.dumps(r.headline(), sort_keys=True, default=str))
    """)
    outs = []
    for hashseed in ("1", "2"):
        env = {"PYTHONHASHSEED": hashseed, "PATH": "/usr/bin:/bin"}
        outs.append(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                   env=env, check=True, cwd=REPO).stdout)
    assert outs[0] == outs[1] and outs[0].strip()
    assert json.loads(outs[0])["sigma"] == json.loads(outs[1])["sigma"]


def test_intervals_bracket_estimates_and_follow_confidence():
    data = make_corpus(make_truth(60, seed=10), 3, noise=0.1, seed=6, miss=0.1)
    wide = geometry_agreement(data, bootstrap=200, confidence=0.99)
    narrow = geometry_agreement(data, bootstrap=200, confidence=0.5)
    for name in STATS:
        w, n = getattr(wide, name), getattr(narrow, name)
        if not w.defined:
            continue
        assert w.ci_low <= n.ci_low <= n.ci_high <= w.ci_high, name
        assert w.n_resamples == 200
    for name in ("sigma", "distance_alpha", "detection_alpha"):
        e = getattr(wide, name)
        assert e.ci_low <= e.value <= e.ci_high


@pytest.mark.parametrize("bootstrap", [0, 1, -5, 2.5, True])
def test_bootstrap_below_two_is_a_clear_error(bootstrap):
    data = make_corpus(make_truth(5, seed=0), 2)
    with pytest.raises(ValueError, match="bootstrap"):
        geometry_agreement(data, bootstrap=bootstrap)


def test_no_bootstrap_gives_nan_intervals():
    r = geometry_agreement(make_corpus(make_truth(20, seed=0), 2), bootstrap=None)
    assert r.sigma.defined and np.isnan(r.sigma.ci_low) and np.isnan(r.sigma.ci_high)


@pytest.mark.parametrize("kw, match", [
    ({"distance": "hausdorff"}, "distance"), ({"threshold": 1.5}, "threshold"),
    ({"threshold": float("nan")}, "threshold"), ({"max_pairs": 0}, "max_pairs"),
    ({"confidence": 1.0}, "confidence"), ({"sigma_p": 0.0}, "sigma_p"),
])
def test_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        geometry_agreement(make_corpus(make_truth(4, seed=0), 2), **kw)


def test_bad_box_names_sample_and_rater():
    with pytest.raises(AnnotationError, match=r"photo\.jpg.*r2"):  # refused when the corpus is built
        geometry_agreement(boxes_corpus([{"r1": [([0.1, 0.1, 0.2, 0.2], "a")],
                                          "r2": [([0.1, np.nan, 0.2, 0.2], "a")]}], ids=["photo.jpg"]))


def test_missing_geometry_is_a_clear_error():
    data = boxes_corpus([{"r1": [([0.1, 0.1, 0.2, 0.2], "a")], "r2": [([0.1, 0.1, 0.2, 0.2], "a")]}])
    with pytest.raises(ValueError, match="polygons"):
        geometry_agreement(data, distance="polygon_iou")


# ---------------------------------------------------------------------------
# The pair budget
# ---------------------------------------------------------------------------


def test_budget_skips_only_a_sample_that_alone_exceeds_it_and_lists_it():
    truth = make_truth(30, per=(2, 3), seed=11)
    big = (np.random.default_rng(0).uniform(0.2, 0.8, (120, 2)), np.full((120, 2), 0.05),
           np.zeros((120, 17, 2)), np.array(["a"] * 120))
    data = make_corpus(truth + [big], 3, noise=0.03, seed=7)
    big_s = data.num_samples - 1
    full = geometry_agreement(data, bootstrap=None, max_pairs=10**7)
    assert not full.truncated and full.n_samples_measured == 31 and full.skipped_samples == ()
    need = 3 * 120 * 120  # three rater pairs of 120 x 120 boxes
    assert full.sample_comparisons[big_s] == need and full.n_comparisons == full.sample_comparisons.sum()
    r = geometry_agreement(data, bootstrap=None, max_pairs=20_000)
    assert r.truncated and r.n_samples_skipped == 1 and r.n_samples_measured == 30
    assert r.skipped_samples == ({"sample_id": data.sample_ids[big_s], "comparisons": need, "raters": 3,
                                  "annotations": 360},)
    assert r.sample_skipped.tolist() == [False] * 30 + [True]
    assert not r.sample_measured[big_s] and "skipped whole" in r.sample_reasons[big_s]
    assert f"needs {need} comparisons" in r.sample_reasons[big_s]
    assert np.isnan(r.sample_distance[big_s]) and r.sample_n_annotations[big_s] == 0
    rows = data.sample_index == big_s
    assert np.isnan(r.row_distance[rows]).all() and (r.row_n_matched[rows] == 0).all()
    # Every other sample is measured, whole, exactly as without a budget.
    m = r.sample_measured
    assert m.sum() == 30
    np.testing.assert_array_equal(r.sample_n_annotations[m], full.sample_n_annotations[m])
    np.testing.assert_array_equal(r.sample_n_matched[m], full.sample_n_matched[m])
    np.testing.assert_array_equal(r.sample_distance[m], full.sample_distance[m])
    # The budget bounds the chance sample, not the within-item work.
    assert r.n_comparisons == full.n_comparisons - need and r.n_between_comparisons <= 20_000
    # Exactly at the budget a sample is measured; one comparison more and it is skipped.
    assert not geometry_agreement(data, bootstrap=None, max_pairs=need).truncated
    assert geometry_agreement(data, bootstrap=None, max_pairs=need - 1).n_samples_skipped == 1
    # A tight budget skips exactly the samples that alone exceed it, listed by sample id.
    tight = geometry_agreement(data, bootstrap=None, max_pairs=12)
    over = full.sample_comparisons > 12
    assert 1 < over.sum() < 31
    np.testing.assert_array_equal(tight.sample_skipped, over)
    assert [x["sample_id"] for x in tight.skipped_samples] == sorted(data.sample_ids[over].tolist())
    assert tight.n_samples_skipped == over.sum() and tight.n_samples_measured == 31 - over.sum()
    assert tight.n_between_comparisons <= 12
    assert np.isnan(tight.sample_distance[over]).all()


def _crowd(S=300, R=150, k=10, seed=3):
    """A crowd corpus: k of R raters per sample, about 8 boxes each."""
    return crowd_corpus(S, R, raters_per_sample=k, min_objects=5, max_objects=13, seed=seed)[0]


def test_crowd_corpus_is_measured_whole_at_the_default_budget():
    data = _crowd()
    assert 7 <= len(data) / data.assigned.sum() <= 9  # about 8 boxes per rater and sample
    r = geometry_agreement(data, bootstrap=None)
    assert not r.truncated and r.n_samples_skipped == 0 and r.skipped_samples == ()
    assert r.n_samples_measured == 300 and r.sample_measured.all()
    # Far more within-item work than the budget: all of it done; the chance sample keeps to the budget.
    assert r.n_comparisons == r.sample_comparisons.sum() > 2 * 200_000
    assert r.n_between_comparisons <= 200_000 and not r.between_exact
    assert r.sigma.value > 0.8 and r.detection_alpha.value > 0.5


def test_crowd_with_one_huge_sample_skips_and_lists_only_it():
    data = _crowd()
    r = geometry_agreement(data, bootstrap=None)
    huge = with_big_sample(data, 80, sample_id="s_huge", raters=data.raters[:10])  # 45 rater pairs x 80^2 = 288,000 comparisons
    h = geometry_agreement(huge, bootstrap=None)
    assert h.truncated and h.n_samples_skipped == 1 and h.n_samples_measured == 300
    assert h.skipped_samples == ({"sample_id": "s_huge", "comparisons": 45 * 80 * 80, "raters": 10,
                                  "annotations": 800},)
    # The other samples are measured exactly as without the huge one.
    np.testing.assert_array_equal(h.sample_distance[:300], r.sample_distance)
    np.testing.assert_array_equal(h.sample_matched_fraction[:300], r.sample_matched_fraction)
    assert h.n_comparisons == r.n_comparisons
    # ... and the chance sample never sees the skipped sample: identical statistics.
    for name in STATS:
        assert getattr(h, name).value == pytest.approx(getattr(r, name).value, rel=1e-12, nan_ok=True), name


def test_chance_strata_are_the_rater_pairs_that_share_a_sample():
    # 500 raters, 10 per sample: the strata are the pairs that met, not all 124,750.
    data = _crowd(S=200, R=500, k=10, seed=5)
    counts = data.counts()
    pairs = PairSums.of(within_set_pairs(data, counts), data.num_raters)
    strata = chance_pair_strata(data.raters, Cells.of(data), pairs, np.arange(data.num_samples), data.num_samples)
    table = RaterPairTable.from_assignment(data.raters, data.assigned)
    assert len(strata.first) == len(table) < 200 * 45
    got = sorted(zip(np.minimum(strata.first, strata.second).tolist(), np.maximum(strata.first, strata.second).tolist()))
    assert got == list(zip(table.a.tolist(), table.b.tolist()))
    # sizes and populations from per-rater sums equal a direct count
    n_s = data.assigned.sum(axis=0)
    np.testing.assert_array_equal(strata.size, n_s[strata.first] * n_s[strata.second])
    shared = table.n_shared[table.index(strata.first, strata.second)]
    np.testing.assert_array_equal(strata.pop, strata.size - shared)
    x = 7  # one stratum's cost by brute force
    a, b = strata.first[x], strata.second[x]
    Sa, Sb = np.flatnonzero(data.assigned[:, a]), np.flatnonzero(data.assigned[:, b])
    assert strata.cost[x] == sum(max(1, counts[i, a] * counts[j, b]) for i in Sa for j in Sb if i != j)


def test_chance_baseline_leaves_out_rater_pairs_that_never_share_a_sample():
    # r1/r2 label samples 0-5, r3/r4 samples 6-11, r1/r3 samples 12-14:
    # (r1, r4), (r2, r3), (r2, r4) never meet and form no chance stratum.
    rng = np.random.default_rng(4)
    truth = make_truth(15, per=(1, 4), seed=4)
    groups = [("r1", "r2")] * 6 + [("r3", "r4")] * 6 + [("r1", "r3")] * 3
    sets = [{name: draw(obj, 0.1, rng, miss=0.2) for name in g} for obj, g in zip(truth, groups)]
    sets = [{k: AnnotationSet(v.boxes, v.labels, v.ids) for k, v in m.items()} for m in sets]
    data = MultiRaterAnnotations.from_sets([f"x{i:02d}" for i in range(15)], ["r1", "r2", "r3", "r4"], sets)
    r = geometry_agreement(data, distance="iou", threshold=0.3, bootstrap=None, max_pairs=10**7)
    assert r.between_exact
    W, B, Uo, Ue, _, _ = _brute_force(data, 0.3)
    np.testing.assert_allclose(np.sort(r.pair_distance), W, atol=1e-12)
    np.testing.assert_allclose(np.sort(np.repeat(r.between_distances, r.between_weights)), B, atol=1e-12)
    assert r.unmatched_between == pytest.approx(Ue)
    # |S_r1| |S_r2| - 6 + |S_r3| |S_r4| - 6 + |S_r1| |S_r3| - 3 = 9*6 - 6 + 9*6 - 6 + 9*9 - 3
    assert r.n_between_population == 48 + 48 + 78


# ---------------------------------------------------------------------------
# Undefined values
# ---------------------------------------------------------------------------


def test_single_rater_is_undefined_with_a_reason():
    data = boxes_corpus([{"r1": [([0.1, 0.1, 0.2, 0.2], "a")]}] * 3, raters=("r1",))
    r = geometry_agreement(data, bootstrap=10)
    for name in STATS:
        e = getattr(r, name)
        assert np.isnan(e.value) and "fewer than two raters" in e.reason


def test_everyone_drew_nothing():
    data = boxes_corpus([{"r1": [], "r2": []}] * 4)
    r = geometry_agreement(data, bootstrap=10)
    assert np.isnan(r.detection_alpha.value) and "drew nothing" in r.detection_alpha.reason
    assert np.isnan(r.sigma.value) and "no within-item matched pair" in r.sigma.reason
    assert np.isnan(r.classification_alpha.value) and r.classification_alpha.reason
    assert all("drew nothing" in x for x in r.sample_reasons)


def test_every_object_found_everywhere_alike_leaves_nothing_to_correct():
    # One identical object on every image, found by both raters: chance finds
    # it just as well, so detection agreement cannot be told from chance.
    data = boxes_corpus([{"r1": [([0.3, 0.3, 0.4, 0.4], "a")], "r2": [([0.3, 0.3, 0.4, 0.4], "a")]}] * 5)
    r = geometry_agreement(data, bootstrap=10)
    assert np.isnan(r.detection_alpha.value) and "no variation" in r.detection_alpha.reason
    assert np.isnan(r.distance_alpha.value) and "distance 0" in r.distance_alpha.reason
    assert np.isnan(r.classification_alpha.value) and "same class" in r.classification_alpha.reason


def test_no_chance_match_and_no_chance_pair():
    # Tiny boxes at a different place on every image: raters agree, chance never matches.
    sets = [{"r1": [([0.1 * i, 0.1 * i, 0.05, 0.05], "a")], "r2": [([0.1 * i, 0.1 * i, 0.05, 0.05], "b")]}
            for i in range(8)]
    r = geometry_agreement(boxes_corpus(sets), distance="iou", bootstrap=10)
    assert r.n_between == 0 and r.n_within == 8
    for name in ("sigma", "distance_alpha", "ks", "ks_greater", "ks_less"):
        e = getattr(r, name)
        assert np.isnan(e.value) and "no between-item matched pair" in e.reason
    assert r.detection_alpha.value == 1.0
    one = geometry_agreement(boxes_corpus(sets[:1]), distance="iou", bootstrap=10)
    assert np.isnan(one.sigma.value) and "no between-item set pair" in one.sigma.reason
    assert np.isnan(one.detection_alpha.value) and "no between-item set pair" in one.detection_alpha.reason


def test_per_sample_reasons():
    sets = [
        {"r1": [([0.1, 0.1, 0.2, 0.2], "a")], "r2": [([0.1, 0.1, 0.2, 0.2], "a")]},
        {"r1": [([0.1, 0.1, 0.2, 0.2], "a")], "r2": None},
        {"r1": [([0.1, 0.1, 0.1, 0.1], "a")], "r2": [([0.7, 0.7, 0.1, 0.1], "a")]},
        {"r1": [], "r2": []},
    ]
    r = geometry_agreement(boxes_corpus(sets), bootstrap=None)
    assert r.sample_reasons[0] == "" and r.sample_distance[0] == pytest.approx(0.0)
    assert "fewer than two raters" in r.sample_reasons[1]
    assert "no two raters" in r.sample_reasons[2] and r.sample_matched_fraction[2] == 0.0
    assert "drew nothing" in r.sample_reasons[3] and np.isnan(r.sample_matched_fraction[3])


def test_per_row_and_per_sample_distances():
    data = make_corpus(make_truth(30, seed=12), 2, noise=0.1, seed=8, miss=0.2)
    r = geometry_agreement(data, bootstrap=None)
    i, j = r.pair_rows[:, 0], r.pair_rows[:, 1]
    np.testing.assert_allclose(r.row_distance[i], r.pair_distance)
    np.testing.assert_allclose(r.row_distance[j], r.pair_distance)
    unmatched = np.setdiff1d(np.arange(len(data)), r.pair_rows.ravel())
    assert np.isnan(r.row_distance[unmatched]).all() and (r.row_n_matched[unmatched] == 0).all()
    for s in range(data.num_samples):
        d = r.pair_distance[data.sample_index[i] == s]
        if len(d):
            assert r.sample_distance[s] == pytest.approx(d.mean())
        else:
            assert np.isnan(r.sample_distance[s])
    assert (data.rater_index[i] != data.rater_index[j]).all()
    assert (data.sample_index[i] == data.sample_index[j]).all()


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------


@st.composite
def small_corpora(draw_):
    S = draw_(st.integers(1, 6))
    R = draw_(st.integers(2, 3))
    coords = st.floats(0.0, 0.8, allow_nan=False)
    sizes = st.floats(0.0, 0.2, allow_nan=False)
    sets = []
    for _ in range(S):
        m = {}
        for r in range(R):
            if draw_(st.booleans()) and draw_(st.booleans()):
                continue  # not assigned, a quarter of the time
            n = draw_(st.integers(0, 3))
            m[f"r{r}"] = [([draw_(coords), draw_(coords), draw_(sizes), draw_(sizes)],
                           draw_(st.sampled_from(CLASSES[:2]))) for _ in range(n)]
        sets.append(m)
    return boxes_corpus(sets, raters=tuple(f"r{r}" for r in range(R)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_corpora(), st.sampled_from(["giou", "iou", "centroid"]), st.sampled_from([0.0, 0.3, 0.5]))
def test_ranges_and_consistency(data, distance, threshold):
    r = geometry_agreement(data, distance=distance, threshold=threshold, bootstrap=5)
    for name in STATS:
        e = getattr(r, name)
        assert np.isnan(e.value) == bool(e.reason) or (not np.isnan(e.value) and e.reason.startswith("interval"))
        if e.defined:
            assert e.value <= 1.0 + 1e-12
            if not np.isnan(e.ci_low):
                assert e.ci_low <= e.ci_high
    for name in ("sigma", "ks", "ks_greater", "ks_less"):
        v = getattr(r, name).value
        assert np.isnan(v) or 0.0 <= v <= 1.0
    if r.ks.defined:
        assert r.ks.value == pytest.approx(max(r.ks_greater.value, r.ks_less.value))
    assert np.all(r.pair_distance <= 1.0 - threshold + 1e-12)
    assert np.all(r.between_distances <= 1.0 - threshold + 1e-12)
    assert r.n_within == len(r.pair_distance)


@st.composite
def tied_corpora(draw_):
    """Boxes in the cells of a 4 x 4 grid (one cell each, jittered inside it): two boxes of different
    cells share nothing (IoU exactly 0), so at threshold 0 many matchings tie on total similarity."""
    S, R = draw_(st.integers(2, 5)), draw_(st.integers(2, 3))
    sets = []
    for _ in range(S):
        m = {}
        for r in range(R):
            cells = draw_(st.lists(st.integers(0, 15), min_size=0, max_size=4, unique=True))
            m[f"r{r}"] = [([0.25 * (c % 4) + draw_(st.sampled_from([0.01, 0.03])), 0.25 * (c // 4) + 0.02,
                            0.15, 0.15], draw_(st.sampled_from(CLASSES[:3]))) for c in cells]
        sets.append(m)
    return boxes_corpus(sets, raters=tuple(f"r{r}" for r in range(R)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tied_corpora(), st.integers(0, 1000), st.sampled_from(["iou", "giou"]))
def test_ties_at_threshold_zero_do_not_depend_on_the_order_of_labels_samples_or_raters(data, seed, distance):
    """Issue 47: at threshold 0 every pair is eligible and pairs of similarity 0 (or below what ``K + s`` resolves)
    tie; the matching breaks such ties by the annotations' geometry (``ties.pair_tiebreak``), never by their
    order: every statistic, classification α included, is unchanged when samples, each rater's labels and the
    raters are reordered."""
    kw = dict(distance=distance, threshold=0.0, bootstrap=None)
    _assert_same(geometry_agreement(data, **kw), geometry_agreement(_permuted(data, seed)[0], **kw), rtol=1e-12)


def test_ties_at_threshold_zero_keypoints_and_3d_polylines():
    """The matrix's failing cells: keypoints (OKS underflows to values that ``K + s`` cannot resolve) and
    3D polylines (F1 exactly 0 between unrelated polylines), classification α under reordering."""
    import sys as _sys

    _sys.path.insert(0, str(REPO / "tests"))
    from validation_matrix.images_corpora import realise, reference
    from validation_matrix.images_designs import crowd, renamed_raters, reordered

    base = crowd(reference(24, seed=0))
    for kind, distance in (("keypoints", "oks"), ("3D polylines", "polyline3d_f1")):
        ref = geometry_agreement(realise(base, kind), distance=distance, threshold=0.0, bootstrap=None)
        for variant in (reordered(base), renamed_raters(base)):
            _assert_same(ref, geometry_agreement(realise(variant, kind), distance=distance, threshold=0.0,
                                                 bootstrap=None), rtol=1e-12)


# ---------------------------------------------------------------------------
# Shared LVIS data
# ---------------------------------------------------------------------------


@pytest.mark.shared_data
def test_lvis_geometry_agreement(lvis_path):
    from agreement.io.coco import read_multi_rater_coco

    data = read_multi_rater_coco(lvis_path).annotations
    print()
    for distance in ("giou", "iou"):
        # The default budget samples the chance baseline; 7M comparisons make
        # it exact (every between-item set pair), the numbers to quote.
        for max_pairs in (200_000, 7_000_000):
            r = geometry_agreement(data, distance=distance, bootstrap=1000, seed=0, max_pairs=max_pairs)
            print(f"LVIS {distance}, max_pairs {max_pairs:,}: {r.n_samples_measured} samples measured "
                  f"(truncated={r.truncated}), {r.n_within} within-item / {r.n_between} between-item matched "
                  f"pairs (chance baseline {'exact' if r.between_exact else 'sampled'}, "
                  f"{r.n_between_set_pairs} set pairs)")
            for name in STATS:
                e = getattr(r, name)
                print(f"  {name:22s} {e.value:7.4f}  95% CI [{e.ci_low:.4f}, {e.ci_high:.4f}]")
                assert e.defined and e.ci_low <= e.ci_high
            print(f"  mean within {r.mean_within:.4f}, mean between {r.mean_between:.4f}, "
                  f"q05(between) {r.between_quantile:.4f}, unmatched within {r.unmatched_within:.4f} "
                  f"/ between {r.unmatched_between:.4f}, KS p (two-sided) {r.ks_pvalue:.2e}")
            # 200 images: every one measured at the default budget too, nothing skipped
            assert not r.truncated and r.n_samples_measured == 200
            assert r.n_samples_skipped == 0 and r.skipped_samples == ()
            assert r.n_between_comparisons <= max_pairs
            assert r.between_exact == (max_pairs > 200_000)
            assert r.sigma.value > 0.5 and r.distance_alpha.value > 0.5
            assert r.detection_alpha.value > 0.5 and r.classification_alpha.value > 0.8
            assert r.ks_greater.value == r.ks.value  # agreement lies in the expected direction


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 59), max_size=5, unique=True),
       max_pairs=st.sampled_from([400, 200_000]))
def test_merged_shards_equal_the_whole_corpus_bit_for_bit(seed, cuts, max_pairs):
    import dataclasses

    from agreement.core.data import class_order
    from agreement.methods.geometry_agreement import geometry_shard, merge_geometry_shards
    from agreement.simulate.synthetic.crowd import crowd_corpus

    data, _ = crowd_corpus(60, 8, raters_per_sample=3, min_objects=0, max_objects=6, seed=seed)
    whole = geometry_agreement(data, bootstrap=30, max_pairs=max_pairs, seed=seed)
    vocab = class_order(data.labels.tolist())
    bounds = [0, *sorted(cuts), 60]
    shards = [geometry_shard(dataclasses.replace(data.select_samples(np.arange(lo, hi)), classes=vocab),
                             max_pairs=max_pairs) for lo, hi in zip(bounds[:-1], bounds[1:])]
    full = dataclasses.replace(data, classes=vocab)
    merged = merge_geometry_shards([s.without_rows() for s in shards], lambda idx: (full.select_samples(idx),
                                                                                     np.arange(len(idx))),
                                   bootstrap=30, max_pairs=max_pairs, seed=seed)
    a, b = whole.headline(), merged.headline()
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == b[k] or (isinstance(a[k], float) and np.isnan(a[k]) and np.isnan(b[k])), k
    for name in ("sample_distance", "sample_matched_fraction", "pair_distance", "between_distances"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name))
    assert merged.skipped_samples == whole.skipped_samples
    with_rows = merge_geometry_shards(shards, lambda idx: (full, idx), bootstrap=None, max_pairs=max_pairs,
                                      seed=seed)
    np.testing.assert_array_equal(with_rows.row_distance, whole.row_distance)
    np.testing.assert_array_equal(with_rows.pair_rows, whole.pair_rows)
