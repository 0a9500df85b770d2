"""Correspondence solvers: validation, hand cases, the reference's greedy as an
oracle, permutation invariance, and the one-rater-per-unit rule for every solver."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agreement.geometry.boxes import pairwise_iou
from agreement.geometry.correspondence import (
    COSTS,
    SOLVERS,
    canonical_rank,
    check_cost,
    check_solver,
    check_tau,
    correspond,
    pair_cost,
    solve_units,
)

HAVE_MGM = True
try:  # pragma: no cover - environment dependent
    import pylibmgm  # noqa: F401
except ImportError:  # pragma: no cover
    HAVE_MGM = False

AVAILABLE = [s for s in SOLVERS if s != "mgm" or HAVE_MGM]


def partition(units, ids):
    """Units as a set of frozensets of ids."""
    out: dict[int, set] = {}
    for u, i in zip(np.asarray(units).tolist(), ids):
        out.setdefault(u, set()).add(i)
    return {frozenset(v) for v in out.values()}


def box_similarity(boxes):
    boxes = np.asarray(boxes, dtype=float)
    return lambda a, b: pairwise_iou(boxes[a], boxes[b])


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("tau", [0, 0.0, -0.1, 1.0000001, 2, float("nan"), True, "0.5", None])
def test_tau_outside_0_1_is_rejected(tau):
    with pytest.raises(ValueError, match="tau"):
        check_tau(tau)


@pytest.mark.parametrize("tau", [1e-9, 0.5, 1, 1.0, np.float32(0.25)])
def test_tau_inside_is_accepted(tau):
    assert check_tau(tau) == float(tau)


def test_unknown_solver_and_cost_name_the_options():
    with pytest.raises(ValueError, match="greedy.*hungarian.*agglomerative.*mgm"):
        check_solver("kmeans")
    with pytest.raises(ValueError, match="soft.*plain"):
        check_cost("hard")
    with pytest.raises(ValueError, match="unknown solver"):
        correspond(["a", "b"], ["x", "x"], box_similarity([[0, 0, 1, 1]] * 2), solver="Greedy")
    with pytest.raises(ValueError, match="unknown cost"):
        solve_units([0, 1], [0, 0], [0], [1], [1.0], cost="lenient")


def test_solve_units_rejects_bad_pairs():
    with pytest.raises(ValueError, match="one rater"):
        solve_units([0, 0], [0, 0], [0], [1], [0.9])
    with pytest.raises(ValueError, match="different samples"):
        solve_units([0, 1], [0, 0], [0], [1], [0.9], group=[0, 1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        solve_units([0, 1], [0, 0], [0], [1], [np.nan])
    with pytest.raises(ValueError, match="non-decreasing"):
        solve_units([0, 1], [0, 0], [], [], [], group=[1, 0])
    with pytest.raises(ValueError, match="out of range"):
        solve_units([0, 1], [0, 0], [0], [5], [0.9])


def test_similarity_matrix_of_wrong_shape_or_range_is_an_error():
    with pytest.raises(ValueError, match="shape"):
        correspond(["a", "b"], ["x", "x"], lambda a, b: np.ones((2, 2)))
    with pytest.raises(ValueError, match="outside"):
        correspond(["a", "b"], ["x", "x"], lambda a, b: np.full((1, 1), 1.5))
    with pytest.raises(ValueError, match="no similarity matrix"):
        correspond(["a", "b"], ["x", "x"], {("a", "c"): np.ones((1, 1))})


# --------------------------------------------------------------------------
# Costs and hand cases
# --------------------------------------------------------------------------


def test_pair_cost_soft_and_plain():
    s = np.array([0.9, 0.6, 0.5])
    same = np.array([True, False, True])
    np.testing.assert_array_equal(pair_cost(s, same, cost="soft"), [-1.9, -0.6, -1.5])
    np.testing.assert_array_equal(pair_cost(s, same, cost="plain"), [-0.9, -0.6, -0.5])
    # bit for bit as the reference: (-s) - 1.0
    x = np.array([0.7000000000000001])
    assert pair_cost(x, [True])[0] == -x[0] - 1.0


def test_soft_cost_prefers_the_same_class_over_better_localisation():
    # a0 (cat) overlaps b0 (dog) with IoU 0.9 and b1 (cat) with IoU 0.6.
    sim = {("a", "b"): np.array([[0.9, 0.6]])}
    soft = correspond(["a", "b", "b"], ["cat", "dog", "cat"], sim, cost="soft")
    plain = correspond(["a", "b", "b"], ["cat", "dog", "cat"], sim, cost="plain")
    assert soft.tolist() == [0, 1, 0]  # a0 with b1 (same class)
    assert plain.tolist() == [0, 0, 1]  # a0 with b0 (better IoU)


def test_below_tau_is_never_matched_and_at_tau_is():
    sim = {("a", "b"): np.array([[0.5]])}
    assert correspond(["a", "b"], ["x", "x"], sim, tau=0.5).tolist() == [0, 0]
    assert correspond(["a", "b"], ["x", "x"], sim, tau=0.5000001).tolist() == [0, 1]


def test_greedy_refuses_a_merge_that_puts_one_rater_twice_in_a_unit():
    # a0-b0 (0.9), b0-c0 (0.8) form {a0, b0, c0}; then a1-c0 (0.7) would add a
    # second 'a' and b1-c0 would add a second 'b': both refused.
    raters = ["a", "a", "b", "b", "c"]
    S = np.zeros((5, 5))

    def put(i, j, v):
        S[i, j] = S[j, i] = v

    put(0, 2, 0.9)
    put(2, 4, 0.8)
    put(1, 4, 0.7)
    put(3, 4, 0.6)
    units = correspond(raters, ["x"] * 5, lambda a, b: S[np.ix_(a, b)], tau=0.5)
    assert partition(units, range(5)) == {frozenset({0, 2, 4}), frozenset({1}), frozenset({3})}


def test_greedy_refuses_merging_two_units_that_share_a_rater():
    # {a0, b0} and {a1, c0} exist; b0-c0 would merge them with two 'a's.
    raters = ["a", "a", "b", "c"]
    S = np.zeros((4, 4))
    for i, j, v in [(0, 2, 0.95), (1, 3, 0.9), (2, 3, 0.85)]:
        S[i, j] = S[j, i] = v
    units = correspond(raters, ["x"] * 4, lambda a, b: S[np.ix_(a, b)])
    assert partition(units, range(4)) == {frozenset({0, 2}), frozenset({1, 3})}


def test_units_are_numbered_by_first_annotation_and_per_group():
    units = solve_units([0, 1, 0, 1], [0, 0, 0, 0], [0, 2], [1, 3], [0.9, 0.9], group=[0, 0, 1, 1])
    assert units.tolist() == [0, 0, 0, 0]
    units = solve_units([0, 0, 1, 1], [0, 0, 0, 0], [1], [2], [0.9])
    assert units.tolist() == [0, 1, 1, 2]


def test_empty_and_no_candidates():
    assert solve_units([], [], [], [], []).tolist() == []
    assert correspond(["a", "b", "b"], [1, 1, 2], lambda a, b: np.zeros((len(a), len(b)))).tolist() == [0, 1, 2]


def test_canonical_rank_ignores_input_order():
    g = np.array([0, 0, 0, 1])
    c = np.array([1, 0, 1, 0])
    k = np.array([[0.3], [0.9], [0.1], [0.5]])
    r = canonical_rank(g, c, keys=k)
    assert r.tolist() == [2, 0, 1, 3]
    p = np.array([2, 0, 1, 3])
    assert canonical_rank(g[p], c[p], keys=k[p]).tolist() == r[p].tolist()


@pytest.mark.parametrize("solver", AVAILABLE)
def test_every_solver_on_a_clear_case(solver):
    # Three raters, two well separated objects each, one rater misses one.
    boxes = [[0.1, 0.1, 0.2, 0.2], [0.6, 0.6, 0.2, 0.2],
             [0.11, 0.1, 0.2, 0.2], [0.6, 0.61, 0.2, 0.2],
             [0.1, 0.12, 0.2, 0.2]]
    raters = ["a", "a", "b", "b", "c"]
    units = correspond(raters, ["x", "y", "x", "y", "x"], box_similarity(boxes), solver=solver)
    assert partition(units, range(5)) == {frozenset({0, 2, 4}), frozenset({1, 3})}


def test_hungarian_is_the_minimum_cost_matching_for_two_raters():
    # Greedy takes a0-b0 (0.9) and leaves a1, b1 unmatched (a1-b1 < tau);
    # the optimal matching a0-b1 + a1-b0 has a lower total cost.
    S = np.array([[0.9, 0.8], [0.85, 0.0]])
    sim = {("a", "b"): S}
    greedy = correspond(["a", "a", "b", "b"], ["x"] * 4, sim, solver="greedy")
    hung = correspond(["a", "a", "b", "b"], ["x"] * 4, sim, solver="hungarian")
    assert partition(greedy, range(4)) == {frozenset({0, 2}), frozenset({1}), frozenset({3})}
    assert partition(hung, range(4)) == {frozenset({0, 3}), frozenset({1, 2})}


def test_agglomerative_units_are_cliques_of_candidates():
    # a0-b0 and b0-c0 are candidates, a0-c0 is not: no unit holds a0 and c0.
    S = np.zeros((3, 3))
    S[0, 1] = S[1, 0] = 0.9
    S[1, 2] = S[2, 1] = 0.8
    units = correspond(["a", "b", "c"], ["x"] * 3, lambda a, b: S[np.ix_(a, b)], solver="agglomerative")
    assert partition(units, range(3)) == {frozenset({0, 1}), frozenset({2})}
    greedy = correspond(["a", "b", "c"], ["x"] * 3, lambda a, b: S[np.ix_(a, b)], solver="greedy")
    assert partition(greedy, range(3)) == {frozenset({0, 1, 2})}


def test_mgm_without_pylibmgm_is_a_clear_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == "pylibmgm":
            raise ImportError("No module named 'pylibmgm'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    S = np.zeros((4, 4))
    for i, j, v in [(0, 2, 0.95), (1, 3, 0.9), (2, 3, 0.85)]:
        S[i, j] = S[j, i] = v
    with pytest.raises(ImportError, match="pip install pylibmgm"):
        correspond(["a", "a", "b", "c"], ["x"] * 4, lambda a, b: S[np.ix_(a, b)], solver="mgm")


# --------------------------------------------------------------------------
# Properties: random scenes
# --------------------------------------------------------------------------


@st.composite
def scenes(draw, max_raters=4, max_objects=5):
    """Objects jittered per rater, with misses, extra boxes and class confusion."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    R = draw(st.integers(2, max_raters))
    k = draw(st.integers(0, max_objects))
    wh = rng.uniform(0.05, 0.3, (k, 2))
    xy = rng.uniform(0, 1, (k, 2)) * (1 - wh)
    cls = rng.integers(0, 3, k)
    boxes, labels, raters = [], [], []
    for r in range(R):
        for o in range(k):
            if rng.random() < 0.15:
                continue
            boxes.append(np.r_[xy[o] + rng.normal(0, 0.03, 2), wh[o] * np.exp(rng.normal(0, 0.15, 2))])
            labels.append(int(cls[o]) if rng.random() > 0.2 else int(rng.integers(0, 3)))
            raters.append(r)
        for _ in range(rng.poisson(0.7)):  # extra, possibly overlapping boxes
            o = int(rng.integers(0, max(k, 1)))
            base = np.r_[xy[o], wh[o]] if k else rng.uniform(0.1, 0.4, 4)
            boxes.append(base + rng.normal(0, 0.05, 4) * [1, 1, 0.2, 0.2])
            labels.append(int(rng.integers(0, 3)))
            raters.append(r)
    boxes = np.abs(np.asarray(boxes, dtype=float).reshape(-1, 4))
    return np.asarray(raters, dtype=np.int64), np.asarray(labels, dtype=np.int64), boxes


