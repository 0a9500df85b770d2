"""Calibration of the distance and of τ: D_o / D_e on hand-made corpora, KS
oracles, τ* on constructed densities and its fallbacks, determinism, LVIS
against the ``kalos`` reference, and the PNG writer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import optimize, stats

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.geometry.boxes import pairwise_giou, pairwise_iou
from agreement.methods.kalos.calibration import (
    beta_from_tau,
    calibrate,
    disagreement_samples,
    ks_one_sided,
    ks_two_sided,
    plot_calibration_png,
    select_tau,
)


def _set(boxes, prefix="x"):
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    return AnnotationSet(boxes, ["obj"] * len(boxes), [f"{prefix}{k}" for k in range(len(boxes))])


def _random_boxes(rng, k):
    xy = rng.uniform(0, 0.75, size=(k, 2))
    wh = rng.uniform(0.05, 0.25, size=(k, 2))
    return np.hstack([xy, wh])


def _corpus(seed=0, S=60, raters=("a", "b"), mode="identical", max_boxes=4):
    """``identical``: every rater draws the same boxes; ``unrelated``: each
    rater draws its own random boxes; ``jitter``: small noise around shared boxes."""
    rng = np.random.default_rng(seed)
    sets = []
    for s in range(S):
        k = int(rng.integers(1, max_boxes + 1))
        truth = _random_boxes(rng, k)
        mapping = {}
        for r in raters:
            if mode == "identical":
                bx = truth
            elif mode == "unrelated":
                bx = _random_boxes(rng, int(rng.integers(1, max_boxes + 1)))
            else:
                bx = truth + rng.normal(0, 0.01, size=truth.shape) * [1, 1, 0.5, 0.5]
                bx[:, 2:] = np.abs(bx[:, 2:]) + 0.01
            mapping[r] = _set(bx, f"{s}{r}")
        sets.append(mapping)
    return MultiRaterAnnotations.from_sets([f"img{s:03d}" for s in range(S)], list(raters), sets, box_policy="clip")


# --------------------------------------------------------------- D_o and D_e


def test_hand_computed_observed_and_expected():
    A = [[0.0, 0.0, 0.2, 0.2], [0.5, 0.5, 0.2, 0.2]]
    B = [[0.0, 0.0, 0.2, 0.1]]
    sets = [
        {"a": _set(A), "b": _set(B), "c": AnnotationSet.empty()},  # c: explicit absence
        {"a": _set([[0.1, 0.1, 0.3, 0.3]])},  # b, c not assigned: no D_o
    ]
    data = MultiRaterAnnotations.from_sets(["s0", "s1"], ["a", "b", "c"], sets)
    d_o, d_e = disagreement_samples(data, "iou", seed=0)
    iou = pairwise_iou(A, B)
    # pairs (a,b): a's two boxes, then b's box; (a,c): a's two boxes -> 1; (b,c): b's box -> 1
    expected = np.concatenate([1 - iou.max(1), 1 - iou.max(0), [1.0, 1.0], [1.0]])
    np.testing.assert_allclose(d_o, expected, atol=1e-12)
    # D_e: one value per annotation (3 on s0, 1 on s1); s1's only other sample is s0.
    assert len(d_e) == 4
    assert np.all((d_e >= 0) & (d_e <= 1))
    # The reference set of s1 (rater a) is drawn on s0: one of a, b (boxes) or c (empty -> 1).
    other = [1 - pairwise_iou([[0.1, 0.1, 0.3, 0.3]], A).max(), 1 - pairwise_iou([[0.1, 0.1, 0.3, 0.3]], B).max(), 1.0]
    assert any(math.isclose(d_e[-1], v, abs_tol=1e-12) for v in other)


def test_giou_distance_is_half_one_minus_giou():
    data = _corpus(1, S=5, mode="jitter")
    d_o, _ = disagreement_samples(data, "giou")
    rows = lambda s, r: data.boxes[data.rows(s, r)]
    want = []
    for s in np.argsort([str(x) for x in data.sample_ids]):
        g = pairwise_giou(rows(s, 0), rows(s, 1))
        want += [((1 - g) / 2).min(1), ((1 - g) / 2).min(0)]
    np.testing.assert_allclose(d_o, np.concatenate(want), atol=1e-12)


def test_identical_raters_give_zero_observed_and_ks_near_one():
    data = _corpus(2, mode="identical")
    res = calibrate(data, distances=("iou", "giou"))
    for name in ("iou", "giou"):
        c = res.per_distance[name]
        assert np.all(c.d_observed == 0.0)
        assert c.ks_one_sided > 0.95
        # D_o has no spread: no density, τ* is the point of best CDF separation.
        assert c.tau_method == "ks_max"
        assert "observed density is undefined" in c.tau_fallback
        assert 0.0 < c.tau < c.d_expected.min()


def test_unrelated_raters_give_ks_near_zero():
    data = _corpus(3, S=300, mode="unrelated")
    res = calibrate(data, distances=("iou", "giou", "centroid"))
    for c in res.per_distance.values():
        assert c.ks_one_sided < 0.1, (c.distance, c.ks_one_sided)
        assert c.ks_two_sided < 0.1, (c.distance, c.ks_two_sided)


def test_implicit_absence_is_skipped_and_explicit_absence_counts_as_one():
    box = [[0.1, 0.1, 0.2, 0.2]]
    implicit = MultiRaterAnnotations.from_sets(["s0", "s1"], ["a", "b"], [{"a": _set(box)}, {"a": _set(box), "b": _set(box)}])
    explicit = MultiRaterAnnotations.from_sets(
        ["s0", "s1"], ["a", "b"], [{"a": _set(box), "b": AnnotationSet.empty()}, {"a": _set(box), "b": _set(box)}]
    )
    d_i, _ = disagreement_samples(implicit, "iou")
    d_x, _ = disagreement_samples(explicit, "iou")
    np.testing.assert_array_equal(d_i, [0.0, 0.0])
    np.testing.assert_array_equal(d_x, [1.0, 0.0, 0.0])


def test_expected_never_draws_the_same_sample():
    # Every sample holds the same box: a same-sample draw would give 0 in D_e,
    # a draw from the other sample (different box) gives a positive distance.
    sets = [{"a": _set([[0.1 * s, 0.0, 0.05, 0.05]]), "b": _set([[0.1 * s, 0.0, 0.05, 0.05]])} for s in range(5)]
    data = MultiRaterAnnotations.from_sets([f"s{s}" for s in range(5)], ["a", "b"], sets)
    for seed in range(5):
        _, d_e = disagreement_samples(data, "iou", seed=seed)
        assert np.all(d_e == 1.0)


def test_deterministic_and_sample_order_invariant():
    data = _corpus(4, S=40, raters=("a", "b", "c"), mode="jitter")
    d_o, d_e = disagreement_samples(data, "giou", seed=7)
    again = disagreement_samples(data, "giou", seed=7)
    np.testing.assert_array_equal(d_o, again[0])
    np.testing.assert_array_equal(d_e, again[1])
    perm = np.random.default_rng(0).permutation(data.num_samples)
    shuffled = data.select_samples(perm)
    p_o, p_e = disagreement_samples(shuffled, "giou", seed=7)
    np.testing.assert_array_equal(d_o, p_o)
    np.testing.assert_array_equal(d_e, p_e)
    # Another seed changes the draws (D_e), not D_o.
    o2, e2 = disagreement_samples(data, "giou", seed=8)
    np.testing.assert_array_equal(d_o, o2)
    assert not np.array_equal(d_e, e2)
    assert calibrate(data, seed=7).to_dict() == calibrate(shuffled, seed=7).to_dict()


def _renamed_and_reordered(data, names, seed=0):
    """``data`` with its raters renamed (``names[old]``; a different sort order), their order reversed,
    samples reordered and each set's labels shuffled."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(data.num_samples)
    sets = []
    for s in order:
        m = {}
        for name, aset in data.sets(int(s)).items():
            p = rng.permutation(len(aset))
            m[names[name]] = AnnotationSet(aset.boxes[p], aset.labels[p], aset.ids[p])
        sets.append(m)
    raters = [names[r] for r in reversed(data.raters)]
    sizes = data.image_sizes[order] if data.image_sizes is not None else None
    return MultiRaterAnnotations.from_sets(data.sample_ids[order], raters, sets, box_policy="clip", image_sizes=sizes)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), R=st.integers(2, 4), mode=st.sampled_from(["jitter", "unrelated"]),
       strata=st.booleans())
