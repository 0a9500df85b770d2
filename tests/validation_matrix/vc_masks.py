"""Semantic masks: mask agreement (pixel α, Dice, IoU, boundary F1) and mask consensus (multi-class STAPLE),
through the pure library (:func:`agreement.methods.semantic.sample_statistics` pooled with
:meth:`SemanticStats.merge` / ``finish`` as ``compute_mask_agreement`` does; :func:`multilabel_staple` per
sample, pooled as ``compute_mask_consensus`` pools it in ``agreement/fo/methods/semantic_consensus_labels.py``).

Settings: the operator's defaults (``ignore_background=False``) except the boundary tolerance,
:data:`BOUNDARY_TOLERANCE` of the image diagonal (2.7 px on the 64-px masks; the default 0.75 % is below a pixel
there), and ``n_pixels``: the
matrix pools every pixel (``n_pixels=0``, exact; the operator's 10,000-pixel sample is one invariance variant).
Instance masks on images are the images part's.

Designs: a mask is background 0 with ellipses of classes 1..C drawn in random order (later ones on top).

* homogeneous chance: 24 masks of 64 x 64, 3 raters, each rater drawing its own mask (independent and
  identically distributed: 1–5 ellipses, 3 equally likely classes), 5 seeds;
* heterogeneous chance: 16 images whose sides are log-uniform in 64..4,096 px (area at most 2**20 px: the
  4,096-px sides come as strips), 1–50 ellipses, 6 classes with the rare-class prior 0.6/0.2/0.1/0.05/0.03/0.02,
  a crowd of 200 raters of whom 2–5 draw each image, 3 seeds;
* monotone: 3 raters of 16 true masks (64 x 64), noise level L = 0..5 of each stage alone: the raters' class
  regions eroded or dilated by a disk of radius L (a side drawn once per rater and mask), or a share 0.03 L of
  the pixels set to a random class (one uniform draw per pixel, reused across levels: coupled, nested);
* invariant: level 2 of both stages; samples permuted, raters permuted and renamed, class values renamed (mask_targets
  values 1, 2, 3 -> 7, 3, 12), nearest-neighbour ×2 upscaling (every count ×4: α, Dice, IoU and STAPLE exactly
  unchanged; boundary F1, whose tolerance is a share of the diagonal, within 0.05: below a pixel a raster
  cannot resolve it) and the operator's sampled α (n_pixels = 10,000, within 0.02).
"""

from __future__ import annotations

import math
from typing import Callable

import cv2
import numpy as np

from agreement.methods.semantic import SemanticStats, multilabel_staple, sample_statistics
from validation_matrix import Cell
from validation_matrix.vc_common import (
    chance_cell,
    degenerate_cell,
    empty_rater_ceiling,
    identical_cell,
    invariant_cell,
    monotone_cell,
    na_cell,
)

KIND = "semantic masks"
#: Statistic key -> the page's method name.
METHODS = {"alpha": "Masks: pixel α", "dice": "Masks: Dice", "iou": "Masks: IoU",
           "boundary_f1": "Masks: boundary F1", "sensitivity": "Mask consensus (STAPLE): mean sensitivity",
           "specificity": "Mask consensus (STAPLE): mean specificity"}
CHANCE_CORRECTED = ("alpha",)
LEVELS = (0, 1, 2, 3, 4, 5)
#: Careful raters (a single class) must score at least this.
CAREFUL_FLOOR = 0.5
Masks = list[list]  # per sample, one mask (or None) per rater

_NOT_CORRECTED = {
    "dice": "Dice is not chance-corrected: unrelated masks overlap in proportion to their sizes (background "
            "class included), so it has no chance level 0",
    "iou": "IoU is not chance-corrected (as Dice)",
    "boundary_f1": "boundary F1 is not chance-corrected: random boundaries fall within the tolerance of one "
                   "another in proportion to their density",
    "sensitivity": "STAPLE's rates are not chance-corrected: EM fits a truth to the raters themselves, so "
                   "random raters get rates well above 0",
    "specificity": "as the sensitivity",
}


# ----------------------------------------------------------------------------- designs


