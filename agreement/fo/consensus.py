"""STAPLE mask consensus on a FiftyOne dataset (Warfield, Zou & Wells 2004).

Per sample and per class, each assigned rater's instances of the class form
their union (a full-frame binary mask: instance masks placed in the image, or
polygons rasterised with OpenCV); a rater who is assigned and drew no instance
of the class contributes an empty mask (explicit absence). STAPLE
(:func:`agreement.staple.staple`) estimates each rater's sensitivity and
specificity and a consensus probability map; the consensus (probability
≥ ``threshold``) is written as a new ``Detections`` field ``{key}_consensus``
with one detection per class (its mask cropped to its bounding box, with the
mean probability inside as ``staple_probability``).

Samples where fewer than two raters carry masks or polygons are counted and
skipped with a reason, never silently dropped. Samples without an image size
(``metadata.width``/``height``) are skipped with a reason too: masks are
placed on the image's pixel grid.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import fiftyone as fo

from agreement.fo import runs
from agreement.fo.reading import read_annotations
from agreement.geometry.masks import place_masks, rasterize_polygons
from agreement.staple import dice, majority_vote, staple

__all__ = ["compute_mask_consensus", "METHOD"]

METHOD = "iaa.mask_consensus"
MAX_LISTED = 1000


def _full_frame(placed, W: int, H: int) -> np.ndarray:
    out = np.zeros((H, W), dtype=bool)
    for p in placed:
        h, w = p.mask.shape
        out[p.y0:p.y0 + h, p.x0:p.x0 + w] |= p.mask.astype(bool)
    return out


def compute_mask_consensus(
    samples,
    key: str,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str = "annotator",
    raters_field: str | None = None,
    box_policy: str = "clip",
    assume_crossed: bool = False,
    threshold: float = 0.5,
    max_iter: int = 10_000,
    overwrite: bool = False,
    progress: Callable[[float, str], None] | None = None,
) -> dict:
    """Computes STAPLE consensus masks and per-rater sensitivity/specificity.

    Returns:
        ``{"n_samples", "n_consensus", "n_skipped", "mean_sensitivity",
        "mean_specificity", "staple_vs_majority_dice"}`` plus per-rater means;
        the run results hold per rater and per sample estimates and the
        skipped samples with reasons.
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
    runs.validate_key(key)
    read = read_annotations(samples, fields=fields, field=field, rater_attr=rater_attr, raters_field=raters_field,
                            image_sizes=True, masks=True, box_policy=box_policy, assume_crossed=assume_crossed)
    data = read.annotations
    if data.masks is None and data.polygons is None:
        raise ValueError(
            "mask consensus needs instance masks (Detections with masks) or polygons (Polylines); "
            f"the rater labels of {read.layout.get('fields') or read.layout.get('field')!r} have neither"
        )
    runs.prepare_run(samples, key, METHOD, ["consensus", "sensitivity"], overwrite=overwrite, check_only=True)
    R = data.num_raters
    sens_sum, spec_sum, n_est = np.zeros(R), np.zeros(R), np.zeros(R)
    consensus_values, sample_sens = {}, {}
    skipped, per_sample = {}, {}
    dice_staple_vs_majority = []
    S = data.num_samples
    for s in range(S):
        if progress and s % 50 == 0:
            progress(0.05 + 0.85 * s / max(S, 1), f"sample {s + 1} of {S}")
        sid = data.sample_ids[s]
        W, H = data.image_sizes[s]
        if not (np.isfinite(W) and np.isfinite(H)):
            skipped[str(sid)] = "no image size (metadata.width/height): compute_metadata() first"
            continue
        W, H = int(W), int(H)
        masked_raters, frames = [], {}
        for r in np.flatnonzero(data.assigned[s]):
            rows = np.arange(*data.rows(s, int(r)).indices(len(data)))
            has = [i for i in rows if (data.masks is not None and data.masks[i] is not None)
                   or (data.polygons is not None and data.polygons[i])]
            if len(rows) and not has:
                continue  # a rater with boxes only: not mask-bearing
            masked_raters.append(int(r))
            for i in has:
                if data.masks is not None and data.masks[i] is not None:
                    placed = place_masks([data.masks[i]], data.boxes[i:i + 1], (W, H))
                else:
                    placed = rasterize_polygons([data.polygons[i]], (W, H))
                frame = _full_frame(placed, W, H)
                cls = str(data.labels[i])
                key_rc = (int(r), cls)
                frames[key_rc] = frames[key_rc] | frame if key_rc in frames else frame
        if len(masked_raters) < 2:
            skipped[str(sid)] = f"{len(masked_raters)} rater(s) with masks or polygons: STAPLE needs two"
            continue
        classes = sorted({c for (_, c) in frames})
        dets, sample_rows = [], []
        for cls in classes:
            stack = np.stack([frames.get((r, cls), np.zeros((H, W), bool)) for r in masked_raters])
            res = staple(stack, max_iter=int(max_iter))
            prob = res.probability
            cons = prob >= threshold
            mv = majority_vote(stack)
            d = dice(cons, mv)
            if np.isfinite(d):
                dice_staple_vs_majority.append(float(d))
            for j, r in enumerate(masked_raters):
                if np.isfinite(res.sensitivity[j]) and np.isfinite(res.specificity[j]):
                    sens_sum[r] += res.sensitivity[j]
                    spec_sum[r] += res.specificity[j]
                    n_est[r] += 1
            sample_rows.append({
                "class": cls,
                "raters": [data.raters[r] for r in masked_raters],
                "sensitivity": res.sensitivity,
                "specificity": res.specificity,
                "converged": bool(res.converged),
                "reason": res.reason or "",
            })
            if cons.any():
                ys, xs = np.nonzero(cons)
                x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
                dets.append(fo.Detection(
                    label=cls, bounding_box=[x0 / W, y0 / H, (x1 - x0) / W, (y1 - y0) / H],
                    mask=cons[y0:y1, x0:x1], staple_probability=float(prob[cons].mean()),
                ))
        consensus_values[sid] = fo.Detections(detections=dets)
        sens = [np.nanmean(row["sensitivity"]) for row in sample_rows if np.isfinite(row["sensitivity"]).any()]
        sample_sens[sid] = float(np.mean(sens)) if sens else float("nan")
        per_sample[str(sid)] = sample_rows
    if progress:
        progress(0.92, "writing the consensus")
    plan = runs.prepare_run(samples, key, METHOD, ["consensus", "sensitivity"], overwrite=overwrite)
    runs.write_sample_values(samples, plan, "consensus", consensus_values)
    runs.write_sample_values(samples, plan, "sensitivity", sample_sens)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_sens = np.where(n_est > 0, sens_sum / np.maximum(n_est, 1), np.nan)
        mean_spec = np.where(n_est > 0, spec_sum / np.maximum(n_est, 1), np.nan)
    summary = {
        "n_samples": S,
        "n_consensus": len(consensus_values),
        "n_skipped": len(skipped),
        "mean_sensitivity": float(np.nanmean(mean_sens)) if np.isfinite(mean_sens).any() else None,
        "mean_specificity": float(np.nanmean(mean_spec)) if np.isfinite(mean_spec).any() else None,
        "staple_vs_majority_dice": float(np.mean(dice_staple_vs_majority)) if dice_staple_vs_majority else None,
        **read.repairs.counts(),
    }
    detail = {
        "raters": list(data.raters),
        "rater_sensitivity": mean_sens,
        "rater_specificity": mean_spec,
        "rater_n_estimates": n_est,
        "skipped_samples": dict(list(skipped.items())[:MAX_LISTED]),
        "per_sample": dict(list(per_sample.items())[:MAX_LISTED]),
        "repairs": read.repairs.as_dict(),
    }
    runs.register_run(samples, plan, {"threshold": threshold, "max_iter": int(max_iter)}, read.layout,
                      {"summary": summary, "detail": detail})
    if progress:
        progress(1.0, "done")
    return {**summary, **{f"sensitivity_{r}": (None if not np.isfinite(v) else float(v))
                          for r, v in zip(data.raters, mean_sens)}}
