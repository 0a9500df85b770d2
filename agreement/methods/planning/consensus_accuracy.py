r"""The accuracy of a ``k``-rater consensus against a reference label, as a statistic of the rater curve.

:func:`consensus_accuracy_statistic` gives a :data:`agreement.methods.planning.raters.Statistic` for
:func:`agreement.methods.planning.raters.rater_curve`: on a draw of ``k`` raters per item, the consensus class
of each item (majority vote, MACE or Dawid–Skene) is compared with a reference class of the item, and the
statistic is the share of the items with a reference whose consensus equals it,

``acc_k = (1 / |I|) sum_{i in I} [c_k(i) = ref(i)]``, in ``[0, 1]``,

``I`` the items of the draw that have a reference. Majority vote counts a tie among ``t`` classes that
includes the reference as ``1 / t`` (the expected accuracy when ties are broken uniformly at random), so the
statistic does not depend on the order of classes or raters. Unlike α it is defined with one rater per
item (``min_k = 1``: the accuracy of a single rater's label) and grows with ``k``; it is not a
reliability, so :func:`agreement.methods.planning.raters.raters_needed` reads it without the
Spearman–Brown projection (``projection="none"``). :func:`consensus_confidence_statistic` is the consensus'
own mean confidence (its posterior of the class it chose), which needs no reference.

The reference is gold labels where the user has them, else the consensus of the whole crowd
(:func:`crowd_reference`): a fair yardstick when the crowd has many more raters per item than the ``k``
studied (its own errors are then rare), biased upwards where ``k`` approaches the crowd's size (the ``k``
raters are part of the crowd whose consensus they are compared with; at ``k`` = all of an item's raters and
the same consensus rule the two coincide).

References:
    A. P. Dawid and A. M. Skene, "Maximum likelihood estimation of observer error-rates using the EM
    algorithm", Applied Statistics 28, 1979; D. Hovy et al., "Learning Whom to Trust with MACE", NAACL 2013;
    R. Snow et al., "Cheap and Fast — But is it Good?", EMNLP 2008 (accuracy of k-rater consensus against
    experts).

This module does not import FiftyOne.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from agreement.methods.consensus.class_labels import class_consensus

__all__ = ["CONSENSUS_METHODS", "ConsensusAccuracy", "ConsensusConfidence", "FittedModel", "consensus_accuracy_statistic",
           "consensus_confidence_statistic", "crowd_reference"]

#: The consensus rules a k-rater consensus can be formed by (``"fitted"``: Bayes' rule under a model fitted once,
#: :class:`FittedModel`).
CONSENSUS_METHODS = ("majority", "mace", "dawid_skene", "fitted")


class FittedModel:
    """A crowd model fitted once on every rater (Dawid–Skene or MACE), used to form the ``k``-rater consensus.

    The consensus of the ratings ``c_r`` of an item under the model is the posterior
    ``P(y | c) ∝ prior[y] · prod_r π_r[y, c_r]`` (Dawid & Skene 1979, the E-step with the parameters held):
    what the fitted crowd would conclude from ``k`` of its raters, without refitting on every draw (which
    costs an EM per draw and, on few raters per item, estimates the raters from too little). Rater rows that
    are NaN (a rater the model could not identify) carry no information (uniform).

    Attributes:
        prior: ``(K,)`` class prior.
        log_confusion: ``(R, K, K)`` ``log π_r[y, c]`` (floored at ``1e-12``).
    """

    def __init__(self, prior: ArrayLike, confusion: ArrayLike) -> None:
        p = np.asarray(prior, dtype=np.float64)
        conf = np.asarray(confusion, dtype=np.float64)
        if conf.ndim != 3 or conf.shape[1:] != (p.size, p.size):
            raise ValueError(f"confusion must be (raters, K, K) with K = {p.size} classes, got {conf.shape}")
        conf = np.where(np.isfinite(conf), conf, 1.0 / p.size)
        self.log_prior = np.log(np.clip(np.where(np.isfinite(p), p, 1.0 / p.size), 1e-12, None))
        self.log_confusion = np.log(np.clip(conf, 1e-12, None))

    def posterior(self, codes: np.ndarray, raters: np.ndarray | None = None) -> np.ndarray:
        """``(items, K)`` posteriors of ``codes`` (``(items, raters)``, ``-1`` missing; columns are the model's
        raters, or ``raters`` their indices)."""
        n, R = codes.shape
        cols = np.arange(R) if raters is None else np.asarray(raters, dtype=np.int64)
        item, col = np.nonzero(codes >= 0)
        logp = np.tile(self.log_prior, (n, 1))
        np.add.at(logp, item, self.log_confusion[cols[col], :, codes[item, col]])
        logp -= logp.max(axis=1, keepdims=True)
        post = np.exp(logp)
        return np.asarray(post / post.sum(axis=1, keepdims=True), dtype=np.float64)


def _posterior_credit(post: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Per item: ``1 / t`` when the reference is among the ``t`` classes of highest posterior, else 0."""
    top = post.max(axis=1, keepdims=True)
    best = np.isclose(post, top, rtol=1e-12, atol=1e-15)
    K = post.shape[1]
    ref = np.clip(reference, 0, K - 1)
    hit = (reference < K) & best[np.arange(post.shape[0]), ref]
    return np.asarray(hit / best.sum(axis=1), dtype=np.float64)


