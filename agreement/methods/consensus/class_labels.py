r"""Consensus of image-level classes: majority vote, Dawid–Skene and MACE.

Input: a reliability matrix ``codes`` of shape ``(S, R)`` (samples × raters)
holding class codes ``0 .. K - 1`` and ``-1`` where a rater gave no class
(:class:`agreement.core.ratings.ClassRatings`). Output, whatever the method, a
:class:`ClassConsensus`: a label, its confidence and the posterior over the
``K`` classes per sample, and per rater an estimated confusion matrix
``π_r[y, c] = P(r says c | true class y)`` and a competence in ``[0, 1]``.

Methods (:func:`class_consensus` picks one by name):

* ``"majority"`` (:func:`majority_vote`): vote shares, no rater weighting;
* ``"dawid_skene"`` (:func:`dawid_skene_consensus`): Dawid & Skene's EM with
  one full confusion matrix per rater (the library's
  :func:`agreement.methods.consensus.em.dawid_skene`);
* ``"mace"`` (:func:`mace`): Hovy et al.'s MACE, one competence (probability of
  not spamming) and one spamming distribution per rater, fitted by EM or by
  variational Bayes (crowd-kit's and the paper's default) with random restarts.

A sample that no rater labelled gets label ``-1``, confidence NaN and a NaN
posterior row; a rater who labelled nothing gets NaN competence and a NaN
confusion matrix. The methods never see the unlabelled samples, so adding or
removing them does not change any other number.

This module does not import FiftyOne.

References:
    A. P. Dawid and A. M. Skene, "Maximum Likelihood Estimation of Observer
    Error-Rates Using the EM Algorithm", J. R. Stat. Soc. C 28(1), 20-28, 1979.
    D. Hovy, T. Berg-Kirkpatrick, A. Vaswani and E. Hovy, "Learning Whom to Trust
    with MACE", NAACL-HLT 2013, 1120-1130.
    D. Ustalov et al., "Learning from Crowds with Crowd-Kit", JOSS 9(96), 2024
    (the reference implementations the oracle tests compare with).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np
from scipy.special import digamma

from agreement.core.tables import check_orientation, class_table, consensus_frame
from agreement.methods.consensus.em import DS_MAX_ITER, DS_TOL, dawid_skene

__all__ = ["ClassConsensus", "CLASS_CONSENSUS_METHODS", "class_consensus", "majority_vote",
           "dawid_skene_consensus", "mace"]

#: The method names :func:`class_consensus` accepts.
CLASS_CONSENSUS_METHODS = ("dawid_skene", "mace", "majority")
#: MACE's default iteration limit per restart and tolerance on its parameters. On simulated crowds of
#: 1,000 raters × 10,000 items (5-10 raters per item, 20-50 % spammers) the best restart converged
#: within 150 iterations (``experiments/class_consensus_default.py``).
MACE_MAX_ITER = 1000
MACE_TOL = 1e-6


_ADVICE = {"Dawid-Skene": "Use method 'mace' (it converges within a few hundred iterations on large crowds), "
                          "or call agreement.methods.consensus.class_labels.dawid_skene_consensus with a larger "
                          "max_iter.",
           "MACE": "Use method 'majority', or call agreement.methods.consensus.class_labels.mace with a larger "
                   "max_iter."}


def _not_converged(method: str, n_iter: int, change: float, tol: float, what: str) -> str:
    """The warning of an EM that stopped at its iteration limit: what happened and what to do."""
    return (f"{method} did not converge: after {n_iter:,} iterations (its limit) the largest change of {what} "
            f"was {change:.2g}, above the tolerance {tol:g}; its labels may still change. {_ADVICE[method]}")


@dataclass(frozen=True)
class ClassConsensus:
    """One consensus class per sample and an estimate of every rater.

    Attributes:
        method: ``"majority"``, ``"dawid_skene"`` or ``"mace"``.
        labels: ``(S,)`` int64 consensus class (argmax of ``posterior``), ``-1`` for an unlabelled sample.
        confidence: ``(S,)`` posterior of the chosen class, in ``[1/K, 1]``; NaN for an unlabelled sample.
        posterior: ``(S, K)`` rows summing to 1 (NaN rows for unlabelled samples).
        rater_confusion: ``(R, K, K)`` ``π_r[y, c] = P(rater r says c | true class y)``, rows sum to 1
            (majority vote: NaN rows for a true class the rater never met).
        rater_competence: ``(R,)`` in ``[0, 1]``; NaN for a rater without a label (definition per method).
        n_iter: EM iterations of the returned fit (0 for majority vote).
        converged: whether the EM met its tolerance (always True for majority vote).
        class_prior: ``(K,)`` the class prior of the model (majority: the share of all votes;
            MACE: uniform, as in the paper).
        spamming: ``(R, K)`` MACE's spamming distributions ``ξ_r`` (None for other methods).
        log_likelihood: MACE's log marginal likelihood of the returned restart (NaN otherwise).
        warning: None, or what went wrong and what to do (an EM stopped at its iteration limit
            before meeting its tolerance: ``converged`` is False and ``n_iter`` is the limit).
        items, raters, classes: the task ids, worker ids and class values of a DataFrame or
            ``reliability_data`` input (None for bare codes: positions and codes then name them).
    """

    method: str
    labels: np.ndarray
    confidence: np.ndarray
    posterior: np.ndarray
    rater_confusion: np.ndarray
    rater_competence: np.ndarray
    n_iter: int
    converged: bool
    class_prior: np.ndarray | None = None
    spamming: np.ndarray | None = None
    log_likelihood: float = float("nan")
    warning: str | None = None
    items: tuple[Any, ...] | None = None
    raters: tuple[Any, ...] | None = None
    classes: tuple[Any, ...] | None = None

    @property
    def iterations(self) -> int:
        """``n_iter``: the EM iterations of the returned fit (0 for majority vote)."""
        return self.n_iter

    def to_pandas(self, per: str = "sample") -> Any:
        """A pandas DataFrame per task (``per="sample"``: label, confidence; ``"posterior"``: one column per
        class) or per worker (``"rater"``: competence): :func:`agreement.core.tables.consensus_frame`."""
        return consensus_frame(self, per=per)


# -------------------- Shared helpers -------------------------------------


def _check_codes(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """``codes`` as an int64 ``(S, R)`` array in ``[-1, K - 1]``, or a ValueError saying what is wrong."""
    arr = np.asarray(codes)
    if arr.ndim != 2:
        raise ValueError(f"codes must be a (samples, raters) array, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"codes must hold integer class codes (-1 missing), got dtype {arr.dtype}")
    if int(n_classes) != n_classes or n_classes < 1:
        raise ValueError(f"n_classes must be a positive integer, got {n_classes!r}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < -1 or arr.max() >= n_classes):
        bad = np.argwhere((arr < -1) | (arr >= n_classes))[0]
        raise ValueError(f"codes must be in [-1, {n_classes - 1}]; sample {bad[0]}, rater {bad[1]} has "
                         f"{arr[bad[0], bad[1]]}")
    return arr


def _scatter(post_rated: np.ndarray, rated_rows: np.ndarray, S: int) -> tuple[np.ndarray, ...]:
    """Posterior, labels and confidence of all ``S`` samples from those of the labelled ones."""
    K = post_rated.shape[1]
    post = np.full((S, K), np.nan)
    post[rated_rows] = post_rated
    labels = np.full(S, -1, np.int64)
    conf = np.full(S, np.nan)
    if len(rated_rows):
        labels[rated_rows] = np.argmax(post_rated, axis=1)
        conf[rated_rows] = post_rated.max(axis=1)
    return post, labels, conf


def _blank_raters(conf: np.ndarray, competence: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NaN confusion and competence for raters without a label."""
    none = ~(codes >= 0).any(axis=0)
    conf, competence = conf.copy(), competence.copy()
    conf[none] = np.nan
    competence[none] = np.nan
    return conf, competence


