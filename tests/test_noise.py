"""Simulated raters: each perturbation and generator stage measures what it claims.

Controlled perturbations (OT paper, Sec. 4.1): dropped fraction, shift
magnitude and direction, swap count, coupling across levels. The KαLOS
empirical generator: every stage alone (false negatives, false positives,
fragmentation, combination, category mistakes, localisation residuals),
magnitude scaling, cannibalisation rising with λ, schools, the fitted-profile
round trip on the shared LVIS data, profile JSON validation, determinism and
order independence, and bad input.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.simulate.noise import (
    FalsePositiveShape,
    LocalisationProfile,
    NoiseProfile,
    ProfileError,
    School,
    StudentT,
    builtin_profiles,
    load_profile,
    perturb,
    perturb_set,
    perturbation_series,
    simulate,
)
from agreement.simulate.noise.empirical import PROFILES_DIR
from agreement.simulate.noise.fit import fit_profile, fit_student_t, main as fit_main, pair_statistics

# ---------------------------------------------------------------- fixtures

LVIS_PATH = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "lvis_v1.0_val_doubly_annos_subset200.json"


def _reference(S=60, seed=0, classes=("a", "b", "c", "d"), min_n=0, max_n=12, rater="ref"):
    """A synthetic single-rater corpus: interior boxes, a few explicit and implicit absences."""
    rng = np.random.default_rng(seed)
    sets = []
    for s in range(S):
        if s % 17 == 5:
            sets.append({})  # implicit absence
            continue
        n = 0 if s % 13 == 3 else int(rng.integers(max(min_n, 1), max_n + 1))
        w = rng.uniform(0.03, 0.2, n)
        h = rng.uniform(0.03, 0.2, n)
        x = rng.uniform(0.2, 0.8 - w)
        y = rng.uniform(0.2, 0.8 - h)
        labels = list(rng.choice(classes, n))
        sets.append({rater: AnnotationSet(np.stack([x, y, w, h], 1), labels, [f"s{s}_{i}" for i in range(n)])})
    return MultiRaterAnnotations.from_sets([f"img{s}" for s in range(S)], [rater], sets,
                                           image_sizes=np.tile([640.0, 480.0], (S, 1)))


def _t(df=5.0, scale=0.02):
    return StudentT(df=df, loc=0.0, scale=scale)


def _profile(**kw) -> NoiseProfile:
    """A profile with every rate 0 and tight localisation; override with kw."""
    loc = LocalisationProfile(_t(), _t(), _t(), _t())
    base = dict(
        false_negative_rate=0.0, false_positive_rate=0.0, fragmentation_rate=0.0, fragment_extra_mean=0.0,
        combination_rate=0.0, combination_extra_mean=0.0, category_rate=0.0, confusion={},
        localisation=loc, misclassified_localisation=loc, false_positive_shape=FalsePositiveShape(),
        iou_threshold=0.5, name="test",
    )
    base.update(kw)
    return NoiseProfile(**base)


@pytest.fixture(scope="module")
def lvis():
    from agreement.io.coco import read_multi_rater_coco

    if not LVIS_PATH.exists():
        pytest.skip(f"shared data not found: {LVIS_PATH.name} is expected in ../shared/data beside the repository")
    return read_multi_rater_coco(LVIS_PATH).annotations


def _cell(data, s, r):
    sl = data.rows(s, r)
    return data.boxes[sl], data.labels[sl], data.label_ids[sl]


def _assert_valid_boxes(boxes):
    assert np.isfinite(boxes).all()
    assert (boxes[:, 2:] >= 0).all()
    assert (boxes[:, :2] >= -1e-12).all() and (boxes[:, :2] + boxes[:, 2:] <= 1 + 1e-12).all()


# ------------------------------------------------------ perturbations


@pytest.mark.parametrize("gamma", [0.0, 0.25, 0.6, 1.0])
def test_drop_removes_gamma_of_each_sample(gamma):
    ref = _reference(S=120)
    out = perturb(ref, "drop", gamma, seed=3)
    assert out.raters == (f"drop_{gamma:g}",)
    assert np.array_equal(out.assigned[:, 0], ref.assigned[:, 0])  # implicit absence kept
    n0, n1 = ref.counts()[:, 0], out.counts()[:, 0]
    dropped = n0 - n1
    assert np.all(np.abs(dropped - gamma * n0) < 1)  # stochastic rounding: within one box
    assert dropped.sum() / n0.sum() == pytest.approx(gamma, abs=0.03)
    for s in range(ref.num_samples):  # survivors are reference boxes, unchanged
        b0, l0, i0 = _cell(ref, s, 0)
        b1, l1, i1 = _cell(out, s, 0)
        keep = np.isin(i0, i1)
        assert np.array_equal(b0[keep], b1) and np.array_equal(l0[keep], l1)
    if gamma == 1.0:
        assert len(out) == 0 and out.assigned.any()  # every assigned cell is now explicit absence


def test_drop_fraction_on_lvis(lvis):
    out = perturb(lvis, "drop", 0.3, seed=0, rater="r1")
    n0 = lvis.counts()[:, lvis.raters.index("r1")]
    assert 1 - len(out) / n0.sum() == pytest.approx(0.3, abs=0.02)


def test_shift_moves_every_centre_by_gamma_box_sizes_in_a_uniform_direction():
    ref = _reference(S=150)
    gamma = 0.3
    out = perturb(ref, "shift", gamma, seed=1)
    _assert_valid_boxes(out.boxes)
    assert np.array_equal(out.label_ids, ref.label_ids) and np.array_equal(out.labels, ref.labels)
    b0, b1 = ref.boxes, out.boxes
    # The synthetic boxes lie in [0.2, 0.8] and are at most 0.2 wide: no clipping.
    assert np.allclose(b1[:, 2:], b0[:, 2:])
    d = (b1[:, :2] - b0[:, :2]) / b0[:, 2:]
    assert np.allclose(np.hypot(d[:, 0], d[:, 1]), gamma)
    theta = np.arctan2(d[:, 1], d[:, 0]) % (2 * np.pi)
    assert stats.kstest(theta / (2 * np.pi), "uniform").pvalue > 1e-3


def test_shift_clips_to_the_image_and_keeps_the_centre_inside():
    ref = MultiRaterAnnotations.from_sets(
        ["x"], ["r"], [{"r": AnnotationSet([[0.0, 0.0, 0.5, 0.5], [0.9, 0.9, 0.1, 0.1]], ["a", "b"], [1, 2])}]
    )
    for g in (0.5, 1.0, 3.0, 10.0):
        out = perturb(ref, "shift", g, seed=7)
        _assert_valid_boxes(out.boxes)
        c = out.boxes[:, :2] + out.boxes[:, 2:] / 2
        assert np.all((c >= 0) & (c <= 1))
        assert np.all(out.boxes[:, 2:] > 0)


def test_swap_count_and_label_multiset():
    # Distinct labels everywhere, so every swapped pair is visible.
    rng = np.random.default_rng(0)
    sets = []
    for _ in range(200):
        n = int(rng.integers(0, 15))
        boxes = np.column_stack([rng.uniform(0, 0.5, (n, 2)), np.full((n, 2), 0.1)])
        sets.append({"r": AnnotationSet(boxes, [f"c{i}" for i in range(n)], list(range(n)))})
    ref = MultiRaterAnnotations.from_sets(list(range(200)), ["r"], sets)
    gamma = 0.4
    out = perturb(ref, "swap", gamma, seed=2)
    assert np.array_equal(out.boxes, ref.boxes)
    changed_total = 0
    for s in range(ref.num_samples):
        _, l0, _ = _cell(ref, s, 0)
        _, l1, _ = _cell(out, s, 0)
        n = len(l0)
        assert sorted(l0) == sorted(l1)
        changed = int(np.sum(l0 != l1))
        assert changed % 2 == 0
        k = changed // 2
        assert k <= n // 2 and abs(k - gamma * n / 2) < 1 or k == n // 2
        changed_total += changed
        # Every change is a transposition: l1[i] = l0[j] and l1[j] = l0[i].
        idx = {lab: i for i, lab in enumerate(l0)}
        for i in np.flatnonzero(l0 != l1):
            j = idx[l1[i]]
            assert l1[j] == l0[i]
    assert changed_total / len(ref) == pytest.approx(gamma, abs=0.03)


def test_perturb_set_and_coupling_across_levels():
    ref = _reference(S=40)
    s = 1
    aset = ref.get(s, 0)
    # Same stream: survivors at a higher level are a subset, shifts are stretched.
    small = perturb(ref, "drop", 0.2, seed=4)
    big = perturb(ref, "drop", 0.7, seed=4)
    for s in range(ref.num_samples):
        assert set(_cell(big, s, 0)[2]) <= set(_cell(small, s, 0)[2])
    a = perturb(ref, "shift", 0.1, seed=4).boxes
    b = perturb(ref, "shift", 0.3, seed=4).boxes
    assert np.allclose((b[:, :2] - ref.boxes[:, :2]), 3 * (a[:, :2] - ref.boxes[:, :2]))
    out, src = perturb_set(aset, "drop", 0.5, np.random.default_rng(0))
    assert np.array_equal(out.boxes, aset.boxes[src]) and np.array_equal(out.ids, aset.ids[src])


def test_perturbation_series_raters_and_levels():
    ref = _reference(S=30)
    series = perturbation_series(ref, "shift", [0.0, 0.2, 0.5], seed=0, num_raters=2, include_reference=True)
    assert set(series.raters) == {"shift_0_1", "shift_0_2", "shift_0.2_1", "shift_0.2_2", "shift_0.5_1",
                                  "shift_0.5_2", "ref"}
    r0 = series.raters.index("shift_0_1")
    assert np.allclose(series.boxes[series.rater_index == r0], ref.boxes)
    a = series.boxes[series.rater_index == series.raters.index("shift_0.5_1")]
    b = series.boxes[series.rater_index == series.raters.index("shift_0.5_2")]
    assert not np.allclose(a, b)  # replicates are independent
    one = perturb(ref, "shift", 0.5, seed=0, stream="shift#0")
    assert np.array_equal(one.boxes, a)


def test_perturbations_are_deterministic_and_independent_of_sample_order():
    ref = _reference(S=50)
    for kind, g in (("drop", 0.4), ("shift", 0.3), ("swap", 0.5)):
        a = perturb(ref, kind, g, seed=11)
        b = perturb(ref, kind, g, seed=11)
        assert np.array_equal(a.boxes, b.boxes) and np.array_equal(a.labels, b.labels)
        c = perturb(ref, kind, g, seed=12)
        assert not (np.array_equal(a.boxes, c.boxes) and np.array_equal(a.labels, c.labels))
        perm = np.random.default_rng(0).permutation(ref.num_samples)
        d = perturb(ref.select_samples(perm), kind, g, seed=11)
        for new, old in enumerate(perm):
            assert np.array_equal(_cell(d, new, 0)[0], _cell(a, old, 0)[0])
            assert np.array_equal(_cell(d, new, 0)[1], _cell(a, old, 0)[1])


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 30),
    gamma=st.floats(0.0, 1.0),
    shift=st.floats(0.0, 5.0),
    seed=st.integers(0, 2**31),
    corner=st.tuples(st.floats(0.0, 0.9), st.floats(0.0, 0.9)),
)
def test_perturbation_properties(n, gamma, shift, seed, corner):
    rng = np.random.default_rng(seed)
    x0, y0 = corner
    w = rng.uniform(0.0, 1.0 - x0, n)
    h = rng.uniform(0.0, 1.0 - y0, n)
    boxes = np.column_stack([np.full(n, x0), np.full(n, y0), w, h])
    aset = AnnotationSet(boxes, rng.choice(["a", "b", "c"], n), list(range(n)))
    dropped, src = perturb_set(aset, "drop", gamma, np.random.default_rng(seed))
    assert abs((n - len(dropped)) - gamma * n) < 1 and len(np.unique(src)) == len(src)
    swapped, _ = perturb_set(aset, "swap", gamma, np.random.default_rng(seed))
    assert sorted(swapped.labels) == sorted(aset.labels) and np.array_equal(swapped.boxes, aset.boxes)
    moved, _ = perturb_set(aset, "shift", shift, np.random.default_rng(seed))
    _assert_valid_boxes(moved.boxes)
    assert np.all(moved.boxes[:, 2:] <= aset.boxes[:, 2:] + 1e-12)


@pytest.mark.parametrize("gamma", [-0.1, float("nan"), float("inf"), "x", None])
def test_perturb_rejects_bad_gamma(gamma):
    with pytest.raises(ValueError, match="gamma"):
        perturb(_reference(S=5), "shift", gamma)


def test_perturb_bad_input():
    ref = _reference(S=10)
    with pytest.raises(ValueError, match=r"gamma must be in \[0, 1\]"):
        perturb(ref, "drop", 1.5)
    with pytest.raises(ValueError, match="kind"):
        perturb(ref, "blur", 0.1)
    with pytest.raises(ValueError, match="num_raters"):
        perturbation_series(ref, "drop", [0.1], num_raters=0)
    with pytest.raises(ValueError, match="seed"):
        perturb(ref, "drop", 0.1, seed=-1)
    with pytest.raises(ValueError, match="distinct"):
        perturbation_series(ref, "drop", [0.1, 0.1])
    empty = MultiRaterAnnotations.from_sets(["a", "b"], ["r"], [{"r": AnnotationSet.empty()}] * 2)
    with pytest.raises(ValueError, match="empty everywhere"):
        perturb(empty, "drop", 0.1)
    two = MultiRaterAnnotations.from_sets(["a"], ["r1", "r2"], [{"r1": AnnotationSet.empty()}])
    with pytest.raises(ValueError, match="rater="):
        perturb(two, "drop", 0.1)
    with pytest.raises(ValueError, match="not found"):
        perturb(two, "drop", 0.1, rater="r3")


# ------------------------------------------------------ generator stages


def test_magnitude_zero_copies_the_reference():
    ref = _reference()
    sim, rep = simulate(ref, profile=load_profile("lvis"), magnitude=0.0, num_raters=3, seed=0)
    assert sim.raters == ("sim_1", "sim_2", "sim_3")
    for k in range(3):
        for s in range(ref.num_samples):
            b0, l0, i0 = _cell(ref, s, 0)
            b1, l1, i1 = _cell(sim, s, k)
            o = np.argsort(i0.astype(str))
            p = np.argsort(i1.astype(str))
            assert np.array_equal(b0[o], b1[p]) and np.array_equal(l0[o], l1[p])
    assert rep.total_cannibalised == 0 and all(v == 0 for v in rep.requested.values())


def test_stage1_false_negatives_and_false_positives():
    ref = _reference(S=200)
    N = len(ref)
    K = 3
    sim, rep = simulate(ref, profile=_profile(false_negative_rate=0.3), num_raters=K, seed=0)
    assert rep.requested["false_negative"] == K * N - len(sim)
    assert (K * N - len(sim)) / (K * N) == pytest.approx(0.3, abs=0.02)
    sim, rep = simulate(ref, profile=_profile(false_positive_rate=0.2), num_raters=K, seed=0)
    fp = rep.origin == "false_positive"
    assert fp.sum() == len(sim) - K * N == rep.applied["false_positive"]
    assert fp.sum() / (K * N) == pytest.approx(0.2, abs=0.02)
    assert np.all(rep.source[fp] == -1)
    _assert_valid_boxes(sim.boxes)
    # Injected classes come from the sample's reference boxes; size follows the profile.
    for i in np.flatnonzero(fp)[:50]:
        s = sim.sample_index[i]
        assert sim.labels[i] in set(_cell(ref, s, 0)[1])
    shape = FalsePositiveShape()
    size = np.log(np.sqrt(sim.boxes[fp, 2] * sim.boxes[fp, 3]))
    assert np.median(size) == pytest.approx(shape.log_size_mean, abs=0.15)


def test_stage2_fragmentation_tiles_the_source_box():
    ref = _reference(S=150)
    sim, rep = simulate(ref, profile=_profile(fragmentation_rate=0.2, fragment_extra_mean=0.5), num_raters=2, seed=0)
    frag = rep.origin == "fragment"
    sources = np.unique(np.stack([sim.rater_index[frag], rep.source[frag]], 1), axis=0)
    assert len(sources) == rep.applied["fragmentation"] == rep.requested["fragmentation"]
    assert len(sources) / (2 * len(ref)) == pytest.approx(0.2, abs=0.03)
    pieces = []
    for k, src in sources:
        rows = np.flatnonzero(frag & (sim.rater_index == k) & (rep.source == src))
        pieces.append(len(rows))
        b, a = sim.boxes[rows], ref.boxes[src]
        assert np.allclose(b[:, 2] * b[:, 3], b[:, 2] * b[:, 3])
        assert (b[:, 2] * b[:, 3]).sum() == pytest.approx(a[2] * a[3])
        x0, y0 = b[:, 0].min(), b[:, 1].min()
        assert np.allclose([x0, y0, (b[:, 0] + b[:, 2]).max() - x0, (b[:, 1] + b[:, 3]).max() - y0], a)
        assert set(sim.labels[rows]) == {ref.labels[src]}
    assert min(pieces) >= 2
    assert np.mean(pieces) - 2 == pytest.approx(0.5, abs=0.15)


def test_stage2_combination_merges_same_class_boxes():
    ref = _reference(S=150, classes=("a", "b"), min_n=6)
    sim, rep = simulate(ref, profile=_profile(combination_rate=0.1), num_raters=2, seed=0)
    comb = np.flatnonzero(rep.origin == "combination")
    assert len(comb) == rep.applied["combination"] > 0
    assert len(comb) / (2 * len(ref)) == pytest.approx(0.1, abs=0.02)
    n_out = 0
    for i in comb:
        seed_box = ref.boxes[rep.source[i]]
        hull = sim.boxes[i]
        assert sim.labels[i] == ref.labels[rep.source[i]]
        assert hull[0] <= seed_box[0] + 1e-12 and hull[1] <= seed_box[1] + 1e-12
        assert hull[0] + hull[2] >= seed_box[0] + seed_box[2] - 1e-12
        assert hull[1] + hull[3] >= seed_box[1] + seed_box[3] - 1e-12
    # Each combination consumed at least two reference boxes.
    for k in range(2):
        n_out += int(np.sum(sim.rater_index == k))
    assert 2 * len(ref) - n_out >= len(comb)


def test_stage3_category_mistakes_follow_the_confusion_table():
    ref = _reference(S=200)
    prof = _profile(category_rate=0.15, confusion={"a": {"b": 3.0, "c": 1.0}})
    sim, rep = simulate(ref, profile=prof, num_raters=2, seed=0)
    cat = rep.origin == "category"
    assert cat.sum() == rep.applied["category"]
    assert cat.sum() / (2 * len(ref)) == pytest.approx(0.15, abs=0.02)
    true = ref.labels[rep.source[cat]]
    given = sim.labels[cat]
    assert np.all(true != given)
    from_a = given[true == "a"]
    assert set(from_a) <= {"b", "c"} and np.mean(from_a == "b") == pytest.approx(0.75, abs=0.12)
    # Classes absent from the table fall back to the reference's other classes.
    assert set(given[true == "d"]) <= {"a", "b", "c"}
    # Other rows keep their label.
    loc = rep.origin == "localisation"
    assert np.array_equal(sim.labels[loc], ref.labels[rep.source[loc]])


def test_stage4_localisation_residuals_follow_the_student_t_scaled_by_lambda():
    ref = _reference(S=200)
    prof = _profile(localisation=LocalisationProfile(_t(4.0, 0.03), _t(4.0, 0.03), _t(4.0, 0.05), _t(4.0, 0.05)))

    def residuals(lam):
        sim, rep = simulate(ref, profile=prof, magnitude=lam, num_raters=2, seed=5)
        a, b = ref.boxes[rep.source], sim.boxes
        ca, cb = a[:, :2] + a[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2
        return np.column_stack([(cb - ca) / a[:, 2:], np.log(b[:, 2:] / a[:, 2:])])

    r1, r2 = residuals(1.0), residuals(2.0)
    for k, scale in enumerate((0.03, 0.03, 0.05, 0.05)):
        fit = fit_student_t(r1[:, k])
        assert fit.scale == pytest.approx(scale, rel=0.12)
        assert abs(fit.loc) < 0.2 * scale
        assert 2.5 < fit.df < 7
        assert fit_student_t(r2[:, k]).scale / fit.scale == pytest.approx(2.0, rel=0.1)
    # Residuals were drawn within the profile's IoU threshold (at λ = 1).
    from agreement.simulate.noise.stages import elementwise_iou

    sim, rep = simulate(ref, profile=prof, magnitude=1.0, num_raters=1, seed=5)
    assert np.all(elementwise_iou(ref.boxes[rep.source], sim.boxes) >= 0.5 - 1e-9)


def test_magnitude_scales_rates_and_cannibalisation_rises_with_lambda(lvis):
    prof = load_profile("lvis")
    totals = []
    for lam in (0.0, 1.0, 3.0, 6.0, 12.0):
        _, rep = simulate(lvis, profile=prof, magnitude=lam, num_raters=2, seed=0, rater="r1")
        for k, p in prof.rates().items():
            assert rep.rates[k] == pytest.approx(min(1.0, p * lam))
        totals.append(rep.total_cannibalised)
        for k in rep.cannibalised:
            assert rep.applied[k] + rep.cannibalised[k] == rep.requested[k], k
    assert totals[0] == 0
    assert all(b > a for a, b in zip(totals[1:], totals[2:])), totals
    # At λ >= 1 / p_FN every reference box is a false negative: later stages find nothing left.
    _, rep = simulate(lvis, profile=prof, magnitude=12.0, num_raters=1, seed=0, rater="r1")
    assert rep.applied["localisation"] == 0 and rep.cannibalised["fragmentation"] == rep.requested["fragmentation"]


def test_schools_share_a_class_map_and_an_offset():
    ref = _reference(S=120)
    school = School("blue", 2, offset=(0.1, 0.0, 0.0, 0.0), class_map={"a": "b"})
    sim, rep = simulate(ref, profile=_profile(), num_raters=3, seed=0, school=school)
    assert rep.schools == {"blue": ("blue_1", "blue_2")}
    assert set(sim.raters) == {"blue_1", "blue_2", "sim_1"}
    for name in ("blue_1", "blue_2"):
        rows = sim.rater_index == sim.raters.index(name)
        assert "a" not in set(sim.labels[rows])
        src = rep.source[rows]
        assert np.all(sim.labels[rows][ref.labels[src] == "a"] == "b")
        a, b = ref.boxes[src], sim.boxes[rows]
        dx = ((b[:, 0] + b[:, 2] / 2) - (a[:, 0] + a[:, 2] / 2)) / a[:, 2]
        assert np.median(dx) == pytest.approx(0.1, abs=0.02)
    rows = sim.rater_index == sim.raters.index("sim_1")
    assert "a" in set(sim.labels[rows])
    # A drawn class map is shared by every member and recorded.
    sim, rep = simulate(ref, profile=_profile(), num_raters=4, seed=0, school=[School("x", 2, class_map_rate=0.5),
                                                                        School("y", 1, class_map_rate=0.5)])
    assert set(rep.school_class_maps) == {"x", "y"}
    for c, new in rep.school_class_maps["x"].items():
        for name in ("x_1", "x_2"):
            rows = np.flatnonzero(sim.rater_index == sim.raters.index(name))
            assert np.all(sim.labels[rows][ref.labels[rep.source[rows]] == c] == new)


def test_simulation_is_deterministic_and_order_independent():
    ref = _reference(S=60)
    prof = load_profile("lvis")
    a, _ = simulate(ref, profile=prof, magnitude=2.0, num_raters=3, seed=9)
    b, _ = simulate(ref, profile=prof, magnitude=2.0, num_raters=3, seed=9)
    assert np.array_equal(a.boxes, b.boxes) and np.array_equal(a.labels, b.labels)
    c, _ = simulate(ref, profile=prof, magnitude=2.0, num_raters=3, seed=10)
    assert len(a) != len(c) or not np.array_equal(a.boxes, c.boxes)  # another seed, another simulation
    perm = np.random.default_rng(1).permutation(ref.num_samples)
    d, _ = simulate(ref.select_samples(perm), profile=prof, magnitude=2.0, num_raters=3, seed=9)
    for new, old in enumerate(perm):
        for k in range(3):
            assert np.array_equal(_cell(d, new, k)[0], _cell(a, old, k)[0])
    # Adding a rater leaves the others unchanged.
    e, _ = simulate(ref, profile=prof, magnitude=2.0, num_raters=4, seed=9)
    for k in range(3):
        assert np.array_equal(a.boxes[a.rater_index == k], e.boxes[e.rater_index == k])


def test_simulation_keeps_absence_and_writes_valid_boxes():
    ref = _reference(S=80)
    sim, rep = simulate(ref, profile=load_profile("lvis"), magnitude=3.0, num_raters=2, seed=0, include_reference=True)
    assert sim.raters == ("ref", "sim_1", "sim_2")
    assert np.array_equal(sim.assigned, np.repeat(ref.assigned, 3, axis=1))
    empty = (ref.counts()[:, 0] == 0) & ref.assigned[:, 0]
    assert np.all(sim.counts()[empty] == 0)
    _assert_valid_boxes(sim.boxes)
    assert len(rep.source) == len(rep.origin) == len(sim)
    refrows = sim.rater_index == 0
    assert np.array_equal(sim.boxes[refrows], ref.boxes) and set(rep.origin[refrows]) == {"reference"}


# ------------------------------------------------------ fitting and profiles


def test_shipped_lvis_profile_is_the_fit_of_the_shared_data(lvis):
    shipped = load_profile("lvis")
    assert "lvis" in builtin_profiles() and (PROFILES_DIR / "lvis.json").exists()
    fitted = fit_profile(lvis, name="lvis")
    for k, v in fitted.rates().items():
        assert shipped.rates()[k] == pytest.approx(v, rel=1e-9)
    assert shipped.localisation.dx.scale == pytest.approx(fitted.localisation.dx.scale, rel=1e-6)
    assert shipped.metadata["counts"] == fitted.metadata["counts"]


def test_fitted_profile_round_trip(lvis):
    base = load_profile("lvis")
    # Raise the rare error types so that they can be measured on 200 images.
    prof = dataclasses.replace(base, fragmentation_rate=0.03, combination_rate=0.03, category_rate=0.05,
                               misclassified_localisation=base.localisation)
    sim, _ = simulate(lvis, profile=prof, magnitude=1.0, num_raters=4, seed=0, rater="r1", include_reference=True)
    refit = fit_profile(sim, reference="r1")
    for k, v in prof.rates().items():
        assert refit.rates()[k] == pytest.approx(v, rel=0.25, abs=0.005), k
    for comp in ("dx", "dy", "dw", "dh"):
        a, b = getattr(prof.localisation, comp), getattr(refit.localisation, comp)
        assert b.scale == pytest.approx(a.scale, rel=0.2), comp
        assert abs(b.loc - a.loc) < 0.2 * a.scale
        assert b.df == pytest.approx(a.df, rel=0.4)
    fp0, fp1 = prof.false_positive_shape, refit.false_positive_shape
    assert fp1.log_size_mean == pytest.approx(fp0.log_size_mean, abs=0.15)
    assert fp1.log_size_std == pytest.approx(fp0.log_size_std, rel=0.15)


def test_fit_counts_each_structure_on_a_hand_made_pair():
    A = AnnotationSet(
        [[0.0, 0.0, 0.4, 0.2],      # split into two pieces by B
         [0.5, 0.5, 0.1, 0.1],      # matched, same class (shifted)
         [0.7, 0.1, 0.1, 0.1],      # matched, other class
         [0.1, 0.6, 0.1, 0.1],      # merged with the next one by B
         [0.21, 0.6, 0.1, 0.1],
         [0.9, 0.9, 0.05, 0.05]],   # missed by B
        ["car", "dog", "cat", "cup", "cup", "pen"], list(range(6)))
    B = AnnotationSet(
        [[0.0, 0.0, 0.2, 0.2], [0.2, 0.0, 0.2, 0.2],
         [0.51, 0.5, 0.1, 0.1],
         [0.7, 0.1, 0.1, 0.1],
         [0.1, 0.6, 0.21, 0.1],
         [0.4, 0.9, 0.05, 0.05]],   # false positive
        ["car", "car", "dog", "dog", "cup", "pen"], list(range(6)))
    data = MultiRaterAnnotations.from_sets(["x"], ["a", "b"], [{"a": A, "b": B}])
    ps = pair_statistics(data, reference="a")
    assert ps.counts() == {
        "comparisons": 1, "reference_boxes": 6, "false_negatives": 1, "false_positives": 1, "fragmented": 1,
        "fragment_pieces": 2, "combinations": 1, "combined_boxes": 2, "matched": 2, "misclassified": 1,
    }
    assert dict(ps.confusion) == {"cat": {"dog": 1}}
    assert ps.residuals[0, 0] == pytest.approx(0.1)
    both = pair_statistics(data)
    assert both.n_pairs == 2 and both.fragmented == both.combined == 2


def test_profile_json_round_trip_and_cli(tmp_path, lvis_path):
    prof = load_profile("lvis")
    p = tmp_path / "p.json"
    prof.save(p)
    again = NoiseProfile.load(p)
    assert again == prof and load_profile(str(p)) == prof
    out = tmp_path / "fitted.json"
    assert fit_main([str(lvis_path), "-o", str(out), "--reference", "r1"]) == 0
    fitted = NoiseProfile.load(out)
    assert fitted.name == "fitted" and fitted.metadata["reference"] == "r1"
    assert fit_main([str(tmp_path / "missing.json"), "-o", str(out)]) == 2


def _bad(d, path, value):
    d = json.loads(json.dumps(d))
    keys = path.split(".")
    node = d
    for k in keys[:-1]:
        node = node[k]
    if value is KeyError:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return d


@pytest.mark.parametrize("path,value,key", [
    ("rates.false_negative", 1.5, "rates.false_negative"),
    ("rates.category", -0.1, "rates.category"),
    ("rates.fragmentation", "high", "rates.fragmentation"),
    ("localisation.dx.scale", 0.0, "localisation.dx.scale"),
    ("localisation.dw", KeyError, "localisation.dw"),
    ("misclassified_localisation.dy.df", -1, "misclassified_localisation.dy.df"),
    ("iou_threshold", 0.0, "iou_threshold"),
    ("format", "something", "format"),
    ("version", 2, "version"),
    ("rates.false_negatives", 0.1, "rates.false_negatives"),
    ("confusion", {"cat": {"dog": -1}}, "confusion.cat.dog"),
    ("confusion", {"cat": {"cat": 2}}, "confusion.cat.cat"),
    ("false_positive_shape.log_size_std", float("nan"), "false_positive_shape.log_size_std"),
    ("combination_extra_mean", KeyError, "combination_extra_mean"),
])
def test_profile_that_does_not_validate_names_the_key(tmp_path, path, value, key):
    d = _bad(load_profile("lvis").to_dict(), path, value)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(d))
    with pytest.raises(ProfileError, match=f"key '{key}'"):
        NoiseProfile.load(f)
    with pytest.raises(ProfileError, match=f"key '{key}'"):
        simulate(_reference(S=5), profile=str(f))


def test_profile_files_that_are_not_profiles(tmp_path):
    f = tmp_path / "x.json"
    f.write_text("{not json")
    with pytest.raises(ProfileError, match="not valid JSON"):
        load_profile(f)
    f.write_text("[1, 2]")
    with pytest.raises(ProfileError, match="JSON object"):
        load_profile(f)
    with pytest.raises(ProfileError, match="no such file"):
        load_profile(tmp_path / "missing.json")
    with pytest.raises(ProfileError, match="rates.category"):
        _profile(category_rate=2.0)


# ------------------------------------------------------ bad input


@pytest.mark.parametrize("lam", [-1.0, float("nan"), float("inf"), -1e-9])
def test_simulate_rejects_bad_magnitude(lam):
    with pytest.raises(ValueError, match="magnitude"):
        simulate(_reference(S=5), profile=_profile(), magnitude=lam)


@pytest.mark.parametrize("k", [0, -2, 1.5, True])
def test_simulate_rejects_bad_num_raters(k):
    with pytest.raises(ValueError, match="K >= 1"):
        simulate(_reference(S=5), profile=_profile(), num_raters=k)


def test_simulate_and_fit_bad_input():
    empty = MultiRaterAnnotations.from_sets(["a", "b"], ["r"], [{"r": AnnotationSet.empty()}, {}])
    with pytest.raises(ValueError, match="empty everywhere"):
        simulate(empty, profile=_profile())
    none = MultiRaterAnnotations.from_sets(["a"], ["r"], [{}])
    with pytest.raises(ValueError, match="assigned to no sample"):
        simulate(none, profile=_profile())
    with pytest.raises(ValueError, match="schools have 3 members"):
        simulate(_reference(S=5), profile=_profile(), num_raters=2, school=School("s", 3))
    with pytest.raises(ValueError, match="size"):
        School("s", 0)
    with pytest.raises(ValueError, match="offset"):
        School("s", 1, offset=(0.0, math.nan, 0.0, 0.0))
    bad = _reference(S=5)
    boxes = bad.boxes.copy()
    boxes[0, 2] = -0.1
    with pytest.raises(ValueError, match="negative size"):  # refused when the corpus is built
        simulate(dataclasses.replace(bad, boxes=boxes), profile=_profile())
    with pytest.raises(ValueError, match="at least two raters"):
        fit_profile(_reference(S=5))
