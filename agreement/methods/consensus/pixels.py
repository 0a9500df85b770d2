r"""Masks and polygons of a unit by a reliability-weighted pixel vote: corpus-level STAPLE.

Each unit's members (instance masks placed in the image, or polygons
rasterised with OpenCV, see :mod:`agreement.geometry.masks`) are painted into
the unit's frame, the union of their pixel extents. Every rater ``r`` is a
binary classifier of pixels with a sensitivity ``p_r`` and a specificity
``q_r`` shared by **all** units (one STAPLE over the whole corpus: a unit has
few members, too few to estimate a rater's reliability from it alone); a
pixel is decided only by the members of its unit (the other raters did not
draw this object: that is detection, modelled by the existence posterior of
:mod:`agreement.methods.consensus.em`, not segmentation). The EM is STAPLE's
(Warfield, Zou & Wells 2004; :mod:`agreement.methods.consensus.staple`), with its
initialisation (vote share), prior (foreground share of the observed
decisions) and stopping rule (no ``p_r`` or ``q_r`` moved by more than
``tol``):

.. math::

    p_r = \frac{\sum_x W_x D_{rx}}{\sum_x W_x}, \quad
    q_r = \frac{\sum_x (1 - W_x)(1 - D_{rx})}{\sum_x (1 - W_x)}, \quad
    \operatorname{logit} W_x = \operatorname{logit} g + \sum_{r \ni x}
        \Bigl[D_{rx} \log\frac{p_r}{1 - q_r} + (1 - D_{rx}) \log\frac{1 - p_r}{q_r}\Bigr]

summed over the members of ``x``'s unit. Pixels are grouped per unit by
their pattern of member decisions before iterating, so memory and work per
iteration are in the number of (unit, pattern) pairs, not pixels; the result
equals :func:`agreement.methods.consensus.staple.staple` on the full raters × pixels matrix with
non-members unobserved (checked in the tests). The consensus is ``W > 0.5``,
cropped to its bounding box; polygons are traced from it with
``cv2.findContours``, except that a fused mask equal to a member's raster
returns that member's polygon unchanged.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.core.kinds import consensus_spec
from agreement.geometry.masks import PlacedMask, place_masks, rasterize_polygons
from agreement.geometry.similarity import DEFAULT_RASTER_SIZE
from agreement.methods.consensus.staple import staple_em
from agreement.methods.consensus.units import UnitTable

__all__ = ["PixelFusion", "fuse_pixels", "pattern_staple"]

_Frame = tuple[int, int]  # a sample's frame (width, height) in pixels


@dataclass(frozen=True)
class PixelFusion:
    """Fused masks or polygons of every unit.

    Attributes:
        boxes: ``(U, 4)`` relative boxes of the fused masks (their pixel extents).
        masks: ``kind="masks"``: a list of U boolean arrays spanning ``boxes``; else None.
        polygons: ``kind="polygons"``: a list of U lists of ``(k, 2)`` relative rings; else None.
        sensitivity: ``(R,)`` pixel sensitivity ``p_r`` of every rater, in ``[0, 1]`` (NaN: no pixel data).
        specificity: ``(R,)`` pixel specificity ``q_r`` of every rater, in ``[0, 1]`` (NaN: no pixel data).
        member_iou: ``(M,)`` pixel IoU of every member (unit order) with its unit's fused mask, in ``[0, 1]``.
        n_iter: the STAPLE EM iterations performed.
        converged: whether the EM's change fell within its tolerance.
    """

    boxes: np.ndarray
    masks: list | None
    polygons: list | None
    sensitivity: np.ndarray
    specificity: np.ndarray
    member_iou: np.ndarray
    n_iter: int
    converged: bool


def _placed_rows(data: MultiRaterAnnotations, kind: str,
                 rows: np.ndarray) -> tuple[dict[int, PlacedMask], dict[int, _Frame]]:
    """``{row: PlacedMask}`` and ``{sample: (W, H)}`` for the member rows, sample by sample."""
    placed: dict[int, PlacedMask] = {}
    frames: dict[int, _Frame] = {}
    sizes, names = data.image_sizes, data.sample_names
    assert sizes is not None and names is not None  # MultiRaterAnnotations fills them
    srows = data.sample_index[rows]
    for s in np.unique(srows).tolist():
        these = rows[srows == s]
        size = sizes[s]
        known = bool(np.isfinite(size).all() and (size > 0).all())
        if consensus_spec(kind).in_boxes:  # instance masks, placed in their boxes; else polygon rings
            if not known:
                raise ValueError(
                    f"sample {names[s]!r}: instance masks need the image size (width, height) "
                    "to be placed and fused"
                )
            pm = place_masks([data.masks[i] for i in these], data.boxes[these], tuple(size))
        else:
            size = size if known else np.asarray(DEFAULT_RASTER_SIZE, float)
            pm = rasterize_polygons([data.polygons[i] for i in these], tuple(size))
        frames[s] = (int(round(size[0])), int(round(size[1])))
        placed.update(zip(these.tolist(), pm, strict=True))
    return placed, frames


def _unit_patterns(members: list[PlacedMask]) -> tuple[tuple[int, int, int, int], np.ndarray, np.ndarray,
                                                        np.ndarray]:
    """Frame ``(x0, y0, h, w)``, pixel pattern index ``(h*w,)``, pattern bits ``(P, m)`` and counts."""
    live = [p for p in members if p.mask.size]
    m = len(members)
    if not live:
        return (0, 0, 0, 0), np.zeros(0, np.int64), np.zeros((0, m), bool), np.zeros(0)
    x0 = min(p.x0 for p in live)
    y0 = min(p.y0 for p in live)
    x1 = max(p.x0 + p.mask.shape[1] for p in live)
    y1 = max(p.y0 + p.mask.shape[0] for p in live)
    h, w = y1 - y0, x1 - x0
    stack = np.zeros((m, h, w), dtype=bool)
    for j, p in enumerate(members):
        if p.mask.size:
            stack[j, p.y0 - y0: p.y0 - y0 + p.mask.shape[0], p.x0 - x0: p.x0 - x0 + p.mask.shape[1]] = p.mask
    flat = stack.reshape(m, -1)
    if m <= 62:
        code = (flat.T.astype(np.int64) << np.arange(m, dtype=np.int64)).sum(axis=1)
        _, first, inverse, counts = np.unique(code, return_index=True, return_inverse=True, return_counts=True)
        bits = flat[:, first].T
    else:
        bits, inverse, counts = np.unique(flat.T, axis=0, return_inverse=True, return_counts=True)
    return (x0, y0, h, w), inverse.reshape(-1), bits, counts.astype(np.float64)


def pattern_staple(entry_count: np.ndarray, pair_entry: np.ndarray, pair_rater: np.ndarray, pair_bit: np.ndarray,
                   n_raters: int, *, max_iter: int = 10_000, tol: float = 1e-7
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """STAPLE over grouped pixels: ``entry_count[e]`` pixels share the member decisions ``pair_bit`` of the
    pairs ``(pair_entry, pair_rater)``; the EM is :func:`agreement.methods.consensus.staple.staple_em`
    (Warfield, Zou & Wells 2004; see the module docstring), with the prior ``g`` the share of marked pixels
    among the observed decisions.

    Args:
        entry_count: ``(E,)`` pixels of each entry (pattern).
        pair_entry: ``(P,)`` entry of each (entry, rater) decision.
        pair_rater: ``(P,)`` rater of each decision, in ``[0, n_raters)``.
        pair_bit: ``(P,)`` bool, the rater marked the entry's pixels.
        n_raters: ``R``.
        max_iter: at most this many EM iterations (at least 1).
        tol: the stopping tolerance on the rates.

    Returns:
        ``(W, p, q, n_iter, converged)``: the posterior ``(E,)`` in ``[0, 1]``, the raters' sensitivity and
        specificity ``(R,)`` in ``[0, 1]`` (NaN: no data; all NaN when every decision is the same), the
        iterations and whether the EM converged.
    """
    E = len(entry_count)
    bitf = pair_bit.astype(np.float64)
    c = entry_count[pair_entry]
    n_obs, n_fg = float(c.sum()), float((c * bitf).sum())
    if n_fg == 0.0 or n_fg == n_obs:
        W = np.full(E, 0.0 if n_fg == 0.0 else 1.0)
        return W, np.full(n_raters, np.nan), np.full(n_raters, np.nan), 0, True
    n_seen = np.bincount(pair_entry, minlength=E)

    def m_step(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cw, cv = c * W[pair_entry], c * (1.0 - W[pair_entry])
        p = np.bincount(pair_rater, cw * bitf, n_raters) / np.bincount(pair_rater, cw, n_raters)
        q = np.bincount(pair_rater, cv * (1 - bitf), n_raters) / np.bincount(pair_rater, cv, n_raters)
        return p, q

    def e_step(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        term = np.where(pair_bit, a[pair_rater], b[pair_rater])
        return np.bincount(pair_entry, weights=np.where(np.isnan(term), 0.0, term), minlength=E)

    W0 = np.bincount(pair_entry, weights=bitf, minlength=E) / np.maximum(n_seen, 1)
    return staple_em(m_step=m_step, e_step=e_step, W=W0, g=n_fg / n_obs, n_raters=n_raters, max_iter=max_iter, tol=tol)


def _contour_rings(fg: np.ndarray, x0: int, y0: int, W: int, H: int) -> list[np.ndarray]:
    contours, _ = cv2.findContours(fg.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    rings = []
    for cnt in contours:
        pts = cnt.reshape(-1, 2).astype(np.float64)
        if len(pts) >= 3:
            rings.append((pts + [x0 + 0.5, y0 + 0.5]) / [W, H])
    return rings


def fuse_pixels(data: MultiRaterAnnotations, units: UnitTable, kind: str, *, max_iter: int = 10_000,
                tol: float = 1e-7) -> PixelFusion:
    """Fuses the masks (``kind="masks"``) or polygons (``"polygons"``) of every unit (module docstring).

    One pixel STAPLE over the whole corpus (:func:`pattern_staple`): the members' pixels in each unit's frame
    are the decisions, a fused pixel one of posterior ``> 0.5``; a unit with none keeps the member of its most
    sensitive rater.

    Args:
        data: the annotations, with ``masks`` or ``polygons`` (and ``image_sizes`` for masks).
        units: the units to fuse.
        kind: ``"masks"`` or ``"polygons"``.
        max_iter: at most this many EM iterations (at least 1).
        tol: the stopping tolerance on the rates.

    Returns:
        The :class:`PixelFusion`: per unit the fused box and mask or polygon, per rater the pixel rates, per
        member its IoU with the fused mask, in ``[0, 1]``.

    Raises:
        ValueError: instance masks on a sample without an image size.
    """
    U, order, starts = units.n_units, units.order, units.starts
    placed, frames = _placed_rows(data, kind, order)
    info: list[tuple[tuple[int, int, int, int], np.ndarray, int]] = []
    e_count: list[np.ndarray] = []
    p_entry: list[np.ndarray] = []
    p_member: list[np.ndarray] = []
    p_bit: list[np.ndarray] = []
    n_entries = 0
    for u in range(U):
        rows = order[starts[u]:starts[u + 1]]
        frame, inverse, bits, counts = _unit_patterns([placed[int(i)] for i in rows])
        info.append((frame, inverse, n_entries))
        P, m = bits.shape
        e_count.append(counts)
        p_entry.append(np.repeat(np.arange(n_entries, n_entries + P), m))
        p_member.append(np.tile(np.arange(starts[u], starts[u + 1]), P))
        p_bit.append(bits.reshape(-1))
        n_entries += P
    entry_count, pair_entry = _cat(e_count, np.float64), _cat(p_entry, np.int64)
    pair_member, pair_bit = _cat(p_member, np.int64), _cat(p_bit, np.bool_)
    pair_rater = data.rater_index[order][pair_member]
    W, p, q, n_iter, conv = pattern_staple(entry_count=entry_count, pair_entry=pair_entry, pair_rater=pair_rater,
                                           pair_bit=pair_bit, n_raters=data.num_raters, max_iter=max_iter, tol=tol)
    fused_e = W > 0.5
    cnt = entry_count[pair_entry]
    inter = np.bincount(pair_member, cnt * (pair_bit & fused_e[pair_entry]), len(order))
    union = np.bincount(pair_member, cnt * (pair_bit | fused_e[pair_entry]), len(order))
    member_iou = np.divide(inter, union, out=np.zeros(len(order)), where=union > 0)
    return _assemble(data=data, units=units, kind=kind, placed=placed, frames=frames, info=info, fused_e=fused_e, p=p,
                     q=q, member_iou=member_iou, n_iter=n_iter, conv=conv)


def _cat(xs: list[np.ndarray], dtype: type[np.generic]) -> np.ndarray:
    """The chunks ``xs`` end to end as ``dtype`` (empty: a length-0 array of it)."""
    return np.concatenate(xs).astype(dtype) if xs else np.zeros(0, dtype)


def _assemble(data: MultiRaterAnnotations, units: UnitTable, kind: str, placed: dict[int, PlacedMask],
              frames: dict[int, _Frame], info: list[tuple[tuple[int, int, int, int], np.ndarray, int]],
              fused_e: np.ndarray, p: np.ndarray, q: np.ndarray, member_iou: np.ndarray, n_iter: int,
              conv: bool) -> PixelFusion:
    """Per unit: the fused mask cropped to its box, and the polygon traced from it (or a member's own)."""
    U, order, starts = units.n_units, units.order, units.starts
    in_boxes = consensus_spec(kind).in_boxes  # the declaration: masks cropped to their box, or rings
    boxes = np.zeros((U, 4))
    masks: list[np.ndarray] = []
    polygons: list[list[np.ndarray]] = []
    for u in range(U):
        (x0, y0, h, w), inverse, base = info[u]
        W, H = frames[int(units.unit_sample[u])]
        rows = order[starts[u]:starts[u + 1]]
        fg = fused_e[base + inverse].reshape(h, w) if h and w else np.zeros((0, 0), bool)
        if not fg.any():  # nothing above 0.5: the member of the most sensitive rater
            best = int(rows[np.nanargmax(np.nan_to_num(p[data.rater_index[rows]], nan=-1.0))])
            pm = placed[best]
            x0, y0, fg = pm.x0, pm.y0, pm.mask
        ys, xs = np.nonzero(fg) if fg.size else (np.zeros(0, int), np.zeros(0, int))
        if len(ys):
            r0, r1, c0, c1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
            fg, x0, y0 = fg[r0:r1, c0:c1], x0 + c0, y0 + r0
        boxes[u] = [x0 / W, y0 / H, fg.shape[1] / W, fg.shape[0] / H]
        if in_boxes:
            masks.append(fg)
            continue
        same = np.flatnonzero(member_iou[starts[u]:starts[u + 1]] == 1.0)
        rings = [np.asarray(r, float) for r in data.polygons[int(rows[same[0]])]] if len(same) else \
            _contour_rings(fg, x0, y0, W, H)
        polygons.append(rings or [np.asarray(r, float) for r in data.polygons[int(rows[0])]])
    return PixelFusion(boxes=boxes, masks=masks if in_boxes else None,
                       polygons=None if in_boxes else polygons, sensitivity=p, specificity=q,
                       member_iou=member_iou, n_iter=n_iter, converged=conv)
