"""KαLOS α: the reference package as an oracle on the shared LVIS data, the
`krippendorff` package as an oracle for α, the reliability-matrix conventions,
invariance, properties, validation and the τ sensitivity curve."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.core.krippendorff import nominal_alpha
from agreement.geometry.boxes import paired_iou, pairwise_iou
from agreement.io.coco import read_multi_rater_coco
from agreement.methods.kalos import (
    DEFAULT_TAUS,
    NO_OBJECT,
    find_candidates,
    grouped_alpha,
    kalos_alpha,
    paired_row_iou,
    reliability_alpha,
    sensitivity_curve,
)


def aset(boxes, labels, ids=None):
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    return AnnotationSet(boxes, list(labels), ids if ids is not None else [None] * len(boxes))


def corpus(samples, raters=("a", "b")):
    """``samples``: list of {rater: (boxes, labels) or None (not assigned)}; missing raters unassigned."""
    sets = []
    for m in samples:
        sets.append({r: (None if v is None else aset(*v)) for r, v in m.items()})
    return MultiRaterAnnotations.from_sets([f"s{i}" for i in range(len(samples))], list(raters), sets, box_policy="clip")


A = [0.1, 0.1, 0.2, 0.2]
B = [0.6, 0.6, 0.2, 0.2]
A2 = [0.11, 0.1, 0.2, 0.2]  # IoU with A about 0.9


# --------------------------------------------------------------------------
# Oracle: the kalos reference package on the shared LVIS data
# --------------------------------------------------------------------------


def run_reference(path, threshold_func: str, tau: float, monkeypatch):
    """Runs kalos' own pipeline (calculate_iaa, greedy, category_lenient) on the
    COCO file and records the clusters and reliability matrix of every image."""
    ca = pytest.importorskip("kalos.correspondence.correspondence_algorithms")
    core = pytest.importorskip("kalos.iaa.core")
    from kalos.utils.data_loading import load_and_preprocess_data

    pkg = load_and_preprocess_data(path, "coco-json")
    processed = pkg["processed_data"]
    by_identity = {id(img): img_id for img_id, img in processed.items()}
    clusters, matrices = {}, {}

    def recording(image_data, pairwise_scores, cost_func, similarity_threshold):
        out = ca.match_greedy(image_data, pairwise_scores, cost_func, similarity_threshold)
        img_id = by_identity[id(image_data)]
        clusters[img_id] = out
        matrices[img_id] = core.build_reliability_matrix(image_data, out)
        return out

    monkeypatch.setitem(ca.MATCHING_FUNCTIONS, "greedy_recording", recording)
    mean_alpha, global_alpha, *_rest = core.calculate_iaa(
        processed, pkg["categories"], "greedy_recording", threshold_func, "category_lenient", tau,
        False, False, False, pkg["all_raters"],
    )
    image_alphas = _rest[4]
    return image_alphas, global_alpha, mean_alpha, clusters, matrices


def reference_convention(matrix: np.ndarray) -> bool:
    """Whether the reference's vision_alpha returns 1.0 by convention (not by computation)."""
    vals = matrix[~np.isnan(matrix)]
    if matrix.size == 0 or vals.size == 0 or np.all(vals == vals[0]):
        return True
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2
    return not pairable.any()


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "similarity, threshold_func, tau",
    [("iou", "bbox_iou_similarity", 0.5), ("iou", "bbox_iou_similarity", 0.25),
     ("polygon_iou", "segm_iou_similarity", 0.5)],
)
def test_oracle_greedy_soft_on_lvis_equals_the_kalos_package(lvis_path, monkeypatch, similarity, threshold_func, tau):
    data = read_multi_rater_coco(lvis_path).annotations
    ours = kalos_alpha(data, similarity=similarity, tau=tau, solver="greedy", cost="soft")
    ref_alpha, ref_global, ref_mean, ref_clusters, ref_matrices = run_reference(lvis_path, threshold_func, tau,
                                                                                monkeypatch)
    assert set(ref_alpha) == set(data.sample_ids.tolist())
    n_conv = 0
    for s, sid in enumerate(data.sample_ids.tolist()):
        rows = np.flatnonzero(data.sample_index == s)
        mine: dict[int, set] = {}
        for i in rows.tolist():
            mine.setdefault(int(ours.unit[i]), set()).add(data.label_ids[i])
        # The units of every sample.
        assert {frozenset(v) for v in mine.values()} == {frozenset(c) for c in ref_clusters[sid]}, sid
        assert ours.n_units[s] == len(ref_clusters[sid])
        conv = reference_convention(ref_matrices[sid])
        if conv:
            # The reference's 1.0 convention: NaN with a reason here.
            n_conv += 1
            assert ref_alpha[sid] == 1.0
            assert np.isnan(ours.alpha[s]) and ours.reason[s], sid
        else:
            assert ours.alpha[s] == pytest.approx(ref_alpha[sid], abs=1e-9), sid
            assert ours.reason[s] == ""
    assert n_conv == ours.n_undefined > 0
    assert ours.global_alpha == pytest.approx(ref_global, abs=1e-9)
    # The reference's mean includes its 1.0s; ours is over defined samples only.
    ref_vals = np.array([ref_alpha[sid] for sid in data.sample_ids.tolist()])
    defined = ~np.isnan(ours.alpha)
    assert ref_mean == pytest.approx(ref_vals.mean(), abs=1e-12)
    assert ours.mean_alpha == pytest.approx(ref_vals[defined].mean(), abs=1e-9)


