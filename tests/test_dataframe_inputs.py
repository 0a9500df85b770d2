"""The data shapes people hold (issue 50, Build 3): crowd-kit's long DataFrame and krippendorff's
``reliability_data`` (raters × units, NaN missing) as inputs of class α, its diagnostics and class consensus.

Oracles: the ``krippendorff`` package on the same reliability data, and crowd-kit's ``MajorityVote``,
``DawidSkene`` and ``MACE`` on the same DataFrame (the shared AdultContent3 crowd; the tolerances of
``tests/test_class_consensus.py``). Also the refusals (NaN codes, missing columns, both inputs, duplicates,
an ambiguous orientation) and Hypothesis: the row order of a DataFrame does not change α.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.core.tables import AMBIGUOUS_MIN_COLUMNS, class_table, from_long_frame, from_reliability_data
from agreement.methods.classes import (
    LEVELS,
    bootstrap_alpha,
    class_alpha,
    class_difficulty,
    confusion_between_raters,
    pairwise,
    rater_vitality,
    sample_observed_agreement,
)
from agreement.methods.classes.diagnostics import agreement_with_consensus, agreement_with_others_majority
from agreement.methods.consensus.class_labels import class_consensus

pd = pytest.importorskip("pandas")
krippendorff = pytest.importorskip("krippendorff")

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ADULT = DATA / "adultcontent3_hcomp2010_labels.tsv"
needs_data = pytest.mark.skipif(not ADULT.exists(), reason=f"shared data absent: {ADULT} (see ../shared/data)")

#: Krippendorff (2011)'s example: 4 coders (rows) × 12 units, NaN missing.
K2011 = [[1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
         [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan]]


def _long(rel, worker_prefix: str = "w", label=lambda v: v):
    """A long (task, worker, label) frame of a (raters × units) matrix."""
    rows = [(u, f"{worker_prefix}{r}", label(v)) for r, row in enumerate(rel) for u, v in enumerate(row)
            if v is not None and v == v]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


# ---------------------------------------------------------------------------------------------------- the shared crowd
@pytest.fixture(scope="module")
def adult():
    """AdultContent3 as a crowd-kit DataFrame: each worker's last judgement per site, label ``B`` dropped (the
    repair of tests/test_class_consensus.py), and its (workers × sites) krippendorff matrix built by pandas."""
    if not ADULT.exists():
        pytest.skip(f"shared data absent: {ADULT} (see ../shared/data)")
    raw = pd.read_csv(ADULT, sep="\t", header=None, names=["worker", "task", "label"], dtype=str)
    df = raw.drop_duplicates(subset=["worker", "task"], keep="last")
    df = df[df.label != "B"].reset_index(drop=True)
    wide = df.pivot(index="worker", columns="task", values="label")
    numeric = wide.replace({"G": 0, "P": 1, "R": 2, "X": 3}).to_numpy(dtype=float)
    return df, wide, numeric


@needs_data
@pytest.mark.shared_data
def test_alpha_of_the_dataframe_and_reliability_data_equals_krippendorff(adult):
    df, wide, numeric = adult
    assert len(df) == 34768 and df.task.nunique() == 496
    ref = krippendorff.alpha(reliability_data=numeric, level_of_measurement="nominal")
    assert class_alpha(df).alpha == pytest.approx(ref, abs=1e-12)
    assert class_alpha(reliability_data=numeric).alpha == pytest.approx(ref, abs=1e-12)
    strings = wide.to_numpy(dtype=object)  # the labels themselves, NaN missing
    assert class_alpha(reliability_data=strings).alpha == pytest.approx(ref, abs=1e-12)
    renamed = df.rename(columns={"task": "site", "worker": "annotator", "label": "category"})
    cols = {"task": "site", "worker": "annotator", "label": "category"}
    assert class_alpha(renamed, columns=cols).alpha == pytest.approx(ref, abs=1e-12)
    # the trap of the issue: the same matrix passed as codes is refused, not silently computed
    with pytest.raises(ValueError, match="reliability_data"):
        class_alpha(numeric)


def _ck():
    return pytest.importorskip("crowdkit.aggregation", reason="crowd-kit (test-only dependency) is not installed")


def _aligned(probas, res):
    """crowd-kit's probas_ (tasks × labels) in the order of our tasks and classes."""
    return probas.reindex(index=list(res.items), columns=list(res.classes)).fillna(0.0).to_numpy(dtype=float)


