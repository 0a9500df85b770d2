"""Class-agreement diagnostics: observed agreement by hand, vitality against recomputation, Cohen's kappa
against scikit-learn, pairwise alpha against alpha of the two columns, class difficulty and confusion."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from agreement.methods.classes import (
    LEVELS,
    agreement_with_consensus,
    agreement_with_others_majority,
    alpha_without_rater,
    class_alpha,
    class_difficulty,
    coincidence_matrix,
    confusion_between_raters,
    pairwise,
    rater_vitality,
    sample_observed_agreement,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def _crowd(seed=0, S=60, R=7, K=4, p_rate=0.6, p_right=0.6):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, K, size=(S, 1))
    codes = np.where(rng.random((S, R)) < p_right, truth, rng.integers(0, K, size=(S, R)))
    codes[rng.random((S, R)) > p_rate] = -1
    return codes


def _codes(max_units=10, max_raters=5, max_k=4):
    return st.tuples(st.integers(1, max_units), st.integers(1, max_raters), st.integers(1, max_k)).flatmap(
        lambda t: arrays(np.int64, (t[0], t[1]), elements=st.integers(-1, t[2] - 1)))


# ---------------------------------------------------------------------------------------------------- per sample
def test_sample_observed_agreement_by_hand():
    codes = np.array([
        [0, 0, 0, -1],   # 6 ordered pairs, all agree
        [0, 0, 1, -1],   # 0-0 twice of 6
        [0, 1, 2, 3],    # none of 12
        [1, -1, -1, -1],  # one rating
        [2, 2, -1, -1],  # 2 of 2
    ])
    np.testing.assert_allclose(sample_observed_agreement(codes), [1.0, 2 / 6, 0.0, np.nan, 1.0])


@settings(max_examples=60, deadline=None)
@given(_codes())
def test_sample_observed_agreement_is_the_share_of_agreeing_pairs(codes):
    got = sample_observed_agreement(codes)
    for u, row in enumerate(codes):
        vals = row[row >= 0]
        if len(vals) < 2:
            assert np.isnan(got[u])
            continue
        pairs = [(a, b) for i, a in enumerate(vals) for j, b in enumerate(vals) if i != j]
        assert got[u] == pytest.approx(np.mean([a == b for a, b in pairs]))


# ---------------------------------------------------------------------------------------------------- vitality
@pytest.mark.parametrize("level", LEVELS)
def test_vitality_equals_recomputation_without_each_rater(level):
    codes = _crowd(1)
    values = np.array([0.0, 1.0, 3.0, 7.0])
    full = class_alpha(codes, level=level, values=values, n_classes=4).alpha
    brute = np.array([class_alpha(np.delete(codes, r, axis=1), level=level, values=values, n_classes=4).alpha
                      for r in range(codes.shape[1])])
    np.testing.assert_allclose(alpha_without_rater(codes, level=level, values=values, n_classes=4), brute, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rater_vitality(codes, level=level, values=values, n_classes=4), full - brute, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(_codes(max_units=8, max_raters=5), st.sampled_from(LEVELS))
def test_vitality_equals_recomputation_on_random_data(codes, level):
    K = int(codes.max()) + 1
    brute = np.array([class_alpha(np.delete(codes, r, axis=1), level=level, n_classes=K).alpha
                      for r in range(codes.shape[1])])
    got = alpha_without_rater(codes, level=level, n_classes=K)
    assert np.array_equal(np.isnan(got), np.isnan(brute))
    np.testing.assert_allclose(got[~np.isnan(got)], brute[~np.isnan(brute)], rtol=1e-9, atol=1e-9)


def test_vitality_sign_a_random_rater_hurts():
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 3, size=200)
    codes = np.stack([truth, truth, truth, rng.integers(0, 3, size=200)], axis=1)
    codes[rng.random(codes.shape[0]) < 0.2, 0] = -1
    v = rater_vitality(codes)
    assert v[3] < 0 < v[1]
    assert np.isnan(rater_vitality(np.array([[0, 1], [1, 1], [0, 0]]))).all()  # two raters: nothing is left


# ---------------------------------------------------------------------------------------------------- consensus
def test_agreement_with_consensus_by_hand():
    codes = np.array([[0, 1, -1], [1, 1, -1], [2, -1, -1], [0, 0, -1]])
    consensus = np.array([0, 1, -1, 1])
    np.testing.assert_allclose(agreement_with_consensus(codes, consensus), [2 / 3, 1 / 3, np.nan])
    with pytest.raises(ValueError, match="entries"):
        agreement_with_consensus(codes, consensus[:2])


def test_agreement_with_others_majority_by_hand():
    # sample 0: others of r0 say (1, 1) -> r0's 0 misses; r1 and r2 see (0, 1): a tie, each hits with 1/2
    # sample 1: r0 alone -> not scored; sample 2: r0 and r1 agree -> both hit
    codes = np.array([[0, 1, 1], [2, -1, -1], [1, 1, -1]])
    agreement, n = agreement_with_others_majority(codes, n_classes=3)
    np.testing.assert_allclose(agreement, [0.5, 0.75, 0.5])
    assert n.tolist() == [2, 2, 1]
    agreement, n = agreement_with_others_majority(np.array([[0, -1], [-1, 1]]))
    assert np.isnan(agreement).all() and n.tolist() == [0, 0]  # nobody met


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_agreement_with_others_majority_equals_a_loop(S, R, K, seed):
    codes = np.random.default_rng(seed).integers(-1, K, size=(S, R))
    agreement, n = agreement_with_others_majority(codes, n_classes=K)
    for r in range(R):
        scores = []
        for u in range(S):
            others = [codes[u, q] for q in range(R) if q != r and codes[u, q] >= 0]
            if codes[u, r] < 0 or not others:
                continue
            m = np.bincount(others, minlength=K)
            tied = np.flatnonzero(m == m.max())
            scores.append(1 / len(tied) if codes[u, r] in tied else 0.0)
        assert n[r] == len(scores)
        assert (np.isnan(agreement[r]) and not scores) or abs(agreement[r] - np.mean(scores)) < 1e-12


# ---------------------------------------------------------------------------------------------------- pairs
def _kappa_sklearn(y1, y2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sklearn_metrics.cohen_kappa_score(y1, y2)


@pytest.mark.parametrize("level", LEVELS)
def test_pairwise_against_sklearn_and_two_column_alpha(level):
    codes = _crowd(2, S=40, R=6, p_rate=0.5)
    codes[:, 5] = -1
    codes[0, 5] = 2  # rater 5 meets others on one sample only
    table = pairwise(codes, level=level, raters=list("abcdef"))
    seen = set()
    for p in range(len(table)):
        a, b = int(table.a[p]), int(table.b[p])
        seen.add((a, b))
        both = (codes[:, a] >= 0) & (codes[:, b] >= 0)
        assert table.n_shared[p] == both.sum() > 0
        y1, y2 = codes[both, a], codes[both, b]
        ref = _kappa_sklearn(y1, y2)
        k = table.values["kappa"][p]
        assert (np.isnan(k) and np.isnan(ref)) or k == pytest.approx(ref, abs=1e-12)
        assert table.values["observed_agreement"][p] == pytest.approx(np.mean(y1 == y2))
        alpha = class_alpha(codes[:, [a, b]], level=level, n_classes=4).alpha
        got = table.values["alpha"][p]
        assert (np.isnan(got) and np.isnan(alpha)) or got == pytest.approx(alpha, abs=1e-12)
        if np.isnan(got):
            assert table.reasons["alpha"][p]
    met = {(a, b) for a in range(6) for b in range(a + 1, 6)
           if ((codes[:, a] >= 0) & (codes[:, b] >= 0)).any()}
    assert seen == met  # pairs that never met are absent
    recs = table.to_records()
    assert recs[0]["rater_a"] in "abcdef" and "kappa" in recs[0]


@settings(max_examples=60, deadline=None)
@given(_codes(max_units=12, max_raters=4))
def test_pairwise_kappa_equals_sklearn_on_random_data(codes):
    table = pairwise(codes)
    for p in range(len(table)):
        a, b = int(table.a[p]), int(table.b[p])
        both = (codes[:, a] >= 0) & (codes[:, b] >= 0)
        ref = _kappa_sklearn(codes[both, a], codes[both, b])
        k = table.values["kappa"][p]
        assert (np.isnan(k) and np.isnan(ref)) or k == pytest.approx(ref, abs=1e-12)


def test_pairwise_undefined_kappa_has_a_reason_and_names_must_match():
    table = pairwise(np.array([[1, 1], [1, 1]]), n_classes=3)
    assert np.isnan(table.values["kappa"][0]) and "p_e = 1" in table.reasons["kappa"][0]
    assert np.isnan(table.values["alpha"][0]) and table.values["observed_agreement"][0] == 1.0
    with pytest.raises(ValueError, match="raters"):
        pairwise(np.array([[1, 1]]), raters=["a"])


def test_pairwise_on_a_crowd_is_sparse_and_fast_enough():
    rng = np.random.default_rng(0)
    S, R, k = 496, 338, 60
    codes = np.full((S, R), -1)
    for s in range(S):
        codes[s, rng.choice(R, k, replace=False)] = rng.integers(0, 4, k)
    table = pairwise(codes)
    assert 0 < len(table) <= R * (R - 1) // 2
    assert table.n_shared.sum() == S * k * (k - 1) // 2


# ---------------------------------------------------------------------------------------------------- classes
def test_class_difficulty_and_confusion():
    codes = np.array([[0, 0], [0, 1], [1, 1], [2, 2], [2, 2]])
    o = coincidence_matrix(codes)
    diff = class_difficulty(codes)
    np.testing.assert_allclose(diff.n_values, [3, 3, 4])
    np.testing.assert_allclose(diff.match_rate, [2 / 3, 2 / 3, 1.0])
    conf = confusion_between_raters(codes)
    np.testing.assert_allclose(conf, o / o.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(conf.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.diag(conf), diff.match_rate)
    unused = class_difficulty(codes, n_classes=4)
    assert np.isnan(unused.match_rate[3]) and np.isnan(confusion_between_raters(codes, n_classes=4)[3]).all()
