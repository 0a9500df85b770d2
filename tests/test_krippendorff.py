"""Nominal Krippendorff's alpha: hand-computed cases, the 2011 paper's example,
and the `krippendorff` package as an oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

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


# ------------------------------------------------------------------ levels: ratio and user distances (one core)
from agreement.core.krippendorff import (  # noqa: E402
    LEVELS,
    check_distance_matrix,
    distance_matrix,
    level_alpha,
)

#: The `krippendorff` package's docstring data (Krippendorff 2011, section C, numeric values 1..5).
K2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
])


def _codes_of(rel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numeric reliability data (NaN missing) as codes ``-1``/``0..K-1`` and the sorted values of the codes."""
    present = ~np.isnan(rel)
    values, inv = np.unique(rel[present], return_inverse=True)
    codes = np.full(rel.shape, -1, dtype=np.int64)
    codes[present] = inv.reshape(-1)
    return codes, values


def _abs_distance(v1, v2, i1, i2, n_v, dtype=np.float64):
    """A user distance in the `krippendorff` package's protocol: ``delta2 = |v1 - v2|``."""
    return np.abs(v1 - v2).astype(dtype)


def _log_distance(v1, v2):
    """A user distance of two values only: ``delta2 = (log1p v1 - log1p v2)**2``."""
    return (np.log1p(v1) - np.log1p(v2)) ** 2


def _oracle_level(rel: np.ndarray, level) -> float:
    if level is _log_distance:  # the package's protocol around the two-value callable
        level = lambda v1, v2, i1, i2, n_v, dtype=np.float64: _log_distance(v1, v2)  # noqa: E731
    return float(krippendorff.alpha(reliability_data=rel, level_of_measurement=level))


