"""Results of :func:`agreement.methods.kalos.kalos_alpha` (:class:`KalosResult`) and of
:func:`agreement.methods.kalos.sensitivity_curve` (:class:`SensitivityCurve`).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agreement.core.reliability import SparseReliability
from agreement.methods.kalos.nominal import CoincidenceCounts

# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class KalosResult:
    """KαLOS agreement of a corpus: per sample, per unit, per annotation, global.

    Attributes:
        alpha (ndarray (S,)): Per-sample nominal α of the sample's units (at most 1); NaN where undefined.
        reason (ndarray (S,) of str): Why ``alpha`` is NaN (``""`` where defined): fewer than two raters
            assigned, no annotations (every assigned rater drew nothing), or no
            variation (``D_e = 0``: the same objects, all of one class). The
            reference tool reports 1.0 for all of these.
        observed, expected (ndarray (S,)): Per-sample ``D_o`` and ``D_e`` (NaN where fewer than two pairable values).
        n_units (ndarray (S,) of int): Units formed from annotations on each sample (0 where nobody drew anything).
        unit (ndarray (N,) of int): Unit id of each annotation row within its sample, ``0 .. n_units - 1``
            (annotations with one id are judged to be the same object).
        unit_column (ndarray (N,) of int): Column of each annotation row's unit in ``reliability``.
        values (SparseReliability): The pooled reliability matrix, raters × units of the whole corpus, ordered by
            sample, as its present values (codes into ``categories``; a rater not assigned to a sample has no value in
            its units): memory in the number of (unit, assigned rater) values, not raters × units. Includes one
            unanimous ``no_object`` unit per sample where every assigned rater drew nothing. ``reliability`` is the
            dense ``(R, U)`` view (``-1`` missing), for small corpora.
        unit_sample (ndarray (U,) of int): Sample index of each column.
        categories (tuple of str): Category of each code; the last is ``no_object``.
        no_object_code (int): Code of ``no_object`` (``len(categories) - 1``).
        raters (tuple of str): Rater of each row of ``reliability``.
        sample_ids (ndarray (S,)): Id of each sample.
        global_alpha (float): α of the pooled matrix; NaN (with ``global_reason``) if undefined.
        global_reason (str): Why ``global_alpha`` is NaN (``""`` where defined).
        mean_alpha (float): Mean of ``alpha`` over samples where it is defined (NaN if none).
        n_defined, n_undefined (int): Samples with defined / undefined ``alpha``.
        similarity, tau, solver, cost: The configuration.
        empty_unit (ndarray (U,) of bool): Columns that are the unanimous ``no_object`` unit of a sample where
            every assigned rater drew nothing.
        repaired_polygons (int): Polygon annotations repaired (rings dropped, self-intersections resolved) by the
            similarity's validation (:func:`agreement.geometry.similarity.check_similarity`); 0 for boxes.
        counts (CoincidenceCounts): The exact statistics behind ``global_alpha`` (mergeable across shards).
        bound_reason (str): Non-empty when α cannot exceed 0 on this corpus (one class and no unit where raters agree
            that nothing is there, :func:`agreement.methods.kalos.nominal.single_class_bound`): ``global_alpha`` and
            ``mean_alpha`` are then NaN with this reason; the per-sample ``alpha`` are kept (each ``<= 0``).
    """

    alpha: np.ndarray
    reason: np.ndarray
    observed: np.ndarray
    expected: np.ndarray
    n_units: np.ndarray
    unit: np.ndarray
    unit_column: np.ndarray
    values: SparseReliability
    unit_sample: np.ndarray
    categories: tuple
    no_object_code: int
    raters: tuple
    sample_ids: np.ndarray
    global_alpha: float
    global_reason: str
    global_observed: float
    global_expected: float
    mean_alpha: float
    n_defined: int
    n_undefined: int
    similarity: str
    tau: float
    solver: str
    cost: str
    empty_unit: np.ndarray | None = field(repr=False, default=None)
    repaired_polygons: int = 0
    counts: "CoincidenceCounts | None" = field(repr=False, default=None, compare=False)
    bound_reason: str = ""

    @property
    def reliability(self) -> np.ndarray:
        """The dense ``(R, U)`` pooled reliability matrix, ``-1`` missing (R × U memory: small corpora)."""
        return self.values.dense()

    @property
    def n_columns(self) -> int:
        """Units (columns) of the pooled matrix."""
        return self.values.n_columns

    @property
    def mean_reason(self) -> str:
        """Why ``mean_alpha`` is NaN (``""`` when it is defined)."""
        if self.bound_reason:
            return self.bound_reason
        return "" if self.n_defined else "no sample has a defined alpha (see reason)"

    def sample_columns(self, s: int) -> slice:
        """The columns of ``reliability`` that belong to sample ``s``."""
        lo, hi = np.searchsorted(self.unit_sample, [s, s + 1])
        return slice(int(lo), int(hi))

    def undefined_reasons(self) -> dict[str, int]:
        """How many samples are undefined for each reason."""
        reasons, counts = np.unique(self.reason[self.reason != ""].astype(str), return_counts=True)
        return {str(r): int(c) for r, c in zip(reasons, counts, strict=True)}

    def summary(self) -> dict[str, Any]:
        """The headline numbers as a flat dict (``global_alpha``, ``mean_alpha``, ``n_undefined``, ...)."""
        return {
            "global_alpha": float(self.global_alpha),
            "mean_alpha": float(self.mean_alpha),
            "n_defined": int(self.n_defined),
            "n_undefined": int(self.n_undefined),
            "n_samples": int(len(self.alpha)),
            "n_units": int(self.n_columns),
            "similarity": self.similarity,
            "tau": float(self.tau),
            "solver": self.solver,
            "cost": self.cost,
            "repaired_polygons": int(self.repaired_polygons),
        }


@dataclass(frozen=True)
class SensitivityCurve:
    """Global and mean α over a sweep of τ (localisation sensitivity).

    Attributes:
        taus (ndarray (T,)): The thresholds τ, increasing.
        global_alpha, mean_alpha (ndarray (T,)): α of the pooled matrix and the mean over defined samples at each τ.
        n_undefined (ndarray (T,) of int): Samples with undefined α at each τ.
        n_units (ndarray (T,) of int): Columns of the pooled matrix at each τ (fewer as more pairs match).
        similarity, solver, cost: The configuration.
    """

    taus: np.ndarray
    global_alpha: np.ndarray
    mean_alpha: np.ndarray
    n_undefined: np.ndarray
    n_units: np.ndarray
    similarity: str
    solver: str
    cost: str

    def as_dict(self) -> dict[str, list]:
        """Plain lists, for JSON or plotting."""
        return {
            "taus": self.taus.tolist(),
            "global_alpha": self.global_alpha.tolist(),
            "mean_alpha": self.mean_alpha.tolist(),
            "n_undefined": self.n_undefined.tolist(),
            "n_units": self.n_units.tolist(),
        }
