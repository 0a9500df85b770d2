r"""The ``planning`` hook of OT agreement runs: αOT with fewer raters per sample, from the run's pair costs.

An OT agreement run scores every (sample, pair of raters assigned to it) with the OT cost ``c`` of their box
sets and stores the scores ``1 - c`` in its results (``detail["pair_sample_scores"]``: ``"a|b"`` → sample
id → score). Its αOT is ``1 - D_o / D_e``: ``D_o`` the mean cost over those (sample, rater pair) cells, ``D_e``
the chance cost of sets of *different* samples (:mod:`agreement.methods.ot.alpha_ot`).

:func:`ot_planning` gives ``plan_raters`` the ``(samples, raters)`` assignment (1 where the rater is in a
scored pair of the sample; samples with fewer than two raters have no pair and are left out) and the
statistic ``"alpha_ot"`` (:class:`OTPairCosts`): for a draw of ``k`` raters per sample, ``D_o`` is the mean
cost of the pairs whose two raters were both kept, and

.. math:: \alpha_{OT}(k) = 1 - D_o(k) / D_e

**The chance baseline is fixed from the run** (its ``expected_cost``), not recomputed per draw: ``D_e`` is the
cost of two of these raters' sets on different images, a property of the raters and the images that does not
depend on how many raters label each sample; recomputing it for every draw would re-solve up to ``max_pairs``
cross-image OT problems per draw (hundreds of draws) and add the Monte-Carlo noise of the chance estimate
(above ``max_pairs``) to every point of the curve, where the subsampling is about the observed costs. The
pair costs are the run's own (no OT problem is solved again), so with every rater the statistic is the run's
αOT (up to float rounding of ``1 - (1 - c)``). The one approximation: a draw changes which rater pairs the
observed mean weights, and the chance cost stays weighted as in the run (by each pair's cross-sample pairs).

Range: at most 1; 0 at chance level; NaN when a draw keeps no pair.
Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object Detection with Optimal Transport".
"""

from __future__ import annotations

import math

import numpy as np

from agreement.fo.planning.plan_input import PlanningInput, refuse_gold_and_frames
from agreement.fo.runs import store as runs

__all__ = ["OTPairCosts", "kept_pairs", "ot_planning"]


