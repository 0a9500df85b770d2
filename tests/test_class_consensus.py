"""Consensus of image-level classes (agreement.methods.consensus.class_labels).

Unit tests per formula, and oracle tests against crowd-kit's ``DawidSkene``
and ``MACE`` (crowdkit.aggregation, a test-only dependency) on simulated
crowds and on the shared real data (``adultcontent3_hcomp2010_labels.tsv``).

Tolerances, and why:

* **Same start, same number of steps**: equal to rounding. Dawid–Skene
  starts from the vote shares in both; after 50 EM steps the posteriors
  agree within 1e-8 (measured 2e-10: crowd-kit clips confusion entries at
  1e-10, the library keeps exact zeros). MACE restart 0 is crowd-kit's start
  for ``random_state=seed``; with ``n_restarts=1, max_iter=50, tol=0, data_start=False``
  posteriors, competences and spamming distributions agree within 1e-9
  (measured 8e-15).
* **Default settings**: the library runs each MACE restart until no
  parameter moves by more than 1e-6 (about 150-200 steps here) and keeps the
  best of 10 random restarts and one data-driven start; crowd-kit stops after 50 steps (its 10 restarts reuse
  one seed and are one run). The labels agree on >= 99 % of the items
  (measured 100 %) and the posteriors within 1e-2 (measured 3e-3); run to
  300 steps, crowd-kit reaches the library's fixed point within 1e-3
  (measured 2e-5). Crowd-kit's Dawid–Skene stops when its evidence lower
  bound *falls* between two steps: on the real data after 2 steps, where
  labels agree with the converged EM on only 98.8 % of items; compared at
  a fixed number of steps they are equal (above), so the library's EM run
  to convergence is compared with crowd-kit run for 50 steps (within 1e-6).
* crowd-kit's MACE (1.4.2) builds its spamming-strategy counts with a
  ``groupby(...).unstack()`` sorted by worker and label names, but indexes
  its parameters by order of first appearance: it is right only when the
  two orders agree. The oracle frames here are sorted by worker and their
  labels renamed to their order of first appearance (a relabelling the
  library's results do not depend on).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from agreement.methods.consensus.class_labels import (
    ClassConsensus,
    class_consensus,
    dawid_skene_consensus,
    mace,
    majority_vote,
)
from agreement.simulate.noise.class_raters import mixed_crowd, random_truth, simulate_class_raters

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ADULT = DATA / "adultcontent3_hcomp2010_labels.tsv"
METHODS = ("majority", "dawid_skene", "mace")


# ---------------------------------------------------------------------------- helpers
def _crowd(seed: int = 0, S: int = 300, per_sample: int | None = 4) -> tuple[np.ndarray, np.ndarray]:
    """Truth and codes: three good raters (0.9, 0.8, 0.7), two uniform spammers, one always-class-1 spammer."""
    truth = random_truth(S, 4, seed=seed)
    conf = mixed_crowd(4, accuracies=[0.9, 0.8, 0.7], n_uniform_spammers=2, constant_spammers=[1])
    return truth, simulate_class_raters(truth, conf, seed=seed + 1, per_sample=per_sample)


def _adult_codes() -> np.ndarray:
    """The real data as (items, workers) codes: each worker's last judgement per item, label ``B`` dropped."""
    if not ADULT.exists():
        pytest.skip(f"shared real data absent: {ADULT} (see ../shared/data/README.md)")
    last = {}
    with open(ADULT, newline="", encoding="utf-8") as f:
        for worker, item, label in csv.reader(f, delimiter="\t"):
            last[(worker, item)] = label  # a later judgement replaces an earlier one
    kept = [(w, i, lab) for (w, i), lab in last.items() if lab != "B"]
    workers = sorted({w for w, _, _ in kept})
    items = sorted({i for _, i, _ in kept})
    classes = sorted({lab for _, _, lab in kept})
    wi, ii, ci = ({x: k for k, x in enumerate(v)} for v in (workers, items, classes))
    codes = np.full((len(items), len(workers)), -1, np.int64)
    for w, i, lab in kept:
        codes[ii[i], wi[w]] = ci[lab]
    return codes


