r"""Which items need one more class label: the expected error reduction of one more rater, and simple baselines.

The main rule, ``"expected_error_reduction"`` (:func:`class_relabel_priority`), asks of every item: by how much
would one more label, from a rater of the crowd's *typical* reliability, lower the probability that the item's
consensus class is wrong? The typical rater is the weighted mean confusion matrix of the crowd
(:func:`typical_confusion`, ``π̄[y, c] = Σ_r w_r π_r[y, c] / Σ_r w_r``, ``w_r`` e.g. the labels rater ``r`` gave).
With ``p`` the item's consensus posterior (the class prior for an item nobody labelled):

* the consensus is wrong now with probability ``e_0 = 1 − max_y p(y)``, or, given the consensus label ``ŷ``
  actually written (``labels=``), ``e_0 = 1 − p(ŷ)``: the error of the decision made, not of the posterior's;
* the next label says ``c`` with probability ``P(c) = Σ_y p(y) π̄[y, c]``, after which the posterior is
  ``p'(y | c) = p(y) π̄[y, c] / P(c)``;
* the expected error after it is ``e_1 = Σ_c P(c) (1 − max_y p'(y | c)) = 1 − Σ_c max_y p(y) π̄[y, c]``;
* the one-step value ``e_0 − e_1 = Σ_c max_y p(y) π̄[y, c] − max_y p(y) ≥ 0`` (expected error reduction,
  Roy & McCallum 2001; for repeated labelling, Sheng, Provost & Ipeirotis 2008).

The one-step value is *myopic*: it is 0 whenever no single label can change the consensus class (a 2-to-1 item
whose posterior is above the typical rater's accuracy, say), although two labels could. The priority is therefore
the best value *per label* over a short look-ahead of ``m = 1 .. M`` more labels (the KG(*) correction of the
knowledge gradient, Frazier & Powell 2010)::

    e_m = 1 − Σ_{n ∈ N_m} max_y p(y) Mult(n; m, π̄[y])          (N_m: the count vectors of m labels over K classes)
    priority = max_{m ≤ M} (e_0 − e_m) / m                    (≥ 0, ≤ e_0; e_0 ≤ 1 − 1/K without labels=)

``M`` is :data:`LOOKAHEAD` (lowered for many classes so that ``|N_M| ≤`` :data:`MAX_OUTCOMES`); ``lookahead=1``
gives the plain one-step rule. An unlabelled item gets the same formula on the class prior, so coverage and
quality compete on one scale (an unlabelled item of a skewed prior is often wrong by ``1 − max prior``, and one
label may already repair much of that), as ActiveLab (Goh & Mueller 2023) weighs them.

Which posterior: a consensus fitted on a few labels per rater over-trusts raters it met a handful of times. Given
the ratings (``codes=``), the rule recomputes each rated item's posterior with every rater's confusion shrunk
toward the typical rater by :data:`SHRINKAGE` pseudo-labels (:func:`rater_posterior`); on the AdultContent3 replay
(``experiments/relabel_replay.py``, docs/relabel.md) this and the look-ahead each raised the accuracy reached for
a budget, and ``κ = 16`` predicted held-out judgements best. With ``fit_prior=True`` the class prior of that
posterior is fitted to the ratings under the same model (:func:`fit_class_prior`: the class-prior step of
Dawid & Skene's EM with the shrunk raters held fixed, add-one) instead of the consensus's (MACE's is uniform).

Baselines on the same code path (their ``error_now`` / ``error_after`` are the one-step estimates above, so a
caller can show the expected errors whatever the rule): ``"lowest_agreement"`` (``priority = max(a) − a`` of the
per-item agreement ``a``; items with fewer than two ratings, NaN agreement, above all others),
``"fewest_raters"`` (``priority = 1 / (1 + n_ratings)``) and ``"random"`` (uniform priorities from ``seed``).

References:
    N. Roy and A. McCallum, "Toward Optimal Active Learning through Sampling Estimation of Error Reduction",
    ICML 2001. V. S. Sheng, F. Provost and P. G. Ipeirotis, "Get Another Label? Improving Data Quality and Data
    Mining Using Multiple, Noisy Labelers", KDD 2008. P. I. Frazier and W. B. Powell, "Paradoxes in Learning and
    the Marginal Value of Information", Decision Analysis 7(4), 2010. H. W. Goh and J. Mueller, "ActiveLab:
    Active Learning with Re-Labeling by Multiple Annotators", arXiv:2301.11856, 2023. S. Paun, B. Carpenter,
    J. Chamberlain, D. Hovy, U. Kruschwitz and M. Poesio, "Comparing Bayesian Models of Annotation", TACL 6, 2018.

This module does not import FiftyOne.
"""

