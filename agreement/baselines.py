"""Threshold baselines: F1 at an IoU threshold, mean IoU of matched pairs, and
Krippendorff's alpha over threshold matching.

These are the metrics the OT agreement is compared with (Prokhorov & Kalinin,
"Quantifying Annotation Agreement in Object Detection with Optimal
Transport"): they saturate where OT stays graded, since a pair either clears
the IoU threshold or it does not.

Threshold matching. Between rater A's ``n`` boxes and rater B's ``m`` boxes, a
pair ``(i, j)`` is *eligible* when ``IoU_ij >= t`` (and, when class-aware,
``label_i == label_j``). The matching is a **maximum-cardinality** one-to-one
matching of eligible pairs, and among those the one with the largest total IoU
(solved exactly with :func:`scipy.optimize.linear_sum_assignment` on weights
``K + IoU_ij`` for eligible pairs and 0 otherwise, ``K = min(n, m) + 1``, so
that one more matched pair always outweighs any IoU gain). It is symmetric in
A and B (unlike COCO's greedy, score-ordered matching, which needs a
detector's confidences).

* ``TP = |M|``, ``recall = TP / n``, ``precision = TP / m`` (A as reference),
  ``F1 = 2 TP / (n + m)`` in ``[0, 1]``, symmetric; undefined (NaN) for two
  empty sets.
* mean IoU of matched pairs in ``[t, 1]``; undefined when nothing matched.
* Krippendorff's alpha over threshold matching (nominal). For a rater pair on
  a sample, the *units* are the matched pairs and the unmatched boxes; a unit
  holds one value per rater: the box's class label, or the reserved category
  ``no_object`` when that rater drew nothing there (both raters are assigned,
  so this is explicit absence). A matched pair is ``(label_i, label_j)``, an
  unmatched box of A is ``(label_i, no_object)``, one of B
  ``(no_object, label_j)``. The matching for alpha is class-agnostic by
  default (``alpha_class_aware=False``), so that a label disagreement on a
  well-localised object counts as a label disagreement, not as two missed
  objects. Units of every rater pair and sample are pooled into one nominal
  alpha (coincidence matrices add over units; each unit has two values); alpha
  per rater pair uses that pair's units only. A sample where both sets are
  empty contributes no unit (there is no object to agree on), so it neither
  raises nor lowers alpha.

References: Prokhorov & Kalinin (baselines of the OT paper); Everingham et al.,
"The PASCAL VOC Challenge", IJCV 2010 (IoU >= 0.5 matching); K. Krippendorff,
"Computing Krippendorff's Alpha-Reliability", 2011.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.geometry.boxes import pairwise_iou
from agreement.krippendorff import AlphaResult, encode_values, nominal_alpha

__all__ = [
    "NO_OBJECT",
    "ThresholdMatching",
    "PairBaseline",
    "RaterPairAlpha",
    "ThresholdBaselines",
    "threshold_match",
    "f1_at_iou",
    "threshold_baselines",
]

NO_OBJECT = "no_object"


def _check_threshold(t: float) -> float:
    t = float(t)
    if not (np.isfinite(t) and 0.0 < t <= 1.0):
        raise ValueError(f"iou_threshold must be in (0, 1], got {t!r}")
    return t


def _boxes(boxes, name: str) -> np.ndarray:
    arr = np.asarray(boxes, dtype=np.float64)
    if arr.size == 0:
        return arr.reshape(0, 4)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"{name} must be an (n, 4) array of [x, y, w, h] boxes, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr[:, 2:] < 0):
        raise ValueError(f"{name} contains NaN/infinite coordinates or a negative size")
    return arr


@dataclass(frozen=True, eq=False)
class ThresholdMatching:
    """A one-to-one matching of two box sets at an IoU threshold.

    Attributes:
        rows: ``(k,)`` matched indices into A.
        cols: ``(k,)`` matched indices into B.
        iou: ``(k,)`` IoU of the matched pairs (each ``>= iou_threshold``).
        n_a, n_b: set sizes.
        iou_threshold: the threshold ``t``.
        class_aware: whether pairs needed equal labels.
    """

    rows: np.ndarray
    cols: np.ndarray
    iou: np.ndarray
    n_a: int
    n_b: int
    iou_threshold: float
    class_aware: bool

    @property
    def n_matched(self) -> int:
        return len(self.rows)


def _match_iou(iou: np.ndarray, eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, m = iou.shape
    if n == 0 or m == 0 or not eligible.any():
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    K = float(min(n, m) + 1)
    w = np.where(eligible, K + iou, 0.0)
    rows, cols = linear_sum_assignment(w, maximize=True)
    keep = eligible[rows, cols]
    return rows[keep], cols[keep]


def _eligible(iou, t, la, lb) -> np.ndarray:
    el = iou >= t
    if la is not None:
        index: dict = {}
        ca = np.fromiter((index.setdefault(v, len(index)) for v in la), np.int64, len(la))
        cb = np.fromiter((index.setdefault(v, len(index)) for v in lb), np.int64, len(lb))
        el &= ca[:, None] == cb[None, :]
    return el


def threshold_match(
    boxes_a: np.ndarray,
    boxes_b: np.ndarray,
    iou_threshold: float = 0.5,
    labels_a: Sequence | None = None,
    labels_b: Sequence | None = None,
) -> ThresholdMatching:
    """Maximum-cardinality one-to-one matching of pairs with ``IoU >= t``.

    Among matchings of eligible pairs (``IoU_ij >= t``, and equal labels when
    both label lists are given) it returns one of maximum cardinality and,
    among those, of maximum total IoU (Hungarian algorithm on ``K + IoU``,
    ``K = min(n, m) + 1``; see the module docstring).

    Args:
        boxes_a, boxes_b: ``(n, 4)`` / ``(m, 4)`` relative ``[x, y, w, h]``.
        iou_threshold: ``t`` in ``(0, 1]`` (default 0.5, PASCAL VOC).
        labels_a, labels_b: optional class labels; given both, matching is
            class-aware.

    Returns:
        :class:`ThresholdMatching`.
    """
    t = _check_threshold(iou_threshold)
    a = _boxes(boxes_a, "boxes_a")
    b = _boxes(boxes_b, "boxes_b")
    aware = labels_a is not None and labels_b is not None
    la = list(labels_a) if aware else None
    lb = list(labels_b) if aware else None
    if aware and (len(la) != len(a) or len(lb) != len(b)):
        raise ValueError("labels must have one entry per box")
    iou = pairwise_iou(a, b)
    rows, cols = _match_iou(iou, _eligible(iou, t, la, lb))
    return ThresholdMatching(rows, cols, iou[rows, cols], len(a), len(b), t, aware)


@dataclass(frozen=True)
class PairBaseline:
    """Threshold baselines of one pair of box sets.

    Attributes:
        f1: ``2 TP / (n + m)`` in ``[0, 1]``; NaN if both sets are empty.
        precision: ``TP / m`` (B against A as reference); NaN if ``m = 0``.
        recall: ``TP / n``; NaN if ``n = 0``.
        mean_iou: mean IoU of matched pairs, in ``[t, 1]``; NaN if none.
        n_matched: ``TP``.
        n_a, n_b: set sizes.
        reason: ``""`` or why ``f1`` / ``mean_iou`` are NaN.
    """

    f1: float
    precision: float
    recall: float
    mean_iou: float
    n_matched: int
    n_a: int
    n_b: int
    reason: str = ""


def _pair_baseline(tp: int, n: int, m: int, iou_sum: float) -> PairBaseline:
    reasons = []
    if n + m == 0:
        f1 = float("nan")
        reasons.append("both sets empty: F1 undefined (0/0)")
    else:
        f1 = 2.0 * tp / (n + m)
    if tp == 0:
        mean_iou = float("nan")
        if n + m:
            reasons.append("no matched pair: mean IoU undefined")
    else:
        mean_iou = iou_sum / tp
    prec = tp / m if m else float("nan")
    rec = tp / n if n else float("nan")
    return PairBaseline(f1, prec, rec, mean_iou, int(tp), int(n), int(m), "; ".join(reasons))


def f1_at_iou(
    boxes_a: np.ndarray,
    labels_a: Sequence | None,
    boxes_b: np.ndarray,
    labels_b: Sequence | None,
    iou_threshold: float = 0.5,
    class_aware: bool = True,
) -> PairBaseline:
    """F1 at an IoU threshold and mean IoU of matched pairs, for two box sets.

    ``F1 = 2 TP / (n + m)`` with ``TP`` the size of the maximum-cardinality
    one-to-one matching of pairs with ``IoU >= t`` (and equal labels when
    ``class_aware``); range ``[0, 1]``, symmetric in A and B, NaN for two empty
    sets. ``mean IoU`` averages the matched pairs' IoU, in ``[t, 1]``.

    Reference: Everingham et al., IJCV 2010 (IoU matching); used as a baseline
    by Prokhorov & Kalinin.
    """
    if class_aware:
        m = threshold_match(boxes_a, boxes_b, iou_threshold, labels_a, labels_b)
    else:
        m = threshold_match(boxes_a, boxes_b, iou_threshold)
    return _pair_baseline(m.n_matched, m.n_a, m.n_b, float(m.iou.sum()))


@dataclass(frozen=True)
class RaterPairAlpha:
    """Krippendorff's alpha over threshold matching for one rater pair."""

    rater_a: str
    rater_b: str
    result: AlphaResult


