"""The ``planning`` hook of KαLOS runs: KαLOS α with fewer raters per sample, on the run's own units.

KαLOS clusters the raters' annotations of a sample into units (the run stores each label's unit in the
label attribute ``{key}_unit``); its reliability matrix has one row per unit and one column per rater: the
class of the rater's member of the unit, ``no_object`` for an assigned rater without one (a sample without
any unit is one unit of ``no_object``), missing for a rater not assigned to the sample; the run's global α
is nominal Krippendorff's α of that matrix.

:func:`kalos_planning` gives ``plan_raters`` the ``(samples, raters)`` assignment as its items (1 where the
rater was assigned) and the statistic ``"alpha"``, which for a draw of ``k`` raters per *sample* keeps those
raters' columns in every unit of the sample, leaves out the units only dropped raters had drawn (all kept
raters say ``no_object`` there: without their members the unit would not exist) and computes nominal α.
At every rater it is the run's global α.

**The approximation:** the units are kept from the full clustering. Recomputing the correspondence with
only the ``k`` raters' labels could cluster them differently (a unit that held two of a dropped rater's
neighbours, a chain of matches through a dropped rater); the units of the labels kept are reused as they
are. Solvers that match labels pairwise by similarity (greedy, Hungarian) rarely change a kept pair; the
agglomerative solvers may.
"""

from __future__ import annotations

import numpy as np

from agreement.fo.planning.plan_input import PlanningInput, refuse_gold_and_frames, run_layout, run_view
from agreement.fo.runs import store as runs
from agreement.fo.storage.label_schema import label_list_path
from agreement.fo.storage.reading import read_annotations
from agreement.methods.planning.raters import alpha_statistic

__all__ = ["KalosUnits", "kalos_planning"]


class KalosUnits:
    """Nominal α of a KαLOS run's unit matrix with some raters of each sample left out (module docstring).

    Attributes:
        units: ``(units, raters)`` float codes, ``no_object`` the largest, NaN where the rater was not assigned.
        start: per sample, its first row in ``units`` (``start[s] .. start[s + 1]``).
        drawn: per unit row, which raters have a member in it (``(units, raters)`` bool).
        empty: per unit row, whether it is the ``no_object`` unit of a sample without labels.
        min_k: 2; needs_items: ``True`` (the draw's rows are samples).
    """

    min_k = 2
    needs_items = True
    __name__ = "alpha_kalos_units"

    def __init__(self, units: np.ndarray, start: np.ndarray, drawn: np.ndarray, empty: np.ndarray) -> None:
        self.units, self.start, self.drawn, self.empty = units, start, drawn, empty
        self._alpha = alpha_statistic(level="nominal")

    def __call__(self, values: np.ndarray, items: np.ndarray | None = None) -> float:
        """α of the units of the samples ``items`` (rows of ``values``), each with the raters rated in its row."""
        rows = np.arange(values.shape[0]) if items is None else np.asarray(items, dtype=np.int64)
        kept = ~np.isnan(np.asarray(values, dtype=np.float64))
        lengths = self.start[rows + 1] - self.start[rows]
        which = np.repeat(self.start[rows] - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        keep_cols = np.repeat(kept, lengths, axis=0)
        matrix = np.where(keep_cols, self.units[which], np.nan)
        alive = self.empty[which] | (self.drawn[which] & keep_cols).any(axis=1)
        return float(self._alpha(matrix[alive]))


def _unit_of_labels(view, read, key: str) -> np.ndarray:
    """The run's unit number of every corpus row (``-1``: none stored)."""
    dataset = view._root_dataset
    unit_of: dict = {}
    for f in read.label_fields:
        path = label_list_path(f, dataset.get_field(f).document_type)
        ids, units = view.values([f"{path}.id", f"{path}.{key}_unit"], unwind=True)
        unit_of.update(zip(ids, units, strict=False))
    return np.array([-1 if unit_of.get(i) is None else int(unit_of[i]) for i in read.annotations.label_ids],
                    dtype=np.int64)


def _units(data, unit: np.ndarray) -> KalosUnits:
    """The unit matrix of the corpus ``data`` with the run's ``unit`` per row."""
    S = data.num_samples
    _, codes = np.unique(np.asarray(data.labels, dtype=object).astype(str), return_inverse=True)
    no_obj = float(codes.max(initial=-1) + 1)
    n_units = np.zeros(S, dtype=np.int64)
    np.maximum.at(n_units, data.sample_index, unit + 1)
    assigned = np.asarray(data.assigned, dtype=bool)
    empty_sample = (n_units == 0) & assigned.any(axis=1)
    per = n_units + empty_sample
    start = np.r_[0, np.cumsum(per)]
    sample_of_row = np.repeat(np.arange(S), per)
    units = np.where(assigned[sample_of_row], no_obj, np.nan)
    drawn = np.zeros(units.shape, dtype=bool)
    row = start[data.sample_index] + unit
    units[row, data.rater_index] = codes.reshape(-1)
    drawn[row, data.rater_index] = True
    return KalosUnits(units, start, drawn, np.repeat(empty_sample, per))


def kalos_planning(samples, info: dict, options: dict) -> PlanningInput:
    """The ``planning`` hook of KαLOS runs (module docstring).

    Args:
        samples: any collection of the run's dataset.
        info: the run's info.
        options: ``gold_field`` (refused: KαLOS has no consensus to score), ``seed`` (unused).

    Returns:
        :class:`agreement.fo.planning.plan_input.PlanningInput` with ``"alpha"``.

    Raises:
        agreement.fo.runs.store.RunError: a run on video frames, or labels without the run's unit.
        ValueError: a gold field (KαLOS offers α only).
    """
    key = info["key"]
    refuse_gold_and_frames(info, options, kind="KαLOS", offers="α of its units only")
    view = run_view(samples, info)
    read = read_annotations(view, **run_layout(info))
    data = read.annotations
    unit = _unit_of_labels(view, read, key)
    if (unit < 0).any():
        raise runs.RunError(f"run {key!r}: {int((unit < 0).sum())} labels have no {key}_unit (labels added since the "
                            "run?): rerun it before plan_raters")
    values = np.where(np.asarray(data.assigned, dtype=bool), 1.0, np.nan)
    note = ("KαLOS α (nominal, no_object a class) of the run's units with k raters per sample; the units are kept "
            "from the run's clustering of all the raters (an approximation: reclustering the k raters' labels "
            "could differ)")
    return PlanningInput(values=values, statistics={"alpha": _units(data, unit)}, projections={"alpha": "spearman_brown"},
                         sample_ids=[str(s) for s in data.sample_ids], raters=[str(r) for r in data.raters],
                         notes={"alpha": note})