def _codes(values: np.ndarray, n_classes: int) -> np.ndarray:
    """``(items, raters)`` float class codes (NaN missing) as integer codes, ``-1`` missing; checked."""
    rated = ~np.isnan(values)
    v = values[rated]
    if v.size and (not np.all(v == np.round(v)) or v.min() < 0 or v.max() >= n_classes):
        bad = v[(v != np.round(v)) | (v < 0) | (v >= n_classes)][0]
        raise ValueError(f"values must be class codes 0 .. {n_classes - 1} (NaN missing), got {bad!r}")
    codes = np.full(values.shape, -1, dtype=np.int64)
    codes[rated] = v.astype(np.int64)
    return codes


def _majority_credit(codes: np.ndarray, reference: np.ndarray, n_classes: int) -> np.ndarray:
    """Per item: ``1 / t`` when the reference is among the ``t`` classes with the most votes, else 0 (NaN for
    an item without a vote)."""
    votes = np.zeros((codes.shape[0], n_classes + 1), dtype=np.int64)
    rows = np.repeat(np.arange(codes.shape[0]), codes.shape[1])
    flat = codes.reshape(-1)
    np.add.at(votes, (rows[flat >= 0], flat[flat >= 0]), 1)
    votes = votes[:, :n_classes]
    top = votes.max(axis=1)
    tied = (votes == top[:, None]).sum(axis=1)
    ref = np.clip(reference, 0, n_classes - 1)
    hit = (reference < n_classes) & (votes[np.arange(codes.shape[0]), ref] == top) & (top > 0)
    return np.where(top > 0, hit / np.maximum(tied, 1), np.nan)


class ConsensusAccuracy:
    """The share of items whose ``k``-rater consensus equals their reference (:func:`consensus_accuracy_statistic`).

    Attributes:
        reference: per item of the whole data, the reference class code (``-1``: none).
        method: the consensus rule (:data:`CONSENSUS_METHODS`).
        n_classes: ``K``; codes are ``0 .. K - 1`` (a reference code ``K`` or more counts as never matched).
        seed: the EM methods' seed.
        min_k: 1 (defined with one rater per item).
        needs_items: ``True``: :func:`agreement.methods.planning.raters.rater_curve` passes each draw's rows.
    """

    min_k = 1
    needs_items = True

    def __init__(self, reference: np.ndarray, *, method: str, n_classes: int, seed: int = 0,
                 model: FittedModel | None = None) -> None:
        self.reference = reference
        self.method = method
        self.n_classes = n_classes
        self.seed = seed
        self.model = model
        self.__name__ = f"consensus_accuracy_{method}"

    def __call__(self, values: np.ndarray, items: np.ndarray | None = None) -> float:
        """The accuracy of the consensus of ``values`` (rows ``items`` of the data; default: all of it).

        Returns:
            The share of the items with a reference and a rating whose consensus is the reference; NaN when
            no item has both.

        Raises:
            ValueError: values that are not class codes, or rows that do not match the reference.
        """
        data = np.asarray(values, dtype=np.float64)
        rows = np.arange(data.shape[0]) if items is None else np.asarray(items, dtype=np.int64)
        if rows.shape != (data.shape[0],) or (rows.size and (rows.min() < 0 or rows.max() >= self.reference.size)):
            raise ValueError(f"values has {data.shape[0]} rows but the reference {self.reference.size} items: pass "
                             "items= (the rows of the data) or values aligned with the reference")
        ref = self.reference[rows]
        codes = _codes(data, self.n_classes)
        keep = (ref >= 0) & (codes >= 0).any(axis=1)
        if not keep.any():
            return float("nan")
        if self.method == "majority":
            return float(np.nanmean(_majority_credit(codes[keep], ref[keep], self.n_classes)))
        if self.model is not None:
            return float(np.mean(_posterior_credit(self.model.posterior(codes[keep]), ref[keep])))
        labels = class_consensus(codes[keep], self.n_classes, method=self.method, seed=self.seed,
                                 orientation="units_by_raters").labels
        return float(np.mean(labels == ref[keep]))