# --------------------------------------------------------------------------
# Oracle: the krippendorff package
# --------------------------------------------------------------------------


def random_matrix(rng, R, U, C, p_missing):
    m = rng.integers(0, C, (R, U)).astype(np.int64)
    m[rng.random((R, U)) < p_missing] = -1
    return m


def package_alpha(m):
    kp = pytest.importorskip("krippendorff")
    x = np.where(m < 0, np.nan, m.astype(float))
    return kp.alpha(reliability_data=x, level_of_measurement="nominal")


def test_alpha_equals_the_krippendorff_package_on_random_matrices():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(200):
        R, U, C = rng.integers(2, 7), rng.integers(2, 40), rng.integers(2, 6)
        m = random_matrix(rng, R, U, C, rng.uniform(0, 0.6))
        ours = reliability_alpha(m)
        if not ours.defined:
            continue
        expected = package_alpha(m)
        assert ours.alpha == pytest.approx(expected, abs=1e-12)
        assert ours.alpha == pytest.approx(nominal_alpha(m).alpha, abs=1e-12)
        # Grouped: each group equals the package on its columns.
        G = int(rng.integers(1, 4))
        groups = np.sort(rng.integers(0, G, m.shape[1]))
        a, d_o, d_e, n = grouped_alpha(m, groups, G)
        for g in range(G):
            sub = m[:, groups == g]
            ref = nominal_alpha(sub) if sub.shape[1] else None
            if ref is None or not ref.defined:
                assert np.isnan(a[g])
                continue
            assert a[g] == pytest.approx(package_alpha(sub), abs=1e-12)
            assert d_o[g] == pytest.approx(ref.observed, abs=1e-12)
            assert d_e[g] == pytest.approx(ref.expected, abs=1e-12)
        checked += 1
    assert checked > 150


def test_alpha_undefined_cases_have_reasons():
    assert np.isnan(reliability_alpha(np.array([[0, 0], [0, 0]])).alpha)
    assert "no variation" in reliability_alpha(np.array([[0, 0], [0, 0]])).reason
    assert "fewer than 2" in reliability_alpha(np.array([[0, -1], [-1, 1]])).reason
    assert "fewer than 2" in reliability_alpha(np.zeros((2, 0), dtype=np.int64)).reason


# --------------------------------------------------------------------------
# Reliability matrix conventions
# --------------------------------------------------------------------------


def test_reliability_matrix_no_object_missing_and_empty_samples():
    data = corpus(
        [
            {"a": ([A, B], ["cat", "dog"]), "b": ([A2], ["cat"]), "c": None},  # b misses the dog; c not assigned
            {"a": ([], []), "b": ([], []), "c": ([], [])},  # everybody looked, nothing there
            {"a": ([A], ["cat"]), "b": None, "c": None},  # one rater only
            {"a": None, "b": None, "c": None},  # nobody assigned
        ],
        raters=("a", "b", "c"),
    )
    res = kalos_alpha(data)
    cat, dog, no = (res.categories.index(x) for x in ("cat", "dog", NO_OBJECT))
    assert res.categories[-1] == NO_OBJECT and res.no_object_code == no
    assert res.n_units.tolist() == [2, 0, 1, 0]
    assert res.unit_sample.tolist() == [0, 0, 1, 2]
    assert res.reliability.tolist() == [
        [cat, dog, no, cat],
        [cat, no, no, -1],
        [-1, -1, no, -1],
    ]
    assert res.empty_unit.tolist() == [False, False, True, False]
    assert res.unit.tolist() == [0, 1, 0, 0]
    assert res.unit_column.tolist() == [0, 1, 0, 3]
    # Per-sample: sample 0 defined; the others NaN with a reason.
    assert not np.isnan(res.alpha[0])
    assert "nothing" in res.reason[1] and "reference tool reports 1.0" in res.reason[1]
    assert "only one rater" in res.reason[2]
    assert "no rater" in res.reason[3]
    assert res.n_undefined == 3 and res.n_defined == 1 and res.mean_alpha == res.alpha[0]
    assert res.sample_columns(1) == slice(2, 3)
    assert sum(res.undefined_reasons().values()) == 3
    # Global alpha equals nominal alpha of the pooled matrix.
    assert res.global_alpha == pytest.approx(nominal_alpha(res.reliability).alpha, abs=1e-12)
    assert res.summary()["n_undefined"] == 3


