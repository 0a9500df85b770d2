"""Fitting a KαLOS noise profile from real pairs of raters.

For every sample and every ordered pair of raters ``(A, B)`` both assigned to
it (``A`` playing the reference; both orders when no reference rater is
named), the boxes are compared as follows.

1. **Matching.** One-to-one threshold matching at IoU ``t`` (default 0.5;
   :func:`agreement.methods.ot.baselines.threshold_match`: maximum cardinality, then
   maximum total IoU), first among same-class pairs, then class-agnostic
   among the boxes left, so that a box counts as misclassified only when no
   same-class counterpart is left for it.
2. **Fragmentation** (one-to-many), for each box ``a`` of ``A`` (largest
   first): the boxes ``b`` of ``B`` of the same class lying mostly inside it
   (``|a ∩ b| >= c · |b|``, coverage ``c = 0.7``), not matched to another box
   of ``A`` and not used yet, kept greedily (largest first) when they overlap
   the ones already kept by less than half their area (so that a copy of
   ``a`` plus a small box inside it is not a split). ``a`` is *fragmented*
   when at least two pieces remain, their enclosing box has IoU ``>= t`` with
   ``a``, and ``a``'s own match (if any) is one of the pieces.
   **Combination** (many-to-one) is the mirror image: a box of ``B`` enclosing
   at least two same-class boxes of ``A``.
3. What remains: an unmatched box of ``A`` is a **false negative**, an
   unmatched box of ``B`` a **false positive**; a matched pair with equal
   labels gives **localisation** residuals, one with different labels a
   **category mistake** (a confusion count ``C[label_A][label_B]``) and
   *misclassified* localisation residuals.

Rates are per box of ``A``: ``p_FN = FN / N_A``, ``p_FP = FP / N_A``,
``p_frag = fragmented / N_A``, ``p_comb = combined groups / N_A``,
``p_cat = misclassified / N_A``; ``μ_frag`` and ``μ_comb`` are the mean
pieces / members minus 2. Residuals, relative to the size of ``a = (cx, cy,
w, h)``: ``dx = (cx_b - cx) / w``, ``dy = (cy_b - cy) / h``, ``dw = log(w_b /
w)``, ``dh = log(h_b / h)``, each fitted by maximum likelihood with a
location-scale Student's t (:func:`scipy.stats.t.fit`), separately for
correctly and mis-classified matches (the latter falls back to the former
when it has fewer than ``min_pairs`` pairs, and the profile's metadata says
so). False positives give the log-normal size (``sqrt(w h)``) and aspect
(``w / h``) of injected boxes.

Command line::

    python -m agreement.simulate.noise.fit multi_rater_coco.json -o profile.json [--reference r1]

References: Tschirschwitz & Rodehorst, KαLOS (empirical noise profiles fitted
from pairs of real raters); Everingham et al., IJCV 2010 (IoU >= 0.5
matching).

This module does not import FiftyOne.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy import stats

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.boxes import pairwise_iou
from agreement.methods.ot.baselines import threshold_match
from agreement.simulate.noise.empirical import (
    FalsePositiveShape,
    LocalisationProfile,
    NoiseProfile,
    StudentT,
)

__all__ = ["PairStatistics", "pair_statistics", "fit_student_t", "fit_profile", "main"]

_DF_MAX = 1000.0
_SCALE_MIN = 1e-6


class PairStatistics:
    """Counts and residuals collected over ordered rater pairs (see the module docstring).

    Attributes:
        n_reference: ``N_A``, boxes of the reference side.
        n_pairs: number of (sample, ordered rater pair) comparisons.
        false_negatives, false_positives, fragmented, fragment_pieces,
        combined, combination_members, misclassified, matched: counts
        (``fragment_pieces`` / ``combination_members`` list the group sizes).
        residuals, mis_residuals: ``(k, 4)`` ``(dx, dy, dw, dh)`` of correct /
        misclassified matches.
        confusion: ``{label_A: {label_B: count}}``.
        fp_boxes: ``(f, 4)`` the false positives' boxes.
    """

    def __init__(self) -> None:
        self.n_reference = 0
        self.n_pairs = 0
        self.false_negatives = 0
        self.false_positives = 0
        self.fragment_pieces: list[int] = []
        self.combination_members: list[int] = []
        self.matched = 0
        self._res: list[np.ndarray] = []
        self._mis: list[np.ndarray] = []
        self._fp: list[np.ndarray] = []
        self.confusion: dict = defaultdict(lambda: defaultdict(int))

    @property
    def fragmented(self) -> int:
        """The number of fragmentations (one reference box matched by several boxes)."""
        return len(self.fragment_pieces)

    @property
    def combined(self) -> int:
        """The number of combinations (several reference boxes matched by one box)."""
        return len(self.combination_members)

    @property
    def misclassified(self) -> int:
        """The number of matches with a different class."""
        return sum(sum(r.values()) for r in self.confusion.values())

    @property
    def residuals(self) -> np.ndarray:
        """``(k, 4)`` ``(dx, dy, dw, dh)`` of the correct matches."""
        return np.concatenate(self._res) if self._res else np.zeros((0, 4))

    @property
    def mis_residuals(self) -> np.ndarray:
        """``(k, 4)`` ``(dx, dy, dw, dh)`` of the misclassified matches."""
        return np.concatenate(self._mis) if self._mis else np.zeros((0, 4))

    @property
    def fp_boxes(self) -> np.ndarray:
        """``(f, 4)`` the false positives' boxes."""
        return np.concatenate(self._fp) if self._fp else np.zeros((0, 4))

    def counts(self) -> dict:
        """The counts as a plain dict (JSON-ready)."""
        return {
            "comparisons": self.n_pairs, "reference_boxes": self.n_reference,
            "false_negatives": self.false_negatives, "false_positives": self.false_positives,
            "fragmented": self.fragmented, "fragment_pieces": int(sum(self.fragment_pieces)),
            "combinations": self.combined, "combined_boxes": int(sum(self.combination_members)),
            "matched": self.matched, "misclassified": self.misclassified,
        }


