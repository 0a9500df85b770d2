r"""Fused geometry of a unit: precision-weighted means in size-relative parametrisations.

Each member ``i`` of a unit (one rater's annotation of the object) is a noisy
copy of the unknown true geometry ``t``, with noise **relative to the
object's size** and a rater-specific scale ``σ_r``; given weights
``w_i = 1 / σ_{r(i)}^2`` the maximum-likelihood (Gaussian) estimate of ``t``
is the precision-weighted mean in the parametrisation where the noise is
additive:

* **boxes** ``[x, y, w, h]``: centre and log-size,
  ``(c_x, c_y, \log w, \log h)``; the centre noise is ``σ_r`` times the
  width (height), so

  .. math:: \hat c = \frac{\sum_i w_i c_i}{\sum_i w_i}, \qquad
            \log \hat w = \frac{\sum_i w_i \log w_i}{\sum_i w_i}

  and the residuals ``((c_i - \hat c) / \hat w, \log w_i - \log \hat w)``
  are unit-free (four per box);
* **keypoints**: per labelled point, the precision-weighted mean of the
  members that label it (NaN where none does); residuals are pixel
  offsets over the object scale ``\sqrt{\text{box area}}`` (two per point);
* **3D cuboids**: location by precision-weighted mean (residuals in the
  fused cuboid's frame over its dimensions), dimensions by the weighted
  mean of their logs, and rotation by the weighted **Karcher (geodesic)
  mean** on SO(3) (three iterations of ``R ← R \exp(\sum_i w_i
  \log(R^\top R_i) / \sum_i w_i)``), after aligning each member to the
  current mean with the cuboid's symmetries that keep its dimensions
  (half turns about its own axes, under which a box is unchanged);
* **masks and polygons** by a reliability-weighted pixel vote, STAPLE
  (:func:`fuse_pixels`).

Means are taken relative to a reference member (the unit's first), so that
identical members give their common geometry **bit for bit**.

Every fusion also returns, per member, its squared residual to the fused
geometry and its number of coordinates, from which
:mod:`agreement.methods.consensus.scale` computes the Student-t weights that make
the fusion robust to a rater's occasional far-off box.

References: S. K. Warfield, K. H. Zou and W. M. Wells, IEEE TMI 23(7), 2004
(STAPLE); H. Karcher, "Riemannian center of mass and mollifier smoothing",
Comm. Pure Appl. Math. 30, 1977, and R. Hartley et al., "Rotation
averaging", IJCV 103, 2013 (rotation means); S. Branson, G. Van Horn and
P. Perona, "Lean Crowdsourcing", CVPR 2017 (box noise relative to size).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
from scipy.spatial.transform import Rotation

from agreement.methods.consensus.units import UnitTable, geometry_fusion

__all__ = ["Fused", "BoxOffsets", "fuse_boxes", "fuse_keypoints", "fuse_cuboids", "fuse_geometry", "box_iou_paired",
           "pixel_scale", "fuse_declared", "fuses_boxes", "row_weights"]

_TINY = 1e-9  # floor of a relative size before its log (a zero-area box)
# Half turns about a cuboid's own axes: the rotations that leave a box (and its dimensions) unchanged.
_SYMMETRIES = Rotation.from_rotvec(np.array([[0, 0, 0], [np.pi, 0, 0], [0, np.pi, 0], [0, 0, np.pi]], float))


@dataclass(frozen=True)
class Fused:
    """Fused geometry of every unit and the members' residual statistics.

    Attributes:
        boxes (ndarray (U, 4)):
            Relative ``[x, y, w, h]`` (NaN for 3D cuboids).
        keypoints (ndarray (U, K, 2) or None): Fused keypoints (a keypoint fusion), NaN where no member labels
            the point.
        cuboids (ndarray (U, 9) or None): Fused cuboids (a cuboid fusion).
        sq (ndarray (M,)):
            Squared residual of each member (in unit order), relative units.
        dim (ndarray (M,)):
            Number of residual coordinates of each member.
        weights (ndarray (M,) or None): The members' weights the geometry was fused with
            (:func:`fuse_geometry`), for a declared column fused beside it (:func:`fuse_declared`).
    """

    boxes: np.ndarray
    keypoints: np.ndarray | None = None
    cuboids: np.ndarray | None = None
    sq: np.ndarray | None = None
    dim: np.ndarray | None = None
    weights: np.ndarray | None = None


def _weighted_mean(values: np.ndarray, unit: np.ndarray, U: int, wt: np.ndarray, wsum: np.ndarray) -> np.ndarray:
    """Per unit ``sum_i wt_i values_i / wsum_u`` for a ``(M, k)`` array."""
    cols = [np.bincount(unit, weights=wt * values[:, k], minlength=U) for k in range(values.shape[1])]
    mean: np.ndarray = np.stack(cols, axis=1) / wsum[:, None]
    return mean


def box_iou_paired(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of the box pairs ``(a[k], b[k])``, relative ``[x, y, w, h]``; identical boxes 1, else 0/0 → 0."""
    ix = np.maximum(np.minimum(a[:, 0] + a[:, 2], b[:, 0] + b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0.0)
    iy = np.maximum(np.minimum(a[:, 1] + a[:, 3], b[:, 1] + b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0.0)
    inter = ix * iy
    union = a[:, 2] * a[:, 3] + b[:, 2] * b[:, 3] - inter
    out = np.divide(inter, union, out=np.zeros(len(a)), where=union > 0)
    out[np.all(a == b, axis=1)] = 1.0
    iou: np.ndarray = out
    return iou


@dataclass(frozen=True)
class BoxOffsets:
    r"""Every member's box relative to its unit's first member (the reference), in the fusion's
    parametrisation: what :func:`fuse_boxes` needs of the boxes, computed once per unit table (the
    EM fuses the same members again at every iteration with new weights).

    Attributes:
        offset (ndarray (M, 4)):
            Per member (unit order) ``(c_x - c^0_x, c_y - c^0_y, \log w - \log w^0, \log h - \log h^0)``
            against the reference ``0``.
        reference (ndarray (U, 4)):
            The reference box of each unit.
    """

    offset: np.ndarray
    reference: np.ndarray

    @classmethod
    def of(cls, boxes: np.ndarray, units: UnitTable) -> "BoxOffsets":
        """The offsets of the rows ``boxes`` (relative ``[x, y, w, h]``) grouped by ``units``."""
        b = boxes[units.order]
        ref = b[units.starts[:-1]][units.member_unit]
        d = np.empty((len(b), 4))
        d[:, 0] = (b[:, 0] - ref[:, 0]) + (b[:, 2] - ref[:, 2]) / 2.0
        d[:, 1] = (b[:, 1] - ref[:, 1]) + (b[:, 3] - ref[:, 3]) / 2.0
        d[:, 2:] = np.log(np.maximum(b[:, 2:], _TINY)) - np.log(np.maximum(ref[:, 2:], _TINY))
        return cls(d, b[units.starts[:-1]])


def fuse_boxes(boxes: np.ndarray, units: UnitTable, wt: np.ndarray, *, offsets: BoxOffsets | None = None) -> Fused:
    r"""Precision-weighted mean boxes in ``(c_x, c_y, \log w, \log h)``, exact for identical members.

    Args:
        boxes (ndarray (N, 4)):
            Relative ``[x, y, w, h]`` of every row.
        units (UnitTable): The units.
        wt (ndarray (M,)):
            Weight of each member (unit order), ``> 0``.
        offsets (BoxOffsets, optional):
            ``BoxOffsets.of(boxes, units)``, when the caller fuses the same boxes again.

    Returns:
        Fused:
            ``boxes`` (U, 4); ``sq`` and ``dim`` (4) per member.
    """
    U, mu = units.n_units, units.member_unit
    off = offsets if offsets is not None else BoxOffsets.of(boxes, units)
    d, r0 = off.offset, off.reference
    wsum = np.bincount(mu, weights=wt, minlength=U)
    m = _weighted_mean(d, mu, U, wt, wsum)
    g = np.exp(m[:, 2:])
    out = np.empty((U, 4))
    out[:, 2:] = r0[:, 2:] * g
    out[:, :2] = r0[:, :2] + m[:, :2] + r0[:, 2:] * (1.0 - g) / 2.0
    scale = np.maximum(out[:, 2:], _TINY)[mu]
    e = d - m[mu]
    e[:, :2] /= scale
    return Fused(boxes=out, sq=(e ** 2).sum(axis=1), dim=np.full(len(d), 4.0))


def pixel_scale(image_sizes: np.ndarray, unit_sample: np.ndarray) -> np.ndarray:
    """``(U, 2)`` pixels per relative unit of each unit's image (1, 1 where the image size is unknown).

    Args:
        image_sizes: ``(S, 2)`` ``(W, H)`` of every sample (NaN or 0 where unknown).
        unit_sample: ``(U,)`` the sample of each unit.

    Returns:
        ``(U, 2)`` the image size of each unit's sample, ``(1, 1)`` where it is unknown.
    """
    size = image_sizes[unit_sample]
    ok = np.isfinite(size).all(axis=1) & (size > 0).all(axis=1)
    return np.where(ok[:, None], size, 1.0)


def fuse_keypoints(keypoints: np.ndarray, boxes: np.ndarray, units: UnitTable, wt: np.ndarray,
                   image_sizes: np.ndarray) -> Fused:
    r"""Per labelled point, the precision-weighted mean of the members that label it.

    Residuals are pixel offsets over the object scale ``\sqrt{w h}`` of the
    fused box in pixels (relative coordinates where the image size is
    unknown); a point no member labels is NaN.
    """
    fb = fuse_boxes(boxes, units, wt)
    U, mu, M = units.n_units, units.member_unit, len(units.order)
    kp = keypoints[units.order]  # (M, K, 2)
    K = kp.shape[1]
    lab = ~np.isnan(kp).any(axis=2)  # (M, K)
    pos = np.where(lab, np.arange(M)[:, None], M)
    first = np.minimum.reduceat(pos, units.starts[:-1], axis=0) if U else np.zeros((0, K), np.int64)  # (U, K)
    has = first < M
    padded = np.concatenate([kp, np.zeros((1, K, 2))])
    ref = padded[first, np.arange(K)[None, :]]  # (U, K, 2)
    d = np.where(lab[..., None], kp - ref[mu], 0.0)
    w = wt[:, None] * lab
    cell = (mu[:, None] * K + np.arange(K)[None, :]).ravel()
    wsum = np.bincount(cell, weights=w.ravel(), minlength=U * K).reshape(U, K)
    safe = np.where(wsum > 0, wsum, 1.0)
    m = np.stack([np.bincount(cell, weights=(w * d[..., a]).ravel(), minlength=U * K).reshape(U, K) / safe
                  for a in range(2)], axis=2)
    out = np.where(has[..., None], ref + m, np.nan)
    px = pixel_scale(image_sizes, units.unit_sample)  # (U, 2)
    obj = np.sqrt(np.maximum(fb.boxes[:, 2] * px[:, 0] * fb.boxes[:, 3] * px[:, 1], _TINY))  # (U,)
    e = (d - m[mu]) * px[mu][:, None, :] / obj[mu][:, None, None]
    sq = np.where(lab, (e ** 2).sum(axis=2), 0.0).sum(axis=1)
    return Fused(boxes=fb.boxes, keypoints=out, sq=sq, dim=2.0 * lab.sum(axis=1))


def _karcher(R: Rotation, units: UnitTable, wt: np.ndarray, iterations: int = 3) -> tuple[Rotation, np.ndarray]:
    """Weighted Karcher mean rotation of every unit, members aligned by the box symmetries.

    Returns the mean (a stack of U rotations) and whether the mean moved off
    the reference member (False: keep the reference's Euler angles exactly).
    """
    U, mu = units.n_units, units.member_unit
    mean = R[units.starts[:-1]]
    wsum = np.bincount(mu, weights=wt, minlength=U)
    moved = np.zeros(U, dtype=bool)
    for _ in range(iterations):
        rel = mean[mu].inv() * R  # member in the frame of its unit's mean
        cand = np.stack([(rel * g).as_rotvec() for g in _SYMMETRIES], axis=1)  # (M, 4, 3)
        best = np.argmin(np.linalg.norm(cand, axis=2), axis=1)
        delta = _weighted_mean(cand[np.arange(len(cand)), best], mu, U, wt, wsum)
        step = np.linalg.norm(delta, axis=1) > 1e-12
        if not step.any():
            break
        moved |= step
        mean = mean * Rotation.from_rotvec(np.where(step[:, None], delta, 0.0))
    return mean, moved


def fuse_cuboids(cuboids: np.ndarray, units: UnitTable, wt: np.ndarray) -> Fused:
    """Cuboids ``[x, y, z, dx, dy, dz, rx, ry, rz]``: weighted location, log-dimensions and Karcher rotation.

    Residuals: the location offset in the fused cuboid's frame over its
    dimensions (3) and the log-dimension offsets (3).
    """
    U, mu = units.n_units, units.member_unit
    c = cuboids[units.order]
    ref_idx = units.starts[:-1]
    wsum = np.bincount(mu, weights=wt, minlength=U)
    dloc = c[:, :3] - c[ref_idx][mu, :3]
    dlog = np.log(np.maximum(c[:, 3:6], _TINY)) - np.log(np.maximum(c[ref_idx][mu, 3:6], _TINY))
    mloc = _weighted_mean(dloc, mu, U, wt, wsum)
    mlog = _weighted_mean(dlog, mu, U, wt, wsum)
    out = np.empty((U, 9))
    out[:, :3] = c[ref_idx, :3] + mloc
    out[:, 3:6] = c[ref_idx, 3:6] * np.exp(mlog)
    out[:, 6:] = c[ref_idx, 6:]
    if U:
        mean, moved = _karcher(Rotation.from_euler("XYZ", c[:, 6:]), units, wt)
        if moved.any():
            out[moved, 6:] = mean[np.flatnonzero(moved)].as_euler("XYZ")
        frame = mean[mu].inv().apply(c[:, :3] - out[mu, :3])
        e = np.concatenate([frame / np.maximum(out[mu, 3:6], _TINY), dlog - mlog[mu]], axis=1)
    else:
        e = np.zeros((0, 6))
    return Fused(boxes=np.full((U, 4), np.nan), cuboids=out, sq=(e ** 2).sum(axis=1), dim=np.full(len(c), 6.0))


#: Built-in fusion (:func:`agreement.methods.consensus.units.geometry_fusion`) -> ``(data, units, wt) -> Fused``;
#: the rest fuse their boxes (masks and polygons: their pixels in
#: :func:`agreement.methods.consensus.pixels.fuse_pixels`).
_FUSIONS: dict[str, Callable[[Any, UnitTable, np.ndarray], Fused]] = {
    "cuboids": lambda data, units, wt: fuse_cuboids(data.cuboids, units, wt),
    "keypoints": lambda data, units, wt: fuse_keypoints(data.keypoints, data.boxes, units, wt, data.image_sizes),
}


def fuse_geometry(kind: str, data: Any, units: UnitTable, wt: np.ndarray, *,
                  offsets: BoxOffsets | None = None) -> Fused:
    """The fusion of geometry ``kind`` by its declared built-in fusion.

    Args:
        kind: the fused geometry (:func:`agreement.methods.consensus.units.label_type`); its built-in fusion
            (:func:`agreement.methods.consensus.units.geometry_fusion`) is ``"keypoints"``, ``"cuboids"``, or
            fuses the boxes (``"boxes"``; ``"pixels"``: masks and polygons fuse their boxes here, their pixels in
            :func:`agreement.methods.consensus.pixels.fuse_pixels`).
        data: the corpus.
        units: the units.
        wt: ``(M,)`` the members' weights.
        offsets: the :class:`BoxOffsets` of ``data.boxes``, for a caller that fuses boxes repeatedly.

    Returns:
        The fused geometry (:class:`Fused`), with the weights ``wt`` it was fused with.
    """
    fuse = _FUSIONS.get(geometry_fusion(kind))
    fused: Fused = fuse(data, units, wt) if fuse is not None else fuse_boxes(data.boxes, units, wt, offsets=offsets)
    return replace(fused, weights=wt)


def fuses_boxes(kind: str) -> bool:
    """Whether the fusion of geometry ``kind`` (:func:`fuse_geometry`) is the fusion of the rows' boxes: plain
    boxes, masks and polygons (their pixels are fused apart, by STAPLE) and a column fused by its declared hook
    (:func:`fuse_declared`, beside its boxes); not keypoints or 3D cuboids, whose built-in fusion is their own.

    Args:
        kind: the fused geometry (:func:`agreement.methods.consensus.units.label_type`).

    Returns:
        ``True`` when :func:`fuse_geometry` fuses the boxes of ``kind``'s rows.
    """
    return geometry_fusion(kind) not in _FUSIONS


def row_weights(units: UnitTable, member_weights: np.ndarray | None, n_rows: int) -> np.ndarray:
    """``(N,)`` the weight of every annotation row from the weights of the members (unit order): 0 for a row in
    no unit; every member 1 when ``member_weights`` is ``None`` (an unweighted fusion).

    Args:
        units: the units.
        member_weights: ``(M,)`` the weight of each member, in unit order (:attr:`Fused.weights`), or ``None``.
        n_rows: ``N``, the rows of the corpus.

    Returns:
        ``(N,)`` float64 weights, for :func:`fuse_declared`.
    """
    wt = np.zeros(n_rows)
    wt[units.order] = 1.0 if member_weights is None else member_weights
    return wt


def fuse_declared(name: str, data: Any, units: UnitTable, wt: np.ndarray) -> Any:
    """The consensus of the geometry column ``name`` of ``data``, one value per unit, by the fusion its
    declaration gives (:attr:`agreement.core.kinds.ColumnKind.fusion`, a callable ``(column, units, wt)``).

    Args:
        name: a declared geometry column (:mod:`agreement.core.kinds`).
        data: the corpus.
        units: its units (:class:`~agreement.methods.consensus.units.UnitTable`).
        wt: ``(N,)`` weight of every row.

    Returns:
        The fused column, one entry per unit (as the hook returns it).

    Raises:
        ValueError: the column is not declared, or its declaration has no fusion hook, or the corpus lacks it.
    """
    from agreement.core.kinds import column_kind

    kind = column_kind(name)
    if not callable(kind.fusion):
        raise ValueError(f"geometry column {name!r} declares no fusion hook (built-in fusion: {kind.fusion!r})")
    column = data.geometry.get(name)
    if column is None:
        raise ValueError(f"the corpus has no {name!r} column to fuse")
    return kind.fusion(column, units, np.asarray(wt, dtype=np.float64))