def test_single_class_perfect_agreement_is_nan_not_one():
    data = corpus([{"a": ([A, B], ["cat", "cat"]), "b": ([A2, B], ["cat", "cat"])},
                   {"a": ([A, B], ["cat", "dog"]), "b": ([A2, B], ["cat", "dog"])}])
    res = kalos_alpha(data)
    assert np.isnan(res.alpha[0]) and "no variation" in res.reason[0] and "'cat'" in res.reason[0]
    assert res.alpha[1] == 1.0  # perfect agreement with variation is a computed 1
    assert res.global_alpha == 1.0


def test_implicit_and_explicit_absence_differ():
    explicit = corpus([{"a": ([A, B], ["cat", "dog"]), "b": ([A], ["cat"])},
                       {"a": ([B], ["dog"]), "b": ([], [])}])
    implicit = corpus([{"a": ([A, B], ["cat", "dog"]), "b": ([A], ["cat"])},
                       {"a": ([B], ["dog"]), "b": None}])
    e, i = kalos_alpha(explicit), kalos_alpha(implicit)
    assert e.reliability[1, -1] == e.no_object_code
    assert i.reliability[1, -1] == -1
    assert e.global_alpha < i.global_alpha


def test_sample_order_does_not_change_per_sample_results():
    rng = np.random.default_rng(5)
    data = random_corpus(rng, 30, 3)
    res = kalos_alpha(data)
    perm = rng.permutation(data.num_samples)
    res_p = kalos_alpha(data.select_samples(perm))
    np.testing.assert_array_equal(res_p.alpha, res.alpha[perm])
    assert res_p.global_alpha == pytest.approx(res.global_alpha, abs=1e-12)


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def test_bad_parameters_are_clear_errors():
    data = corpus([{"a": ([A], ["cat"]), "b": ([A2], ["cat"])}])
    for tau in (0, -1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="tau"):
            kalos_alpha(data, tau=tau)
    with pytest.raises(ValueError, match="greedy.*hungarian.*agglomerative.*mgm"):
        kalos_alpha(data, solver="optimal")
    with pytest.raises(ValueError, match="soft.*plain"):
        kalos_alpha(data, cost="lenient")
    with pytest.raises(ValueError, match="unknown similarity"):
        kalos_alpha(data, similarity="dice")
    with pytest.raises(ValueError, match="polygons"):
        kalos_alpha(data, similarity="polygon_iou")
    with pytest.raises(ValueError, match="tau"):
        sensitivity_curve(data, taus=[0.5, 0])
    with pytest.raises(TypeError, match="MultiRaterAnnotations"):
        kalos_alpha({"a": 1})


def test_class_named_like_no_object_is_a_clear_error():
    data = corpus([{"a": ([A], ["no_object"]), "b": ([A2], ["cat"])}])
    with pytest.raises(ValueError, match="no_object.*rename"):
        kalos_alpha(data)
    res = kalos_alpha(data, no_object="<none>")
    assert res.categories[-1] == "<none>" and "no_object" in res.categories


def test_single_rater_and_missing_class_are_errors():
    one = corpus([{"a": ([A], ["cat"])}], raters=("a",))
    with pytest.raises(ValueError, match="at least two"):
        kalos_alpha(one)
    nolabel = corpus([{"a": ([A], [None]), "b": ([A2], ["cat"])}])
    with pytest.raises(ValueError, match="s0.*no class label"):
        kalos_alpha(nolabel)


def test_non_finite_box_names_the_sample():
    with pytest.raises(ValueError, match="s0"):  # refused when the corpus is built
        kalos_alpha(corpus([{"a": ([[np.nan, 0.1, 0.2, 0.2]], ["cat"]), "b": ([A2], ["cat"])}]))