def true_mask(rng: np.random.Generator, shape: tuple[int, int], n_obj: int, prior: np.ndarray) -> np.ndarray:
    """Background 0 with ``n_obj`` filled ellipses of classes ``1..len(prior)`` drawn from ``prior``."""
    h, w = shape
    m = np.zeros((h, w), np.uint8)
    cls = rng.choice(len(prior), size=n_obj, p=prior) + 1
    cx, cy = rng.random(n_obj) * w, rng.random(n_obj) * h
    ax = np.maximum(1, rng.uniform(0.05, 0.25, (n_obj, 2)) * np.array([w, h]))
    ang = rng.uniform(0, 180, n_obj)
    for k in range(n_obj):
        cv2.ellipse(m, (int(cx[k]), int(cy[k])), (int(ax[k, 0]), int(ax[k, 1])), float(ang[k]), 0, 360,
                    int(cls[k]), -1)
    return m


def random_masks(seed: int, heterogeneous: bool) -> Masks:
    """Independent random raters (module docstring): every rater draws its own mask."""
    rng = np.random.default_rng(1000 + seed)
    if not heterogeneous:
        p = np.full(3, 1 / 3)
        return [[true_mask(rng, (64, 64), int(rng.integers(1, 6)), p) for _ in range(3)] for _ in range(24)]
    prior = np.array([0.6, 0.2, 0.1, 0.05, 0.03, 0.02])
    S, R = 16, 200
    sides = np.round(64 * 64 ** rng.random((S, 2))).astype(int)  # 64..4,096 px, log-uniform
    over = sides.prod(axis=1) > 1 << 20
    sides[over, 0] = (1 << 20) // sides[over, 1]  # strips: area at most 2**20 px
    who = np.argsort(rng.random((S, R)), axis=1).argsort(axis=1) < rng.integers(2, 6, S)[:, None]
    out = []
    for s in range(S):
        shape = (int(sides[s, 0]), int(sides[s, 1]))
        out.append([true_mask(rng, shape, int(rng.integers(1, 51)), prior) if who[s, r] else None
                    for r in range(R)])
    return out


def truths(seed: int, S: int = 16, classes: int = 3) -> list[np.ndarray]:
    """``S`` true 64 x 64 masks of 2–6 ellipses."""
    rng = np.random.default_rng(seed)
    p = np.full(classes, 1 / classes)
    return [true_mask(rng, (64, 64), int(rng.integers(2, 7)), p) for _ in range(S)]


def noisy(truth: list[np.ndarray], level: int, R: int = 3, seed: int = 5, classes: int = 3,
          stages: tuple[str, ...] = ("boundary", "pixels")) -> Masks:
    """``R`` raters of ``truth`` at noise ``level`` (module docstring; coupled across levels by the seed):
    ``"boundary"`` erodes or dilates by a disk of radius ``level``, ``"pixels"`` sets a share ``0.03 level``
    of the pixels to a random class."""
    rng = np.random.default_rng(seed)
    out = []
    for t in truth:
        row = []
        for _ in range(R):
            grow, u, cls = rng.random() < 0.5, rng.random(t.shape), rng.integers(0, classes + 1, t.shape)
            m = t
            if level and "boundary" in stages:
                disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * level + 1, 2 * level + 1))
                m = cv2.dilate(t, disk) if grow else cv2.erode(t, disk)
            if "pixels" in stages:
                m = np.where(u < 0.03 * level, cls, m)
            row.append(m.astype(np.uint8))
        out.append(row)
    return out


# ----------------------------------------------------------------------------- statistics


def _staple(samples: Masks) -> tuple[float, float, str]:
    """Mean sensitivity and specificity of multi-class STAPLE, pooled as ``compute_mask_consensus`` does:
    per rater and class, sums weighted by the truth mass (of the class; of the other classes), then the
    mean over classes, then over raters. Samples with fewer than two masks are skipped with the library's
    reason."""
    sums: dict = {}
    reasons: list[str] = []
    for masks in samples:
        raters = [r for r, m in enumerate(masks) if m is not None]
        try:
            present = [masks[r] for r in raters]
            values = np.unique(np.concatenate([np.unique(m) for m in present])) if present else np.zeros(0, int)
            lut = np.zeros(int(values.max()) + 1 if values.size else 1, np.uint8)
            lut[values] = np.arange(values.size)
            res = multilabel_staple([lut[m] for m in present])
        except ValueError as e:
            reasons.append(str(e))
            continue
        if res.reason:
            reasons.append(res.reason)
        mass = res.truth_mass
        for i, r in enumerate(raters):
            for k, v in enumerate(values):
                cell = sums.setdefault(r, {}).setdefault(int(v), np.zeros(4))
                if np.isfinite(res.sensitivity[i, k]):
                    cell[:2] += (mass[k] * res.sensitivity[i, k], mass[k])
                if np.isfinite(res.specificity[i, k]):
                    cell[2:] += ((mass.sum() - mass[k]) * res.specificity[i, k], mass.sum() - mass[k])
    out = []
    for a, b in ((0, 1), (2, 3)):
        per_rater = [np.mean(x) for per in sums.values()
                     if (x := [c[a] / c[b] for c in per.values() if c[b] > 0])]
        out.append(float(np.mean(per_rater)) if per_rater else math.nan)
    return out[0], out[1], "; ".join(dict.fromkeys(reasons))