def test_draws_do_not_depend_on_rater_names_or_any_order(seed, R, mode, strata):
    """Issue 47: the D_e draws used to be consumed in rater order from one generator, so renaming the raters
    moved D+ by 2e-3 to 7e-3. They are keyed by the sample ids and the sets' geometry: renaming raters
    (reversing their sort order), reordering samples, raters and labels leaves D_o and D_e the same
    multisets, and every number of the calibration the same."""
    raters = tuple("abcd"[:R])
    data = _corpus(seed, S=30, raters=raters, mode=mode)
    if strata:  # two image-size strata: the draws stay in the reference's stratum
        data = MultiRaterAnnotations.from_sets(
            data.sample_ids, list(data.raters), [data.sets(s) for s in range(data.num_samples)],
            image_sizes=np.array([[640.0, 480.0] if s % 3 else [64.0, 64.0] for s in range(data.num_samples)]))
    other = _renamed_and_reordered(data, dict(zip(raters, ("z", "y", "x", "w"))), seed)
    for distance in ("iou", "giou"):
        (d_o, d_e), (p_o, p_e) = (disagreement_samples(x, distance, seed=3) for x in (data, other))
        np.testing.assert_array_equal(np.sort(d_o), np.sort(p_o))
        np.testing.assert_array_equal(np.sort(d_e), np.sort(p_e))
    a, b = calibrate(data, distances=("iou", "giou"), seed=3), calibrate(other, distances=("iou", "giou"), seed=3)
    assert (a.best_distance, a.best_ks) == (b.best_distance, b.best_ks)
    assert a.tau == pytest.approx(b.tau, rel=1e-12, abs=1e-12)  # densities summed in another order


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), S=st.integers(2, 6), p=st.floats(0.3, 1.0))
def test_sizes_and_range(seed, S, p):
    rng = np.random.default_rng(seed)
    raters = ("a", "b", "c")
    sets = []
    for s in range(S):
        mapping = {}
        for r in raters:
            if rng.random() < p:
                mapping[r] = _set(_random_boxes(rng, int(rng.integers(0, 3))), f"{s}{r}")
        sets.append(mapping)
    data = MultiRaterAnnotations.from_sets([f"s{s}" for s in range(S)], list(raters), sets)
    d_o, d_e = disagreement_samples(data, "giou", seed=seed)
    counts, assigned = data.counts(), data.assigned
    n_o = sum(int(counts[s, a]) * (int(assigned[s].sum()) - 1) for s in range(S) for a in range(3) if assigned[s, a])
    assert len(d_o) == n_o
    eligible = int(assigned.any(axis=1).sum())
    assert len(d_e) == (len(data) if eligible >= 2 else 0)
    for x in (d_o, d_e):
        assert np.all((x >= 0.0) & (x <= 1.0))


