"""The stages of the empirical noise generator on one cell (one simulated rater on one sample;
:mod:`agreement.simulate.noise.empirical`): unmatched instances, fragmentation, combination, category
mistakes and the localisation shift, in strict priority, each drawing its errors among the boxes
still clean.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from agreement.simulate.noise.perturbations import clip_to_image
from agreement.simulate.noise.profile import FalsePositiveShape, LocalisationProfile, NoiseProfile

_REJECTION_ROUNDS = 100


# --------------------------------------------------------------------------
# Generator internals
# --------------------------------------------------------------------------


class ClassSampler:
    """Draws a new class for a class ``c``: confusion row, else reference frequencies.

    Args:
        confusion: ``{c: {c': weight}}``, the fitted confusion counts (the diagonal ignored).
        prior_labels: the reference rater's labels, whose frequencies are the fallback.
    """

    def __init__(self, confusion: Mapping[str, Mapping[str, float]], prior_labels: np.ndarray) -> None:
        self.rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for c, row in confusion.items():
            items = [(k, v) for k, v in sorted(row.items()) if v > 0 and k != c]
            if items:
                t = np.empty(len(items), dtype=object)
                t[:] = [k for k, _ in items]
                w = np.array([v for _, v in items], dtype=np.float64)
                self.rows[c] = (t, w / w.sum())
        classes, counts = np.unique(np.asarray([str(x) for x in prior_labels], dtype=object).astype(str),
                                    return_counts=True)
        self.prior_classes = np.empty(len(classes), dtype=object)
        self.prior_classes[:] = list(classes)
        self.prior_counts = counts.astype(np.float64)
        self.index = {c: i for i, c in enumerate(self.prior_classes)}

    def has_alternative(self, c: Any) -> bool:
        """Whether some class other than ``c`` can be drawn for ``c``."""
        if c in self.rows:
            return True
        n_other = len(self.prior_classes) - (1 if c in self.index else 0)
        return n_other > 0

    def draw(self, c: Any, rng: np.random.Generator) -> Any:
        """A class other than ``c``: from ``c``'s confusion row when it has one, else from the reference
        frequencies of the other classes."""
        if c in self.rows:
            t, p = self.rows[c]
            return t[rng.choice(len(t), p=p)]
        w = self.prior_counts.copy()
        if c in self.index:
            w[self.index[c]] = 0.0
        return self.prior_classes[rng.choice(len(w), p=w / w.sum())]


def elementwise_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of the boxes ``a[i]`` and ``b[i]``, row by row: ``|a_i ∩ b_i| / |a_i ∪ b_i|``.

    Args:
        a: ``(n, 4)`` boxes ``[x, y, w, h]``.
        b: ``(n, 4)`` boxes ``[x, y, w, h]``.

    Returns:
        ``(n,)`` IoU in ``[0, 1]``; 1 for two identical boxes (even of zero area), 0 for two other boxes with
        an empty union.
    """
    ax1, ay1 = a[:, 0] + a[:, 2], a[:, 1] + a[:, 3]
    bx1, by1 = b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]
    iw = np.clip(np.minimum(ax1, bx1) - np.maximum(a[:, 0], b[:, 0]), 0, None)
    ih = np.clip(np.minimum(ay1, by1) - np.maximum(a[:, 1], b[:, 1]), 0, None)
    inter = iw * ih
    union = a[:, 2] * a[:, 3] + b[:, 2] * b[:, 3] - inter
    same = np.all(a == b, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    return np.where(same, 1.0, iou)


def _apply_residuals(boxes: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Boxes moved by residuals ``(dx, dy, dw, dh)`` (before clipping)."""
    w, h = boxes[:, 2], boxes[:, 3]
    cx = boxes[:, 0] + w / 2 + r[:, 0] * w
    cy = boxes[:, 1] + h / 2 + r[:, 1] * h
    nw = w * np.exp(np.clip(r[:, 2], -20, 20))
    nh = h * np.exp(np.clip(r[:, 3], -20, 20))
    return np.stack([cx - nw / 2, cy - nh / 2, nw, nh], axis=1)


def _shift(
    boxes: np.ndarray,
    loc: LocalisationProfile,
    lam: float,
    threshold: float,
    offset: tuple[float, float, float, float],
    rng: np.random.Generator,
) -> np.ndarray:
    """Stage 4 geometry: residuals from ``loc`` restricted to IoU ``>= threshold``, times ``λ``."""
    m = len(boxes)
    if m == 0:
        return boxes.copy()
    r = loc.sample(rng, m)
    bad = elementwise_iou(boxes, _apply_residuals(boxes, r)) < threshold
    for _ in range(_REJECTION_ROUNDS):
        if not bad.any():
            break
        idx = np.flatnonzero(bad)
        r[idx] = loc.sample(rng, len(idx))
        bad[idx] = elementwise_iou(boxes[idx], _apply_residuals(boxes[idx], r[idx])) < threshold
    r[bad] = 0.0  # only after _REJECTION_ROUNDS failures (a profile far too wide for its threshold)
    total = lam * r + np.asarray(offset, dtype=np.float64)[None, :]
    out = clip_to_image(_apply_residuals(boxes, total))
    still = np.all(total == 0.0, axis=1)  # exact copies (no round-off) where nothing moves, e.g. λ = 0
    out[still] = boxes[still]
    return out


def _split(box: np.ndarray, k: int, size: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``k`` pieces of a box cut across its longer side (pixel aspect when known)."""
    x, y, w, h = box
    W, H = (size if np.all(np.isfinite(size)) and np.all(size > 0) else (1.0, 1.0))
    frac = rng.dirichlet(np.full(k, 2.0))
    edges = np.concatenate([[0.0], np.cumsum(frac)])
    edges[-1] = 1.0
    pieces = np.empty((k, 4))
    if w * W >= h * H:
        pieces[:, 0] = x + edges[:-1] * w
        pieces[:, 2] = np.diff(edges) * w
        pieces[:, 1], pieces[:, 3] = y, h
    else:
        pieces[:, 1] = y + edges[:-1] * h
        pieces[:, 3] = np.diff(edges) * h
        pieces[:, 0], pieces[:, 2] = x, w
    return pieces


def _hull(boxes: np.ndarray) -> np.ndarray:
    x0, y0 = boxes[:, 0].min(), boxes[:, 1].min()
    x1, y1 = (boxes[:, 0] + boxes[:, 2]).max(), (boxes[:, 1] + boxes[:, 3]).max()
    return np.array([x0, y0, x1 - x0, y1 - y0])


def _false_positives(
    n_fp: int, labels: np.ndarray, shape: FalsePositiveShape, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    size = np.exp(rng.normal(shape.log_size_mean, shape.log_size_std, n_fp))
    aspect = np.exp(rng.normal(shape.log_aspect_mean, shape.log_aspect_std, n_fp))
    w = np.clip(size * np.sqrt(aspect), 0.0, 1.0)
    h = np.clip(size / np.sqrt(aspect), 0.0, 1.0)
    x = rng.random(n_fp) * (1.0 - w)
    y = rng.random(n_fp) * (1.0 - h)
    lab = labels[rng.integers(0, len(labels), n_fp)] if n_fp else labels[:0]
    return np.stack([x, y, w, h], axis=1), lab


def _binomial(rng: np.random.Generator, n: int, p: float) -> int:
    return int(rng.binomial(n, p)) if n and p > 0 else 0


class _CellRows:
    """The rows one simulated rater draws on one sample, in the order the stages produce them:
    box blocks, labels, source reference row (-1 for a false positive) and origin (the stage)."""

    def __init__(self) -> None:
        self.boxes: list[np.ndarray] = []
        self.labels: list[Any] = []
        self.source: list[int] = []
        self.origin: list[str] = []

    def shuffled(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(boxes, labels, source, origin)`` as arrays, rows in a random order."""
        m = len(self.source)
        ob = np.concatenate(self.boxes) if self.boxes else np.zeros((0, 4))
        ol = np.empty(m, dtype=object)
        ol[:] = self.labels
        os_ = np.asarray(self.source, dtype=np.intp)
        oo = np.asarray(self.origin, dtype=object)
        perm = rng.permutation(m)
        return ob[perm], ol[perm], os_[perm], oo[perm]


@dataclass(frozen=True)
class NoiseModel:
    """What every simulated rater draws its errors from: the ``profile``, its ``rates`` scaled by the
    magnitude ``lam`` (λ) and the class ``sampler`` of category mistakes."""

    profile: NoiseProfile
    rates: dict[str, float]
    lam: float
    sampler: ClassSampler


@dataclass(frozen=True)
class SchoolBias:
    """A rater's systematic bias: its school's relabelling ``class_map`` and box ``offset`` (none: empty, 0)."""

    class_map: Mapping[str, str]
    offset: tuple[float, float, float, float]


@dataclass(frozen=True)
class _Cell:
    """One simulated rater on one sample while the stages run: the random generator, the error
    ``counts`` (requested, applied, cannibalised), which reference boxes are still ``clean`` and the rows
    drawn so far (``out``)."""

    rng: np.random.Generator
    counts: dict[str, dict[str, int]]
    clean: np.ndarray
    out: _CellRows


def _unmatched_stage(boxes, labels, noise: NoiseModel, cell: _Cell) -> None:
    """Stage 1: false negatives (clean boxes removed), then false positives (new boxes injected)."""
    profile, rates, rng, counts, clean, out = noise.profile, noise.rates, cell.rng, cell.counts, cell.clean, cell.out
    n = len(boxes)
    req, app = counts["requested"], counts["applied"]
    k = _binomial(rng, n, rates["false_negative"])
    req["false_negative"] += k
    if k:
        clean[rng.choice(n, size=k, replace=False)] = False
    app["false_negative"] += k
    k = _binomial(rng, n, rates["false_positive"])
    req["false_positive"] += k
    if k:
        fb, fl = _false_positives(k, labels, profile.false_positive_shape, rng)
        out.boxes.append(fb)
        out.labels.extend(fl)
        out.source.extend([-1] * k)
        out.origin.extend(["false_positive"] * k)
    app["false_positive"] += k


def _fragmentation_stage(boxes, labels, image_size, noise: NoiseModel, cell: _Cell) -> None:
    """Stage 2a: clean boxes split along their longer side into ``2 + Poisson`` pieces."""
    profile, rates, rng, counts, clean, out = noise.profile, noise.rates, cell.rng, cell.counts, cell.clean, cell.out
    n = len(boxes)
    req, app, can = counts["requested"], counts["applied"], counts["cannibalised"]
    k = _binomial(rng, n, rates["fragmentation"])
    req["fragmentation"] += k
    if k:
        avail = np.flatnonzero(clean)
        take = min(k, len(avail))
        can["fragmentation"] += k - take
        app["fragmentation"] += take
        for i in rng.choice(avail, size=take, replace=False) if take else ():
            pieces = _split(boxes[i], 2 + int(rng.poisson(profile.fragment_extra_mean)), image_size, rng)
            clean[i] = False
            out.boxes.append(pieces)
            out.labels.extend([labels[i]] * len(pieces))
            out.source.extend([int(i)] * len(pieces))
            out.origin.extend(["fragment"] * len(pieces))


def _combination_stage(boxes, labels, noise: NoiseModel, cell: _Cell) -> None:
    """Stage 2b: a clean box and its nearest clean boxes of the same class replaced by their hull."""
    profile, rates, rng, counts, clean, out = noise.profile, noise.rates, cell.rng, cell.counts, cell.clean, cell.out
    n = len(boxes)
    req, app, can = counts["requested"], counts["applied"], counts["cannibalised"]
    k = _binomial(rng, n, rates["combination"])
    req["combination"] += k
    if k:
        centres = boxes[:, :2] + boxes[:, 2:] / 2
        codes = np.unique(labels.astype(str), return_inverse=True)[1]
        for g in range(k):
            same = codes[:, None] == codes[None, :]
            partners = (same & clean[None, :] & clean[:, None]).sum(axis=1) - 1
            eligible = np.flatnonzero(clean & (partners >= 1))
            if not len(eligible):
                can["combination"] += k - g
                break
            seed_box = int(rng.choice(eligible))
            size = 2 + int(rng.poisson(profile.combination_extra_mean))
            cand = np.flatnonzero(clean & (codes == codes[seed_box]))
            cand = cand[cand != seed_box]
            d = np.hypot(*(centres[cand] - centres[seed_box]).T)
            members = np.concatenate([[seed_box], cand[np.argsort(d, kind="stable")[: size - 1]]])
            clean[members] = False
            out.boxes.append(_hull(boxes[members])[None, :])
            out.labels.append(labels[seed_box])
            out.source.append(seed_box)
            out.origin.append("combination")
            app["combination"] += 1


def _category_stage(boxes, labels, noise: NoiseModel, school: SchoolBias, cell: _Cell) -> None:
    """Stage 3: category mistakes (school relabelling first, then sampled confusions); the
    relabelled boxes are shifted with the misclassified-localisation residuals."""
    profile, rates, lam, sampler = noise.profile, noise.rates, noise.lam, noise.sampler
    class_map, offset = school.class_map, school.offset
    rng, counts, clean, out = cell.rng, cell.counts, cell.clean, cell.out
    n = len(boxes)
    req, app, can = counts["requested"], counts["applied"], counts["cannibalised"]
    mis = np.zeros(n, dtype=bool)
    new_labels = labels.copy()
    if class_map:
        mapped = np.array([clean[i] and str(labels[i]) in class_map for i in range(n)], dtype=bool)
        for i in np.flatnonzero(mapped):
            new_labels[i] = class_map[str(labels[i])]
        mis |= mapped
        clean &= ~mapped
        app["school_category"] += int(mapped.sum())
    k = _binomial(rng, n, rates["category"])
    req["category"] += k
    if k:
        avail = np.array([i for i in np.flatnonzero(clean) if sampler.has_alternative(labels[i])], dtype=np.intp)
        take = min(k, len(avail))
        can["category"] += k - take
        app["category"] += take
        chosen = np.sort(rng.choice(avail, size=take, replace=False)) if take else np.zeros(0, np.intp)
        for i in chosen:
            new_labels[i] = sampler.draw(labels[i], rng)
        clean[chosen] = False
        mis[chosen] = True
    idx = np.flatnonzero(mis)
    if len(idx):
        out.boxes.append(_shift(boxes[idx], profile.misclassified_localisation, lam, profile.iou_threshold,
                                offset, rng))
        out.labels.extend(new_labels[idx])
        out.source.extend(idx.tolist())
        out.origin.extend(["school_category" if class_map and str(labels[i]) in class_map else "category"
                           for i in idx])


def _localisation_stage(boxes, labels, noise: NoiseModel, school: SchoolBias, cell: _Cell) -> None:
    """Stage 4: localisation shift of whatever is still clean."""
    profile, lam, offset, rng, counts, out = noise.profile, noise.lam, school.offset, cell.rng, cell.counts, cell.out
    idx = np.flatnonzero(cell.clean)
    if len(idx):
        out.boxes.append(_shift(boxes[idx], profile.localisation, lam, profile.iou_threshold, offset, rng))
        out.labels.extend(labels[idx])
        out.source.extend(idx.tolist())
        out.origin.extend(["localisation"] * len(idx))
    counts["applied"]["localisation"] += len(idx)


def simulate_cell(
    boxes: np.ndarray,
    labels: np.ndarray,
    image_size: np.ndarray,
    noise: NoiseModel,
    school: SchoolBias,
    *,
    rng: np.random.Generator,
    counts: dict[str, dict[str, int]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One rater on one sample: ``(boxes, labels, source, origin)``, rows shuffled.

    The stages run in priority order on the boxes still ``clean``.

    Args:
        boxes: ``(n, 4)`` the reference rater's boxes on the sample.
        labels: ``(n,)`` their classes.
        image_size: ``(W, H)`` of the sample, in pixels.
        noise: the noise model (rates and profile).
        school: the rater's school (class map and box offset).
        rng: the cell's random generator.
        counts: collects the requested, applied and cannibalised errors of each stage.

    Returns:
        ``(boxes, labels, source, origin)``: the simulated rater's boxes and classes, the reference row each
        comes from (``-1``: invented) and the stage that made it.
    """
    cell = _Cell(rng=rng, counts=counts, clean=np.ones(len(boxes), dtype=bool), out=_CellRows())
    _unmatched_stage(boxes, labels, noise, cell)
    _fragmentation_stage(boxes, labels, image_size, noise, cell)
    _combination_stage(boxes, labels, noise, cell)
    _category_stage(boxes, labels, noise, school, cell)
    _localisation_stage(boxes, labels, noise, school, cell)
    return cell.out.shuffled(rng)
