r"""Agreement of semantic segmentation masks: pixel alpha, Dice, IoU and boundary F1.

A *semantic mask* is a 2-D integer array per rater and sample whose pixel
values are class values (FiftyOne ``Segmentation``; the class values are the
keys of the dataset's ``mask_targets``, 0 usually background). A rater with no
mask for a sample (``None``) was not assigned to it (implicit absence) and
takes no part in that sample's numbers.

Per sample, :func:`sample_statistics` gives

* **pixel alpha**: nominal Krippendorff's alpha with every pixel a unit whose
  values are the present raters' classes there. With ``n_uc`` the raters
  giving class ``c`` at pixel ``u`` and ``m_u`` the raters present, the
  coincidence matrix is ``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)``
  and ``alpha = 1 - D_o / D_e`` (:mod:`agreement.core.krippendorff`); at most 1,
  0 at chance. Per class, alpha of the binary presence of that class, whose
  coincidence matrix follows from the same ``o`` (``o_11 = o_cc``,
  ``o_10 = n_c - o_cc``, ``o_00 = n - 2 n_c + o_cc``);
* **Dice** ``2 |A_c & B_c| / (|A_c| + |B_c|)`` and **IoU**
  ``|A_c & B_c| / |A_c | B_c|`` per rater pair and class, in ``[0, 1]``; a class
  absent from both masks is undefined (NaN), not 1;
* **boundary F1** (the BF score of Csurka et al. 2013) per rater pair and
  class: precision is the share of A's class-``c`` boundary length within
  the tolerance (Euclidean) of B's class-``c`` boundary, recall the same from
  B to A, ``F1 = 2 P R / (P + R)`` in ``[0, 1]``. The tolerance is
  ``boundary_tolerance`` of the image diagonal ``sqrt(H^2 + W^2)`` (default
  0.75 %, Csurka's), or ``tolerance`` pixels when given. A boundary is made of
  *cracks*, the unit edges between 4-adjacent pixels of different classes
  (:func:`class_cracks`; the image edge is not a boundary): they have no
  width and scale with the image, so that upscaling a mask by ``k`` with the
  tolerance (the relative one scales by itself) leaves F1 nearly unchanged
  (measured at x2 and x3: within 0.002 on region boundaries from a 2-px
  tolerance, 0.01-0.02 at 1-1.5 px, up to 0.03 on one-pixel speckle, where
  the trapezoid rule on each crack, 3 points a pixel at x1 against 5 at x2,
  sees cracks only partly within the tolerance differently; below 1 px the
  raster cannot resolve the tolerance and F1 moves by up to 0.06). No boundary in either mask: NaN; in one only: 0.
  Not chance-corrected: two dense random boundary maps (speckle) fall within
  the tolerance of each other, so F1 *rises* again as scattered pixel noise
  grows denser; it is monotone in boundary displacement (erosion, dilation);
* **no foreground**: when no rater marks a pixel of a class other than the
  background (``background``, 0), Dice and IoU are NaN with the reason "no
  rater marked any foreground pixel" rather than the background's 1
  (per sample and over the corpus; the per-class arrays keep the
  background's own values).

Everything is computed from one histogram of the per-pixel patterns of rater
classes (one ``np.bincount`` over the pixels), so the cost is a few passes
over the pixels whatever the number of classes and pairs.

The corpus numbers come from mergeable statistics (:class:`SemanticStats`:
sums of coincidences, intersections, sizes and boundary hits) that shards
compute independently, :meth:`SemanticStats.merge` adds and
:meth:`SemanticStats.finish` turns into corpus alpha, corpus Dice
``2 sum I / (sum |A| + sum |B|)``, IoU and boundary F1. In **sampled** mode
(``n_pixels``), a sample's contribution to corpus alpha comes from
``n_pixels`` pixels drawn without replacement with a generator seeded by
``(seed, blake2b(sample_key))`` and weighted by ``N / n_pixels`` (an
estimate of the exact coincidence matrix); it is exact when the mask has at
most ``n_pixels`` pixels. The draw depends only on the seed and the sample's
key, never on shard size or sample order; merged sums may differ in the last
floating-point bit with the order of merging.

This module does not import FiftyOne.

References:
    .. [Krippendorff2011] K. Krippendorff, "Computing Krippendorff's
       Alpha-Reliability", 2011.
    .. [Csurka2013] G. Csurka, D. Larlus and F. Perronnin, "What is a good
       evaluation measure for semantic segmentation?", BMVC 2013.
    .. [Dice1945] L. R. Dice, Ecology 26(3), 297-302, 1945.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Iterable, Sequence

import cv2
import numpy as np
from scipy.spatial import cKDTree

from agreement.methods.semantic.staple import label_patterns
from agreement.methods.semantic.stats import (
    BACKGROUND,
    OverlapStats,
    PixelAlphaStats,
    SemanticStats,
    foreground_reason,
    pair_index,
)

__all__ = ["check_masks", "SampleMaskStats", "sample_statistics", "sample_seed", "class_cracks",
           "pixel_tolerance", "BOUNDARY_TOLERANCE", "BACKGROUND"]

#: The boundary tolerance of Csurka et al. (2013): 0.75 % of the image diagonal.
BOUNDARY_TOLERANCE = 0.0075


def _value_counts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of an integer array and their pixel counts (bincount when small and >= 0)."""
    flat = a.reshape(-1)
    lo, hi = int(flat.min()), int(flat.max())
    if lo >= 0 and hi < 1 << 16:
        counts = np.bincount(flat, minlength=hi + 1)
        values = np.flatnonzero(counts)
        return values, counts[values]
    return np.unique(flat, return_counts=True)