@dataclass(frozen=True, eq=False)
class ThresholdBaselines:
    """Threshold baselines of a corpus.

    Per sample (``S``): ``sample_f1`` and ``sample_mean_iou`` (means over the
    sample's rater pairs of the defined values), ``sample_reasons``.

    Per rater pair on a sample (``P``): ``pair_sample``, ``pair_rater_a``,
    ``pair_rater_b``, ``pair_f1``, ``pair_mean_iou``, ``pair_n_matched``,
    ``pair_n_a``, ``pair_n_b``.

    Corpus:

    Attributes:
        f1_micro: ``2 sum TP / sum (n + m)`` over every rater pair on every
            sample (NaN if there are no boxes).
        f1_macro: mean of the defined per-pair F1.
        mean_iou: mean IoU over every matched pair of the corpus.
        alpha: pooled nominal alpha over threshold-matching units.
        alpha_per_pair: alpha for each rater pair (name order).
        unit_pair: ``(U,)`` index into the pair arrays of each alpha unit.
        unit_values: ``(2, U)`` codes of each unit (rater a, rater b), indices
            into ``categories``.
        categories: the coding: class labels, then ``"no_object"`` last.
        iou_threshold, class_aware, alpha_class_aware: the parameters.
    """

    sample_f1: np.ndarray
    sample_mean_iou: np.ndarray
    sample_reasons: tuple[str, ...]
    pair_sample: np.ndarray
    pair_rater_a: np.ndarray
    pair_rater_b: np.ndarray
    pair_f1: np.ndarray
    pair_mean_iou: np.ndarray
    pair_n_matched: np.ndarray
    pair_n_a: np.ndarray
    pair_n_b: np.ndarray
    f1_micro: float
    f1_macro: float
    mean_iou: float
    alpha: AlphaResult
    alpha_per_pair: tuple[RaterPairAlpha, ...]
    unit_pair: np.ndarray = field(repr=False)
    unit_values: np.ndarray = field(repr=False)
    categories: tuple = ()
    iou_threshold: float = 0.5
    class_aware: bool = True
    alpha_class_aware: bool = False


