r"""HOTA between two raters' tracks in one video (one rater as ground truth, the other as tracker).

Higher Order Tracking Accuracy (Luiten et al. 2021) with box IoU as the
similarity ``S``. For a localisation threshold ``α`` in
``{0.05, 0.10, ..., 0.95}`` (``numpy.arange(0.05, 0.99, 0.05)``, as TrackEval):

1. *Global alignment.* On every frame, each ground-truth detection ``g`` and
   tracker detection ``h`` get ``S_gh / (Σ_h' S_gh' + Σ_g' S_g'h - S_gh)``; its
   sum over the frames for a ground-truth track ``a`` and tracker track ``b`` is
   ``P_ab``, and ``A_ab = P_ab / (n_a + n_b - P_ab)`` (``n`` the tracks' box counts).
2. *Matching.* On every frame, the Hungarian algorithm maximises
   ``Σ A_{a(g) b(h)} S_gh`` over one-to-one detection matchings; a matched pair
   is a true positive at ``α`` when ``S_gh >= α`` (less ``2^-52``, as TrackEval).
   Unmatched ground-truth detections are ``FN_α``, unmatched tracker ones ``FP_α``.
3. *Association.* With ``TPA_α(a, b)`` the true positives between tracks
   ``a`` and ``b``, a true positive ``c`` between them has
   ``A(c) = TPA / (n_a + n_b - TPA)`` (``= TPA / (TPA + FNA + FPA)``).

Then, per ``α``:

.. math::

    \mathrm{DetA}_\alpha = \frac{|TP|}{|TP| + |FN| + |FP|},\quad
    \mathrm{AssA}_\alpha = \frac{1}{|TP|} \sum_{c \in TP} A(c),\quad
    \mathrm{LocA}_\alpha = \frac{1}{|TP|} \sum_{c \in TP} S(c),\quad
    \mathrm{HOTA}_\alpha = \sqrt{\frac{\sum_{c \in TP} A(c)}{|TP| + |FN| + |FP|}}
                         = \sqrt{\mathrm{DetA}_\alpha \mathrm{AssA}_\alpha}

and the scores are the means over the 19 thresholds. Ranges: all in
``[0, 1]``, 1 for identical tracks.

Undefined values. Per ``α``: DetA and HOTA are NaN when neither rater has a
box; AssA and LocA are NaN when nothing is matched at ``α`` (``|TP| = 0``).
The summary ``hota`` and ``det_a`` are the means of the per-``α`` values (NaN
when neither rater has a box); ``ass_a`` counts a threshold without a match as
0, as TrackEval does (so that ``HOTA_α = sqrt(DetA_α AssA_α)`` holds there
too: nothing is associated). ``loc_a`` is the mean of ``LocA_α`` over the
thresholds, and a threshold without a match needs a convention
(``loca_unmatched``):

* ``"skip"`` (default): the mean over the thresholds that have a match only,
  the mean localisation of what was matched;
* ``"one"``: it counts 1, as TrackEval does, so that ``loc_a`` equals
  TrackEval's ``LocA`` (choose it to compare with published TrackEval numbers).

Why ``"skip"`` is the default: under ``"one"`` a threshold stops matching
when the boxes get worse and then counts as perfect localisation, so LocA
*rises* with noise once the high thresholds lose their matches (simulated
raters, box jitter 0.5 then 0.8 of the box size: ``"one"`` 0.639 then 0.672,
``"skip"`` 0.472 then 0.377); an agreement score must not grow as raters
get worse. HOTA, DetA and AssA do not depend on the convention.

Either way ``loc_a`` is NaN (with the reason) when no threshold has a match,
where TrackEval reports 1. The reason of a NaN is in ``reason``.

Pooling videos (:func:`pool_hota`) sums ``|TP|``, ``|FN|``, ``|FP|``, ``Σ A(c)``
and ``Σ S(c)`` per ``α``: TrackEval's ``combine_sequences``.

Equal to TrackEval's ``HOTA`` (``trackeval.metrics.HOTA.eval_sequence``) on
the same data, including the tie-breaking of the Hungarian matching (the same
matrices in the same order: detections of a frame in canonical track order).
A frame whose positive-similarity detection pairs are disjoint (no detection
overlaps two others) is matched without the Hungarian algorithm: every such
pair is in the unique optimum, the rest do not count at any ``α``.

Reference: J. Luiten, A. Ošep, P. Dendorfer, P. Torr, A. Geiger, L. Leal-Taixé
and B. Leibe, "HOTA: A Higher Order Metric for Evaluating Multi-Object
Tracking", IJCV 129, 548-578, 2021.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.methods.tracks.data import Tracks
from agreement.methods.tracks.video import RaterPair, VideoTracks

__all__ = ["HOTA_ALPHAS", "LOCA_UNMATCHED", "HotaResult", "check_loca_unmatched", "hota", "hota_of_pair",
           "pool_hota"]

#: The localisation thresholds α: 0.05, 0.10, ..., 0.95 (TrackEval's ``array_labels``).
HOTA_ALPHAS = np.arange(0.05, 0.99, 0.05)
_EPS = np.finfo(float).eps

#: How ``loc_a`` counts a threshold without a match: ``"one"`` (TrackEval's 1) or ``"skip"`` (left out).
LOCA_UNMATCHED: tuple[str, ...] = ("skip", "one")

REASON_EMPTY = "neither rater has a box: no detection to score"
REASON_NO_MATCH = "no detection pair matched at any threshold alpha (no box pair with IoU >= 0.05)"


@dataclass(frozen=True, eq=False)
class HotaResult:
    """HOTA's counts per threshold ``α`` (poolable) and the scores derived from them.

    Attributes:
        tp, fn, fp: ``(19,)`` true positives, false negatives and false positives per ``α``.
        ass_sum: ``(19,)`` ``Σ_{c in TP} A(c)``.
        ass_re_sum, ass_pr_sum: ``(19,)`` ``Σ_{c in TP} TPA / n_a`` and ``Σ_{c in TP} TPA / n_b``.
        loc_sum: ``(19,)`` ``Σ_{c in TP} S(c)``.
        loca_unmatched: how :attr:`loc_a` counts a threshold without a match: ``"skip"`` (left out, the
            default) or ``"one"`` (TrackEval; module docstring).
    """

    tp: np.ndarray
    fn: np.ndarray
    fp: np.ndarray
    ass_sum: np.ndarray
    ass_re_sum: np.ndarray
    ass_pr_sum: np.ndarray
    loc_sum: np.ndarray
    loca_unmatched: str = "skip"

    def __post_init__(self) -> None:
        check_loca_unmatched(self.loca_unmatched)

    @property
    def alphas(self) -> np.ndarray:
        """``(19,)`` the localisation thresholds ``α = 0.05, 0.10, ..., 0.95``."""
        return HOTA_ALPHAS

    def _div(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        den = np.asarray(den, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    @property
    def det_a_alpha(self) -> np.ndarray:
        """``(19,)`` DetA per ``α``; NaN when neither rater has a box."""
        return self._div(self.tp, self.tp + self.fn + self.fp)

    @property
    def det_re_alpha(self) -> np.ndarray:
        """``(19,)`` ``|TP| / (|TP| + |FN|)``; NaN without ground-truth boxes."""
        return self._div(self.tp, self.tp + self.fn)

    @property
    def det_pr_alpha(self) -> np.ndarray:
        """``(19,)`` ``|TP| / (|TP| + |FP|)``; NaN without tracker boxes."""
        return self._div(self.tp, self.tp + self.fp)

    @property
    def ass_a_alpha(self) -> np.ndarray:
        """``(19,)`` AssA per ``α``; NaN where nothing is matched."""
        return self._div(self.ass_sum, self.tp)

    @property
    def ass_re_alpha(self) -> np.ndarray:
        """``(19,)`` association recall per ``α``: ``ass_re_sum / tp`` in ``[0, 1]`` (NaN where ``tp = 0``)."""
        return self._div(self.ass_re_sum, self.tp)

    @property
    def ass_pr_alpha(self) -> np.ndarray:
        """``(19,)`` association precision per ``α``: ``ass_pr_sum / tp`` in ``[0, 1]`` (NaN where ``tp = 0``)."""
        return self._div(self.ass_pr_sum, self.tp)

    @property
    def loc_a_alpha(self) -> np.ndarray:
        """``(19,)`` LocA per ``α``; NaN where nothing is matched."""
        return self._div(self.loc_sum, self.tp)

    @property
    def hota_alpha(self) -> np.ndarray:
        """``(19,)`` ``sqrt(Σ A(c) / (|TP| + |FN| + |FP|))``; NaN when neither rater has a box."""
        hota: np.ndarray = np.sqrt(self._div(self.ass_sum, self.tp + self.fn + self.fp))
        return hota

    @property
    def defined(self) -> bool:
        """Whether some threshold has a detection on either side (``tp + fn + fp > 0``)."""
        return bool((self.tp + self.fn + self.fp).max() > 0)

    @property
    def hota(self) -> float:
        """The mean of ``HOTA_α`` over the 19 thresholds, in ``[0, 1]``; NaN when neither rater has a box."""
        return float(np.mean(self.hota_alpha)) if self.defined else np.nan

    @property
    def det_a(self) -> float:
        """The mean of ``DetA_α``, in ``[0, 1]``; NaN when neither rater has a box."""
        return float(np.mean(self.det_a_alpha)) if self.defined else np.nan

    @property
    def ass_a(self) -> float:
        """The mean of ``AssA_α``, a threshold without a match counted 0 (TrackEval); NaN when neither rater
        has a box."""
        return float(np.mean(np.nan_to_num(self.ass_a_alpha, nan=0.0))) if self.defined else np.nan

    @property
    def loc_a(self) -> float:
        """The mean of ``LocA_α`` over the 19 thresholds, in ``[0, 1]``: a threshold without a match is left out
        (``loca_unmatched="skip"``) or counts 1 (``"one"``, TrackEval); NaN when no threshold has a match."""
        v = self.loc_a_alpha
        if not np.isfinite(v).any():
            return np.nan
        if self.loca_unmatched == "one":
            return float(np.mean(np.where(np.isfinite(v), v, 1.0)))
        return float(np.mean(v[np.isfinite(v)]))

    @property
    def reason(self) -> str:
        """Why ``hota`` (or ``loc_a``) is NaN; ``""`` when every summary is defined."""
        if not self.defined:
            return REASON_EMPTY
        if not np.isfinite(self.loc_a_alpha).any():
            return REASON_NO_MATCH
        return ""

    def as_dict(self) -> dict:
        """The summaries and the per-``α`` counts as plain Python values."""
        out = {k: getattr(self, k) for k in ("hota", "det_a", "ass_a", "loc_a")}
        out.update({k: getattr(self, k).tolist() for k in ("tp", "fn", "fp")})
        out["reason"] = self.reason
        return out


def check_loca_unmatched(loca_unmatched: str) -> str:
    """Validates the LocA convention for thresholds without a match.

    Raises:
        ValueError: naming ``loca_unmatched`` and its choices.
    """
    if loca_unmatched not in LOCA_UNMATCHED:
        raise ValueError(f"loca_unmatched must be one of {LOCA_UNMATCHED} ('skip': a threshold without a match is "
                         f"left out of LocA's mean; 'one': it counts 1, as TrackEval), got {loca_unmatched!r}")
    return loca_unmatched


def _empty(n_g: int, n_h: int, loca_unmatched: str = "skip") -> HotaResult:
    A = len(HOTA_ALPHAS)
    z = np.zeros(A)
    return HotaResult(tp=np.zeros(A, np.int64), fn=np.full(A, n_g, np.int64), fp=np.full(A, n_h, np.int64), ass_sum=z,
                      ass_re_sum=z.copy(), ass_pr_sum=z.copy(), loc_sum=z.copy(), loca_unmatched=loca_unmatched)


def _alignment(p: RaterPair) -> np.ndarray:
    """``A_ab`` of each overlapping detection pair's track pair (step 1 of the module)."""
    n_g, n_h = len(p.g_frame), len(p.h_frame)
    rowsum = np.bincount(p.i, weights=p.iou, minlength=n_g)
    colsum = np.bincount(p.j, weights=p.iou, minlength=n_h)
    denom = colsum[p.j] + rowsum[p.i] - p.iou
    sim_iou = np.where(denom > _EPS, p.iou / np.where(denom > _EPS, denom, 1.0), 0.0)
    Th = max(len(p.h_len), 1)
    key = p.g_track[p.i] * Th + p.h_track[p.j]
    uk, inv = np.unique(key, return_inverse=True)
    pmc = np.bincount(inv, weights=sim_iou, minlength=len(uk))
    a, b = uk // Th, uk % Th
    ga = pmc / (p.g_len[a].astype(np.float64) + p.h_len[b].astype(np.float64) - pmc)
    ga_per_pair: np.ndarray = ga[inv]
    return ga_per_pair