@needs_data
@pytest.mark.shared_data
def test_dataframe_consensus_equals_crowdkit(adult):
    ck = _ck()
    df, _, _ = adult
    # majority: crowd-kit's vote shares exactly; labels equal wherever the vote is not tied (ties: module doc of
    # agreement.methods.consensus.class_labels.majority_vote)
    ours = class_consensus(df, method="majority")
    ref = ck.MajorityVote().fit(df)
    np.testing.assert_allclose(ours.posterior, _aligned(ref.probas_, ours), atol=1e-12)
    untied = (np.sort(ours.posterior, axis=1)[:, -2] < ours.posterior.max(axis=1))
    table = ours.to_pandas()
    assert (table.label[untied] == ref.labels_.reindex(table.index)[untied]).all()
    # Dawid-Skene run to convergence is within 1e-6 of crowd-kit's 50 steps (as on codes)
    ds = class_consensus(df, method="dawid_skene")
    ref_ds = ck.DawidSkene(n_iter=50, tol=-np.inf).fit(df)
    assert ds.converged
    np.testing.assert_allclose(ds.posterior, _aligned(ref_ds.probas_, ds), atol=1e-6)
    # MACE at the defaults: labels on >= 99 % of items and posteriors within 1e-2 of crowd-kit's default run.
    # crowd-kit's random start numbers workers and labels in order of appearance, the library sorts them: on a
    # frame sorted by worker whose labels sort in their order of appearance both start alike (as on codes in
    # tests/test_class_consensus.py); from other starts crowd-kit's 50 steps end elsewhere on ~5 % of sites.
    df = df.sort_values(["worker", "task"], kind="stable")
    df = df.assign(label=df.label.map({lab: f"{i}{lab}" for i, lab in enumerate(pd.unique(df.label))}))
    mc = class_consensus(df, method="mace")
    ref_mc = ck.MACE(n_restarts=1, n_iter=50, random_state=0).fit(df)
    np.testing.assert_allclose(mc.posterior, _aligned(ref_mc.probas_, mc), atol=1e-2)
    labels = mc.to_pandas().label
    assert (labels == ref_mc.labels_.reindex(labels.index)).mean() >= 0.99


# ---------------------------------------------------------------------------------------------------- small cases
@pytest.mark.parametrize("level", LEVELS)
def test_krippendorff_2011_example_every_way(level):
    ref = krippendorff.alpha(reliability_data=K2011, level_of_measurement=level)
    assert class_alpha(reliability_data=K2011, level=level).alpha == pytest.approx(ref, abs=1e-12)
    with_none = [[None if v != v else v for v in row] for row in K2011]
    assert class_alpha(reliability_data=with_none, level=level).alpha == pytest.approx(ref, abs=1e-12)
    assert class_alpha(_long(K2011), level=level).alpha == pytest.approx(ref, abs=1e-12)
    low, high = bootstrap_alpha(_long(K2011), level=level, n_boot=200)
    assert low <= high


def test_numeric_labels_keep_their_values():
    """Interval α uses the labels' values (1, 10, 100), not their ranks."""
    rel = [[1, 10, 100, 10, np.nan], [1, 10, 10, 100, 1], [10, 10, 100, 100, 1]]
    ref = krippendorff.alpha(reliability_data=rel, level_of_measurement="interval")
    assert class_alpha(reliability_data=rel, level="interval").alpha == pytest.approx(ref, abs=1e-12)
    assert class_alpha(_long(rel), level="interval").alpha == pytest.approx(ref, abs=1e-12)
    table = from_reliability_data(rel)
    assert table.classes == (1, 10, 100) and table.values.tolist() == [1.0, 10.0, 100.0]


