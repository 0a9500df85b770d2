"""STAPLE mask consensus over a corpus: per sample and class, the raters' unions, STAPLE, the consensus.

For every sample and every class, each assigned rater's instances of the class
form their union (a full-frame binary mask: instance masks placed in the
image, or polygons rasterised with OpenCV); a rater who is assigned, carries
masks or polygons on the sample, and drew no instance of the class
contributes an empty mask (explicit absence). STAPLE (Warfield, Zou & Wells
2004, :func:`agreement.methods.consensus.staple.staple`) estimates each rater's sensitivity and
specificity and a consensus probability map; the consensus is the region of
probability ≥ ``threshold``, reported as a box, the mask cropped to it and the
mean probability inside.

Samples where fewer than two raters carry masks or polygons, or without an
image size, are skipped with a reason, never silently dropped.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.masks import PlacedMask, place_masks, rasterize_polygons
from agreement.methods.consensus.staple import dice, mask_majority_vote, staple

__all__ = ["ConsensusMask", "MaskConsensusResult", "mask_consensus"]


@dataclass(frozen=True)
class ConsensusMask:
    """One class's consensus on one sample: relative box, mask cropped to it, mean probability."""

    label: str
    box: tuple[float, float, float, float]
    mask: np.ndarray
    probability: float


@dataclass
class MaskConsensusResult:
    """STAPLE over a corpus.

    Attributes:
        consensus: sample index → its consensus masks (one per class with a
            non-empty consensus); samples processed but without any consensus
            map to an empty list; skipped samples are absent.
        sample_sensitivity: ``(S,)`` mean rater sensitivity per sample (NaN where skipped).
        per_sample: sample index → one record per class (raters, sensitivity,
            specificity, convergence, reason).
        skipped: sample index → reason.
        sensitivity: ``(R,)`` mean STAPLE sensitivity over a rater's (sample, class) estimates, in ``[0, 1]``.
        specificity: ``(R,)`` mean STAPLE specificity over the same estimates, in ``[0, 1]``.
        n_estimates: ``(R,)`` the number of those estimates.
        dice_vs_majority: Dice of the STAPLE consensus and the majority vote, per (sample, class).
    """

    consensus: dict[int, list[ConsensusMask]] = field(default_factory=dict)
    sample_sensitivity: np.ndarray | None = None
    per_sample: dict[int, list[dict]] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)
    sensitivity: np.ndarray | None = None
    specificity: np.ndarray | None = None
    n_estimates: np.ndarray | None = None
    dice_vs_majority: list[float] = field(default_factory=list)


def _full_frame(placed: Sequence[PlacedMask], W: int, H: int) -> np.ndarray:
    out = np.zeros((H, W), dtype=bool)
    for p in placed:
        h, w = p.mask.shape
        out[p.y0:p.y0 + h, p.x0:p.x0 + w] |= p.mask.astype(bool)
    return out


def _frames(data: MultiRaterAnnotations, s: int, W: int,
            H: int) -> tuple[list[int], dict[tuple[int, str], np.ndarray]]:
    """The raters of sample ``s`` carrying masks or polygons, and their per-class union frames."""
    raters: list[int] = []
    frames: dict[tuple[int, str], np.ndarray] = {}
    for r in np.flatnonzero(data.assigned[s]):
        rows = np.arange(*data.rows(s, int(r)).indices(len(data)))
        has = [i for i in rows if (data.masks is not None and data.masks[i] is not None)
               or (data.polygons is not None and data.polygons[i])]
        if len(rows) and not has:
            continue  # a rater with boxes only: not mask-bearing
        raters.append(int(r))
        for i in has:
            if data.masks is not None and data.masks[i] is not None:
                placed = place_masks([data.masks[i]], data.boxes[i:i + 1], (W, H))
            else:
                placed = rasterize_polygons([data.polygons[i]], (W, H))
            frame = _full_frame(placed, W, H)
            key = (int(r), str(data.labels[i]))
            frames[key] = frames[key] | frame if key in frames else frame
    return raters, frames


