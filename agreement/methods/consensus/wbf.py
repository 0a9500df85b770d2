r"""Weighted Boxes Fusion (Solovyev, Wang & Gabruseva 2021), vectorised over images and classes.

WBF fuses the boxes of several sources (models, or here raters) image by
image and class by class:

1. **Pre-filter.** Boxes with score ``< skip_box_thr`` are dropped; corners
   are swapped if reversed and clipped to ``[0, 1]``; zero-area boxes are
   skipped. A box's score is multiplied by its source's weight.
2. **Clustering.** Within one (image, class), boxes are taken by descending
   score; each joins the cluster whose *current fused box* it overlaps best
   if that IoU is strictly greater than ``iou_thr``, and otherwise opens a
   new cluster (a source may contribute several boxes to one cluster).
3. **Fusion.** A cluster's box is the score-weighted mean of its members'
   corners, ``\hat b = \sum_i s_i b_i / \sum_i s_i`` (a single member keeps
   its box), and its confidence the mean member score times
   ``\min(M, n) / \sum_m w_m`` (``M`` sources with weights ``w_m``, ``n``
   members; ``conf_type="avg"``, ``allows_overflow=False``).

This is the algorithm of the ``ensemble-boxes`` package
(``weighted_boxes_fusion``), computed here for all (image, class) groups at
once: step ``k`` handles the ``k``-th box of every group in one array pass.
The tests check it against ``ensemble-boxes`` on random inputs (to 1e-9
with that package's float32 fusion run in float64, to float32 precision
without). Two deliberate differences: the arithmetic is float64 throughout
(``ensemble-boxes`` rounds fused boxes to float32), and exact score ties
are taken in input order (``ensemble-boxes`` takes them in the order of an
unstable sort). For raters, whose boxes carry no score, every score is 1,
so boxes are taken in rater order.

This module does not import FiftyOne.

References:
    R. Solovyev, W. Wang and T. Gabruseva, "Weighted boxes fusion: Ensembling
    boxes from different object detection models", Image and Vision Computing
    107, 104117, 2021; ``pip install ensemble-boxes``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["WBFResult", "weighted_boxes_fusion"]


@dataclass(frozen=True)
class WBFResult:
    """Clusters of :func:`weighted_boxes_fusion`.

    Attributes:
        boxes: ndarray (K, 4). Fused ``[x1, y1, x2, y2]``.
        scores: ndarray (K,). Cluster confidence.
        labels: ndarray (K,). Class of each cluster.
        group: ndarray (K,). Image of each cluster.
        size: ndarray (K,). Boxes in each cluster.
        cluster: ndarray (n,). Cluster of every input box; ``-1`` for a box removed by the pre-filter.
    """

    boxes: np.ndarray
    scores: np.ndarray
    labels: np.ndarray
    group: np.ndarray
    size: np.ndarray
    cluster: np.ndarray


def _prefilter(boxes: ArrayLike, scores: np.ndarray, thr: float) -> tuple[np.ndarray, np.ndarray]:
    """Corners swapped and clipped as ``ensemble-boxes`` does; which boxes survive."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
    if not np.isfinite(b).all():
        raise ValueError("boxes must be finite")
    lo = np.minimum(b[:, [0, 1]], b[:, [2, 3]])
    hi = np.maximum(b[:, [0, 1]], b[:, [2, 3]])
    b = np.clip(np.concatenate([lo, hi], axis=1), 0.0, 1.0)
    keep = (scores >= thr) & ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) != 0.0)
    return b, keep