def _frame(codes: np.ndarray):
    """A crowd-kit frame (task, worker, label) sorted by worker, labels renamed to their order of first
    appearance (module docstring), and the codes relabelled the same way."""
    pd = pytest.importorskip("pandas")
    s, r = np.nonzero(codes >= 0)
    order = np.lexsort((s, r))
    s, r = s[order], r[order]
    first = pd.unique(codes[s, r])
    rename = np.full(codes.max() + 1, -1)
    rename[first] = np.arange(len(first))
    codes = np.where(codes >= 0, rename[np.maximum(codes, 0)], -1)
    return pd.DataFrame({"task": s, "worker": r, "label": codes[s, r]}), codes


def _probas(df, K: int) -> np.ndarray:
    return df.sort_index().reindex(columns=range(K)).to_numpy(dtype=np.float64)


# ---------------------------------------------------------------------------- majority vote
def test_majority_vote_hand_example():
    codes = np.array([[0, 0, 1], [1, 1, -1], [2, -1, -1], [-1, -1, -1], [0, 1, -1]])
    res = majority_vote(codes, 3)
    # the 0/1 tie of the last sample: rater 0 agreed with all 3 untied majorities (a = 4/6, weight log 4),
    # rater 1 with its 2 (a = 3/5, weight log 3): class 0 wins, although class 1 has more votes in the corpus
    assert res.labels.tolist() == [0, 1, 2, -1, 0]
    np.testing.assert_allclose(res.confidence, [2 / 3, 1, 1, np.nan, 0.5])
    np.testing.assert_allclose(res.posterior[0], [2 / 3, 1 / 3, 0])
    assert np.isnan(res.posterior[3]).all()
    np.testing.assert_allclose(res.class_prior, [3 / 8, 4 / 8, 1 / 8])
    # rater 0 against the consensus: said 0 for 0 (twice), 1 for 1, 2 for 2; rater 1: 0 and 1 for 0, 1 for 1
    np.testing.assert_allclose(res.rater_confusion[0], np.eye(3))
    np.testing.assert_allclose(res.rater_confusion[1, :2], [[0.5, 0.5, 0], [0, 1, 0]])
    np.testing.assert_allclose(res.rater_competence, [1, 2 / 3, 0])
    # rater 2 met only consensus class 0: the other rows are undefined
    assert np.isnan(res.rater_confusion[2, 1:]).all() and res.rater_confusion[2, 0].tolist() == [0, 1, 0]
    assert res.n_iter == 0 and res.converged


def test_majority_ties_follow_a_seeded_class_order():
    codes = np.array([[0, 1], [1, 0], [2, 3], [3, 2]])  # every class has 2 votes: the seed decides
    labels = {seed: majority_vote(codes, 4, seed=seed).labels.tolist() for seed in range(8)}
    assert majority_vote(codes, 4, seed=3).labels.tolist() == labels[3]
    assert len({tuple(v) for v in labels.values()}) > 1
    perm = np.array([2, 0, 3, 1])
    assert majority_vote(codes[perm][:, ::-1], 4, seed=5).labels.tolist() == [labels[5][p] for p in perm]