def test_polygon_distance_of_box_shaped_polygons_equals_box_distance():
    rng = np.random.default_rng(9)
    sets = []
    for s in range(6):
        mapping = {}
        for r in ("a", "b"):
            bx = _random_boxes(rng, int(rng.integers(0, 3)))
            polys = [[np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]])] for x, y, w, h in bx]
            mapping[r] = AnnotationSet(bx, ["obj"] * len(bx), [f"{s}{r}{k}" for k in range(len(bx))], polys)
        sets.append(mapping)
    data = MultiRaterAnnotations.from_sets([f"s{s}" for s in range(6)], ["a", "b"], sets)
    p_o, p_e = disagreement_samples(data, "polygon_iou", seed=1)
    b_o, b_e = disagreement_samples(data, "iou", seed=1)
    np.testing.assert_allclose(p_o, b_o, atol=1e-9)
    np.testing.assert_allclose(p_e, b_e, atol=1e-9)
    # Polygon GIoU encloses with the convex hull, inside the enclosing box: never farther.
    p_o, p_e = disagreement_samples(data, "polygon_giou", seed=1)
    b_o, b_e = disagreement_samples(data, "giou", seed=1)
    assert np.all(p_o <= b_o + 1e-9) and np.all(p_e <= b_e + 1e-9)


