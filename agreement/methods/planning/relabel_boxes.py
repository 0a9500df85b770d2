r"""Which samples of an instance consensus (boxes, masks, polygons, ...) need one more rater.

The rule ``"expected_error_reduction"`` (:func:`box_relabel_priority`) asks of every sample: by how many would
the **expected number of errors of its consensus** fall if one more rater of the crowd's *typical* reliability
labelled it? It uses the consensus EM's own model (:mod:`agreement.methods.consensus.em`): real objects and
spurious labels are two Poisson processes per sample; a rater draws a real object with probability ``r``
(sensitivity), adds spurious labels at ``λ`` per sample, each landing on a given spot (matching a given unit at
the run's ``τ``) with probability ``ρ`` (the coincidence rate), and names a drawn object's class right with
probability ``a``. The typical rater (:class:`TypicalRater`) has the crowd's mean ``r``, ``λ`` and ``a``, each
rater weighted by the samples it labelled. Three sources of error, per sample ``s`` with its units ``u``:

* **Existence of a unit** (a candidate object the raters drew). With ``p`` its existence posterior and ``t`` the
  run's keep threshold (``min_confidence``), the consensus errs now with ``e_0 = 1 − p`` if kept (``p ≥ t``), ``p``
  if dropped. ``m`` more raters say "yes" (draw a label in the unit) ``k`` times with likelihood
  ``B(k; m, r)`` if real and ``B(k; m, f)`` if spurious, ``f = 1 − e^{−λρ}`` (one of their spurious labels
  lands there); the posterior is ``q_k = p B(k; m, r) / P(k)``, ``P(k) = p B(k; m, r) + (1 − p) B(k; m, f)``, and
  the expected error after is ``e_m = Σ_k P(k) err(q_k) = Σ_k [q_k ≥ t] (1 − p) B(k; m, f) + [q_k < t] p B(k; m, r)``.
* **Objects nobody drew** (coverage). The real objects missed by all ``n_s`` raters of the sample are Poisson with
  mean ``u_s = μ P_{0s}``, ``P_{0s} = Π_{r ∈ A_s} (1 − se_r)`` (``μ`` the object rate; Poisson thinning makes them
  independent of the objects seen): every one is a missed object of the consensus now. ``m`` new raters find one
  of them ``j`` times with probability ``B(j; m, r)``, and add spurious units of ``j`` members at
  ``C(m, j) λ^j ρ^{j−1}``; a new unit of ``j`` members is real with probability
  ``q_j = real_j / (real_j + spur_j)``, ``real_j = u_s B(j; m, r)``, and is kept when ``q_j ≥ t``. Errors after:
  ``Σ_j ([q_j ≥ t] spur_j + [q_j < t] real_j) + u_s (1 − r)^m``. A sample with no rater has ``P_0 = 1``
  (``u_s = μ``), one with one rater ``1 − se``: coverage and quality on one scale, as ActiveLab weighs them.
* **Class of a kept unit.** With the class posterior's top two values ``p_1 ≥ p_2`` and the rest shared evenly by
  the other ``K − 2`` classes (``p_3`` each), a typical rater who draws the unit (probability ``r``) names the
  true class with probability ``a`` and any other with ``b = (1 − a)/(K − 1)``; one such label lowers the class
  error ``1 − p_1`` by ``g = p_1 a + max(p_2 a, p_1 b) + (K − 2) max(p_3 a, p_1 b) − p_1 ≥ 0`` (Roy & McCallum's
  one-step rule on the symmetric confusion), weighted by ``p r`` for a kept unit. Only the one-step value is
  counted for every ``m`` (a lower bound of what more labels give).

Per sample, ``E_0`` (``error_now``) is the sum of the units' ``e_0``, ``u_s`` and the kept units' ``p (1 − p_1)``;
``E_m`` the same after ``m`` more raters; ``error_after`` is ``E_1``. Like the class rule
(:mod:`agreement.methods.planning.relabel`), the one-step value is myopic (a unit two more votes would settle may
gain nothing from one), so the priority is the best reduction **per rater** over a short look-ahead
(the KG(*) correction, Frazier & Powell 2010): ``priority = max_{m ≤ M} (E_0 − E_m) / m``, clipped at 0
(a keep threshold other than 0.5 is not the Bayes decision, and information can then raise the expected
errors of the thresholded decision). Units: **expected consensus errors (missed, spurious or misclassified
objects) per extra rater-sample**; ``error_now`` and ``error_after`` are expected error *counts* (``≥ 0``, not
bounded by 1 as the class rule's probabilities are).

The simple rules of the class rule are offered on the same scale of ``error_now``/``error_after``:
``"lowest_agreement"`` (``max(a) − a`` of a per-sample agreement; samples with fewer than two raters first),
``"fewest_raters"`` (``1 / (1 + n)``) and ``"random"`` (seeded).

References:
    N. Roy and A. McCallum, "Toward Optimal Active Learning through Sampling Estimation of Error Reduction",
    ICML 2001. V. S. Sheng, F. Provost and P. G. Ipeirotis, "Get Another Label?", KDD 2008. S. Branson,
    G. Van Horn and P. Perona, "Lean Crowdsourcing", CVPR 2017 (per-worker box model, online requests for more
    workers where the risk is high). P. I. Frazier and W. B. Powell, Decision Analysis 7(4), 2010 (KG(*)).
    H. W. Goh and J. Mueller, "ActiveLab", arXiv:2301.11856, 2023.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np

from agreement.methods.planning.priority import RelabelPriority, rank_items, simple_priority

__all__ = ["BOX_RELABEL_RULES", "LOOKAHEAD", "TypicalRater", "BoxUnits", "box_relabel_priority",
           "vote_posterior", "typical_rater", "consensus_box_units", "sample_agreement", "consensus_box_relabel"]

#: The rules :func:`box_relabel_priority` accepts; the first is the default (the names of the class rule's).
BOX_RELABEL_RULES = ("expected_error_reduction", "lowest_agreement", "fewest_raters", "random")
#: The default look-ahead ``M`` (more raters per sample considered; the priority is the best value per rater).
LOOKAHEAD = 3
_EPS = 1e-9


@dataclass(frozen=True)
class TypicalRater:
    """The crowd's typical rater and the object model (module docstring).

    Attributes:
        recall: ``r`` in ``[0, 1]``, the probability of drawing a real object.
        false_positive_rate: ``λ >= 0``, spurious labels per sample.
        coincidence: ``ρ`` in ``(0, 1)``, the chance that a label matches an unrelated unit.
        object_rate: ``μ >= 0``, real objects per sample (seen or not).
        class_accuracy: ``a`` in ``[0, 1]``, the probability of naming a drawn object's true class.
        n_classes: ``K >= 1``.
    """

    recall: float
    false_positive_rate: float
    coincidence: float
    object_rate: float
    class_accuracy: float = 1.0
    n_classes: int = 1

    def __post_init__(self) -> None:
        checks = (("recall", self.recall, 0.0, 1.0), ("coincidence", self.coincidence, 0.0, 1.0),
                  ("class_accuracy", self.class_accuracy, 0.0, 1.0),
                  ("false_positive_rate", self.false_positive_rate, 0.0, np.inf),
                  ("object_rate", self.object_rate, 0.0, np.inf))
        for name, v, lo, hi in checks:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) or not (
                    np.isfinite(v) and lo <= v <= hi):
                raise ValueError(f"the typical rater's {name} must be a finite number in [{lo}, {hi}], got {v!r}")
        if int(self.n_classes) != self.n_classes or self.n_classes < 1:
            raise ValueError(f"n_classes must be a whole number >= 1, got {self.n_classes!r}")

    @property
    def false_unit_rate(self) -> float:
        """``f = 1 − exp(−λρ)``: the chance that the rater's spurious labels put one on a given spurious unit."""
        return float(-np.expm1(-self.false_positive_rate * self.coincidence))


