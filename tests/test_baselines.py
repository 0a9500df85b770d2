"""Threshold baselines: the matching (vs brute force), F1, mean IoU, and
Krippendorff's alpha over threshold matching with its documented coding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.core.krippendorff import nominal_alpha
from agreement.geometry.boxes import pairwise_iou
from agreement.methods.ot.baselines import NO_OBJECT, f1_at_iou, threshold_baselines, threshold_match


def _set(boxes, labels, prefix="x"):
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    return AnnotationSet(boxes, labels, [f"{prefix}{k}" for k in range(len(boxes))])


def test_maximum_cardinality_beats_greedy():
    # a0 overlaps b0 strongly and b1 enough; a1 overlaps only b0. Greedy by IoU
    # takes (a0, b0) and stops at one match; the maximum matching has two.
    a = np.array([[0.0, 0.0, 0.4, 0.4], [0.1, 0.0, 0.4, 0.4]])
    b = np.array([[0.02, 0.0, 0.4, 0.4], [-0.08, 0.0, 0.4, 0.4]])
    iou = pairwise_iou(a, b)
    assert iou[0, 0] > iou[1, 0] >= 0.5 and iou[0, 1] >= 0.5 and iou[1, 1] < 0.5
    m = threshold_match(a, b, iou_threshold=0.5)
    assert m.n_matched == 2
    assert sorted(zip(m.rows.tolist(), m.cols.tolist())) == [(0, 1), (1, 0)]
    assert np.all(m.iou >= 0.5)


def test_f1_hand():
    base = np.array([[0.0, 0.0, 0.2, 0.2], [0.4, 0.4, 0.2, 0.2], [0.7, 0.1, 0.2, 0.2]])
    a = base
    b = np.vstack([base[:2], [[0.1, 0.7, 0.1, 0.1]], [[0.8, 0.8, 0.1, 0.1]]])
    r = f1_at_iou(a, ["c", "c", "c"], b, ["c", "c", "c", "c"], iou_threshold=0.5)
    assert r.n_matched == 2
    assert r.f1 == pytest.approx(4 / 7)
    assert r.recall == pytest.approx(2 / 3) and r.precision == pytest.approx(2 / 4)
    assert r.mean_iou == pytest.approx(1.0)
    # Class-aware: a label change removes the match; class-agnostic keeps it.
    r2 = f1_at_iou(a, ["c", "d", "c"], b, ["c", "c", "c", "c"], iou_threshold=0.5)
    assert r2.n_matched == 1
    r3 = f1_at_iou(a, ["c", "d", "c"], b, ["c", "c", "c", "c"], iou_threshold=0.5, class_aware=False)
    assert r3.n_matched == 2


def test_empty_sets_and_thresholds():
    e = np.zeros((0, 4))
    r = f1_at_iou(e, [], e, [])
    assert np.isnan(r.f1) and "both sets empty" in r.reason
    r = f1_at_iou(np.array([[0.1, 0.1, 0.1, 0.1]]), ["a"], e, [])
    assert r.f1 == 0.0 and np.isnan(r.mean_iou) and "no matched pair" in r.reason
    with pytest.raises(ValueError):
        threshold_match(e, e, iou_threshold=0.0)
    with pytest.raises(ValueError):
        threshold_match(e, e, iou_threshold=1.5)


def _brute_force(iou, eligible):
    """Lexicographic (cardinality, total IoU) optimum over all partial matchings."""
    n, m = iou.shape
    best = (0, 0.0)

    def rec(i, used, k, tot):
        nonlocal best
        if i == n:
            if (k, tot) > (best[0], best[1] + 1e-12):
                best = (k, tot)
            return
        rec(i + 1, used, k, tot)
        for j in range(m):
            if j not in used and eligible[i, j]:
                rec(i + 1, used | {j}, k + 1, tot + iou[i, j])

    rec(0, frozenset(), 0, 0.0)
    return best


def test_matching_oracle_brute_force():
    rng = np.random.default_rng(17)
    for _ in range(150):
        n, m = int(rng.integers(0, 6)), int(rng.integers(0, 6))
        a = np.hstack([rng.uniform(0, 0.5, (n, 2)), rng.uniform(0.2, 0.5, (n, 2))])
        b = np.hstack([rng.uniform(0, 0.5, (m, 2)), rng.uniform(0.2, 0.5, (m, 2))])
        t = float(rng.uniform(0.1, 0.7))
        iou = pairwise_iou(a, b)
        k, tot = _brute_force(iou, iou >= t)
        res = threshold_match(a, b, iou_threshold=t)
        assert res.n_matched == k
        assert res.iou.sum() == pytest.approx(tot, abs=1e-9)


box = st.tuples(st.floats(0, 0.7), st.floats(0, 0.7), st.floats(0.05, 0.3), st.floats(0.05, 0.3))


@settings(max_examples=60, deadline=None)
@given(st.lists(box, max_size=6), st.lists(box, max_size=6), st.floats(0.1, 0.9))
def test_property_f1_symmetric_and_in_range(A, B, t):
    a = np.array(A, dtype=float).reshape(-1, 4)
    b = np.array(B, dtype=float).reshape(-1, 4)
    la, lb = ["x"] * len(a), ["x"] * len(b)
    r1 = f1_at_iou(a, la, b, lb, iou_threshold=t)
    r2 = f1_at_iou(b, lb, a, la, iou_threshold=t)
    if len(a) + len(b) == 0:
        assert np.isnan(r1.f1)
        return
    assert 0 <= r1.f1 <= 1
    assert r1.f1 == pytest.approx(r2.f1)
    if r1.n_matched:
        assert t - 1e-12 <= r1.mean_iou <= 1 + 1e-12
    same = f1_at_iou(a, la, a.copy(), la, iou_threshold=t)
    if len(a):
        assert same.f1 == pytest.approx(1.0) and same.mean_iou == pytest.approx(1.0)


def test_corpus_baselines_and_alpha_coding():
    bx = np.array([[0.1, 0.1, 0.2, 0.2], [0.5, 0.5, 0.2, 0.2], [0.7, 0.1, 0.1, 0.1]])
    sets = [
        # Matched pairs (cat, cat) and (dog, cat); r1's third box unmatched.
        {"r1": _set(bx, ["cat", "dog", "car"], "a"), "r2": _set(bx[:2], ["cat", "cat"], "b")},
        # Both empty: no unit, F1 undefined for the sample.
        {"r1": AnnotationSet.empty(), "r2": AnnotationSet.empty()},
        # Only r2 drew a box: unit (no_object, dog).
        {"r1": AnnotationSet.empty(), "r2": _set(bx[:1], ["dog"], "c")},
        # A single rater: not scored.
        {"r1": _set(bx[:1], ["cat"], "d")},
    ]
    data = MultiRaterAnnotations.from_sets(["s0", "s1", "s2", "s3"], ["r1", "r2"], sets)
    res = threshold_baselines(data, iou_threshold=0.5)
    # Class-aware F1: only (cat, cat) is a true positive on s0: 2 * 1 / 5.
    assert res.sample_f1[0] == pytest.approx(2 / 5)
    assert np.isnan(res.sample_f1[1]) and res.sample_reasons[1]
    assert res.sample_f1[2] == 0.0
    assert np.isnan(res.sample_f1[3]) and "fewer than two raters" in res.sample_reasons[3]
    assert res.f1_micro == pytest.approx(2 * 1 / (5 + 0 + 1))
    assert res.mean_iou == pytest.approx(1.0)
    # Alpha units (class-agnostic matching): (cat, cat), (dog, cat), (car, no_object),
    # (no_object, dog); coded with the categories, no_object last.
    cats = list(res.categories)
    assert cats[-1] == NO_OBJECT
    units = {(cats[x], cats[y]) for x, y in res.unit_values.T}
    assert units == {("cat", "cat"), ("dog", "cat"), ("car", NO_OBJECT), (NO_OBJECT, "dog")}
    code = {c: i for i, c in enumerate(cats)}
    rel = np.array([[code["cat"], code["dog"], code["car"], code[NO_OBJECT]],
                    [code["cat"], code["cat"], code[NO_OBJECT], code["dog"]]])
    assert res.alpha.alpha == pytest.approx(nominal_alpha(rel).alpha)
    assert len(res.pairs) == 1 and res.pairs.values["threshold_alpha"][0] == pytest.approx(res.alpha.alpha)


def test_alpha_pools_rater_pairs():
    rng = np.random.default_rng(8)
    sets = []
    for s in range(6):
        k = int(rng.integers(1, 4))
        truth = np.hstack([rng.uniform(0, 0.6, (k, 2)), rng.uniform(0.1, 0.3, (k, 2))])
        mapping = {}
        for r in ("a", "b", "c"):
            keep = rng.random(k) > 0.2
            jit = truth[keep] + rng.normal(0, 0.02, (keep.sum(), 4)) * [1, 1, 0, 0]
            mapping[r] = _set(jit, list(rng.choice(["x", "y"], keep.sum())), f"{s}{r}")
        sets.append(mapping)
    data = MultiRaterAnnotations.from_sets([f"s{i}" for i in range(6)], ["a", "b", "c"], sets, box_policy="clip")
    res = threshold_baselines(data)
    assert len(res.pairs) == 3
    assert res.alpha.alpha == pytest.approx(nominal_alpha(res.unit_values).alpha)
    for p in range(len(res.pairs)):
        a, b = res.pairs.a[p], res.pairs.b[p]
        sel = (res.pair_rater_a[res.unit_pair] == a) & (res.pair_rater_b[res.unit_pair] == b)
        ref = nominal_alpha(res.unit_values[:, sel])
        assert res.pairs.values["threshold_alpha"][p] == pytest.approx(ref.alpha, abs=1e-12)
    # Units per rater pair on a sample: n + m - k, with k the class-agnostic matching.
    for p in range(len(res.pair_sample)):
        s, a, b = res.pair_sample[p], res.pair_rater_a[p], res.pair_rater_b[p]
        A, B = data.get(s, a), data.get(s, b)
        k = threshold_match(A.boxes, B.boxes, iou_threshold=0.5).n_matched
        assert np.sum(res.unit_pair == p) == len(A) + len(B) - k


def test_corpus_pairs_equal_the_single_pair_functions():
    """The batched corpus matching equals threshold_match / f1_at_iou on every (sample, rater pair)."""
    rng = np.random.default_rng(12)
    raters = [f"r{k}" for k in range(8)]
    a = np.array([[0.0, 0.0, 0.4, 0.4], [0.1, 0.0, 0.4, 0.4]])  # greedy-trap pair (see above)
    b = np.array([[0.02, 0.0, 0.4, 0.4], [-0.08, 0.0, 0.4, 0.4]])
    sets = [{"r0": _set(a, ["x", "x"], "t"), "r1": _set(b, ["x", "x"], "u")}]
    for s in range(1, 15):
        k = int(rng.integers(1, 6))
        truth = np.hstack([rng.uniform(0, 0.6, (k, 2)), rng.uniform(0.05, 0.3, (k, 2))])
        mapping = {}
        for r in rng.choice(raters, 3, replace=False):
            keep = rng.random(k) > 0.2
            jit = truth[keep] + rng.normal(0, 0.03, (keep.sum(), 4)) * [1, 1, 0.5, 0.5]
            jit[:, 2:] = np.abs(jit[:, 2:]) + 0.01
            mapping[str(r)] = _set(jit, list(rng.choice(["x", "y"], keep.sum())), f"{s}{r}")
        sets.append(mapping)
    data = MultiRaterAnnotations.from_sets([f"s{i:02d}" for i in range(15)], raters, sets, box_policy="clip")
    res = threshold_baselines(data, iou_threshold=0.5)
    assert res.pair_n_matched[0] == 2  # maximum cardinality, not greedy
    for p in range(len(res.pair_sample)):
        A, B = data.get(res.pair_sample[p], res.pair_rater_a[p]), data.get(res.pair_sample[p], res.pair_rater_b[p])
        ref = f1_at_iou(A.boxes, A.labels, B.boxes, B.labels, iou_threshold=0.5)
        assert res.pair_n_matched[p] == ref.n_matched
        np.testing.assert_allclose([res.pair_f1[p], res.pair_mean_iou[p]], [ref.f1, ref.mean_iou], atol=1e-12)
        k = threshold_match(A.boxes, B.boxes, iou_threshold=0.5).n_matched
        assert np.sum(res.unit_pair == p) == len(A) + len(B) - k
    # Only the rater pairs that met are in the table; each has its alpha or a reason.
    met = {(x, y) for s in range(15) for x, y in data.iter_rater_pairs(s)}
    assert set(zip(res.pairs.a.tolist(), res.pairs.b.tolist())) == met
    for rec in res.pairs.to_records():
        assert (rec["threshold_alpha"] is None) == ("threshold_alpha_reason" in rec)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), grid=st.booleans(), max_block=st.sampled_from([1, 7, 1 << 17]))
def test_one_pass_of_ot_and_baselines_equals_the_two_passes(seed, grid, max_block):
    """The OT run's shared pass gives exactly (bit for bit) the OT scores and the baselines of the
    two functions called apart, degenerate boxes (zero area, identical, touching) included."""
    import dataclasses

    from agreement.methods.ot import sample_ot_scores
    from agreement.methods.ot.baselines import ot_scores_and_threshold_baselines

    rng = np.random.default_rng(seed)
    raters = [f"r{k}" for k in range(5)]
    sets = []
    for s in range(12):
        mapping = {}
        for r in raters:
            if rng.random() < 0.7:
                n = int(rng.integers(0, 6))
                if grid:  # coarse coordinates: exact ties, zero-area and identical boxes
                    bx = rng.integers(0, 4, (n, 4)) / 4.0
                else:
                    bx = np.hstack([rng.uniform(0, 0.7, (n, 2)), rng.uniform(0, 0.3, (n, 2))])
                mapping[r] = _set(bx, list(rng.choice(["x", "y", "z"], n)), f"{s}{r}")
        sets.append(mapping)
    data = MultiRaterAnnotations.from_sets([f"s{i:02d}" for i in range(12)], raters, sets, box_policy="clip")
    kw = dict(lam=0.6, beta=0.45, normalization="paper")
    scores, base = ot_scores_and_threshold_baselines(data, iou_threshold=0.5, max_block=max_block, **kw)
    ref_scores = sample_ot_scores(data, max_block=max_block, **kw)
    ref_base = threshold_baselines(data, iou_threshold=0.5, max_block=max_block)

    def same(x, y, where):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, where
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), where
        elif dataclasses.is_dataclass(x):
            for f in dataclasses.fields(x):
                same(getattr(x, f.name), getattr(y, f.name), f"{where}.{f.name}")
        elif isinstance(x, float) and np.isnan(x):
            assert np.isnan(y), where
        elif hasattr(x, "values") and hasattr(x, "reasons"):  # a RaterPairTable
            assert x.to_records() == y.to_records(), where
        elif isinstance(x, dict):
            assert x.keys() == y.keys(), where
            for k in x:
                same(x[k], y[k], f"{where}[{k}]")
        else:
            assert x == y, where

    same(scores, ref_scores, "scores")
    same(base, ref_base, "baselines")
