r"""Each rater's localisation noise, from the differences between raters on the same objects.

Two members ``i`` (rater ``a``) and ``j`` (rater ``b``) of one unit are two
noisy copies of one object, so their difference, in the size-relative
parametrisation of :mod:`agreement.methods.consensus.fusion` (``d`` coordinates),
has variance ``σ_a^2 + σ_b^2`` per coordinate whatever the truth is. With
``z_{ij} = \lVert Δ_{ij} \rVert^2 / (d\, m_d)``, ``m_d`` the median of
``χ^2_d / d`` (so that ``z`` has median ``σ_a^2 + σ_b^2`` for Gaussian
noise), the rater-pair statistic ``D_{ab} = \operatorname{median}_{ij} z_{ij}``
over the units both drew gives the linear system

.. math:: σ_a^2 + σ_b^2 = D_{ab} \quad \text{for every rater pair } (a, b),

solved by non-negative least squares, each equation weighted by
``\sqrt{n_{ab}} / D_{ab}`` (``n_{ab}`` shared units: the relative error of a
median of ``n`` values is about ``1 / \sqrt n``), so that a precise pair's
small ``D`` is fitted as closely as a noisy pair's large one (Grubbs' estimator of instrument precisions, with medians so that the
heavy tails of real annotators' boxes, Student's t with ``ν ≈ 1`` on LVIS,
do not dominate). It needs three raters with shared objects to separate
their scales; with two, the sum is split evenly. Unlike the residuals to a
fused geometry it has no degenerate solution where the most precise rater's
``σ`` collapses to 0 and takes all the weight.

The fusion then weights member ``i`` by ``u_i / σ_{r(i)}^2`` with the
Student-t weight ``u_i = (ν + d_i) / (ν + \lVert e_i \rVert^2 / σ_{r(i)}^2)``
of its residual ``e_i`` to the fused geometry (iteratively reweighted least
squares, the EM of the t location model; ``ν = ∞``: the Gaussian precision
-weighted mean).

References: F. E. Grubbs, "On estimating precision of measuring instruments
and product variability", JASA 43, 1948; K. L. Lange, R. J. A. Little and
J. M. G. Taylor, "Robust statistical modeling using the t distribution",
JASA 84, 1989.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix, identity, vstack
from scipy.stats import chi2

from agreement.methods.consensus.fusion import Fused, pixel_scale
from agreement.methods.consensus.units import UnitTable, geometry_fusion

__all__ = ["member_pairs", "pair_differences", "BoxPairs", "pairwise_scales", "bounded_least_squares", "student_weights",
           "SIGMA_MIN"]

#: Floor of a rater's relative localisation noise.
SIGMA_MIN = 1e-4
_TINY = 1e-9


def member_pairs(units: UnitTable) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``(i, j)``, ``i < j``, of members (positions in unit order) of one unit."""
    size = units.size
    m = size[units.member_unit]
    rep = np.maximum(m - 1 - (np.arange(len(m)) - units.starts[units.member_unit]), 0)
    i = np.repeat(np.arange(len(m)), rep)
    off = np.arange(len(i)) - np.repeat(np.cumsum(rep) - rep, rep)
    return i, i + 1 + off