def _residuals(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(dx, dy, dw, dh)`` of ``b`` against ``a``; rows with a zero-size ``a`` or ``b`` dropped."""
    ok = (a[:, 2] > 0) & (a[:, 3] > 0) & (b[:, 2] > 0) & (b[:, 3] > 0)
    a, b = a[ok], b[ok]
    ca, cb = a[:, :2] + a[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2
    return np.stack([
        (cb[:, 0] - ca[:, 0]) / a[:, 2], (cb[:, 1] - ca[:, 1]) / a[:, 3],
        np.log(b[:, 2] / a[:, 2]), np.log(b[:, 3] / a[:, 3]),
    ], axis=1)


def _intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    iw = np.minimum(a[:, None, 0] + a[:, None, 2], b[None, :, 0] + b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    ih = np.minimum(a[:, None, 1] + a[:, None, 3], b[None, :, 1] + b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return np.clip(iw, 0, None) * np.clip(ih, 0, None)


def _hull(boxes: np.ndarray) -> np.ndarray:
    x0, y0 = boxes[:, 0].min(), boxes[:, 1].min()
    x1, y1 = (boxes[:, 0] + boxes[:, 2]).max(), (boxes[:, 1] + boxes[:, 3]).max()
    return np.array([[x0, y0, x1 - x0, y1 - y0]])


@dataclass(frozen=True)
class _Side:
    """One rater's boxes in a comparison: the boxes, the box of the other side each is matched to (-1:
    none) and which are used by a one-to-many group already (marked in place)."""

    boxes: np.ndarray
    match: np.ndarray
    used: np.ndarray


def _groups(big_side: _Side, small_side: _Side, inter: np.ndarray, same: np.ndarray, *, t: float,
            coverage: float) -> list[tuple[int, np.ndarray]]:
    """One-to-many groups: a box of ``big`` split into >= 2 boxes of ``small``.

    ``inter`` is ``(len(big), len(small))``; marks ``used`` of both sides in place.
    """
    big, match_big, used_big = big_side.boxes, big_side.match, big_side.used
    small, match_small, used_small = small_side.boxes, small_side.match, small_side.used
    out = []
    area_b = big[:, 2] * big[:, 3]
    area_s = small[:, 2] * small[:, 3]
    inside_s = inter >= coverage * area_s[None, :]
    for i in np.argsort(-area_b, kind="stable"):
        if used_big[i] or area_b[i] <= 0:
            continue
        cand = np.flatnonzero(
            ~used_small & inside_s[i] & same[i] & (area_s > 0) & ((match_small == -1) | (match_small == i))
        )
        if len(cand) < 2:
            continue
        cand = cand[np.argsort(-area_s[cand], kind="stable")]
        kept: list[int] = []
        for j in cand:
            if kept and (_intersection(small[[j]], small[kept])[0] >= 0.5 * area_s[j]).any():
                continue
            kept.append(int(j))
        if len(kept) < 2:
            continue
        kept_a = np.asarray(kept)
        if match_big[i] >= 0 and match_big[i] not in kept:
            continue
        if pairwise_iou(_hull(small[kept_a]), big[[i]])[0, 0] < t:
            continue
        used_big[i] = True
        used_small[kept_a] = True
        out.append((int(i), kept_a))
    return out


def _match(A, la, B, lb, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Same-class pairs first, then class-agnostic: ``(match_a, match_b)``, ``-1`` if unmatched.

    Step 1 is the class-aware threshold matching; step 2 the class-agnostic
    one among the boxes step 1 left. So a box counts as misclassified only
    when no same-class box of the other rater is left for it at IoU >= t
    (two overlapping reference boxes of different classes are not mistaken
    for a label swap).
    """
    n, m = len(A), len(B)
    match_a = np.full(n, -1, np.intp)
    match_b = np.full(m, -1, np.intp)
    first = threshold_match(A, B, iou_threshold=t, labels_a=list(la), labels_b=list(lb))
    match_a[first.rows] = first.cols
    match_b[first.cols] = first.rows
    ua, ub = np.flatnonzero(match_a < 0), np.flatnonzero(match_b < 0)
    if len(ua) and len(ub):
        second = threshold_match(A[ua], B[ub], iou_threshold=t)
        match_a[ua[second.rows]] = ub[second.cols]
        match_b[ub[second.cols]] = ua[second.rows]
    return match_a, match_b


