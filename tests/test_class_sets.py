"""Agreement on tag sets: per-tag alpha, MASI distance (against nltk), MASI alpha against a brute-force
pairwise definition and the `krippendorff` package with MASI as a custom metric, per-sample MASI agreement."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from agreement.methods.classes import (
    class_alpha,
    encode_sets,
    masi_alpha,
    masi_distance,
    masi_matrix,
    per_class_alpha,
    sample_masi_agreement,
)

krippendorff = pytest.importorskip("krippendorff")


@st.composite
def tag_data(draw, max_units=8, max_raters=4, max_k=4):
    S, R, K = draw(st.integers(1, max_units)), draw(st.integers(1, max_raters)), draw(st.integers(1, max_k))
    rated = draw(arrays(bool, (S, R)))
    present = draw(arrays(bool, (S, R, K))) & rated[:, :, None]
    return present, rated


def _sets(present, rated):
    """Rows of Python frozensets (None where missing)."""
    S, R, _ = present.shape
    return [[frozenset(np.flatnonzero(present[s, r]).tolist()) if rated[s, r] else None for r in range(R)]
            for s in range(S)]


def brute_force_alpha(present, rated, distance=masi_distance) -> float:
    """Krippendorff's alpha by its pairwise definition: D_o over pairs of values within pairable units,
    weighted 1/(m_u - 1), D_e over all ordered pairs of pairable values."""
    units = [[v for v in row if v is not None] for row in _sets(present, rated)]
    units = [u for u in units if len(u) >= 2]
    pool = [v for u in units for v in u]
    n = len(pool)
    if n < 2:
        return np.nan
    d_o = sum(distance(a, b) / (len(u) - 1) for u in units for i, a in enumerate(u) for j, b in enumerate(u)
              if i != j) / n
    d_e = sum(distance(a, b) for i, a in enumerate(pool) for j, b in enumerate(pool) if i != j) / (n * (n - 1))
    return np.nan if d_e <= 1e-15 else 1.0 - d_o / d_e


# ---------------------------------------------------------------------------------------------------- MASI
def test_masi_distance_by_hand():
    assert masi_distance({1, 2}, {1, 2}) == 0.0
    assert masi_distance(set(), set()) == 0.0
    assert masi_distance({1, 2}, {1, 2, 3, 4}) == pytest.approx(1 - 0.5 * 2 / 3)
    assert masi_distance({1, 2}, {2, 3}) == pytest.approx(1 - (1 / 3) * (1 / 3))
    assert masi_distance({1}, {2}) == 1.0
    assert masi_distance(set(), {1}) == 1.0


@settings(max_examples=200, deadline=None)
@given(st.frozensets(st.integers(0, 5)), st.frozensets(st.integers(0, 5)))
def test_masi_distance_equals_nltk_and_is_symmetric_in_range(a, b):
    d = masi_distance(a, b)
    assert 0.0 <= d <= 1.0 and d == masi_distance(b, a)
    nltk_distance = pytest.importorskip("nltk.metrics.distance")
    if a or b:  # nltk divides by |A | B| = 0 for two empty sets
        assert d == pytest.approx(nltk_distance.masi_distance(set(a), set(b)), abs=1e-15)


def test_masi_matrix_equals_the_scalar_distance():
    rows = np.array(list(itertools.product([False, True], repeat=4)))
    got = masi_matrix(rows, rows)
    for i, a in enumerate(rows):
        for j, b in enumerate(rows):
            assert got[i, j] == pytest.approx(masi_distance(set(np.flatnonzero(a)), set(np.flatnonzero(b))))


# ---------------------------------------------------------------------------------------------------- alpha
@settings(max_examples=150, deadline=None)
@given(tag_data())
def test_masi_alpha_equals_the_brute_force_definition(data):
    present, rated = data
    res = masi_alpha(present, rated)
    ref = brute_force_alpha(present, rated)
    assert np.isnan(res.alpha) == np.isnan(ref)
    if res.defined:
        assert res.alpha == pytest.approx(ref, rel=1e-12, abs=1e-12) and res.alpha <= 1 + 1e-12
    else:
        assert res.reason


def test_masi_alpha_equals_the_krippendorff_package_with_a_masi_metric():
    rng = np.random.default_rng(0)
    rated = rng.random((40, 5)) < 0.8
    present = (rng.random((40, 5, 3)) < 0.4) & rated[:, :, None]
    codes, sets = encode_sets(present, rated)
    delta = masi_matrix(sets, sets)

    def metric(v1, v2, i1, i2, n_v, dtype=np.float64):
        return delta[v1.astype(int), v2.astype(int)].astype(dtype)

    rel = np.where(codes >= 0, codes, np.nan).T.astype(float)
    ref = krippendorff.alpha(reliability_data=rel, value_domain=np.arange(len(sets)), level_of_measurement=metric)
    assert masi_alpha(present, rated).alpha == pytest.approx(ref, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(tag_data(max_k=1))
def test_one_tag_masi_alpha_is_the_nominal_alpha(data):
    present, rated = data
    codes = np.where(rated, present[:, :, 0].astype(int), -1)
    a, b = masi_alpha(present, rated), class_alpha(codes, n_classes=2)
    assert np.isnan(a.alpha) == np.isnan(b.alpha)
    if a.defined:
        assert a.alpha == pytest.approx(b.alpha, abs=1e-12)


def test_masi_alpha_undefined_and_partial_credit():
    rated = np.ones((3, 2), dtype=bool)
    same = np.zeros((3, 2, 2), dtype=bool)
    same[:, :, 0] = True
    assert np.isnan(masi_alpha(same, rated).alpha) and "no variation" in masi_alpha(same, rated).reason
    assert "fewer than 2" in masi_alpha(same[:, :1], rated[:, :1]).reason
    # raters that agree on one of two tags beat raters that agree on none
    a = np.array([[[1, 1, 0], [1, 0, 0]], [[0, 1, 1], [0, 0, 1]], [[1, 0, 1], [1, 0, 0]]], dtype=bool)
    b = np.array([[[1, 1, 0], [0, 0, 1]], [[0, 1, 1], [1, 0, 0]], [[1, 0, 1], [0, 1, 0]]], dtype=bool)
    assert masi_alpha(a, rated).alpha > masi_alpha(b, rated).alpha
    with pytest.raises(ValueError, match="rated False"):
        masi_alpha(a, np.zeros((3, 2), dtype=bool))


# ---------------------------------------------------------------------------------------------------- per tag
@settings(max_examples=80, deadline=None)
@given(tag_data())
def test_per_class_alpha_is_nominal_alpha_of_each_tag(data):
    present, rated = data
    res = per_class_alpha(present, rated)
    for k in range(present.shape[2]):
        ref = class_alpha(np.where(rated, present[:, :, k].astype(int), -1), n_classes=2)
        assert np.isnan(res.alpha[k]) == np.isnan(ref.alpha)
        if ref.defined:
            assert res.alpha[k] == pytest.approx(ref.alpha, abs=1e-12)
            assert res.reason[k] == ""
        else:
            assert res.reason[k]


def test_per_class_alpha_reasons():
    rated = np.ones((4, 3), dtype=bool)
    present = np.zeros((4, 3, 2), dtype=bool)
    present[:, :, 1] = np.array([[1, 1, 0], [0, 0, 0], [1, 1, 1], [0, 1, 0]], dtype=bool)
    res = per_class_alpha(present, rated)
    assert np.isnan(res.alpha[0]) and "no variation" in res.reason[0]
    assert np.isfinite(res.alpha[1]) and res.n_pairable[1] == 12


# ---------------------------------------------------------------------------------------------------- per sample
@settings(max_examples=60, deadline=None)
@given(tag_data())
def test_sample_masi_agreement_is_one_minus_mean_pairwise_distance(data):
    present, rated = data
    got = sample_masi_agreement(present, rated)
    for u, row in enumerate(_sets(present, rated)):
        vals = [v for v in row if v is not None]
        if len(vals) < 2:
            assert np.isnan(got[u])
        else:
            d = [masi_distance(a, b) for a, b in itertools.combinations(vals, 2)]
            assert got[u] == pytest.approx(1 - np.mean(d))


def test_encode_sets_is_independent_of_order():
    rng = np.random.default_rng(1)
    rated = rng.random((6, 4)) < 0.7
    present = (rng.random((6, 4, 3)) < 0.5) & rated[:, :, None]
    codes, sets = encode_sets(present, rated)
    codes2, sets2 = encode_sets(present[::-1, ::-1], rated[::-1, ::-1])
    np.testing.assert_array_equal(sets, sets2)
    np.testing.assert_array_equal(codes[::-1, ::-1], codes2)