# --------------------------------------------------------------------------
# Vectorised IoU path = the registry
# --------------------------------------------------------------------------


def test_paired_iou_is_bit_identical_to_pairwise_iou():
    rng = np.random.default_rng(1)
    boxes = np.abs(rng.normal(0.3, 0.2, (60, 4)))
    boxes[:5, 2] = 0.0  # zero-area boxes
    boxes[5] = boxes[0]  # identical zero-area pair
    boxes[6, 3] = 0.0
    data = MultiRaterAnnotations(
        sample_ids=["s"], raters=("a", "b"), assigned=[[True, True]], boxes=boxes, labels=["x"] * 60,
        label_ids=[None] * 60, sample_index=np.zeros(60, int), rater_index=np.r_[np.zeros(30, int), np.ones(30, int)],
        box_policy="clip",
    )
    i, j = np.meshgrid(np.arange(60), np.arange(60), indexing="ij")
    got = paired_row_iou(data, i.ravel(), j.ravel()).reshape(60, 60)
    np.testing.assert_array_equal(got, pairwise_iou(data.boxes, data.boxes))
    one = paired_iou(data.boxes[i.ravel()], data.boxes[j.ravel()]).reshape(60, 60)  # the one paired IoU
    np.testing.assert_array_equal(one, pairwise_iou(data.boxes, data.boxes))
    with pytest.raises(ValueError, match="paired boxes"):
        paired_iou(data.boxes[:3], data.boxes[:2])


def test_vectorised_candidates_equal_the_similarity_registry():
    rng = np.random.default_rng(2)
    data = random_corpus(rng, 40, 4)
    fast = find_candidates(data, "iou", 0.3)
    from agreement.geometry.similarity import similarity_matrix

    slow = find_candidates(data, lambda d, a, b: similarity_matrix("iou", d, a, b), 0.3)
    key = lambda c: sorted(zip(c.i.tolist(), c.j.tolist(), c.s.tolist()))  # noqa: E731
    assert key(fast) == key(slow)
    r_fast = kalos_alpha(data, similarity="iou", tau=0.3)
    r_slow = kalos_alpha(data, similarity=lambda d, a, b: similarity_matrix("iou", d, a, b), tau=0.3)
    np.testing.assert_array_equal(r_fast.unit, r_slow.unit)
    np.testing.assert_array_equal(r_fast.alpha, r_slow.alpha)


@pytest.mark.parametrize("similarity", ["giou", "centroid"])
def test_other_box_similarities_run_through_the_registry(similarity):
    """The named similarity is the one the units are built with: the same units and α as the registry's
    function passed as a callable, every pair in a unit similar enough under it, other units than IoU's."""
    from agreement.geometry.similarity import similarity_matrix

    data = random_corpus(np.random.default_rng(3), 20, 3)
    res = kalos_alpha(data, similarity=similarity, tau=0.6)
    assert res.similarity == similarity and len(res.alpha) == 20
    ref = kalos_alpha(data, similarity=lambda d, a, b: similarity_matrix(similarity, d, a, b), tau=0.6)
    np.testing.assert_array_equal(res.unit, ref.unit)
    np.testing.assert_array_equal(res.alpha, ref.alpha)
    assert res.global_alpha == ref.global_alpha and np.isfinite(res.alpha).sum() >= 10
    joined = 0
    for s in range(data.num_samples):  # every member of a unit is similar enough to some other member
        rows = np.flatnonzero(data.sample_index == s)
        sim = similarity_matrix(similarity, data, rows, rows)
        for k, i in enumerate(rows):
            mates = (res.unit[rows] == res.unit[i]) & (rows != i)
            if mates.any():
                joined += 1
                assert sim[k, mates].max() >= 0.6
    assert joined > 20
    assert not np.array_equal(res.unit, kalos_alpha(data, similarity="iou", tau=0.6).unit)


# --------------------------------------------------------------------------
# Invariance
# --------------------------------------------------------------------------


