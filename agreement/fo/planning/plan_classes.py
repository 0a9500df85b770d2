"""The ``planning`` hooks of class runs: their reliability data and statistics for ``plan_raters``.

* :func:`class_agreement_planning`, the hook of class agreement runs (``compute_class_agreement`` read as
  classes): Krippendorff's α at the run's level (``"alpha"``) on the run's class codes (ordinal ranks in the
  run's class order, the class numbers at the interval and ratio levels), so that the curve at every rater is
  the run's α; with ``gold_field``, also the accuracy of the majority vote of ``k`` raters against gold
  (``"consensus_accuracy"``). Tag sets (MASI α) are not a matrix of classes: refused.
* :func:`class_consensus_planning`, the hook of consensus runs on ``Classification`` fields: the accuracy of
  the consensus of ``k`` raters, by the run's method and seed, against ``gold_field`` when given, else
  against the consensus of all the run's raters (the run's own consensus; said so in the note)
  (``"consensus_accuracy"``, the default), nominal α (``"alpha"``) and the consensus' own mean confidence
  (``"consensus_confidence"``: the posterior of the class it chose, no reference needed).

α is a reliability: ``plan_raters`` projects it with Spearman–Brown. An accuracy is not: it is read at the
measured ``k`` only (:func:`agreement.methods.planning.raters.raters_needed`, ``projection="none"``).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from agreement.core.data import class_order
from agreement.core.ratings import class_ratings
from agreement.fo.methods.class_consensus_labels import CLASS_METHODS
from agreement.fo.planning.plan_input import PlanningInput, gold_codes, read_run_classes
from agreement.fo.runs import store as runs
from agreement.methods.consensus.class_labels import class_consensus
from agreement.methods.planning.consensus_accuracy import (
    FittedModel,
    consensus_accuracy_statistic,
    consensus_confidence_statistic,
)
from agreement.methods.planning.raters import Statistic, alpha_statistic

__all__ = ["class_agreement_planning", "class_consensus_planning"]

_CLASS_TYPES = ("Classification", "Classifications")


def _values(codes: np.ndarray, numbers: np.ndarray | None) -> np.ndarray:
    """``(items, raters)`` codes (``-1`` missing) as floats, NaN missing; the class numbers when given."""
    out = np.where(codes >= 0, codes, 0).astype(np.float64)
    if numbers is not None:
        out = np.asarray(numbers, dtype=np.float64)[np.where(codes >= 0, codes, 0)]
    return np.where(codes >= 0, out, np.nan)


def _gold_statistic(view, options: Mapping[str, Any], ratings, method: str, seed: int,
                    model: FittedModel | None = None) -> Statistic | None:
    """The accuracy of the ``k``-rater consensus against ``options["gold_field"]`` (``None`` without one)."""
    gold = options.get("gold_field")
    if not gold:
        return None
    ref = gold_codes(view, str(gold), [str(s) for s in ratings.sample_ids], [str(c) for c in ratings.classes])
    return consensus_accuracy_statistic(ref, method="fitted" if model is not None else method,
                                        n_classes=max(2, len(ratings.classes)), seed=seed, model=model)


def _fitted(values: np.ndarray, method: str, K: int, seed: int) -> tuple[np.ndarray, FittedModel | None]:
    """The consensus of every rater by the run's method (the reference without gold) and, for the EM methods,
    the model it fitted, which forms every ``k``-rater consensus of the curve (:class:`FittedModel`: no EM per
    draw; majority vote needs none)."""
    codes = np.where(np.isnan(values), -1, values).astype(np.int64)
    res = class_consensus(codes, K, method=method, seed=seed, orientation="units_by_raters")
    reference = np.where((codes >= 0).any(axis=1), res.labels.astype(np.float64), np.nan)
    if method == "majority":
        return reference, None
    prior = res.class_prior if res.class_prior is not None else np.full(K, 1.0 / K)
    return reference, FittedModel(prior, res.rater_confusion)


def class_agreement_planning(samples, info: dict, options: dict, *,
                             scale_values: Callable[[tuple, str, list | None], tuple]) -> PlanningInput:
    """The ``planning`` hook of class agreement runs (module docstring).

    Args:
        samples: any collection of the run's dataset.
        info: the run's info (:func:`agreement.fo.runs.store.get_agreement_run_info`).
        options: ``gold_field`` (optional), ``seed``.
        scale_values: the method's class order and numbers at a level
            (:func:`agreement.fo.methods.class_agreement.scale_values`).

    Returns:
        :class:`agreement.fo.planning.plan_input.PlanningInput` with ``"alpha"`` (and ``"consensus_accuracy"``
        with a gold field).

    Raises:
        agreement.fo.runs.store.RunError: a run read as tag sets.
        ValueError: a bad gold field (:func:`agreement.fo.planning.plan_input.gold_codes`).
    """
    key, params = info["key"], info.get("params") or {}
    summary = runs.load_agreement_results(samples, key).get("summary") or {}
    if summary.get("read_as") == "tags":
        raise runs.RunError(f"run {key!r} compares tag sets (MASI α), which are not one class per rater and sample: "
                            "plan_raters replays runs read as classes (compute_class_agreement with labels='classes') "
                            "or class consensus runs")
    level = str(params.get("level") or "nominal")
    view, read, first = read_run_classes(samples, info)
    found = read.annotations.classes if read.annotations.classes is not None else class_order(
        read.annotations.labels.tolist())
    classes, numbers = scale_values(tuple(found), level, params.get("classes"))
    ratings = class_ratings(read.annotations, classes=classes) if tuple(classes) != tuple(first.classes) else first
    stats: dict[str, Statistic] = {"alpha": alpha_statistic(level=level)}
    projections = {"alpha": "spearman_brown"}
    notes = {"alpha": f"Krippendorff's α at the run's level ({level}) of k raters per sample"}
    gold = _gold_statistic(view, options, ratings, "majority", int(options.get("seed") or 0))
    if gold is not None:
        stats["consensus_accuracy"] = gold
        projections["consensus_accuracy"] = "none"
        notes["consensus_accuracy"] = (f"accuracy of the majority vote of k raters against gold field "
                                       f"{options['gold_field']!r} (ties count 1/t)")
    return PlanningInput(values=_values(ratings.codes, numbers), statistics=stats, projections=projections,
                         sample_ids=[str(s) for s in ratings.sample_ids], raters=[str(r) for r in ratings.raters],
                         notes=notes)


def class_consensus_planning(samples, info: dict, options: dict) -> PlanningInput:
    """The ``planning`` hook of consensus runs: class consensus runs only (module docstring).

    Args:
        samples: any collection of the run's dataset.
        info: the run's info.
        options: ``gold_field`` (optional), ``seed`` (unused: the run's seed fits every consensus).

    Returns:
        :class:`agreement.fo.planning.plan_input.PlanningInput` with ``"consensus_accuracy"``, ``"alpha"`` and
        ``"consensus_confidence"``.

    Raises:
        agreement.fo.runs.store.RunError: a consensus run of boxes or other instances.
        ValueError: a bad gold field.
    """
    key, params = info["key"], info.get("params") or {}
    kind = (info.get("input") or {}).get("label_type")
    if kind not in _CLASS_TYPES:
        raise runs.RunError(f"run {key!r} is a consensus of {kind} labels: plan_raters replays class consensus runs "
                            "(compute_consensus on Classification fields) and class agreement runs, not instances")
    name = "mace" if params.get("method") in (None, "auto") else str(params["method"])
    method, seed = CLASS_METHODS.get(name), int(params.get("seed") or 0)
    if method is None:
        raise runs.RunError(f"run {key!r} used consensus method {name!r}, which plan_raters cannot replay on classes")
    view, _, ratings = read_run_classes(samples, info)
    values = _values(ratings.codes, None)
    K = max(2, len(ratings.classes))
    reference, model = _fitted(values, method, K, seed)
    formed = "fitted" if model is not None else method
    stat = _gold_statistic(view, options, ratings, method, seed, model)
    if stat is None:
        stat = consensus_accuracy_statistic(reference, method=formed, n_classes=K, seed=seed, model=model)
        against = (f"the consensus of all {len(ratings.raters)} raters by the run's method ({name}), which is "
                   "the run's own consensus: no gold field given (it equals the k-rater consensus where k is every "
                   "rater of a sample, so the accuracy is optimistic as k nears that)")
    else:
        against = f"gold field {options['gold_field']!r}"
    how = (f"under the {name} model fitted once on all the raters (Bayes' rule on the k ratings: no refit per draw)"
           if model is not None else "")
    notes = {"consensus_accuracy": f"accuracy of the {name} consensus of k raters {how} against {against}",
             "alpha": "nominal Krippendorff's α of k raters per sample",
             "consensus_confidence": f"mean confidence of the {name} consensus of k raters {how} (its posterior of "
                                     "the class it chose; its own estimate, not measured against a reference)"}
    stats: dict[str, Statistic] = {
        "consensus_accuracy": stat, "alpha": alpha_statistic(),
        "consensus_confidence": consensus_confidence_statistic(method=formed, n_classes=K, seed=seed, model=model)}
    return PlanningInput(values=values, statistics=stats,
                         projections={"consensus_accuracy": "none", "alpha": "spearman_brown",
                                      "consensus_confidence": "none"},
                         sample_ids=[str(s) for s in ratings.sample_ids], raters=[str(r) for r in ratings.raters],
                         notes=notes)