# ---------------------------------------------------------------------------- all methods
@pytest.mark.parametrize("method", METHODS)
def test_posteriors_confusions_and_ranges(method):
    truth, codes = _crowd(seed=2)
    res = class_consensus(codes, 4, method=method, seed=0)
    assert isinstance(res, ClassConsensus) and res.method == method
    np.testing.assert_allclose(res.posterior.sum(axis=1), 1.0, atol=1e-12)
    # the label is a most probable class (majority vote breaks ties by its documented order)
    np.testing.assert_array_equal(res.posterior[np.arange(len(truth)), res.labels], res.posterior.max(axis=1))
    np.testing.assert_allclose(res.confidence, res.posterior.max(axis=1))
    assert ((res.confidence >= 0.25 - 1e-12) & (res.confidence <= 1)).all()
    conf = res.rater_confusion
    rows = conf.sum(axis=2)
    np.testing.assert_allclose(rows[np.isfinite(rows)], 1.0, atol=1e-12)
    assert ((res.rater_competence >= 0) & (res.rater_competence <= 1)).all()
    assert (res.labels == truth).mean() > 0.6  # 4 raters per sample, half of them spammers


@pytest.mark.parametrize("method", METHODS)
def test_unlabelled_samples_and_raters(method):
    """Samples and raters without a label change nothing else (MACE draws no random start for such a rater)."""
    _, codes = _crowd(seed=3, S=80)
    padded = np.full((codes.shape[0] + 2, codes.shape[1] + 1), -1)
    padded[1:-1, :-1] = codes
    a = class_consensus(codes, 4, method=method)
    b = class_consensus(padded, 4, method=method)
    assert b.labels[[0, -1]].tolist() == [-1, -1] and np.isnan(b.confidence[[0, -1]]).all()
    assert np.isnan(b.posterior[[0, -1]]).all()
    assert np.isnan(b.rater_competence[-1]) and np.isnan(b.rater_confusion[-1]).all()
    np.testing.assert_allclose(b.posterior[1:-1], a.posterior, atol=1e-12)
    np.testing.assert_allclose(b.rater_competence[:-1], a.rater_competence, atol=1e-12)
    empty = class_consensus(np.full((3, 2), -1), 4, method=method)
    assert (empty.labels == -1).all() and np.isnan(empty.rater_competence).all()


@pytest.mark.parametrize("method,atol", [("majority", 0), ("dawid_skene", 1e-10), ("mace", 1e-4)])
def test_invariance_to_rater_and_sample_order(method, atol):
    """Exact for majority vote and Dawid–Skene (deterministic starts); MACE's random starts are drawn
    per rater column, so its restarts start elsewhere: the best restart reaches the same fixed point
    to within the EM's tolerance."""
    _, codes = _crowd(seed=4)
    rng = np.random.default_rng(0)
    rp, sp = rng.permutation(codes.shape[1]), rng.permutation(codes.shape[0])
    a = class_consensus(codes, 4, method=method)
    b = class_consensus(codes[sp][:, rp], 4, method=method)
    np.testing.assert_allclose(b.posterior, a.posterior[sp], atol=atol)
    np.testing.assert_allclose(b.rater_competence, a.rater_competence[rp], atol=max(atol, 1e-12))
    assert (b.labels == a.labels[sp]).mean() >= 0.99


def test_a_perfect_rater_is_competent():
    truth = random_truth(400, 4, seed=7)
    codes = simulate_class_raters(truth, mixed_crowd(4, accuracies=[1.0, 0.7, 0.7, 0.6], n_uniform_spammers=2), seed=8)
    ds, mc, mv = (class_consensus(codes, 4, method=m) for m in ("dawid_skene", "mace", "majority"))
    assert ds.rater_competence[0] > 0.97 and mc.rater_competence[0] > 0.97 and mv.rater_competence[0] > 0.8
    assert np.argmax(ds.rater_competence) == np.argmax(mc.rater_competence) == 0
    np.testing.assert_allclose(np.diag(ds.rater_confusion[0]), 1.0, atol=0.05)


