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
  per rater pair uses that pair's units only, for the rater pairs that share
  a sample (a sparse table: a pair that never met is absent, not 0 or NaN). A sample where both sets are
  empty contributes no unit (there is no object to agree on), so it neither
  raises nor lowers alpha.

References: Prokhorov & Kalinin (baselines of the OT paper); Everingham et al.,
"The PASCAL VOC Challenge", IJCV 2010 (IoU >= 0.5 matching); K. Krippendorff,
"Computing Krippendorff's Alpha-Reliability", 2011.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.core.arrays import mean_of_defined
from agreement.core.data import MultiRaterAnnotations, class_codes
from agreement.core.krippendorff import AlphaResult, alpha_from_coincidence
from agreement.core.rater_pairs import RaterPairTable
from agreement.geometry.boxes import pairwise_iou
from agreement.methods.ot import (
    BoxPairBlock,
    OTSampleScores,
    assigned_pair_cells,
    max_weight_matchings,
    pair_set_rows,
    sample_ot_scores,
)
from agreement.methods.ot.pair_costs import PairCosts, chunks_of, set_pair_entries

__all__ = ["NO_OBJECT", "ThresholdMatching", "PairBaseline", "ThresholdBaselines", "threshold_match", "f1_at_iou",
           "threshold_baselines", "ot_scores_and_threshold_baselines"]

NO_OBJECT = "no_object"


def _check_threshold(t: float) -> float:
    t = float(t)
    if not (np.isfinite(t) and 0.0 < t <= 1.0):
        raise ValueError(f"iou_threshold must be in (0, 1], got {t!r}")
    return t


def _boxes(boxes: Any, name: str) -> np.ndarray:
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
        """Number of matched pairs, ``TP``."""
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


def _eligible(iou: np.ndarray, t: float, la: list[Any] | None, lb: list[Any] | None) -> np.ndarray:
    el: np.ndarray = iou >= t
    if la is not None and lb is not None:
        index: dict[Any, int] = {}
        ca = np.fromiter((index.setdefault(v, len(index)) for v in la), np.int64, len(la))
        cb = np.fromiter((index.setdefault(v, len(index)) for v in lb), np.int64, len(lb))
        el &= ca[:, None] == cb[None, :]
    return el


