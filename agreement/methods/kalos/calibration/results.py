"""Results of :func:`agreement.methods.kalos.calibration.calibrate`: the plot data of one distance
(:class:`CalibrationPlot`), the calibration of one distance (:class:`DistanceCalibration`) and of the
corpus (:class:`CalibrationResult`), with JSON-ready dictionaries (NaN as ``None``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


def sample_summary(x: np.ndarray) -> dict[str, float]:
    """Summary statistics of a distance sample, for the reports.

    Args:
        x: ``(n,)`` float64 distances in ``[0, 1]``.

    Returns:
        ``n``, ``mean``, ``std`` (population), ``median``, the quantiles ``q05``, ``q25``, ``q75``, ``q95``
        (numpy's linear interpolation) and the shares of exact 0 and exact 1; NaN for all but ``n`` when
        the sample is empty.
    """
    if len(x) == 0:
        keys = ("mean", "std", "median", "q05", "q25", "q75", "q95", "share_zero", "share_one")
        return {"n": 0, **{k: math.nan for k in keys}}
    q = np.quantile(x, [0.05, 0.25, 0.5, 0.75, 0.95])
    return {
        "n": int(len(x)), "mean": float(x.mean()), "std": float(x.std()), "median": float(q[2]),
        "q05": float(q[0]), "q25": float(q[1]), "q75": float(q[3]), "q95": float(q[4]),
        "share_zero": float(np.mean(x == 0.0)), "share_one": float(np.mean(x == 1.0)),
    }


def _list(a: np.ndarray) -> list:
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, dtype=np.float64)]


def _num(v: float) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


@dataclass(frozen=True, eq=False)
class CalibrationPlot:
    """Plot data of one distance, as plain arrays (for plotly or matplotlib).

    Attributes:
        bin_edges: ``(B + 1,)`` histogram edges on ``[0, 1]``.
        hist_observed, hist_expected: ``(B,)`` histogram densities (area 1;
            zeros for an empty sample).
        grid: ``(G,)`` points of ``[0, 1]``.
        density_observed, density_expected: ``(G,)`` kernel density estimates
            (NaN where undefined).
        tau: τ* (NaN when undefined), the vertical marker.
    """

    bin_edges: np.ndarray
    hist_observed: np.ndarray
    hist_expected: np.ndarray
    grid: np.ndarray
    density_observed: np.ndarray
    density_expected: np.ndarray
    tau: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready lists (NaN as ``None``)."""
        return {
            "bin_edges": _list(self.bin_edges),
            "hist_observed": _list(self.hist_observed),
            "hist_expected": _list(self.hist_expected),
            "grid": _list(self.grid),
            "density_observed": _list(self.density_observed),
            "density_expected": _list(self.density_expected),
            "tau": _num(self.tau),
        }


@dataclass(frozen=True, eq=False)
class DistanceCalibration:
    r"""Calibration of one distance.

    Attributes:
        distance: the similarity name (distance = 1 - similarity).
        d_observed, d_expected: the samples of :func:`disagreement_samples`.
        observed_summary, expected_summary: ``n``, ``mean``, ``std``, ``median``,
            quantiles ``q05``..``q95``, ``share_zero``, ``share_one`` (share at
            distance 1: no overlap or an empty other set).
        ks_one_sided: :math:`D^+ = \sup (F_o - F_e)` (KαLOS), NaN when undefined.
        ks_two_sided: :math:`\sup |F_o - F_e|`, NaN when undefined.
        ks_location: the middle of the interval where ``F_o - F_e`` is largest.
        tau: τ* (distance scale), NaN when undefined.
        similarity_threshold: ``1 - tau``, the value to pass as KαLOS's ``tau``.
        tau_method, tau_fallback, mode_observed, mode_expected: see :class:`TauSelection`.
        plot: :class:`CalibrationPlot`.
        reason: ``""`` when the statistics are defined, otherwise why not.
        repaired_polygons: polygon annotations repaired before computing a polygon or mask distance (see
            :func:`agreement.geometry.similarity.check_similarity`; 0 otherwise).
    """

    distance: str
    d_observed: np.ndarray
    d_expected: np.ndarray
    observed_summary: dict
    expected_summary: dict
    ks_one_sided: float
    ks_two_sided: float
    ks_location: float
    tau: float
    similarity_threshold: float
    tau_method: str
    tau_fallback: str
    mode_observed: float
    mode_expected: float
    plot: CalibrationPlot
    reason: str = ""
    repaired_polygons: int = 0

    def to_dict(self, include_samples: bool = False) -> dict[str, Any]:
        """JSON-ready dict (NaN as ``None``); the raw samples only on request."""
        out: dict[str, Any] = {
            "distance": self.distance,
            "observed_summary": {k: (v if isinstance(v, int) else _num(v)) for k, v in self.observed_summary.items()},
            "expected_summary": {k: (v if isinstance(v, int) else _num(v)) for k, v in self.expected_summary.items()},
            "ks_one_sided": _num(self.ks_one_sided),
            "ks_two_sided": _num(self.ks_two_sided),
            "ks_location": _num(self.ks_location),
            "tau": _num(self.tau),
            "similarity_threshold": _num(self.similarity_threshold),
            "tau_method": self.tau_method,
            "tau_fallback": self.tau_fallback,
            "mode_observed": _num(self.mode_observed),
            "mode_expected": _num(self.mode_expected),
            "plot": self.plot.to_dict(),
            "reason": self.reason,
            "repaired_polygons": self.repaired_polygons,
        }
        if include_samples:
            out["d_observed"] = _list(self.d_observed)
            out["d_expected"] = _list(self.d_expected)
        return out


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """Calibration of several distances on one corpus.

    Attributes:
        per_distance: ``{name: DistanceCalibration}`` in the requested order.
        best_distance: the distance with the largest one-sided KS (first in
            the requested order on ties), ``None`` when no KS is defined.
        best_ks: its one-sided KS (NaN when none).
        tau: τ* of the best distance (distance scale; NaN when undefined).
        similarity_threshold: ``1 - tau``: KαLOS's ``tau`` (a similarity).
        beta_star: the OT dummy cost at λ = 1, ``"paper"`` normalisation:
            τ* of the ``"giou"`` distance (see :func:`beta_from_tau`).
        beta_star_oc_cost: the same under ``"oc_cost"`` (τ*/2).
        beta_reason: ``""`` when β* is defined, otherwise why not.
        seed: the seed of the ``D_e`` draws.
        n_samples: samples in the corpus.
        reason: ``""`` when a best distance exists, otherwise why not.
    """

    per_distance: dict
    best_distance: str | None
    best_ks: float
    tau: float
    similarity_threshold: float
    beta_star: float
    beta_star_oc_cost: float
    beta_reason: str
    seed: int
    n_samples: int
    reason: str = ""

    def summary(self) -> dict[str, Any]:
        """Flat headline numbers (NaN kept as float NaN), e.g. for an operator result:
        ``best_distance``, ``ks``, ``tau_star``, ``similarity_threshold``,
        ``beta_star``, ``beta_star_oc_cost``, and per distance ``ks_{name}``,
        ``ks2_{name}``, ``tau_{name}``, ``tau_method_{name}``."""
        out: dict[str, Any] = {
            "best_distance": self.best_distance,
            "ks": self.best_ks,
            "tau_star": self.tau,
            "similarity_threshold": self.similarity_threshold,
            "beta_star": self.beta_star,
            "beta_star_oc_cost": self.beta_star_oc_cost,
            "beta_reason": self.beta_reason,
            "reason": self.reason,
        }
        for name, c in self.per_distance.items():
            out[f"ks_{name}"] = c.ks_one_sided
            out[f"ks2_{name}"] = c.ks_two_sided
            out[f"tau_{name}"] = c.tau
            out[f"tau_method_{name}"] = c.tau_method
        return out

    def to_dict(self, include_samples: bool = False) -> dict[str, Any]:
        """JSON-ready dict (NaN as ``None``)."""
        return {
            "per_distance": {k: v.to_dict(include_samples) for k, v in self.per_distance.items()},
            "best_distance": self.best_distance,
            "best_ks": _num(self.best_ks),
            "tau": _num(self.tau),
            "similarity_threshold": _num(self.similarity_threshold),
            "beta_star": _num(self.beta_star),
            "beta_star_oc_cost": _num(self.beta_star_oc_cost),
            "beta_reason": self.beta_reason,
            "seed": self.seed,
            "n_samples": self.n_samples,
            "reason": self.reason,
        }