def test_spammers_get_low_mace_competence():
    truth = random_truth(400, 4, seed=7)
    conf = mixed_crowd(4, accuracies=[0.9, 0.8, 0.7], n_uniform_spammers=3, constant_spammers=[2])
    codes = simulate_class_raters(truth, conf, seed=8)
    mc, mv = mace(codes, 4), majority_vote(codes, 4)
    # accuracy a = θ + (1 - θ) ξ[y]: the 0.7-accurate rater has θ ≈ 0.6, a spammer θ ≈ 0
    assert mc.rater_competence[3:].max() < 0.1 and mc.rater_competence[:3].min() > 0.5
    assert mc.spamming[6, 2] > 0.9  # the constant spammer's ξ is on its class (Dirichlet(10) prior: (400 + 10) / (400 + 40))
    assert (mc.labels == truth).mean() > (mv.labels == truth).mean() + 0.1


def test_mace_implied_confusion():
    _, codes = _crowd(seed=5)
    res = mace(codes, 4, n_restarts=2)
    th, xi = res.rater_competence, res.spamming
    expect = th[:, None, None] * np.eye(4) + (1 - th)[:, None, None] * xi[:, None, :]
    np.testing.assert_allclose(res.rater_confusion, expect)
    np.testing.assert_allclose(xi.sum(axis=1), 1.0)
    np.testing.assert_allclose(res.class_prior, 0.25)
    assert np.isfinite(res.log_likelihood) and res.converged
    assert res.log_likelihood >= mace(codes, 4, n_restarts=1, data_start=False).log_likelihood - 1e-9  # the best run
    em = mace(codes, 4, method="em")
    assert (em.labels == res.labels).mean() > 0.95


def test_dawid_skene_competence_is_prior_weighted_diagonal():
    _, codes = _crowd(seed=6)
    res = dawid_skene_consensus(codes, 4)
    np.testing.assert_allclose(res.rater_competence,
                               np.einsum("y,ryy->r", res.class_prior, res.rater_confusion))


def test_mace_data_start_escapes_the_colluding_spammers_basin():
    """Three good raters and four raters who always say class 2: random starts alone end where the four
    are competent (accuracy about 1/4); the data-driven start finds the far likelier good mode."""
    truth = random_truth(500, 4, seed=1)
    codes = simulate_class_raters(truth, mixed_crowd(4, accuracies=(0.85, 0.8, 0.75), constant_spammers=(2,) * 4),
                                  seed=2001)
    rand, both = mace(codes, 4, seed=1, data_start=False), mace(codes, 4, seed=1)
    assert (rand.labels == truth).mean() < 0.3 and (both.labels == truth).mean() > 0.9
    assert both.log_likelihood > rand.log_likelihood + 100
    assert both.rater_competence[3:].max() < 0.1


def test_determinism_and_seed():
    _, codes = _crowd(seed=9)
    a, b = mace(codes, 4, seed=1), mace(codes, 4, seed=1)
    np.testing.assert_array_equal(a.posterior, b.posterior)


@pytest.mark.parametrize("codes,message", [
    (np.array([0, 1]), "shape"),
    (np.array([[0.0, 1.0]]), "integer"),
    (np.array([[0, 4]]), r"\[-1, 3\]"),
    (np.array([[-2, 0]]), "sample 0, rater 0"),
])
def test_bad_input(codes, message):
    with pytest.raises(ValueError, match=message):
        class_consensus(codes, 4)


def test_bad_method():
    with pytest.raises(ValueError, match="method"):
        class_consensus(np.zeros((2, 2), np.int64), 2, method="wbf")
    with pytest.raises(ValueError, match="method"):
        mace(np.zeros((2, 2), np.int64), 2, method="gibbs")


# ---------------------------------------------------------------------------- crowd-kit oracles
def _ck():
    return pytest.importorskip("crowdkit.aggregation", reason="crowd-kit (test-only dependency) is not installed")


