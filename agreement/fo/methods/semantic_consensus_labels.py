"""Multi-class STAPLE on semantic masks, as ``compute_mask_consensus`` runs it on ``Segmentation`` rater fields.

Per sample, the raters' masks (pixel value = class value, the classes the
dataset's ``mask_targets``) are fused by multi-label STAPLE
(:func:`agreement.methods.semantic.staple.multilabel_staple`, equal to
SimpleITK's ``MultiLabelSTAPLE``), run on the class values present on the
sample (coded ``0 .. k-1``, so a mask of values ``{0, 255}`` costs two
classes, not 256). The consensus is written as a ``Segmentation`` in
``{key}_consensus``; pixels whose largest posterior is shared by several
classes (*undecided*) take the class most raters gave them (ties: the lowest
value) and are counted. Each rater's sensitivity and specificity per class
are pooled over samples, weighted by the estimated number of pixels of the
class (STAPLE's truth mass) for sensitivity and of the other classes for
specificity. The run streams: a shard's samples are fused and written, and
only these sums are kept.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

import fiftyone as fo

from agreement.core.validation import AnnotationError
from agreement.fo.runs.method_spec import MethodOutput
from agreement.fo.storage.mask_reading import ordered_map
from agreement.methods.semantic.staple import multilabel_staple, value_histogram

__all__ = ["check_sample_masks", "semantic_kernel", "semantic_finish"]


def check_sample_masks(name: str, raters: list[str], masks: list[np.ndarray], targets: set[int] | None,
                       histograms: list[np.ndarray] | None = None) -> None:
    """Refuses masks of different shapes on one sample, or values outside the dataset's ``mask_targets``,
    naming the sample, the raters and the values (``histograms``: the masks' value counts, when known).

    Raises:
        AnnotationError: before anything of the run is written.
    """
    shapes = {r: m.shape for r, m in zip(raters, masks, strict=False)}
    if len(set(shapes.values())) > 1:
        raise AnnotationError(f"sample {name!r}: the raters' masks differ in shape "
                              + ", ".join(f"{r}: {s[0]}x{s[1]}" for r, s in shapes.items())
                              + "; every rater's mask of a sample must have the same height and width")
    if targets is None:
        return
    for k, (r, m) in enumerate(zip(raters, masks, strict=False)):
        counts = value_histogram(m) if histograms is None else histograms[k]
        values = np.flatnonzero(counts)
        bad = [(int(v), int(counts[v])) for v in values if int(v) not in targets and int(v) != 0]
        if bad:
            raise AnnotationError(f"sample {name!r}, rater {r!r}: mask values not in the dataset's mask_targets "
                                  f"{sorted(targets)}: " + ", ".join(f"{v} ({c} pixels)" for v, c in bad[:5])
                                  + "; add them to dataset.mask_targets, or fix the masks")


def _targets(read) -> set[int] | None:
    targets = read.layout.get("mask_targets")
    return None if not targets else {int(k) for k in targets}


def _sample_masks(data, s: int) -> tuple[list[str], list[np.ndarray]]:
    R = data.num_raters
    raters, masks = [], []
    for r in range(R):
        lo, hi = data.offsets[s * R + r], data.offsets[s * R + r + 1]
        if hi > lo:
            raters.append(data.raters[r])
            masks.append(data.masks[lo])
    return raters, masks


def _fuse(masks: list[np.ndarray], max_iter: int, histograms: list[np.ndarray]):
    """STAPLE on the values present (``histograms``: each mask's value counts), coded compactly; the consensus
    in values, undecided pixels by vote."""
    present = np.zeros(max(len(h) for h in histograms), dtype=bool)
    for h in histograms:
        present[:len(h)] |= h > 0
    values = np.flatnonzero(present)
    if len(values) == len(present):  # the values are 0 .. k-1 already (the usual case): no recoding
        coded = masks
    else:
        lut = np.zeros(len(present), dtype=np.uint8 if len(values) <= 256 else np.int64)
        lut[values] = np.arange(len(values))
        coded = [lut[m] for m in masks]
    res = multilabel_staple(coded, max_iter=max_iter)
    cons = res.consensus
    undecided = np.flatnonzero(cons.ravel() == res.label_undecided) if res.n_undecided else ()
    if len(undecided):  # the raters' vote there (ties: the lowest value)
        said = np.stack([c.ravel()[undecided] for c in coded])
        votes = np.stack([(said == k).sum(axis=0) for k in range(len(values))])
        cons = cons.copy().ravel()
        cons[undecided] = votes.argmax(axis=0)
        cons = cons.reshape(res.consensus.shape)
    return values, cons if len(values) == len(present) else values[cons], res  # values[k] = k: no look-up


def semantic_kernel(read, params: dict, extra: dict) -> MethodOutput:
    """One shard: per sample the consensus mask and the mean sensitivity of its raters; the shard's sums
    ``{rater: {class value: [Σ w·sens, Σ w, Σ w'·spec, Σ w']}}`` and counts as its statistics."""
    data = read.annotations
    targets = _targets(read)
    sums: dict = defaultdict(lambda: defaultdict(lambda: np.zeros(4)))
    consensus, sensitivity, skipped, undecided = {}, {}, {}, 0

    def one(s: int):
        raters, masks = _sample_masks(data, s)
        if len(masks) < 2:
            return raters, None
        histograms = [value_histogram(m) for m in masks]  # once per mask: the checks and the coding share them
        check_sample_masks(str(data.sample_names[s]), raters, masks, targets, histograms)
        values, cons, res = _fuse(masks, params["max_iter"], histograms)
        return raters, (values, cons.astype(np.uint8 if values.max() < 256 else np.uint16), res)

    # samples fused in threads, summed here in sample order: the serial numbers, bit for bit
    for s, (raters, fused) in enumerate(ordered_map(one, range(data.num_samples))):
        if fused is None:
            skipped[str(data.sample_ids[s])] = f"{len(raters)} rater(s) with a mask; STAPLE needs two"
            continue
        values, cons, res = fused
        undecided += int(res.n_undecided)
        mass = res.truth_mass
        for i, r in enumerate(raters):
            for k, v in enumerate(values):
                cell = sums[r][int(v)]
                other = mass.sum() - mass[k]
                if np.isfinite(res.sensitivity[i, k]):
                    cell[0] += mass[k] * res.sensitivity[i, k]
                    cell[1] += mass[k]
                if np.isfinite(res.specificity[i, k]):
                    cell[2] += other * res.specificity[i, k]
                    cell[3] += other
        consensus[data.sample_ids[s]] = fo.Segmentation(mask=cons)
        sens = res.sensitivity[np.isfinite(res.sensitivity)]
        sensitivity[data.sample_ids[s]] = float(sens.mean()) if sens.size else None
    stats = {"sums": {r: {v: c.tolist() for v, c in per.items()} for r, per in sums.items()},
             "skipped": skipped, "n_undecided": undecided, "n_consensus": len(consensus)}
    return MethodOutput({}, {}, sample_objects={"consensus": consensus, "sensitivity": sensitivity}, stats=stats)


def semantic_finish(stats: list, params: dict, context=None) -> tuple[dict, dict]:
    """The pooled per-rater, per-class sensitivity and specificity, and the counts."""
    sums: dict = defaultdict(lambda: defaultdict(lambda: np.zeros(4)))
    skipped: dict = {}
    for st in stats:
        skipped.update(st["skipped"])
        for r, per in st["sums"].items():
            for v, c in per.items():
                sums[r][int(v)] += np.asarray(c)
    raters = sorted(sums)
    classes = sorted({v for per in sums.values() for v in per})

    def ratio(r, v, a, b):
        c = sums[r].get(v)
        return float(c[a] / c[b]) if c is not None and c[b] > 0 else None

    sens = {r: {str(v): ratio(r, v, 0, 1) for v in classes} for r in raters}
    spec = {r: {str(v): ratio(r, v, 2, 3) for v in classes} for r in raters}
    mean = lambda table: [float(np.mean(x)) if (x := [v for v in table[r].values() if v is not None]) else None  # noqa: E731
                          for r in raters]
    rater_sens, rater_spec = mean(sens), mean(spec)
    finite = [v for v in rater_sens if v is not None]
    finite_spec = [v for v in rater_spec if v is not None]
    summary = {
        "n_consensus": int(sum(st["n_consensus"] for st in stats)), "n_skipped": len(skipped),
        "n_undecided_pixels": int(sum(st["n_undecided"] for st in stats)),
        "mean_sensitivity": float(np.mean(finite)) if finite else None,
        "mean_specificity": float(np.mean(finite_spec)) if finite_spec else None,
        **{f"sensitivity_{r}": v for r, v in zip(raters, rater_sens, strict=True)},
    }
    detail = {"raters": raters, "classes": [str(v) for v in classes], "rater_sensitivity": rater_sens,
              "rater_specificity": rater_spec, "class_sensitivity": sens, "class_specificity": spec,
              "skipped_samples": dict(list(skipped.items())[:1000])}
    return summary, detail