@dataclass(frozen=True)
class BoxUnits:
    """The units of an instance consensus, flat (``U`` units, ``S`` samples).

    Attributes:
        unit_sample: ``(U,)`` int, the sample of each unit, in ``0 .. S - 1``.
        existence: ``(U,)`` the existence posterior ``p`` of each unit, in ``[0, 1]``.
        class_probability: ``(U,)`` ``p_1``, the top class posterior.
        second_probability: ``(U,)`` ``p_2 <= p_1`` (0 with one class).
        missed: ``(S,)`` ``P_0``, the probability that every current rater of the sample missed a real object
            (1 for a sample without raters).
        n_ratings: ``(S,)`` int, the raters assigned to each sample.
    """

    unit_sample: np.ndarray
    existence: np.ndarray
    class_probability: np.ndarray
    second_probability: np.ndarray
    missed: np.ndarray
    n_ratings: np.ndarray

    @property
    def n_samples(self) -> int:
        """``S``."""
        return int(np.asarray(self.n_ratings).size)


def _checked(units: BoxUnits) -> tuple[np.ndarray, ...]:
    """The arrays of ``units`` as float/int arrays; ``ValueError`` naming the first bad value."""
    us = np.asarray(units.unit_sample, dtype=np.int64)
    n = np.asarray(units.n_ratings, dtype=np.int64)
    S = n.size
    arrays = {k: np.asarray(getattr(units, k), dtype=np.float64)
              for k in ("existence", "class_probability", "second_probability")}
    if n.ndim != 1 or (n < 0).any():
        raise ValueError("n_ratings must be a 1-D array of counts >= 0")
    if us.ndim != 1 or (us.size and (us.min() < 0 or us.max() >= S)):
        raise ValueError(f"unit_sample must hold sample indices in 0 .. {S - 1}")
    for name, a in arrays.items():
        if a.shape != us.shape:
            raise ValueError(f"{name} must have one value per unit ({us.size}), got shape {a.shape}")
        bad = ~((a >= -1e-9) & (a <= 1 + 1e-9))
        if bad.any():
            u = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name} of unit {u} (sample {int(us[u])}) is {a[u]!r}, not a probability in [0, 1]")
    if (arrays["second_probability"] > arrays["class_probability"] + 1e-9).any():
        raise ValueError("second_probability must not exceed class_probability")
    missed = np.asarray(units.missed, dtype=np.float64)
    if missed.shape != n.shape or not ((missed >= 0) & (missed <= 1)).all():
        raise ValueError(f"missed must hold one probability in [0, 1] per sample ({S}), got shape {missed.shape}")
    p, c1, c2 = (np.clip(arrays[k], 0.0, 1.0) for k in ("existence", "class_probability", "second_probability"))
    return us, p, c1, c2, missed, n