def _compare(stats_: PairStatistics, ref: tuple, other: tuple, *, t: float, coverage: float) -> None:
    """Adds one ordered comparison to ``stats_``: ``ref`` ``(A, la)`` (boxes and labels) as the reference,
    ``other`` ``(B, lb)``."""
    (A, la), (B, lb) = ref, other
    n, m = len(A), len(B)
    stats_.n_pairs += 1
    stats_.n_reference += n
    match_a, match_b = _match(A, la, B, lb, t)
    used_a = np.zeros(n, bool)
    used_b = np.zeros(m, bool)
    if n and m:
        inter = _intersection(A, B)
        same = np.asarray(la, dtype=object)[:, None] == np.asarray(lb, dtype=object)[None, :]
        side_a, side_b = _Side(A, match_a, used_a), _Side(B, match_b, used_b)
        for _, pieces in _groups(side_a, side_b, inter, same, t=t, coverage=coverage):
            stats_.fragment_pieces.append(len(pieces))
        for _, members in _groups(side_b, side_a, inter.T, same.T, t=t, coverage=coverage):
            stats_.combination_members.append(len(members))
    stats_.false_negatives += int(np.sum(~used_a & (match_a < 0)))
    fp = ~used_b & (match_b < 0)
    stats_.false_positives += int(fp.sum())
    if fp.any():
        stats_._fp.append(B[fp])
    rows = np.flatnonzero(match_a >= 0)
    cols = match_a[rows]
    keep = ~used_a[rows] & ~used_b[cols]
    rows, cols = rows[keep], cols[keep]
    stats_.matched += len(rows)
    eq = np.array([la[i] == lb[j] for i, j in zip(rows, cols, strict=True)], dtype=bool)
    if eq.any():
        stats_._res.append(_residuals(A[rows[eq]], B[cols[eq]]))
    if (~eq).any():
        stats_._mis.append(_residuals(A[rows[~eq]], B[cols[~eq]]))
        for i, j in zip(rows[~eq], cols[~eq], strict=True):
            stats_.confusion[str(la[i])][str(lb[j])] += 1


