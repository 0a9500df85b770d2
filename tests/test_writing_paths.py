"""The update paths of a label block (agreement.fo.writing._LabelPaths): positions and stored columns.

Pure: no database. The fast paths (a sample whose labels are exactly its
stored list, in order; numeric and plain object columns converted without a
Python loop) must give exactly what the general paths give.
"""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st


def _grouped(sids, lids):
    """The labels grouped by sample as ``_LabelPaths.of`` groups them."""
    sids = np.asarray(sids, dtype=object).astype(str)
    order = np.argsort(sids, kind="stable")
    sids, lids = sids[order], np.asarray(lids, dtype=object)[order]
    n = len(sids)
    starts = np.flatnonzero(np.r_[True, sids[1:] != sids[:-1]])
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, n]))
    return sids[starts].tolist(), lids, group, np.arange(n) - starts[group]


@st.composite
def blocks(draw):
    """Samples with stored lists, and a block of labels: whole lists in order, subsets, shuffles, strangers."""
    n_samples = draw(st.integers(1, 6))
    stored, sids, lids = {}, [], []
    for s in range(n_samples):
        sid = f"s{s}"
        ids = [f"{sid}l{i}" for i in range(draw(st.integers(0, 5)))]
        if draw(st.booleans()):
            stored[sid] = ids
        kind = draw(st.sampled_from(["all", "subset", "shuffled", "stranger"]))
        chosen = list(ids)
        if kind == "subset" and chosen:
            chosen = [x for x in chosen if draw(st.booleans())]
        elif kind == "shuffled":
            chosen = draw(st.permutations(chosen))
        elif kind == "stranger":
            chosen = chosen + [f"{sid}new"]
        sids += [sid] * len(chosen)
        lids += chosen
    return stored, sids, lids


@settings(max_examples=300, deadline=None)
@given(blocks())
def test_positions_of_whole_lists_in_order_equal_the_lookup_by_id(case):
    from agreement.fo.writing import _stored_positions

    stored, sids, lids = case
    if not lids:
        return
    group_ids, lids_sorted, group, rank = _grouped(sids, lids)
    fast = _stored_positions(stored, lids_sorted, group_ids, group, rank)
    by_id = _stored_positions(stored, lids_sorted)
    assert fast.tolist() == by_id.tolist()
    expected = [stored[g].index(x) if g in stored and x in stored[g] else -1
                for g, x in zip(np.asarray(group_ids, dtype=object)[group], lids_sorted)]
    assert fast.tolist() == expected


def test_a_sample_whose_labels_are_its_list_in_another_order_is_looked_up_by_id():
    from agreement.fo.writing import _stored_positions

    stored = {"a": ["x", "y", "z"], "b": ["u", "v"]}
    group_ids, lids, group, rank = _grouped(["a", "a", "a", "b", "b"], ["z", "x", "y", "u", "v"])
    assert _stored_positions(stored, lids, group_ids, group, rank).tolist() == [2, 0, 1, 0, 1]
    assert _stored_positions(None, lids, group_ids, group, rank).tolist() == [-1] * 5


def _plain(values):
    return [None if isinstance(v, float) and math.isnan(v) else v for v in values]


def test_stored_columns_equal_the_general_conversion():
    from agreement.fo.writing import _clean_column, _stored_column

    columns = [
        np.array([1.5, np.nan, 2.0]), np.array([0.5, np.nan], dtype=np.float32), np.array([1, 2], dtype=np.int64),
        np.array([True, False]), np.array(["a", None, "b"], dtype=object),
        np.array([np.float64(1.0), np.nan, None, np.int64(3)], dtype=object),
        ["x", None, 3.0, float("nan")], [[1, 2], [3, 4]], np.zeros(0),
    ]
    for values in columns:
        col, has = _stored_column(values)
        ref = _clean_column(values)
        assert col.dtype == object and col.shape == (len(ref),)
        assert [type(v) for v in col] == [type(v) for v in ref]
        assert _plain(col.tolist()) == _plain(ref)
        assert has.tolist() == [v is not None for v in ref]
