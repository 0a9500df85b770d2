"""Results of the KαLOS diagnostics (:mod:`agreement.methods.kalos.diagnostics`): rater vitality
(:class:`RaterVitality`), class difficulty (:class:`ClassDifficulty`) and collaboration clusters
(:class:`CollaborationClusters`).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from agreement.core.rater_pairs import RaterPairTable

# --------------------------------------------------------------------------
# Rater vitality
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RaterVitality:
    """How much each rater raises (positive) or lowers (negative) agreement.

    Attributes:
        raters (tuple of str): The raters, in the order of the arrays.
        alpha (float): Global α with every rater.
        alpha_without (ndarray (R,)): Global α of the pooled matrix without each rater's row.
        vitality (ndarray (R,)): ``alpha - alpha_without``; NaN where either is undefined.
        reason (ndarray (R,) of str): Why ``vitality`` is NaN (``""`` where defined).
        sample_vitality ((S, R) array-like, stored sparsely): Per sample: the sample's α minus its α without the rater
            (NaN where undefined, e.g. a sample with fewer than three assigned raters or one the rater was not
            assigned); ``.sample``, ``.rater``, ``.value`` hold the (sample, assigned rater) entries, ``np.asarray`` the
            dense array.
        mean_vitality (ndarray (R,)): Mean of ``sample_vitality`` over the samples where it is defined.
        n_samples (ndarray (R,) of int): Samples behind ``mean_vitality``.
    """

    raters: tuple
    alpha: float
    alpha_without: np.ndarray
    vitality: np.ndarray
    reason: np.ndarray
    sample_vitality: "SampleVitality"
    mean_vitality: np.ndarray
    n_samples: np.ndarray

    def as_dict(self) -> dict[str, dict[str, float]]:
        """``{rater: {"vitality", "alpha_without", "mean_vitality"}}``."""
        return {
            r: {
                "vitality": float(self.vitality[k]),
                "alpha_without": float(self.alpha_without[k]),
                "mean_vitality": float(self.mean_vitality[k]),
            }
            for k, r in enumerate(self.raters)
        }


class SampleVitality:
    """Per-sample vitality, kept sparse: one value per (sample, assigned rater).

    Indexing ``sv[s, r]`` gives the value (NaN where undefined or the rater
    was not assigned); ``np.asarray(sv)`` the dense ``(S, R)`` array.
    """

    def __init__(self, S: int, R: int, sample: np.ndarray | None = None, rater: np.ndarray | None = None,
                 value: np.ndarray | None = None) -> None:
        self.shape = (S, R)
        self.sample = np.zeros(0, np.int64) if sample is None else np.asarray(sample, np.int64)
        self.rater = np.zeros(0, np.int64) if rater is None else np.asarray(rater, np.int64)
        self.value = np.zeros(0) if value is None else np.asarray(value, np.float64)

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        out = np.full(self.shape, np.nan)
        out[self.sample, self.rater] = self.value
        return out if dtype is None else out.astype(dtype)

    def __getitem__(self, index: Any) -> Any:
        return np.asarray(self)[index]


# --------------------------------------------------------------------------
# Class difficulty
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassDifficulty:
    """Agreement on the units of each class.

    Attributes:
        classes (tuple of str): The class names (``no_object`` excluded), in code order.
        alpha (ndarray (K,)): α over the units in which at least one rater drew the class; NaN where undefined.
        n_units (ndarray (K,) of int): Those units.
        n_annotations (ndarray (K,) of int): Annotations of the class.
        reason (ndarray (K,) of str): Why a value is NaN (``""`` where defined).
    """

    classes: tuple
    alpha: np.ndarray
    n_units: np.ndarray
    n_annotations: np.ndarray
    reason: np.ndarray

    def hardest(self, k: int | None = None) -> list[tuple[str, float]]:
        """Classes from the lowest α up (undefined last), ``k`` of them (all by default)."""
        order = np.lexsort((np.arange(len(self.classes)), np.nan_to_num(self.alpha, nan=np.inf)))
        return [(self.classes[i], float(self.alpha[i])) for i in order[:k]]

    def as_dict(self) -> dict[str, dict[str, float]]:
        """``{class: {"alpha", "n_units", "n_annotations"}}``, plain Python numbers (for JSON)."""
        return {
            c: {"alpha": float(self.alpha[k]), "n_units": int(self.n_units[k]), "n_annotations": int(self.n_annotations[k])}
            for k, c in enumerate(self.classes)
        }


# --------------------------------------------------------------------------
# Collaboration clusters
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class CollaborationClusters:
    """Pairwise rater agreement and a clustering of raters by it.

    Attributes:
        raters (tuple of str): The raters, in the order of the arrays.
        pairs (RaterPairTable): The rater pairs that share at least one sample (a pair that never
            did is absent: no data), with ``values["alpha"]`` (pairwise α,
            :func:`pair_reliability`), ``values["n_units"]`` (pairable units
            behind it) and ``reasons["alpha"]``.
        distance (ndarray (R, R)): ``1 - alpha`` clipped to ``[0, 2]``, 1 (chance) where α is undefined
            or the pair shares no sample, 0 on the diagonal.
        linkage (ndarray (R - 1, 4)): :func:`scipy.cluster.hierarchy.linkage` of ``distance``.
        order (ndarray (R,) of int): Rater indices in dendrogram leaf order (optimal leaf ordering up to
            ``OPTIMAL_ORDER_MAX_RATERS`` raters), for a heatmap.
    """

    raters: tuple
    pairs: RaterPairTable
    distance: np.ndarray
    linkage: np.ndarray
    order: np.ndarray

    def _dense(self, name: str, fill: Any, dtype: DTypeLike = np.float64) -> np.ndarray:
        R = len(self.raters)
        out = np.full((R, R), fill, dtype=dtype)
        src = self.pairs.values[name] if name in self.pairs.values else self.pairs.reasons[name]
        out[self.pairs.a, self.pairs.b] = src
        out[self.pairs.b, self.pairs.a] = src
        return out

    @property
    def alpha(self) -> np.ndarray:
        """Dense symmetric ``(R, R)`` pairwise α, NaN on the diagonal, where undefined and where no data."""
        return self._dense("alpha", np.nan)

    @property
    def n_units(self) -> np.ndarray:
        """Dense ``(R, R)`` pairable units (0 where no data)."""
        return self._dense("n_units", 0).astype(np.int64)

    def clusters(self, max_distance: float = 1.0) -> np.ndarray:
        """Flat cluster label of each rater, cutting the dendrogram at ``max_distance`` (``1 - alpha``)."""
        from scipy.cluster.hierarchy import fcluster

        if len(self.raters) < 2:
            return np.ones(len(self.raters), dtype=np.int64)
        labels: np.ndarray = fcluster(self.linkage, t=max_distance, criterion="distance").astype(np.int64)
        return labels
