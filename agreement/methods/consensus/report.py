"""What a consensus says about every annotation, sample and rater.

* :func:`member_similarity`: each member's similarity to its unit's
  consensus geometry (box IoU; OKS for keypoints; cuboid IoU in 3D; masks
  and polygons get their pixel IoU from the STAPLE fusion);
* :func:`row_and_sample_summaries`: per annotation, its unit, consensus
  label and whether it agrees; per sample, consensus labels, units flagged
  for review and the lowest confidence;
* :func:`rater_report`: the per-rater report (:class:`~agreement.methods.consensus.result.RaterReport`).

This module does not import FiftyOne.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agreement.geometry.keypoints import COCO_PERSON_SIGMAS
from agreement.methods.consensus.fusion import box_iou_paired
from agreement.methods.consensus.result import RaterReport
from agreement.methods.consensus.units import UnitTable, geometry_fusion

__all__ = ["member_similarity", "paired_oks", "row_and_sample_summaries", "rater_report", "review_flags",
           "KEYPOINT_SIGMA"]

#: Per-keypoint σ of the OKS for skeletons other than COCO's 17 person keypoints
#: (about the mean of COCO's constants).
KEYPOINT_SIGMA = 0.06


def paired_oks(a: np.ndarray, b: np.ndarray, boxes_a: np.ndarray, boxes_b: np.ndarray,
               pixels: np.ndarray) -> np.ndarray:
    r"""Symmetric OKS of the pairs ``(a[k], b[k])`` (:mod:`agreement.geometry.keypoints`' definition):
    ``\sum_{V_a \cap V_b} \exp(-d^2 / (2 s κ^2)) / |V_a \cup V_b|`` with ``s`` the mean box area in
    pixels and ``κ = 2σ`` (COCO's σ for 17 points, :data:`KEYPOINT_SIGMA` otherwise)."""
    K = a.shape[1]
    sig = COCO_PERSON_SIGMAS if K == len(COCO_PERSON_SIGMAS) else np.full(K, KEYPOINT_SIGMA)
    va, vb = ~np.isnan(a).any(axis=2), ~np.isnan(b).any(axis=2)
    d2 = (((np.nan_to_num(a) - np.nan_to_num(b)) * pixels[:, None, :]) ** 2).sum(axis=2)

    def area(bx: np.ndarray) -> np.ndarray:
        a: np.ndarray = bx[:, 2] * bx[:, 3] * pixels[:, 0] * pixels[:, 1]
        return a

    s = 0.5 * (area(boxes_a) + area(boxes_b)) + np.spacing(1)
    e = np.exp(-d2 / (2.0 * s[:, None] * (2.0 * sig[None, :]) ** 2))
    union = np.maximum((va | vb).sum(axis=1), 1)
    oks: np.ndarray = np.where(va & vb, e, 0.0).sum(axis=1) / union
    return oks


def _keypoint_similarity(data: Any, units: UnitTable, boxes: np.ndarray, fused: np.ndarray) -> np.ndarray:
    """OKS of every member's keypoints to its unit's fused keypoints (:func:`paired_oks`)."""
    mu, order = units.member_unit, units.order
    size = data.image_sizes[data.sample_index[order]]
    px = np.where((np.isfinite(size) & (size > 0)).all(axis=1)[:, None], size, 1.0)
    return paired_oks(data.keypoints[order], fused[mu], data.boxes[order], boxes[mu], px)


def _cuboid_similarity(data: Any, units: UnitTable, boxes: np.ndarray, fused: np.ndarray) -> np.ndarray:
    """3D IoU of every member's cuboid with its unit's fused cuboid, clipped to ``[0, 1]``."""
    from agreement.geometry.cuboids import pairwise_cuboid_iou

    order = units.order
    out = np.empty(len(order))
    for u in range(units.n_units):
        a, b = units.starts[u], units.starts[u + 1]
        out[a:b] = pairwise_cuboid_iou(data.cuboids[order[a:b]], fused[u:u + 1])[:, 0]
    clipped: np.ndarray = np.clip(out, 0.0, 1.0)
    return clipped


#: Built-in fusion (:func:`agreement.methods.consensus.units.geometry_fusion`) -> the similarity of a member
#: to its unit's fused column; the rest compare boxes (pixel fusions give their own pixel IoU).
_MEMBER_SIMILARITY = {"keypoints": _keypoint_similarity, "cuboids": _cuboid_similarity}


def member_similarity(data: Any, kind: str, units: UnitTable, boxes: np.ndarray, *, fused: Any = None,
                      pixel_iou: np.ndarray | None = None) -> np.ndarray:
    """``(M,)`` similarity of every member (unit order) to its unit's consensus geometry, in ``[0, 1]``.

    By the built-in fusion of ``kind`` (:func:`agreement.methods.consensus.units.geometry_fusion`): the pixel
    IoU of a STAPLE fusion (masks, polygons), OKS for keypoints, 3D IoU for cuboids, box IoU otherwise.

    Args:
        data: the corpus.
        kind: the fused geometry (:func:`agreement.methods.consensus.units.label_type`).
        units: the units.
        boxes: ``(U, 4)`` the fused boxes.
        fused: the fused column ``kind`` (one entry per unit), where the fusion gives one.
        pixel_iou: ``(M,)`` the members' pixel IoU of a STAPLE fusion.

    Returns:
        ``(M,)`` similarities in ``[0, 1]``.
    """
    fusion = geometry_fusion(kind)
    if fusion == "pixels" and pixel_iou is not None:
        return pixel_iou
    hook = _MEMBER_SIMILARITY.get(fusion)
    if hook is not None:
        sim: np.ndarray = hook(data, units, boxes, fused)
        return sim
    return box_iou_paired(data.boxes[units.order], boxes[units.member_unit])


def review_flags(confidence: np.ndarray, class_probability: np.ndarray, band: tuple[float, float]) -> np.ndarray:
    """``lo <= confidence < hi``, or ``confidence >= lo`` with ``class_probability < hi``."""
    lo, hi = band
    return ((confidence >= lo) & (confidence < hi)) | ((confidence >= lo) & (class_probability < hi))


def row_and_sample_summaries(data: Any, units: UnitTable, kept: np.ndarray, confidence: np.ndarray,
                             label_code: np.ndarray, codes: np.ndarray, review: np.ndarray,
                             similarity: np.ndarray,
                             *, class_probability: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per row: consensus index, agreement, similarity; per sample: counts and the lowest label confidence.

    A consensus label's confidence is its existence posterior times its class posterior
    (``confidence * class_probability``; the existence posterior alone without ``class_probability``):
    ``sample_min_confidence`` is the lowest of these over the sample's consensus labels, the value the
    review queue sorts by. ``sample_n_review`` counts the sample's flagged units (``review``).
    """
    N, S = len(data), data.num_samples
    cons_index = np.where(kept, np.cumsum(kept) - 1, -1)
    row_unit = units.row_unit
    inside = row_unit >= 0
    safe = np.where(inside, row_unit, 0)
    row_cons = np.where(inside, cons_index[safe] if len(cons_index) else -1, -1)
    row_agrees = (row_cons >= 0) & (label_code[safe] == codes) if len(label_code) else np.zeros(N, bool)
    row_sim = np.full(N, np.nan)
    row_sim[units.order] = similarity
    us = units.unit_sample
    min_conf = np.full(S, np.inf)
    label_confidence = confidence if class_probability is None else confidence * class_probability
    with np.errstate(invalid="ignore"):  # NaN: a label without a confidence (its raters never meet another)
        np.minimum.at(min_conf, us[kept], label_confidence[kept])
    return {
        "consensus_index": cons_index, "row_consensus": row_cons, "row_agrees": row_agrees,
        "row_similarity": row_sim,
        "sample_n_consensus": np.bincount(us[kept], minlength=S),
        "sample_n_review": np.bincount(us[review], minlength=S),
        "sample_min_confidence": np.where(np.isfinite(min_conf), min_conf, np.nan),
    }


def _empirical_confusion(mr: np.ndarray, mc: np.ndarray, top: np.ndarray, R: int, C: int) -> np.ndarray:
    counts = np.bincount((mr * C + top) * C + mc, minlength=R * C * C).reshape(R, C, C).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates: np.ndarray = counts / counts.sum(axis=2, keepdims=True)
    return rates


def rater_report(data: Any, units: UnitTable, codes: np.ndarray, classes: tuple, kept: np.ndarray,
                 label_code: np.ndarray, row_agrees: np.ndarray, similarity: np.ndarray,
                 *, existence: Any = None, model: Any = None, pixel: Any = None) -> RaterReport:
    """The per-rater report: model estimates with ``model`` (EM), empirical against the consensus otherwise."""
    R, C = data.num_raters, len(classes)
    mr, mu = data.rater_index[units.order], units.member_unit
    n_labels = np.bincount(data.rater_index, minlength=R)
    n_samples = data.assigned.sum(axis=0)
    in_kept = kept[mu]
    with np.errstate(invalid="ignore", divide="ignore"):
        loc_err = (np.bincount(mr[in_kept], 1.0 - similarity[in_kept], R) / np.bincount(mr[in_kept], minlength=R))
        agreement = np.bincount(data.rater_index, row_agrees.astype(float), R) / n_labels
        if model is not None:
            sens, fp = model.sensitivity.copy(), model.false_positive_rate.copy()
            precision = np.bincount(mr, existence[mu], R) / n_labels
            confusion, noise = model.confusion, model.localisation_noise
        else:
            n_cons = np.bincount(units.unit_sample[kept], minlength=data.num_samples)
            sens = np.bincount(mr[in_kept], minlength=R) / (data.assigned.T.astype(float) @ n_cons)
            precision = np.bincount(mr[in_kept], minlength=R) / n_labels
            fp = (n_labels - np.bincount(mr[in_kept], minlength=R)) / n_samples
            confusion = _empirical_confusion(mr[in_kept], codes[units.order][in_kept], label_code[mu][in_kept], R, C)
            noise = np.full(R, np.nan)
    return RaterReport(
        raters=tuple(data.raters), sensitivity=sens, false_positive_rate=fp, precision=precision,
        localisation_error=loc_err, localisation_noise=noise, agreement=agreement, confusion=confusion,
        classes=tuple(classes), n_labels=n_labels, n_samples=n_samples,
        pixel_sensitivity=None if pixel is None else pixel.sensitivity,
        pixel_specificity=None if pixel is None else pixel.specificity,
    )