def random_corpus(rng, S, R, p_unassigned=0.05):
    sets = []
    raters = [f"r{k}" for k in range(R)]
    for s in range(S):
        k = int(rng.integers(0, 5))
        wh = rng.uniform(0.05, 0.3, (k, 2))
        xy = rng.uniform(0, 1, (k, 2)) * (1 - wh)
        cls = rng.integers(0, 3, k)
        m = {}
        for r in raters:
            if rng.random() < p_unassigned:
                continue
            keep = rng.random(k) > 0.15
            b = np.c_[xy[keep] + rng.normal(0, 0.02, (keep.sum(), 2)), wh[keep]]
            c = np.where(rng.random(keep.sum()) < 0.2, rng.integers(0, 3, keep.sum()), cls[keep])
            if rng.random() < 0.3:
                b = np.vstack([b, np.r_[rng.uniform(0, 0.7, 2), rng.uniform(0.05, 0.3, 2)]])
                c = np.r_[c, rng.integers(0, 3)]
            m[r] = aset(np.abs(b), [f"c{v}" for v in c], [f"{s}-{r}-{t}" for t in range(len(c))])
        sets.append(m)
    return MultiRaterAnnotations.from_sets([f"s{s}" for s in range(S)], raters, sets, box_policy="clip")


def permute(data, rng):
    """Raters renamed (so their sorted order changes) and every cell's rows shuffled."""
    R = data.num_raters
    perm = rng.permutation(R)
    new_names = [f"q{int(perm[r])}" for r in range(R)]
    order = np.lexsort((rng.random(len(data)), data.sample_index))
    return MultiRaterAnnotations(
        sample_ids=data.sample_ids, raters=tuple(sorted(new_names)), assigned=data.assigned[:, np.argsort(perm)],
        boxes=data.boxes[order], labels=data.labels[order], label_ids=data.label_ids[order],
        sample_index=data.sample_index[order], rater_index=perm[data.rater_index[order]],
    )


def units_by_id(data, res):
    out = set()
    for s in range(data.num_samples):
        rows = np.flatnonzero(data.sample_index == s)
        groups: dict[int, set] = {}
        for i in rows.tolist():
            groups.setdefault(int(res.unit[i]), set()).add(data.label_ids[i])
        out |= {(s, frozenset(v)) for v in groups.values()}
    return out


@pytest.mark.parametrize("seed", range(3))
def test_greedy_units_and_alpha_are_invariant_to_permuting_raters_and_annotations(seed):
    rng = np.random.default_rng(seed)
    data = random_corpus(rng, 60, 4)
    res = kalos_alpha(data)
    for _ in range(3):
        p = permute(data, rng)
        res_p = kalos_alpha(p)
        assert units_by_id(p, res_p) == units_by_id(data, res)
        np.testing.assert_allclose(res_p.alpha, res.alpha, rtol=0, atol=1e-12)
        assert res_p.global_alpha == pytest.approx(res.global_alpha, abs=1e-12)
        assert res_p.n_units.tolist() == res.n_units.tolist()


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------