def reference_greedy(raters, labels, boxes, tau):
    """The kalos package's match_greedy on the same annotations; units as id sets."""
    ca = pytest.importorskip("kalos.correspondence.correspondence_algorithms")
    anns = {}
    for i, (r, c, b) in enumerate(zip(raters.tolist(), labels.tolist(), boxes.tolist())):
        anns.setdefault(f"r{r}", []).append({"id": i, "rater_id": f"r{r}", "category_id": c, "bbox": b})
    image = {"rater_list": sorted(anns), "annotations_by_rater": anns}
    scores = ca.precompute_pairwise_scores(image, ca.THRESHOLD_FUNCTIONS["bbox_iou_similarity"], tau)
    clusters = ca.match_greedy(image, scores, ca.COST_FUNCTIONS["category_lenient"], tau)
    return {frozenset(c) for c in clusters}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes(), st.sampled_from([0.25, 0.5]))
def test_greedy_equals_the_reference_greedy(scene, tau):
    raters, labels, boxes = scene
    units = correspond(raters, labels, box_similarity(boxes), tau=tau, keys=boxes)
    assert partition(units, range(len(raters))) == reference_greedy(raters, labels, boxes, tau)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes(), st.integers(0, 2**32 - 1))
def test_greedy_is_invariant_to_rater_renaming_and_annotation_order(scene, seed):
    raters, labels, boxes = scene
    n = len(raters)
    units = correspond(raters, labels, box_similarity(boxes), keys=boxes)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    rename = rng.permutation(raters.max() + 1 if n else 1)
    units_p = correspond(rename[raters[perm]], labels[perm], box_similarity(boxes[perm]), keys=boxes[perm])
    back = np.empty(n, dtype=np.int64)
    back[perm] = units_p
    assert partition(back, range(n)) == partition(units, range(n))


