"""OT agreement between two labelled box sets: hand cases, oracles (POT's exact
``ot.emd``, brute force over all partial matchings, the dummy-augmented square
assignment), Hypothesis properties, and the per-sample corpus scores."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from scipy.optimize import linear_sum_assignment

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.geometry.boxes import pairwise_giou
from agreement.methods.ot import (
    ot_cost_from_matrix,
    ot_from_cost_matrix,
    ot_match,
    ot_score,
    pair_cost_matrix,
    sample_ot_scores,
    set_pair_costs,
)
from agreement.methods.ot.bounds import score_bounds

pot = pytest.importorskip("ot")

LABELS = ["cat", "dog", "car"]


# --------------------------------------------------------------------------- helpers


def random_set(rng, n, labels=LABELS):
    xy = rng.uniform(0, 0.8, size=(n, 2))
    wh = rng.uniform(0.02, 0.4, size=(n, 2))
    return np.hstack([xy, wh]), list(rng.choice(labels, size=n))


def pot_cost(c, beta, normalization):
    """The balanced OT problem with dummy mass, solved exactly by POT."""
    n, m = c.shape
    if n + m == 0:
        return 0.0
    w = 2.0 if normalization == "paper" else 1.0
    M = np.zeros((n + 1, m + 1))
    M[:n, :m] = w * c
    M[:n, m] = beta
    M[n, :m] = beta
    a = np.r_[np.ones(n), float(m)]
    b = np.r_[np.ones(m), float(n)]
    G = pot.emd(a, b, M)
    total = float(np.sum(G * M))
    k = float(G[:n, :m].sum())
    return total / (n + m) if normalization == "paper" else total / (n + m - k)


def partial_matchings(n, m):
    """Every partial one-to-one matching between range(n) and range(m)."""
    def rec(i, used):
        if i == n:
            yield []
            return
        yield from rec(i + 1, used)
        for j in range(m):
            if j not in used:
                for rest in rec(i + 1, used | {j}):
                    yield [(i, j)] + rest
    yield from rec(0, frozenset())


def brute_force(c, beta, normalization):
    n, m = c.shape
    if n + m == 0:
        return 0.0
    w = 2.0 if normalization == "paper" else 1.0
    best = None
    for M in partial_matchings(n, m):
        k = len(M)
        total = w * sum(c[i, j] for i, j in M) + beta * (n + m - 2 * k)
        if best is None or total < best[0] - 1e-15:
            best = (total, k)
    total, k = best
    return total / (n + m) if normalization == "paper" else total / (n + m - k)


def augmented_assignment(c, beta, normalization):
    """The textbook exact form: an (n + m) square assignment with explicit dummies."""
    n, m = c.shape
    N = n + m
    if N == 0:
        return 0.0
    w = 2.0 if normalization == "paper" else 1.0
    big = 1e9
    M = np.zeros((N, N))
    M[:n, :m] = w * c
    M[:n, m:] = np.where(np.eye(n, dtype=bool), beta, big)
    M[n:, :m] = np.where(np.eye(m, dtype=bool), beta, big)
    r, q = linear_sum_assignment(M)
    total = M[r, q].sum()
    k = int(((r < n) & (q < m)).sum())
    return total / N if normalization == "paper" else total / (N - k)


# --------------------------------------------------------------------------- hand cases


def test_pair_cost_matrix_hand():
    a = [[0.0, 0.0, 0.25, 0.25]]
    b = [[0.0, 0.0, 0.25, 0.25], [0.25, 0.0, 0.25, 0.25], [0.75, 0.0, 0.25, 0.25]]
    # GIoU = 1, 0, -0.5 (geometry module docstring).
    c = pair_cost_matrix(a, ["cat"], b, ["cat", "cat", "dog"], lam=0.5)
    np.testing.assert_allclose(c, [[0.0, 0.25, 0.5 * 1.5 / 2 + 0.5]])
    c1 = pair_cost_matrix(a, ["cat"], b, ["dog", "dog", "dog"], lam=1.0)
    np.testing.assert_allclose(c1, [[0.0, 0.5, 0.75]])
    c0 = pair_cost_matrix(a, ["cat"], b, ["dog", "cat", "dog"], lam=0.0)
    np.testing.assert_allclose(c0, [[1.0, 0.0, 1.0]])
    assert pair_cost_matrix(np.zeros((0, 4)), [], b, ["a"] * 3).shape == (0, 3)


@pytest.mark.parametrize(
    "c, beta, norm, expected",
    [
        # One pair below beta: matched, each box pays c: cost = 2c / 2.
        ([[0.2]], 0.5, "paper", 0.2),
        # Above beta: both to dummies: cost = 2 beta / 2.
        ([[0.6]], 0.5, "paper", 0.5),
        # OC-cost matches when c < 2 beta: cost c / (2 - 1).
        ([[0.6]], 0.5, "oc_cost", 0.6),
        ([[0.6]], 0.25, "oc_cost", 0.25),
        # n = 1, m = 0: one dummy.
        (np.zeros((1, 0)), 0.3, "paper", 0.3),
        (np.zeros((0, 2)), 0.3, "oc_cost", 0.3),
        (np.zeros((0, 0)), 0.3, "paper", 0.0),
        # 2 x 3: best is (0,1) at 0.1 and (1,0) at 0.2, one B box to a dummy:
        # paper (2*0.1 + 2*0.2 + 0.5) / 5 = 0.22; OC (0.1 + 0.2 + 0.5) / (5 - 2).
        ([[0.3, 0.1, 0.9], [0.2, 0.35, 0.9]], 0.5, "paper", 0.22),
        ([[0.3, 0.1, 0.9], [0.2, 0.35, 0.9]], 0.5, "oc_cost", 0.8 / 3),
    ],
)
def test_hand_costs(c, beta, norm, expected):
    c = np.asarray(c, dtype=float)
    res = ot_from_cost_matrix(c, beta=beta, normalization=norm)
    assert res.cost == pytest.approx(expected)
    assert res.score == pytest.approx(1 - expected)
    assert ot_cost_from_matrix(c, beta=beta, normalization=norm) == pytest.approx(expected)


def test_matching_and_paid():
    c = np.array([[0.3, 0.1, 0.9], [0.2, 0.35, 0.9]])
    res = ot_from_cost_matrix(c, beta=0.5)
    assert res.match_a.tolist() == [1, 0]
    assert res.match_b.tolist() == [1, 0, -1]
    np.testing.assert_allclose(res.paid_a, [0.1, 0.2])
    np.testing.assert_allclose(res.paid_b, [0.2, 0.1, 0.5])
    assert res.n_matched == 2 and (res.n_a, res.n_b) == (2, 3)
    # Paper normalisation: the cost is the mean of what every box paid.
    assert res.cost == pytest.approx(np.r_[res.paid_a, res.paid_b].mean())
    assert res.total == pytest.approx(2 * 0.1 + 2 * 0.2 + 0.5)


def test_ot_match_on_boxes():
    a = np.array([[0.1, 0.1, 0.2, 0.2], [0.5, 0.5, 0.2, 0.2]])
    b = np.array([[0.5, 0.5, 0.2, 0.2], [0.1, 0.1, 0.2, 0.2]])
    res = ot_match(a, ["cat", "dog"], b, ["dog", "cat"])
    assert res.score == pytest.approx(1.0)
    assert res.match_a.tolist() == [1, 0]
    assert ot_score(a, ["cat", "dog"], b, ["dog", "cat"]) == pytest.approx(1.0)
    # Same box, different labels: c = 1 - lam = 0.5 = beta, a tie, so not matched.
    one = a[:1]
    res2 = ot_match(one, ["cat"], one, ["dog"], lam=0.5, beta=0.5)
    assert res2.n_matched == 0 and res2.cost == pytest.approx(0.5)
    res3 = ot_match(one, ["cat"], one, ["dog"], lam=0.5, beta=0.6)
    assert res3.n_matched == 1 and res3.cost == pytest.approx(0.5)


@pytest.mark.parametrize("bad", [dict(lam=-0.1), dict(lam=1.5), dict(beta=0.0), dict(beta=1.01),
                                 dict(beta=float("nan")), dict(normalization="sinkhorn")])
def test_bad_parameters(bad):
    a = np.array([[0.1, 0.1, 0.2, 0.2]])
    with pytest.raises(ValueError):
        ot_match(a, ["x"], a, ["x"], **bad)


def test_bad_boxes():
    ok = np.array([[0.1, 0.1, 0.2, 0.2]])
    with pytest.raises(ValueError, match="NaN"):
        ot_match(np.array([[np.nan, 0, 0.1, 0.1]]), ["x"], ok, ["x"])
    with pytest.raises(ValueError, match="negative"):
        ot_match(np.array([[0.1, 0.1, -0.1, 0.1]]), ["x"], ok, ["x"])
    with pytest.raises(ValueError, match="entries"):
        ot_match(ok, ["x", "y"], ok, ["x"])
    with pytest.raises(ValueError):
        ot_from_cost_matrix(np.array([[np.inf]]))


# --------------------------------------------------------------------------- oracles


@pytest.mark.parametrize("normalization", ["paper", "oc_cost"])
def test_oracle_pot_emd(normalization):
    rng = np.random.default_rng(2024)
    for _ in range(250):
        n, m = int(rng.integers(0, 9)), int(rng.integers(0, 9))
        lam = float(rng.choice([0.0, 0.3, 0.5, 1.0]))
        beta = float(rng.uniform(0.05, 1.0))
        a, la = random_set(rng, n)
        b, lb = random_set(rng, m)
        c = pair_cost_matrix(a, la, b, lb, lam=lam)
        ours = ot_match(a, la, b, lb, lam=lam, beta=beta, normalization=normalization)
        assert ours.cost == pytest.approx(pot_cost(c, beta, normalization), abs=1e-9)
        assert ours.cost == pytest.approx(augmented_assignment(c, beta, normalization), abs=1e-9)
        # Symmetric in the two raters (continuous random costs: no ties).
        swapped = ot_match(b, lb, a, la, lam=lam, beta=beta, normalization=normalization)
        assert swapped.cost == pytest.approx(ours.cost, abs=1e-12)


@pytest.mark.parametrize("normalization", ["paper", "oc_cost"])
def test_oracle_brute_force(normalization):
    rng = np.random.default_rng(7)
    for _ in range(200):
        n, m = int(rng.integers(0, 5)), int(rng.integers(0, 5))
        c = rng.uniform(0, 1, size=(n, m))
        beta = float(rng.uniform(0.05, 1.0))
        res = ot_from_cost_matrix(c, beta=beta, normalization=normalization)
        assert res.cost == pytest.approx(brute_force(c, beta, normalization), abs=1e-12)


# --------------------------------------------------------------------------- properties

coord = st.floats(0.0, 0.8, allow_nan=False)
size = st.floats(0.01, 0.2, allow_nan=False)
box = st.tuples(coord, coord, size, size)
labelled = st.lists(st.tuples(box, st.sampled_from(LABELS)), max_size=6)
lam_st = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])
beta_st = st.floats(0.05, 1.0)


def unpack(items):
    boxes = np.array([b for b, _ in items], dtype=float).reshape(-1, 4)
    return boxes, [l for _, l in items]


@settings(max_examples=80, deadline=None)
@given(labelled, labelled, lam_st, beta_st)
def test_property_range_symmetry_bounds(A, B, lam, beta):
    a, la = unpack(A)
    b, lb = unpack(B)
    res = ot_match(a, la, b, lb, lam=lam, beta=beta)
    assert 1 - beta - 1e-12 <= res.score <= 1 + 1e-12
    assert ot_score(b, lb, a, la, lam=lam, beta=beta) == pytest.approx(res.score, abs=1e-12)
    assert score_bounds(len(a), len(b), lam=lam, beta=beta).contains(res.score)
    # Only pairs with c_ij < beta are ever matched.
    c = pair_cost_matrix(a, la, b, lb, lam=lam)
    matched = res.match_a >= 0
    assert np.all(c[np.flatnonzero(matched), res.match_a[matched]] < beta)
    oc = ot_match(a, la, b, lb, lam=lam, beta=beta, normalization="oc_cost")
    assert score_bounds(len(a), len(b), lam=lam, beta=beta, normalization="oc_cost").contains(oc.score)
    m_oc = oc.match_a >= 0
    assert np.all(c[np.flatnonzero(m_oc), oc.match_a[m_oc]] < 2 * beta)


@settings(max_examples=60, deadline=None)
@given(labelled, labelled, lam_st, beta_st, st.randoms(use_true_random=False))
def test_property_order_and_label_name_invariance(A, B, lam, beta, rnd):
    a, la = unpack(A)
    b, lb = unpack(B)
    s = ot_score(a, la, b, lb, lam=lam, beta=beta)
    pa = list(range(len(a)))
    pb = list(range(len(b)))
    rnd.shuffle(pa)
    rnd.shuffle(pb)
    rename = {"cat": "x", "dog": "y", "car": "z"}
    s2 = ot_score(a[pa], [rename[la[i]] for i in pa], b[pb], [rename[lb[i]] for i in pb], lam=lam, beta=beta)
    assert s2 == pytest.approx(s, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(labelled, lam_st, beta_st, st.sampled_from(["paper", "oc_cost"]))
def test_property_identical_sets_score_one(A, lam, beta, norm):
    a, la = unpack(A)
    res = ot_match(a, la, a.copy(), list(la), lam=lam, beta=beta, normalization=norm)
    assert res.score == pytest.approx(1.0, abs=1e-12)
    if len(a):
        assert res.n_matched == len(a)


@pytest.mark.parametrize("norm", ["paper", "oc_cost"])
def test_both_empty_cost_zero(norm):
    res = ot_match(np.zeros((0, 4)), [], np.zeros((0, 4)), [], normalization=norm)
    assert res.cost == 0.0 and res.score == 1.0 and res.n_matched == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.floats(0.05, 1.0), st.floats(0.05, 1.0), st.integers(0, 2**31 - 1))
def test_property_equal_counts_lam_le_beta_no_dummy(n, lam, beta, seed):
    # Agreeing labels, equal counts and lam <= beta: every c_ij < lam <= beta
    # (GIoU > -1), so every box is matched and the score is in [1 - lam, 1].
    assume(lam <= beta)
    rng = np.random.default_rng(seed)
    a, _ = random_set(rng, n)
    b, _ = random_set(rng, n)
    res = ot_match(a, ["cat"] * n, b, ["cat"] * n, lam=lam, beta=beta)
    assert res.n_matched == n
    assert np.all(res.match_a >= 0) and np.all(res.match_b >= 0)
    assert 1 - lam - 1e-12 <= res.score <= 1 + 1e-12


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(labelled, labelled, lam_st, beta_st, st.integers(0, 2**31 - 1))
def test_property_moving_a_box_away_never_increases_score(A, B, lam, beta, seed):
    a, la = unpack(A)
    b, lb = unpack(B)
    assume(len(a) > 0)
    rng = np.random.default_rng(seed)
    i = int(rng.integers(len(a)))
    g_old = pairwise_giou(a[i:i + 1], b)
    moved = None
    direction = rng.normal(size=2)
    direction /= np.linalg.norm(direction)
    for t in (0.1, 0.2, 0.4, 0.8, 1.6):  # translate further and further
        cand = a.copy()
        cand[i, :2] += t * direction
        if np.all(pairwise_giou(cand[i:i + 1], b) <= g_old):
            moved = cand
            break
    assume(moved is not None)
    assert ot_score(moved, la, b, lb, lam=lam, beta=beta) <= ot_score(a, la, b, lb, lam=lam, beta=beta) + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 4), st.integers(0, 4), beta_st, st.integers(0, 2**31 - 1))
def test_property_cost_monotone_in_pair_costs(n, m, beta, seed):
    rng = np.random.default_rng(seed)
    c = rng.uniform(0, 1, size=(n, m))
    worse = np.minimum(c + rng.uniform(0, 0.5, size=(n, m)) * (rng.random((n, m)) < 0.5), 1.0)
    assert ot_cost_from_matrix(worse, beta=beta) >= ot_cost_from_matrix(c, beta=beta) - 1e-12


def test_oc_cost_discontinuity_example():
    # beta = 0.3 < 0.5: OC-cost matches a pair iff c < 2 beta = 0.6. One box per
    # rater, same label, lam = 1 so c = (1 - GIoU) / 2; move B away from A so
    # that c crosses 0.6 (GIoU crosses -0.2).
    beta = 0.3
    a = np.array([[0.1, 0.1, 0.2, 0.2]])

    def c_at(dx):
        b = np.array([[0.1 + dx, 0.1, 0.2, 0.2]])
        return b, float(pair_cost_matrix(a, ["x"], b, ["x"], lam=1.0)[0, 0])

    lo, hi = 0.2, 0.9  # c(0.2) < 0.6 < c(0.9); bisect the crossing
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if c_at(mid)[1] < 2 * beta else (lo, mid)
    b_close, c_close = c_at(lo - 1e-4)
    b_far, c_far = c_at(hi + 1e-4)
    assert c_close < 2 * beta < c_far  # the far pair is worse
    close = ot_match(a, ["x"], b_close, ["x"], lam=1.0, beta=beta, normalization="oc_cost")
    far = ot_match(a, ["x"], b_far, ["x"], lam=1.0, beta=beta, normalization="oc_cost")
    assert close.n_matched == 1 and far.n_matched == 0
    assert close.score == pytest.approx(1 - c_close)  # about 0.4
    assert far.score == pytest.approx(1 - beta)  # 0.7: the worse pair scores higher
    assert far.score > close.score + 0.25
    assert close.cost > beta  # OC-cost can exceed beta
    # The paper normalisation is continuous and monotone here: both unmatched.
    p_close = ot_match(a, ["x"], b_close, ["x"], lam=1.0, beta=beta)
    p_far = ot_match(a, ["x"], b_far, ["x"], lam=1.0, beta=beta)
    assert p_close.score == pytest.approx(p_far.score) == pytest.approx(1 - beta)


# --------------------------------------------------------------------------- corpus


def _corpus(rng, S=6, raters=("r1", "r2", "r3"), p_assign=0.8, max_boxes=5):
    sets = []
    for s in range(S):
        mapping = {}
        for r in raters:
            if rng.random() < p_assign:
                n = int(rng.integers(0, max_boxes + 1))
                bx, lb = random_set(rng, n)
                mapping[r] = AnnotationSet(bx, lb, [f"{s}-{r}-{k}" for k in range(n)])
        sets.append(mapping)
    return MultiRaterAnnotations.from_sets([f"s{s}" for s in range(S)], list(raters), sets, box_policy="clip")


def test_sample_scores_match_pairwise_ot():
    rng = np.random.default_rng(11)
    data = _corpus(rng, S=8)
    lam, beta = 0.5, 0.4
    res = sample_ot_scores(data, lam=lam, beta=beta)
    for s in range(data.num_samples):
        sets = data.sets(s)
        names = sorted(sets)
        scores = [ot_score(sets[x].boxes, sets[x].labels, sets[y].boxes, sets[y].labels, lam=lam, beta=beta)
                  for x, y in itertools.combinations(names, 2)]
        if len(names) < 2:
            assert np.isnan(res.mean[s]) and res.reasons[s] and res.n_pairs[s] == 0
        else:
            assert res.mean[s] == pytest.approx(np.mean(scores))
            assert res.min[s] == pytest.approx(np.min(scores))
            assert res.n_pairs[s] == len(scores) and res.reasons[s] == ""
    # Every pair's score within its bounds; positions in [0, 1] or NaN.
    assert np.all((res.pair_score >= res.pair_lower - 1e-12) & (res.pair_score <= res.pair_upper + 1e-12))
    pos = res.pair_position[~np.isnan(res.pair_position)]
    assert np.all((pos >= 0) & (pos <= 1))
    # Edges: each pair lists n + m boxes and the paper cost is their mean paid.
    for p in range(len(res.pair_cost)):
        e = res.edge_pair == p
        assert e.sum() == res.pair_n_a[p] + res.pair_n_b[p]
        if e.any():
            assert res.edge_paid[e].mean() == pytest.approx(res.pair_cost[p])


def test_sample_scores_explicit_vs_implicit_absence_and_matching():
    box = np.array([[0.1, 0.1, 0.3, 0.3]])
    sets = [
        {"a": AnnotationSet(box, ["cat"], ["a0"]), "b": AnnotationSet(box, ["cat"], ["b0"])},
        {"a": AnnotationSet(box, ["cat"], ["a1"]), "b": AnnotationSet.empty()},  # explicit absence
        {"a": AnnotationSet(box, ["cat"], ["a2"]), "b": None},  # implicit: not scored
        {"a": AnnotationSet.empty(), "b": AnnotationSet.empty()},  # both say "nothing"
    ]
    data = MultiRaterAnnotations.from_sets(["s0", "s1", "s2", "s3"], ["a", "b"], sets)
    res = sample_ot_scores(data, beta=0.5)
    assert res.mean[0] == pytest.approx(1.0)
    assert res.mean[1] == pytest.approx(0.5)
    assert np.isnan(res.mean[2]) and "only one rater" in res.reasons[2]
    assert res.mean[3] == 1.0
    # Label-level results: the two boxes of s0 matched each other, at cost 0.
    ids = data.label_ids
    r_a0, r_b0 = list(ids).index("a0"), list(ids).index("b0")
    assert res.row_matched_row[r_a0] == r_b0 and res.row_matched_row[r_b0] == r_a0
    assert res.row_paid[r_a0] == pytest.approx(0.0)
    r_a1 = list(ids).index("a1")
    assert res.row_matched_row[r_a1] == -1 and res.row_paid[r_a1] == pytest.approx(0.5)
    assert np.isnan(res.row_paid[list(ids).index("a2")])
    # The sparse rater-pair table: one pair, three shared samples.
    t = res.rater_pairs
    assert (t.a.tolist(), t.b.tolist(), t.n_shared.tolist()) == ([0], [1], [3])
    assert t.values["mean_ot"][0] == pytest.approx((1.0 + 0.5 + 1.0) / 3)


@pytest.mark.parametrize("normalization", ["paper", "oc_cost"])
def test_set_pair_costs_bulk_equals_loop(normalization):
    rng = np.random.default_rng(5)
    data = _corpus(rng, S=10, raters=("r1", "r2"), p_assign=0.9, max_boxes=7)
    a, b = 0, 1
    Sa = np.flatnonzero(data.assigned[:, a])
    Sb = np.flatnonzero(data.assigned[:, b])
    ii = np.repeat(Sa, len(Sb))
    jj = np.tile(Sb, len(Sa))
    for max_block in (4_000_000, 30):  # one block, and many small blocks
        bulk = set_pair_costs(data, "r1", "r2", ii, jj, lam=0.5, beta=0.35, normalization=normalization,
                              max_block=max_block)
        for t in range(len(ii)):
            A, B = data.get(ii[t], a), data.get(jj[t], b)
            ref = ot_match(A.boxes, A.labels, B.boxes, B.labels, lam=0.5, beta=0.35, normalization=normalization).cost
            assert bulk[t] == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("lam,beta,normalization", [(0.5, 0.5, "paper"), (0.5, 0.35, "paper"), (0.3, 0.6, "paper"),
                                                     (0.8, 0.5, "paper"), (0.5, 0.5, "oc_cost"), (1.0, 0.5, "paper")])
def test_cost_only_solve_equals_detail_solve_bit_for_bit(lam, beta, normalization):
    """Without detail, pairs of different labels are dropped before their costs when they can never be
    eligible (1 - lam >= the threshold): the costs must be those of the full (detail) solve, bit for bit."""
    from agreement.methods.ot import PairCosts, SetPairs, solve_set_pairs

    rng = np.random.default_rng(11)
    data = _corpus(rng, S=30, raters=("r1", "r2", "r3"), p_assign=0.9, max_boxes=7)
    pc = PairCosts(data.boxes, data.labels, lam)
    off = data.offsets
    cells = np.flatnonzero(data.assigned.reshape(-1))
    ca, cb = (x.reshape(-1) for x in np.meshgrid(cells, cells, indexing="ij"))
    a0, na, b0, nb = off[ca], off[ca + 1] - off[ca], off[cb], off[cb + 1] - off[cb]
    pairs = SetPairs(a0, na, b0, nb)
    fast = solve_set_pairs(pc, pairs, beta=beta, normalization=normalization, max_block=500)
    full = solve_set_pairs(pc, pairs, beta=beta, normalization=normalization, max_block=500, n_rows=len(data.boxes))
    assert np.array_equal(fast.cost, full.cost) and np.array_equal(fast.n_matched, full.n_matched)


# --------------------------------------------------------------------------- the batched engine


def test_paired_geometry_is_bit_identical_to_pairwise():
    from agreement.geometry.boxes import pairwise_iou
    from agreement.methods.ot import PairCosts

    rng = np.random.default_rng(3)
    bx, lb = random_set(rng, 40)
    bx[:6, 2] = 0.0  # zero-area boxes: segments ...
    bx[6:9, 2:] = 0.0  # ... and points
    bx[9] = bx[0]  # identical zero-area boxes
    bx[10] = [bx[11, 0] + bx[11, 2], bx[11, 1], 0.1, bx[11, 3]]  # touching along an edge
    pc = PairCosts(bx, np.array(lb, dtype=object), 0.4)
    i, j = (x.reshape(-1) for x in np.meshgrid(np.arange(40), np.arange(40), indexing="ij"))
    np.testing.assert_array_equal(pc.giou(i, j).reshape(40, 40), pairwise_giou(bx, bx))
    np.testing.assert_array_equal(pc.iou(i, j).reshape(40, 40), pairwise_iou(bx, bx))
    np.testing.assert_array_equal(pc.cost(i, j).reshape(40, 40), pair_cost_matrix(bx, lb, bx, lb, lam=0.4))


@pytest.mark.parametrize("cardinality_first", [False, True])
@pytest.mark.parametrize("max_perms", [720, 1])  # vectorised enumeration, and linear_sum_assignment
def test_max_weight_matchings_oracle(monkeypatch, cardinality_first, max_perms):
    import agreement.methods.ot as ot_mod

    monkeypatch.setattr(ot_mod, "_MAX_PERMUTATIONS", max_perms)
    rng = np.random.default_rng(7)
    for trial in range(40):
        P = int(rng.integers(1, 25))
        ns, ms = rng.integers(0, 8, P), rng.integers(0, 8, P)
        ao, bo = np.r_[0, np.cumsum(ns)], np.r_[0, np.cumsum(ms)]
        dens = rng.uniform(0.1, 0.9)
        mats, A, B, W, T = [], [], [], [], []
        for t in range(P):
            vals = rng.choice([0.25, 0.5, 1.0], size=(ns[t], ms[t])) if trial % 2 else rng.random((ns[t], ms[t]))
            M = np.where(rng.random((ns[t], ms[t])) < dens, np.maximum(vals, 1e-3), 0.0)
            i, j = np.nonzero(M)
            mats.append(M)
            A += (ao[t] + i).tolist(); B += (bo[t] + j).tolist(); W += M[i, j].tolist(); T += [t] * len(i)
        A, B, W, T = (np.asarray(x) for x in (A, B, W, T))
        got = ot_mod.max_weight_matchings(A, B, W, int(ao[-1]), int(bo[-1]), cardinality_first=cardinality_first)
        assert len(set(A[got].tolist())) == got.sum() == len(set(B[got].tolist()))  # one-to-one
        for t, M in enumerate(mats):
            if M.size == 0:
                continue
            K = min(M.shape) + 1.0 if cardinality_first else 0.0
            Wk = np.where(M > 0, M + K, 0.0)
            r, c = linear_sum_assignment(Wk, maximize=True)
            sel = got & (T == t)
            assert (W[sel] + K).sum() == pytest.approx(Wk[r, c].sum(), abs=1e-9)


def test_max_weight_matchings_with_hundreds_of_component_shapes(monkeypatch):
    """More than 256 distinct component shapes (r, q): the grouping by shape is not limited to small codes."""
    import agreement.methods.ot as ot_mod

    monkeypatch.setattr(ot_mod, "_MAX_PERMUTATIONS", 1)  # every component by linear_sum_assignment
    rng = np.random.default_rng(3)
    A, B, W, T, mats = [], [], [], [], []
    a0 = b0 = 0
    for t, (r, q) in enumerate((r, q) for r in range(2, 19) for q in range(2, 19)):
        M = rng.uniform(0.01, 1.0, size=(r, q))
        i, j = np.nonzero(M)
        A += (a0 + i).tolist(); B += (b0 + j).tolist(); W += M[i, j].tolist(); T += [t] * len(i)
        mats.append(M)
        a0, b0 = a0 + r, b0 + q
    A, B, W, T = (np.asarray(x) for x in (A, B, W, T))
    got = ot_mod.max_weight_matchings(A, B, W, a0, b0)
    assert len(mats) > 256
    for t, M in enumerate(mats):
        r, c = linear_sum_assignment(M, maximize=True)
        assert W[got & (T == t)].sum() == pytest.approx(M[r, c].sum(), abs=1e-9)


# --------------------------------------------------------------------------- per-label reasons

BOX = [0.1, 0.1, 0.3, 0.3]


def _two(sets_a, sets_b, labels_a, labels_b):
    sets = [{"a": AnnotationSet(np.reshape(A, (-1, 4)), la, [f"a{s}-{k}" for k in range(len(la))]),
             "b": AnnotationSet(np.reshape(B, (-1, 4)), lb, [f"b{s}-{k}" for k in range(len(lb))])}
            for s, (A, B, la, lb) in enumerate(zip(sets_a, sets_b, labels_a, labels_b))]
    return MultiRaterAnnotations.from_sets([f"s{s}" for s in range(len(sets))], ["a", "b"], sets)


def _row(data, label_id):
    return list(data.label_ids).index(label_id)


def test_reason_label_differs_perfect_box_costs_exactly_beta():
    data = _two([[BOX]], [[BOX]], [["cat"]], [["dog"]])
    res = sample_ot_scores(data, lam=0.5, beta=0.5)
    a, b = _row(data, "a0-0"), _row(data, "b0-0")
    assert res.row_reason[a] == res.row_reason[b] == "label differs"
    assert res.row_nearest_row[a] == b and res.row_nearest_rater[a] == 1
    assert res.row_nearest_cost[a] == 0.5  # exactly beta: lam * 0 + (1 - lam) * 1
    assert res.row_matched_row[a] == -1 and res.row_matched_rater[a] == -1
    assert res.pair_n_matched[0] == 0 and res.mean[0] == 0.5
    # The same boxes match once beta exceeds 1 - lam.
    res = sample_ot_scores(data, lam=0.5, beta=0.6)
    assert res.row_reason[a] == "matched" and res.row_matched_row[a] == b and res.row_matched_rater[a] == 1


def test_reason_too_far_and_label_differs_on_far_boxes():
    far = [0.6, 0.6, 0.3, 0.3]
    data = _two([[BOX], [BOX]], [[far], [far]], [["cat"], ["cat"]], [["cat"], ["dog"]])
    res = sample_ot_scores(data, lam=0.5, beta=0.2)
    for s in (0, 1):  # geometry alone: lam (1 - GIoU) / 2 >= 0.2, whatever the labels
        assert res.row_reason[_row(data, f"a{s}-0")] == "too far"
    # With a generous beta the same-label far pair matches; the different-label one
    # fails only because of the label term.
    res = sample_ot_scores(data, lam=0.5, beta=0.45)
    assert res.row_reason[_row(data, "a0-0")] == "matched"
    assert res.row_reason[_row(data, "a1-0")] == "label differs"


def test_reason_counterpart_taken_and_nearest_prefers_the_match():
    # a drew the same object twice; b once: one of a's boxes is matched, the other
    # had an eligible counterpart that the matching gave to its twin.
    near = [0.11, 0.1, 0.3, 0.3]
    data = _two([[BOX, near]], [[BOX]], [["cat", "cat"]], [["cat"]])
    res = sample_ot_scores(data, lam=0.5, beta=0.5)
    a0, a1, b0 = _row(data, "a0-0"), _row(data, "a0-1"), _row(data, "b0-0")
    assert res.row_reason[a0] == "matched" and res.row_matched_row[a0] == b0
    assert res.row_reason[a1] == "counterpart taken"
    assert res.row_nearest_row[a1] == b0 and res.row_nearest_cost[a1] < 0.5
    assert res.row_reason[b0] == "matched" and res.row_nearest_row[b0] == a0 and res.row_nearest_cost[b0] == 0.0


def test_reason_no_counterpart_explicit_absence_and_single_rater():
    sets = [
        {"a": AnnotationSet(np.array([BOX]), ["cat"], ["x"]), "b": AnnotationSet.empty()},
        {"a": AnnotationSet(np.array([BOX]), ["cat"], ["y"])},  # b not assigned
    ]
    data = MultiRaterAnnotations.from_sets(["s0", "s1"], ["a", "b"], sets)
    res = sample_ot_scores(data)
    for lid in ("x", "y"):
        r = _row(data, lid)
        assert res.row_reason[r] == "no counterpart" and res.row_nearest_row[r] == -1
        assert res.row_nearest_rater[r] == -1 and np.isnan(res.row_nearest_cost[r])
    assert res.row_paid[_row(data, "x")] == 0.5 and np.isnan(res.row_paid[_row(data, "y")])


def test_reason_threshold_is_two_beta_under_oc_cost():
    data = _two([[BOX]], [[BOX]], [["cat"]], [["dog"]])
    res = sample_ot_scores(data, lam=0.5, beta=0.3, normalization="oc_cost")  # c = 0.5 < 2 beta
    assert res.row_reason[_row(data, "a0-0")] == "matched"
    res = sample_ot_scores(data, lam=0.5, beta=0.25, normalization="oc_cost")  # c = 0.5 = 2 beta
    assert res.row_reason[_row(data, "a0-0")] == "label differs"


@pytest.mark.parametrize("normalization", ["paper", "oc_cost"])
def test_nearest_counterpart_and_reasons_against_brute_force(normalization):
    rng = np.random.default_rng(21)
    data = _corpus(rng, S=12, raters=("r1", "r2", "r3", "r4"), p_assign=0.8, max_boxes=5)
    lam, beta = 0.6, 0.35
    thr = beta if normalization == "paper" else 2 * beta
    res = sample_ot_scores(data, lam=lam, beta=beta, normalization=normalization, max_block=50)  # many small blocks
    giou = pairwise_giou(data.boxes, data.boxes)
    c = pair_cost_matrix(data.boxes, data.labels, data.boxes, data.labels, lam=lam)
    for r in range(len(data)):
        s, me = data.sample_index[r], data.rater_index[r]
        others = np.flatnonzero((data.sample_index == s) & (data.rater_index != me))
        if others.size == 0:
            assert res.row_nearest_row[r] == -1 and res.row_reason[r] == "no counterpart"
            continue
        best = c[r, others].min()
        assert res.row_nearest_cost[r] == best
        q = res.row_nearest_row[r]
        assert q in others and c[r, q] == best and res.row_nearest_rater[r] == data.rater_index[q]
        if res.row_n_matched[r] > 0:
            assert res.row_reason[r] == "matched"
        elif best < thr:
            assert res.row_reason[r] == "counterpart taken"
        elif data.labels[r] != data.labels[q] and lam * (1 - giou[r, q]) / 2 < thr:
            assert res.row_reason[r] == "label differs"
        else:
            assert res.row_reason[r] == "too far"
    # Blocks do not change anything.
    big = sample_ot_scores(data, lam=lam, beta=beta, normalization=normalization)
    np.testing.assert_array_equal(big.row_nearest_row, res.row_nearest_row)
    np.testing.assert_array_equal(big.pair_cost, res.pair_cost)


def test_crowd_design_scores_only_assigned_pairs():
    """Many raters, few per sample: the table holds only pairs that met; scores equal the per-pair OT."""
    rng = np.random.default_rng(4)
    raters = [f"r{k:02d}" for k in range(30)]
    sets = []
    for s in range(25):
        mapping = {}
        for r in rng.choice(raters, 3, replace=False):
            n = int(rng.integers(0, 4))
            bx, lb = random_set(rng, n)
            mapping[str(r)] = AnnotationSet(bx, lb, [f"{s}-{r}-{k}" for k in range(n)])
        sets.append(mapping)
    data = MultiRaterAnnotations.from_sets([f"s{s}" for s in range(25)], raters, sets, box_policy="clip")
    res = sample_ot_scores(data, lam=0.5, beta=0.5)
    assert len(res.pair_cost) == 25 * 3
    met = {(a, b) for s in range(25) for a, b in data.iter_rater_pairs(s)}
    t = res.rater_pairs
    assert set(zip(t.a.tolist(), t.b.tolist())) == met and len(t) < 30 * 29 // 2
    for p in range(len(res.pair_cost)):
        A, B = data.get(res.pair_sample[p], res.pair_rater_a[p]), data.get(res.pair_sample[p], res.pair_rater_b[p])
        assert res.pair_score[p] == pytest.approx(ot_score(A.boxes, A.labels, B.boxes, B.labels), abs=1e-12)
        assert t.a[res.pair_table_row[p]] == res.pair_rater_a[p] and t.b[res.pair_table_row[p]] == res.pair_rater_b[p]