def _empty(method: str, S: int, R: int, K: int) -> ClassConsensus:
    """The result when no sample has a label."""
    return ClassConsensus(method=method, labels=np.full(S, -1, np.int64), confidence=np.full(S, np.nan),
                          posterior=np.full((S, K), np.nan), rater_confusion=np.full((R, K, K), np.nan),
                          rater_competence=np.full(R, np.nan), n_iter=0, converged=True, class_prior=np.full(K, np.nan),
                          spamming=np.full((R, K), np.nan) if method == "mace" else None)


# -------------------- Majority vote --------------------------------------


def _vote_counts(codes: np.ndarray, K: int) -> np.ndarray:
    """``(S, K)`` number of raters who gave each class."""
    s, r = np.nonzero(codes >= 0)
    return np.bincount(s * K + codes[s, r], minlength=codes.shape[0] * K).reshape(-1, K).astype(np.float64)


def _empirical_confusion(codes: np.ndarray, labels: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Each rater's confusion against ``labels`` (NaN rows: class never met) and its agreement rate."""
    S, R = codes.shape
    s, r = np.nonzero((codes >= 0) & (labels >= 0)[:, None])
    counts = np.bincount((r * K + labels[s]) * K + codes[s, r], minlength=R * K * K).reshape(R, K, K)
    n = counts.sum(axis=2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = counts / n
        agree = np.trace(counts, axis1=1, axis2=2) / n.sum(axis=(1, 2))
    return conf, agree


def _rater_weights(codes: np.ndarray, labels: np.ndarray, K: int) -> np.ndarray:
    r"""Each rater's log-odds weight from its agreement with the untied majority (``labels >= 0``).

    ``a_r = (n^{agree}_r + 1) / (n_r + K)`` (``n_r`` the rater's labels on untied samples, a prior of
    mean ``1/K``: a rater never seen there weighs 0) and ``w_r = log(a_r (K - 1) / (1 - a_r))``, the
    weight of a vote under the one-coin model (right with probability ``a_r``, else a uniform wrong
    class): Nitzan & Paroush's optimal weighted majority.
    """
    n = np.zeros(codes.shape[1])
    agree = np.zeros(codes.shape[1])
    s, r = np.nonzero((codes >= 0) & (labels >= 0)[:, None])
    np.add.at(n, r, 1.0)
    np.add.at(agree, r, (codes[s, r] == labels[s]).astype(np.float64))
    a = (agree + 1.0) / (n + K)
    return np.log(a * (K - 1)) - np.log1p(-a)


def _break_ties(codes: np.ndarray, votes: np.ndarray, tied: np.ndarray, untied: np.ndarray, pos: np.ndarray,
                K: int) -> np.ndarray:
    """The label of every tied sample (``tied`` rows): the tied class of largest summed rater weight
    (:func:`_rater_weights` against ``untied``), then the first in the seeded priority ``pos``."""
    w = _rater_weights(codes, untied, K)
    rows = np.flatnonzero(tied)
    sub = codes[rows]
    s, r = np.nonzero(sub >= 0)
    score = np.bincount(s * K + sub[s, r], weights=w[r], minlength=len(rows) * K).reshape(len(rows), K)
    score = np.round(score, 9)  # sums in another rater order round alike
    top_votes = votes[rows] == votes[rows].max(axis=1, keepdims=True)
    score = np.where(top_votes, score, -np.inf)
    best = top_votes & (score == score.max(axis=1, keepdims=True))
    return np.asarray(np.argmin(np.where(best, pos[None, :], K), axis=1))


def majority_vote(codes: np.ndarray, n_classes: int, *, seed: int = 0) -> ClassConsensus:
    r"""Majority (plurality) vote of the raters' classes.

    ``posterior[s, k] = n_{sk} / n_s`` (the share of the sample's raters who
    gave class ``k``); ``labels[s] = argmax_k n_{sk}``; ``confidence`` is the
    winning share, in ``[1/K, 1]``.

    Ties (several classes with the most votes) are broken by the reliability
    of the tied raters, estimated from the untied samples, then by a seeded
    draw, independently of the order of samples and raters:

    1. each rater's agreement with the majority on the untied samples,
       ``a_r = (n^{agree}_r + 1) / (n_r + K)`` (smoothed towards chance ``1/K``),
       gives it the weight ``w_r = \log(a_r (K - 1) / (1 - a_r))`` (the
       log-odds weight of a one-coin rater: 0 at chance, negative below);
       the tied class whose voters' weights sum highest wins, i.e. the
       maximum a posteriori class among the tied ones when each rater is right
       with probability ``a_r`` and otherwise says a uniform wrong class;
    2. if still tied (e.g. no untied sample, or voters of equal weight), the
       class that comes first in one random priority order of the ``K``
       classes drawn from ``seed`` (so no class is favoured by its code).

    A tied sample's confidence is the tied share (e.g. 0.5). crowd-kit's
    ``MajorityVote`` takes the first tied label in sorted label order; an
    earlier version of this function took the class with more votes over the
    whole corpus, which on a real crowd got none of the 4 gold items where the
    two rules differed right (issue 47).

    The per-rater outputs are empirical: ``rater_confusion[r, y, c]`` is the
    share of the samples with consensus ``y`` that rater ``r`` labelled where it
    said ``c`` (NaN rows for a ``y`` the rater never met) and
    ``rater_competence[r]`` is its agreement with the consensus, in ``[0, 1]``.

    Args:
        codes: ``(S, R)`` integer class codes, ``-1`` where the rater gave no class.
        n_classes: ``K``.
        seed: the seed of the classes' priority order for ties that the raters' weights leave.

    Returns:
        :class:`ClassConsensus` (``n_iter = 0``).

    Reference: the plurality baseline of Dawid & Skene (1979) and of crowd-kit's ``MajorityVote``; the
    weights of S. Nitzan and J. Paroush, "Optimal Decision Rules in Uncertain Dichotomous Choice
    Situations", International Economic Review 23(2), 289-297, 1982.
    """
    codes = _check_codes(codes, n_classes)
    S, R = codes.shape
    K = int(n_classes)
    votes = _vote_counts(codes, K)
    n = votes.sum(axis=1)
    rated = n > 0
    if not rated.any():
        return _empty("majority", S, R, K)
    total = votes.sum(axis=0)
    pos = np.empty(K, np.int64)
    pos[np.random.default_rng(seed).permutation(K)] = np.arange(K)  # the seeded priority order among equals
    top = votes.max(axis=1, keepdims=True)
    tied = rated & ((votes == top).sum(axis=1) > 1)
    labels = np.where(rated & ~tied, np.argmax(votes, axis=1), -1)
    if tied.any():
        labels[tied] = _break_ties(codes, votes, tied, labels, pos, K)
    with np.errstate(invalid="ignore", divide="ignore"):
        post = np.where(rated[:, None], votes / n[:, None], np.nan)
    conf = np.where(rated, top[:, 0] / np.maximum(n, 1), np.nan)
    rater_conf, agree = _empirical_confusion(codes, labels, K)
    return ClassConsensus(method="majority", labels=labels, confidence=conf, posterior=post, rater_confusion=rater_conf,
                          rater_competence=agree, n_iter=0, converged=True, class_prior=total / total.sum())


# -------------------- Dawid–Skene ----------------------------------------


def dawid_skene_consensus(codes: np.ndarray, n_classes: int, *, max_iter: int = DS_MAX_ITER, tol: float = DS_TOL,
                          smoothing: float = 0.0) -> ClassConsensus:
    r"""Dawid & Skene's EM: one full confusion matrix per rater and a class prior.

    Model: ``P(y_s = y) = p_y`` and ``P(rater r says c | y) = π_r[y, c]``,
    ratings independent given the true class. EM from the vote shares
    (:func:`agreement.methods.consensus.em.dawid_skene`, which this wraps):
    E-step ``T_{sy} ∝ p_y \prod_r π_r[y, c_{sr}]``, M-step
    ``p_y = mean_s T_{sy}``, ``π_r[y, c] ∝ \sum_s T_{sy} [c_{sr} = c]``;
    stops when no posterior moves by more than ``tol`` between two successive
    E-steps (``max |ΔT_{sy}| <= tol``), or after ``max_iter`` iterations: then
    ``converged`` is False and ``warning`` says so. The default limit (20,000)
    is large because this EM crawls on sparse crowds (about 2 ms an iteration
    for 50,000 ratings; :data:`agreement.methods.consensus.em.DS_MAX_ITER`). ``labels`` is the
    argmax of ``T`` (ties: the lowest code), ``confidence`` its value.
    ``rater_competence[r] = \sum_y p_y π_r[y, y]`` (the rater's expected
    accuracy, in ``[0, 1]``).

    Args:
        codes: ``(S, R)`` integer class codes, ``-1`` where the rater gave no class.
        n_classes: ``K``.
        max_iter: EM stopping: the iteration limit (``>= 1``).
        tol: EM stopping: the largest absolute change of a posterior to stop at (``>= 0``).
        smoothing: ``α >= 0`` of :func:`~agreement.methods.consensus.em.dawid_skene` (0: the textbook EM).

    Returns:
        :class:`ClassConsensus` with ``class_prior = p``.

    Reference: Dawid & Skene, J. R. Stat. Soc. C 28(1), 20-28, 1979.
    """
    codes = _check_codes(codes, n_classes)
    S, R = codes.shape
    K = int(n_classes)
    rated_rows = np.flatnonzero((codes >= 0).any(axis=1))
    if not len(rated_rows):
        return _empty("dawid_skene", S, R, K)
    fit = dawid_skene(codes[rated_rows], n_classes=K, smoothing=smoothing, max_iter=max_iter, tol=tol)
    post, labels, conf = _scatter(fit.posterior, rated_rows, S)
    competence = np.einsum("y,ryy->r", fit.prior, fit.confusion)
    rater_conf, competence = _blank_raters(fit.confusion, competence, codes)
    warning = None if fit.converged else _not_converged("Dawid-Skene", int(fit.n_iter), fit.max_change, tol,
                                                          "a posterior")
    return ClassConsensus(method="dawid_skene", labels=labels, confidence=conf, posterior=post,
                          rater_confusion=rater_conf, rater_competence=competence, n_iter=int(fit.n_iter),
                          converged=bool(fit.converged), class_prior=fit.prior, warning=warning)


# -------------------- MACE -----------------------------------------------


@dataclass(frozen=True)
class _Ratings:
    """The labelled entries of a reliability matrix as a list: sample, rater and class of each rating."""

    s: np.ndarray
    r: np.ndarray
    a: np.ndarray
    S: int
    R: int
    K: int
    cell: np.ndarray  # s * K + a

    @staticmethod
    def of(codes: np.ndarray, K: int) -> "_Ratings":
        S, R = codes.shape
        s, r = np.nonzero(codes >= 0)
        a = codes[s, r]
        return _Ratings(s=s, r=r, a=a, S=S, R=R, K=K, cell=s * K + a)


def _mace_start(R: int, K: int, seed: int, restart: int) -> tuple[np.ndarray, np.ndarray]:
    """Random ``(spam, know)`` pairs ``(R, 2)`` and strategies ``(R, K)``, uniform on [1, 2.5] normalised.

    Restart 0 is crowd-kit's start (``scipy.stats.uniform(1, 1.5)`` drawn twice from a fresh
    ``RandomState(seed)``, so the two arrays share their first numbers); later restarts draw
    from ``default_rng((seed, restart))``.
    """
    if restart == 0:
        pair = 1.0 + 1.5 * np.random.RandomState(seed).uniform(size=(R, 2))
        strat = 1.0 + 1.5 * np.random.RandomState(seed).uniform(size=(R, K))
    else:
        rng = np.random.default_rng((seed, restart))
        pair, strat = 1.0 + 1.5 * rng.random((R, 2)), 1.0 + 1.5 * rng.random((R, K))
    return pair / pair.sum(axis=1, keepdims=True), strat / strat.sum(axis=1, keepdims=True)


def _mace_e_step(d: _Ratings, pair: np.ndarray, strat: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    r"""Posterior ``T (S, K)``, each rating's posterior of knowing (not spamming) and the log marginal likelihood.

    Per rating ``(s, r, a)`` and true class ``t``:
    ``f(t) = P(spam) ξ_r[a] + P(know) [a = t]``;
    ``T_{st} ∝ \prod_{ratings of s} f(t)`` (uniform class prior);
    ``P(know | data) = T_{sa} P(know) / f(a)``.
    """
    spam_a = pair[d.r, 0] * strat[d.r, d.a]  # (M,) f(t) for t != a (> 0: smoothing and priors are > 0)
    hit = spam_a + pair[d.r, 1]  # f(a)
    log_spam = np.log(spam_a)
    base = np.bincount(d.s, weights=log_spam, minlength=d.S)  # (S,) sum of log f(t) as if no rating hit t
    bonus = np.bincount(d.cell, weights=np.log(hit) - log_spam, minlength=d.S * d.K).reshape(d.S, d.K)
    L = base[:, None] + bonus - np.log(d.K)
    top = L.max(axis=1, keepdims=True)
    E = np.exp(L - top)
    z = E.sum(axis=1, keepdims=True)
    T = E / z
    norm = top[:, 0] + np.log(z[:, 0])  # log marginal likelihood of each sample
    know = T[d.s, d.a] * pair[d.r, 1] / hit
    return T, know, float(norm.sum())


def _mace_m_step(d: _Ratings, know: np.ndarray, method: str, priors: tuple[float, float, float],
                 smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    r"""New ``(spam, know)`` pairs and strategies from the expected counts.

    Counts: ``n_r^{know} = \sum P(know)``, ``n_r^{spam} = \sum (1 - P(know))``,
    ``m_r[a] = \sum_{ratings (s, r, a)} (1 - P(know))``. ``"em"``: add ``smoothing`` to
    every count and normalise. ``"vb"`` (mean-field variational Bayes with a Beta(α, β)
    prior on the competence and a symmetric Dirichlet(γ) on ``ξ_r``):
    ``exp ψ(n + prior) / exp ψ(\sum (n + prior))``, as the paper's and crowd-kit's code.
    """
    spam = 1.0 - know
    counts = np.stack([np.bincount(d.r, weights=spam, minlength=d.R),
                       np.bincount(d.r, weights=know, minlength=d.R)], axis=1)
    strat: np.ndarray = np.bincount(d.r * d.K + d.a, weights=spam, minlength=d.R * d.K).reshape(d.R, d.K)
    if method == "em":
        pair = counts + smoothing
        strat = strat + smoothing
        return pair / pair.sum(axis=1, keepdims=True), strat / strat.sum(axis=1, keepdims=True)
    alpha, beta, gamma = priors
    pair = counts + np.array([beta, alpha])  # spam pseudo-count β, knowing pseudo-count α (Beta(α, β) on θ)
    strat = strat + gamma
    return (np.exp(digamma(pair) - digamma(pair.sum(axis=1, keepdims=True))),
            np.exp(digamma(strat) - digamma(strat.sum(axis=1, keepdims=True))))


def _mace_run(d: _Ratings, pair: np.ndarray, strat: np.ndarray, *, method: str, priors: tuple[float, float, float],
              smoothing: float, max_iter: int, tol: float) -> tuple[np.ndarray, np.ndarray, int, bool, float]:
    """One EM/VB run from ``(pair, strat)``: the final parameters, iterations, convergence and the last
    change (the largest absolute change of a parameter ``θ_r``, ``1 - θ_r`` or ``ξ_r[a]`` in the last M-step)."""
    converged, n_iter, change = False, 0, float("inf")
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter, the iterations run, is returned after the loop)
        _, know, _ = _mace_e_step(d, pair, strat)
        new_pair, new_strat = _mace_m_step(d, know, method, priors, smoothing)
        change = max(np.abs(new_pair - pair).max(initial=0.0), np.abs(new_strat - strat).max(initial=0.0))
        pair, strat = new_pair, new_strat
        if change <= tol:
            converged = True
            break
    return pair, strat, n_iter, converged, float(change)


def mace(codes: np.ndarray, n_classes: int, *, seed: int = 0, n_restarts: int = 10, max_iter: int = MACE_MAX_ITER,
         tol: float = MACE_TOL, method: str = "vb", alpha: float = 0.5, beta: float = 0.5,
         strategy_prior: float = 10.0, smoothing: float | None = None, data_start: bool = True) -> ClassConsensus:
    r"""MACE (Multi-Annotator Competence Estimation): who is spamming, and the classes.

    Model (Hovy et al. 2013): the true class ``T_s`` is uniform on ``K``
    classes; rater ``r`` spams a sample with probability ``1 - θ_r`` and then
    draws its answer from its own distribution ``ξ_r``, otherwise answers
    ``T_s``. So ``P(r says a | t) = θ_r [a = t] + (1 - θ_r) ξ_r[a]``, which is
    ``rater_confusion[r, t, a]``; ``rater_competence = θ_r ∈ [0, 1]`` and
    ``spamming = ξ_r``. The posterior ``T_{st} ∝ \prod_r P(r says c_{sr} | t)``.

    Fitting (the paper's and crowd-kit's): ``n_restarts`` runs from random
    starts (both parameters uniform on [1, 2.5], normalised; restart 0 is
    crowd-kit's start for ``random_state=seed``), each alternating E- and
    M-steps until no parameter moves by more than ``tol`` or ``max_iter``
    M-steps (``max_iter``, default 1,000; ``tol`` compares the largest absolute change of any
    ``θ_r``, ``1 - θ_r`` or ``ξ_r[a]`` between two successive M-steps, default ``1e-6``);
    ``converged`` and ``n_iter`` are those of the returned run, and ``warning``
    says when it stopped at the limit; the run with the largest log marginal likelihood
    ``\sum_s \log \sum_t K^{-1} \prod_r P(c_{sr} | t)`` wins (first one on ties).
    With ``data_start`` (default) one more run starts from the data, whatever
    the seed and the order of raters: ``θ_r = 1/2`` and ``ξ_r`` the rater's
    own label frequencies (add-one smoothed). A rater who always gives one
    class then starts as a spammer; random starts alone often end in the
    basin where a block of such raters is "competent" (the simulated crowd of
    three good raters and four always-one-class spammers: in 4 of 10 seeds
    ten random starts all did, at a log-likelihood about 1000 lower).
    ``method="vb"`` (default, as crowd-kit): variational Bayes with a
    ``Beta(alpha, beta)`` prior on ``θ_r`` and a symmetric
    ``Dirichlet(strategy_prior)`` on ``ξ_r``, parameters
    ``exp ψ(count + prior) / exp ψ(total)`` (reported renormalised to sum to
    1); ``method="em"``: counts plus ``smoothing`` (default ``0.01 / K``, the
    paper's), normalised.

    Note on crowd-kit 1.4: its restarts all reuse ``random_state`` and so are
    one run repeated; it runs exactly ``n_iter = 50`` steps. Pass
    ``n_restarts=1, max_iter=50, tol=0, data_start=False`` to reproduce it.

    Args:
        codes: ``(S, R)`` integer class codes, ``-1`` where the rater gave no class.
        n_classes: ``K``.
        seed: seeds the random starts (deterministic results).
        n_restarts: the number of random starts (``>= 1``).
        max_iter: each run's limit of M-steps (``>= 1``).
        tol: each run stops when no parameter moves by more than ``tol`` (``>= 0``).
        method: ``"vb"`` or ``"em"``.
        alpha: the first parameter of the Beta prior on the competence ``θ_r`` (``"vb"``).
        beta: the second parameter of the Beta prior on the competence ``θ_r`` (``"vb"``).
        strategy_prior: the Dirichlet prior on ``ξ_r`` (``"vb"``).
        smoothing: the ``"em"`` pseudo-count (None: ``0.01 / K``).
        data_start: also run from the data-driven start (above).

    Returns:
        :class:`ClassConsensus` with ``spamming``, ``log_likelihood`` and a uniform ``class_prior``.

    Reference: D. Hovy, T. Berg-Kirkpatrick, A. Vaswani and E. Hovy, "Learning Whom to Trust
    with MACE", NAACL-HLT 2013, 1120-1130.
    """
    codes = _check_codes(codes, n_classes)
    if method not in ("vb", "em"):
        raise ValueError(f"method must be 'vb' or 'em', got {method!r}")
    if n_restarts < 1 or max_iter < 1:
        raise ValueError(f"n_restarts and max_iter must be >= 1, got {n_restarts} and {max_iter}")
    if min(alpha, beta, strategy_prior) <= 0 or (smoothing is not None and not smoothing > 0):
        raise ValueError("alpha, beta, strategy_prior and smoothing must be > 0")
    S, R = codes.shape
    K = int(n_classes)
    rated_rows = np.flatnonzero((codes >= 0).any(axis=1))
    if not len(rated_rows):
        return _empty("mace", S, R, K)
    cols = np.flatnonzero((codes >= 0).any(axis=0))  # raters without a label take no random start
    d = _Ratings.of(codes[rated_rows][:, cols], K)
    smoothing = 0.01 / K if smoothing is None else float(smoothing)
    priors = (float(alpha), float(beta), float(strategy_prior))
    best: tuple[float, np.ndarray, np.ndarray, np.ndarray, int, bool, float] | None = None
    freq = np.bincount(d.r * K + d.a, minlength=len(cols) * K).reshape(len(cols), K) + 1.0
    data = (np.full((len(cols), 2), 0.5), freq / freq.sum(axis=1, keepdims=True))
    for restart in range(n_restarts + bool(data_start)):
        pair, strat = _mace_start(len(cols), K, seed, restart) if restart < n_restarts else data
        pair, strat, n_iter, converged, change = _mace_run(d, pair, strat, method=method, priors=priors,
                                                           smoothing=smoothing, max_iter=max_iter, tol=tol)
        T, _, ll = _mace_e_step(d, pair, strat)
        if best is None or ll > best[0]:
            best = (ll, T, pair, strat, n_iter, converged, change)
    assert best is not None  # n_restarts >= 1 (checked above): at least one run
    ll, T, pair, strat, n_iter, converged, change = best
    theta, xi = np.full(R, np.nan), np.full((R, K), np.nan)
    theta[cols] = pair[:, 1] / pair.sum(axis=1)
    xi[cols] = strat / strat.sum(axis=1, keepdims=True)
    conf = theta[:, None, None] * np.eye(K)[None] + (1.0 - theta)[:, None, None] * xi[:, None, :]
    post, labels, confidence = _scatter(T, rated_rows, S)
    warning = None if converged else _not_converged("MACE", n_iter, change, tol, "a parameter")
    return ClassConsensus(method="mace", labels=labels, confidence=confidence, posterior=post, rater_confusion=conf,
                          rater_competence=theta, n_iter=n_iter, converged=converged, class_prior=np.full(K, 1.0 / K),
                          spamming=xi, log_likelihood=ll, warning=warning)


# -------------------- One entry ------------------------------------------


def class_consensus(codes: Any = None, n_classes: int | None = None, /, *, method: str = "mace", seed: int = 0,
                    max_iter: int | None = None, tol: float | None = None, reliability_data: Any = None,
                    columns: Mapping[str, str] | None = None, orientation: str | None = None) -> ClassConsensus:
    """The consensus class of every sample by ``method`` (module docstring).

    Args:
        codes: ``(S, R)`` integer class codes, ``-1`` where the rater gave no class; or a long pandas
            DataFrame (crowd-kit's ``task``, ``worker``, ``label`` columns: :mod:`agreement.core.tables`).
        n_classes: ``K`` (default: the number of classes of a DataFrame or ``reliability_data``, else the
            largest code + 1).
        method: ``"mace"`` (default: :func:`mace`), ``"dawid_skene"`` (:func:`dawid_skene_consensus`) or
            ``"majority"`` (:func:`majority_vote`). MACE is the default from evidence (docs/method-consensus.md,
            "Choosing the default class consensus"): the most accurate on simulated crowds with spammers, as
            good as the best on the real AdultContent3 crowd, and converged within 150 iterations on crowds of
            1,000 raters × 10,000 items where Dawid–Skene needed up to 5,409.
        seed: MACE's random starts and majority vote's tie order (Dawid–Skene is deterministic
            from the vote shares).
        max_iter: EM iteration limit (None: the method's default; ignored by majority vote).
        tol: EM stopping tolerance (None: the method's default; ignored by majority vote).
        reliability_data: instead of ``codes``, krippendorff's ``(raters × units)`` matrix, NaN/None missing.
        columns: a DataFrame's column names by role (default ``task``, ``worker``, ``label``).
        orientation: ``"units_by_raters"`` confirms a wide complete ``codes`` matrix (the orientation rule).

    Returns:
        :class:`ClassConsensus`, naming the tasks, workers and classes of a DataFrame (``to_pandas()``).

    Raises:
        ValueError: an unknown method, codes that are not ``(S, R)`` integers in ``[-1, K - 1]``, or any
            refusal of :func:`agreement.core.tables.class_table` and its orientation rule.
    """
    given = class_table(codes, reliability_data=reliability_data, columns=columns, orientation=orientation)
    if n_classes is None:
        n_classes = given.n_classes or int(np.max(given.codes, initial=0)) + 1
    codes = _check_codes(given.codes, n_classes)
    check_orientation(codes, "units_by_raters" if given.source != "codes" else orientation)
    if method == "dawid_skene":
        res = dawid_skene_consensus(codes, n_classes, max_iter=DS_MAX_ITER if max_iter is None else max_iter,
                                    tol=DS_TOL if tol is None else tol)
    elif method == "mace":
        res = mace(codes, n_classes, seed=seed, max_iter=MACE_MAX_ITER if max_iter is None else max_iter,
                   tol=MACE_TOL if tol is None else tol)
    elif method == "majority":
        res = majority_vote(codes, n_classes, seed=seed)
    else:
        raise ValueError(f"method must be one of {CLASS_CONSENSUS_METHODS}, got {method!r}")
    named = given.source != "codes"
    return replace(res, items=given.items, raters=given.workers, classes=given.classes) if named else res