def _consensus_of(cls: str, prob: np.ndarray, cons: np.ndarray, W: int, H: int) -> ConsensusMask | None:
    if not cons.any():
        return None
    ys, xs = np.nonzero(cons)
    x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
    return ConsensusMask(cls, (x0 / W, y0 / H, (x1 - x0) / W, (y1 - y0) / H), cons[y0:y1, x0:x1],
                         float(prob[cons].mean()))


def mask_consensus(data: MultiRaterAnnotations, *, threshold: float = 0.5, max_iter: int = 10_000,
                   progress: Callable[[float, str], None] | None = None) -> MaskConsensusResult:
    """STAPLE consensus of every sample and class of ``data`` (see the module docstring).

    Args:
        data: the corpus, with ``masks`` or ``polygons`` and ``image_sizes``.
        threshold: consensus probability threshold in (0, 1).
        max_iter: STAPLE's iteration limit.
        progress: optional ``callback(fraction, label)``.

    Returns:
        :class:`MaskConsensusResult`.

    Reference: S. K. Warfield, K. H. Zou, W. M. Wells, "Simultaneous Truth and
    Performance Level Estimation (STAPLE)", IEEE TMI 23(7), 2004.
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
    S, R = data.num_samples, data.num_raters
    sample_sensitivity = np.full(S, np.nan)
    out = MaskConsensusResult(sample_sensitivity=sample_sensitivity)
    sizes = data.image_sizes
    assert sizes is not None  # MultiRaterAnnotations fills it (NaN where unknown)
    sens_sum, spec_sum, n_est = np.zeros(R), np.zeros(R), np.zeros(R)
    for s in range(S):
        if progress and s % 50 == 0:
            progress(s / max(S, 1), f"sample {s + 1} of {S}")
        W, H = sizes[s]
        if not (np.isfinite(W) and np.isfinite(H)):
            out.skipped[s] = "no image size (metadata.width/height): compute_metadata() first"
            continue
        W, H = int(W), int(H)
        raters, frames = _frames(data, s, W, H)
        if len(raters) < 2:
            out.skipped[s] = f"{len(raters)} rater(s) with masks or polygons: STAPLE needs two"
            continue
        records: list[dict[str, Any]] = []
        masks: list[ConsensusMask] = []
        for cls in sorted({c for (_, c) in frames}):
            stack = np.stack([frames.get((r, cls), np.zeros((H, W), bool)) for r in raters])
            res = staple(stack, max_iter=int(max_iter))
            cons = res.probability >= threshold
            d = dice(cons, mask_majority_vote(stack))
            if np.isfinite(d):
                out.dice_vs_majority.append(float(d))
            ok = np.isfinite(res.sensitivity) & np.isfinite(res.specificity)
            np.add.at(sens_sum, np.asarray(raters)[ok], res.sensitivity[ok])
            np.add.at(spec_sum, np.asarray(raters)[ok], res.specificity[ok])
            np.add.at(n_est, np.asarray(raters)[ok], 1)
            records.append({"class": cls, "raters": [data.raters[r] for r in raters], "sensitivity": res.sensitivity,
                            "specificity": res.specificity, "converged": bool(res.converged),
                            "reason": res.reason or ""})
            m = _consensus_of(cls, res.probability, cons, W, H)
            if m is not None:
                masks.append(m)
        out.consensus[s] = masks
        out.per_sample[s] = records
        sens = [np.nanmean(r["sensitivity"]) for r in records if np.isfinite(r["sensitivity"]).any()]
        sample_sensitivity[s] = float(np.mean(sens)) if sens else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        out.sensitivity = np.where(n_est > 0, sens_sum / np.maximum(n_est, 1), np.nan)
        out.specificity = np.where(n_est > 0, spec_sum / np.maximum(n_est, 1), np.nan)
    out.n_estimates = n_est
    return out