def _frame_ranges(frame: np.ndarray, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[start, stop)`` of each of ``frames`` in the sorted ``frame``."""
    return np.searchsorted(frame, frames, "left"), np.searchsorted(frame, frames, "right")


def _matches(p: RaterPair, ga: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The matched detection pairs ``(i, j, S)`` of every frame (step 2); pairs with ``S = 0`` left out."""
    if not len(p.i):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    deg_i = np.bincount(p.i, minlength=len(p.g_frame))
    deg_j = np.bincount(p.j, minlength=len(p.h_frame))
    pair_frame = p.g_frame[p.i]
    busy = (deg_i[p.i] > 1) | (deg_j[p.j] > 1)
    hard_frames = np.unique(pair_frame[busy])
    easy = ~np.isin(pair_frame, hard_frames)
    out_i, out_j, out_s = [p.i[easy]], [p.j[easy]], [p.iou[easy]]
    g0, g1 = _frame_ranges(p.g_frame, hard_frames)
    h0, h1 = _frame_ranges(p.h_frame, hard_frames)
    q0, q1 = _frame_ranges(pair_frame, hard_frames)
    for f in range(len(hard_frames)):
        ii, jj, s = p.i[q0[f]:q1[f]] - g0[f], p.j[q0[f]:q1[f]] - h0[f], p.iou[q0[f]:q1[f]]
        sim = np.zeros((g1[f] - g0[f], h1[f] - h0[f]))
        sim[ii, jj] = s
        score = np.zeros_like(sim)
        score[ii, jj] = ga[q0[f]:q1[f]] * s
        rows, cols = linear_sum_assignment(-score)
        keep = sim[rows, cols] > 0
        out_i.append(rows[keep] + g0[f])
        out_j.append(cols[keep] + h0[f])
        out_s.append(sim[rows, cols][keep])
    i, j, s = np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_s)
    return i, j, s