def _oracle_mace_same_start(codes: np.ndarray, seed: int) -> np.ndarray:
    """MACE from crowd-kit's start for 50 steps equals crowd-kit's; returns crowd-kit's posterior (which is
    also its default result: its 10 default restarts reuse one seed and repeat this run)."""
    ck = _ck()
    df, codes = _frame(codes)
    K = int(codes.max()) + 1
    ref = ck.MACE(n_restarts=1, n_iter=50, random_state=seed).fit(df)
    ours = mace(codes, K, seed=seed, n_restarts=1, max_iter=50, tol=0, data_start=False)
    np.testing.assert_allclose(ours.posterior, _probas(ref.probas_, K), atol=1e-9)
    np.testing.assert_allclose(ours.rater_competence, ref.spamming_[:, 1] / ref.spamming_.sum(axis=1), atol=1e-9)
    np.testing.assert_allclose(ours.spamming, ref.thetas_ / ref.thetas_.sum(axis=1, keepdims=True), atol=1e-9)
    return _probas(ref.probas_, K)


def _oracle_dawid_skene_same_steps(codes: np.ndarray) -> np.ndarray:
    """Dawid–Skene for 50 steps equals crowd-kit's; returns crowd-kit's posterior."""
    ck = _ck()
    df, _ = _frame(codes)
    K = int(codes.max()) + 1
    ref = ck.DawidSkene(n_iter=50, tol=-np.inf).fit(df.assign(label=codes[df.task, df.worker]))
    ours = dawid_skene_consensus(codes, K, max_iter=50, tol=0)
    np.testing.assert_allclose(ours.posterior, _probas(ref.probas_, K), atol=1e-8)
    # (crowd-kit's priors_ come from the last E-step, the library's from the M-step before it: not compared)
    return _probas(ref.probas_, K)


@pytest.mark.parametrize("seed", [0, 1])
def test_mace_equals_crowdkit_from_the_same_start_simulated(seed):
    _oracle_mace_same_start(_crowd(seed=seed)[1], seed)


@pytest.mark.parametrize("seed", [0, 1])
def test_dawid_skene_equals_crowdkit_step_by_step_simulated(seed):
    _oracle_dawid_skene_same_steps(_crowd(seed=seed)[1])


def test_mace_defaults_reach_crowdkits_fixed_point_simulated():
    """The library's default (best of 10 restarts, each to tol 1e-6) against crowd-kit run for 300 steps:
    the same fixed point. Against crowd-kit's default (50 steps, not converged here: its posteriors are
    up to 0.12 away from the fixed point) only the labels are compared."""
    ck = _ck()
    _, codes = _crowd(seed=0)
    ref_default = _oracle_mace_same_start(codes, 0)
    df, codes = _frame(codes)
    ours = mace(codes, 4)
    ref_long = _probas(ck.MACE(n_restarts=1, n_iter=300).fit(df).probas_, 4)
    np.testing.assert_allclose(ours.posterior, ref_long, atol=1e-3)
    assert (ours.labels == ref_default.argmax(axis=1)).mean() >= 0.99


@pytest.mark.shared_data
def test_oracles_on_real_crowd_data():
    """496 web sites, ~70 workers each after the repair (last judgement per worker and site, label
    ``B`` dropped): MACE and Dawid–Skene equal crowd-kit's from the same start; at the defaults MACE's
    labels agree on >= 99 % of items and its posteriors within 1e-2 (crowd-kit stops at 50 steps), and
    Dawid–Skene run to convergence is within 1e-6 of crowd-kit's 50 steps."""
    codes = _adult_codes()
    assert codes.shape[0] == 496 and (codes >= 0).sum() == 34768
    ref_mace = _oracle_mace_same_start(codes, 0)
    ref_ds = _oracle_dawid_skene_same_steps(codes)
    _, relabelled = _frame(codes)
    ours = mace(relabelled, 4)
    assert (ours.labels == ref_mace.argmax(axis=1)).mean() >= 0.99
    np.testing.assert_allclose(ours.posterior, ref_mace, atol=1e-2)
    ds = dawid_skene_consensus(codes, 4)  # to convergence (tol 1e-6 on the posteriors)
    assert ds.converged
    np.testing.assert_allclose(ds.posterior, ref_ds, atol=1e-6)