def test_string_labels_and_names_map_back():
    df = pd.DataFrame({"task": ["img3", "img1", "img1", "img2", "img2", "img3", "img3"],
                       "worker": ["ann", "bob", "ann", "ann", "bob", "bob", "cy"],
                       "label": ["cat", "dog", "dog", "cat", "dog", "cat", "cat"]})
    t = from_long_frame(df)
    assert t.items == ("img1", "img2", "img3") and t.workers == ("ann", "bob", "cy") and t.classes == ("cat", "dog")
    np.testing.assert_array_equal(t.codes, [[1, 1, -1], [0, 1, -1], [0, 0, 0]])
    assert class_alpha(df).alpha == pytest.approx(class_alpha(t.codes).alpha, abs=1e-15)
    vit = rater_vitality(df)
    assert list(vit.index) == ["ann", "bob", "cy"] and vit.name == "vitality"
    agree = sample_observed_agreement(df)
    assert agree.loc["img1"] == 1.0 and agree.loc["img2"] == 0.0
    pairs = pairwise(df).to_pandas()
    assert set(zip(pairs.rater_a, pairs.rater_b, strict=True)) == {("ann", "bob"), ("ann", "cy"), ("bob", "cy")}
    assert class_difficulty(df).to_pandas().index.tolist() == ["cat", "dog"]
    assert confusion_between_raters(df).columns.tolist() == ["cat", "dog"]
    majority, n = agreement_with_others_majority(df)
    assert list(majority.index) == ["ann", "bob", "cy"] and n.loc["cy"] == 1
    res = class_consensus(df, method="majority")
    frame = res.to_pandas()
    assert frame.index.name == "task" and frame.loc["img1", "label"] == "dog" and frame.loc["img3", "label"] == "cat"
    assert res.to_pandas("rater").index.tolist() == ["ann", "bob", "cy"]
    assert res.to_pandas("posterior").columns.tolist() == ["cat", "dog"]
    with_consensus = agreement_with_consensus(df, frame.label)
    assert with_consensus.loc["cy"] == 1.0


def test_consensus_of_a_dataframe_equals_the_codes_one():
    rng = np.random.default_rng(3)
    codes = np.where(rng.random((40, 6)) < 0.3, -1, rng.integers(0, 3, (40, 6)))
    s, r = np.nonzero(codes >= 0)
    df = pd.DataFrame({"task": s, "worker": r, "label": codes[s, r]})
    for method in ("majority", "dawid_skene", "mace"):
        a, b = class_consensus(codes, 3, method=method), class_consensus(df, method=method)
        rows = np.flatnonzero((codes >= 0).any(axis=1))
        np.testing.assert_allclose(b.posterior, a.posterior[rows], atol=1e-12)
    assert class_alpha(df).alpha == pytest.approx(class_alpha(codes).alpha, abs=1e-15)


def test_bare_codes_keep_working_and_a_confirmed_wide_matrix_is_read_as_codes():
    codes = np.array([[0, 0, 1], [1, 1, 1]])  # hand-sized: 2 units, 3 raters
    assert np.isfinite(class_alpha(codes).alpha)
    wide = np.tile([[0, 1, 1, 0, 2, 2, 1, 0, 1, 2, 0, 1]], (3, 1))  # 3 × 12, complete
    wide[1, 3] = 1
    as_codes = class_alpha(wide, orientation="units_by_raters").alpha
    assert as_codes == pytest.approx(class_alpha(reliability_data=wide.T).alpha, abs=1e-15)  # rows are units
    assert as_codes != pytest.approx(class_alpha(reliability_data=wide).alpha, abs=1e-3)  # the other reading
    assert class_alpha(reliability_data=wide).alpha == pytest.approx(
        krippendorff.alpha(reliability_data=wide, level_of_measurement="nominal"), abs=1e-12)
    res = class_consensus(wide, orientation="units_by_raters", method="majority")
    assert res.labels.shape == (3,) and res.items is None