def pair_statistics(
    data: MultiRaterAnnotations,
    *,
    iou_threshold: float = 0.5,
    reference: str | None = None,
    coverage: float = 0.7,
) -> PairStatistics:
    """Collects the counts and residuals of every ordered rater pair on every sample.

    Args:
        data: the multi-rater corpus.
        iou_threshold: matching threshold ``t`` in ``(0, 1]``.
        reference: compare only this rater (as ``A``) with every other one;
            default: every ordered pair, both directions.
        coverage: ``c`` in ``(0, 1]``, how much of a piece must lie inside
            the box it splits from (fragmentation / combination).

    Returns:
        :class:`PairStatistics` (module docstring for the definitions).
    """
    if not isinstance(data, MultiRaterAnnotations):
        raise TypeError(f"data must be a MultiRaterAnnotations, got {type(data).__name__}")
    t = float(iou_threshold)
    if not (math.isfinite(t) and 0.0 < t <= 1.0):
        raise ValueError(f"iou_threshold must be in (0, 1], got {iou_threshold!r}")
    if not (math.isfinite(float(coverage)) and 0.0 < coverage <= 1.0):
        raise ValueError(f"coverage must be in (0, 1], got {coverage!r}")
    if data.num_raters < 2:
        raise ValueError(f"fitting a noise profile needs at least two raters, got {list(data.raters)}")
    if reference is not None and reference not in data.raters:
        raise ValueError(f"reference rater {reference!r} not found; raters are {list(data.raters)}")
    ref = None if reference is None else data.raters.index(reference)
    bad = ~np.isfinite(data.boxes).all(axis=1) | (data.boxes[:, 2] < 0) | (data.boxes[:, 3] < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        names = data.sample_names
        assert names is not None  # filled by MultiRaterAnnotations.__post_init__
        raise ValueError(
            f"sample {names[data.sample_index[i]]!r}, rater {data.raters[data.rater_index[i]]!r}: "
            f"box {data.boxes[i].tolist()} has NaN/infinite coordinates or a negative size"
        )
    out = PairStatistics()
    for s in range(data.num_samples):
        assigned = [int(r) for r in np.flatnonzero(data.assigned[s])]
        for a in assigned:
            if ref is not None and a != ref:
                continue
            sa = data.rows(s, a)
            for b in assigned:
                if b == a:
                    continue
                sb = data.rows(s, b)
                _compare(out, (data.boxes[sa], data.labels[sa]), (data.boxes[sb], data.labels[sb]), t=t,
                         coverage=coverage)
    if out.n_pairs == 0:
        raise ValueError("no sample has two assigned raters (with the reference among them): nothing to fit")
    if out.n_reference == 0:
        raise ValueError("the reference side has no annotation on any compared sample: nothing to fit")
    return out


def fit_student_t(x: np.ndarray) -> StudentT:
    """Maximum-likelihood location-scale Student's t of a 1-D sample.

    ``x ≈ loc + scale · T_df`` fitted with :func:`scipy.stats.t.fit`; ``df``
    is capped at 1000 (indistinguishable from a Gaussian) and ``scale``
    floored at 1e-6 (a constant sample).
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    if len(x) < 2:
        raise ValueError(f"a Student's t fit needs at least 2 values, got {len(x)}")
    if np.ptp(x) == 0:
        return StudentT(df=_DF_MAX, loc=float(x[0]), scale=_SCALE_MIN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        df, loc, scale = stats.t.fit(x)
    return StudentT(df=float(min(max(df, 1e-3), _DF_MAX)), loc=float(loc), scale=float(max(scale, _SCALE_MIN)))


def _fit_localisation(res: np.ndarray) -> LocalisationProfile:
    dx, dy, dw, dh = (fit_student_t(res[:, k]) for k in range(4))
    return LocalisationProfile(dx, dy, dw, dh, n_pairs=len(res))


def fit_profile(
    data: MultiRaterAnnotations,
    *,
    iou_threshold: float = 0.5,
    reference: str | None = None,
    name: str = "",
    coverage: float = 0.7,
    min_pairs: int = 20,
    metadata: dict | None = None,
) -> NoiseProfile:
    """Fits a :class:`~agreement.simulate.noise.empirical.NoiseProfile` from real pairs of raters.

    Rates are errors per reference-side box (``p_FN = FN / N_A`` and so on),
    residuals are fitted by Student's t (module docstring). With ``reference``
    the profile describes the other raters against that rater (the round trip
    of :func:`~agreement.simulate.noise.empirical.simulate`); without it, every
    ordered pair counts, so the profile describes one rater against another.

    Args:
        data: the multi-rater corpus (at least two raters).
        iou_threshold: matching threshold ``t`` in ``(0, 1]`` (default 0.5).
        reference: the reference rater, or ``None`` for both directions.
        name: the profile's name.
        coverage: fragmentation / combination coverage ``c``.
        min_pairs: fewest matched pairs for a Student-t fit; misclassified
            matches below it reuse the correct-class fit.
        metadata: extra provenance to store in the profile.

    Returns:
        The fitted profile; ``metadata`` holds the counts and fitting notes.

    Raises:
        ValueError: fewer than two raters, no comparable pair, no reference
            box, or fewer than ``min_pairs`` correctly classified matches.

    Reference: Tschirschwitz & Rodehorst, KαLOS (noise profiles fitted from
    rater pairs matched at IoU 0.5).
    """
    st = pair_statistics(data, iou_threshold=iou_threshold, reference=reference, coverage=coverage)
    N = st.n_reference
    notes = []
    res = st.residuals
    if len(res) < max(2, min_pairs):
        raise ValueError(
            f"only {len(res)} correctly classified matched pairs at IoU >= {iou_threshold}: "
            f"need at least {max(2, min_pairs)} to fit the localisation residuals"
        )
    loc = _fit_localisation(res)
    mis = st.mis_residuals
    if len(mis) >= max(2, min_pairs):
        mis_loc = _fit_localisation(mis)
    else:
        mis_loc = LocalisationProfile(loc.dx, loc.dy, loc.dw, loc.dh, n_pairs=len(mis))
        notes.append(
            f"misclassified_localisation reuses the correct-class fit: only {len(mis)} misclassified matches"
        )
    fp = st.fp_boxes
    fp = fp[(fp[:, 2] > 0) & (fp[:, 3] > 0)]
    if len(fp) >= 2:
        ls = 0.5 * np.log(fp[:, 2] * fp[:, 3])
        la = np.log(fp[:, 2] / fp[:, 3])
        shape = FalsePositiveShape(float(min(ls.mean(), 0.0)), float(ls.std()), float(la.mean()), float(la.std()))
    else:
        shape = FalsePositiveShape()
        notes.append(f"false_positive_shape is the default: only {len(fp)} false positives")
    meta = {
        "fitted_with": "agreement.simulate.noise.fit",
        "iou_threshold": float(iou_threshold),
        "coverage": float(coverage),
        "directions": "reference to others" if reference else "every ordered rater pair",
        "reference": reference,
        "raters": list(data.raters),
        "samples": int(data.num_samples),
        "counts": st.counts(),
        "notes": notes,
    }
    meta.update(metadata or {})
    pieces, members = np.asarray(st.fragment_pieces), np.asarray(st.combination_members)
    return NoiseProfile(
        false_negative_rate=min(1.0, st.false_negatives / N),
        false_positive_rate=min(1.0, st.false_positives / N),
        fragmentation_rate=min(1.0, st.fragmented / N),
        fragment_extra_mean=float(pieces.mean() - 2) if len(pieces) else 0.0,
        combination_rate=min(1.0, st.combined / N),
        combination_extra_mean=float(members.mean() - 2) if len(members) else 0.0,
        category_rate=min(1.0, st.misclassified / N),
        confusion={c: {k: int(v) for k, v in row.items()} for c, row in st.confusion.items()},
        localisation=loc,
        misclassified_localisation=mis_loc,
        false_positive_shape=shape,
        iou_threshold=float(iou_threshold),
        name=name,
        metadata=meta,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: fit a profile from a multi-rater COCO file and write it as JSON."""
    from agreement.io.coco import read_multi_rater_coco

    p = argparse.ArgumentParser(
        prog="python -m agreement.simulate.noise.fit",
        description="Fit a KaLOS empirical noise profile from a multi-rater COCO file "
        "(images with rater_list, annotations with rater_id).",
    )
    p.add_argument("coco", help="multi-rater COCO JSON")
    p.add_argument("-o", "--output", required=True, help="where to write the profile JSON")
    p.add_argument("--iou-threshold", type=float, default=0.5, help="matching IoU threshold (default 0.5)")
    p.add_argument("--reference", default=None, help="reference rater (default: every ordered pair of raters)")
    p.add_argument("--name", default=None, help="profile name (default: the output file's stem)")
    p.add_argument("--coverage", type=float, default=0.7, help="fragmentation/combination coverage (default 0.7)")
    args = p.parse_args(argv)
    try:
        data = read_multi_rater_coco(args.coco).annotations
        prof = fit_profile(
            data, iou_threshold=args.iou_threshold, reference=args.reference, name=args.name or Path(args.output).stem,
            coverage=args.coverage, metadata={"data": Path(args.coco).name},
        )
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    prof.save(args.output)
    r = prof.rates()
    print(
        f"wrote {args.output}: " + ", ".join(f"{k} {v:.3f}" for k, v in r.items())
        + f"; localisation scale dx {prof.localisation.dx.scale:.3f}, dw {prof.localisation.dw.scale:.3f}"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