def test_missing_geometry_is_a_clear_error():
    data = _corpus(5, S=4)
    with pytest.raises(ValueError, match="polygons"):
        calibrate(data, distances=("iou", "polygon_iou"))


def test_bad_arguments():
    data = _corpus(5, S=4)
    with pytest.raises(ValueError, match="unknown distance"):
        disagreement_samples(data, "hamming")
    with pytest.raises(ValueError, match="seed"):
        disagreement_samples(data, "iou", seed=-1)
    with pytest.raises(ValueError, match="repeat"):
        calibrate(data, distances=("iou", "iou"))
    with pytest.raises(ValueError, match="at least one"):
        calibrate(data, distances=())


# --------------------------------------------------------------------- KS


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scipy's p-value on tiny samples, not the statistic
@settings(max_examples=60, deadline=None)
@given(
    a=st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0]) | st.floats(0, 1), min_size=1, max_size=40),
    b=st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0]) | st.floats(0, 1), min_size=1, max_size=40),
)
def test_ks_oracle_against_scipy(a, b):
    assert ks_one_sided(a, b) == pytest.approx(stats.ks_2samp(a, b, alternative="greater", method="asymp").statistic, abs=1e-12)
    assert ks_two_sided(a, b) == pytest.approx(stats.ks_2samp(a, b, method="asymp").statistic, abs=1e-12)


def test_ks_one_sided_against_reference():
    kalos_pc = pytest.importorskip("kalos.iaa.principled_configuration")
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = np.round(rng.beta(2, 5, size=rng.integers(1, 200)), 2)
        b = np.round(rng.beta(5, 2, size=rng.integers(1, 200)), 2)
        assert ks_one_sided(a, b) == pytest.approx(float(kalos_pc.calculate_ks_statistic(a, b)), abs=1e-12)


def test_ks_direction():
    low, high = [0.0, 0.1, 0.2], [0.8, 0.9, 1.0]
    assert ks_one_sided(low, high) == 1.0  # observed below expected: perfect separation
    assert ks_one_sided(high, low) == 0.0  # below-chance agreement: no one-sided separation
    assert ks_two_sided(high, low) == 1.0
    with pytest.raises(ValueError, match="empty"):
        ks_one_sided([], [0.5])


# ---------------------------------------------------------------------- τ*


def _quantile_sample(dist, n=5000):
    """A deterministic sample: evenly spaced quantiles."""
    return dist.ppf((np.arange(n) + 0.5) / n)


def test_tau_at_known_crossing():
    fo, fe = stats.beta(2, 14), stats.beta(9, 3)
    d_o, d_e = _quantile_sample(fo), _quantile_sample(fe)
    mode_o, mode_e = (2 - 1) / (2 + 14 - 2), (9 - 1) / (9 + 3 - 2)
    truth = optimize.brentq(lambda x: fo.pdf(x) - fe.pdf(x), mode_o, mode_e)
    sel = select_tau(d_o, d_e)
    assert sel.method == "crossing" and sel.fallback == ""
    assert sel.tau == pytest.approx(truth, abs=0.01)
    assert sel.mode_observed == pytest.approx(mode_o, abs=0.02)
    # Equal normals: the crossing is the midpoint.
    d_o = _quantile_sample(stats.norm(0.3, 0.05))
    d_e = _quantile_sample(stats.norm(0.7, 0.05))
    assert select_tau(d_o, d_e).tau == pytest.approx(0.5, abs=2e-3)


def test_tau_crossing_matches_reference_rule():
    kalos_pc = pytest.importorskip("kalos.iaa.principled_configuration")
    rng = np.random.default_rng(1)
    for _ in range(10):
        d_o = np.clip(rng.beta(1.5, 8, size=500), 0, 1)
        d_e = np.clip(rng.beta(6, 2, size=500), 0, 1)
        sel = select_tau(d_o, d_e)
        assert sel.method == "crossing"
        # The reference returns the grid point left of the sign change.
        assert abs(sel.tau - kalos_pc.find_bayesian_boundary(d_o, d_e)) <= 1 / 999 + 1e-12


