r"""Mergeable corpus statistics of semantic-mask agreement, and how they finish.

Shards of samples produce :class:`SemanticStats` (from
:func:`agreement.methods.semantic.pixels.sample_statistics`); the statistics
are sums, so :meth:`SemanticStats.merge` adds them (aligning class values
when shards saw different ones) and :meth:`SemanticStats.finish` gives the
corpus numbers:

* pixel alpha (nominal Krippendorff, every pixel a unit) from the summed
  coincidence matrix ``o``: ``alpha = 1 - D_o / D_e`` with
  ``D_o = (n - sum_c o_cc) / n``, ``D_e = (n^2 - sum_c n_c^2) / (n (n - 1))``,
  at most 1, 0 at chance (Krippendorff 2011); per class ``c`` alpha of the
  binary presence of ``c``, whose coincidence matrix is
  ``[[n - 2 n_c + o_cc, n_c - o_cc], [n_c - o_cc, o_cc]]``;
* per rater pair and class, corpus Dice ``2 sum I / (sum |A| + sum |B|)``, IoU
  ``sum I / (sum |A| + sum |B| - sum I)`` and boundary F1 with
  ``P = sum hits_A / sum |bd A|``, ``R = sum hits_B / sum |bd B|``
  (boundary lengths in cracks, hits the lengths within the tolerance),
  ``F1 = 2PR / (P + R)`` (Csurka et al. 2013), all in ``[0, 1]``; per class
  the same pooled over rater pairs.

Undefined numbers are NaN with a reason; in particular the mean Dice and IoU
when no rater marked any foreground pixel (:func:`foreground_reason`): the
background's Dice of 1 alone is not reported as perfect agreement. This
module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from agreement.core.krippendorff import alpha_from_coincidence, alpha_from_sums

__all__ = [
    "BACKGROUND",
    "foreground_reason",
    "pair_index",
    "PixelAlphaStats",
    "PixelAlphaResult",
    "OverlapStats",
    "OverlapResult",
    "SemanticStats",
    "SemanticResult",
]


#: The background class value (FiftyOne's convention for ``Segmentation`` masks).
BACKGROUND = 0


def foreground_reason(class_values: Iterable[int], sizes: np.ndarray, background: int | None, *, where: str = "") -> str:
    """Why Dice and IoU are undefined when every marked pixel is background, ``""`` otherwise.

    ``sizes`` are pixel counts per class (``sum |A| + sum |B|``). When some pixels were compared but none
    of a class other than ``background``, the only agreement is on background: the overlap of foreground
    regions is 0 / 0, and the background's Dice of 1 would be a perfect score that says nothing.
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    if background is None or not sizes.sum() > 0:
        return ""
    fg = np.asarray(class_values, dtype=np.int64) != int(background)
    if (sizes[fg] > 0).any():
        return ""
    at = f" {where}" if where else ""
    return (f"no rater marked any foreground pixel{at} (every mask is background, class {int(background)}, "
            "only): Dice and IoU are undefined, agreement on background alone is not a score")


def pair_index(i: int, j: int, n_raters: int) -> int:
    """Row of the rater pair ``(i, j)``, ``i < j``, in the pairs ``(0,1), (0,2), ..., (R-2,R-1)``."""
    return i * n_raters - i * (i + 1) // 2 + (j - i - 1)