def test_greedy_is_invariant_even_with_exact_ties():
    # Duplicated boxes give exact cost ties; the canonical order decides.
    base = np.array([[0.1, 0.1, 0.3, 0.3], [0.15, 0.1, 0.3, 0.3]])
    boxes = np.vstack([base, base, base[:1]])
    raters = np.array([0, 0, 1, 1, 2])
    labels = np.array([0, 0, 0, 0, 0])
    ref = correspond(raters, labels, box_similarity(boxes), keys=boxes)
    for seed in range(20):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(5)
        rename = rng.permutation(3)
        u = correspond(rename[raters[perm]], labels[perm], box_similarity(boxes[perm]), keys=boxes[perm])
        back = np.empty(5, dtype=np.int64)
        back[perm] = u
        # Same units by content (identical boxes of one rater are interchangeable).
        content = lambda un: sorted(sorted((int(raters[i]), tuple(boxes[i])) for i in np.flatnonzero(un == k))
                                    for k in np.unique(un))  # noqa: E731
        assert content(back) == content(ref)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes(max_raters=4, max_objects=4), st.sampled_from(AVAILABLE), st.sampled_from(COSTS),
       st.sampled_from([0.1, 0.3, 0.6]))
def test_every_solver_keeps_one_annotation_per_rater_and_links_by_candidates(scene, solver, cost, tau):
    raters, labels, boxes = scene
    n = len(raters)
    S = pairwise_iou(boxes, boxes) if n else np.zeros((0, 0))
    units = correspond(raters, labels, box_similarity(boxes), tau=tau, solver=solver, cost=cost, keys=boxes)
    assert len(units) == n
    if n == 0:
        return
    assert set(np.unique(units).tolist()) == set(range(units.max() + 1))
    for u in np.unique(units):
        members = np.flatnonzero(units == u)
        assert len(np.unique(raters[members])) == len(members)
        if len(members) > 1:
            # Every member has a candidate partner in its unit.
            sub = S[np.ix_(members, members)] >= tau
            np.fill_diagonal(sub, False)
            assert sub.any(axis=1).all()
            if solver == "agglomerative":
                off = ~np.eye(len(members), dtype=bool)
                assert sub[off].all()


