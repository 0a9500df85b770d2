r"""The ``planning`` hook of geometry agreement runs: σ and distance α with fewer raters per sample.

A geometry agreement run (Braylan, Alonso & Lease 2022; :mod:`agreement.methods.geometry_agreement`) matches
every within-item set pair (sample, rater ``a`` < rater ``b``, both assigned) by threshold matching, *pair by
pair*: which annotations two raters match does not depend on the other raters. Its within-item distances
``W`` (one per matched pair) against the between-item (chance) distances ``B`` give

* **σ** ``= mean(W < q_p(B))``, the share of within distances below the chance ``p``-th percentile (about
  ``p`` = 0.05 at chance, 1 at perfect agreement), and
* **distance α** ``= 1 - mean(W) / mean(B)`` (at most 1, 0 at chance).

:func:`geometry_planning` redoes the run's within-item matching once (the pure
:func:`agreement.methods.geometry_agreement.shards.geometry_shard`, with the run's parameters and samples:
the same matched pairs and distances) and keeps each matched pair's sample, raters and distance. For a draw
of ``k`` raters per sample, the statistics keep the matched pairs whose two raters were both kept:

.. math:: \sigma(k) = \operatorname{mean}(W_k < q_p(B)), \qquad \alpha_d(k) = 1 - \operatorname{mean}(W_k) / \operatorname{mean}(B)

**The chance side is fixed from the run** (its ``between_quantile`` and ``mean_between``), not drawn again
per draw: ``B`` is the distance of matched annotations of different images, a property of the raters and the
images, not of how many raters label a sample; drawing it again would redo the chance sample (up to
``max_pairs`` matchings) per draw and add its sampling noise to the curve. Because the matching is pairwise,
``W_k`` is exactly the run's distances of the kept pairs: with every rater both statistics are the run's
(its point values; the run's bootstrap intervals are another question). Samples the run skipped (over the
pair budget) stay out.

σ is not a reliability (``p``, not 0, at chance): ``plan_raters`` reads it at measured ``k`` only.
Distance α is projected with Spearman–Brown like the other α.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from agreement.fo.planning.plan_input import PlanningInput, check_run_size, refuse_gold_and_frames, run_layout, run_view
from agreement.fo.planning.plan_ot import kept_pairs
from agreement.fo.runs import store as runs
from agreement.fo.storage.reading import read_annotations
from agreement.methods.geometry_agreement.shards import geometry_shard

__all__ = ["MatchedDistances", "geometry_planning"]


class MatchedDistances:
    """σ or distance α of the matched pairs whose raters are both kept (module docstring).

    Attributes:
        start: per sample row, its first matched pair (``start[s] .. start[s + 1]``).
        first, second: the raters (columns) of each matched pair.
        distance: the distance of each matched pair.
        kind: ``"sigma"`` (share below ``chance``, the run's ``q_p(B)``) or ``"distance_alpha"``
            (``1 - mean / chance``, ``chance`` the run's ``mean(B)``).
        chance: the run's chance number for ``kind``.
        min_k: 2; needs_items: ``True``.
    """

    min_k = 2
    needs_items = True

    def __init__(self, start: np.ndarray, first: np.ndarray, second: np.ndarray, distance: np.ndarray, *,
                 kind: str, chance: float) -> None:
        if kind not in ("sigma", "distance_alpha"):
            raise ValueError(f"kind must be 'sigma' or 'distance_alpha', got {kind!r}")
        self.start, self.first, self.second, self.distance = start, first, second, distance
        self.kind, self.chance = kind, float(chance)
        self.__name__ = f"{kind}_matched_pairs"

    def __call__(self, values: np.ndarray, items: np.ndarray | None = None) -> float:
        """The statistic of the matched pairs of samples ``items`` (rows of ``values``) whose raters are kept."""
        which, both = kept_pairs(self.start, self.first, self.second, values, items)
        if not both.any():
            return math.nan
        d = self.distance[which][both]
        return float(np.mean(d < self.chance)) if self.kind == "sigma" else 1.0 - float(d.mean()) / self.chance


def geometry_planning(samples, info: dict, options: dict, *, geometry_params: Callable[[dict], Any]) -> PlanningInput:
    """The ``planning`` hook of geometry agreement runs (module docstring).

    Args:
        samples: any collection of the run's dataset.
        info: the run's info.
        options: ``gold_field`` (refused), ``seed`` (unused).
        geometry_params: the run's parameters as the kernel's ``GeometryParams``
            (:func:`agreement.fo.methods.geometry_agreement._geometry_params`).

    Returns:
        :class:`agreement.fo.planning.plan_input.PlanningInput` with ``"sigma"`` and ``"distance_alpha"``.

    Raises:
        agreement.fo.runs.store.RunError: a run on video frames, whose samples changed, or whose σ is undefined.
        ValueError: a gold field.
    """
    key, params = info["key"], dict(info.get("params") or {})
    refuse_gold_and_frames(info, options, kind="geometry agreement", offers="σ and distance α")
    summary = runs.load_agreement_results(samples, key).get("summary") or {}
    q, mb = summary.get("between_quantile"), summary.get("mean_between")
    if q is None or mb is None or not float(mb) > 0 or summary.get("sigma") is None:
        raise runs.RunError(f"run {key!r}: its σ is undefined ({summary.get('sigma_reason') or 'no chance distances'})"
                            ": there is no chance baseline to plan against")
    data = read_annotations(run_view(samples, info), **run_layout(info), image_sizes=True,
                            masks=params.get("distance") == "mask_iou").annotations
    check_run_size(info, data.num_samples)
    shard = geometry_shard(data, geometry_params(params))
    w = shard.within
    rows = np.asarray(w.rows, dtype=np.int64).reshape(-1, 2)
    measured = np.flatnonzero(np.asarray(shard.keep, dtype=bool) & (np.asarray(data.assigned).sum(axis=1) >= 2))
    row_of = np.full(data.num_samples, -1, dtype=np.int64)
    row_of[measured] = np.arange(measured.size)
    sample = row_of[np.asarray(w.sample, dtype=np.int64)]
    order = np.argsort(sample, kind="stable")
    sample = sample[order]
    first = np.asarray(data.rater_index, dtype=np.int64)[rows[order, 0]]
    second = np.asarray(data.rater_index, dtype=np.int64)[rows[order, 1]]
    start = np.searchsorted(sample, np.arange(measured.size + 1))
    distance = np.asarray(w.distance, dtype=np.float64)[order]
    values = np.where(np.asarray(data.assigned, dtype=bool)[measured], 1.0, np.nan)
    stats = {kind: MatchedDistances(start, first, second, distance, kind=kind, chance=float(c))
             for kind, c in (("sigma", q), ("distance_alpha", mb))}
    p = summary.get("sigma_p", 0.05)
    notes = {"sigma": f"σ of k raters per sample: the share of the kept raters' matched distances below the run's "
                      f"chance {p:g} quantile q = {float(q):.4g} (fixed, not redrawn per draw); about {p:g} at chance",
             "distance_alpha": f"distance α of k raters per sample: 1 - mean matched distance of the kept raters / "
                               f"the run's chance mean {float(mb):.4g} (fixed, not redrawn per draw)"}
    return PlanningInput(values=values, statistics=stats, projections={"sigma": "none",
                                                                       "distance_alpha": "spearman_brown"},
                         sample_ids=[str(data.sample_ids[i]) for i in measured], raters=[str(r) for r in data.raters],
                         notes=notes)