def hota_of_pair(p: RaterPair, *, loca_unmatched: str = "skip") -> HotaResult:
    """:func:`hota` on a rater pair of an indexed video (ground truth ``g``, tracker ``h``): the same formulas,
    ranges and reference (Luiten et al., IJCV 2021)."""
    check_loca_unmatched(loca_unmatched)
    n_g, n_h = len(p.g_frame), len(p.h_frame)
    if n_g == 0 or n_h == 0:
        return _empty(n_g, n_h, loca_unmatched)
    i, j, s = _matches(p, _alignment(p))
    passes = s[:, None] >= (HOTA_ALPHAS - _EPS)[None, :]  # (M, 19)
    tp = passes.sum(axis=0).astype(np.int64)
    loc_sum = (passes * s[:, None]).sum(axis=0)
    Th = max(len(p.h_len), 1)
    uk, inv = np.unique(p.g_track[i] * Th + p.h_track[j], return_inverse=True)
    a, b = uk // Th, uk % Th
    na, nb = p.g_len[a].astype(np.float64), p.h_len[b].astype(np.float64)
    A = len(HOTA_ALPHAS)
    ass, ass_re, ass_pr = np.zeros(A), np.zeros(A), np.zeros(A)
    for k in range(A):
        tpa = np.bincount(inv[passes[:, k]], minlength=len(uk)).astype(np.float64)
        ass[k] = np.sum(tpa * tpa / np.maximum(1.0, na + nb - tpa))
        ass_re[k] = np.sum(tpa * tpa / np.maximum(1.0, na))
        ass_pr[k] = np.sum(tpa * tpa / np.maximum(1.0, nb))
    return HotaResult(tp=tp, fn=n_g - tp, fp=n_h - tp, ass_sum=ass, ass_re_sum=ass_re, ass_pr_sum=ass_pr,
                      loc_sum=loc_sum, loca_unmatched=loca_unmatched)