def test_solve_units_many_groups_equals_one_group_at_a_time():
    rng = np.random.default_rng(3)
    raters_all, labels_all, boxes_all, groups = [], [], [], []
    for g in range(30):
        k = rng.integers(1, 5)
        R = rng.integers(2, 4)
        for r in range(R):
            for o in range(k):
                boxes_all.append([0.2 * o + rng.normal(0, 0.01), 0.1, 0.15, 0.15])
                labels_all.append(int(rng.integers(0, 2)))
                raters_all.append(r)
                groups.append(g)
    raters_all, labels_all, groups = map(np.asarray, (raters_all, labels_all, groups))
    boxes_all = np.abs(np.asarray(boxes_all))
    i, j = np.nonzero(np.triu(groups[:, None] == groups[None, :], 1) & (raters_all[:, None] != raters_all[None, :]))
    s = pairwise_iou(boxes_all, boxes_all)[i, j]
    for solver in AVAILABLE:
        together = solve_units(raters_all, labels_all, i, j, s, solver=solver, group=groups, keys=boxes_all)
        for g in range(30):
            rows = np.flatnonzero(groups == g)
            alone = correspond(raters_all[rows], labels_all[rows], box_similarity(boxes_all[rows]), solver=solver,
                               keys=boxes_all[rows])
            assert together[rows].tolist() == alone.tolist(), (solver, g)