def test_published_ratio_case():
    # the `krippendorff` package's docstring: round(alpha(reliability_data, level_of_measurement="ratio"), 3) == 0.797
    codes, values = _codes_of(K2011)
    res = level_alpha(codes, level="ratio", values=values)
    ref = krippendorff.alpha(reliability_data=K2011, level_of_measurement="ratio")
    assert round(res.alpha, 3) == 0.797 and round(res.alpha, 4) == 0.7974
    assert res.alpha == pytest.approx(ref, abs=1e-12)
    assert res.n_pairable == 40 and res.n_units == 11 and res.reason == ""
    # the other published levels through the same core
    for level, expected in (("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)):
        assert round(level_alpha(codes, level=level, values=values).alpha, 3) == expected


def test_ratio_distance_is_the_squared_relative_difference():
    d = distance_matrix("ratio", np.ones(3), values=[0.0, 1.0, 3.0])
    np.testing.assert_allclose(d, [[0, 1, 1], [1, 0, 0.25], [1, 0.25, 0]], rtol=0, atol=1e-15)
    assert distance_matrix("ratio", np.ones(2), values=[0.0, 0.0])[0, 1] == 0.0  # 0/0 is 0 (as the package)


@pytest.mark.parametrize("level", [*LEVELS, "abs", "log", "matrix"])
def test_random_reliability_data_equal_the_package_at_every_level(level):
    rng = np.random.default_rng(2024)
    checked = 0
    for _ in range(60):
        raters, units = int(rng.integers(2, 6)), int(rng.integers(2, 30))
        domain = np.sort(rng.choice(np.arange(0.0, 40.0, 0.5), size=int(rng.integers(2, 7)), replace=False))
        rel = domain[rng.integers(0, len(domain), size=(raters, units))]
        rel[rng.random(rel.shape) < rng.uniform(0, 0.5)] = NAN
        codes, values = _codes_of(rel)
        if len(values) < 2:
            continue
        ours_level, ref_level = {"abs": (_abs_distance, _abs_distance), "log": (_log_distance, _log_distance),
                                 "matrix": (np.abs(values[:, None] - values[None, :]), _abs_distance)
                                 }.get(level, (level, level))
        ours = level_alpha(codes, level=ours_level, values=None if level == "matrix" else values)
        try:
            with np.errstate(divide="ignore", invalid="ignore"):
                ref = _oracle_level(rel, ref_level)
        except ValueError:  # the package refuses data without a pairable unit
            ref = NAN
        if np.isnan(ref) or not np.isfinite(ref):
            assert np.isnan(ours.alpha)
            continue
        assert ours.alpha == pytest.approx(ref, rel=1e-12, abs=1e-12), (level, rel)
        checked += 1
    assert checked > 40


def test_a_callable_taking_the_marginals_gets_them():
    # the package's own ordinal metric, as a user callable, gives our ordinal alpha: n_v is passed right
    from krippendorff.krippendorff import _ordinal_metric

    codes, values = _codes_of(K2011)
    assert level_alpha(codes, level=_ordinal_metric, values=values).alpha == pytest.approx(
        level_alpha(codes, level="ordinal").alpha, abs=1e-12)


def test_nominal_level_equals_nominal_alpha():
    rng = np.random.default_rng(5)
    rel = rng.integers(-1, 4, size=(4, 40))
    assert level_alpha(rel, level="nominal").alpha == pytest.approx(nominal_alpha(rel).alpha, abs=1e-15)


def test_an_asymmetric_matrix_is_refused_not_transposed():
    # a lower-triangle matrix (distances given one way only) would silently halve D_o on one side
    d = np.array([[0.0, 0.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="symmetric"):
        level_alpha(np.array([[0, 1], [1, 1]]), level=d)


@pytest.mark.parametrize("matrix, fragment", [
    (np.zeros((2, 3)), "square"),
    (np.array([[0.0, 1.0], [1.0, 0.5]]), "zero on the diagonal"),
    (np.array([[0.0, -1.0], [-1.0, 0.0]]), "non-negative"),
    (np.array([[0.0, np.nan], [np.nan, 0.0]]), "finite"),
    (np.array([[0.0, np.inf], [np.inf, 0.0]]), "finite"),
    (np.array([[0.0, 1.0], [2.0, 0.0]]), "symmetric"),
])
def test_bad_distance_matrices_are_refused_naming_the_problem(matrix, fragment):
    with pytest.raises(ValueError, match=fragment):
        check_distance_matrix(matrix)
    with pytest.raises(ValueError, match=fragment):
        level_alpha(np.array([[0, 1], [1, 1]]), level=matrix)


def test_bad_levels_are_refused():
    with pytest.raises(ValueError, match="covers|codes"):
        level_alpha(np.array([[0, 2], [1, 1]]), level=np.zeros((2, 2)) + 1 - np.eye(2))
    with pytest.raises(ValueError, match="ratio.*>= 0"):
        level_alpha(np.array([[0, 1], [1, 1]]), level="ratio", values=[-1.0, 2.0])
    with pytest.raises(ValueError, match="level must be one of"):
        level_alpha(np.array([[0, 1], [1, 1]]), level="rank")
    with pytest.raises(ValueError, match="values are not used"):
        level_alpha(np.array([[0, 1], [1, 1]]), level=1 - np.eye(2), values=[1.0, 2.0])
    with pytest.raises(ValueError, match="callable"):
        level_alpha(np.array([[0, 1], [1, 1]]), level=lambda a, b: a - b)  # negative "distances"


@settings(max_examples=80, deadline=None)
@given(
    st.integers(2, 5).flatmap(lambda r: st.lists(
        st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=r, max_size=r), min_size=2, max_size=15)),
    st.floats(1e-3, 1e3),
)
def test_ratio_alpha_is_invariant_to_scaling_the_values(units, c):
    rel = np.array([[np.nan if v is None else float(v) for v in u] for u in units]).T
    codes, values = _codes_of(rel) if (~np.isnan(rel)).any() else (np.full(rel.shape, -1), np.zeros(0))
    a = level_alpha(codes, level="ratio", values=values)
    b = level_alpha(codes, level="ratio", values=values * c)
    if np.isnan(a.alpha):
        assert np.isnan(b.alpha)
    else:
        assert b.alpha == pytest.approx(a.alpha, rel=1e-9, abs=1e-12)


# --------------------------------------------------------------------------------------------- one core
def test_one_core_the_classes_method_reuses_its_objects_and_orientation():
    # One result type, one alpha-from-coincidence, one distance: the classes names are the core's objects.
    from agreement.core import coincidence as core_coincidence, krippendorff as core
    from agreement.methods import classes

    assert classes.ClassAlpha is core.AlphaResult
    assert classes.alpha_from_coincidence is core.alpha_from_coincidence
    assert classes.delta_matrix is core.distance_matrix
    from agreement.methods.classes import alpha as class_module
    assert class_module.coincidence_sparse is core_coincidence.coincidence_sparse
    assert class_module.unit_coincidences is core_coincidence.unit_coincidences
    # (samples, raters) codes are the transpose of the core's raters x units: the same matrix, bit for bit.
    rng = np.random.default_rng(4)
    rel = rng.integers(-1, 5, size=(5, 40))
    np.testing.assert_array_equal(classes.coincidence_matrix(rel.T, n_classes=5), coincidence_matrix(rel, n_categories=5))
    for level in ("nominal", "ordinal", "interval", "ratio"):
        a, b = classes.class_alpha(rel.T, level=level, n_classes=5), core.level_alpha(rel, level=level)
        assert a == b or (np.isnan(a.alpha) and np.isnan(b.alpha))
    assert core.level_alpha(rel, level="nominal") == nominal_alpha(rel)


def test_alpha_from_coincidence_at_every_level_names_why_it_is_undefined():
    from agreement.core.krippendorff import REASON_FLAT, REASON_SAME_CATEGORY

    o = coincidence_matrix(np.array([[1, 1, 1], [1, 1, -1]]), n_categories=3)
    assert alpha_from_coincidence(o).reason == REASON_SAME_CATEGORY
    assert alpha_from_coincidence(o, level="interval").reason == REASON_FLAT
    assert "fewer than 2" in alpha_from_coincidence(np.zeros((2, 2)), level="ordinal").reason
    with pytest.raises(ValueError, match="square"):
        alpha_from_coincidence(np.zeros((2, 3)))