def hota(ground_truth: Tracks, tracker: Tracks, *, loca_unmatched: str = "skip") -> HotaResult:
    r"""HOTA, DetA, AssA and LocA of one rater's tracks (``tracker``) against another's (``ground_truth``).

    .. math::

        \mathrm{HOTA} = \frac{1}{19} \sum_{\alpha} \sqrt{\mathrm{DetA}_\alpha \cdot \mathrm{AssA}_\alpha},\quad
        \mathrm{DetA}_\alpha = \frac{|TP_\alpha|}{|TP_\alpha| + |FN_\alpha| + |FP_\alpha|},\quad
        \mathrm{AssA}_\alpha = \frac{1}{|TP_\alpha|} \sum_{c \in TP_\alpha}
            \frac{|TPA(c)|}{|TPA(c)| + |FNA(c)| + |FPA(c)|}

    over ``α = 0.05, 0.10, ..., 0.95`` with box IoU as the similarity (details and the undefined cases in the
    module). Range ``[0, 1]``; 1 when the two raters' tracks are identical. HOTA is symmetric in the two
    raters up to the tie-breaking of the Hungarian matching.

    ``LocA = (1/19) Σ_α LocA_α`` with ``LocA_α = Σ_{c in TP_α} S(c) / |TP_α|``; a threshold without a match
    is left out of the mean (``loca_unmatched="skip"``, the default) or counts 1 (``"one"``, TrackEval's).

    Args:
        ground_truth: the reference rater's tracks in one video.
        tracker: the other rater's tracks in the same video.
        loca_unmatched: ``"skip"`` (default) or ``"one"`` (equal to TrackEval): how ``loc_a`` counts a
            threshold where nothing matched.

    Returns:
        :class:`HotaResult` (``hota``, ``det_a``, ``ass_a``, ``loc_a`` and the per-``α`` arrays).

    Reference:
        J. Luiten et al., "HOTA: A Higher Order Metric for Evaluating Multi-Object Tracking", IJCV 129,
        548-578, 2021; equal to TrackEval's ``HOTA`` metric.
    """
    pair = VideoTracks(("gt", "tracker"), (ground_truth, tracker)).rater_pair(0, 1)
    return hota_of_pair(pair, loca_unmatched=loca_unmatched)


