"""Krippendorff's alpha of class codes at three levels: textbook values, hand-computed parts, properties,
the `krippendorff` package as an oracle, and the unit bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from agreement.core.krippendorff import nominal_alpha
from agreement.methods.classes import (
    LEVELS,
    ClassAlpha,
    bootstrap_alpha,
    class_alpha,
    coincidence_matrix,
    delta_matrix,
)
from agreement.methods.classes.alpha import unit_coincidences, unit_counts

krippendorff = pytest.importorskip("krippendorff")

_ = -1
#: Krippendorff (2011), the example with missing values: 4 observers (columns) x 12 units (rows), values 1..5.
K2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
]).T
K2011_CODES = np.where(K2011 > 0, K2011 - 1, -1)  # codes 0..4 for the values 1..5
K2011_VALUES = np.arange(1.0, 6.0)


def _oracle(codes: np.ndarray, level: str, values: np.ndarray | None = None) -> float:
    """The `krippendorff` package: raters as rows, NaN missing, numeric values for interval."""
    v = np.arange(codes.max() + 1, dtype=float) if values is None else np.asarray(values, dtype=float)
    rel = np.where(codes >= 0, v[np.maximum(codes, 0)], np.nan).T
    if level == "ordinal":  # ranks: the codes themselves
        rel = np.where(codes >= 0, codes, np.nan).T.astype(float)
    return float(krippendorff.alpha(reliability_data=rel, level_of_measurement=level))


# ---------------------------------------------------------------------------------------------------- textbook
@pytest.mark.parametrize("level, expected", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_2011_example(level, expected):
    res = class_alpha(K2011_CODES, level=level, values=K2011_VALUES)
    assert round(res.alpha, 3) == expected
    assert res.n_pairable == 40 and res.n_units == 11 and res.reason == ""
    assert res.alpha == pytest.approx(_oracle(K2011_CODES, level, K2011_VALUES), abs=1e-12)


def test_krippendorff_2011_example_parts_nominal():
    # n = 40 pairable values, sum_c o_cc = 32 (paper: D_o = 8/40); n_c = (9, 13, 10, 5, 3).
    o = coincidence_matrix(K2011_CODES)
    np.testing.assert_allclose(o.sum(axis=1), [9, 13, 10, 5, 3])
    assert np.trace(o) == pytest.approx(32.0)
    res = class_alpha(K2011_CODES)
    assert res.observed == pytest.approx(8 / 40)
    assert res.expected == pytest.approx((40 ** 2 - (81 + 169 + 100 + 25 + 9)) / (40 * 39))


def test_hand_computed_two_raters_all_levels():
    # units (0,0), (1,1), (0,2): o_00 = 2, o_11 = 2, o_02 = o_20 = 1; n_c = (3, 2, 1), n = 6.
    codes = np.array([[0, 0], [1, 1], [0, 2]])
    o = coincidence_matrix(codes)
    np.testing.assert_allclose(o, [[2, 0, 1], [0, 2, 0], [1, 0, 0]])
    nom = class_alpha(codes, level="nominal")
    assert nom.observed == pytest.approx(2 / 6)
    assert nom.expected == pytest.approx((36 - 9 - 4 - 1) / 30)
    # interval with values 0, 1, 2: D_o = 2 * 4 / 6; D_e = sum n_c n_k (c - k)^2 / 30
    iv = class_alpha(codes, level="interval")
    d_e = (2 * 3 * 2 * 1 + 2 * 3 * 1 * 4 + 2 * 2 * 1 * 1) / 30
    assert iv.observed == pytest.approx(8 / 6) and iv.expected == pytest.approx(d_e)
    # ordinal: mid-ranks r = (1.5, 4, 5.5); delta_02 = 4^2 = 16
    od = class_alpha(codes, level="ordinal")
    assert od.observed == pytest.approx(2 * 16 / 6)
    np.testing.assert_allclose(delta_matrix("ordinal", np.array([3, 2, 1.0]))[0], [0, 2.5 ** 2, 16])


def test_ordinal_delta_is_krippendorffs_sum_form():
    n = np.array([3.0, 0.0, 5.0, 2.0, 7.0])
    d = delta_matrix("ordinal", n)
    for c in range(5):
        for k in range(5):
            lo, hi = min(c, k), max(c, k)
            assert d[c, k] == pytest.approx((n[lo:hi + 1].sum() - (n[c] + n[k]) / 2) ** 2)


def test_undefined_cases_are_nan_with_reason():
    one = class_alpha(np.array([[0, -1], [1, -1]]))
    assert np.isnan(one.alpha) and "fewer than 2 pairable values" in one.reason and one.n_units == 0
    flat = class_alpha(np.array([[2, 2], [2, 2, ]]), level="ordinal")
    assert np.isnan(flat.alpha) and "no variation" in flat.reason and flat.expected == 0.0
    same_value = class_alpha(np.array([[0, 1], [1, 0]]), level="interval", values=np.array([3.0, 3.0]))
    assert np.isnan(same_value.alpha) and "no variation" in same_value.reason
    empty = class_alpha(np.zeros((0, 3), dtype=int), n_classes=2)
    assert np.isnan(empty.alpha) and not empty.defined


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="level"):
        class_alpha(np.array([[0, 1]]), level="rank")
    with pytest.raises(ValueError, match=">= -1"):
        class_alpha(np.array([[0, -2]]))
    with pytest.raises(ValueError, match="out of range"):
        class_alpha(np.array([[0, 3]]), n_classes=2)
    with pytest.raises(ValueError, match="values"):
        class_alpha(np.array([[0, 3]]), level="interval", values=np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="integers"):
        class_alpha(np.array([[0.5, 1.0]]))


def test_nominal_equals_the_core_nominal_alpha():
    rng = np.random.default_rng(3)
    codes = rng.integers(-1, 4, size=(60, 7))
    assert class_alpha(codes).alpha == pytest.approx(nominal_alpha(codes.T).alpha, abs=1e-13)


def test_unit_coincidences_sum_to_the_coincidence_matrix():
    rng = np.random.default_rng(4)
    codes = rng.integers(-1, 5, size=(40, 6))
    U, keep = unit_coincidences(unit_counts(codes, n_classes=5))
    np.testing.assert_allclose(np.asarray(U.sum(axis=0)).reshape(5, 5), coincidence_matrix(codes, n_classes=5), atol=1e-12)
    assert len(keep) == int(((codes >= 0).sum(axis=1) >= 2).sum())


# ---------------------------------------------------------------------------------------------------- properties
def _codes(max_units=12, max_raters=5, max_k=4):
    return st.tuples(st.integers(1, max_units), st.integers(1, max_raters), st.integers(1, max_k)).flatmap(
        lambda t: arrays(np.int64, (t[0], t[1]), elements=st.integers(-1, t[2] - 1)))


@settings(max_examples=150, deadline=None)
@given(_codes(), st.sampled_from(LEVELS))
def test_at_most_one_and_parts_in_range(codes, level):
    res = class_alpha(codes, level=level)
    assert isinstance(res, ClassAlpha)
    if res.defined:
        assert res.alpha <= 1.0 + 1e-12 and res.observed >= 0.0 and res.expected > 0.0
        if level == "nominal":
            assert 0.0 <= res.observed <= 1.0 and 0.0 < res.expected <= 1.0
    else:
        assert res.reason


@settings(max_examples=100, deadline=None)
@given(_codes(), st.sampled_from(LEVELS), st.randoms(use_true_random=False))
def test_invariant_to_rater_and_unit_order(codes, level, rnd):
    a = class_alpha(codes, level=level, n_classes=int(codes.max()) + 1)
    rows = list(range(codes.shape[0]))
    cols = list(range(codes.shape[1]))
    rnd.shuffle(rows)
    rnd.shuffle(cols)
    b = class_alpha(codes[rows][:, cols], level=level, n_classes=int(codes.max()) + 1)
    assert np.isnan(a.alpha) == np.isnan(b.alpha)
    if a.defined:
        assert a.alpha == pytest.approx(b.alpha, rel=1e-12, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(_codes(max_k=5), st.permutations(range(5)))
def test_nominal_invariant_to_relabeling(codes, perm):
    perm = np.array(perm)
    relabeled = np.where(codes >= 0, perm[np.maximum(codes, 0)], -1)
    a, b = class_alpha(codes, n_classes=5), class_alpha(relabeled, n_classes=5)
    assert np.isnan(a.alpha) == np.isnan(b.alpha)
    if a.defined:
        assert a.alpha == pytest.approx(b.alpha, rel=1e-12, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(_codes(max_units=15, max_raters=6, max_k=5), st.sampled_from(LEVELS))
def test_equals_the_krippendorff_package(codes, level):
    res = class_alpha(codes, level=level)
    assume(res.defined and len(np.unique(codes[codes >= 0])) >= 2)
    assert np.isclose(res.alpha, _oracle(codes, level), rtol=1e-12, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(_codes(max_units=15, max_raters=6, max_k=4),
       arrays(np.float64, 4, elements=st.floats(-10, 10, allow_nan=False), unique=True))
def test_interval_with_values_equals_the_krippendorff_package(codes, values):
    res = class_alpha(codes, level="interval", values=values, n_classes=4)
    assume(res.defined and len(np.unique(codes[codes >= 0])) >= 2)
    assert np.isclose(res.alpha, _oracle(codes, "interval", values), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_large_random_matrices_equal_the_package(level):
    rng = np.random.default_rng(11)
    truth = rng.integers(0, 4, size=(3000, 1))
    codes = np.where(rng.random((3000, 8)) < 0.7, truth, rng.integers(0, 4, size=(3000, 8)))
    codes[rng.random(codes.shape) < 0.3] = -1
    assert class_alpha(codes, level=level).alpha == pytest.approx(_oracle(codes, level), abs=1e-12)


# ---------------------------------------------------------------------------------------------------- bootstrap
def _agreeing(seed=0, S=200, R=5, p=0.7):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, size=(S, 1))
    codes = np.where(rng.random((S, R)) < p, truth, rng.integers(0, 4, size=(S, R)))
    codes[rng.random(codes.shape) < 0.2] = -1
    return codes


@pytest.mark.parametrize("level", LEVELS)
def test_bootstrap_is_deterministic_and_contains_the_estimate(level):
    codes = _agreeing()
    a = class_alpha(codes, level=level).alpha
    lo, hi = bootstrap_alpha(codes, level=level, n_boot=500, seed=7)
    assert (lo, hi) == bootstrap_alpha(codes, level=level, n_boot=500, seed=7)
    assert lo < a < hi and hi - lo < 0.3
    assert (lo, hi) != bootstrap_alpha(codes, level=level, n_boot=500, seed=8)


def test_bootstrap_independent_of_unit_order_and_narrower_with_lower_coverage():
    codes = _agreeing(1)
    lo, hi = bootstrap_alpha(codes, seed=3)
    assert (lo, hi) == bootstrap_alpha(codes[::-1], seed=3)
    lo2, hi2 = bootstrap_alpha(codes, seed=3, ci=0.5)
    assert lo <= lo2 <= hi2 <= hi


def test_bootstrap_matches_a_loop_over_resampled_units_in_distribution():
    codes = _agreeing(2, S=80)
    keep = (codes >= 0).sum(axis=1) >= 2
    rng = np.random.default_rng(0)
    loop = [class_alpha(codes[keep][rng.integers(0, keep.sum(), keep.sum())], n_classes=4).alpha
            for _ in range(400)]
    lo, hi = bootstrap_alpha(codes, n_boot=2000, seed=0)
    ref_lo, ref_hi = np.nanpercentile(loop, [2.5, 97.5])
    assert lo == pytest.approx(ref_lo, abs=0.04) and hi == pytest.approx(ref_hi, abs=0.04)


def test_bootstrap_undefined_and_bad_arguments():
    assert all(np.isnan(bootstrap_alpha(np.array([[0, -1], [1, -1]]))))
    assert all(np.isnan(bootstrap_alpha(np.array([[1, 1], [1, 1]]))))
    with pytest.raises(ValueError, match="ci"):
        bootstrap_alpha(_agreeing(), ci=1.5)
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_alpha(_agreeing(), n_boot=0)


# ------------------------------------------------------------------ ratio and user distances (issue 47, defect 6)
from agreement.methods.classes.diagnostics import alpha_without_rater, pairwise  # noqa: E402

RATIO_VALUES = np.array([0.0, 1.0, 2.5, 4.0, 10.0])
#: A user distance between 5 codes (squared distances): neighbours close, 0 and 4 far apart.
USER_MATRIX = np.abs(np.subtract.outer(np.arange(5.0), np.arange(5.0))) ** 1.5


def _user_callable(v1, v2, i1, i2, n_v, dtype=np.float64):
    return np.abs(i1 - i2).astype(dtype) ** 1.5


def test_ratio_on_the_published_example():
    # the `krippendorff` package's docstring: the 2011 example at the ratio level rounds to 0.797
    res = class_alpha(K2011_CODES, level="ratio", values=K2011_VALUES)
    assert round(res.alpha, 4) == 0.7974
    assert res.alpha == pytest.approx(_oracle(K2011_CODES, "ratio", K2011_VALUES), abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_ratio_and_user_distances_equal_the_package(seed):
    codes = _agreeing(seed, S=120, R=6, p=0.6)
    codes[codes >= 0] = codes[codes >= 0] + (codes[codes >= 0] == 3)  # codes 0, 1, 2, 4: one class unused
    rel = np.where(codes >= 0, RATIO_VALUES[np.maximum(codes, 0)], np.nan).T
    ref = krippendorff.alpha(reliability_data=rel, level_of_measurement="ratio")
    assert class_alpha(codes, level="ratio", values=RATIO_VALUES).alpha == pytest.approx(ref, abs=1e-12)
    rel_codes = np.where(codes >= 0, codes, np.nan).T.astype(float)
    ref_user = krippendorff.alpha(reliability_data=rel_codes, level_of_measurement=_user_callable,
                                  value_domain=np.arange(5.0))
    assert class_alpha(codes, level=USER_MATRIX).alpha == pytest.approx(ref_user, abs=1e-12)
    assert class_alpha(codes, level=_user_callable, n_classes=5).alpha == pytest.approx(ref_user, abs=1e-12)


@pytest.mark.parametrize("level", ["ratio", "matrix", "callable"])
def test_pairwise_and_leave_one_out_at_the_new_levels_equal_recomputation(level):
    lv = {"matrix": USER_MATRIX, "callable": _user_callable}.get(level, level)
    values = RATIO_VALUES if level == "ratio" else None
    codes = _agreeing(3, S=60, R=4, p=0.5)
    table = pairwise(codes, level=lv, values=values, n_classes=5)
    for a, b, alpha in zip(table.a, table.b, table.values["alpha"]):
        ref = class_alpha(codes[:, [a, b]], level=lv, values=values, n_classes=5).alpha
        assert alpha == pytest.approx(ref, abs=1e-12, nan_ok=True)
    without = alpha_without_rater(codes, level=lv, values=values, n_classes=5)
    for r in range(codes.shape[1]):
        ref = class_alpha(np.delete(codes, r, axis=1), level=lv, values=values, n_classes=5).alpha
        assert without[r] == pytest.approx(ref, abs=1e-12)
    low, high = bootstrap_alpha(codes, level=lv, values=values, n_boot=200, n_classes=5)
    assert low <= class_alpha(codes, level=lv, values=values, n_classes=5).alpha <= high


@settings(max_examples=60, deadline=None)
@given(_codes(max_units=15, max_raters=5, max_k=5), st.floats(1e-3, 1e3))
def test_ratio_alpha_invariant_to_scaling_every_value(codes, c):
    a = class_alpha(codes, level="ratio", values=RATIO_VALUES, n_classes=5)
    b = class_alpha(codes, level="ratio", values=RATIO_VALUES * c, n_classes=5)
    assert b.alpha == pytest.approx(a.alpha, rel=1e-9, abs=1e-12, nan_ok=True)


def test_user_matrix_is_validated_and_ratio_refuses_negative_values():
    with pytest.raises(ValueError, match="symmetric"):
        class_alpha(np.array([[0, 1], [1, 1]]), level=np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="2 x 2 but the data has 3 codes"):
        class_alpha(np.array([[0, 2], [1, 1]]), level=1 - np.eye(2))
    with pytest.raises(ValueError, match="ratio"):
        class_alpha(np.array([[0, 1], [1, 1]]), level="ratio", values=[-1.0, 1.0])