def _outside(a: np.ndarray, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values of ``a`` not in ``allowed`` (sorted) and their pixel counts; a min/max test first."""
    lo, hi = a.min(), a.max()
    contiguous = allowed.size and allowed[-1] - allowed[0] + 1 == allowed.size
    if contiguous and lo >= allowed[0] and hi <= allowed[-1]:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    values, counts = _value_counts(a)
    bad = ~np.isin(values, allowed)
    return values[bad], counts[bad]


def _as_mask(m: object, where: str, name: str) -> np.ndarray:
    """A rater's mask as a 2-D integer array, or ``ValueError`` naming the sample and the rater."""
    a = np.asarray(m)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[..., 0]
    if a.ndim != 2:
        raise ValueError(
            f"{where}: rater {name}'s mask has shape {a.shape}; a semantic mask must be 2-D (H, W) or (H, W, 1) "
            "of class values (convert RGB masks to class values first)"
        )
    if a.dtype == bool:
        a = a.astype(np.uint8)
    elif not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{where}: rater {name}'s mask has dtype {a.dtype}; it must hold integer class values")
    if a.size == 0:
        raise ValueError(f"{where}: rater {name}'s mask is empty (shape {a.shape})")
    return a


def check_masks(
    masks: Sequence[np.ndarray | None],
    class_values: Sequence[int] | None,
    where: str,
    *,
    raters: Sequence[str] | None = None,
) -> list[np.ndarray | None]:
    """Validates one sample's masks and returns them as 2-D integer arrays (``None`` kept).

    Accepted: 2-D ``(H, W)`` integer or bool arrays, and ``(H, W, 1)`` (a
    single-channel image decoded with a channel axis), squeezed to ``(H, W)``.
    Refused, with a ``ValueError`` naming ``where`` (the sample), the rater
    (its name in ``raters``, else its index) and the problem: any other number
    of dimensions (``(H, W, 3)`` RGB masks must be converted to class values
    first), non-integer dtypes, empty masks, masks of different shapes within
    the sample, and, when ``class_values`` is given, values outside it (listing
    the values and their pixel counts).

    Args:
        masks: one mask per rater, ``None`` for a rater without a mask.
        class_values: the allowed class values (e.g. the keys of
            ``mask_targets``), or None to allow any integer.
        where: names the sample in messages, e.g. ``"sample 64f0..."``.
        raters: rater names for messages, one per mask.

    Returns:
        The masks as 2-D integer arrays, ``None`` where a rater has none.
    """
    items = list(masks)
    names = [str(r) for r in raters] if raters is not None else [str(i) for i in range(len(items))]
    if len(names) != len(items):
        raise ValueError(f"{where}: {len(items)} masks but {len(names)} rater names")
    allowed = None if class_values is None else np.unique(np.asarray(list(class_values), dtype=np.int64))
    out: list[np.ndarray | None] = []
    first: tuple[str, tuple] | None = None
    for name, m in zip(names, items, strict=True):
        if m is None:
            out.append(None)
            continue
        a = _as_mask(m, where, name)
        if first is None:
            first = (name, a.shape)
        elif a.shape != first[1]:
            raise ValueError(
                f"{where}: masks of different shapes: rater {first[0]} has {first[1]}, rater {name} has {a.shape}"
            )
        if allowed is not None:
            bad, counts = _outside(a, allowed)
            if bad.size:
                listed = ", ".join(f"{v} ({c} pixels)" for v, c in zip(bad[:10], counts[:10], strict=True))
                more = f" and {bad.size - 10} more" if bad.size > 10 else ""
                raise ValueError(
                    f"{where}: rater {name}'s mask has values not in class_values {allowed.tolist()}: {listed}{more}"
                )
        out.append(a)
    return out


def sample_seed(seed: int, sample_key: str) -> np.random.Generator:
    """The pixel-sampling generator of a sample: ``default_rng([seed, blake2b_64(sample_key)])``.

    Stable across processes and platforms (unlike ``hash``), and independent
    of which shard or position the sample has.
    """
    digest = hashlib.blake2b(str(sample_key).encode("utf-8"), digest_size=8).digest()
    return np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, int.from_bytes(digest, "little")])