def kept_pairs(start: np.ndarray, first: np.ndarray, second: np.ndarray, values: np.ndarray,
               items: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The rater pairs of the samples of a draw, and which of them kept both raters.

    Args:
        start: per sample row, its first pair (pairs sorted by sample; ``start[s] .. start[s + 1]``).
        first: the first rater (column) of each pair.
        second: its second rater.
        values: the draw, ``(rows, raters)``, NaN where the rater was left out.
        items: the sample row of each row of ``values`` (default ``0 .. rows - 1``; repeats allowed).

    Returns:
        ``(which, both)``: the pair index of every pair of the draw's samples (in draw order), and whether
        both its raters are rated in the draw.
    """
    rows = np.arange(values.shape[0]) if items is None else np.asarray(items, dtype=np.int64)
    kept = ~np.isnan(np.asarray(values, dtype=np.float64))
    lengths = start[rows + 1] - start[rows]
    which = np.repeat(start[rows] - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    at = np.repeat(np.arange(rows.size), lengths)
    return which, kept[at, first[which]] & kept[at, second[which]]


class OTPairCosts:
    """αOT of the kept rater pairs of each sample against a fixed chance cost (module docstring).

    Attributes:
        start: per sample row, its first pair in the pair arrays (``start[s] .. start[s + 1]``).
        first, second: the raters (columns) of each pair.
        cost: the OT cost of each pair.
        expected: the chance cost ``D_e`` of the run.
        min_k: 2; needs_items: ``True`` (the draw's rows are samples).
    """

    min_k = 2
    needs_items = True
    __name__ = "alpha_ot_pairs"

    def __init__(self, start: np.ndarray, first: np.ndarray, second: np.ndarray, cost: np.ndarray,
                 expected: float) -> None:
        self.start, self.first, self.second, self.cost = start, first, second, cost
        self.expected = float(expected)

    def __call__(self, values: np.ndarray, items: np.ndarray | None = None) -> float:
        """``1 - D_o / D_e`` of the pairs of samples ``items`` (rows of ``values``) whose raters are both rated."""
        which, both = kept_pairs(self.start, self.first, self.second, values, items)
        if not both.any():
            return math.nan
        return 1.0 - float(self.cost[which][both].mean()) / self.expected


def _pairs(scores: dict, raters: list[str], key: str, expected: float) -> tuple[list[str], np.ndarray, OTPairCosts]:
    """``(sample ids, values, statistic)`` from the run's ``pair_sample_scores`` and chance cost ``expected``."""
    col = {r: i for i, r in enumerate(raters)}
    sid, a, b, cost = [], [], [], []
    for pair, per in scores.items():
        x, _, y = str(pair).partition("|")
        if x not in col or y not in col:
            raise runs.RunError(f"run {key!r}: its pair scores name the rater pair {pair!r}, whose raters are not "
                                f"the run's {raters}: rerun it before plan_raters")
        for s, score in per.items():
            if score is None or not math.isfinite(float(score)):
                raise runs.RunError(f"run {key!r}: sample {s!r} has no OT score for raters {pair!r}: rerun it")
            sid.append(str(s))
            a.append(col[x])
            b.append(col[y])
            cost.append(1.0 - float(score))
    ids, row = np.unique(np.asarray(sid, dtype=object).astype(str), return_inverse=True)
    order = np.argsort(row, kind="stable")
    row = row[order]
    first, second = np.asarray(a, np.int64)[order], np.asarray(b, np.int64)[order]
    values = np.full((ids.size, len(raters)), np.nan)
    values[row, first] = 1.0
    values[row, second] = 1.0
    start = np.searchsorted(row, np.arange(ids.size + 1))
    stat = OTPairCosts(start, first, second, np.asarray(cost, np.float64)[order], expected)
    return [str(i) for i in ids], values, stat


def ot_planning(samples, info: dict, options: dict) -> PlanningInput:
    """The ``planning`` hook of OT agreement runs (module docstring).

    Args:
        samples: any collection of the run's dataset.
        info: the run's info.
        options: ``gold_field`` (refused: αOT has no consensus to score), ``seed`` (unused).

    Returns:
        :class:`agreement.fo.planning.plan_input.PlanningInput` with ``"alpha_ot"``.

    Raises:
        agreement.fo.runs.store.RunError: a run on video frames, a run without pair scores, or whose αOT is
            undefined.
        ValueError: a gold field.
    """
    key = info["key"]
    refuse_gold_and_frames(info, options, kind="OT agreement", offers="αOT only")
    results = runs.load_agreement_results(samples, key)
    summary, detail = results.get("summary") or {}, results.get("detail") or {}
    scores = detail.get("pair_sample_scores")
    if not scores:
        raise runs.RunError(f"run {key!r} stores no per-sample pair scores (pair_sample_scores): rerun it before "
                            "plan_raters")
    expected = summary.get("expected_cost")
    if summary.get("alpha_ot") is None or expected is None or not float(expected) > 1e-15:
        raise runs.RunError(f"run {key!r}: its αOT is undefined ({summary.get('alpha_ot_reason') or 'no chance cost'})"
                            ": there is no chance baseline to plan against")
    raters = [str(r) for r in detail.get("raters") or []]
    ids, values, stat = _pairs(scores, raters, key, float(expected))
    how = "exact" if summary.get("alpha_ot_exact", True) else "estimated"
    note = (f"αOT of k raters per sample: the mean OT cost of the kept rater pairs (the run's own costs) over the "
            f"run's chance cost D_e = {float(expected):.4g} ({how}), fixed, not recomputed per draw")
    return PlanningInput(values=values, statistics={"alpha_ot": stat}, projections={"alpha_ot": "spearman_brown"},
                         sample_ids=ids, raters=raters, notes={"alpha_ot": note})