def _binom(m: int, k: int, x: float | np.ndarray) -> Any:
    return comb(m, k) * np.power(x, k) * np.power(1.0 - x, m - k)


def _existence_errors(p: np.ndarray, rater: TypicalRater, m: int, t: float) -> np.ndarray:
    """``(U,)`` expected existence errors of the thresholded decision after ``m`` more typical raters."""
    if m == 0:
        return np.where(p >= t, 1.0 - p, p)
    r, f = rater.recall, rater.false_unit_rate
    out = np.zeros_like(p)
    for k in range(m + 1):
        real, spur = p * _binom(m, k, r), (1.0 - p) * _binom(m, k, f)
        keep = real * (1.0 - t) >= t * spur  # q_k >= t without dividing by P(k)
        out += np.where(keep, spur, real)
    return out


def _coverage_errors(unseen: np.ndarray, rater: TypicalRater, m: int, t: float) -> np.ndarray:
    """``(S,)`` expected missed (and new spurious) objects after ``m`` more raters; ``unseen`` = ``μ P_0``."""
    if m == 0:
        return np.array(unseen, dtype=np.float64)
    r, lam, rho = rater.recall, rater.false_positive_rate, rater.coincidence
    out = unseen * (1.0 - r) ** m
    for j in range(1, m + 1):
        real = unseen * _binom(m, j, r)
        spur = comb(m, j) * lam ** j * rho ** (j - 1)
        out = out + np.where(real * (1.0 - t) >= t * spur, spur, real)
    return np.asarray(out, dtype=np.float64)