@st.composite
def scenes(draw, max_samples=12, max_raters=4):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    S = draw(st.integers(1, max_samples))
    R = draw(st.integers(2, max_raters))
    objects = []
    for _ in range(S):
        k = int(rng.integers(0, 5))
        # Non-overlapping grid cells, so that units are unambiguous.
        cells = rng.choice(16, k, replace=False)
        boxes = np.c_[(cells % 4) * 0.25 + 0.02, (cells // 4) * 0.25 + 0.02, np.full(k, 0.2), np.full(k, 0.2)]
        objects.append((boxes, rng.integers(0, 4, k)))
    return rng, R, objects


def build(objects, R, labels_of):
    """Each rater draws every object's box, with the class ``labels_of(r, s, true_classes)``."""
    raters = [f"r{k}" for k in range(R)]
    sets = [{r: aset(b, [f"c{v}" for v in labels_of(k, s, c)]) for k, r in enumerate(raters)}
            for s, (b, c) in enumerate(objects)]
    return MultiRaterAnnotations.from_sets([f"s{s}" for s in range(len(objects))], raters, sets)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes())
def test_identical_raters_agree_perfectly(scene):
    rng, R, objects = scene
    res = kalos_alpha(build(objects, R, lambda r, s, c: c))
    defined = ~np.isnan(res.alpha)
    assert np.all(res.alpha[defined] == 1.0)
    # Undefined only by convention: nothing drawn, or one class only.
    for s in np.flatnonzero(~defined):
        assert len(np.unique(objects[s][1])) <= 1
    if np.isnan(res.global_alpha):
        assert "no variation" in res.global_reason
    else:
        assert res.global_alpha == pytest.approx(1.0, abs=1e-12)


def test_raters_drawing_from_unrelated_samples_agree_at_chance_level():
    # Same boxes (localisation agreed), but every rater's classes are drawn
    # independently from the class distribution: alpha about 0.
    rng = np.random.default_rng(11)
    objects = []
    for _ in range(400):
        k = int(rng.integers(1, 6))
        cells = rng.choice(16, k, replace=False)
        objects.append((np.c_[(cells % 4) * 0.25, (cells // 4) * 0.25, np.full(k, 0.2), np.full(k, 0.2)],
                        rng.integers(0, 4, k)))
    res = kalos_alpha(build(objects, 3, lambda r, s, c: rng.integers(0, 4, len(c))))
    assert abs(res.global_alpha) < 0.05
    assert abs(res.mean_alpha) < 0.1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes(max_samples=10))
def test_systematic_disagreement_is_below_zero(scene):
    rng, R, objects = scene
    # Two raters; the second always names the next class (a systematic swap).
    # (Empty samples would add agreement: both raters see nothing there.)
    objects = [o for o in objects if len(o[1])]
    if not objects:
        return
    data = build(objects, 2, lambda r, s, c: c if r == 0 else (c + 1) % 4)
    res = kalos_alpha(data)
    # No unit agrees (D_o = 1 >= D_e), so alpha <= 0; it is exactly 0 only when
    # every value is a different category (D_e = 1), impossible with more
    # than four values and four classes.
    defined = ~np.isnan(res.alpha)
    assert np.all(res.alpha[defined] <= 1e-12)
    assert np.all(res.alpha[defined & (res.n_units >= 3)] < 0)
    if res.reliability.shape[1] >= 3:
        assert res.global_alpha < 0


def test_disjoint_boxes_are_systematic_disagreement():
    data = corpus([{"a": ([A], ["cat"]), "b": ([B], ["cat"])}] * 5)
    res = kalos_alpha(data)
    assert (res.alpha < 0).all()  # per sample: systematic disagreement
    assert np.isnan(res.global_alpha) and res.bound_reason  # one class, no agreed "no object": not offered
    assert np.all(res.n_units == 2)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes(max_samples=8), st.sampled_from(["greedy", "hungarian", "agglomerative"]))
def test_per_sample_alpha_is_nominal_alpha_of_the_sample_columns(scene, solver):
    rng, R, objects = scene
    data = build(objects, R, lambda r, s, c: np.where(rng.random(len(c)) < 0.3, rng.integers(0, 4, len(c)), c))
    res = kalos_alpha(data, solver=solver)
    for s in range(data.num_samples):
        ref = nominal_alpha(res.reliability[:, res.sample_columns(s)])
        if ref.defined:
            assert res.alpha[s] == pytest.approx(ref.alpha, abs=1e-12)
        else:
            assert np.isnan(res.alpha[s])
    assert (res.alpha[~np.isnan(res.alpha)] <= 1 + 1e-12).all()


# --------------------------------------------------------------------------
# Sensitivity curve
# --------------------------------------------------------------------------


def test_sensitivity_curve_equals_kalos_alpha_at_each_tau():
    data = random_corpus(np.random.default_rng(4), 50, 3)
    curve = sensitivity_curve(data)
    assert curve.taus.tolist() == sorted(DEFAULT_TAUS)
    for k, t in enumerate(curve.taus):
        res = kalos_alpha(data, tau=float(t))
        assert curve.global_alpha[k] == pytest.approx(res.global_alpha, abs=1e-12)
        assert curve.mean_alpha[k] == pytest.approx(res.mean_alpha, abs=1e-12)
        assert curve.n_undefined[k] == res.n_undefined
        assert curve.n_units[k] == res.reliability.shape[1]
    # A stricter tau matches fewer boxes: never fewer units.
    assert np.all(np.diff(curve.n_units) >= 0)
    assert json.dumps(curve.as_dict())


def test_sensitivity_curve_with_another_solver_and_similarity():
    data = random_corpus(np.random.default_rng(6), 20, 3)
    curve = sensitivity_curve(data, taus=(0.7, 0.3), similarity="giou", solver="hungarian", cost="plain")
    assert curve.taus.tolist() == [0.3, 0.7] and curve.solver == "hungarian" and curve.similarity == "giou"
    for k, t in enumerate(curve.taus):  # each point is KaLOS with that solver, similarity and cost
        res = kalos_alpha(data, similarity="giou", tau=float(t), solver="hungarian", cost="plain")
        assert curve.global_alpha[k] == pytest.approx(res.global_alpha, abs=1e-12)
        assert curve.mean_alpha[k] == pytest.approx(res.mean_alpha, abs=1e-12)
        assert curve.n_units[k] == res.reliability.shape[1] and curve.n_undefined[k] == res.n_undefined
    assert curve.n_units[0] < curve.n_units[1]  # the stricter threshold matches fewer boxes
    default = sensitivity_curve(data, taus=(0.7, 0.3))
    assert not np.array_equal(default.global_alpha, curve.global_alpha)  # the options were used


def test_corpus_without_any_cross_rater_pair():
    """Only one rater drew anything: no candidate pair at all, every annotation its own unit."""
    from agreement.core.data import AnnotationSet, MultiRaterAnnotations
    from agreement.methods.kalos import kalos_alpha

    one = AnnotationSet(np.array([[0.1, 0.1, 0.2, 0.2]]), ["x"], [None])
    data = MultiRaterAnnotations.from_sets(["s0", "s1"], ["a", "b"], [{"a": one, "b": AnnotationSet.empty()},
                                                                      {"a": one, "b": AnnotationSet.empty()}])
    res = kalos_alpha(data, similarity="iou", tau=0.5)
    assert res.n_units.tolist() == [1, 1]
    # each sample: one unit where a says x and b no_object (D_o = D_e = 1); pooled: 1 - 1 / (8 / 12)
    # (one class and no unit of agreed "no object": the pooled value, which could never exceed 0, is not offered)
    assert res.alpha.tolist() == [0.0, 0.0] and np.isnan(res.global_alpha) and res.bound_reason


# ---------------------------------------------------------------------------
# Shards: exact merges (the statistics of a streamed run)
# ---------------------------------------------------------------------------


def _shards_of(data, bounds):
    """``data`` cut at ``bounds``, each part coded by the whole corpus' class vocabulary."""
    import dataclasses

    from agreement.core.data import class_order

    vocab = class_order(data.labels.tolist())
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = data.select_samples(np.arange(lo, hi))
        parts.append(dataclasses.replace(part, classes=vocab))
    return parts


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 39), max_size=6, unique=True))
def test_merged_shards_equal_the_whole_corpus_bit_for_bit(seed, cuts):
    from agreement.methods.kalos import kalos_shard, merge_kalos_shards
    from agreement.methods.kalos.diagnostics import class_difficulty, collaboration_clusters, rater_vitality
    from agreement.simulate.synthetic.crowd import crowd_corpus

    data, _ = crowd_corpus(40, 8, raters_per_sample=3, min_objects=0, max_objects=5, seed=seed)
    whole, curve = kalos_alpha(data), sensitivity_curve(data)
    shards = [kalos_shard(p) for p in _shards_of(data, [0, *sorted(cuts), 40])]
    merged, merged_curve = merge_kalos_shards([s.without_labels() if i % 2 else s for i, s in enumerate(shards)])
    for name in ("global_alpha", "global_observed", "global_expected", "mean_alpha", "n_defined", "n_undefined"):
        a, b = getattr(merged, name), getattr(whole, name)
        assert a == b or (np.isnan(a) and np.isnan(b)), name
    for name in ("alpha", "observed", "expected"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name))
    np.testing.assert_array_equal(merged.n_units, whole.n_units)
    np.testing.assert_array_equal(merged.values.dense(), whole.values.dense())
    assert len(merged.unit) == (len(whole.unit) if len(shards) == 1 else 0)  # odd shards dropped their labels
    np.testing.assert_array_equal(merge_kalos_shards(shards)[0].unit, whole.unit)
    for name in ("global_alpha", "mean_alpha", "n_undefined", "n_units"):
        np.testing.assert_array_equal(getattr(merged_curve, name), getattr(curve, name))
    np.testing.assert_array_equal(rater_vitality(merged).alpha_without, rater_vitality(whole).alpha_without)
    np.testing.assert_array_equal(class_difficulty(merged).alpha, class_difficulty(whole).alpha)
    assert collaboration_clusters(merged).pairs.to_records() == collaboration_clusters(whole).pairs.to_records()


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_coincidence_counts_merge_exactly_in_any_order(data):
    from agreement.methods.kalos import CoincidenceCounts

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    mats = [np.where(rng.random((5, 7)) < 0.3, -1, rng.integers(0, 4, (5, 7))) for _ in range(3)]
    counts = [CoincidenceCounts.of(m, 4) for m in mats]
    whole = CoincidenceCounts.of(np.concatenate(mats, axis=1), 4)
    a = counts[0].merge(counts[1]).merge(counts[2])
    b = counts[2].merge(counts[0].merge(counts[1]))
    for m in (a, b):
        assert m.pairs.keys() == whole.pairs.keys() and m.n_units == whole.n_units
        for size in whole.pairs:
            np.testing.assert_array_equal(m.pairs[size], whole.pairs[size])
        np.testing.assert_array_equal(m.coincidence(), whole.coincidence())
    ref = nominal_alpha(np.concatenate(mats, axis=1))
    assert whole.alpha().alpha == pytest.approx(ref.alpha, abs=1e-12, nan_ok=True)


