"""How many raters per item does a task need? ``plan_raters`` on an agreement run of a FiftyOne dataset.

:func:`plan_raters` asks the run's method for its reliability data and statistics (its ``planning`` hook,
:attr:`agreement.fo.runs.method_spec.MethodHooks.planning`, returning a
:class:`agreement.fo.planning.plan_input.PlanningInput`), measures the statistic with ``k`` raters per item by
subsampling raters within items (:func:`agreement.methods.planning.raters.rater_curve`: seeded, ``repeats``
draws per ``k``, percentile intervals), and finds the smallest ``k`` that reaches ``target`` at
``confidence`` (:func:`agreement.methods.planning.raters.raters_needed`):

* for a reliability (α), the target is the reliability of the ``k``-rater *consensus*, projected by
  Spearman–Brown from the lower bound of α, measured up to the largest ``k`` the data has and projected
  beyond it (the curve shown continues dashed up to ``max_k_projected``);
* for an accuracy of the consensus, the target is the accuracy itself, read at the measured ``k`` only (no
  documented model projects it beyond the data).

The plan is stored with the run, in its results (``detail["plan_raters"]``), so it is deleted with the run
and follows a rename; a recomputation of the run replaces its results and drops the plan, which described
the old data. :func:`stored_plan` reads it back for the panel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement.fo.planning.plan_input import PlanningInput
from agreement.fo.runs import store as runs
from agreement.fo.runs.results import to_json
from agreement.methods.planning.raters import (
    RaterCurve,
    RatersNeeded,
    consensus_reliability,
    rater_curve,
    raters_needed,
)

__all__ = ["RaterPlan", "plan_raters", "stored_plan", "planning_methods", "PLAN_DETAIL"]

#: The key of ``detail`` in the run's results that holds its latest plan.
PLAN_DETAIL = "plan_raters"


@dataclass(frozen=True)
class RaterPlan:
    """A run's statistic against raters per item, and the raters a target needs (:func:`plan_raters`).

    Attributes:
        key: the run.
        method: the run's method marker.
        statistic: the statistic's name, as the method offers it (``"alpha"``, ``"consensus_accuracy"``).
        note: what the statistic is on this run (its level, its reference).
        curve: the measured curve (:class:`agreement.methods.planning.raters.RaterCurve`).
        needed: the answer (:class:`agreement.methods.planning.raters.RatersNeeded`).
        projection: ``"spearman_brown"`` (the target is the consensus reliability) or ``"none"``.
        max_k_projected: the largest ``k`` the projected curve reaches (or ``k_needed`` if larger).
        offered: every statistic the method offers on this run.
    """

    key: str
    method: str
    statistic: str
    note: str
    curve: RaterCurve
    needed: RatersNeeded
    projection: str
    max_k_projected: int
    offered: tuple[str, ...]

    def target_curve(self) -> dict[str, list]:
        """The curve the target is read on: ``k``, ``mean``, ``low``, ``high`` and ``projected`` (bool per ``k``).

        A reliability: the Spearman–Brown consensus reliability of the measured ``k`` (of the mean and of
        the bounds), then beyond ``max_k`` that of the last measured mean and bounds up to
        ``max(max_k_projected, k_needed)``. Otherwise the measured curve itself.
        """
        c = self.curve
        if self.projection != "spearman_brown":
            return {"k": list(c.ks), "mean": list(c.mean), "low": list(c.low), "high": list(c.high),
                    "projected": [False] * len(c.ks)}
        cons = c.consensus()
        top = max(self.max_k_projected, self.needed.k or 0)
        beyond = np.arange(c.max_k + 1, top + 1, dtype=np.float64)
        out: dict[str, list] = {"k": list(c.ks) + [int(k) for k in beyond], "projected": [False] * len(c.ks)
                                + [True] * beyond.size}
        for name in ("mean", "low", "high"):
            last = getattr(c, name)[-1]
            ext = ([float(x) for x in np.atleast_1d(consensus_reliability(last, beyond))]
                   if beyond.size and math.isfinite(last) else [math.nan] * beyond.size)
            out[name] = list(cons[name]) + ext
        return out

    def as_dict(self) -> dict[str, Any]:
        """The flat result of the ``plan_raters`` operator (JSON-safe, NaN as ``None``)."""
        n, c = self.needed, self.curve
        out = {
            "key": self.key, "method": self.method, "statistic": self.statistic, "note": self.note,
            "target": n.target, "confidence": c.confidence, "k_needed": n.k, "reason": n.reason,
            "measured": bool(n.measured), "labels_needed": n.labels, "labels_per_item": n.labels_per_item,
            "value_at_k": n.reliability, "n_items": c.n_items_total, "n_raters": c.n_raters, "max_k": c.max_k,
            "projection": self.projection, "repeats": c.repeats, "seed": c.seed, "statistics": list(self.offered),
            "curve": {"k": list(c.ks), "mean": list(c.mean), "low": list(c.low), "high": list(c.high),
                      "n_items": list(c.n_items), "labels": list(c.labels)},
            "target_curve": self.target_curve(),
        }
        return to_json(out)


def planning_methods() -> list[str]:
    """The compute operators whose runs ``plan_raters`` accepts (their method has a ``planning`` hook)."""
    from agreement.fo.methods import declarations

    return [d.operator for d in declarations() if d.hooks.planning is not None]


def _planning_input(samples, info: dict, gold_field: str | None, seed: int) -> PlanningInput:
    """The run's :class:`PlanningInput` from its method's hook; refused when the method has none."""
    from agreement.fo.methods import declaration_of

    decl = declaration_of(info["method"])
    hook = decl.hooks.planning if decl is not None else None
    if hook is None:
        what = decl.operator if decl is not None else info["method"]
        raise runs.RunError(f"run {info['key']!r} is a {what} run ({info['method']}), which plan_raters cannot replay "
                            f"with fewer raters; it plans runs of: {', '.join(planning_methods())}")
    return hook(samples, info, {"gold_field": gold_field, "seed": seed})


def _check_numbers(target: float, confidence: float, repeats: int, max_k_projected: int) -> None:
    for name, value in (("target", target), ("confidence", confidence)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) < 1.0:
            raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    for name, number, low in (("repeats", repeats, 1), ("max_k_projected", max_k_projected, 2)):
        if isinstance(number, bool) or not isinstance(number, (int, np.integer)) or number < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {number!r}")


def plan_raters(samples, key: str, *, statistic: str | None = None, target: float = 0.8, confidence: float = 0.9,
                gold_field: str | None = None, repeats: int = 200, seed: int = 0,
                max_k_projected: int = 20) -> RaterPlan:
    """How many raters per item run ``key``'s task needs for its statistic to reach ``target``.

    The statistic is measured with ``k = 1`` (a statistic of one rater) or ``2`` up to the most ratings any
    item has, by subsampling raters within items (``repeats`` draws per ``k``, ``seed``); ``k_needed`` is the
    smallest ``k`` whose lower bound (the ``(1 - confidence)/2`` percentile) reaches ``target``: for α, the
    Spearman–Brown reliability of the ``k``-rater consensus (projected beyond the data), for an accuracy the
    accuracy itself (measured ``k`` only). Cost: ``k_needed × items`` labels. The plan is stored with the run.

    Args:
        samples: any collection of the run's dataset (the run's own samples are read).
        key: the run.
        statistic: one of the statistics the run's method offers (default: its first).
        target: the value to reach, in ``(0, 1)``.
        confidence: the coverage of the curve's intervals, in ``(0, 1)``.
        gold_field: a ``Classification`` field of gold classes: the reference of a consensus' accuracy.
        repeats: draws per ``k``.
        seed: the draws' seed.
        max_k_projected: how far the projected curve of a reliability is drawn.

    Returns:
        :class:`RaterPlan`.

    Raises:
        agreement.fo.runs.store.RunError: no such run, or a method without a ``planning`` hook (naming those
            that have one), or a run the hook cannot replay.
        ValueError: a statistic the method does not offer, a bad gold field, fewer than 2 raters on every
            item, a bad number.
    """
    _check_numbers(target, confidence, repeats, max_k_projected)
    info = runs.get_agreement_run_info(samples, key)
    data = _planning_input(samples, info, gold_field, int(seed))
    name = statistic or next(iter(data.statistics))
    if name not in data.statistics:
        raise ValueError(f"run {key!r} ({info['method']}) offers the statistics {list(data.statistics)}, not "
                         f"{name!r}" + ("; consensus_accuracy needs a gold_field on this run" if
                                        name == "consensus_accuracy" else ""))
    counts = (~np.isnan(data.values)).sum(axis=1)
    if data.values.shape[1] < 2 or counts.max(initial=0) < 2:
        raise ValueError(f"run {key!r}: no sample has labels from 2 or more of its {data.values.shape[1]} raters "
                         "(most ratings on one sample: " + f"{int(counts.max(initial=0))}); rater subsampling "
                         "needs samples that several raters labelled")
    curve = rater_curve(data.values, statistic=data.statistics[name], repeats=int(repeats),
                        confidence=float(confidence), seed=int(seed))
    needed = raters_needed(curve, target=float(target), projection=data.projections[name])
    plan = RaterPlan(key=key, method=info["method"], statistic=name, note=data.notes.get(name, ""), curve=curve,
                     needed=needed, projection=data.projections[name], max_k_projected=int(max_k_projected),
                     offered=tuple(data.statistics))
    _store(samples, key, plan.as_dict())
    return plan


def _store(samples, key: str, plan: dict) -> None:
    """Saves ``plan`` in the run's results (``detail["plan_raters"]``), replacing an earlier one."""
    dataset = samples._root_dataset
    results = dataset.load_run_results(key, cache=False)
    if results is None:
        raise runs.RunError(f"run {key!r} has no results to store the plan with: rerun it")
    results.detail[PLAN_DETAIL] = plan
    dataset.save_run_results(key, results, overwrite=True, cache=False)


def stored_plan(samples, key: str) -> dict | None:
    """The plan :func:`plan_raters` stored with run ``key`` (its flat result dict), ``None`` without one.

    Raises:
        agreement.fo.runs.store.RunError: no such run.
    """
    plan = (runs.load_agreement_results(samples, key).get("detail") or {}).get(PLAN_DETAIL)
    return {**plan, "key": key} if plan else None  # a renamed run's plan names it by its new key