def pool_hota(results: Sequence[HotaResult], *, loca_unmatched: str | None = None) -> HotaResult:
    """HOTA over several videos: the per-``α`` counts and sums added (TrackEval's ``combine_sequences``).

    ``DetA_α = Σ|TP| / Σ(|TP| + |FN| + |FP|)``, ``AssA_α = Σ_v Σ_c A(c) / Σ|TP|`` and so on; the same rules for
    undefined values as one video (ranges ``[0, 1]``). An empty sequence gives the result of no box (undefined).
    ``loca_unmatched``: the LocA convention of the pooled result (default: that of the results, which must agree).

    Reference:
        TrackEval's ``HOTA.combine_sequences`` (J. Luiten and A. Hoffhues, 2020); Luiten et al., IJCV 2021.
    """
    conventions = {r.loca_unmatched for r in results}
    if loca_unmatched is None:
        if len(conventions) > 1:
            raise ValueError(f"the results use different LocA conventions {sorted(conventions)}: give "
                             "loca_unmatched='one' or 'skip' for the pooled result")
        loca_unmatched = conventions.pop() if conventions else "skip"
    check_loca_unmatched(loca_unmatched)
    if not results:
        return _empty(0, 0, loca_unmatched)
    fields = ("tp", "fn", "fp", "ass_sum", "ass_re_sum", "ass_pr_sum", "loc_sum")
    return HotaResult(**{f: np.sum([getattr(r, f) for r in results], axis=0) for f in fields},
                      loca_unmatched=loca_unmatched)