def test_shards_with_another_vocabulary_are_refused():
    import dataclasses

    from agreement.methods.kalos import kalos_shard, merge_kalos_shards
    from agreement.simulate.synthetic.crowd import crowd_corpus

    data, _ = crowd_corpus(10, 4, raters_per_sample=3, seed=1)
    a, b = (data.select_samples(np.arange(0, 5)), data.select_samples(np.arange(5, 10)))
    b = dataclasses.replace(b, labels=np.full(len(b.labels), "only_in_b", dtype=object))  # another vocabulary
    shards = [kalos_shard(a), kalos_shard(b)]
    assert shards[0].result.categories != shards[1].result.categories
    with pytest.raises(ValueError, match="class vocabulary"):
        merge_kalos_shards(shards)
    with pytest.raises(ValueError, match="are not in the corpus vocabulary"):
        kalos_shard(dataclasses.replace(a, classes=("nothing",)))


# --------------------------------------------------------------------------
# The single-class bound (issue 47, defect 2)
# --------------------------------------------------------------------------


def _single_class(n: int, shift: float, empty: int = 0):
    """``n`` samples of one class: rater b's box shifted by ``shift`` from a's; one object only a drew;
    ``empty`` samples where both drew nothing."""
    samples = [{"a": ([[0.1 + 0.02 * (i % 5), 0.1, 0.3, 0.3]], ["seg"]),
                "b": ([[0.1 + 0.02 * (i % 5) + shift, 0.1, 0.3, 0.3]], ["seg"])} for i in range(n)]
    samples.append({"a": ([[0.6, 0.6, 0.2, 0.2]], ["seg"]), "b": (np.zeros((0, 4)), [])})
    samples += [{"a": (np.zeros((0, 4)), []), "b": (np.zeros((0, 4)), [])} for _ in range(empty)]
    return corpus(samples)