def _class_gain(c1: np.ndarray, c2: np.ndarray, rater: TypicalRater) -> np.ndarray:
    """``(U,)`` the one-step fall of the class error ``1 − p_1`` from one typical label (module docstring)."""
    K, a = int(rater.n_classes), rater.class_accuracy
    if K < 2:
        return np.zeros_like(c1)
    b = (1.0 - a) / (K - 1)
    if K == 2:
        c2 = 1.0 - c1
        gain = c1 * a + np.maximum(c2 * a, c1 * b) - c1
    else:
        c3 = np.maximum(1.0 - c1 - c2, 0.0) / (K - 2)
        gain = c1 * a + np.maximum(c2 * a, c1 * b) + (K - 2) * np.maximum(c3 * a, c1 * b) - c1
    return np.asarray(np.maximum(gain, 0.0), dtype=np.float64)


def vote_posterior(support: np.ndarray, n_assigned: np.ndarray, rater: TypicalRater) -> np.ndarray:
    r"""The existence posterior of units drawn by ``support`` of their sample's ``n_assigned`` typical raters.

    The consensus EM's existence odds (:mod:`agreement.methods.consensus.em`) with every rater typical and the
    class terms left out: ``odds = μ (1 − r)^{n − k} r^k / (λ^k ρ^{k − 1})``; ``σ(log odds)`` in ``[0, 1]``.
    Stands in for a posterior the run did not give (a majority vote or WBF run, a sample whose raters meet
    nobody).
    """
    k = np.asarray(support, dtype=np.float64)
    n = np.maximum(np.asarray(n_assigned, dtype=np.float64), k)
    r = float(np.clip(rater.recall, _EPS, 1 - _EPS))
    lam, rho = max(rater.false_positive_rate, _EPS), float(np.clip(rater.coincidence, _EPS, 1 - _EPS))
    logit = (np.log(max(rater.object_rate, _EPS)) + (n - k) * np.log1p(-r) + k * np.log(r)
             - k * np.log(lam) - np.maximum(k - 1, 0) * np.log(rho))
    out: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(logit, -700, 700)))
    return out


def box_relabel_priority(units: BoxUnits, rater: TypicalRater, *, threshold: float = 0.5,
                         rule: str = "expected_error_reduction", agreement: np.ndarray | None = None, seed: int = 0,
                         lookahead: int = LOOKAHEAD) -> RelabelPriority:
    """The value of one more rater for every sample of an instance consensus (module docstring: the formulas).

    Args:
        units: the consensus' units and the samples' raters (:class:`BoxUnits`).
        rater: the typical rater and object model (:class:`TypicalRater`).
        threshold: ``t`` in ``(0, 1]``, the run's keep threshold on the existence posterior.
        rule: one of :data:`BOX_RELABEL_RULES`.
        agreement: ``(S,)`` per-sample agreement (NaN: fewer than two raters), for ``"lowest_agreement"``.
        seed: the seed of ``"random"``.
        lookahead: ``M >= 1``, the most extra raters per sample considered (1: the one-step rule).

    Returns:
        A :class:`~agreement.methods.planning.priority.RelabelPriority` over the ``S`` samples: ``priority >= 0``
        (``"expected_error_reduction"``: expected consensus errors removed per extra rater), ``error_now`` and
        ``error_after`` (one more typical rater) as expected error counts ``>= 0`` whatever the rule, ``order``
        by :func:`~agreement.methods.planning.priority.rank_items`.

    Raises:
        ValueError: an unknown rule, a bad threshold or look-ahead, arrays that do not fit or are not
            probabilities, a missing ``agreement``.
    """
    if rule not in BOX_RELABEL_RULES:
        raise ValueError(f"rule must be one of {BOX_RELABEL_RULES}, got {rule!r}")
    if isinstance(lookahead, bool) or int(lookahead) != lookahead or lookahead < 1:
        raise ValueError(f"lookahead must be a whole number >= 1, got {lookahead!r}")
    if isinstance(threshold, bool) or not (0.0 < float(threshold) <= 1.0):
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    t = float(threshold)
    us, p, c1, c2, missed, n = _checked(units)
    S = n.size
    kept = p >= t
    unseen = rater.object_rate * missed
    class_now = np.where(kept, p * (1.0 - c1), 0.0)
    class_gain = np.where(kept, p * rater.recall * _class_gain(c1, c2, rater), 0.0)

    def errors(m: int) -> np.ndarray:
        per_unit = _existence_errors(p, rater, m, t) + class_now - (class_gain if m else 0.0)
        total = np.bincount(us, weights=per_unit, minlength=S) + _coverage_errors(unseen, rater, m, t)
        return np.asarray(total, dtype=np.float64)

    e0, e1 = errors(0), errors(1)
    notes = [f"typical rater: recall {rater.recall:.3f}, {rater.false_positive_rate:.3f} spurious labels per sample, "
             f"class accuracy {rater.class_accuracy:.3f}; {rater.object_rate:.3f} objects per sample, "
             f"coincidence {rater.coincidence:.4f}"]
    if rule == "expected_error_reduction":
        prio = e0 - e1
        for m in range(2, int(lookahead) + 1):
            prio = np.maximum(prio, (e0 - errors(m)) / m)
        notes.append(f"priority = best expected reduction of consensus errors per extra rater over 1 .. "
                     f"{int(lookahead)} more rater(s)")
    else:
        prio, note = simple_priority(rule, n, agreement, seed=seed, unit="sample")
        notes.append(note)
    prio = np.asarray(prio, dtype=np.float64)
    prio = np.where(prio > 1e-12, prio, 0.0)
    return RelabelPriority(rule=rule, priority=prio, error_now=np.maximum(e0, 0.0), error_after=np.maximum(e1, 0.0),
                           n_ratings=n, order=rank_items(prio, n), notes=tuple(notes))


