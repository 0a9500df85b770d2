r"""The consensus EM: which objects exist, what they are and where, and how good each rater is.

The data are the units of a corpus (:mod:`agreement.methods.consensus.units`): per
unit ``u`` of sample ``s``, the raters assigned to ``s`` (``A_{sr} = 1``),
the members (at most one annotation per rater) with their classes ``c_i`` and
geometry. A rater not assigned to ``s`` says nothing about it (implicit
absence); an assigned rater without a member in ``u`` says "no object here"
(explicit absence).

Model
-----
Objects and spurious labels are two independent Poisson processes per
sample. A **real object** (``μ`` per sample) is drawn by each assigned rater
independently with probability ``se_r`` (sensitivity), with class ``c`` given
its true class ``y`` by the rater's confusion matrix ``π_r[y, c]`` (true
classes with prior ``p_y``), and with geometry noise of scale ``σ_r``
relative to the object's size (:mod:`agreement.methods.consensus.fusion`). A
**spurious label** is drawn by rater ``r`` at ``λ_r`` per assigned sample
(false-positive rate) with a class drawn from the rater's own label
distribution ``m_r[c] = \sum_y p_y π_r[y, c]``; a unit of ``m`` spurious
labels needs ``m - 1`` chance coincidences, each of probability ``ρ`` (the
share of pairs of boxes of different samples with similarity ``>= τ``).
Hence the existence log-odds of a unit

.. math::

    \ell_1(u) &= \log μ + \sum_{r: A_{sr}} \log(1 - se_r)
        + \sum_{i \in u} \operatorname{logit} se_{r_i}
        + \log \sum_y p_y \prod_{i \in u} π_{r_i}[y, c_i] \\
    \ell_0(u) &= \sum_{i \in u} \bigl(\log λ_{r_i} + \log m_{r_i}[c_i]\bigr) + (m_u - 1)\log ρ \\
    P(\text{exists} \mid u) &= σ(\ell_1 - \ell_0), \qquad
    P(y \mid u, \text{exists}) \propto p_y \prod_{i \in u} π_{r_i}[y, c_i]

(the class posterior is Dawid & Skene's). A single label's class is then
no evidence of existence by itself (its two class terms are equal), while
the classes of several raters are, as far as they agree more than chance
(the class term of ``\ell_1`` over that of ``\ell_0`` is Dawid-Skene's
evidence that the labels share one true class). A separate class
distribution of spurious labels would let the EM declare whole rare
classes real or spurious, one free ratio per class, and it drifts there
for hundreds of iterations. Objects that no assigned rater
drew are missing data: a sample with ``n`` seen objects is expected to hold
``n P_0 / (1 - P_0)`` unseen ones, ``P_0 = \prod_{r: A_{sr}} (1 - se_r)``.

EM
--
Initialisation: existence = vote share (members / assigned raters), class
posterior = vote shares (Dawid & Skene's start), equal geometry weights.
M-step, with ``w_u`` the existence posterior and ``T_{uy}`` the class posterior:

* ``se_r = (D_r + κ \bar e\, se_0) / (E_r + κ \bar e)`` with ``D_r = \sum_{i \in r} w_{u_i}`` the
  rater's real labels and ``E_r = \sum_s A_{sr} \sum_{u \in s} w_u / (1 - P_{0s})`` the real objects of
  its samples; ``μ`` = expected real objects (seen and unseen) per sample with a rater;
* ``λ_r = (F_r + κ λ_0) / (n_r + κ)`` with ``F_r = \sum_{i \in r} (1 - w_{u_i})`` its spurious labels
  and ``n_r = \#\{s : A_{sr}\}`` its samples. Both are shrunk toward the pooled rates
  ``se_0 = \sum_r D_r / \sum_r E_r`` and ``λ_0 = \sum_r F_r / \sum_r n_r`` by a Beta and a Gamma
  prior worth ``κ`` (``rate_prior``, default :data:`RATE_PRIOR` = 2) of the rater's samples
  (``\bar e = \sum E / \sum n`` objects each): an empirical-Bayes prior (its centre is fitted)
  whose strength in samples does not shrink as the crowd grows. ``κ = 0`` is maximum likelihood;
* ``p_y ∝ \sum_u w_u T_{uy} + α / C`` and, with ``N_r[y, c] = \sum_{i \in r, c_i = c} w_{u_i} T_{u_i y}``,
  ``π_r[y, ·] = (N_r[y, ·] + α π_0[y, ·]) / (N_r[y] + α)``: a Dirichlet
  smoothing prior of strength ``α`` (``smoothing``) centred on the pooled
  confusion of all raters ``π_0[y, ·] ∝ \sum_r N_r[y, ·] + α e_y``. With
  ``α = 0`` and every unit real this is exactly Dawid & Skene (1979);
* ``σ_r`` from the differences between the members of units with existence
  posterior at least 0.5: medians per rater pair solved for the raters'
  scales (:mod:`agreement.methods.consensus.scale`; the random-effects EM update
  from residuals to the fused geometry instead crawls, and collapses the
  most precise rater's ``σ`` to 0 when two raters are far more precise
  than the others); and, unless given, the tail index ``ν`` of the fusion's
  Student-t weights, chosen from the same differences.

The E-step is the formulas above; the fused geometry is recomputed with
weights ``u_i / σ_{r_i}^2``, ``u_i`` the Student-t weight of the member's
residual to the previous fused geometry (one step of iteratively
reweighted least squares per iteration; ``u_i = 1`` for ``ν = ∞``). Stop when the log-likelihood of the units,
``\sum_u \log(e^{\ell_1(u)} + e^{\ell_0(u)})``, changes by at most ``tol``
per unit (as crowd-kit's Dawid-Skene stops on its bound per label) and no
``σ_r`` moves by more than 0.01 % or by more than a tenth of its own standard
error, whichever is larger (``log σ_r`` from ``n_r`` member pairs has a
standard error of about ``1 / \sqrt{n_r}``: a crowd worker seen on a few
dozen samples settles to within its precision in a few iterations instead
of creeping by 0.01 % steps while the well-measured raters wait). Where the data cannot separate missed
objects from false positives (two informative raters: the counts of units
drawn by both, by one and by the other are three numbers for five
parameters), the likelihood is flat along a ridge and the posteriors of
the single-rater units drift along it for hundreds of iterations; the
likelihood criterion stops there, and those units' confidences are the
uncertain ones the review band flags. Every step is a few vectorised
passes over the members (``M``) and units × classes (in blocks).

Sparse crowds
-------------
A crowd worker who saw one or two samples has rates fitted from a handful of labels: by maximum
likelihood ``se_r`` is 0 or 1 and ``λ_r`` 0 (then ``log λ_r = log ε``, and one of its labels outweighs
eight raters). The prior keeps such a rater near the pooled rates (on 40 images × 200 raters, 9 per
image: 5-95 % of ``se_r`` in 0.29-0.71 instead of 0-1) while a rater with hundreds of samples moves by
about ``κ / n_r``. A rater with no object on its samples has no ``se_r`` (NaN; the E-step uses the
median of the others'); before this was filled in the M-step too, ``0 · \log(1 - \text{NaN})`` in
``P_{0s}`` made every parameter NaN and the fit kept no label at all. A fit that still degenerates is
replaced by majority vote with a warning (:func:`agreement.methods.consensus.api.em_degeneracy`).

This module does not import FiftyOne.

References:
    A. P. Dawid and A. M. Skene, "Maximum Likelihood Estimation of Observer Error-Rates Using the EM
    Algorithm", J. R. Stat. Soc. C 28(1), 20-28, 1979.
    S. Branson, G. Van Horn and P. Perona, "Lean Crowdsourcing: Combining Humans and Machines in an Online
    System", CVPR 2017 (per-worker false-positive and false-negative rates and box noise).
    D. Tschirschwitz et al., "Drawing the same bounding box twice?", GCPR 2023 (matching boxes across
    annotators, then Dawid-Skene on their classes).
    B. Efron and C. Morris, "Data Analysis Using Stein's Estimator and its Generalizations", JASA 70(350),
    311-319, 1975 (shrinking each unit's rate toward the pooled rate, the prior's centre estimated from all
    of them).
    V. C. Raykar et al., "Learning From Crowds", JMLR 11, 1297-1322, 2010 (Beta priors on each annotator's
    sensitivity and specificity).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, cast

import numpy as np
from scipy.sparse import csr_matrix
from scipy.special import expit

from agreement.core.arrays import unique_sorted
from agreement.methods.consensus.fusion import BoxOffsets, Fused, fuse_geometry, fuses_boxes
from agreement.methods.consensus.result import ConsensusModel
from agreement.methods.consensus.scale import (
    BoxPairs,
    member_pairs,
    pair_differences,
    pairwise_scales,
    student_weights,
    tail_index,
)
from agreement.methods.consensus.units import UnitTable

__all__ = ["ConsensusModel", "EMFit", "EMSettings", "DawidSkeneResult", "fit_em", "dawid_skene", "MAX_CONFUSION_VALUES",
           "DS_MAX_ITER", "DS_TOL", "RATE_PRIOR"]

#: Largest ``R · C²`` (raters × classes²) of the per-rater confusion matrices.
MAX_CONFUSION_VALUES = 1 << 25
_EPS = 1e-9          # floor of sensitivities, 1 - sensitivities and rates
_BLOCK = 1 << 22     # member-rows × classes per block of the class E-step
#: Default ``κ``: each rater's sensitivity and false-positive rate have a prior worth this many of its
#: samples, centred on the pooled rates (module docstring, "Sparse crowds").
RATE_PRIOR = 2.0


@dataclass(frozen=True)
class EMFit:
    """Posteriors of every unit and the fitted model.

    ``existence`` (U,), ``top_class``/``top_probability`` and ``second_class``/``second_probability`` (U,;
    ``-1`` and 0 with one class), ``fused`` geometry, ``model``, ``n_iter``, ``converged``.
    """

    existence: np.ndarray
    top_class: np.ndarray
    top_probability: np.ndarray
    second_class: np.ndarray
    second_probability: np.ndarray
    fused: Fused
    model: ConsensusModel
    n_iter: int
    converged: bool


# --------------------------------------------------------------------------
# Dawid-Skene class steps (shared by the joint EM and dawid_skene)
# --------------------------------------------------------------------------


def _check_confusion_size(R: int, C: int) -> None:
    if R * C * C > MAX_CONFUSION_VALUES:
        raise ValueError(
            f"per-rater confusion matrices need R·C² = {R}·{C}² = {R * C * C:,} values, more than "
            f"{MAX_CONFUSION_VALUES:,}: merge rare classes or split the raters before the consensus"
        )


def _class_m_step(counts: np.ndarray, prior_counts: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``(log p_y (C,), log π_r[y, c] transposed to (R, C_obs, C_true))`` from weighted counts ``(R, C, C)``."""
    R, C, _ = counts.shape
    if C == 0:  # no annotation, hence no class: nothing to estimate
        return np.zeros(0), np.zeros((R, 0, 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        prior = (prior_counts + alpha / C) / (prior_counts.sum() + alpha)
        if alpha > 0:
            pooled = counts.sum(axis=0) + alpha * np.eye(C)
            pooled /= pooled.sum(axis=1, keepdims=True)
            conf = (counts + alpha * pooled[None]) / (counts.sum(axis=2, keepdims=True) + alpha)
        else:
            conf = counts / counts.sum(axis=2, keepdims=True)
        conf = np.where(np.isfinite(conf), conf, 1.0 / C)
        prior = np.where(np.isfinite(prior), prior, 1.0 / C)
        return np.log(prior), np.log(conf).transpose(0, 2, 1).copy()


def _blocks(U: int, C: int) -> Iterator[tuple[int, int]]:
    """Unit ranges ``[u0, u1)`` of about :data:`_BLOCK` units × classes."""
    step = max(1, _BLOCK // max(C, 1))
    for u0 in range(0, U, step):
        yield u0, min(U, u0 + step)


def _incidence(units: UnitTable, mr: np.ndarray, mc: np.ndarray, R: int, C: int) -> csr_matrix:
    """``H`` (U × R·C): ``H[u, r·C + c] = 1`` when rater ``r`` said ``c`` in unit ``u`` (fixed for a fit)."""
    U = units.n_units
    return csr_matrix((np.ones(len(mr)), (units.member_unit, mr * C + mc)), shape=(U, R * C))


def _class_block(log_prior: np.ndarray, log_conf_flat: np.ndarray, H: csr_matrix, u0: int,
                 u1: int) -> tuple[np.ndarray, np.ndarray]:
    """Class log-evidence ``log Z`` (b,) and posterior ``T`` (b, C) of units ``u0:u1``.

    ``log_conf_flat`` is ``log π_r[y, c]`` at row ``r·C + c``, column ``y``;
    ``H @ log_conf_flat`` sums the members' log-likelihoods of every class.
    """
    with np.errstate(invalid="ignore"):
        S = np.asarray(H[u0:u1] @ log_conf_flat) + log_prior[None, :]
    top = S.max(axis=1)
    ok = np.isfinite(top)
    E = np.exp(S - np.where(ok, top, 0.0)[:, None])
    z = E.sum(axis=1)
    T = np.where(ok[:, None], E / np.where(ok, z, 1.0)[:, None], 1.0 / S.shape[1])
    return np.where(ok, top + np.log(np.where(ok, z, 1.0)), np.log(_EPS)), T


def _accumulate(counts: np.ndarray, prior_counts: np.ndarray, T: np.ndarray, w: np.ndarray, HT: csr_matrix,
                block: tuple[int, int]) -> None:
    """Adds ``w_u T_u`` of units ``u0:u1`` (``block``) to the prior counts and to ``N_r[y, c]`` of their
    members."""
    u0, u1 = block
    R, C, _ = counts.shape
    counts += np.asarray(HT[:, u0:u1] @ (w[u0:u1, None] * T)).reshape(R, C, C).transpose(0, 2, 1)
    prior_counts += w[u0:u1] @ T


def _top_two(T: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    C = T.shape[1]
    if C == 1:
        n = len(T)
        return np.zeros(n, np.int64), T[:, 0], np.full(n, -1, np.int64), np.zeros(n)
    part = np.argpartition(-T, 1, axis=1)[:, :2]
    vals = np.take_along_axis(T, part, axis=1)
    swap = vals[:, 1] > vals[:, 0]
    part[swap] = part[swap][:, ::-1]
    vals[swap] = vals[swap][:, ::-1]
    return part[:, 0], vals[:, 0], part[:, 1], vals[:, 1]


def _vote_counts(units: UnitTable, mr: np.ndarray, mc: np.ndarray, w: np.ndarray, R: int, C: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of the Dawid-Skene start: ``T_u`` = the vote shares of the unit's members."""
    size = units.size
    mu = units.member_unit
    rep = size[mu]
    i = np.repeat(np.arange(len(mu)), rep)  # member i paired with every member j of its unit
    j = units.starts[mu][i] + (np.arange(len(i)) - np.repeat(np.cumsum(rep) - rep, rep))
    share = (w[mu] / size[mu])[i]
    counts = np.bincount((mr[i] * C + mc[j]) * C + mc[i], weights=share, minlength=R * C * C).reshape(R, C, C)
    prior_counts = np.bincount(mc, weights=(w / size)[mu], minlength=C)
    return counts, prior_counts


# --------------------------------------------------------------------------
# Dawid-Skene on categorical data
# --------------------------------------------------------------------------


#: Dawid–Skene's default iteration limit. Its EM converges linearly and, on sparse crowds of
#: many raters who each label few items, slowly: on simulated crowds of 1,000 raters × 10,000
#: items, 5 raters per item and half of them spammers, the posteriors settled within ``1e-6``
#: only after 5,581 and 8,093 iterations (10 raters per item: 96-1,592), and 32 labels still
#: changed after the largest posterior change had first fallen below ``1e-5``
#: (``experiments/class_consensus_default.py``). Each iteration is a few sparse passes over the
#: ratings (about 2 ms for 50,000 ratings).
DS_MAX_ITER = 20_000
#: Dawid–Skene's default tolerance on the largest absolute change of a posterior ``T_{uy}``.
DS_TOL = 1e-6


@dataclass(frozen=True)
class DawidSkeneResult:
    """``posterior`` (U, C), ``prior`` (C,), ``confusion`` (R, C, C) ``π_r[y, c]``, ``n_iter``, ``converged``,
    and ``max_change``: the largest absolute change of a posterior in the last iteration (the quantity
    compared with ``tol``; ``inf`` after a single iteration)."""

    posterior: np.ndarray
    prior: np.ndarray
    confusion: np.ndarray
    n_iter: int
    converged: bool
    max_change: float = float("nan")


def dawid_skene(labels: np.ndarray, *, n_classes: int | None = None, smoothing: float = 0.0,
                max_iter: int = DS_MAX_ITER, tol: float = DS_TOL) -> DawidSkeneResult:
    r"""Dawid & Skene's EM on categorical labels (the class part of the consensus EM).

    Start from the vote shares ``T``; then repeat the M-step (``p_y`` the
    mean of ``T``; ``π_r[y, c] ∝ \sum_u T_{uy} [r \text{ said } c]``, with
    the smoothing prior of :mod:`agreement.methods.consensus.em` when ``smoothing >
    0``) and the E-step (``T_{uy} ∝ p_y \prod_r π_r[y, c_{ur}]``) until no
    posterior moves by more than ``tol`` between two successive E-steps
    (``max_{u,y} |T^{(n)}_{uy} - T^{(n-1)}_{uy}| <= tol``), or ``max_iter``
    iterations (then ``converged`` is False). The posteriors, not the
    log-likelihood, are compared: on sparse crowds the likelihood is flat
    along ridges where labels still change (a relative log-likelihood change
    of ``1e-10`` was reached while 34 of 10,000 labels had yet to change).

    Args:
        labels: ndarray of int, shape (U, R). Class codes ``0 .. C - 1``; ``-1`` where rater ``r`` did not label item ``u``.
        n_classes: int, optional. ``C``; default ``labels.max() + 1``.
        smoothing: float, default=0. ``α >= 0``; 0 is the textbook algorithm.
        max_iter: int, default=:data:`DS_MAX_ITER` (20,000). Iteration limit (one M-step and one E-step each), ``>= 1``.
        tol: float, default=:data:`DS_TOL` (1e-6). Largest absolute change of a posterior to stop at, ``>= 0``.

    Returns:
        DawidSkeneResult: the posteriors ``T`` (U, C) in ``[0, 1]``, rows summing to 1; the prior ``p``; the
        confusion matrices ``π_r``; the iterations run and whether they converged.

    References:
        A. P. Dawid and A. M. Skene, J. R. Stat. Soc. C 28(1), 20-28, 1979.
    """
    labels = np.asarray(labels)
    if labels.ndim != 2 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be a (U, R) integer array with -1 for missing; got {labels.dtype} {labels.shape}")
    if not (np.isfinite(smoothing) and smoothing >= 0):
        raise ValueError(f"smoothing must be >= 0, got {smoothing!r}")
    U, R = labels.shape
    C = int(labels.max()) + 1 if n_classes is None else int(n_classes)
    if labels.max(initial=-1) >= C:
        raise ValueError(f"labels hold codes >= n_classes = {C}")
    uu, rr = np.nonzero(labels >= 0)
    if len(unique_sorted(uu)) != U:
        raise ValueError("every item needs at least one label")
    _check_confusion_size(R, C)
    if int(max_iter) != max_iter or max_iter < 1 or not tol >= 0:
        raise ValueError(f"max_iter must be an integer >= 1 and tol >= 0, got {max_iter!r} and {tol!r}")
    from agreement.methods.consensus.units import units_from_labels

    units = units_from_labels(uu, np.zeros(len(uu), np.int64), n_units=U)
    mr, mc = rr[units.order], labels[uu, rr].astype(np.int64)[units.order]
    w = np.ones(U)
    counts, prior_counts = _vote_counts(units, mr, mc, w, R, C)
    H = _incidence(units, mr, mc, R, C)
    HT = H.T.tocsr()
    T_top: np.ndarray = np.zeros(U)
    for n_iter in range(1, max_iter + 1):
        log_prior, log_conf_t = _class_m_step(counts, prior_counts, float(smoothing))
        log_conf_flat = log_conf_t.reshape(R * C, C)
        counts, prior_counts = np.zeros((R, C, C)), np.zeros(C)
        post = np.empty((U, C))
        for u0, u1 in _blocks(U, C):
            _, T = _class_block(log_prior, log_conf_flat, H, u0, u1)
            post[u0:u1] = T
            _accumulate(counts, prior_counts, T, w, HT, (u0, u1))
        change = np.abs(post - T_top).max(initial=0.0) if n_iter > 1 else np.inf
        T_top = post
        if change <= tol:
            break
    conf = np.exp(log_conf_t.transpose(0, 2, 1))
    return DawidSkeneResult(post, np.exp(log_prior), conf, n_iter, bool(change <= tol), float(change))


# --------------------------------------------------------------------------
# The joint EM
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Problem:
    """Static arrays of one fit: members in unit order, assignment, sizes."""

    data: Any
    units: UnitTable
    kind: str
    mr: np.ndarray  # (M,) rater of each member
    mc: np.ndarray  # (M,) class code of each member
    A: np.ndarray  # (S, R) float assignment
    n_assigned: np.ndarray  # (R,) samples each rater was assigned
    n_active: int  # samples with at least one assigned rater
    R: int
    C: int
    classes: tuple
    H: csr_matrix  # (U, R·C) unit × (rater, class) incidence
    HT: csr_matrix  # its transpose
    pi: np.ndarray  # member pairs of one unit (positions in unit order)
    pj: np.ndarray
    offsets: BoxOffsets | None  # boxes (and the boxes of masks, polygons) relative to each unit's first
    box_pairs: BoxPairs | None  # the box member pairs' fixed difference terms

    def fuse(self, wt: np.ndarray) -> Fused:
        """The fused geometry with member weights ``wt`` (:func:`agreement.methods.consensus.fusion.fuse_geometry`)."""
        return fuse_geometry(self.kind, self.data, self.units, wt, offsets=self.offsets)

    def pair_differences(self, fused: Fused, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(‖Δ‖², d)`` of the member pairs where ``keep`` (:func:`agreement.methods.consensus.scale.pair_differences`)."""
        if self.box_pairs is not None:
            return self.box_pairs.select(keep).differences(fused)
        return pair_differences(self.kind, self.data, self.units, fused, self.pi[keep], self.pj[keep])


def _problem(data: Any, units: UnitTable, codes: np.ndarray, classes: tuple, kind: str) -> _Problem:
    A = data.assigned.astype(np.float64)
    C = len(classes)
    mr, mc, R = data.rater_index[units.order], codes[units.order], data.num_raters
    H = _incidence(units, mr, mc, R, C)
    pi, pj = member_pairs(units)
    boxes = fuses_boxes(kind)  # the declaration's fusion: masks and polygons fuse their boxes too
    offsets = BoxOffsets.of(data.boxes, units) if boxes else None
    box_pairs = BoxPairs.of(data.boxes, units, pi, pj) if boxes else None
    return _Problem(data=data, units=units, kind=kind, mr=mr, mc=mc, A=A, n_assigned=A.sum(axis=0),
                    n_active=int((A.sum(axis=1) > 0).sum()), R=R, C=C, classes=tuple(classes), H=H, HT=H.T.tocsr(),
                    pi=pi, pj=pj, offsets=offsets, box_pairs=box_pairs)


def _rates(pb: _Problem, w: np.ndarray, se_prev: np.ndarray,
           prior: float) -> tuple[np.ndarray, np.ndarray, float]:
    """M-step of sensitivity (with the unseen-object correction), false-positive rate and object rate,
    each rater's rates shrunk toward the pooled ones by a prior worth ``prior`` (``κ``) samples (module
    docstring). NaN: no object on the rater's samples (``se_r``) or no sample (``λ_r``); such a rater's
    ``se_prev`` is the others' median here, since ``0 · log(1 - NaN)`` would make every ``P_0`` NaN."""
    units, mu = pb.units, pb.units.member_unit
    S = pb.A.shape[0]
    p0 = np.exp(pb.A @ np.log1p(-np.clip(_filled(se_prev, 0.5), _EPS, 1 - _EPS)))
    seen = np.bincount(units.unit_sample, weights=w, minlength=S)
    total = seen / np.maximum(1.0 - p0, _EPS)  # seen and unseen real objects per sample
    drawn, expected = np.bincount(pb.mr, weights=w[mu], minlength=pb.R), pb.A.T @ total
    spurious, n = np.bincount(pb.mr, weights=1.0 - w[mu], minlength=pb.R), pb.n_assigned
    n_all, e_all = max(float(n.sum()), 1.0), float(expected.sum())
    se0 = float(drawn.sum()) / e_all if e_all > 0 else 0.5
    k_se, k_fp = prior * e_all / n_all, prior
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.where(expected > 0, (drawn + k_se * se0) / (expected + k_se), np.nan)
        fp = np.where(n > 0, (spurious + k_fp * float(spurious.sum()) / n_all) / (n + k_fp), np.nan)
    mu_rate = float(total.sum() / max(pb.n_active, 1))
    return se, fp, mu_rate


def _noise(pb: _Problem, w: np.ndarray, fused: Fused, tail: float) -> tuple[np.ndarray, float, np.ndarray]:
    """``σ_r`` (NaN: no pair), the tail index ν and each rater's number of member pairs, from the
    differences between members of likely-real units (:mod:`.scale`); ``tail`` is ν, or NaN to estimate it."""
    keep = w[pb.units.member_unit[pb.pi]] >= 0.5
    ra, rb = pb.mr[pb.pi[keep]], pb.mr[pb.pj[keep]]  # the raters of each kept member pair
    sq, dim = pb.pair_differences(fused, keep)
    sigma = pairwise_scales(sq, dim, ra, rb, pb.R)
    if np.isnan(tail):
        s = _filled(sigma, 1.0)
        tail = tail_index(sq, dim, s[ra] ** 2 + s[rb] ** 2)
    n_pairs = np.bincount(ra, minlength=pb.R) + np.bincount(rb, minlength=pb.R)
    return sigma, tail, n_pairs


def _m_step(pb: _Problem, w: np.ndarray, votes: tuple[np.ndarray, np.ndarray], fused: Fused, se_prev: np.ndarray, *,
            settings: EMSettings, rho: float, nu: float) -> tuple[ConsensusModel, np.ndarray]:
    """Every parameter from the current posteriors (module docstring), and each rater's number of
    member pairs behind its ``σ_r``. ``votes``: the weighted ``(counts, prior_counts)`` of the classes;
    ``rho``: the coincidence rate; ``nu``: the tail index (NaN: estimated here)."""
    counts, prior_counts = votes
    alpha, rate_prior = settings.smoothing, settings.rate_prior
    log_prior, log_conf_t = _class_m_step(counts, prior_counts, alpha)
    se, fp, mu_rate = _rates(pb, w, se_prev, rate_prior)
    sigma, nu, n_pairs = _noise(pb, w, fused, nu)
    return ConsensusModel(
        raters=tuple(pb.data.raters), classes=pb.classes, sensitivity=se, false_positive_rate=fp,
        object_rate=mu_rate, coincidence=float(rho), class_prior=np.exp(log_prior),
        confusion=np.exp(log_conf_t.transpose(0, 2, 1)),
        localisation_noise=sigma, geometry=pb.kind, smoothing=float(alpha), tail=float(nu),
        rate_prior=float(rate_prior),
    ), n_pairs


def _filled(x: np.ndarray, default: float) -> np.ndarray:
    """NaN (no data) replaced by the median of the defined values, or ``default``."""
    ok = np.isfinite(x)
    return np.where(ok, x, float(np.median(x[ok])) if ok.any() else default)


def _weights(pb: _Problem, model: ConsensusModel) -> np.ndarray:
    """Fusion weight ``1 / σ_r^2`` of every member."""
    return np.asarray(1.0 / _filled(model.localisation_noise, 1.0)[pb.mr] ** 2)


def _robust(pb: _Problem, model: ConsensusModel, fused: Fused) -> np.ndarray:
    """Student-t weights of the members from their residuals to ``fused`` (1 for ``ν = ∞``; fuse_geometry sets
    ``sq`` and ``dim`` of every Fused)."""
    return student_weights(cast(np.ndarray, fused.sq), cast(np.ndarray, fused.dim), _filled(model.localisation_noise, 1.0)[pb.mr], model.tail)


def _e_pass(pb: _Problem, model: ConsensusModel) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                                                        np.ndarray, np.ndarray, float]:
    """Existence and class posteriors of every unit, and the weighted counts for the next M-step."""
    units, mu = pb.units, pb.units.member_unit
    U = units.n_units
    se = np.clip(_filled(model.sensitivity, 0.5), _EPS, 1 - _EPS)
    lam = np.maximum(_filled(model.false_positive_rate, 1.0), _EPS)
    lf = np.log(np.maximum(np.einsum("y,ryc->rc", model.class_prior, model.confusion), _EPS))  # log m_r[c]
    l1 = (np.log(max(model.object_rate, _EPS)) + (pb.A @ np.log1p(-se))[units.unit_sample]
          + np.bincount(mu, weights=(np.log(se) - np.log1p(-se))[pb.mr], minlength=U))
    l0 = (np.bincount(mu, weights=np.log(lam)[pb.mr] + lf[pb.mr, pb.mc], minlength=U)
          + (units.size - 1) * np.log(model.coincidence))
    with np.errstate(divide="ignore"):
        log_prior = np.log(model.class_prior)
        log_conf_flat = np.log(model.confusion).transpose(0, 2, 1).reshape(pb.R * pb.C, pb.C)
    w = np.empty(U)
    tops = (np.empty(U, np.int64), np.empty(U), np.empty(U, np.int64), np.empty(U))
    counts, prior_counts = np.zeros((pb.R, pb.C, pb.C)), np.zeros(pb.C)
    loglik = 0.0
    for u0, u1 in _blocks(U, pb.C):
        logz, T = _class_block(log_prior, log_conf_flat, pb.H, u0, u1)
        w[u0:u1] = expit(l1[u0:u1] + logz - l0[u0:u1])
        loglik += float(np.logaddexp(l1[u0:u1] + logz, l0[u0:u1]).sum())
        for out, val in zip(tops, _top_two(T), strict=True):
            out[u0:u1] = val
        _accumulate(counts, prior_counts, T, w, pb.HT, (u0, u1))
    return w, tops, counts, prior_counts, loglik


def _sigma_tolerance(n_pairs: np.ndarray) -> np.ndarray:
    """How far ``log σ_r`` may still move when the EM stops: 0.01 %, or a tenth of its standard
    error ``1 / sqrt(n_r)`` where that is larger (module docstring)."""
    return np.asarray(np.maximum(1e-4, 0.1 / np.sqrt(np.maximum(n_pairs, 1))))


@dataclass(frozen=True)
class EMSettings:
    """The settings of the consensus EM (:func:`fit_em`): the additive ``smoothing`` ``α`` of the class counts,
    at most ``max_iter`` iterations, the tolerance ``tol`` on the log-likelihood gain per unit, the ν of the
    Student-t fusion weights (``tail``; ``inf``: Gaussian; ``None``: chosen from the data,
    :func:`agreement.methods.consensus.scale.tail_index`) and ``rate_prior`` ``κ``, the strength of the prior
    that shrinks each rater's sensitivity and false-positive rate toward the pooled rates, in samples of the
    rater (0: maximum likelihood)."""

    smoothing: float = 1.0
    max_iter: int = 200
    tol: float = 1e-5
    tail: float | None = None
    rate_prior: float = RATE_PRIOR


def fit_em(data: Any, units: UnitTable, codes: np.ndarray, classes: tuple, kind: str, coincidence: float, *,
           settings: EMSettings | None = None, model: ConsensusModel | None = None) -> EMFit:
    """Runs the consensus EM (module docstring) on the units of ``data``.

    Args:
        data: the corpus (:class:`agreement.core.data.MultiRaterAnnotations`).
        units: its units.
        codes: the class code of every annotation.
        classes: the class names of the codes.
        kind: the label kind whose geometry is fused.
        coincidence: ``ρ``, the rate at which spurious annotations coincide into one unit.
        settings: the EM's :class:`EMSettings` (default: its defaults).
        model: fixed parameters (one E-step and the fusion with its ``σ_r``; results for a part of a corpus
            then do not depend on the rest of it); ``codes`` and the raters must be its.

    Returns:
        The :class:`EMFit`: per-unit existence and class posteriors, the fused geometry and the model.
    """
    settings = settings if settings is not None else EMSettings()
    max_iter, tol = settings.max_iter, settings.tol
    tail = float("nan") if settings.tail is None else float(settings.tail)
    pb = _problem(data, units, codes, classes, kind)
    _check_confusion_size(pb.R, pb.C)
    if model is not None:
        w, tops, _, _, _ = _e_pass(pb, model)
        fused = pb.fuse(_weights(pb, model))
        for _ in range(3 if np.isfinite(model.tail) else 0):
            fused = pb.fuse(_weights(pb, model) * _robust(pb, model, fused))
        return EMFit(w, *tops, fused=fused, model=model, n_iter=0, converged=True)
    w = units.size / np.maximum(pb.A.sum(axis=1)[units.unit_sample], 1.0)
    if units.n_units == 0:  # no rater labelled anything: no unit, one M-step gives the (undefined) parameters
        model, _ = _m_step(pb, w, (np.zeros((pb.R, pb.C, pb.C)), np.zeros(pb.C)), pb.fuse(np.ones(0)),
                           np.full(pb.R, 0.5), settings=settings, rho=coincidence, nu=tail)
        w, tops, _, _, _ = _e_pass(pb, model)
        return EMFit(w, *tops, fused=pb.fuse(np.ones(0)), model=model, n_iter=0, converged=True)
    counts, prior_counts = _vote_counts(units, pb.mr, pb.mc, w, pb.R, pb.C)
    robust = np.ones(len(units.order))
    fused = pb.fuse(robust)
    se = np.full(pb.R, 0.5)
    log_sigma, loglik = np.zeros(pb.R), -np.inf
    converged = False
    for n_iter in range(1, max_iter + 1):
        model, n_pairs = _m_step(pb, w, (counts, prior_counts), fused, se, settings=settings, rho=coincidence, nu=tail)
        se = model.sensitivity
        w_new, tops, counts, prior_counts, ll = _e_pass(pb, model)
        robust = _robust(pb, model, fused)
        fused = pb.fuse(_weights(pb, model) * robust)
        ls = np.log(_filled(model.localisation_noise, 1.0))
        settled = bool(np.all(np.abs(ls - log_sigma) <= _sigma_tolerance(n_pairs)))
        gain = abs(ll - loglik) / max(units.n_units, 1)
        w, log_sigma, loglik = w_new, ls, ll
        if n_iter > 1 and settled and gain <= tol:
            converged = True
            break
    return EMFit(w, *tops, fused=fused, model=cast(ConsensusModel, model), n_iter=n_iter, converged=converged)  # max_iter >= 1