def _iou_to_clusters(F: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of box ``b[g]`` with every cluster box ``F[g, j]``, in ``ensemble-boxes``' operation order."""
    xA = np.maximum(F[..., 0], b[:, None, 0])
    yA = np.maximum(F[..., 1], b[:, None, 1])
    xB = np.minimum(F[..., 2], b[:, None, 2])
    yB = np.minimum(F[..., 3], b[:, None, 3])
    inter = np.maximum(xB - xA, 0) * np.maximum(yB - yA, 0)
    area_f = (F[..., 2] - F[..., 0]) * (F[..., 3] - F[..., 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    with np.errstate(invalid="ignore", divide="ignore"):
        iou: np.ndarray = inter / (area_f + area_b[:, None] - inter)
    return iou


def _cluster_bucket(b: np.ndarray, s: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                    thr: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sequential WBF clustering of groups of similar size, all groups at once.

    Returns per box (slot of its cluster) and per (group, slot) the sums, weights and counts.
    """
    G, n = len(starts), int(sizes.max())
    F = np.zeros((G, n, 4))
    Ssum = np.zeros((G, n, 4))
    Wsum = np.zeros((G, n))
    cnt = np.zeros((G, n), np.int64)
    nc = np.zeros(G, np.int64)
    slot = np.empty(int(sizes.sum()), np.int64)
    slots = np.arange(n)
    for k in range(n):
        g = np.flatnonzero(sizes > k)
        idx = starts[g] + k
        bk, sk = b[idx], s[idx]
        iou = _iou_to_clusters(F[g], bk)
        iou = np.where(slots[None, :] < nc[g, None], iou, -np.inf)
        best = np.argmax(iou, axis=1)
        hit = iou[np.arange(len(g)), best] > thr
        j = np.where(hit, best, nc[g])
        gm, jm = g[hit], j[hit]
        Ssum[gm, jm] += sk[hit, None] * bk[hit]
        Wsum[gm, jm] += sk[hit]
        cnt[gm, jm] += 1
        F[gm, jm] = Ssum[gm, jm] / Wsum[gm, jm, None]
        gn, jn = g[~hit], j[~hit]
        F[gn, jn] = bk[~hit]
        Ssum[gn, jn] = sk[~hit, None] * bk[~hit]
        Wsum[gn, jn] = sk[~hit]
        cnt[gn, jn] = 1
        nc[gn] += 1
        slot[idx] = j
    return slot, F, Wsum, cnt, nc


def weighted_boxes_fusion(
    boxes: ArrayLike,
    scores: ArrayLike,
    labels: ArrayLike,
    models: ArrayLike,
    *,
    groups: ArrayLike | None = None,
    weights: ArrayLike | None = None,
    group_models: ArrayLike | None = None,
    iou_thr: float = 0.55,
    skip_box_thr: float = 0.0,
) -> WBFResult:
    """Weighted Boxes Fusion of many images at once (module docstring).

    Args:
        boxes: array-like (n, 4). ``[x1, y1, x2, y2]`` relative to the image (``[0, 1]``).
        scores: array-like (n,). Box scores (1 for a rater's boxes).
        labels: array-like of int (n,). Class codes.
        models: array-like of int (n,). Source of each box, ``0 .. M - 1``.
        groups: array-like of int (n,), optional. Image of each box, ``0 .. G - 1`` (default: one image).
        weights: array-like (M,), optional. Source weights (default 1).
        group_models: array-like of bool (G, M), optional. The sources of each image (``ensemble-boxes`` is called with these
            sources' lists, empty lists included); default every source.
        iou_thr: float, default=0.55. A box joins a cluster when its IoU with the fused box is ``> iou_thr``.
        skip_box_thr: float, default=0. Boxes with a score ``< skip_box_thr`` are dropped first (module
            docstring, step 1).

    Returns:
        WBFResult: the fused boxes, their scores, labels, images and sizes, and the cluster of every input box.
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    n = len(scores)
    labels = np.asarray(labels).reshape(-1).astype(np.int64)
    models = np.asarray(models).reshape(-1).astype(np.int64)
    groups = np.zeros(n, np.int64) if groups is None else np.asarray(groups).reshape(-1).astype(np.int64)
    M = int(models.max()) + 1 if n else 0
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        M = max(M, len(weights))
    weights = np.ones(M) if weights is None else weights
    G = int(groups.max()) + 1 if n else 0
    if group_models is None:
        group_models = np.ones((G, M), dtype=bool)
    group_models = np.asarray(group_models, dtype=bool)
    if not (len(labels) == len(models) == len(groups) == n):
        raise ValueError("boxes, scores, labels, models and groups must have equal lengths")
    b, keep = _prefilter(boxes, scores, float(skip_box_thr))
    s = scores * weights[models] if n else scores
    kept = np.flatnonzero(keep)
    order = kept[np.lexsort((kept, -s[kept], labels[kept], groups[kept]))]
    key = groups[order] * (int(labels.max(initial=0)) + 1) + labels[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(order) else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, len(order)])
    runs = _Runs(order=order, starts=starts, sizes=sizes)
    sources = _Sources(groups=groups, labels=labels, weights=weights, group_models=group_models)
    return _fuse_groups(b, s, runs, sources, float(iou_thr))


@dataclass(frozen=True)
class _Runs:
    """The kept boxes in fusion order (``order``: by image, class, descending score) and the ``starts`` and
    ``sizes`` in it of each (image, class) group."""

    order: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray


@dataclass(frozen=True)
class _Sources:
    """Per box: its image (``groups``) and class code (``labels``); per source: its weight; per image: the
    sources that labelled it (``group_models``, ``(G, M)``)."""

    groups: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    group_models: np.ndarray


def _cat(xs: list[np.ndarray], shape: int | tuple[int, ...], dt: type) -> np.ndarray:
    """The arrays ``xs`` concatenated as ``dt``; an empty array of ``shape`` when there are none."""
    return np.concatenate(xs).astype(dt) if xs else np.zeros(shape, dt)


def _fuse_groups(b: np.ndarray, s: np.ndarray, runs: _Runs, sources: _Sources, thr: float) -> WBFResult:
    """Clusters every (image, class) group, buckets of similar size at a time, and assembles the result
    (``b``, ``s``: every box and its weighted score)."""
    order, starts, sizes = runs.order, runs.starts, runs.sizes
    groups, labels, weights, group_models = sources.groups, sources.labels, sources.weights, sources.group_models
    cluster = np.full(len(s), -1, np.int64)
    out_b, out_s, out_l, out_g, out_n = [], [], [], [], []
    n_clusters = 0
    bucket = np.ceil(np.log2(np.maximum(sizes, 1))).astype(np.int64)
    for k in np.unique(bucket).tolist():
        gsel = np.flatnonzero(bucket == k)
        rows = np.concatenate([order[starts[g]: starts[g] + sizes[g]] for g in gsel])
        lstarts = np.cumsum(sizes[gsel]) - sizes[gsel]
        slot, F, W, cnt, nc = _cluster_bucket(b[rows], s[rows], lstarts, sizes[gsel], thr)
        gi, ji = np.nonzero(np.arange(F.shape[1])[None, :] < nc[:, None])
        base = n_clusters + np.cumsum(nc) - nc
        cluster[rows] = base[np.repeat(np.arange(len(gsel)), sizes[gsel])] + slot
        img = groups[rows[lstarts[gi]]]
        gm = group_models[img]
        avg = W[gi, ji] / cnt[gi, ji]
        conf = avg * np.minimum(gm.sum(axis=1), cnt[gi, ji]) / (gm * weights[None, :]).sum(axis=1)
        out_b.append(F[gi, ji])
        out_s.append(conf)
        out_l.append(labels[rows[lstarts[gi]]])
        out_g.append(img)
        out_n.append(cnt[gi, ji])
        n_clusters += int(nc.sum())
    return WBFResult(_cat(out_b, (0, 4), np.float64), _cat(out_s, 0, np.float64), _cat(out_l, 0, np.int64),
                     _cat(out_g, 0, np.int64), _cat(out_n, 0, np.int64), cluster)
