"""Feasible OT score ranges: hand values, the paper's special cases, tightness,
and containment of every achieved score (Hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.methods.ot import ot_from_cost_matrix, ot_match, pair_cost_matrix
from agreement.methods.ot.bounds import match_giou_threshold, relative_position, score_bounds


@pytest.mark.parametrize(
    "n, m, lam, beta, norm, same, lower, upper",
    [
        # Labels free: worst case is all dummies, 1 - beta; best: n perfect pairs.
        (2, 2, 0.5, 0.5, "paper", False, 0.5, 1.0),
        (1, 3, 0.5, 0.5, "paper", False, 0.5, 1 - 0.5 * 2 / 4),
        # Same labels, lam <= beta: no dummy at equal counts, range lam.
        (2, 2, 0.3, 0.5, "paper", True, 0.7, 1.0),
        # ... and for unequal counts dummies only for the surplus:
        # lower = 1 - (2*1*0.3 + 0.5*2) / 4 = 0.6.
        (1, 3, 0.3, 0.5, "paper", True, 0.6, 0.75),
        # Same labels, beta < lam: worst case all dummies.
        (2, 2, 0.8, 0.5, "paper", True, 0.5, 1.0),
        # Empty sets.
        (0, 0, 0.5, 0.5, "paper", False, 1.0, 1.0),
        (0, 3, 0.5, 0.4, "paper", False, 0.6, 0.6),
        # OC-cost: c_max = 1 >= 2 beta: supremum 2 beta at n = m = 1.
        (1, 1, 0.5, 0.3, "oc_cost", False, 0.4, 1.0),
        # OC-cost: 1 vs 3, lower = 1 - beta * 4 / 3, upper = 1 - beta * 2 / 3.
        (1, 3, 0.5, 0.3, "oc_cost", False, 1 - 0.4, 1 - 0.2),
        # OC-cost, same labels, lam < 2 beta: lower = 1 - (1*0.5 + 0.3*2) / 3.
        (1, 3, 0.5, 0.3, "oc_cost", True, 1 - 1.1 / 3, 0.8),
        (0, 3, 0.5, 0.3, "oc_cost", False, 0.7, 0.7),
    ],
)
def test_hand_values(n, m, lam, beta, norm, same, lower, upper):
    b = score_bounds(n, m, lam=lam, beta=beta, normalization=norm, same_labels=same)
    assert b.lower == pytest.approx(lower)
    assert b.upper == pytest.approx(upper)
    assert isinstance(b.lower, float)


def test_vectorised_and_known_plan():
    b = score_bounds(np.array([1, 2, 3]), 2, lam=0.5, beta=0.5)
    assert b.lower.shape == (3,)
    np.testing.assert_allclose(b.upper, [1 - 0.5 / 3, 1.0, 1 - 0.5 / 5])
    # Known plan: n = m = 2 with one matched pair: cost in [beta * 2 / 4, (2*beta + beta*2)/4].
    k = score_bounds(2, 2, lam=0.5, beta=0.5, n_matched=1)
    assert k.upper == pytest.approx(1 - 0.25) and k.lower == pytest.approx(0.5)
    # Infeasible plans are NaN with a reason.
    bad = score_bounds(2, 2, lam=0.3, beta=0.5, same_labels=True, n_matched=1)
    assert np.isnan(bad.lower) and "infeasible" in bad.reason
    assert np.isnan(score_bounds(1, 1, n_matched=2).upper)


def test_paper_special_cases_and_limits():
    # Equal counts, same labels, lam <= beta: range width lam.
    for lam, beta in [(0.2, 0.5), (0.5, 0.5), (0.4, 0.9)]:
        assert score_bounds(5, 5, lam=lam, beta=beta, same_labels=True).width == pytest.approx(lam)
    # As the count ratio grows both bounds approach 1 - beta.
    b = score_bounds(1, 10_000, lam=0.3, beta=0.6, same_labels=True)
    assert b.lower == pytest.approx(0.4, abs=1e-3) and b.upper == pytest.approx(0.4, abs=1e-3)
    # Paper: 1 - beta <= lower <= upper <= 1 for any counts.
    n, m = np.meshgrid(np.arange(8), np.arange(8))
    for same in (False, True):
        bb = score_bounds(n, m, lam=0.7, beta=0.35, same_labels=same)
        assert np.all(bb.lower >= 0.65 - 1e-12) and np.all(bb.upper <= 1 + 1e-12)
        assert np.all(bb.lower <= bb.upper + 1e-12)


def test_bounds_are_tight():
    # Upper: B holds copies of A plus extra boxes.
    a = np.array([[0.1, 0.1, 0.2, 0.2], [0.5, 0.5, 0.2, 0.2]])
    extra = np.array([[0.7, 0.1, 0.1, 0.1]])
    b = np.vstack([a, extra])
    for norm in ("paper", "oc_cost"):
        s = ot_match(a, ["x", "y"], b, ["x", "y", "z"], lam=0.5, beta=0.4, normalization=norm).score
        assert s == pytest.approx(score_bounds(2, 3, lam=0.5, beta=0.4, normalization=norm).upper)
    # Lower (paper, labels free): tiny boxes in opposite corners, different labels.
    tiny_a = np.array([[0.0, 0.0, 1e-4, 1e-4]] * 2)
    tiny_b = np.array([[1 - 1e-4, 1 - 1e-4, 1e-4, 1e-4]] * 3)
    s = ot_match(tiny_a, ["x", "x"], tiny_b, ["y"] * 3, lam=0.5, beta=0.4).score
    assert s == pytest.approx(score_bounds(2, 3, lam=0.5, beta=0.4).lower, abs=1e-6)
    # Lower, same labels, lam < beta: far tiny boxes with c -> lam, all matched.
    s = ot_match(tiny_a, ["x", "x"], tiny_b, ["x"] * 3, lam=0.3, beta=0.5).score
    assert s == pytest.approx(score_bounds(2, 3, lam=0.3, beta=0.5, same_labels=True).lower, abs=1e-4)
    # OC-cost supremum: a pair just below 2 beta.
    res = ot_from_cost_matrix(np.array([[0.6 - 1e-9]]), beta=0.3, normalization="oc_cost")
    assert res.score == pytest.approx(score_bounds(1, 1, lam=0.5, beta=0.3, normalization="oc_cost").lower, abs=1e-8)


def _random_sets(rng, n, labels):
    xy = rng.uniform(0, 0.9, size=(n, 2))
    wh = rng.uniform(0.001, 0.3, size=(n, 2))
    return np.hstack([xy, wh]), list(rng.choice(labels, size=n))


@settings(max_examples=120, deadline=None)
@given(
    st.integers(0, 6), st.integers(0, 6), st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]),
    st.floats(0.05, 1.0), st.booleans(), st.integers(0, 2**31 - 1),
)
def test_property_bounds_contain_every_achieved_score(n, m, lam, beta, same, seed):
    rng = np.random.default_rng(seed)
    labels = ["a"] if same else ["a", "b", "c"]
    a, la = _random_sets(rng, n, labels)
    b, lb = _random_sets(rng, m, labels)
    for norm in ("paper", "oc_cost"):
        res = ot_match(a, la, b, lb, lam=lam, beta=beta, normalization=norm)
        bounds = score_bounds(n, m, lam=lam, beta=beta, normalization=norm, same_labels=same)
        assert bounds.contains(res.score)
        plan = score_bounds(n, m, lam=lam, beta=beta, normalization=norm, same_labels=same, n_matched=res.n_matched)
        assert plan.contains(res.score)
        if same:  # the general bounds contain the same-label ones
            general = score_bounds(n, m, lam=lam, beta=beta, normalization=norm)
            assert general.lower <= bounds.lower + 1e-12 and bounds.upper <= general.upper + 1e-12


def test_relative_position():
    assert relative_position(0.75, 0.5, 1.0) == pytest.approx(0.5)
    assert relative_position(1.0, 0.5, 1.0) == 1.0
    assert np.isnan(relative_position(0.6, 0.6, 0.6))  # a single point
    pos = relative_position(np.array([0.5, 0.9, np.nan]), np.array([0.5, 0.5, 0.5]), np.array([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(pos, [0.0, 0.8, np.nan])


def test_match_giou_threshold_regimes():
    # rho = beta / lam > 1: every same-label pair eligible.
    assert match_giou_threshold(0.4, 0.5) == -np.inf
    # rho <= 1/2: only overlapping boxes (threshold >= 0).
    assert match_giou_threshold(0.8, 0.4) == pytest.approx(0.0)
    assert match_giou_threshold(1.0, 0.3) == pytest.approx(0.4)
    # Different labels need more budget: here none is eligible.
    assert match_giou_threshold(0.5, 0.5, same_label=False) == np.inf
    assert match_giou_threshold(0.0, 0.5) == -np.inf
    assert match_giou_threshold(1.0, 0.3, normalization="oc_cost") == pytest.approx(1 - 2 * 0.6)


def test_match_giou_threshold_agrees_with_matching():
    lam, beta = 1.0, 0.3
    thr = match_giou_threshold(lam, beta)  # GIoU > 0.4 needed
    a = np.array([[0.1, 0.1, 0.4, 0.4]])
    for dx, expect in ((0.05, 1), (0.3, 0)):
        b = np.array([[0.1 + dx, 0.1, 0.4, 0.4]])
        c = pair_cost_matrix(a, ["x"], b, ["x"], lam=lam)[0, 0]
        g = 1 - 2 * c / lam
        assert (g > thr) == bool(expect)
        assert ot_match(a, ["x"], b, ["x"], lam=lam, beta=beta).n_matched == expect


def test_bad_parameters():
    with pytest.raises(ValueError):
        score_bounds(1, 1, lam=2.0)
    with pytest.raises(ValueError):
        score_bounds(1, 1, beta=0.0)
    with pytest.raises(ValueError):
        score_bounds(-1, 1)
    with pytest.raises(ValueError):
        score_bounds(1, 1, normalization="x")