def scores(samples: Masks, keys: list[str] | None = None, tolerance: float | None = None,
           n_pixels: int | None = None) -> dict[str, tuple[float, str]]:
    """Every statistic of :data:`METHODS`: ``{key: (value, reason)}``. ``keys``: the samples' ids."""
    keys = keys or [f"s{i:04d}" for i in range(len(samples))]
    total: SemanticStats | None = None
    try:
        for k, masks in zip(keys, samples):
            st = sample_statistics(masks, n_pixels=n_pixels, sample_key=k, tolerance=tolerance,
                                  boundary_tolerance=BOUNDARY_TOLERANCE).stats
            total = st if total is None else total.merge(st)
        res = total.finish()
        a, o = res.alpha, res.overlap
        parts = [x for x in o.reason.split("; ") if x]
        dice_why = "; ".join(x for x in parts if "Dice" in x)  # the overlap reason covers all three numbers
        bf_why = "; ".join(x for x in parts if "boundary" in x)
        out = {"alpha": (a.alpha, a.reason), "dice": (o.dice, dice_why), "iou": (o.iou, dice_why),
               "boundary_f1": (o.boundary_f1, bf_why)}
    except Exception as e:  # noqa: BLE001 - a raising method is a failing cell, with the error as its value
        out = {k: (math.nan, f"error: {type(e).__name__}: {e}") for k in ("alpha", "dice", "iou", "boundary_f1")}
    try:
        sens, spec, why = _staple(samples)
        out["sensitivity"], out["specificity"] = (sens, why), (spec, why)
    except Exception as e:  # noqa: BLE001
        out["sensitivity"] = out["specificity"] = (math.nan, f"error: {type(e).__name__}: {e}")
    return out


# ----------------------------------------------------------------------------- cells


def invariance_designs(base: Masks) -> dict[str, Callable[[], dict]]:
    """``{variant: scores thunk}`` (module docstring; tolerances in :data:`LOOSE`)."""
    keys = [f"s{i:04d}" for i in range(len(base))]
    perm = np.random.default_rng(4).permutation(len(base))
    rename = np.arange(256, dtype=np.uint8)
    rename[[1, 2, 3]] = [7, 3, 12]
    up = [[np.repeat(np.repeat(m, 2, axis=0), 2, axis=1) for m in row] for row in base]
    return {
        "samples permuted": lambda: scores([base[i] for i in perm], [keys[i] for i in perm]),
        "raters permuted and renamed": lambda: scores([row[::-1] for row in base], keys),
        "class values renamed": lambda: scores([[rename[m] for m in row] for row in base], keys),
        "×2 resolution": lambda: scores(up, keys),
        "sampled α (n_pixels = 10,000)": lambda: scores(up, keys, n_pixels=10_000),
    }


#: Boundary F1's tolerance, as a share of the image diagonal: 3 % is 2.7 px on the 64-px masks here (the
#: operator's default 0.75 % would be 0.68 px, below what a raster resolves: documented in docs/method-masks.md).
BOUNDARY_TOLERANCE = 0.03

#: Why a variant is not exact for a statistic: ``{(statistic, variant prefix): (tolerance, why)}``.
LOOSE = {
    ("alpha", "×2"): (1e-4, "pixel α: Krippendorff's small-sample factor n / (n − 1) in D_e, n the pairable "
                            "pixels, changes by O(1/n) when every count is multiplied by 4"),
    ("alpha", "sampled"): (0.02, "pixel α: a seeded sample of 10,000 pixels per sample estimates the exact α"),
    ("boundary_f1", "×2"): (0.05, "boundary F1: a tolerance of 2.7 px against 5.4 px, rounded to "
                                  "whole pixels of a raster (docs/method-masks.md)"),
    ("sensitivity", "class values renamed"): (1e-5, "STAPLE: EM stops once no confusion entry moves by 1e-5 (ITK's rule) and ITK's "
                                "start depends on the order of the label values"),
    ("specificity", "class values renamed"): (1e-5, "as the sensitivity"),
}


