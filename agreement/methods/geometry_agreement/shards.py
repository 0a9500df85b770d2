"""The within-item measurement of one shard of a corpus (:func:`geometry_shard`) and the
concatenation of shards into one (:func:`concat_shards`), for
:func:`agreement.methods.geometry_agreement.merge_geometry_shards`.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from agreement.geometry.similarity import check_similarity, similarity_matrix
from agreement.methods.geometry_agreement.chance import Cells
from agreement.methods.geometry_agreement.matching import stacker
from agreement.methods.geometry_agreement.params import GeometryParams, check_data
from agreement.methods.geometry_agreement.within import (
    LabelCounts,
    PairSums,
    WithinSums,
    match_within,
    per_sample_outputs,
    plan_budget,
    skipped_records,
    within_set_pairs,
)

if TYPE_CHECKING:
    from agreement.core.data import MultiRaterAnnotations


@dataclass(frozen=True, eq=False)
class GeometryShard:
    """The within-item measurement of one shard of a corpus (:func:`geometry_shard`), in the shard's
    sample order, to be merged with the other shards (:func:`merge_geometry_shards`).

    Everything here depends on the shard's own samples only: the budget (a
    property of each sample), the threshold matching of each set pair, the
    per-sample and per-row outputs, and the sums the statistics need: per
    rater pair (``pair_sums``), per sample (``within``, ``labels``) and per
    matched pair (its distance and sample), never per set pair or per label
    once the rows are written (:meth:`without_rows`). The chance baseline,
    which pairs samples of different shards, is drawn at the merge.
    """

    sample_ids: np.ndarray
    raters: tuple
    cells: "Cells"
    pair_sums: PairSums
    within: WithinSums
    labels: LabelCounts
    keep: np.ndarray
    skipped: np.ndarray
    cost_s: np.ndarray
    skipped_samples: tuple
    outputs: dict
    n_rows: int
    similarity_report: dict
    has_rows: bool = True

    def without_rows(self) -> "GeometryShard":
        """The shard without its per-row outputs (written back already: the merge does not need them)."""
        outputs = {k: v for k, v in self.outputs.items() if not k.startswith("row_")}
        within = replace(self.within, rows=np.zeros((0, 2), np.intp))
        return replace(self, outputs=outputs, within=within, has_rows=False)


def geometry_shard(data: MultiRaterAnnotations, params: GeometryParams | None = None, **options: Any) -> GeometryShard:
    """The within-item part of :func:`geometry_agreement` on one shard of a corpus.

    Shards of one corpus must share raters and class vocabulary
    (``data.classes``).

    Args:
        data: the shard, a :class:`agreement.core.data.MultiRaterAnnotations`.
        params: the parameters (:class:`GeometryParams`: ``distance``, ``threshold``, ``max_pairs``,
            ``sigmas`` and ``stack`` apply here), or
        **options: those fields as keywords (``params`` not given), as in :func:`geometry_agreement`.

    Returns:
        The shard's :class:`GeometryShard`.

    Raises:
        ValueError: bad parameters, or annotations lacking the geometry of ``distance``.
    """
    params = GeometryParams.of(params, options)
    distance, t, max_pairs, sigmas = params.distance, params.threshold, params.max_pairs, params.sigmas
    check_data(data, distance)
    report = check_similarity(distance, data, sigmas=sigmas)
    counts = data.counts().astype(np.int64)

    def sim_fn(rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        return similarity_matrix(distance, data, rows_a, rows_b, sigmas=sigmas,
                                 options=params.similarity_options)

    stack_fn = stacker(distance, data) if params.stack else None
    all_pairs = within_set_pairs(data, counts)
    budget = plan_budget(data, all_pairs, max_pairs)
    pairs = all_pairs.select(budget.keep[all_pairs.s])
    within = match_within(data, pairs, sim_fn, stack_fn, t)
    outputs = per_sample_outputs(data, pairs, within, budget, max_pairs, t)
    sums = WithinSums(within.distance, within.sample.astype(np.int32), within.rows)
    return GeometryShard(
        sample_ids=np.asarray(data.sample_ids, dtype=object), raters=tuple(data.raters), cells=Cells.of(data),
        pair_sums=PairSums.of(pairs, len(data.raters)), within=sums, labels=LabelCounts.of(data, within),
        keep=budget.keep,
        skipped=budget.skipped, cost_s=budget.cost_s, skipped_samples=skipped_records(data, budget, counts),
        outputs=outputs, n_rows=len(data), similarity_report=report,
    )


def concat_shards(shards: Sequence[GeometryShard]) -> GeometryShard:
    """One :class:`GeometryShard` of the whole corpus from its shards (sample and row indices offset)."""
    if len(shards) == 1:
        return shards[0]
    first = shards[0]
    for sh in shards[1:]:
        if sh.raters != first.raters or sh.labels.n_classes != first.labels.n_classes:
            raise ValueError("geometry shards of one corpus must share raters and class vocabulary")
    so = np.cumsum([0] + [len(sh.sample_ids) for sh in shards]).tolist()
    ro = np.cumsum([0] + [sh.n_rows for sh in shards]).tolist()
    cat = np.concatenate
    R = len(first.raters)
    # so and ro hold one offset more than there are shards (the total): zip stops at the last shard
    cells = Cells(cat([sh.cells.s + o for sh, o in zip(shards, so, strict=False)]), cat([sh.cells.r for sh in shards]),
                  cat([sh.cells.n for sh in shards]), R)
    has_rows = all(sh.has_rows for sh in shards)
    rows = (cat([sh.within.rows + o for sh, o in zip(shards, ro, strict=False)]) if has_rows
            else np.zeros((0, 2), np.intp))
    within = WithinSums(cat([sh.within.distance for sh in shards]),
                        cat([sh.within.sample + np.int32(o) for sh, o in zip(shards, so, strict=False)]), rows)
    outputs = {}
    for k, v in first.outputs.items():
        parts = [sh.outputs[k] for sh in shards]
        outputs[k] = tuple(x for part in parts for x in part) if isinstance(v, tuple) else cat(parts)
    report = dict(first.similarity_report)
    report["repaired_polygons"] = sum(int(sh.similarity_report.get("repaired_polygons", 0)) for sh in shards)
    return GeometryShard(
        sample_ids=cat([sh.sample_ids for sh in shards]), raters=first.raters, cells=cells,
        pair_sums=PairSums.merge([sh.pair_sums for sh in shards]), within=within,
        labels=LabelCounts.stack([sh.labels for sh in shards]), keep=cat([sh.keep for sh in shards]),
        skipped=cat([sh.skipped for sh in shards]), cost_s=cat([sh.cost_s for sh in shards]),
        skipped_samples=_canonical_records([r for sh in shards for r in sh.skipped_samples]),
        outputs=outputs, n_rows=int(ro[-1]), similarity_report=report, has_rows=has_rows,
    )


def _canonical_records(records: list) -> tuple:
    """Skipped-sample records in ``str(sample_id)`` order."""
    return tuple(sorted(records, key=lambda rec: str(rec["sample_id"])))
