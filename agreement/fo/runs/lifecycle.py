"""Pieces of the run lifecycle of :mod:`agreement.fo.runs.engine` (which re-exports them): what a shard of a
streamed run is given and gives back (:class:`ShardJob`, :class:`ShardResult`), and the completion of a run with
its warnings (:func:`complete_run`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agreement.core.design_warnings import DesignStats, run_warnings
from agreement.core.validation import RepairReport
from agreement.fo.runs import store as runs
from agreement.fo.runs.method_spec import MethodSpec, Progress, clean_summary
from agreement.fo.runs.options import RaterLayout

__all__ = ["Outcome", "complete_run", "ShardJob", "ShardResult"]


@dataclass(frozen=True)
class Outcome:
    """What a computed run records on completion: its input layout record, summary, detail and rater design."""

    inputs: dict
    summary: dict
    detail: dict
    design: DesignStats | None


def complete_run(samples, plan: runs.RunPlan, spec: MethodSpec, params: dict, outcome: Outcome,
              report: Progress) -> dict:
    """Completes the run with its warnings (:func:`agreement.core.design_warnings.run_warnings`: the design's, the
    method's own, the undefined headline numbers'); returns the summary (NaN as ``None``) with ``warnings``."""
    from agreement.fo.runs.results import results_class
    from agreement.reporting.figures.method_figures import METHOD_VIEWS

    summary, detail = outcome.summary, outcome.detail
    view = results_class(spec.method).view or METHOD_VIEWS.get(spec.method) or {}
    warnings = run_warnings(outcome.design, summary, detail, params, spec=spec, cards=view.get("cards") or ())
    runs.register_run(samples, plan, params, outcome.inputs,
                      {"summary": summary, "detail": detail, "warnings": warnings})
    report(1.0, "done")
    return {**clean_summary(summary), "warnings": warnings}


@dataclass
class ShardJob:
    """Everything one shard needs, whoever runs it (this process, or a Dask worker).

    Attributes:
        method: the method marker (``spec.method``), to find the spec on a worker.
        ids: the shard's sample ids, in canonical order.
        index, n_shards, offset: its number, the number of shards, its first corpus position.
        layout, params: the run's rater layout (:class:`agreement.fo.runs.options.RaterLayout`) and method
            parameters.
        plan: the :class:`agreement.fo.storage.reading.CorpusPlan` of the view.
        state: what the method's ``prepare`` returned.
        run_plan: the registered run's :class:`agreement.fo.runs.store.RunPlan` (``None``: register it
            before this shard's write, serial runs).
        keep_annotations: send the shard's annotations back with its result (a run's only shard).
    """

    method: str
    ids: list
    index: int
    n_shards: int
    offset: int
    layout: RaterLayout
    params: dict
    plan: Any
    state: Any = None
    run_plan: Any = None
    keep_annotations: bool = False


@dataclass
class ShardResult:
    """What a shard sends back to the run: the method's statistics, the repairs, the input layout record,
    and the shard's annotations when asked to keep them (the only shard of a run in this process: what
    the finish needs again is then taken from memory, not read again)."""

    stats: Any
    repairs: RepairReport
    layout: dict
    annotations: Any = None
    design: DesignStats | None = None
