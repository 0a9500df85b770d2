"""Nominal Krippendorff's alpha: hand-computed cases, the 2011 paper's example,
and the `krippendorff` package as an oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agreement.core.krippendorff import (
    AlphaResult,
    alpha_from_coincidence,
    coincidence_matrix,
    encode_values,
    nominal_alpha,
)

krippendorff = pytest.importorskip("krippendorff")

NAN = np.nan


def test_hand_computed_two_raters():
    # Units (0,0), (1,1), (0,1): o_00 = o_11 = 2, o_01 = o_10 = 1, n_c = (3, 3), n = 6.
    rel = np.array([[0, 1, 0], [0, 1, 1]])
    o = coincidence_matrix(rel)
    np.testing.assert_allclose(o, [[2, 1], [1, 2]])
    res = nominal_alpha(rel)
    # D_o = (6 - 4) / 6 = 1/3; D_e = (36 - 18) / 30 = 3/5; alpha = 1 - 5/9 = 4/9.
    assert res.observed == pytest.approx(1 / 3)
    assert res.expected == pytest.approx(0.6)
    assert res.alpha == pytest.approx(4 / 9)
    assert res.n_pairable == 6 and res.n_units == 3 and res.reason == ""


def test_unit_with_three_values_weighted_by_m_minus_one():
    # One unit (0, 0, 1): pairs from different raters: 0-0 twice, 0-1 four times
    # (ordered), divided by m_u - 1 = 2; one unit (1, 1, -) adds o_11 = 2.
    rel = np.array([[0, 1], [0, 1], [1, -1]])
    o = coincidence_matrix(rel)
    np.testing.assert_allclose(o, [[1, 1], [1, 2]])
    assert o.sum() == pytest.approx(5)  # pairable values


def test_krippendorff_2011_nominal_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
    # 4 observers, 12 units, missing values; nominal alpha = 0.743.
    rel = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ])
    res = nominal_alpha(rel)
    assert res.alpha == pytest.approx(0.743, abs=5e-4)
    assert res.n_pairable == 40 and res.n_units == 11


def test_perfect_and_chance_agreement():
    assert nominal_alpha(np.array([[0, 1, 2, 1], [0, 1, 2, 1]])).alpha == pytest.approx(1.0)
    # Systematic disagreement is negative.
    assert nominal_alpha(np.array([[0, 1, 0, 1], [1, 0, 1, 0]])).alpha < 0


@pytest.mark.parametrize(
    "rel, fragment",
    [
        (np.full((2, 3), -1), "fewer than 2 pairable values"),
        (np.array([[0, -1, 1], [-1, 1, -1]]), "fewer than 2 pairable values"),
        (np.array([[2, 2, 2], [2, 2, -1]]), "no variation"),
        (np.zeros((3, 0), dtype=int), "fewer than 2 pairable values"),
    ],
)
def test_undefined_is_nan_with_reason(rel, fragment):
    res = nominal_alpha(rel)
    assert np.isnan(res.alpha) and not res.defined
    assert fragment in res.reason


def test_missing_as_nan_or_code_and_noncontiguous_codes():
    a = nominal_alpha(np.array([[0.0, 5.0, NAN, 5.0], [0.0, 5.0, 9.0, 0.0]]))
    b = nominal_alpha(np.array([[0, 1, -1, 1], [0, 1, 2, 0]]))
    assert a.alpha == pytest.approx(b.alpha)
    c = nominal_alpha(np.array([[0, 1, 99, 1], [0, 1, 2, 0]]), missing=99)
    assert c.alpha == pytest.approx(b.alpha)


def test_bad_input():
    with pytest.raises(ValueError):
        nominal_alpha(np.array([0, 1, 2]))
    with pytest.raises(ValueError):
        nominal_alpha(np.array([[0, -3], [0, 1]]))
    with pytest.raises(ValueError):
        nominal_alpha(np.array([[0.5, 1.0], [0.0, 1.0]]))
    with pytest.raises(TypeError):
        nominal_alpha(np.array([["a", "b"], ["a", "a"]], dtype=object))


def test_encode_values():
    codes, cats = encode_values(np.array([["cat", None], ["dog", "cat"]], dtype=object))
    assert cats == ["cat", "dog"]
    np.testing.assert_array_equal(codes, [[0, -1], [1, 0]])
    # Order of appearance does not change the coding.
    codes2, cats2 = encode_values(["dog", "cat"])
    assert cats2 == ["cat", "dog"] and codes2.tolist() == [1, 0]
    codes3, _ = encode_values([1.0, float("nan"), 2.0])
    assert codes3.tolist() == [0, -1, 1]


def test_coincidence_matrices_pool_by_addition():
    rng = np.random.default_rng(3)
    r1 = rng.integers(-1, 4, size=(2, 30))
    r2 = rng.integers(-1, 4, size=(2, 25))
    o = coincidence_matrix(r1, n_categories=4) + coincidence_matrix(r2, n_categories=4)
    pooled = alpha_from_coincidence(o)
    direct = nominal_alpha(np.hstack([r1, r2]))
    assert pooled.alpha == pytest.approx(direct.alpha)


def test_oracle_random_matrices_with_missing():
    rng = np.random.default_rng(12345)
    checked = 0
    for _ in range(300):
        raters = int(rng.integers(2, 6))
        units = int(rng.integers(1, 25))
        k = int(rng.integers(2, 6))
        rel = rng.integers(0, k, size=(raters, units)).astype(float)
        rel[rng.random(rel.shape) < rng.uniform(0, 0.6)] = NAN
        ours = nominal_alpha(rel)
        pairable = rel[:, (~np.isnan(rel)).sum(axis=0) >= 2]
        vals = pairable[~np.isnan(pairable)]
        if len(np.unique(vals)) < 2:
            assert np.isnan(ours.alpha)
            continue
        ref = krippendorff.alpha(reliability_data=rel, level_of_measurement="nominal")
        assert ours.alpha == pytest.approx(ref, abs=1e-10)
        checked += 1
    assert checked > 200


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 5).flatmap(
        lambda r: st.lists(
            st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=r, max_size=r), min_size=1, max_size=20
        )
    )
)
def test_property_oracle_and_invariances(units):
    rel = np.array([[np.nan if v is None else v for v in u] for u in units], dtype=float).T
    ours = nominal_alpha(rel)
    assert isinstance(ours, AlphaResult)
    # Permuting raters, units and renaming categories leaves alpha unchanged.
    rng = np.random.default_rng(0)
    perm = rel[rng.permutation(rel.shape[0])][:, rng.permutation(rel.shape[1])]
    renamed = np.where(np.isnan(perm), np.nan, (perm + 2) % 4)
    other = nominal_alpha(renamed)
    if np.isnan(ours.alpha):
        assert np.isnan(other.alpha)
        return
    assert other.alpha == pytest.approx(ours.alpha, abs=1e-12)
    assert ours.alpha <= 1 + 1e-12
    ref = krippendorff.alpha(reliability_data=rel, level_of_measurement="nominal")
    assert ours.alpha == pytest.approx(ref, abs=1e-10)