from __future__ import annotations

from itertools import combinations_with_replacement
from math import comb, factorial

import numpy as np

from agreement.methods.planning.priority import RelabelPriority, rank_items, simple_priority

__all__ = ["RELABEL_RULES", "LOOKAHEAD", "MAX_OUTCOMES", "SHRINKAGE", "class_relabel_priority", "expected_errors",
           "fit_class_prior", "rater_posterior", "typical_confusion"]

#: The rule names :func:`class_relabel_priority` accepts; the first is the default.
RELABEL_RULES = ("expected_error_reduction", "lowest_agreement", "fewest_raters", "random")
#: The default look-ahead ``M``: the priority is the best error reduction per label over 1 .. M more labels.
LOOKAHEAD = 3
#: The most label outcomes (count vectors of ``m`` labels over ``K`` classes) the look-ahead enumerates.
MAX_OUTCOMES = 2_000
#: Pseudo-labels of the typical rater in each rater's shrunk confusion (:func:`rater_posterior`).
SHRINKAGE = 16.0
_TOL = 1e-6


def _outcomes(m: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Every count vector of ``m`` labels over ``K`` classes ``(N, K)`` and its multinomial coefficient ``(N,)``."""
    counts = np.zeros((comb(m + K - 1, K - 1), K), dtype=np.int64)
    for i, combo in enumerate(combinations_with_replacement(range(K), m)):
        np.add.at(counts[i], list(combo), 1)
    coef = np.array([factorial(m) / np.prod([factorial(int(n)) for n in row]) for row in counts])
    return counts, coef


def _horizon(lookahead: int, K: int) -> int:
    """The look-ahead actually used: at most ``lookahead``, with at most :data:`MAX_OUTCOMES` outcomes."""
    m = 1
    while m < lookahead and comb(m + K, K - 1) <= MAX_OUTCOMES:
        m += 1
    return m


def expected_errors(p: np.ndarray, confusion: np.ndarray, m: int) -> np.ndarray:
    r"""The expected probability that the consensus is wrong after ``m`` more labels of a rater ``confusion``.

    ``e_m = 1 − Σ_n max_y p(y) Mult(n; m, π[y])`` over the count vectors ``n`` of ``m`` labels (the Bayes
    decision after seeing them); ``e_0 = 1 − max_y p(y)``. Non-increasing in ``m``.

    Args:
        p: ``(S, K)`` posteriors (rows summing to 1).
        confusion: ``(K, K)`` ``π[y, c] = P(says c | true y)``, rows summing to 1.
        m: labels to come, ``>= 0``.

    Returns:
        ``(S,)`` in ``[0, 1 − 1/K]``.
    """
    if m == 0:
        return np.asarray(1.0 - p.max(axis=1))
    counts, coef = _outcomes(m, p.shape[1])
    like = coef[:, None] * np.prod(confusion[None, :, :] ** counts[:, None, :], axis=2)  # (N, K_y)
    out = np.empty(p.shape[0])
    step = max(1, 4_000_000 // max(1, like.size))
    for a in range(0, p.shape[0], step):
        out[a:a + step] = (p[a:a + step, None, :] * like[None, :, :]).max(axis=2).sum(axis=1)
    return np.asarray(np.clip(1.0 - out, 0.0, 1.0))


def typical_confusion(rater_confusion: np.ndarray, *, rater_weights: np.ndarray | None = None
                      ) -> tuple[np.ndarray, tuple[str, ...]]:
    r"""The crowd's typical rater: ``π̄[y] = Σ_r w_r π_r[y] / Σ_r w_r`` over the raters whose row ``y`` is known.

    Args:
        rater_confusion: ``(R, K, K)`` rows summing to 1, NaN rows for a class the rater never met.
        rater_weights: ``(R,)`` non-negative weights (e.g. labels per rater); None: equal.

    Returns:
        ``(π̄ (K, K), notes)``; a class no weighted rater met gets a uniform row (an uninformative rater), noted.

    Raises:
        ValueError: shapes, values outside ``[0, 1]``, rows not summing to 1, or bad weights.
    """
    conf = np.asarray(rater_confusion, dtype=np.float64)
    if conf.ndim != 3 or conf.shape[1] != conf.shape[2]:
        raise ValueError(f"rater_confusion must be (raters, K, K), got shape {conf.shape}")
    R, K, _ = conf.shape
    w = np.ones(R) if rater_weights is None else np.asarray(rater_weights, dtype=np.float64)
    if w.shape != (R,):
        raise ValueError(f"rater_weights must have one weight per rater ({R}), got shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        bad = int(np.flatnonzero(~np.isfinite(w) | (w < 0))[0])
        raise ValueError(f"rater_weights must be finite and >= 0; rater {bad} has {w[bad]!r}")
    known = np.isfinite(conf).all(axis=2)  # (R, K)
    part = np.isnan(conf).any(axis=2) & ~np.isnan(conf).all(axis=2)
    if part.any() or np.isinf(conf).any():
        r, y = np.argwhere(part | np.isinf(conf).any(axis=2))[0]
        raise ValueError(f"rater_confusion: rater {r}, true class {y} has a row {conf[r, y].tolist()} that is "
                         "partly NaN or infinite; a row is either all known or all NaN (class never met)")
    rows = conf[known]
    if rows.size and ((rows < -_TOL).any() or (rows > 1 + _TOL).any()
                      or (np.abs(rows.sum(axis=1) - 1.0) > 1e-4).any()):
        r, y = np.argwhere(known & ((np.abs(np.nan_to_num(conf).sum(axis=2) - 1) > 1e-4)
                                    | (np.nan_to_num(conf) < -_TOL).any(axis=2)
                                    | (np.nan_to_num(conf) > 1 + _TOL).any(axis=2)))[0]
        raise ValueError(f"rater_confusion: rater {r}, true class {y} has row {conf[r, y].tolist()}: rows must "
                         "be probabilities in [0, 1] summing to 1")
    wk = w[:, None] * known  # (R, K)
    tot = wk.sum(axis=0)
    bar = np.einsum("ry,ryc->yc", wk, np.nan_to_num(np.clip(conf, 0.0, 1.0)))
    notes: list[str] = []
    empty = tot <= 0
    bar[~empty] /= tot[~empty, None]
    bar[empty] = 1.0 / K
    if empty.any():
        notes.append(f"no weighted rater met true class(es) {np.flatnonzero(empty).tolist()}: the typical rater "
                     "is uninformative (uniform) there")
    return bar / bar.sum(axis=1, keepdims=True), tuple(notes)


def rater_posterior(codes: np.ndarray, rater_confusion: np.ndarray, class_prior: np.ndarray | None, *,
                    rater_weights: np.ndarray | None = None, shrinkage: float = SHRINKAGE) -> np.ndarray:
    r"""The posterior of every item from its ratings, each rater's confusion shrunk toward the typical rater.

    ``π̃_r = (n_r π_r + κ π̄) / (n_r + κ)`` (``n_r`` the labels of rater ``r`` in ``codes``, ``κ`` = ``shrinkage``
    pseudo-labels of the typical rater :func:`typical_confusion`; a NaN row of ``π_r`` is ``π̄``'s), then
    ``p(y) ∝ prior(y) Π_{r rated s} π̃_r[y, c_{sr}]``: the posterior of Dawid & Skene's model with a Dirichlet
    prior centred on the crowd (Paun et al., "Comparing Bayesian Models of Annotation", TACL 2018). A consensus
    fitted on a few labels per rater over-trusts raters it met a handful of times (on AdultContent3 at 3
    judgements per site, MACE's items of posterior >= 0.99 matched the full crowd 85-90 % of the time); the
    shrunk posterior predicts a held-out judgement better (``experiments/relabel_replay.py``). ``κ = 0`` keeps the
    raters' own confusions, ``κ → ∞`` treats every rater as typical.

    Args:
        codes: ``(S, R)`` class codes ``0 .. K - 1``, ``-1`` missing.
        rater_confusion: ``(R, K, K)`` (NaN rows allowed).
        class_prior: ``(K,)`` (None: uniform).
        rater_weights: the typical rater's weights (:func:`typical_confusion`); None: labels per rater in ``codes``.
        shrinkage: ``κ >= 0``.

    Returns:
        ``(S, K)`` rows summing to 1 (the prior for an item without a rating).

    Raises:
        ValueError: shapes that do not fit, codes outside ``-1 .. K - 1``, a negative shrinkage.
    """
    conf = np.asarray(rater_confusion, dtype=np.float64)
    c = np.asarray(codes)
    if conf.ndim != 3 or c.ndim != 2 or c.shape[1] != conf.shape[0]:
        raise ValueError(f"codes must be (items, raters) with the raters of rater_confusion {conf.shape}, got "
                         f"shape {c.shape}")
    K = conf.shape[1]
    if c.size and (not np.issubdtype(c.dtype, np.integer) or c.min() < -1 or c.max() >= K):
        s, r = np.argwhere((c < -1) | (c >= K))[0] if np.issubdtype(c.dtype, np.integer) else (0, 0)
        raise ValueError(f"codes must be integers in [-1, {K - 1}]; item {s}, rater {r} has {c[s, r].item()!r}")
    if not np.isfinite(shrinkage) or shrinkage < 0:
        raise ValueError(f"shrinkage must be a finite number >= 0, got {shrinkage!r}")
    prior, _ = _check_prior(class_prior, K)
    n = (c >= 0).sum(axis=0).astype(np.float64)
    bar, _ = typical_confusion(conf, rater_weights=n if rater_weights is None else rater_weights)
    own = np.where(np.isnan(conf), bar[None], conf)
    tot = n[:, None, None] + shrinkage
    shrunk = np.where(tot > 0, (n[:, None, None] * own + shrinkage * bar[None]) / np.where(tot > 0, tot, 1.0),
                      bar[None])
    logp = np.tile(np.log(np.clip(prior, 1e-300, None)), (c.shape[0], 1))
    s, r = np.nonzero(c >= 0)
    np.add.at(logp, s, np.log(np.clip(shrunk[r, :, c[s, r]], 1e-300, None)))
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    return np.asarray(p / p.sum(axis=1, keepdims=True))


def fit_class_prior(codes: np.ndarray, rater_confusion: np.ndarray, *, rater_weights: np.ndarray | None = None,
                    shrinkage: float = SHRINKAGE, max_iter: int = 200, tol: float = 1e-9) -> np.ndarray:
    r"""The class prior of :func:`rater_posterior`'s model fitted to the ratings (add-one MAP).

    EM on the prior alone, the shrunk rater confusions held fixed (the class-prior step of Dawid & Skene 1979)
    with one pseudo-item per class (a Dirichlet(2, …, 2) prior, so that no class becomes impossible on a few
    items): ``q ← (Σ_{rated s} p(y | ratings_s; q) + 1) / (S_rated + K)``, from the uniform prior until no
    entry moves by more than ``tol``. The log-posterior is concave in ``q``, so the fixed point is its maximum.

    Args:
        codes: ``(S, R)`` class codes ``0 .. K - 1``, ``-1`` missing.
        rater_confusion: ``(R, K, K)`` (NaN rows allowed).
        rater_weights: the typical rater's weights (None: labels per rater in ``codes``).
        shrinkage: ``κ`` of :func:`rater_posterior`.
        max_iter: EM steps at most.
        tol: convergence tolerance on the prior's entries.

    Returns:
        ``(K,)`` probabilities, each ``>= 1 / (S_rated + K)``; uniform when no item is rated.

    Raises:
        ValueError: as :func:`rater_posterior`.
    """
    K = np.asarray(rater_confusion).shape[-1]
    q = np.full(K, 1.0 / K)
    rated = (np.asarray(codes) >= 0).any(axis=1)
    if not rated.any():
        return q
    for _ in range(max_iter):
        new = rater_posterior(codes, rater_confusion, q, rater_weights=rater_weights, shrinkage=shrinkage)[rated]
        new = (new.sum(axis=0) + 1.0) / (new.shape[0] + K)
        done = np.abs(new - q).max() <= tol
        q = new / new.sum()
        if done:
            break
    return np.asarray(q)


def _check_prior(class_prior: np.ndarray | None, K: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """``class_prior`` as ``(K,)`` probabilities; None or all NaN (nothing labelled) becomes uniform, noted."""
    if class_prior is None:
        return np.full(K, 1.0 / K), ("no class prior given: a uniform prior was used",)
    q = np.asarray(class_prior, dtype=np.float64)
    if q.shape != (K,):
        raise ValueError(f"class_prior must have one probability per class ({K}), got shape {q.shape}")
    if np.isnan(q).all():
        return np.full(K, 1.0 / K), ("the class prior is unknown (NaN): a uniform prior was used",)
    if not np.isfinite(q).all() or (q < 0).any() or abs(q.sum() - 1.0) > 1e-4:
        raise ValueError(f"class_prior must be finite probabilities summing to 1, got {q.tolist()}")
    return q / q.sum(), ()


def _check_posterior(posterior: np.ndarray, n_ratings: np.ndarray, prior: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The posterior with NaN rows replaced by the prior, the ratings as int64, and what was replaced."""
    p = np.asarray(posterior, dtype=np.float64)
    K = prior.size
    if p.ndim != 2 or p.shape[1] != K:
        raise ValueError(f"posterior must be (items, {K}) for {K} classes, got shape {p.shape}")
    n = np.asarray(n_ratings)
    if n.shape != (p.shape[0],):
        raise ValueError(f"n_ratings must have one count per item ({p.shape[0]}), got shape {n.shape}")
    if n.size and (not np.issubdtype(n.dtype, np.number) or not np.isfinite(n).all() or (n < 0).any()
                   or (n != np.round(n)).any()):
        bad = int(np.flatnonzero(~np.isfinite(n.astype(float)) | (n < 0) | (n != np.round(n)))[0])
        raise ValueError(f"n_ratings must be whole numbers >= 0; item {bad} has {n[bad]!r}")
    nan_row = np.isnan(p).all(axis=1)
    bad_rows = ~nan_row & (~np.isfinite(p).all(axis=1) | (p < -_TOL).any(axis=1) | (p > 1 + _TOL).any(axis=1)
                           | (np.abs(np.nan_to_num(p).sum(axis=1) - 1.0) > 1e-4))
    if bad_rows.any():
        s = int(np.flatnonzero(bad_rows)[0])
        raise ValueError(f"posterior: item {s} has {p[s].tolist()}: a row must be probabilities summing to 1 "
                         f"(or all NaN for an item nobody labelled); {int(bad_rows.sum())} such row(s)")
    p = np.clip(p, 0.0, 1.0)
    p[nan_row] = prior
    p /= p.sum(axis=1, keepdims=True)
    n = n.astype(np.int64)
    rated = nan_row & (n > 0)
    notes: tuple[str, ...] = ((f"{int(nan_row.sum())} item(s) without a posterior: the class prior stood in",)
                              if nan_row.any() else ())
    if rated.any():
        notes += (f"{int(rated.sum())} of them have ratings but no posterior (e.g. every rating unusable)",)
    return p, n, notes


def _decision_error(p: np.ndarray, e0: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``1 − p(ŷ)`` of the consensus label ``ŷ`` actually chosen (``-1``: none, the posterior's ``e0`` kept)."""
    lab = np.asarray(labels)
    S, K = p.shape
    if lab.shape != (S,):
        raise ValueError(f"labels must have one consensus class per item ({S}), got shape {lab.shape}")
    if S and (not np.issubdtype(lab.dtype, np.integer) or lab.min() < -1 or lab.max() >= K):
        bad = int(np.flatnonzero((lab < -1) | (lab >= K))[0]) if np.issubdtype(lab.dtype, np.integer) else 0
        raise ValueError(f"labels must be class codes in [-1, {K - 1}]; item {bad} has {lab[bad].item()!r}")
    return np.asarray(np.where(lab >= 0, 1.0 - p[np.arange(S), np.clip(lab, 0, None)], e0))


def class_relabel_priority(posterior: np.ndarray, rater_confusion: np.ndarray, n_ratings: np.ndarray, *,
                           class_prior: np.ndarray | None, rater_weights: np.ndarray | None = None,
                           rule: str = "expected_error_reduction", agreement: np.ndarray | None = None,
                           seed: int = 0, lookahead: int = LOOKAHEAD, codes: np.ndarray | None = None,
                           shrinkage: float = SHRINKAGE, labels: np.ndarray | None = None,
                           fit_prior: bool = False) -> RelabelPriority:
    r"""The value of one more class label for every item, by ``rule`` (module docstring: formulas, references).

    Args:
        posterior: ``(S, K)`` the consensus posterior per item (NaN rows: items with no rating; ``class_prior``
            stands in for them).
        rater_confusion: ``(R, K, K)`` ``π_r[y, c] = P(r says c | true y)`` (NaN rows allowed: a class the rater
            never met).
        n_ratings: ``(S,)`` ratings per item now.
        class_prior: ``(K,)`` the class prior (None or all NaN: uniform, noted).
        rater_weights: ``(R,)`` weight of each rater in the typical rater (e.g. labels per rater); None = equal.
        rule: one of :data:`RELABEL_RULES`.
        agreement: ``(S,)`` per-item agreement (NaN for fewer than 2 ratings), needed by ``"lowest_agreement"``.
        seed: seed of ``"random"``.
        lookahead: ``M`` of the expected error reduction (1: the plain one-step rule).
        codes: ``(S, R)`` the ratings (class codes, -1 missing), optional: when given, the rule's posterior of an
            item with ratings is :func:`rater_posterior` (raters shrunk toward the typical one by ``shrinkage``
            pseudo-labels) instead of ``posterior`` (still checked), which over-trusts raters seen a few times.
        shrinkage: ``κ`` of :func:`rater_posterior`.
        labels: ``(S,)`` the consensus class actually written per item (``-1``: none), optional: ``e_0`` is then
            ``1 − p(label)``, the error of the decision made (it can differ from the posterior's argmax).
        fit_prior: with ``codes``, use :func:`fit_class_prior` (the model's class prior fitted to the ratings)
            instead of ``class_prior`` for the rule's posterior and for unrated items.

    Returns:
        A :class:`~agreement.methods.planning.priority.RelabelPriority`: ``priority >= 0`` (expected error
        reduction per label, in ``[0, e_0]``, for the main rule), ``error_now`` ``e_0`` and ``error_after``
        ``e_1`` (one more typical label) whatever the rule, ``order`` by :func:`rank_items`.

    Raises:
        ValueError: an unknown rule, shapes that do not fit, probabilities that are not, a missing ``agreement``,
            labels outside the classes, ``fit_prior`` without ``codes``.
    """
    if rule not in RELABEL_RULES:
        raise ValueError(f"rule must be one of {RELABEL_RULES}, got {rule!r}")
    if int(lookahead) != lookahead or lookahead < 1:
        raise ValueError(f"lookahead must be a whole number >= 1, got {lookahead!r}")
    conf = np.asarray(rater_confusion, dtype=np.float64)
    if conf.ndim != 3 or conf.shape[1] != conf.shape[2]:
        raise ValueError(f"rater_confusion must be (raters, K, K), got shape {conf.shape}")
    K = conf.shape[1]
    prior, prior_notes = _check_prior(class_prior, K)
    p, n, post_notes = _check_posterior(posterior, n_ratings, prior)
    bar, bar_notes = typical_confusion(conf, rater_weights=rater_weights)
    if fit_prior and codes is None:
        raise ValueError("fit_prior=True needs codes: the prior is fitted to the ratings")
    if codes is not None:
        c = np.asarray(codes)
        if c.shape[:1] != (p.shape[0],):
            raise ValueError(f"codes must have one row per item ({p.shape[0]}), got shape {c.shape}")
        rated = (c >= 0).any(axis=1)
        w = np.ones(conf.shape[0]) if rater_weights is None else rater_weights
        if fit_prior:
            prior = fit_class_prior(c, conf, rater_weights=w, shrinkage=shrinkage)
            p[np.isnan(np.asarray(posterior, dtype=np.float64)).all(axis=1)] = prior  # the prior's stand-ins
            bar_notes += (f"class prior fitted to the ratings: {np.round(prior, 3).tolist()}",)
        p[rated] = rater_posterior(c, conf, prior, rater_weights=w, shrinkage=shrinkage)[rated]
        bar_notes += (f"posterior of the {int(rated.sum())} rated item(s) recomputed from the ratings, each rater "
                      f"shrunk toward the typical rater by {shrinkage:g} pseudo-labels",)
    e0 = expected_errors(p, bar, 0)
    if labels is not None:
        e0 = _decision_error(p, e0, labels)
    e1 = expected_errors(p, bar, 1)
    acc = float(np.trace(bar)) / K
    notes = [f"typical rater: mean accuracy {acc:.3f} over the classes (weighted mean confusion of "
             f"{conf.shape[0]} rater(s))", *prior_notes, *post_notes, *bar_notes]
    if rule == "expected_error_reduction":
        M = _horizon(int(lookahead), K)
        prio = e0 - e1
        for m in range(2, M + 1):
            prio = np.maximum(prio, (e0 - expected_errors(p, bar, m)) / m)
        notes.append(f"priority = best expected error reduction per label over 1 .. {M} more label(s)")
    else:
        prio, note = simple_priority(rule, n, agreement, seed=seed, unit="item")
        notes.append(note)
    prio = np.asarray(prio, dtype=np.float64)
    prio = np.where(prio > 1e-12, prio, 0.0)  # rounding noise of an item no label can help
    return RelabelPriority(rule=rule, priority=prio, error_now=e0, error_after=np.minimum(e1, e0), n_ratings=n,
                           order=rank_items(prio, n), notes=tuple(notes))