def _invariant(method: str, key: str, base: dict, variants: dict) -> Cell:
    """The invariance cell of ``key``: exact unless :data:`LOOSE` says why (the sample concerns α only)."""
    vals, tol, why = {}, {}, []
    for name, got in variants.items():
        if name.startswith("sampled") and key != "alpha":
            continue
        vals[name] = got[key][0]
        for (k, prefix), (t, reason) in LOOSE.items():
            if k == key and name.startswith(prefix):
                tol[name] = t
                why.append(reason)
    return invariant_cell(method, KIND, base[key][0], vals, tol, "; ".join(dict.fromkeys(why)))


#: Noise stages a statistic is documented not to fall under, with where: ``{statistic: {stage: why}}``.
NOT_MONOTONE = {"boundary_f1": {"pixel noise": "documented (docs/method-masks.md): dense speckle is all boundary, so "
                                               "boundary F1 climbs back towards its uncorrected chance level"}}


def _monotone(method: str, key: str, stages: dict[str, list[dict]]) -> Cell:
    """Non-increasing under each noise stage separately (all must hold, but for a stage
    :data:`NOT_MONOTONE` documents: shown, not judged)."""
    parts = {name: monotone_cell(method, KIND, LEVELS, [m[key][0] for m in runs], name)
             for name, runs in stages.items()}
    exempt = NOT_MONOTONE.get(key, {})
    ok = all(c.ok for name, c in parts.items() if name not in exempt)
    text = "; ".join(f"{name}: {c.value}" for name, c in parts.items())
    note = "; ".join([f"{name}: {c.note}" for name, c in parts.items() if not c.ok and name not in exempt]
                     + [f"{name} not judged: {why}" for name, why in exempt.items()])
    return Cell(method, KIND, "monotone", text, ok, note)


def degenerate_designs(careful: Masks, single: Masks) -> dict[str, Masks]:
    """One design per degenerate property, from careful raters (level 1) and their one-class version."""
    S = len(careful)
    return {
        "one_rater": [[row[0], None, None] for row in careful],
        "never_meet": [[row[0], None, None] if s < S // 2 else [None, row[1], None] for s, row in enumerate(careful)],
        "empty_rater": [[row[0], row[1], np.zeros_like(row[2])] for row in careful],
        "all_empty": [[np.zeros_like(m) for m in row] for row in careful],
        "single_class": single,
        "_without_empty": [[row[0], row[1], None] for row in careful],
    }


def cells() -> list[Cell]:
    """Every cell of semantic masks (module docstring)."""
    truth = truths(0)
    zero = scores(noisy(truth, 0))  # level 0 is the same corpus (the truth, R copies) for every stage
    stages = {name: [scores(noisy(truth, L, stages=(stage,))) if L else zero for L in LEVELS]
              for name, stage in (("erosion/dilation", "boundary"), ("pixel noise", "pixels"))}
    chance = {"chance_homogeneous": [scores(random_masks(s, False)) for s in range(5)],
              "chance_heterogeneous": [scores(random_masks(s, True)) for s in range(3)]}
    base = scores(noisy(truth, 2))
    variants = {n: thunk() for n, thunk in invariance_designs(noisy(truth, 2)).items()}
    single = noisy([(t > 0).astype(np.uint8) for t in truth], 1, classes=1)
    deg = {p: scores(d) for p, d in degenerate_designs(noisy(truth, 1), single).items()}
    without = deg.pop("_without_empty")
    out: list[Cell] = []
    for key, method in METHODS.items():
        out.append(identical_cell(method, KIND, stages["erosion/dilation"][0][key]))
        for prop, runs in chance.items():
            vals = [r[key][0] for r in runs]
            if key in CHANCE_CORRECTED:
                out.append(chance_cell(method, KIND, prop, vals, extra="crowd of 200, 2–5 per image"
                                       if prop == "chance_heterogeneous" else ""))
            else:
                out.append(na_cell(method, KIND, prop, _NOT_CORRECTED[key],
                                   f"{np.mean(vals):.3f} (measured)"))
        out.append(_monotone(method, key, stages))
        out.append(_invariant(method, key, base, variants))
        for prop, got in deg.items():
            out.append(degenerate_cell(method, KIND, prop, got[key], need_none=prop in ("one_rater", "never_meet"),
                                       floor=CAREFUL_FLOOR if prop == "single_class" else None,
                                       ceiling=empty_rater_ceiling(without[key][0], prop)))
    return out