def _reference_codes(reference: ArrayLike) -> np.ndarray:
    """The reference as integer codes, ``-1`` where absent (NaN or negative)."""
    try:
        ref = np.asarray(reference, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("reference must be class codes (NaN or -1 where an item has none)") from None
    if ref.ndim != 1:
        raise ValueError(f"reference must be one class code per item, got shape {ref.shape}")
    finite = np.isfinite(ref) & (ref >= 0)
    if np.any(finite & (ref != np.round(np.where(finite, ref, 0)))):
        raise ValueError("reference must hold integer class codes (NaN or -1 where an item has none)")
    return np.where(finite, ref, -1).astype(np.int64)


def consensus_accuracy_statistic(reference: ArrayLike, *, method: str = "majority", n_classes: int,
                                 seed: int = 0, model: FittedModel | None = None) -> ConsensusAccuracy:
    """The accuracy of the ``k``-rater consensus against ``reference``, as a statistic of the rater curve.

    ``acc = |{i in I : consensus_k(i) = ref(i)}| / |I|`` over the items ``I`` of a draw with a reference
    (module docstring), in ``[0, 1]``; majority-vote ties count ``1 / t``.

    Args:
        reference: one class code per item of the data (the rows of the ``(items, raters)`` matrix given to
            :func:`agreement.methods.planning.raters.rater_curve`), NaN or ``-1`` where the item has none. A
            code ``>= n_classes`` (a gold class no rater used) is a reference no consensus matches.
        method: the ``k``-rater consensus: ``"majority"`` (plurality vote, fast), ``"mace"`` or
            ``"dawid_skene"`` (:func:`agreement.methods.consensus.class_labels.class_consensus`, refitted on
            every draw), or ``"fitted"``: the posterior under ``model`` (fitted once; fast; ties count
            ``1 / t``).
        n_classes: ``K``, the raters' classes being codes ``0 .. K - 1``.
        seed: the EM methods' seed.
        model: the :class:`FittedModel` of ``method="fitted"`` (its raters are the columns of the data).

    Returns:
        :class:`ConsensusAccuracy` (``__name__`` ``"consensus_accuracy_<method>"``).

    Raises:
        ValueError: an unknown method, ``n_classes < 2``, a reference that is not one integer code per item,
            or no item with a reference.

    Examples:
        >>> stat = consensus_accuracy_statistic([0, 1, 1], n_classes=2)
        >>> stat(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]))  # a tie on item 1 counts 1/2
        0.5
    """
    if method not in CONSENSUS_METHODS:
        raise ValueError(f"method must be one of {CONSENSUS_METHODS}, got {method!r}")
    if isinstance(n_classes, bool) or int(n_classes) != n_classes or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
    _check_model(method, model, int(n_classes))
    ref = _reference_codes(reference)
    if not (ref >= 0).any():
        raise ValueError("reference has no item with a class: nothing to measure the consensus against")
    return ConsensusAccuracy(ref, method=method, n_classes=int(n_classes), seed=int(seed), model=model)


def _check_model(method: str, model: FittedModel | None, n_classes: int) -> None:
    """``method="fitted"`` needs a model of ``n_classes`` classes; the other methods take none."""
    if (method == "fitted") != (model is not None):
        raise ValueError("method='fitted' needs model= (a FittedModel), and only it takes one")
    if model is not None and model.log_prior.size != n_classes:
        raise ValueError(f"the model has {model.log_prior.size} classes, n_classes is {n_classes}")


class ConsensusConfidence:
    """The mean confidence of the ``k``-rater consensus (:func:`consensus_confidence_statistic`).

    Attributes:
        method: the consensus rule (:data:`CONSENSUS_METHODS`).
        n_classes: ``K``.
        seed: the consensus' seed.
        min_k: 1.
    """

    min_k = 1

    def __init__(self, *, method: str, n_classes: int, seed: int = 0, model: FittedModel | None = None) -> None:
        self.method, self.n_classes, self.seed, self.model = method, n_classes, seed, model
        self.__name__ = f"consensus_confidence_{method}"

    def __call__(self, values: np.ndarray) -> float:
        """The mean, over the items with a rating, of the consensus' posterior of the class it chose."""
        codes = _codes(np.asarray(values, dtype=np.float64), self.n_classes)
        rated = (codes >= 0).any(axis=1)
        if not rated.any():
            return float("nan")
        if self.model is not None:
            return float(np.mean(self.model.posterior(codes[rated]).max(axis=1)))
        res = class_consensus(codes[rated], self.n_classes, method=self.method, seed=self.seed,
                              orientation="units_by_raters")
        return float(np.mean(res.confidence))


def consensus_confidence_statistic(*, method: str = "mace", n_classes: int, seed: int = 0,
                                   model: FittedModel | None = None) -> ConsensusConfidence:
    """The mean confidence of the consensus of ``k`` raters, as a statistic of the rater curve.

    ``conf_k = (1 / |I|) sum_i max_c P_k(c | i)``, the posterior of the class the consensus chose (majority
    vote: the winning share of the votes), averaged over the items; in ``[1/K, 1]``. It is the consensus'
    own estimate of its accuracy, not a measurement against a reference: an EM's posterior is
    overconfident where its model is wrong, and one rater's vote has confidence 1. Not a reliability: read
    at measured ``k`` only.

    Args:
        method: ``"mace"`` (default), ``"dawid_skene"``, ``"majority"`` or ``"fitted"`` (with ``model``).
        n_classes: ``K``.
        seed: the consensus' seed.
        model: the :class:`FittedModel` of ``method="fitted"``.

    Returns:
        :class:`ConsensusConfidence` (``__name__`` ``"consensus_confidence_<method>"``, ``min_k`` 1).

    Raises:
        ValueError: an unknown method or ``n_classes < 2``.
    """
    if method not in CONSENSUS_METHODS:
        raise ValueError(f"method must be one of {CONSENSUS_METHODS}, got {method!r}")
    if isinstance(n_classes, bool) or int(n_classes) != n_classes or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
    _check_model(method, model, int(n_classes))
    return ConsensusConfidence(method=method, n_classes=int(n_classes), seed=int(seed), model=model)


def crowd_reference(values: ArrayLike, *, method: str = "mace", n_classes: int, seed: int = 0) -> np.ndarray:
    """The consensus of every rater of the data, per item: the reference when there is no gold.

    Args:
        values: ``(items, raters)`` class codes ``0 .. K - 1``, NaN missing.
        method: ``"mace"`` (default), ``"dawid_skene"`` or ``"majority"``
            (:func:`agreement.methods.consensus.class_labels.class_consensus`; majority ties broken as it does).
        n_classes: ``K``.
        seed: the consensus' seed.

    Returns:
        ``(items,)`` float codes, NaN for an item nobody rated.

    Raises:
        ValueError: an unknown method or values that are not class codes.
    """
    if method not in CONSENSUS_METHODS or method == "fitted":
        raise ValueError(f"method must be one of {CONSENSUS_METHODS[:3]}, got {method!r}")
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"values must be a 2-D (items, raters) matrix, got shape {data.shape}")
    codes = _codes(data, int(n_classes))
    labels = class_consensus(codes, int(n_classes), method=method, seed=seed, orientation="units_by_raters").labels
    return np.where((codes >= 0).any(axis=1), labels.astype(np.float64), np.nan)