def _cuboid_differences(data: Any, units: UnitTable, fused: Fused, pi: np.ndarray,
                        pj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cuboid pairs: location difference in the fused cuboid's frame over its dimensions, and log-dimensions."""
    from scipy.spatial.transform import Rotation

    order, u = units.order, units.member_unit[pi]
    c, f = data.cuboids, fused.cuboids
    assert f is not None, "a cuboid fusion gives fused cuboids"
    dims = np.maximum(f[u, 3:6], _TINY)
    frame = Rotation.from_euler("XYZ", f[u, 6:]).inv().apply(c[order[pi], :3] - c[order[pj], :3]) / dims
    dlog = np.log(np.maximum(c[order[pi], 3:6], _TINY)) - np.log(np.maximum(c[order[pj], 3:6], _TINY))
    return (frame ** 2).sum(axis=1) + (dlog ** 2).sum(axis=1), np.full(len(pi), 6.0)


def _keypoint_differences(data: Any, units: UnitTable, fused: Fused, pi: np.ndarray,
                          pj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keypoint pairs: pixel offsets of the points both label, over the fused box's object scale."""
    order, u = units.order, units.member_unit[pi]
    px = pixel_scale(data.image_sizes, units.unit_sample)[u]
    fb = fused.boxes[u]
    obj = np.sqrt(np.maximum(fb[:, 2] * px[:, 0] * fb[:, 3] * px[:, 1], _TINY))
    a, b = data.keypoints[order[pi]], data.keypoints[order[pj]]
    both = ~(np.isnan(a).any(axis=2) | np.isnan(b).any(axis=2))
    d = np.where(both[..., None], a - b, 0.0) * px[:, None, :] / obj[:, None, None]
    return (d ** 2).sum(axis=(1, 2)), 2.0 * both.sum(axis=1)


#: Built-in fusion (:func:`agreement.methods.consensus.units.geometry_fusion`) -> its pair differences; the
#: rest differ by their boxes (:class:`BoxPairs`).
_PAIR_DIFFERENCES = {"cuboids": _cuboid_differences, "keypoints": _keypoint_differences}


def pair_differences(kind: str, data: Any, units: UnitTable, fused: Fused, pi: np.ndarray,
                     pj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(‖Δ_ij‖², d_ij)`` of member pairs in the size-relative parametrisation of ``kind``.

    Args:
        kind: the fused geometry; its built-in fusion (:func:`agreement.methods.consensus.units.geometry_fusion`)
            chooses the parametrisation (boxes unless it is keypoints or cuboids).
        data: the corpus.
        units: the units.
        fused: the fused geometry.
        pi: ``(P,)`` the first member of each pair (unit order).
        pj: ``(P,)`` the second.

    Returns:
        The squared differences and their numbers of coordinates, ``(P,)`` each.
    """
    hook = _PAIR_DIFFERENCES.get(geometry_fusion(kind))
    if hook is not None:
        return hook(data, units, fused, pi, pj)
    return BoxPairs.of(data.boxes, units, pi, pj).differences(fused)


@dataclass(frozen=True)
class BoxPairs:
    r"""Member pairs of boxes, with the parts of their difference that the fused geometry does not
    change: the centre difference ``c_i - c_j`` and ``\lVert \log s_i - \log s_j \rVert^2`` (sizes
    ``s = (w, h)``). Only the centre's scale, the fused box's size, moves while the EM iterates, so
    the pairs are made once and :meth:`differences` is what each iteration computes.

    Attributes:
        unit (ndarray (P,)):
            The unit of each pair.
        centre (ndarray (P, 2)):
            ``c_i - c_j``, relative image units.
        log_size (ndarray (P,)):
            Squared difference of the log sizes, summed over width and height.
    """

    unit: np.ndarray
    centre: np.ndarray
    log_size: np.ndarray

    @classmethod
    def of(cls, boxes: np.ndarray, units: UnitTable, pi: np.ndarray, pj: np.ndarray) -> "BoxPairs":
        """The pairs ``(pi[k], pj[k])`` of members (positions in unit order) of ``boxes`` (rows' ``[x, y, w, h]``)."""
        order = units.order
        a, b = boxes[order[pi]], boxes[order[pj]]
        dl = np.log(np.maximum(a[:, 2:], _TINY)) - np.log(np.maximum(b[:, 2:], _TINY))
        return cls(units.member_unit[pi], (a[:, :2] + a[:, 2:] / 2) - (b[:, :2] + b[:, 2:] / 2),
                   (dl ** 2).sum(axis=1))

    def select(self, keep: np.ndarray) -> "BoxPairs":
        """The pairs where ``keep`` (a boolean mask or indices)."""
        return BoxPairs(self.unit[keep], self.centre[keep], self.log_size[keep])

    def differences(self, fused: Fused) -> tuple[np.ndarray, np.ndarray]:
        r"""``(\lVert Δ \rVert^2, 4)`` per pair: ``\lVert (c_i - c_j) / \hat s \rVert^2 + \lVert \log s_i - \log s_j
        \rVert^2`` with ``\hat s`` the size of the pair's fused box."""
        dc = self.centre / np.maximum(fused.boxes[self.unit, 2:], _TINY)
        return (dc ** 2).sum(axis=1) + self.log_size, np.full(len(self.unit), 4.0)


def _pair_medians(key: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct ``key``: its value, the median of ``z`` and the count."""
    # z sorted, then (stably) by key: within each key z ascends, as with lexsort((z, key)), in about
    # half its time (a plain sort of floats, then a stable sort of small integers)
    order = np.argsort(z)
    small = key[order].astype(np.uint16) if len(key) and 0 <= key.min() and key.max() < 1 << 16 else key[order]
    order = order[np.argsort(small, kind="stable")]
    key, z = key[order], z[order]
    uk, start, cnt = np.unique(key, return_index=True, return_counts=True)
    lo, hi = start + (cnt - 1) // 2, start + cnt // 2
    return uk, 0.5 * (z[lo] + z[hi]), cnt


def pairwise_scales(sq: np.ndarray, dim: np.ndarray, ra: np.ndarray, rb: np.ndarray, R: int) -> np.ndarray:
    """``σ_r`` (R,) from pair differences (module docstring); NaN for a rater without pairs.

    Args:
        sq (ndarray (P,)): Squared difference per member pair.
        dim (ndarray (P,)): Its number of coordinates.
        ra (ndarray (P,)): The rater of the pair's first member.
        rb (ndarray (P,)): The rater of the second.
        R (int): The number of raters.

    Returns:
        ndarray (R,): Each rater's ``σ_r``.
    """
    ok = dim > 0
    if not ok.any():
        return np.full(R, np.nan)
    d = dim[ok]
    if d.min() == d.max():  # one number of coordinates (boxes: 4), without sorting them all
        z = sq[ok] / chi2.median(d[:1])[0]
    else:
        dims, inv = np.unique(d, return_inverse=True)
        z = sq[ok] / chi2.median(dims)[inv]  # ||Δ||² / (d m_d), with d m_d the median of χ²_d
    a, b = np.minimum(ra[ok], rb[ok]), np.maximum(ra[ok], rb[ok])
    uk, med, cnt = _pair_medians(a * R + b, z)
    pa, pb = uk // R, uk % R
    seen = np.zeros(R, bool)
    seen[pa] = seen[pb] = True
    # The median of n values has a relative error of about 1 / sqrt(n): weight each
    # equation by sqrt(n) / D, so that a precise pair's small D is fitted as well as a noisy pair's large one.
    w = np.sqrt(cnt.astype(np.float64)) / np.maximum(med, SIGMA_MIN ** 2)
    n = len(uk)
    rows = np.repeat(np.arange(n), 2)
    A = csr_matrix((np.repeat(w, 2), (rows, np.stack([pa, pb], 1).ravel())), shape=(n, R))
    # A faint pull of every rater towards half the median pair statistic keeps the
    # system determined when the rater-pair graph cannot separate two scales.
    half = 0.5 * float(np.median(med))
    ridge = 1e-3 * np.sqrt(cnt.sum() / max(seen.sum(), 1)) / max(half, SIGMA_MIN ** 2)
    A = vstack([A, ridge * identity(R, format="csr")]).tocsr()
    rhs = np.concatenate([w * med, np.full(R, ridge * half)])
    sol = bounded_least_squares(A, rhs, SIGMA_MIN ** 2)
    return np.where(seen, np.sqrt(np.maximum(sol, SIGMA_MIN ** 2)), np.nan)


def bounded_least_squares(A: Any, rhs: np.ndarray, lower: float) -> np.ndarray:
    """``argmin_x ‖A x − rhs‖`` subject to ``x ≥ lower``, for a tall sparse ``A`` of full column rank.

    With ``x = lower + y`` and the Cholesky factor ``L`` of ``AᵀA``,
    ``‖A y − c‖² = ‖Lᵀ y − L⁻¹ Aᵀ c‖² + const`` (``c = rhs − A·lower``), so
    the bounded problem is a dense non-negative least squares with as many
    rows as unknowns (Lawson–Hanson, :func:`scipy.optimize.nnls`), run only
    when a few active-set steps from the unconstrained minimum do not reach
    the solution (checked by its optimality conditions; usually only a few
    raters sit at the floor): a few milliseconds for hundreds of raters where an iterative solver on the
    (rater-pair × rater) system takes seconds. The strictly convex problem
    has one solution; :func:`scipy.optimize.lsq_linear` finds the same one
    (tested).
    """
    from scipy.linalg import cholesky, solve_triangular
    from scipy.optimize import nnls

    n = A.shape[1]
    c = rhs - A @ np.full(n, lower)
    gram = (A.T @ A).toarray() if hasattr(A, "toarray") else A.T @ A
    atc = A.T @ c
    y = _active_set_guess(gram, atc)
    if y is None:
        L = cholesky(gram, lower=True)
        y = nnls(L.T, solve_triangular(L, atc, lower=True), maxiter=50 * n)[0]
    return lower + y


def _active_set_guess(gram: np.ndarray, atc: np.ndarray, steps: int = 4) -> np.ndarray | None:
    """The minimum of ``yᵀ G y − 2 yᵀ Aᵀc`` over ``y ≥ 0`` when a few active-set steps find it, else None.

    Starting from the unconstrained minimum, the coordinates that came out
    negative are fixed at 0 and the rest re-solved; the result is returned
    only when it satisfies the Karush–Kuhn–Tucker conditions (feasible, and
    the gradient non-negative on every fixed coordinate), which identify the
    unique minimum of this strictly convex problem.
    """
    from scipy.linalg import cho_factor, cho_solve

    free = np.ones(len(atc), bool)
    for _ in range(steps):
        y = np.zeros(len(atc))
        if free.any():
            idx = np.flatnonzero(free)
            y[idx] = cho_solve(cho_factor(gram[np.ix_(idx, idx)]), atc[idx])
        if np.any(y[free] < 0):
            free &= y >= 0
            continue
        grad = gram @ y - atc
        if np.all(grad[~free] >= -1e-12 * max(1.0, float(np.abs(atc).max(initial=0.0)))):
            return y
        free |= grad < 0
    return None


def student_weights(sq: np.ndarray, dim: np.ndarray, sigma: np.ndarray, nu: float) -> np.ndarray:
    """Student-t IRLS weights ``(ν + d) / (ν + sq / σ²)`` (1 for ``ν = ∞``)."""
    if not np.isfinite(nu):
        return np.ones(len(sq))
    weights: np.ndarray = (nu + dim) / (nu + sq / sigma ** 2)
    return weights


#: Pairs :func:`tail_index` looks at, at most.
_TAIL_PAIRS = 20_000
#: Candidate tail indices ν of :func:`tail_index` (``inf``: Gaussian).
TAILS: tuple[float, ...] = (1.0, 2.0, 3.0, 5.0, 10.0, 30.0, float("inf"))


def _loglik(q: np.ndarray, dim: np.ndarray, log_s2: np.ndarray, nu: float, log_c: float) -> float:
    """Log-likelihood of pair differences under a d-variate t (or Gaussian) with scale² ``c² s²``."""
    c2 = np.exp(2.0 * log_c)
    base = -0.5 * dim * (log_s2 + 2.0 * log_c)
    if not np.isfinite(nu):
        return float((base - 0.5 * dim * np.log(2 * np.pi) - q / (2.0 * c2)).sum())
    from scipy.special import gammaln

    return float((base + gammaln((nu + dim) / 2) - gammaln(nu / 2) - 0.5 * dim * np.log(nu * np.pi)
                  - 0.5 * (nu + dim) * np.log1p(q / (nu * c2))).sum())


def tail_index(sq: np.ndarray, dim: np.ndarray, scale2: np.ndarray) -> float:
    """The ν of :data:`TAILS` under which the pair differences are most likely.

    Each difference ``Δ_ij`` (``d_ij`` coordinates, ``‖Δ_ij‖² = sq``) is
    modelled as a d-variate Student t with scale ``c² (σ_a² + σ_b²)``
    (``scale2``), ``c`` fitted for each ν; the Gaussian is ``ν = ∞``. The
    difference of two t variables is not exactly t; this only chooses how
    much the fusion should discount members far from the others. At most
    20,000 pairs are used (evenly spread over the corpus).
    """
    from scipy.optimize import minimize_scalar

    ok = np.flatnonzero((dim > 0) & (scale2 > 0))
    if len(ok) < 10:
        return float("inf")
    if len(ok) > _TAIL_PAIRS:  # an evenly spread, deterministic subset: ν is chosen from a coarse grid
        ok = ok[np.linspace(0, len(ok) - 1, _TAIL_PAIRS).astype(np.int64)]
    q, d, ls = sq[ok] / scale2[ok], dim[ok], np.log(scale2[ok])
    best, best_ll = float("inf"), -np.inf
    for nu in TAILS:
        res = minimize_scalar(lambda lc, nu=nu: -_loglik(q, d, ls, nu, lc), bounds=(-5.0, 5.0), method="bounded")
        if -res.fun > best_ll:
            best, best_ll = nu, -res.fun
    return best