def _weighted_mean(x: np.ndarray, w: np.ndarray, default: float) -> float:
    ok = np.isfinite(x) & (w > 0)
    return float(np.average(x[ok], weights=w[ok])) if ok.any() else default


def typical_rater(result: Any, data: Any) -> TypicalRater:
    """The typical rater of a consensus ``result`` of the corpus ``data``: the raters' mean sensitivity,
    false-positive rate and class accuracy ``Σ_y p_y π_r[y, y]``, weighted by the samples each was assigned; the
    EM's object rate and coincidence (other methods: consensus labels per rated sample over ``1 − (1 − r)^{n̄}``,
    and the share of coincident pairs :func:`agreement.methods.consensus.units.estimate_coincidence`)."""
    from agreement.methods.consensus.units import estimate_coincidence

    A = np.asarray(data.assigned, dtype=bool)
    w = A.sum(axis=0).astype(np.float64)
    model = result.model
    se = np.asarray(model.sensitivity if model is not None else result.report.sensitivity, dtype=np.float64)
    fp = np.asarray(model.false_positive_rate if model is not None else result.report.false_positive_rate,
                    dtype=np.float64)
    r = float(np.clip(_weighted_mean(se, w, 0.5), 0.0, 1.0))
    lam = max(_weighted_mean(fp, w, 0.0), 0.0)
    conf = np.asarray(model.confusion if model is not None else result.report.confusion, dtype=np.float64)
    K = max(len(result.classes), 1)
    prior = np.asarray(model.class_prior, dtype=np.float64) if model is not None else np.full(K, 1.0 / K)
    acc = (np.einsum("y,ryy->r", prior, np.nan_to_num(conf, nan=1.0 / K)) if conf.size else np.ones(len(w)))
    a = float(np.clip(_weighted_mean(acc, w, 1.0), 0.0, 1.0))
    if model is not None:
        rho, mu = float(model.coincidence), float(model.object_rate)
    else:
        rho = estimate_coincidence(data, result.geometry, float(result.params["tau"]))
        rated = A.any(axis=1)
        n_bar = float(A.sum(axis=1)[rated].mean()) if rated.any() else 1.0
        seen = result.n_consensus / max(int(rated.sum()), 1)
        mu = seen / max(1.0 - (1.0 - r) ** n_bar, _EPS)
    return TypicalRater(recall=r, false_positive_rate=lam, coincidence=float(np.clip(rho, _EPS, 1 - _EPS)),
                        object_rate=max(mu, 0.0), class_accuracy=a, n_classes=K)


