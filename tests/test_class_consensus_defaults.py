"""Class consensus defaults (issue 47, defect 5): Dawid–Skene and MACE stop on a documented tolerance within
an iteration limit that suffices on large sparse crowds, say so on the result when they do not, and
majority-vote ties follow the tied raters' reliability, then a seeded class order.

The 1,000 raters × 10,000 items crowds are measured in ``experiments/class_consensus_default.py``; the suite
uses a crowd of 200 raters × 2,000 items, 5 raters per item, half of them spammers, on which Dawid–Skene
needs 1,121 iterations (the earlier limit of 500 stopped it unconverged) and MACE about 120 (a few seconds
in all).
"""

from __future__ import annotations

import numpy as np
import pytest

from agreement.methods.consensus.class_labels import (
    MACE_MAX_ITER,
    class_consensus,
    dawid_skene_consensus,
    mace,
    majority_vote,
)
from agreement.methods.consensus.em import DS_MAX_ITER, DS_TOL
from agreement.simulate.noise.class_raters import mixed_crowd, random_truth, simulate_class_raters


@pytest.fixture(scope="module")
def sparse_crowd() -> tuple[np.ndarray, np.ndarray]:
    """200 raters (100 of accuracy U(0.5, 0.95), 50 uniform and 50 constant spammers) × 2,000 items, 5 per item."""
    rng = np.random.default_rng(0)
    conf = mixed_crowd(4, accuracies=rng.uniform(0.5, 0.95, 100), n_uniform_spammers=50,
                       constant_spammers=rng.integers(0, 4, 50))
    truth = random_truth(2000, 4, seed=0)
    return truth, simulate_class_raters(truth, conf, seed=0, per_sample=5)


# ---------------------------------------------------------------------------------------------- convergence
def test_em_methods_converge_on_a_large_sparse_crowd(sparse_crowd):
    truth, codes = sparse_crowd
    ds = class_consensus(codes, 4, method="dawid_skene")
    assert ds.converged and ds.warning is None and ds.iterations == ds.n_iter
    assert 500 < ds.n_iter < DS_MAX_ITER  # beyond the earlier limit of 500, well within the new one
    mc = class_consensus(codes, 4, method="mace")
    assert mc.converged and mc.warning is None and mc.n_iter < MACE_MAX_ITER
    # the consensus is worth having on this crowd: both beat the vote
    vote = (majority_vote(codes, 4).labels == truth).mean()
    assert (mc.labels == truth).mean() > vote and (ds.labels == truth).mean() > vote - 0.02


@pytest.mark.parametrize("method", ["dawid_skene", "mace"])
def test_non_convergence_is_reported(sparse_crowd, method):
    _, codes = sparse_crowd
    res = class_consensus(codes, 4, method=method, max_iter=3)
    assert not res.converged and res.n_iter == 3 and res.iterations == 3
    name = {"dawid_skene": "Dawid-Skene", "mace": "MACE"}[method]
    assert res.warning.startswith(f"{name} did not converge: after 3 iterations (its limit)")
    assert "above the tolerance 1e-06" in res.warning and "larger max_iter" in res.warning
    assert majority_vote(codes, 4).warning is None


def test_dawid_skene_tolerance_is_the_largest_posterior_change(sparse_crowd):
    """It stops at the first iteration n where max |T(n) - T(n-1)| <= tol: the posteriors of n and n - 1
    iterations differ by at most tol, those of n - 1 and n - 2 by more."""
    _, codes = sparse_crowd[0][:600], sparse_crowd[1][:600]
    tol = 1e-4
    res = dawid_skene_consensus(codes, 4, tol=tol)
    n = res.n_iter
    assert res.converged and n > 3
    before = dawid_skene_consensus(codes, 4, max_iter=n - 1, tol=tol)
    earlier = dawid_skene_consensus(codes, 4, max_iter=n - 2, tol=tol)
    assert not before.converged and before.warning is not None
    assert np.nanmax(np.abs(res.posterior - before.posterior)) <= tol
    assert np.nanmax(np.abs(before.posterior - earlier.posterior)) > tol
    assert DS_TOL == 1e-6


def test_mace_tolerance_is_the_largest_parameter_change(sparse_crowd):
    """With one EM run (``method="em"``: the parameters are θ_r and ξ_r themselves) it stops at the first
    M-step n where no θ_r or ξ_r[a] moved by more than tol."""
    codes = sparse_crowd[1][:600]
    kw = dict(n_restarts=1, data_start=False, method="em", tol=1e-4)
    res = mace(codes, 4, **kw)
    n = res.n_iter
    assert res.converged and n > 3
    before, earlier = mace(codes, 4, max_iter=n - 1, **kw), mace(codes, 4, max_iter=n - 2, **kw)

    def change(a, b):
        return max(np.nanmax(np.abs(a.rater_competence - b.rater_competence)),
                   np.nanmax(np.abs(a.spamming - b.spamming)))

    assert change(res, before) <= 1e-4 < change(before, earlier)


# ---------------------------------------------------------------------------------------------- majority ties
def _tie_crowd(reliable_class: int, other_class: int) -> np.ndarray:
    """Raters 0 and 1 agree with every untied majority, raters 2 and 3 with none; class 1 has the most votes
    over the corpus. The last sample is a 2-2 tie: raters 0, 1 say ``reliable_class``, 2, 3 ``other_class``."""
    untied = [[0, 0, 1, 2], [1, 1, 2, 0], [2, 2, 0, 1], [1, 1, 0, 2], [1, 1, 2, 0], [1, 1, 0, 2]]
    tie = [reliable_class, reliable_class, other_class, other_class]
    return np.array(untied + [tie])


@pytest.mark.parametrize("reliable_class, other_class", [(0, 1), (1, 0), (2, 0), (0, 2)])
def test_majority_tie_goes_to_the_reliable_raters(reliable_class, other_class):
    codes = _tie_crowd(reliable_class, other_class)
    assert (codes == 1).sum() > (codes == 0).sum() and (codes == 1).sum() > (codes == 2).sum()
    for seed in range(6):
        res = majority_vote(codes, 3, seed=seed)
        assert res.labels.tolist() == [0, 1, 2, 1, 1, 1, reliable_class], seed
        assert res.confidence[-1] == 0.5
    # order of samples and raters, and the names of the classes, change nothing
    perm, cols, names = np.array([6, 2, 0, 5, 1, 4, 3]), np.array([3, 1, 2, 0]), np.array([2, 0, 1])
    res = majority_vote(names[codes[perm][:, cols]], 3, seed=1)
    assert res.labels[0] == names[reliable_class]


def test_majority_tie_of_equally_reliable_raters_is_a_seeded_draw():
    # raters 0-3 all agree with every untied majority: their weights are equal and the seed decides
    codes = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [0, 0, 1, 1]])
    got = {seed: int(majority_vote(codes, 3, seed=seed).labels[-1]) for seed in range(12)}
    assert set(got.values()) == {0, 1}
    assert all(int(majority_vote(codes, 3, seed=s).labels[-1]) == v for s, v in got.items())
    # the seeded order is an order of the classes, not of the samples or raters
    for seed in range(12):
        assert majority_vote(codes[::-1][:, ::-1], 3, seed=seed).labels[0] == got[seed]