def test_tau_valley_fallback():
    # Observed worse than chance: D_o around 0.8, D_e around 0.3, no crossing above the D_o mode.
    d_o = _quantile_sample(stats.norm(0.8, 0.03), 2000)
    d_e = _quantile_sample(stats.norm(0.3, 0.03), 2000)
    sel = select_tau(d_o, d_e)
    assert sel.method == "valley"
    assert "do not cross" in sel.fallback
    assert 0.4 < sel.tau < 0.7


def test_tau_undefined_without_separation():
    x = np.linspace(0.2, 0.9, 300)
    sel = select_tau(x, x)
    assert sel.method == "undefined" and math.isnan(sel.tau)
    assert "nowhere smaller" in sel.fallback
    sel = select_tau([], x)
    assert sel.method == "undefined" and math.isnan(sel.tau) and "no observed" in sel.fallback
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        select_tau([1.5], x)


def test_tau_ks_max_fallback_is_middle_of_gap():
    sel = select_tau(np.zeros(50), np.linspace(0.4, 1.0, 50))
    assert sel.method == "ks_max"
    assert sel.tau == pytest.approx(0.2)


def test_binned_density_for_large_samples(monkeypatch):
    import agreement.methods.kalos.calibration as cal

    rng = np.random.default_rng(2)
    d_o = rng.beta(2, 14, size=5000)
    d_e = rng.beta(9, 3, size=5000)
    exact = select_tau(d_o, d_e)
    monkeypatch.setattr(cal, "_BINNED_KDE_ABOVE", 1000)
    binned = select_tau(d_o, d_e)
    assert binned.method == exact.method == "crossing"
    assert binned.tau == pytest.approx(exact.tau, abs=2e-3)
    np.testing.assert_allclose(binned.density_observed, exact.density_observed, rtol=0.02, atol=0.02)


# ----------------------------------------------------------- results, β*


def test_beta_from_tau():
    assert beta_from_tau(0.3) == pytest.approx(0.3)
    assert beta_from_tau(0.3, normalization="oc_cost") == pytest.approx(0.15)
    assert beta_from_tau(0.3, lam=0.5) == pytest.approx(0.15)
    assert math.isnan(beta_from_tau(float("nan")))
    assert math.isnan(beta_from_tau(0.0))


def test_beta_star_matches_ot_matching():
    """At λ = 1 and β = τ*_giou, OT matches exactly the pairs with d_giou < τ*."""
    from agreement.methods.ot import ot_match

    data = _corpus(6, S=80, mode="jitter")
    res = calibrate(data, distances=("giou",))
    beta = res.beta_star
    assert beta == res.per_distance["giou"].tau and 0 < beta <= 1
    rng = np.random.default_rng(0)
    a = _random_boxes(rng, 6)
    b = a + rng.normal(0, 0.15, size=a.shape) * [1, 1, 0.3, 0.3]
    b[:, 2:] = np.abs(b[:, 2:]) + 0.01
    m = ot_match(a, None, b, None, lam=1.0, beta=beta)
    d = (1 - pairwise_giou(a, b)) / 2
    for i, j in enumerate(m.match_a):
        if j >= 0:
            assert d[i, j] < beta


def test_undefined_cases_are_nan_with_reason():
    box = [[0.1, 0.1, 0.2, 0.2]]
    single = MultiRaterAnnotations.from_sets(["s0"], ["a", "b"], [{"a": _set(box), "b": _set(box)}])
    res = calibrate(single)
    c = res.per_distance["iou"]
    assert len(c.d_observed) == 2 and len(c.d_expected) == 0
    assert math.isnan(c.ks_one_sided) and math.isnan(c.tau) and "at least two samples" in c.reason
    assert res.best_distance is None and math.isnan(res.best_ks) and res.reason
    assert math.isnan(res.beta_star) and res.beta_reason
    no_pairs = MultiRaterAnnotations.from_sets(["s0", "s1"], ["a", "b"], [{"a": _set(box)}, {"b": _set(box)}])
    res = calibrate(no_pairs, distances=("iou",))
    c = res.per_distance["iou"]
    assert len(c.d_observed) == 0 and math.isnan(c.ks_one_sided) and "no observed" in c.reason
    assert "giou" in res.beta_reason
    d = res.to_dict()
    assert d["per_distance"]["iou"]["tau"] is None


