"""Sparse rater-pair tables: only pairs that share samples, work proportional to assigned pairs."""

import itertools

import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from agreement.core.rater_pairs import RaterPairTable, records_to_matrix, shared_sample_pairs


def _brute(assigned):
    out = []
    for s in range(assigned.shape[0]):
        rs = np.flatnonzero(assigned[s])
        out += [(s, a, b) for a, b in itertools.combinations(rs, 2)]
    return out


@settings(max_examples=60, deadline=None)
@given(arrays(bool, st.tuples(st.integers(0, 12), st.integers(0, 9))))
def test_shared_sample_pairs_equal_brute_force(assigned):
    s, a, b, pid = shared_sample_pairs(assigned)
    assert list(zip(s.tolist(), a.tolist(), b.tolist())) == _brute(assigned)
    # pair ids enumerate the distinct pairs in (a, b) order
    distinct = sorted(set(zip(a.tolist(), b.tolist())))
    assert [distinct[i] for i in pid] == list(zip(a.tolist(), b.tolist()))


def test_table_holds_only_pairs_that_share_samples():
    assigned = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]], dtype=bool)
    t = RaterPairTable.from_assignment(("a", "b", "c", "d"), assigned)
    assert list(zip(t.a.tolist(), t.b.tolist(), t.n_shared.tolist())) == [(0, 1, 2), (0, 2, 1), (2, 3, 1)]
    assert t.index(np.array([1, 2, 1]), np.array([0, 0, 3])).tolist() == [0, 1, -1]
    t.values["score"] = np.array([0.5, np.nan, 1.0])
    recs = t.to_records()
    assert recs[0] == {"rater_a": "a", "rater_b": "b", "n_shared_samples": 2, "score": 0.5}
    assert recs[1]["score"] is None
    raters, m, shared = records_to_matrix(recs, "score")
    assert raters == ["a", "b", "c", "d"]
    assert m[0, 1] == m[1, 0] == 0.5 and np.isnan(m[1, 3]) and shared[1, 3] == 0 and shared[0, 1] == 2


def test_columns_round_trip_to_the_records():
    from agreement.core.rater_pairs import columns_to_records, records_to_columns

    assigned = np.array([[1, 1, 1], [1, 1, 0], [0, 1, 1]], dtype=bool)
    t = RaterPairTable.from_assignment(("a", "b", "c"), assigned)
    t.values["v"] = np.array([0.5, np.nan, 1.0])
    t.reasons["v"] = np.array(["", "undefined", ""], dtype=object)
    assert columns_to_records(t.to_columns()) == t.to_records()
    assert columns_to_records(records_to_columns(t.to_records())) == t.to_records()


def test_co_assignment_counts_the_samples_two_raters_share():
    from agreement.core.rater_pairs import co_assignment

    rng = np.random.default_rng(3)
    assigned = rng.random((40, 7)) < 0.3
    co = co_assignment(assigned)
    A = assigned.astype(np.int64)
    np.testing.assert_array_equal(co, A.T @ A)
    assert co.dtype == np.int64 and co[0, 0] == assigned[:, 0].sum()
    np.testing.assert_array_equal(co_assignment(np.zeros((0, 3), bool)), np.zeros((3, 3), np.int64))