def consensus_box_units(result: Any, data: Any, rater: TypicalRater) -> tuple[BoxUnits, tuple[str, ...]]:
    """The :class:`BoxUnits` of a consensus ``result`` (:class:`~agreement.methods.consensus.ConsensusResult`) of
    the corpus ``data`` and the notes of what stood in: the EM's existence posteriors (a majority vote or WBF run,
    or a unit without one, e.g. on a sample whose raters meet nobody: :func:`vote_posterior`), the class
    posteriors, ``P_0`` from the raters' fitted sensitivities (NaN: the typical recall)."""
    A = np.asarray(data.assigned, dtype=bool)
    n = A.sum(axis=1).astype(np.int64)
    se_src = result.model.sensitivity if result.model is not None else result.report.sensitivity
    se = np.asarray(se_src, dtype=np.float64)
    se = np.clip(np.where(np.isfinite(se), se, rater.recall), 0.0, 1.0 - _EPS)
    missed = np.exp(A.astype(np.float64) @ np.log1p(-se))
    voted = vote_posterior(result.support, result.n_assigned, rater)
    notes: list[str] = []
    if result.method == "em":
        conf = np.asarray(result.confidence, dtype=np.float64)
        gap = ~np.isfinite(conf)
        existence = np.where(gap, voted, conf)
        if gap.any():
            notes.append(f"{int(gap.sum())} unit(s) without an existence posterior (raters who meet nobody): the "
                         "typical rater's vote posterior stood in")
    else:
        existence = voted
        notes.append(f"a {result.method} run has no existence posteriors: the typical rater's vote posterior "
                     "of each unit's support stood in")
    c1 = np.nan_to_num(np.asarray(result.class_probability, dtype=np.float64), nan=1.0)
    c2 = np.minimum(np.nan_to_num(np.asarray(result.second_probability, dtype=np.float64), nan=0.0), c1)
    units = BoxUnits(unit_sample=np.asarray(result.unit_sample, dtype=np.int64), existence=np.clip(existence, 0, 1),
                     class_probability=np.clip(c1, 0, 1), second_probability=np.clip(c2, 0, 1), missed=missed,
                     n_ratings=n)
    return units, tuple(notes)


def sample_agreement(result: Any, data: Any) -> np.ndarray:
    """``(S,)`` per sample, the share of its raters' labels that agree with the consensus (same kept unit, same
    class); 1 for a sample of two raters or more without any label, NaN for fewer than two raters."""
    S = data.num_samples
    n = np.asarray(data.assigned, dtype=bool).sum(axis=1)
    s_idx = np.asarray(data.sample_index, dtype=np.int64)
    labels = np.bincount(s_idx, minlength=S).astype(np.float64)
    agree = np.bincount(s_idx, weights=np.asarray(result.row_agrees, dtype=np.float64), minlength=S)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(labels > 0, agree / np.maximum(labels, 1.0), 1.0)
    return np.where(n >= 2, share, np.nan)


def consensus_box_relabel(result: Any, data: Any, *, rule: str = "expected_error_reduction", seed: int = 0,
                          lookahead: int = LOOKAHEAD) -> RelabelPriority:
    """:func:`box_relabel_priority` of a consensus ``result`` of the corpus ``data``
    (:func:`agreement.methods.consensus.consensus`), with its typical rater (:func:`typical_rater`), units
    (:func:`consensus_box_units`), keep threshold (the EM's ``min_confidence``; 0.5 for the vote posteriors of
    other methods) and per-sample agreement (:func:`sample_agreement`)."""
    rater = typical_rater(result, data)
    units, notes = consensus_box_units(result, data, rater)
    t = float(result.params["min_confidence"]) if result.method == "em" else 0.5
    out = box_relabel_priority(units, rater, threshold=t, rule=rule, seed=seed, lookahead=lookahead,
                               agreement=sample_agreement(result, data) if rule == "lowest_agreement" else None)
    if not notes:
        return out
    return RelabelPriority(rule=out.rule, priority=out.priority, error_now=out.error_now, error_after=out.error_after,
                           n_ratings=out.n_ratings, order=out.order, notes=out.notes + notes)