# ---------------------------------------------------------------------------------------------------- refusals
def test_refusals_say_what_to_pass_instead():
    wide = np.tile(np.arange(AMBIGUOUS_MIN_COLUMNS) % 3, (3, 1))
    for f in (class_alpha, rater_vitality, sample_observed_agreement, lambda c: class_consensus(c)):
        with pytest.raises(ValueError, match=r"ambiguous orientation.*reliability_data=.*units_by_raters"):
            f(wide)
    with pytest.raises(ValueError, match=r"codes hold NaN.*reliability_data="):
        class_alpha(np.array(K2011))
    with pytest.raises(ValueError, match=r"codes hold NaN.*reliability_data="):
        class_consensus(np.array(K2011).T, 5)
    with pytest.raises(ValueError, match="not both"):
        class_alpha(np.zeros((2, 2), int), reliability_data=K2011)
    with pytest.raises(ValueError, match=r"no judgements given"):
        class_alpha()
    df = _long(K2011)
    with pytest.raises(ValueError, match=r"no column for worker='annotator'.*columns="):
        class_alpha(df, columns={"worker": "annotator"})
    with pytest.raises(ValueError, match=r"no column for task='task'.*\['item', 'worker', 'label'\]"):
        class_consensus(df.rename(columns={"task": "item"}))
    with pytest.raises(ValueError, match="unknown role 'rater'"):
        class_alpha(df, columns={"rater": "worker"})
    with pytest.raises(ValueError, match="columns= names the columns of a long DataFrame"):
        class_alpha(np.zeros((3, 2), int), columns={"task": "t"})
    with pytest.raises(ValueError, match="orientation must be one of"):
        class_alpha(np.zeros((3, 2), int), orientation="raters_by_units")


def test_bad_frames_and_matrices_are_refused_with_the_place():
    df = _long(K2011)
    dup = pd.concat([df, df.iloc[[0]].assign(label=9)], ignore_index=True)
    with pytest.raises(ValueError, match=r"1 \(task, worker\) pairs have several labels \(first: task 0, "
                                         r"worker 'w0'\).*drop_duplicates"):
        class_alpha(dup)
    with pytest.raises(ValueError, match="no rows"):
        class_alpha(df.iloc[:0])
    with pytest.raises(ValueError, match=r"column 'label' \(label\) is missing on 1 rows \(first: row 3\)"):
        class_alpha(df.assign(label=df.label.where(df.index != 3)))
    with pytest.raises(ValueError, match="mix numbers and other values"):
        class_alpha(df.assign(label=df.label.astype(object).where(df.index != 2, "cat")))
    with pytest.raises(ValueError, match="'interval' needs numeric labels"):
        class_alpha(df.assign(label=df.label.astype(str)), level="interval")
    with pytest.raises(ValueError, match=r"2-D \(raters × units\) matrix, got shape \(3,\)"):
        class_alpha(reliability_data=[1, 2, 3])
    with pytest.raises(ValueError, match="rows differ in length"):
        class_alpha(reliability_data=[[1, 2, 3], [1, 2]])
    with pytest.raises(ValueError, match="empty"):
        class_alpha(reliability_data=np.zeros((2, 0)))
    with pytest.raises(ValueError, match="holds no value"):
        class_alpha(reliability_data=[[np.nan, None], [None, np.nan]])
    with pytest.raises(ValueError, match="finite"):
        class_alpha(reliability_data=[[1.0, np.inf], [1.0, 2.0]])
    with pytest.raises(ValueError, match="reliability_data is a DataFrame"):
        class_alpha(reliability_data=df)
    with pytest.raises(ValueError, match="expected a pandas DataFrame"):
        from_long_frame(np.zeros((2, 2)))
    assert class_table(df).source == "dataframe"


# ---------------------------------------------------------------------------------------------------- properties
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(LEVELS))
def test_row_order_of_the_dataframe_does_not_change_alpha(seed, level):
    rng = np.random.default_rng(seed)
    S, R, K = rng.integers(2, 15), rng.integers(2, 6), rng.integers(2, 5)
    codes = np.where(rng.random((S, R)) < 0.3, -1, rng.integers(0, K, (S, R)))
    s, r = np.nonzero(codes >= 0)
    df = pd.DataFrame({"task": [f"t{i}" for i in s], "worker": [f"w{j}" for j in r], "label": codes[s, r] * 2.5})
    a = class_alpha(df, level=level)
    b = class_alpha(df.sample(frac=1.0, random_state=int(rng.integers(2**31))), level=level)
    assert (np.isnan(a.alpha) and np.isnan(b.alpha)) or a.alpha == b.alpha
    rel = np.where(codes >= 0, codes * 2.5, np.nan).T
    if np.isfinite(a.alpha) and (codes >= 0).sum() > 0:
        ref = krippendorff.alpha(reliability_data=rel, level_of_measurement=level)
        assert a.alpha == pytest.approx(ref, abs=1e-9)