def _embed(arr: np.ndarray, values: tuple, union: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``arr`` indexed by ``values`` along ``axes``, re-indexed by ``union`` (zeros elsewhere)."""
    if tuple(union.tolist()) == tuple(values):
        return arr
    where = np.searchsorted(union, np.asarray(values, dtype=np.int64))
    shape = list(arr.shape)
    for ax in axes:
        shape[ax] = union.size
    out = np.zeros(shape, dtype=arr.dtype)
    index: list[slice | np.ndarray] = [slice(None)] * arr.ndim
    if len(axes) == 2:
        index[axes[0]], index[axes[1]] = where[:, None], where[None, :]
    else:
        index[axes[0]] = where
    out[tuple(index)] = arr
    return out


def _union(a: tuple, b: tuple) -> np.ndarray:
    if a == b:  # the usual merge (shards of one dataset's classes): sorted and distinct already
        return np.asarray(a, dtype=np.int64)
    return np.union1d(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))


# ----------------------------------------------------------------------------- pixel alpha


@dataclass(frozen=True)
class PixelAlphaResult:
    """Corpus pixel alpha.

    Attributes:
        alpha: nominal alpha over all pixels, at most 1; NaN when undefined.
        observed, expected: ``D_o`` and ``D_e``.
        reason: why ``alpha`` is NaN, ``""`` otherwise.
        class_values: the classes of ``class_alpha``.
        class_alpha: ``(C,)`` alpha of each class's presence/absence; NaN when undefined.
        class_reasons: one reason per class (``""`` when defined).
        n_pairable: ``n``, pairable values (weighted in sampled mode).
        n_pixels: the sampling mode (None: every pixel).
        n_samples: samples with at least two raters.
    """

    alpha: float
    observed: float
    expected: float
    reason: str
    class_values: tuple[int, ...]
    class_alpha: np.ndarray
    class_reasons: tuple[str, ...]
    n_pairable: float
    n_pixels: int | None
    n_samples: int


@dataclass(frozen=True)
class PixelAlphaStats:
    """Summed coincidence matrix of pixel alpha over samples.

    Attributes:
        class_values: sorted class values indexing ``coincidence``.
        coincidence: ``(C, C)`` ``o_ck`` summed over samples (sampled mode: the
            ``N / n_pixels``-weighted estimate).
        n_pixels: the sampling mode, None for every pixel; only equal modes merge.
        n_samples: samples with at least two raters.
        n_mask_pixels: pixels of those samples (each counted once).
    """

    class_values: tuple[int, ...]
    coincidence: np.ndarray
    n_pixels: int | None = None
    n_samples: int = 0
    n_mask_pixels: int = 0

    @classmethod
    def empty(cls, class_values: Iterable[int], n_pixels: int | None = None) -> "PixelAlphaStats":
        """Statistics of no pixel over ``class_values`` (the neutral element of :meth:`merge`)."""
        v = tuple(int(x) for x in np.unique(np.asarray(list(class_values), dtype=np.int64)))
        return cls(v, np.zeros((len(v), len(v))), n_pixels)

    @classmethod
    def from_coincidence(cls, class_values: Iterable[int], o: np.ndarray, n_mask_pixels: int,
                         n_pixels: int | None) -> "PixelAlphaStats":
        """One sample's statistics (``class_values`` sorted, indexing ``o``)."""
        return cls(tuple(int(x) for x in class_values), np.asarray(o, dtype=np.float64), n_pixels, 1,
                   int(n_mask_pixels))

    def merge(self, other: "PixelAlphaStats") -> "PixelAlphaStats":
        """The sum of two disjoint sets of samples' statistics (class values aligned)."""
        if self.n_pixels != other.n_pixels:
            raise ValueError(f"cannot merge pixel-alpha statistics of n_pixels={self.n_pixels} and {other.n_pixels}")
        union = _union(self.class_values, other.class_values)
        o = _embed(self.coincidence, self.class_values, union, (0, 1)) + \
            _embed(other.coincidence, other.class_values, union, (0, 1))
        return PixelAlphaStats(tuple(int(v) for v in union), o, self.n_pixels, self.n_samples + other.n_samples,
                               self.n_mask_pixels + other.n_mask_pixels)

    def finish(self) -> PixelAlphaResult:
        """Corpus alpha and per-class presence alpha (formulas in the module docstring)."""
        o = self.coincidence
        res = alpha_from_coincidence(o, n_units=self.n_samples)
        n_c = o.sum(axis=1)
        n = float(n_c.sum())
        diag = np.diag(o)
        same = diag + (n - 2 * n_c + diag)
        squares = n_c**2 + (n - n_c) ** 2
        class_alpha, _, _ = alpha_from_sums(np.full(n_c.shape, n), same, squares)
        reasons = []
        for v, a, nc in zip(self.class_values, np.atleast_1d(class_alpha), n_c, strict=False):
            if not np.isnan(a):
                reasons.append("")
            elif n < 2:
                reasons.append("fewer than 2 pairable values: no sample has two raters")
            else:
                where = "absent from" if nc <= 0 else "present in"
                reasons.append(f"class {v} is {where} every pairable pixel of every rater: no variation")
        return PixelAlphaResult(
            alpha=float(res.alpha), observed=float(res.observed), expected=float(res.expected),
            reason=res.reason, class_values=self.class_values, class_alpha=np.atleast_1d(class_alpha),
            class_reasons=tuple(reasons), n_pairable=n, n_pixels=self.n_pixels, n_samples=self.n_samples,
        )


# ----------------------------------------------------------------------------- Dice, IoU, boundary F1

_OVERLAP_FIELDS = ("intersection", "size_a", "size_b", "boundary_a", "boundary_b", "hits_a", "hits_b")


@dataclass(frozen=True)
class OverlapResult:
    """Dice, IoU and boundary F1 per rater pair and class, per class and overall.

    Attributes:
        class_values: the classes (columns).
        pair_dice, pair_iou, pair_boundary_f1: ``(n_pairs, C)`` in ``[0, 1]``, NaN where undefined
            (class in neither mask / no boundary in either mask of the pair).
        class_dice, class_iou, class_boundary_f1: ``(C,)`` pooled over rater pairs.
        dice, iou, boundary_f1: means of the defined class values (classes in ``exclude`` left out);
            Dice and IoU NaN when no rater marked any foreground pixel.
        reason: why an overall number is NaN, ``""`` otherwise (both reasons below, joined by ``"; "``).
        dice_reason: why ``dice`` and ``iou`` are NaN, ``""`` otherwise.
        boundary_f1_reason: why ``boundary_f1`` is NaN, ``""`` otherwise.
    """

    class_values: tuple[int, ...]
    pair_dice: np.ndarray
    pair_iou: np.ndarray
    pair_boundary_f1: np.ndarray
    class_dice: np.ndarray
    class_iou: np.ndarray
    class_boundary_f1: np.ndarray
    dice: float
    iou: float
    boundary_f1: float
    reason: str
    dice_reason: str = ""
    boundary_f1_reason: str = ""


def _ratios(sums: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dice, IoU and boundary F1 from the sums named by :data:`_OVERLAP_FIELDS`, elementwise (NaN where
    undefined)."""
    inter, a, b = sums["intersection"], sums["size_a"], sums["size_b"]
    hits_a, bd_a, hits_b, bd_b = sums["hits_a"], sums["boundary_a"], sums["hits_b"], sums["boundary_b"]
    with np.errstate(invalid="ignore", divide="ignore"):
        total = a + b
        dice = np.where(total > 0, 2.0 * inter / total, np.nan)
        iou = np.where(total > 0, inter / (total - inter), np.nan)
        p = np.where(bd_a > 0, hits_a / bd_a, 0.0)
        r = np.where(bd_b > 0, hits_b / bd_b, 0.0)
        f1 = np.where(p + r > 0, 2.0 * p * r / (p + r), 0.0)
    f1 = np.where((bd_a > 0) | (bd_b > 0), f1, np.nan)
    return dice, iou, f1


@dataclass(frozen=True)
class OverlapStats:
    """Summed per-pair, per-class overlap and boundary counts.

    Rows are the rater pairs ``(i, j)``, ``i < j`` (:func:`pair_index`),
    columns ``class_values``. ``intersection`` ``|A & B|``, ``size_a`` ``|A|``
    and ``size_b`` ``|B|`` (pixels of the class in rater ``i``'s and ``j``'s
    mask); ``boundary_a``/``boundary_b`` boundary pixels; ``hits_a`` those of
    ``A`` within the tolerance of ``B``'s boundary, ``hits_b`` the converse;
    ``n_samples`` ``(n_pairs,)`` samples where both raters have a mask.
    """

    class_values: tuple[int, ...]
    n_raters: int
    intersection: np.ndarray
    size_a: np.ndarray
    size_b: np.ndarray
    boundary_a: np.ndarray
    boundary_b: np.ndarray
    hits_a: np.ndarray
    hits_b: np.ndarray
    n_samples: np.ndarray

    @classmethod
    def empty(cls, class_values: Iterable[int], n_raters: int) -> "OverlapStats":
        """Statistics of no pixel for ``n_raters`` raters over ``class_values`` (the neutral element of :meth:`merge`)."""
        v = tuple(int(x) for x in np.unique(np.asarray(list(class_values), dtype=np.int64)))
        P = n_raters * (n_raters - 1) // 2
        arrays = {f: np.zeros((P, len(v))) for f in _OVERLAP_FIELDS}
        return cls(v, int(n_raters), n_samples=np.zeros(P, dtype=np.int64), **arrays)

    def merge(self, other: "OverlapStats") -> "OverlapStats":
        """The sum of two disjoint sets of samples' statistics (class values aligned)."""
        if self.n_raters != other.n_raters:
            raise ValueError(f"cannot merge overlap statistics of {self.n_raters} and {other.n_raters} raters")
        union = _union(self.class_values, other.class_values)
        arrays = {f: _embed(getattr(self, f), self.class_values, union, (1,))
                  + _embed(getattr(other, f), other.class_values, union, (1,)) for f in _OVERLAP_FIELDS}
        return OverlapStats(tuple(int(v) for v in union), self.n_raters,
                            n_samples=self.n_samples + other.n_samples, **arrays)

    def finish(self, exclude: Iterable[int] = (), background: int | None = BACKGROUND) -> OverlapResult:
        """Corpus Dice, IoU and boundary F1 (module docstring); ``exclude`` classes left out of the means.

        When no pair of masks has a pixel of a class other than ``background`` (None: no background
        class), the mean Dice and IoU are NaN with the reason "no rater marked any foreground pixel"
        (:func:`foreground_reason`); the per-class arrays keep the background's own values.
        """
        pd, pi, pf = _ratios({f: getattr(self, f) for f in _OVERLAP_FIELDS})
        s = {f: getattr(self, f).sum(axis=0) for f in _OVERLAP_FIELDS}
        cd, ci, cf = _ratios(s)
        keep = ~np.isin(np.asarray(self.class_values, dtype=np.int64), np.asarray(list(exclude), dtype=np.int64))

        def mean(x: np.ndarray) -> float:
            x = x[keep & ~np.isnan(x)]
            return float(x.mean()) if x.size else float("nan")

        dice, iou, f1 = mean(cd), mean(ci), mean(cf)
        dice_why = foreground_reason(self.class_values, s["size_a"] + s["size_b"], background)
        if dice_why:
            dice = iou = float("nan")
        elif np.isnan(dice):
            dice_why = "no class (outside exclude) appears in any pair of masks: Dice and IoU are undefined"
        f1_why = "no pair of masks has a class boundary: boundary F1 is undefined" if np.isnan(f1) else ""
        return OverlapResult(class_values=self.class_values, pair_dice=pd, pair_iou=pi, pair_boundary_f1=pf,
                             class_dice=cd, class_iou=ci, class_boundary_f1=cf, dice=dice, iou=iou, boundary_f1=f1,
                             reason="; ".join(x for x in (dice_why, f1_why) if x), dice_reason=dice_why,
                             boundary_f1_reason=f1_why)


# ----------------------------------------------------------------------------- both


@dataclass(frozen=True)
class SemanticResult:
    """Corpus agreement of semantic masks: pixel alpha and overlap numbers."""

    alpha: PixelAlphaResult
    overlap: OverlapResult


@dataclass(frozen=True)
class SemanticStats:
    """Mergeable statistics of a shard of samples: pixel alpha and overlap sums."""

    alpha: PixelAlphaStats
    overlap: OverlapStats

    @classmethod
    def empty(cls, class_values: Iterable[int], n_raters: int, n_pixels: int | None = None) -> "SemanticStats":
        """Statistics of no pixel for ``n_raters`` raters over ``class_values`` (the neutral element of :meth:`merge`)."""
        return cls(PixelAlphaStats.empty(class_values, n_pixels), OverlapStats.empty(class_values, n_raters))

    def merge(self, other: "SemanticStats") -> "SemanticStats":
        """Sum of two shards' statistics (order-independent up to floating-point summation)."""
        return SemanticStats(self.alpha.merge(other.alpha), self.overlap.merge(other.overlap))

    def finish(self, exclude: Iterable[int] = (), background: int | None = BACKGROUND) -> SemanticResult:
        """Corpus pixel alpha (overall and per class) and Dice, IoU, boundary F1 (:meth:`OverlapStats.finish`)."""
        return SemanticResult(self.alpha.finish(), self.overlap.finish(exclude, background))