def threshold_match(
    boxes_a: np.ndarray,
    boxes_b: np.ndarray,
    *,
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
        boxes_a: ``(n, 4)`` relative ``[x, y, w, h]`` boxes of rater A.
        boxes_b: ``(m, 4)`` relative ``[x, y, w, h]`` boxes of rater B.
        iou_threshold: ``t`` in ``(0, 1]`` (default 0.5, PASCAL VOC).
        labels_a: optional class labels of ``boxes_a`` (given both label lists, matching is class-aware).
        labels_b: optional class labels of ``boxes_b``.

    Returns:
        :class:`ThresholdMatching`.
    """
    t = _check_threshold(iou_threshold)
    a = _boxes(boxes_a, "boxes_a")
    b = _boxes(boxes_b, "boxes_b")
    aware = labels_a is not None and labels_b is not None
    la = list(labels_a) if labels_a is not None and labels_b is not None else None
    lb = list(labels_b) if labels_a is not None and labels_b is not None else None
    if la is not None and lb is not None and (len(la) != len(a) or len(lb) != len(b)):
        raise ValueError("labels must have one entry per box")
    iou = pairwise_iou(a, b)
    rows, cols = _match_iou(iou, _eligible(iou, t, la, lb))
    return ThresholdMatching(rows=rows, cols=cols, iou=iou[rows, cols], n_a=len(a), n_b=len(b), iou_threshold=t,
                             class_aware=aware)


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
    return PairBaseline(f1=f1, precision=prec, recall=rec, mean_iou=mean_iou, n_matched=int(tp), n_a=int(n), n_b=int(m),
                        reason="; ".join(reasons))


def f1_at_iou(
    boxes_a: np.ndarray,
    labels_a: Sequence | None,
    boxes_b: np.ndarray,
    labels_b: Sequence | None,
    *,
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
        m = threshold_match(boxes_a, boxes_b, iou_threshold=iou_threshold, labels_a=labels_a, labels_b=labels_b)
    else:
        m = threshold_match(boxes_a, boxes_b, iou_threshold=iou_threshold)
    return _pair_baseline(m.n_matched, m.n_a, m.n_b, float(m.iou.sum()))


@dataclass(frozen=True, eq=False)
class ThresholdBaselines:
    """Threshold baselines of a corpus.

    Per sample (``S``): ``sample_f1`` and ``sample_mean_iou`` (means over the
    sample's rater pairs of the defined values), ``sample_reasons``.

    Per rater pair on a sample (``P``, sorted by sample, then ``(a, b)``):
    ``pair_sample``, ``pair_rater_a``, ``pair_rater_b``, ``pair_f1``,
    ``pair_mean_iou``, ``pair_n_matched``, ``pair_n_a``, ``pair_n_b``,
    ``pair_table_row`` (the row of ``(a, b)`` in ``pairs``).

    Corpus:

    Attributes:
        f1_micro: ``2 sum TP / sum (n + m)`` over every rater pair on every
            sample (NaN if there are no boxes).
        f1_macro: mean of the defined per-pair F1.
        mean_iou: mean IoU over every matched pair of the corpus.
        alpha: pooled nominal alpha over threshold-matching units.
        pairs: :class:`agreement.core.rater_pairs.RaterPairTable` of the rater pairs
            that share at least one sample (absent pair: no data) with value
            ``threshold_alpha`` (alpha over that pair's units) and
            ``reasons["threshold_alpha"]`` where it is NaN.
        unit_pair: ``(U,)`` index into the pair arrays of each alpha unit
            (matched pairs first, then unmatched boxes; not sorted by pair).
        unit_values: ``(2, U)`` codes of each unit (rater a, rater b), indices
            into ``categories``.
        categories: the coding: class labels, then ``"no_object"`` last.
        iou_threshold, class_aware, alpha_class_aware: the parameters.
        matched_iou: IoU of every matched pair of the F1 matching (behind ``mean_iou``).
        units: the :class:`UnitCounts` of the alpha units (mergeable across shards).
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
    pair_table_row: np.ndarray
    f1_micro: float
    f1_macro: float
    mean_iou: float
    alpha: AlphaResult
    pairs: RaterPairTable
    unit_pair: np.ndarray = field(repr=False)
    unit_values: np.ndarray = field(repr=False)
    matched_iou: np.ndarray = field(repr=False)
    units: UnitCounts = field(repr=False)
    categories: tuple = ()
    iou_threshold: float = 0.5
    class_aware: bool = True
    alpha_class_aware: bool = False


def threshold_baselines(data: MultiRaterAnnotations, *, iou_threshold: float = 0.5, class_aware: bool = True,
                        alpha_class_aware: bool = False, max_block: int = 1 << 17) -> ThresholdBaselines:
    """F1@IoU, mean IoU and Krippendorff's alpha over threshold matching, for a corpus.

    For every sample and every pair of raters both assigned to it: the
    threshold matching (module docstring), its F1 and mean IoU
    (``class_aware`` matching, default: a true positive needs equal labels),
    and the alpha units (``alpha_class_aware`` matching, default
    class-agnostic) coded with class labels and ``no_object``. All set pairs
    are matched together in vectorised blocks
    (:func:`agreement.methods.ot.max_weight_matchings`, cardinality first); work is
    proportional to the box pairs of the (sample, assigned rater pair)
    triples, never to the square of the number of raters.

    Args:
        data: a :class:`agreement.core.data.MultiRaterAnnotations`.
        iou_threshold: ``t`` in ``(0, 1]`` (default 0.5).
        class_aware: F1 / mean IoU matching requires equal labels.
        alpha_class_aware: the alpha matching requires equal labels.
        max_block: box pairs per vectorised block.

    Returns:
        :class:`ThresholdBaselines`.

    References: Everingham et al., IJCV 2010; Krippendorff 2011; Prokhorov &
    Kalinin (the OT paper's baselines).
    """
    t = _check_threshold(iou_threshold)
    _boxes(data.boxes, "boxes")
    codes, cats = class_codes(data)
    pc = PairCosts(data.boxes, data.labels, 1.0)
    cells = assigned_pair_cells(data)
    _, _, _, _, a0, na, b0, nb = cells
    matcher = _ThresholdMatcher(codes, t, class_aware, alpha_class_aware)
    for problems in chunks_of(na * nb, max_block):
        ta, ia, jb, an, bn = set_pair_entries(a0, na, b0, nb, problems)
        if len(ia):
            matcher.add(BoxPairBlock(ta=ta, ia=ia, jb=jb, an=an, bn=bn, n_b=int(nb[problems].sum()),
                                     iou=pc.iou(ia, jb)))
    return _baselines_of(data, codes, cats, cells, matcher)


def ot_scores_and_threshold_baselines(
    data: MultiRaterAnnotations,
    *,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
    iou_threshold: float = 0.5,
    class_aware: bool = True,
    alpha_class_aware: bool = False,
    max_block: int = 1 << 17,
) -> tuple[OTSampleScores, ThresholdBaselines]:
    """:func:`agreement.methods.ot.sample_ot_scores` and :func:`threshold_baselines` of ``data`` in one pass.

    Both measures look at the same box pairs: those of every (sample,
    assigned rater pair) triple. Here they are enumerated once, and the IoU
    of each pair comes out of the GIoU computation of the OT cost (the same
    operations as :meth:`agreement.methods.ot.PairCosts.iou`), so the two results are
    exactly those of the two functions called apart, for about a third less
    work than the two passes (the OT agreement run computes both).

    Args and ranges: as the two functions.

    Returns:
        ``(OTSampleScores, ThresholdBaselines)``.
    """
    t = _check_threshold(iou_threshold)
    _boxes(data.boxes, "boxes")
    codes, cats = class_codes(data)
    matcher = _ThresholdMatcher(codes, t, class_aware, alpha_class_aware)
    scores = sample_ot_scores(data, lam=lam, beta=beta, normalization=normalization, max_block=max_block,
                              on_block=matcher.add)
    s, a, b = scores.pair_sample, scores.pair_rater_a, scores.pair_rater_b
    cells = (s, a, b, scores.pair_table_row, *pair_set_rows(data, s, a, b))
    return scores, _baselines_of(data, codes, cats, cells, matcher)


def _baselines_of(data: MultiRaterAnnotations, codes: np.ndarray, cats: Sequence[Any], cells: tuple[np.ndarray, ...],
                  matcher: _ThresholdMatcher) -> ThresholdBaselines:
    """The baselines from the matchings of every (sample, rater pair) triple ``cells``
    (:func:`agreement.methods.ot.assigned_pair_cells`)."""
    s, a, b, pid, a0, na, b0, nb = cells
    no_obj = len(cats)
    f1_hits, alpha_hits = matcher.hits()
    P = len(s)
    tp = np.bincount(f1_hits[0], minlength=P).astype(np.intp)
    iou_sum = np.bincount(f1_hits[0], f1_hits[3], minlength=P)
    nm = (na + nb).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_f1 = np.where(nm > 0, 2.0 * tp / nm, np.nan)
        pair_iou = np.where(tp > 0, iou_sum / np.maximum(tp, 1), np.nan)
    s_f1, s_iou, s_reason = _sample_means(data, s, pair_f1, pair_iou)
    u_pair, u_vals = _alpha_units(codes, no_obj, hits=alpha_hits, a0=a0, na=na, b0=b0, nb=nb)
    table = RaterPairTable.from_shared_pairs(data.raters, a, b, pid)
    units = UnitCounts.of(pid[u_pair], u_vals, table.a.astype(np.int64) * data.num_raters + table.b, no_obj + 1)
    alpha_p, reason_p = units.pair_alpha()
    table.values["threshold_alpha"] = alpha_p
    table.reasons["threshold_alpha"] = reason_p
    f1_micro, f1_macro, mean_iou = pooled_scores(pair_f1, f1_hits[3], int(tp.sum()), float(nm.sum()))
    return ThresholdBaselines(
        sample_f1=s_f1, sample_mean_iou=s_iou, sample_reasons=tuple(s_reason),
        pair_sample=s, pair_rater_a=a, pair_rater_b=b, pair_f1=pair_f1, pair_mean_iou=pair_iou,
        pair_n_matched=tp, pair_n_a=na, pair_n_b=nb, pair_table_row=pid,
        f1_micro=f1_micro, f1_macro=f1_macro, mean_iou=mean_iou,
        alpha=units.alpha(), pairs=table, unit_pair=u_pair, unit_values=u_vals,
        categories=tuple(cats) + (NO_OBJECT,), iou_threshold=matcher.t, class_aware=matcher.class_aware,
        alpha_class_aware=matcher.alpha_class_aware, matched_iou=f1_hits[3], units=units,
    )


def pooled_scores(pair_f1: np.ndarray, matched_iou: np.ndarray, n_matched: int,
                  n_boxes: float) -> tuple[float, float, float]:
    """The corpus F1 and mean IoU of threshold matching, from its (sample, rater pair) values.

    ``f1_micro = 2 sum TP / sum (n + m)`` (NaN without boxes), ``f1_macro`` the
    mean of the defined per-pair F1, ``mean_iou`` the mean IoU over every
    matched pair (NaN without one); each in ``[0, 1]``. The inputs of several
    shards concatenated in corpus order give the corpus numbers.
    """
    return (2.0 * n_matched / n_boxes if n_boxes else float("nan"), mean_of_defined(pair_f1),
            float(np.mean(matched_iou)) if n_matched else float("nan"))


@dataclass(frozen=True, eq=False)
class UnitCounts:
    """The exact, mergeable counts behind the threshold α: units of two values, per rater pair and pooled.

    Attributes:
        pair_code: ``(P,)`` rater pair of each group, ``a * R + b``, sorted.
        units, same: ``(P,)`` units of the pair and those whose two values agree.
        cell_pair, cell_code, cell_count: the (pair, category) value counts, sparse.
        pooled: ``(C, C)`` int matrix: ``pooled[x, y]`` units with values ``(x, y)``; the pooled
            coincidence matrix is ``pooled + pooled.T``.
        n_categories: ``C``.
    """

    pair_code: np.ndarray
    units: np.ndarray
    same: np.ndarray
    cell_pair: np.ndarray
    cell_code: np.ndarray
    cell_count: np.ndarray
    pooled: np.ndarray
    n_categories: int

    @classmethod
    def of(cls, group: np.ndarray, values: np.ndarray, pair_code: np.ndarray, n_categories: int) -> "UnitCounts":
        """Counts of the units ``values[:, u]`` of group ``group[u]`` (an index into ``pair_code``)."""
        P, C = len(pair_code), int(n_categories)
        group = np.asarray(group, dtype=np.int64)
        units = np.bincount(group, minlength=P).astype(np.int64)
        same = np.bincount(group[values[0] == values[1]], minlength=P).astype(np.int64)
        key, cnt = np.unique(np.concatenate([group, group]) * C + values.reshape(-1), return_counts=True)
        pooled = np.bincount(values[0] * C + values[1], minlength=C * C).reshape(C, C).astype(np.int64)
        return cls(pair_code=np.asarray(pair_code, dtype=np.int64), units=units, same=same,
                   cell_pair=(key // C).astype(np.int64), cell_code=(key % C).astype(np.int64),
                   cell_count=cnt.astype(np.int64), pooled=pooled, n_categories=C)

    @classmethod
    def merge(cls, parts: Sequence[UnitCounts], pair_code: np.ndarray) -> "UnitCounts":
        """The counts of several disjoint sets of units, on the rater pairs ``pair_code`` (sorted, a superset)."""
        pair_code = np.asarray(pair_code, dtype=np.int64)
        P, C = len(pair_code), parts[0].n_categories
        units, same = np.zeros(P, np.int64), np.zeros(P, np.int64)
        keys, counts = [], []
        pooled = np.zeros((C, C), np.int64)
        for part in parts:
            pos = np.searchsorted(pair_code, part.pair_code)
            np.add.at(units, pos, part.units)
            np.add.at(same, pos, part.same)
            keys.append(pos[part.cell_pair] * C + part.cell_code)
            counts.append(part.cell_count)
            pooled += part.pooled
        key, inv = np.unique(np.concatenate(keys), return_inverse=True)
        cnt = np.bincount(inv.reshape(-1), np.concatenate(counts).astype(np.float64)).astype(np.int64)
        return cls(pair_code=pair_code, units=units, same=same, cell_pair=key // C, cell_code=key % C, cell_count=cnt,
                   pooled=pooled, n_categories=C)

    def pair_alpha(self) -> tuple[np.ndarray, np.ndarray]:
        """Nominal α of each pair's units (:func:`_alpha_of_unit_counts`), in ``pair_code`` order."""
        sq = np.bincount(self.cell_pair, self.cell_count.astype(np.float64) ** 2, minlength=len(self.pair_code))
        return _alpha_of_unit_counts(self.units.astype(np.float64), self.same.astype(np.float64), sq)

    def alpha(self) -> AlphaResult:
        """Nominal α of all units pooled (:func:`agreement.core.krippendorff.alpha_from_coincidence`)."""
        return alpha_from_coincidence((self.pooled + self.pooled.T).astype(np.float64), n_units=int(self.units.sum()))


class _ThresholdMatcher:
    """The threshold matchings of set pairs, block by block of their box pairs (:meth:`add`): for
    the F1 matching (``class_aware``) and the alpha matching (``alpha_class_aware``), the matched pairs
    ``(set pair, A row, B row, IoU)`` (:meth:`hits`). Pairs need ``IoU >= t``; each set pair is matched
    for the most pairs, then the highest total IoU (:func:`agreement.methods.ot.max_weight_matchings`)."""

    def __init__(self, codes: np.ndarray, t: float, class_aware: bool, alpha_class_aware: bool):
        self.codes, self.t = codes, t
        self.class_aware, self.alpha_class_aware = class_aware, alpha_class_aware
        self._out: dict[bool, list] = {class_aware: [], alpha_class_aware: []}

    def add(self, block: BoxPairBlock) -> None:
        """A block of box pairs (:class:`agreement.methods.ot.BoxPairBlock`) and their IoU."""
        ta, ia, jb, an, bn, iou = block.ta, block.ia, block.jb, block.an, block.bn, block.iou
        geo = iou >= self.t
        for aware, parts in self._out.items():
            el = np.flatnonzero(geo & (self.codes[ia] == self.codes[jb]) if aware else geo)
            hit = el[max_weight_matchings(an[el], bn[el], iou[el], len(ta), block.n_b, cardinality_first=True)]
            parts.append((ta[an[hit]], ia[hit], jb[hit], iou[hit]))

    def hits(self) -> tuple[tuple, tuple]:
        """The matched pairs of the F1 matching and of the alpha matching, in block order."""
        def cat(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
            if not parts:
                return np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0)
            return tuple(np.concatenate([p[q] for p in parts]) for q in range(4))

        return cat(self._out[self.class_aware]), cat(self._out[self.alpha_class_aware])


def _sample_means(data: MultiRaterAnnotations, s: np.ndarray, pair_f1: np.ndarray,
                  pair_iou: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per sample: means of the defined per-pair F1 and mean IoU, and the reasons."""
    S = data.num_samples
    out = []
    for v in (pair_f1, pair_iou):
        ok = ~np.isnan(v)
        cnt = np.bincount(s[ok], minlength=S)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(cnt > 0, np.bincount(s[ok], v[ok], S) / np.maximum(cnt, 1), np.nan))
    k = data.assigned.sum(axis=1)
    reasons = np.where(k < 2, "fewer than two raters assigned: no pair to compare",
                       np.where(np.isnan(out[0]), "every rater pair has two empty sets: F1 undefined", ""))
    return out[0], out[1], [str(r) for r in reasons]


def _alpha_units(codes: np.ndarray, no_obj: int, hits: tuple[np.ndarray, ...], a0: np.ndarray, na: np.ndarray,
                 b0: np.ndarray, nb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Units of the alpha matching: matched pairs ``(label_a, label_b)``, unmatched boxes
    ``(label, no_object)`` / ``(no_object, label)``; with the set pair of each unit."""
    t, ia, jb, _ = hits
    P = len(a0)
    parts_p, parts_a, parts_b = [t], [codes[ia]], [codes[jb]]
    for side, (start, size, rows) in enumerate(((a0, na, ia), (b0, nb, jb))):
        tb = np.repeat(np.arange(P), size)
        box = start[tb] + (np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size))
        off = np.cumsum(size) - size
        taken = np.zeros(len(box), dtype=bool)
        taken[off[t] + (rows - start[t])] = True
        free = np.flatnonzero(~taken)
        parts_p.append(tb[free])
        lab = codes[box[free]]
        none = np.full(len(free), no_obj, dtype=np.int64)
        parts_a.append(lab if side == 0 else none)
        parts_b.append(none if side == 0 else lab)
    u_pair = np.concatenate(parts_p).astype(np.intp)
    u_vals = np.vstack([np.concatenate(parts_a), np.concatenate(parts_b)]).astype(np.int64)
    return u_pair, u_vals


def _alpha_of_unit_counts(U: np.ndarray, same: np.ndarray, sq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nominal Krippendorff's alpha of the two-value units of each group, from their counts.

    With every unit holding two values, the coincidence matrix of a group has
    ``n = 2 U`` pairable values, ``sum_c o_cc = 2 #{units with equal values}``
    (``same``) and ``n_c`` the count of category ``c`` (``sq = sum_c n_c^2``);
    then ``D_o = (n - sum_c o_cc) / n``, ``D_e = (n^2 - sum_c n_c^2) / (n (n - 1))``
    and ``alpha = 1 - D_o / D_e`` (:func:`agreement.core.krippendorff.alpha_from_coincidence`,
    with the same reasons where undefined). Range: at most 1.
    """
    n_groups = len(U)
    n = 2.0 * U
    alpha = np.full(n_groups, np.nan)
    reason = np.full(n_groups, "", dtype=object)
    with np.errstate(invalid="ignore", divide="ignore"):
        d_o = np.maximum((n - 2.0 * same) / n, 0.0)
        d_e = (n * n - sq) / (n * (n - 1.0))
    few = n < 2
    flat = ~few & ~(d_e > 1e-15)
    ok = ~few & ~flat
    alpha[ok] = 1.0 - d_o[ok] / d_e[ok]
    for g in np.flatnonzero(few).tolist():
        reason[g] = f"fewer than 2 pairable values (n = {n[g]:g}): no unit has two or more values"
    reason[flat] = "no variation: every pairable value is the same category (D_e = 0)"
    return alpha, reason
