"""Sparse reliability: grouped α and the leave-one-rater-out jackknife against dense brute force."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.core.krippendorff import nominal_alpha
from agreement.core.reliability import SparseReliability, grouped_values_alpha, leave_one_rater_out


@st.composite
def matrices(draw):
    R = draw(st.integers(2, 6))
    U = draw(st.integers(0, 12))
    C = draw(st.integers(1, 4))
    cells = draw(st.lists(st.integers(-1, C - 1), min_size=R * U, max_size=R * U))
    groups = draw(st.lists(st.integers(0, 2), min_size=U, max_size=U))
    return np.array(cells, dtype=np.int64).reshape(R, U), np.array(groups, dtype=np.int64)


def _same(a, b):
    return (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(matrices())
def test_sparse_round_trip_and_grouped_alpha_equal_dense(mg):
    rel, groups = mg
    v = SparseReliability.from_dense(rel)
    np.testing.assert_array_equal(v.dense(), rel)
    res = grouped_values_alpha(v.column, v.code, v.n_columns, groups, 3)
    for g in range(3):
        ref = nominal_alpha(rel[:, groups == g])
        assert _same(res.alpha[g], ref.alpha)
        if np.isnan(ref.alpha):
            assert res.reasons()[g]


@settings(max_examples=150, deadline=None)
@given(matrices())
def test_leave_one_rater_out_equals_dropping_the_row(mg):
    rel, groups = mg
    v = SparseReliability.from_dense(rel)
    g, r, res = leave_one_rater_out(v, groups, 3)
    seen = set()
    for k in range(len(g)):
        sub = np.delete(rel[:, groups == g[k]], r[k], axis=0)
        ref = nominal_alpha(sub)
        assert _same(res.alpha[k], ref.alpha), (g[k], r[k])
        seen.add((int(g[k]), int(r[k])))
    # exactly the (group, rater) combinations where the rater has a value
    expected = {(int(groups[u]), int(x)) for x, u in zip(*np.nonzero(rel >= 0))}
    assert seen == expected


def test_value_of_reads_back_codes_and_missing():
    rel = np.array([[0, -1, 2], [1, 1, -1]])
    v = SparseReliability.from_dense(rel)
    assert v.value_of(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 2])).tolist() == [0, -1, 1, -1]