def test_result_fields_and_plot_data():
    data = _corpus(7, S=80, mode="jitter")
    res = calibrate(data, bins=20, grid_size=200)
    assert set(res.per_distance) == {"iou", "giou", "centroid"}
    best = res.per_distance[res.best_distance]
    assert res.best_ks == max(c.ks_one_sided for c in res.per_distance.values()) == best.ks_one_sided
    assert res.tau == best.tau and res.similarity_threshold == pytest.approx(1 - best.tau)
    for c in res.per_distance.values():
        p = c.plot
        assert p.bin_edges.shape == (21,) and p.hist_observed.shape == p.hist_expected.shape == (20,)
        assert np.sum(p.hist_observed * np.diff(p.bin_edges)) == pytest.approx(1.0)
        assert p.grid.shape == p.density_observed.shape == (200,)
        assert p.tau == c.tau
        assert c.observed_summary["n"] == len(c.d_observed)
    s = res.summary()
    for k in ("best_distance", "ks", "tau_star", "beta_star", "ks_iou", "ks2_giou", "tau_centroid"):
        assert k in s
    import json

    json.dumps(res.to_dict(include_samples=True))


def test_png_writer(tmp_path):
    res = calibrate(_corpus(8, S=30, mode="jitter"))
    out = plot_calibration_png(res, tmp_path / "calibration.png")
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    # Undefined results plot too.
    box = [[0.1, 0.1, 0.2, 0.2]]
    single = MultiRaterAnnotations.from_sets(["s0"], ["a", "b"], [{"a": _set(box), "b": _set(box)}])
    plot_calibration_png(calibrate(single), tmp_path / "undefined.png")
    assert (tmp_path / "undefined.png").stat().st_size > 0


# ------------------------------------------------------------------- LVIS


@pytest.mark.shared_data
def test_lvis_calibration_and_reference(lvis_path):
    from agreement.io.coco import read_multi_rater_coco

    data = read_multi_rater_coco(lvis_path).annotations
    res = calibrate(data)
    iou = res.per_distance["iou"]
    assert iou.ks_one_sided > 0.5
    assert len(iou.d_observed) == len(iou.d_expected) == len(data) == 3521
    for c in res.per_distance.values():
        assert c.tau_method == "crossing" and 0 < c.tau < 1
        assert c.observed_summary["median"] < c.expected_summary["median"]
    assert res.best_distance in res.per_distance
    assert res.beta_star == res.per_distance["giou"].tau

    kalos_ed = pytest.importorskip("kalos.iaa.empirical_disagreement")
    kalos_pc = pytest.importorskip("kalos.iaa.principled_configuration")
    from kalos.iaa.similarity_functions import SIMILARITY_FUNCTIONS
    from kalos.utils.data_loading import load_and_preprocess_data

    # The same τ* and KS rule on our samples.
    for c in res.per_distance.values():
        assert c.ks_one_sided == pytest.approx(float(kalos_pc.calculate_ks_statistic(c.d_observed, c.d_expected)), abs=1e-12)
        assert abs(c.tau - kalos_pc.find_bayesian_boundary(c.d_observed, c.d_expected)) <= 1 / 999 + 1e-12
    # The same D_o for box IoU (the reference's D_e uses Python's global random, not comparable draw by draw).
    processed = load_and_preprocess_data(lvis_path, "coco-json")["processed_data"]
    ref = kalos_ed.calculate_do_de(processed, SIMILARITY_FUNCTIONS["bbox_iou_similarity"])
    np.testing.assert_allclose(np.sort(iou.d_observed), np.sort(ref["d_o"]), atol=1e-9)
    assert ks_two_sided(iou.d_expected, ref["d_e"]) < 0.1  # the chance distributions agree