def test_single_class_without_agreed_emptiness_is_not_offered():
    """One class, no unit where both raters say "no object": α = (1 - u)/(n - u) <= 0 whatever the raters do
    (careful raters got -0.002 before), so global and mean α are NaN with the reason; the per-sample values stay."""
    from agreement.methods.kalos.nominal import SINGLE_CLASS_REASON

    r = kalos_alpha(_single_class(20, 0.01))
    assert np.isnan(r.global_alpha) and r.global_reason == SINGLE_CLASS_REASON
    assert np.isnan(r.mean_alpha) and r.mean_reason == SINGLE_CLASS_REASON
    assert r.n_defined == 1 and np.nanmax(r.alpha) <= 0  # the one sample with a miss: alpha -0.5... kept


def test_single_class_bound_formula_and_empty_samples_lift_it():
    """The bound is exact: without the rule α would be (1 - u)/(n - u); one sample where both drew nothing
    (a unit of agreed "no object", as the reference counts an empty image) makes α meaningful again."""
    from agreement.methods.kalos.nominal import single_class_bound

    r = kalos_alpha(_single_class(20, 0.01))
    o = r.counts.coincidence()
    u, n = o[0, 1], o.sum()
    assert single_class_bound(r.counts, r.no_object_code)
    assert (1 - u) / (n - u) <= 0
    lifted = kalos_alpha(_single_class(20, 0.01, empty=3))
    assert lifted.global_reason == "" and lifted.global_alpha > 0.5


def test_single_class_bound_is_the_same_on_shards():
    """The rule reads the merged coincidence counts: shards that each hold an empty sample or not give the
    whole corpus's answer."""
    from agreement.methods.kalos import kalos_shard, merge_kalos_shards

    data = _single_class(20, 0.01, empty=1)
    whole = kalos_alpha(data)
    parts = [kalos_shard(data.select_samples(np.arange(lo, min(lo + 5, data.num_samples))), tau=0.5)
             for lo in range(0, data.num_samples, 5)]
    merged, _ = merge_kalos_shards(parts)
    assert merged.global_alpha == pytest.approx(whole.global_alpha) and merged.global_reason == ""
    bounded = _single_class(20, 0.01)
    parts = [kalos_shard(bounded.select_samples(np.arange(lo, min(lo + 5, bounded.num_samples))), tau=0.5)
             for lo in range(0, bounded.num_samples, 5)]
    merged, _ = merge_kalos_shards(parts)
    assert np.isnan(merged.global_alpha) and merged.bound_reason