def _class_index(a: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The index into ``values`` of each pixel's class (the values are known to be in ``values``),
    as the smallest unsigned dtype; ``a`` itself when the values are ``0 .. C-1`` and ``a`` is unsigned."""
    C = values.size
    dtype = np.uint8 if C <= 256 else (np.uint16 if C <= 1 << 16 else np.int64)
    if a.dtype.kind == "u" and values[0] == 0 and values[-1] == C - 1 and a.dtype.itemsize <= np.dtype(dtype).itemsize:
        return a
    lo, hi = int(values[0]), int(values[-1])
    if lo >= 0 and hi < 1 << 16 and a.dtype.kind in "ui" and a.dtype.itemsize <= 2:
        lut = np.zeros(hi + 1, dtype=dtype)
        lut[values] = np.arange(C)
        looked_up: np.ndarray = lut[a]
        return looked_up
    index: np.ndarray = np.searchsorted(values, a).astype(dtype)
    return index


def _coincidence_from_patterns(rows: np.ndarray, counts: np.ndarray, C: int) -> np.ndarray:
    """``o_ck = sum_p w_p (n_pc n_pk - [c = k] n_pc) / (m - 1)`` over patterns of ``m`` raters each."""
    P, m = rows.shape
    n = np.zeros((P, C))
    for r in range(m):
        np.add.at(n, (np.arange(P), rows[:, r]), 1.0)
    nw = n * (counts / (m - 1.0))[:, None]
    o: np.ndarray = nw.T @ n
    o[np.diag_indices(C)] -= nw.sum(axis=0)
    return o


def class_cracks(label: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The class boundaries of a label map as *cracks*: the unit edges between two 4-adjacent pixels of
    different classes (the image edge is not a boundary).

    Points are given on the half-pixel grid (coordinates ``(2y, 2x)``, integers): pixel ``(y, x)`` has
    its centre at ``(2y + 1, 2x + 1)`` and its corners at even coordinates; the crack between ``(y, x)``
    and ``(y, x + 1)`` has its midpoint at ``(2y + 1, 2x + 2)``, the one between ``(y, x)`` and
    ``(y + 1, x)`` at ``(2y + 2, 2x + 1)``. A crack between classes ``c`` and ``k`` belongs to the
    boundary of both, so it is listed twice, once per side. Cracks have no width and unit length:
    nearest-neighbour upscaling by ``k`` turns each into ``k`` cracks along the same line, so a boundary's
    length is multiplied by exactly ``k`` and its place does not move (the 8-neighbour band of pixels it
    replaces is 1 px thick at any resolution and lies half a pixel inside the region).

    Args:
        label: ``(H, W)`` integer label map (class indices).

    Returns:
        ``(mid, ends, cls)``: the cracks' midpoints ``(n, 2)`` and end corners ``(n, 2, 2)`` as
        half-pixel ``(row, column)`` coordinates, and the class on the listed side ``(n,)``.
    """
    # flatnonzero and divmod: the same (C-order) indices as np.nonzero of the 2-D array, ten times faster
    vy, vx = np.divmod(np.flatnonzero(label[:, :-1] != label[:, 1:]), max(label.shape[1] - 1, 1))
    hy, hx = np.divmod(np.flatnonzero(label[:-1, :] != label[1:, :]), label.shape[1])
    v_mid = np.stack([2 * vy + 1, 2 * vx + 2], axis=1)
    h_mid = np.stack([2 * hy + 2, 2 * hx + 1], axis=1)
    v_ends = v_mid[:, None, :] + np.array([[-1, 0], [1, 0]])
    h_ends = h_mid[:, None, :] + np.array([[0, -1], [0, 1]])
    mid = np.concatenate([v_mid, v_mid, h_mid, h_mid]).astype(np.int64)
    ends = np.concatenate([v_ends, v_ends, h_ends, h_ends]).astype(np.int64)
    cls = np.concatenate([label[vy, vx], label[vy, vx + 1], label[hy, hx], label[hy + 1, hx]]).astype(np.int64)
    return mid, ends, cls


def pixel_tolerance(shape: tuple[int, ...], tolerance: float | None, boundary_tolerance: float) -> float:
    """The boundary tolerance of a mask of ``shape`` in pixels: ``tolerance`` when given, else
    ``boundary_tolerance * sqrt(H**2 + W**2)`` (a fraction of the image diagonal; Csurka et al. 2013
    take 0.75 %), so that it scales with the resolution."""
    if tolerance is not None:
        return float(tolerance)
    return float(boundary_tolerance) * float(np.hypot(shape[0], shape[1]))


#: Cells of a summed-area table (4 bytes each) above which :func:`_within` falls back to a KD-tree: 2^24
#: cells are a 64 MiB table, the half-pixel grid of a 2,048 x 2,048 mask.
_TABLE_MAX_CELLS = 1 << 24


@functools.lru_cache(maxsize=64)
def _disk_rectangles(limit: float) -> tuple[tuple[int, int], ...]:
    """The lattice disk ``{(dy, dx) integer: sqrt(dy^2 + dx^2) <= limit}`` as a union of centred rectangles
    ``(D, w)`` (``|dy| <= D`` and ``|dx| <= w``), one per distinct half-width ``w``, widest first."""
    r = int(np.floor(limit))
    d = np.arange(r + 1, dtype=np.float64)
    inside = np.sqrt(d[:, None] ** 2 + d[None, :] ** 2) <= limit  # (dy, dx) >= 0; the same test as the KD-tree's
    half = inside.sum(axis=1) - 1  # half-width w(dy) of row dy, non-increasing in dy
    half = half[half >= 0]
    return tuple((int(np.flatnonzero(half >= w)[-1]), int(w)) for w in np.unique(half)[::-1])


def _within(targets: np.ndarray, queries: np.ndarray, limit: float) -> np.ndarray:
    """Per query point, whether a target point lies within ``limit`` (Euclidean; half-pixel integer
    coordinates ``(n, 2)``).

    Exact: the lattice disk of radius ``limit`` is a union of a few centred rectangles
    (:func:`_disk_rectangles`), and a summed-area table of the targets over their bounding box grown by
    twice ``limit`` counts the targets in each rectangle around every query inside the box grown once, in four
    look-ups (a query outside it is farther than ``limit`` from every target). The cost is one pass over the
    box and a few look-ups per query, whatever the number of targets. Above :data:`_TABLE_MAX_CELLS` cells, a
    KD-tree of the targets gives the same answer.
    """
    r = int(np.floor(limit))
    ty, tx = targets[:, 0], targets[:, 1]
    y0, x0 = int(ty.min()) - 2 * r, int(tx.min()) - 2 * r
    H, W = int(ty.max()) + 2 * r + 1 - y0, int(tx.max()) + 2 * r + 1 - x0
    if H * W > _TABLE_MAX_CELLS:
        return _within_kdtree(targets, queries, limit)
    img = np.zeros((H, W), np.uint8)
    img[ty - y0, tx - x0] = 1
    table = cv2.integral(img, sdepth=cv2.CV_32S).ravel()  # (H + 1) x (W + 1): sums over [0, y) x [0, x)
    stride = W + 1
    qy = np.subtract(queries[:, 0], y0 + r, dtype=np.int64)
    qx = np.subtract(queries[:, 1], x0 + r, dtype=np.int64)
    # inside the box grown once: 0 <= qy < H - 2r (a negative value is huge as unsigned), and so for qx
    out: np.ndarray = (qy.view(np.uint64) < H - 2 * r) & (qx.view(np.uint64) < W - 2 * r)
    at = np.flatnonzero(out)
    base = (qy + r) * stride + qx + r if len(at) == len(out) else (qy[at] + r) * stride + qx[at] + r
    out[:] = False
    for D, w in _disk_rectangles(float(limit)):  # widest first; each next rectangle for the queries still missed
        top, bottom = base - D * stride, base + (D + 1) * stride
        near = (table[bottom + w + 1] - table[top + w + 1] - table[bottom - w] + table[top - w]) > 0
        out[at[near]] = True
        at, base = at[~near], base[~near]
        if not len(at):
            break
    return out


def _within_kdtree(targets: np.ndarray, queries: np.ndarray, limit: float) -> np.ndarray:
    """:func:`_within` by a KD-tree of the targets (for bounding boxes too large for a summed-area table)."""
    tree = cKDTree(np.unique(targets, axis=0))  # crack ends are shared by neighbouring cracks
    return np.asarray(tree.query(queries, distance_upper_bound=2.0 * limit + 1.0)[0] <= limit)


def _boundary_hits(labels: list[np.ndarray], C: int, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Boundary lengths ``nb`` ``(R, C)`` (in cracks, :func:`class_cracks`) and hits ``(R, R, C)``.

    ``hits[r, s, c]`` is the length of rater ``r``'s class-``c`` boundary within ``tolerance`` pixels
    (Euclidean) of rater ``s``'s class-``c`` boundary, by the trapezoid rule on each crack:
    ``1/4 [end_0 near] + 1/2 [midpoint near] + 1/4 [end_1 near]``. The distance is to ``s``'s boundary
    *lines* (every crack sampled at its midpoint and ends): exact for points of the half-pixel grid, since
    the foot of the perpendicular on an axis-parallel crack is again a grid point. "Within" allows a
    relative slack of 1e-6 (below the gap between lattice distances up to ~350 px).
    """
    R = len(labels)
    parts, nb = [], np.zeros((R, C))
    for r, lab in enumerate(labels):
        mid, ends, cls = class_cracks(lab)
        order = np.argsort(cls, kind="stable")
        nb[r] = np.bincount(cls, minlength=C)
        bounds = np.concatenate([[0], np.cumsum(nb[r])]).astype(np.int64)
        mid, ends = mid[order], ends[order]
        parts.append([(mid[bounds[c]:bounds[c + 1]], ends[bounds[c]:bounds[c + 1]].reshape(-1, 2))
                      for c in range(C)])
    hits = np.zeros((R, R, C))
    hits[np.arange(R), np.arange(R)] = nb
    limit = 2.0 * tolerance * (1.0 + 1e-6)  # half-pixel units
    for s in range(R):
        for c in np.flatnonzero(nb[s]):
            others = [r for r in range(R) if r != s and nb[r, c] > 0]
            if not others:
                continue
            targets = np.concatenate(parts[s][c])
            queries = np.concatenate([np.concatenate(parts[r][c]) for r in others])
            near = _within(targets, queries, limit)
            at = 0
            for r in others:
                n_mid, n_end = len(parts[r][c][0]), len(parts[r][c][1])
                hits[r, s, c] = (0.5 * np.count_nonzero(near[at:at + n_mid])
                                 + 0.25 * np.count_nonzero(near[at + n_mid:at + n_mid + n_end]))
                at += n_mid + n_end
    return nb, hits


@dataclass(frozen=True)
class SampleMaskStats:
    """Per-sample agreement of semantic masks (:func:`sample_statistics`).

    Attributes:
        sample_key: the sample's id.
        class_values: the class values indexing the per-class arrays.
        raters_present: ``(R,)`` bool, which raters have a mask.
        alpha: pixel alpha of this sample's masks (exact, every pixel), at most 1; NaN if undefined.
        pixel_agreement: observed agreement ``sum_c o_cc / n`` in ``[0, 1]``: the share of pairs of
            present raters agreeing on a pixel, averaged over pixels.
        dice, iou, boundary_f1: mean over rater pairs of the mean over classes present in either
            mask of the pair (``boundary_f1``: classes with a boundary in either), in ``[0, 1]``.
        pair_dice, pair_iou, pair_boundary_f1: ``(n_pairs, C)`` per rater pair (``pairs``) and class;
            NaN where undefined (class in neither mask, or a rater absent).
        pairs: the rater pairs ``(i, j)``, ``i < j``, in the order of the rows above.
        reason: why some number is NaN, ``""`` when all are defined.
        stats: the sample's mergeable corpus statistics.
    """

    sample_key: str
    class_values: tuple[int, ...]
    raters_present: np.ndarray
    alpha: float
    pixel_agreement: float
    dice: float
    iou: float
    boundary_f1: float
    pair_dice: np.ndarray
    pair_iou: np.ndarray
    pair_boundary_f1: np.ndarray
    pairs: tuple[tuple[int, int], ...]
    reason: str
    stats: SemanticStats


def _mean_over(values: np.ndarray, keep: np.ndarray) -> float:
    """Mean over pairs of the mean over kept classes; NaN when nothing is kept."""
    with np.errstate(invalid="ignore"):
        per_pair = np.where(keep, values, 0.0).sum(axis=1) / keep.sum(axis=1)
    per_pair = per_pair[keep.any(axis=1)]
    return float(per_pair.mean()) if per_pair.size else float("nan")


def sample_statistics(
    masks: Sequence[np.ndarray | None],
    *,
    class_values: Sequence[int] | None = None,
    n_pixels: int | None = None,
    seed: int = 0,
    sample_key: str = "",
    tolerance: float | None = None,
    raters: Sequence[str] | None = None,
    exclude: Sequence[int] = (),
    boundary_tolerance: float = BOUNDARY_TOLERANCE,
    background: int | None = BACKGROUND,
) -> SampleMaskStats:
    r"""Agreement of one sample's semantic masks, and its mergeable corpus statistics.

    Per sample (always on every pixel): pixel alpha
    ``1 - D_o / D_e`` (at most 1), observed pixel agreement ``sum_c o_cc / n``,
    and per rater pair and class Dice ``2|A & B| / (|A| + |B|)``, IoU
    ``|A & B| / |A | B|`` and boundary F1 ``2PR / (P + R)`` (all in ``[0, 1]``);
    see the module docstring for the definitions and references (Krippendorff
    2011; Csurka et al. 2013). The corpus statistics (``stats``) hold the same
    sums for :meth:`SemanticStats.finish`; their alpha part comes from
    ``n_pixels`` sampled pixels when ``n_pixels`` is given and the mask is
    larger.

    Args:
        masks: one 2-D class-value mask per rater, ``None`` where the rater has
            none (see :func:`check_masks` for accepted shapes and dtypes).
        class_values: the class values (e.g. ``mask_targets`` keys); a value
            outside them is an error. Default: the values in this sample's masks.
        n_pixels: pixels sampled per sample for the corpus alpha; None (default)
            uses every pixel.
        seed: seed of the pixel sampling (combined with ``sample_key``).
        sample_key: the sample's id (seeds the sampling; names it in errors).
        tolerance: boundary F1 distance tolerance in pixels (``>= 0``); None
            (default) takes ``boundary_tolerance`` of the image diagonal.
        raters: rater names for error messages.
        exclude: class values left out of the per-sample means (e.g. ``(0,)``
            for background); the per-class arrays keep them.
        boundary_tolerance: the tolerance as a fraction of the image diagonal
            ``sqrt(H^2 + W^2)`` (``>= 0``; default 0.0075, Csurka et al. 2013),
            used when ``tolerance`` is None: boundary F1 then does not depend
            on the resolution.
        background: the background class value (None: none). When no present
            rater marks a pixel of any other class, Dice and IoU are NaN with
            the reason "no rater marked any foreground pixel" (agreeing on
            background alone is not a perfect score); the per-class arrays
            keep the background's own Dice and IoU.

    Returns:
        :class:`SampleMaskStats`. With fewer than two raters present, every
        number is NaN with a reason and ``stats`` is empty.

    Raises:
        ValueError: on bad masks (naming sample, rater and problem) or parameters.
    """
    if tolerance is not None and not (np.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(f"tolerance must be None or a non-negative number of pixels, got {tolerance!r}")
    if not (np.isfinite(boundary_tolerance) and boundary_tolerance >= 0):
        raise ValueError("boundary_tolerance must be a non-negative fraction of the image diagonal, "
                         f"got {boundary_tolerance!r}")
    if n_pixels is not None and (isinstance(n_pixels, bool) or int(n_pixels) != n_pixels or n_pixels < 2):
        raise ValueError(f"n_pixels must be None or an integer >= 2, got {n_pixels!r}")
    where = f"sample {sample_key!r}" if sample_key != "" else "sample"
    arrays = check_masks(masks, class_values, where, raters=raters)
    R = len(arrays)
    present = np.array([a is not None for a in arrays], dtype=bool)
    if class_values is not None:
        values = np.unique(np.asarray(list(class_values), dtype=np.int64))
    else:
        found = [_value_counts(a)[0] for a in arrays if a is not None]
        values = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
    pairs = tuple((i, j) for i in range(R) for j in range(i + 1, R))
    if present.sum() < 2:
        return _undefined(sample_key, values, present, pairs, n_pixels)
    C = values.size
    labels = [_class_index(a, values) for a in arrays if a is not None]
    D = [lab.reshape(-1) for lab in labels]
    rows, counts, _ = label_patterns(D, C, inverse=False)
    o = _coincidence_from_patterns(rows, counts, C)
    alpha_stats = PixelAlphaStats.from_coincidence(values, o if n_pixels is None or D[0].size <= n_pixels
                                                   else _sampled_coincidence(D, C, n_pixels, seed, sample_key),
                                                   D[0].size, n_pixels)
    overlap = _overlap(rows, counts, labels, present, values, pixel_tolerance(labels[0].shape, tolerance,
                                                                        boundary_tolerance))
    return _sample_result(sample_key, values, present, pairs, (alpha_stats, overlap, o), exclude=exclude,
                          background=background)


def _sampled_coincidence(D: list[np.ndarray], C: int, n_pixels: int, seed: int, sample_key: str) -> np.ndarray:
    """The coincidence matrix of ``n_pixels`` pixels drawn without replacement, weighted by ``N / n_pixels``."""
    N = D[0].size
    pick = sample_seed(seed, sample_key).choice(N, size=int(n_pixels), replace=False)
    rows, counts, _ = label_patterns([d[pick] for d in D], C, inverse=False)
    return _coincidence_from_patterns(rows, counts * (N / n_pixels), C)


def _overlap(rows: np.ndarray, counts: np.ndarray, labels: list[np.ndarray], present: np.ndarray, values: np.ndarray,
             tolerance: float) -> OverlapStats:
    """The sample's Dice/IoU and boundary sums per rater pair (over all ``R`` raters) and class."""
    C, R = values.size, present.size
    where = np.flatnonzero(present)
    nb, hits = _boundary_hits(labels, C, tolerance)
    stats = OverlapStats.empty(values, R)
    for a in range(where.size):
        for b in range(a + 1, where.size):
            p = pair_index(int(where[a]), int(where[b]), R)
            N = np.bincount(rows[:, a] * C + rows[:, b], weights=counts, minlength=C * C).reshape(C, C)
            stats.intersection[p] = np.diag(N)
            stats.size_a[p], stats.size_b[p] = N.sum(axis=1), N.sum(axis=0)
            stats.boundary_a[p], stats.boundary_b[p] = nb[a], nb[b]
            stats.hits_a[p], stats.hits_b[p] = hits[a, b], hits[b, a]
            stats.n_samples[p] = 1
    return stats


def _sample_result(sample_key: str, values: np.ndarray, present: np.ndarray, pairs: tuple[tuple[int, int], ...],
                   sums: tuple[PixelAlphaStats, OverlapStats, np.ndarray], *, exclude: Iterable[int],
                   background: int | None) -> SampleMaskStats:
    """Per-sample numbers from the sample's sums (``sums``: its corpus alpha statistics, overlap sums and
    coincidence matrix; Dice and IoU NaN when no rater marked foreground)."""
    from agreement.core.krippendorff import alpha_from_coincidence

    alpha_stats, overlap, o = sums

    a = alpha_from_coincidence(o)
    ov = overlap.finish()
    keep_class = ~np.isin(values, np.asarray(list(exclude), dtype=np.int64))
    in_either = (overlap.size_a + overlap.size_b > 0) & keep_class
    with_boundary = (overlap.boundary_a + overlap.boundary_b > 0) & keep_class
    reasons = [f"pixel alpha: {a.reason}"] if a.reason else []
    no_foreground = foreground_reason(values, (overlap.size_a + overlap.size_b).sum(axis=0), background,
                                      where="on this sample")
    if no_foreground and in_either.any():
        in_either[:] = False
        reasons.append(no_foreground)
    elif not in_either.any():
        reasons.append("no class (outside exclude) is present in any mask: Dice and IoU are undefined")
    if not with_boundary.any():
        reasons.append("no mask has a class boundary: boundary F1 is undefined")
    return SampleMaskStats(
        sample_key=str(sample_key), class_values=tuple(int(v) for v in values), raters_present=present,
        alpha=float(a.alpha), pixel_agreement=float(np.trace(o) / o.sum()) if o.sum() > 0 else float("nan"),
        dice=_mean_over(ov.pair_dice, in_either), iou=_mean_over(ov.pair_iou, in_either),
        boundary_f1=_mean_over(ov.pair_boundary_f1, with_boundary),
        pair_dice=ov.pair_dice, pair_iou=ov.pair_iou, pair_boundary_f1=ov.pair_boundary_f1, pairs=pairs,
        reason="; ".join(reasons), stats=SemanticStats(alpha_stats, overlap),
    )


def _undefined(sample_key: str, values: np.ndarray, present: np.ndarray, pairs: tuple[tuple[int, int], ...],
               n_pixels: int | None) -> SampleMaskStats:
    """The result of a sample with fewer than two raters present."""
    nan_pc = np.full((len(pairs), values.size), np.nan)
    return SampleMaskStats(
        sample_key=str(sample_key), class_values=tuple(int(v) for v in values), raters_present=present,
        alpha=np.nan, pixel_agreement=np.nan, dice=np.nan, iou=np.nan, boundary_f1=np.nan,
        pair_dice=nan_pc, pair_iou=nan_pc.copy(), pair_boundary_f1=nan_pc.copy(), pairs=pairs,
        reason=f"fewer than two raters have a mask ({int(present.sum())} of {present.size}): agreement is undefined",
        stats=SemanticStats(PixelAlphaStats.empty(values, n_pixels), OverlapStats.empty(values, present.size)),
    )