def threshold_baselines(
    data,
    iou_threshold: float = 0.5,
    class_aware: bool = True,
    alpha_class_aware: bool = False,
) -> ThresholdBaselines:
    """F1@IoU, mean IoU and Krippendorff's alpha over threshold matching, for a corpus.

    For every sample and every pair of raters both assigned to it: the
    threshold matching (module docstring), its F1 and mean IoU
    (``class_aware`` matching, default: a true positive needs equal labels),
    and the alpha units (``alpha_class_aware`` matching, default
    class-agnostic) coded with class labels and ``no_object``.

    Args:
        data: a :class:`agreement.data.MultiRaterAnnotations`.
        iou_threshold: ``t`` in ``(0, 1]`` (default 0.5).
        class_aware: F1 / mean IoU matching requires equal labels.
        alpha_class_aware: the alpha matching requires equal labels.

    Returns:
        :class:`ThresholdBaselines`.

    References: Everingham et al., IJCV 2010; Krippendorff 2011; Prokhorov &
    Kalinin (the OT paper's baselines).
    """
    t = _check_threshold(iou_threshold)
    boxes = _boxes(data.boxes, "boxes")
    codes, cats = encode_values(data.labels, missing=())
    no_obj = len(cats)
    S, R = data.num_samples, data.num_raters
    s_f1 = np.full(S, np.nan)
    s_iou = np.full(S, np.nan)
    s_reason: list[str] = []
    P = {k: [] for k in ("s", "a", "b", "f1", "iou", "tp", "n", "m")}
    unit_pair, unit_a, unit_b = [], [], []
    iou_all: list[np.ndarray] = []
    tp_tot = nm_tot = 0
    pidx = 0
    for s in range(S):
        assigned = np.flatnonzero(data.assigned[s])
        if len(assigned) < 2:
            s_reason.append("fewer than two raters assigned: no pair to compare")
            continue
        lo_s, hi_s = data.offsets[s * R], data.offsets[(s + 1) * R]
        iou_s = pairwise_iou(boxes[lo_s:hi_s], boxes[lo_s:hi_s])
        code_s = codes[lo_s:hi_s]
        same_s = code_s[:, None] == code_s[None, :]
        f1s, ious = [], []
        for x, a in enumerate(assigned):
            ra = data.rows(s, int(a))
            for b in assigned[x + 1:]:
                rb = data.rows(s, int(b))
                blk = (slice(ra.start - lo_s, ra.stop - lo_s), slice(rb.start - lo_s, rb.stop - lo_s))
                iou = iou_s[blk]
                geo = iou >= t
                rows, cols = _match_iou(iou, geo & same_s[blk] if class_aware else geo)
                n, m = iou.shape
                tp = len(rows)
                pb = _pair_baseline(tp, n, m, float(iou[rows, cols].sum()))
                iou_all.append(iou[rows, cols])
                tp_tot += tp
                nm_tot += n + m
                for k, v in zip(("s", "a", "b", "f1", "iou", "tp", "n", "m"),
                                (s, a, b, pb.f1, pb.mean_iou, tp, n, m)):
                    P[k].append(v)
                if not np.isnan(pb.f1):
                    f1s.append(pb.f1)
                if not np.isnan(pb.mean_iou):
                    ious.append(pb.mean_iou)
                # Alpha units.
                if alpha_class_aware != class_aware:
                    rows, cols = _match_iou(iou, geo & same_s[blk] if alpha_class_aware else geo)
                ca = code_s[ra.start - lo_s:ra.stop - lo_s]
                cb = code_s[rb.start - lo_s:rb.stop - lo_s]
                un_a = np.setdiff1d(np.arange(n), rows)
                un_b = np.setdiff1d(np.arange(m), cols)
                k_units = len(rows) + len(un_a) + len(un_b)
                unit_pair.append(np.full(k_units, pidx, np.intp))
                unit_a.append(np.concatenate([ca[rows], ca[un_a], np.full(len(un_b), no_obj)]))
                unit_b.append(np.concatenate([cb[cols], np.full(len(un_a), no_obj), cb[un_b]]))
                pidx += 1
        s_f1[s] = np.mean(f1s) if f1s else np.nan
        s_iou[s] = np.mean(ious) if ious else np.nan
        s_reason.append("" if f1s else "every rater pair has two empty sets: F1 undefined")

    cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
    u_pair = cat(unit_pair, np.intp)
    u_vals = np.vstack([cat(unit_a, np.int64), cat(unit_b, np.int64)])
    p_a = np.asarray(P["a"], np.intp)
    p_b = np.asarray(P["b"], np.intp)
    pair_f1 = np.asarray(P["f1"], np.float64)
    alpha = nominal_alpha(u_vals)
    per_pair = []
    names = list(data.raters)
    for x in sorted(range(R), key=names.__getitem__):
        for y in sorted(range(R), key=names.__getitem__):
            if names[y] <= names[x]:
                continue
            lo_r, hi_r = min(x, y), max(x, y)
            sel = (p_a[u_pair] == lo_r) & (p_b[u_pair] == hi_r) if u_pair.size else np.zeros(0, bool)
            if not np.any((p_a == lo_r) & (p_b == hi_r)):
                res = AlphaResult(np.nan, np.nan, np.nan, 0.0, 0, "the two raters share no sample")
            else:
                res = nominal_alpha(u_vals[:, sel])
            per_pair.append(RaterPairAlpha(names[x], names[y], res))
    ious_flat = cat(iou_all, np.float64)
    defined_f1 = pair_f1[~np.isnan(pair_f1)]
    return ThresholdBaselines(
        sample_f1=s_f1, sample_mean_iou=s_iou, sample_reasons=tuple(s_reason),
        pair_sample=np.asarray(P["s"], np.intp), pair_rater_a=p_a, pair_rater_b=p_b,
        pair_f1=pair_f1, pair_mean_iou=np.asarray(P["iou"], np.float64),
        pair_n_matched=np.asarray(P["tp"], np.intp), pair_n_a=np.asarray(P["n"], np.intp),
        pair_n_b=np.asarray(P["m"], np.intp),
        f1_micro=2.0 * tp_tot / nm_tot if nm_tot else float("nan"),
        f1_macro=float(defined_f1.mean()) if defined_f1.size else float("nan"),
        mean_iou=float(ious_flat.mean()) if ious_flat.size else float("nan"),
        alpha=alpha, alpha_per_pair=tuple(per_pair), unit_pair=u_pair, unit_values=u_vals,
        categories=tuple(cats) + (NO_OBJECT,), iou_threshold=t, class_aware=class_aware,
        alpha_class_aware=alpha_class_aware,
    )
