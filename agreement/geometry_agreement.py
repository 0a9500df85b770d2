r"""Chance-corrected geometry agreement: σ, distance α and KS against a chance
baseline, with separate detection and classification agreement.

After Braylan, Alonso & Lease (2022), as documented by the Potato annotation
tool. Three separate questions get three separate, chance-corrected answers:

* **where** (localisation): are matched annotations of different raters on the
  same sample closer than annotations of different raters on different
  samples? (σ, distance α, KS);
* **whether** (detection): did the raters find the same objects?
  (detection α);
* **what** (classification): do they give matched objects the same class?
  (classification α).

The one procedure
-----------------
Everything is built from one comparison of two *sets*: rater ``a``'s
annotations ``A`` and rater ``b``'s annotations ``B`` (``a != b``), compared by
the **threshold matching** of :func:`agreement.baselines.threshold_match`
generalised to any similarity ``s in [0, 1]``: pairs with ``s >= t`` are
eligible, and among one-to-one matchings of eligible pairs the one of maximum
cardinality and, among those, of maximum total similarity is taken (Hungarian
algorithm on ``K + s``, ``K = min(|A|, |B|) + 1``). The matching is
class-agnostic ("localisation first"), so a label disagreement on a
well-placed object is a label disagreement, not two missed objects. A matched
pair has the distance ``d = 1 - s`` in ``[0, 1 - t]``.

* **Within-item** set pairs: ``A`` and ``B`` on the *same* sample, for every
  sample and every pair of raters both assigned to it (an empty set is an
  explicit "no object" and takes part; an unassigned rater does not).
* **Between-item** set pairs (the chance baseline): ``A`` on sample ``i`` and
  ``B`` on a *different* sample ``j != i``, for every unordered rater pair
  ``{a, b}`` that shares at least one measured sample (the rater pairs that
  make within-item set pairs; a crowd of ``R`` raters with ``k`` assigned per
  sample has far fewer than ``R (R - 1) / 2`` of them) and every ordered
  sample pair ``(i, j)`` with ``a`` assigned to ``i`` and ``b`` to ``j``
  (``a`` the rater whose name sorts first). The population is stratified by
  rater pair: stratum ``{a, b}`` holds ``|S_a| |S_b| - |S_a & S_b|`` set
  pairs, ``S_a`` the measured samples of ``a``.

Both go through exactly the same matching, threshold included, so the two
distance distributions are comparable: both live in ``[0, 1 - t]``. (A peer
tool keeps only within-item pairs above its IoU threshold but draws its
baseline pairs without one; its within-item distances are then all below
``1 - t`` and most baseline distances above, so its KS is 1 by construction.
That is not done here.) The localisation statistics therefore answer "given
that two annotations were matched, how much closer are they than chance
matches"; whether they were matched at all is the detection question.

Localisation: σ, distance α, KS
-------------------------------
With ``W`` the within-item matched distances and ``B`` the between-item matched
distances (each a multiset; bootstrap weights below):

* **σ** (Braylan et al. 2022, their "σ" at ``p = 0.05``): the share of
  within-item distances that fall below the ``p``-th percentile of the
  between-item distribution,

  .. math:: \sigma = \frac{1}{|W|} \#\{w \in W : w < q_p(B)\}

  Estimator: ``q_p(B)`` is the empirical quantile of Hyndman & Fan's type 7
  (numpy's default ``"linear"`` method: with ``B`` sorted,
  ``h = (|B| - 1) p``, ``q = B_(floor h) + (h - floor h) (B_(floor h + 1) -
  B_(floor h))``, 0-based), and the inequality is strict. This is
  ``numpy.mean(W < numpy.quantile(B, p))``, the estimator of the Human Protocol
  SDK's ``sigma``. Range ``[0, 1]``: 1 when every within-item distance is
  below the chance 5th percentile, about ``p`` (0.05, *not* 0) when raters
  agree no better than chance, below ``p`` when worse.
* **distance α** (Krippendorff's ``1 - D_o / D_e`` with the distance as the
  difference function; the form a peer tool reports under the name σ):

  .. math:: \alpha_d = 1 - \frac{\operatorname{mean}(W)}{\operatorname{mean}(B)}

  Range at most 1: 1 when matched annotations coincide, 0 at chance, negative
  below chance.
* **KS**: two-sample Kolmogorov-Smirnov statistics between the empirical
  CDFs ``F_W`` and ``F_B``: two-sided ``D = sup |F_W - F_B|``, and one-sided
  ``D+ = sup (F_W - F_B)`` (``ks_greater``: large when within-item distances
  are *smaller* than chance, the direction of agreement; scipy's
  ``alternative="greater"`` with ``W`` first) and ``D- = sup (F_B - F_W)``
  (``ks_less``). Each in ``[0, 1]``. The p-values (scipy's ``ks_2samp``)
  assume independent draws, which distances sharing annotations are not:
  read them as descriptive.

Detection α
-----------
For a set pair with ``|M|`` matched pairs, ``u = |A| + |B| - 2 |M|``
annotations are unmatched. Pooling set pairs,

.. math::

    U_o = \frac{\sum_{\text{within}} u}{\sum_{\text{within}} (|A| + |B|)}, \qquad
    U_e = \frac{\sum_{\text{between}} u}{\sum_{\text{between}} (|A| + |B|)}, \qquad
    \alpha_{det} = 1 - \frac{U_o}{U_e}

Equivalently, with the pooled matching F1 (Dice) ``F = 1 - U``,
``alpha_det = (F_o - F_e) / (1 - F_e)``: a kappa over the share of matched
annotations, with chance measured by the same matching between samples. Range
at most 1. **1** exactly when every within-item set pair matches completely
(every rater finds every object, ``U_o = 0``) and chance does not
(``U_e > 0``); **about 0** when raters draw on unrelated samples (within-item
set pairs are then distributed like between-item ones, ``E U_o = U_e``);
negative below chance. Undefined (NaN) when within-item sets hold no
annotation, or ``U_e = 0`` (every chance set pair matches completely, so
finding the objects cannot be told apart from chance).

(Krippendorff's α over present/absent per matched cluster is *not* used: no
cluster ever records "absent for all raters", so with two raters and ``M``
shared and ``k`` unshared objects it equals ``(1 - k) / (2M + k)``, never
positive once an object is missed.)

Classification α
----------------
Nominal Krippendorff's α (:mod:`agreement.krippendorff`) over the labels of
matched within-item pairs only: every matched pair is a unit with two values.
With ``P`` matched pairs of which ``D`` disagree and ``n_c`` the number of
values of class ``c`` (``n = 2P``):
``alpha_cls = 1 - (D / P) / ((n^2 - sum_c n_c^2) / (n (n - 1)))``.

Bootstrap, chance sample, budget, determinism
---------------------------------------------
* **Bootstrap** (percentile intervals) resamples *samples* with replacement,
  never instances. A sample drawn ``w_i`` times weighs ``w_i`` in every
  within-item sum; a between-item set pair ``(i, j)`` weighs ``w_i w_j``, so
  two draws of the same sample never form a between-item pair (they would be
  within-item). Matchings are computed once; a resample only reweighs
  per-sample and per-set-pair statistics. The interval of a statistic uses
  the resamples where it is defined (``Estimate.n_resamples``).
* **Pair budget** (``max_pairs``, in comparisons; comparing sets of ``n``
  and ``m`` annotations costs ``max(1, n m)``) bounds the **chance sample**:
  at most ``max_pairs`` between-item comparisons are made. Within-item work
  grows with the data (one comparison per pair of annotations of two raters
  on a sample) and is not cut to fit a total: every sample is measured
  except a sample whose within-item measurement *alone* needs more than
  ``max_pairs`` comparisons (``sum max(1, n m)`` over its rater pairs). Such
  a sample is skipped whole (never half-measured), left out of the chance
  sample and the bootstrap too, and listed (``skipped_samples``: sample id,
  the comparisons it would need, its raters and annotations);
  ``truncated`` means exactly that some sample was skipped. Whether a
  sample is skipped depends on that sample only: not on the seed, the order
  or the number of the other samples. A dataset of a few hundred ordinary
  images is measured whole at the default budget (200,000): an image is
  skipped only when, for example, ten raters draw more than 66 boxes each
  (45 pairs of 67 x 67 boxes), or two raters more than 447 each.
* **Chance sample**: the chance baseline is drawn from the measured samples
  (a sample with a single assigned rater takes part: its set still pairs
  with other raters' sets on other samples). When the between-item
  population costs at most ``max_pairs`` comparisons, every between-item set
  pair is measured (``between_exact``); otherwise set pairs are drawn
  uniformly with replacement over the population (a draw picks a stratum
  with probability proportional to its size, then a sample of each rater;
  ``i == j`` is rejected) from a fixed-seed stream until the next draw would
  exceed the budget (duplicates are measured once and weighted by their
  multiplicity).
* **Cost**: every stage works on the (sample, assigned rater pair) triples,
  on the rater pairs that share a sample, or on the chance sample; nothing
  loops over all ``R (R - 1) / 2`` rater pairs.
* **Determinism**: sample order, draws and resamples are defined on sample
  ids (sorted by ``str``) and rater names, so identical data gives identical
  numbers after a restart, whatever the order of samples (up to float
  rounding of sums).

References
----------
A. Braylan, O. Alonso and M. Lease, "Measuring Annotator Agreement Generally
across Complex Structured, Multi-object, and Free-text Annotation Tasks",
The Web Conference (WWW) 2022, 1720-1730 (σ, distance-based α, KS).
K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.
B. Efron and R. Tibshirani, "An Introduction to the Bootstrap", 1993
(percentile intervals). R. J. Hyndman and Y. Fan, "Sample Quantiles in
Statistical Packages", The American Statistician 50(4), 1996 (type 7).

This module does not import FiftyOne.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
from scipy import sparse, stats
from scipy.optimize import linear_sum_assignment

from agreement.arrays import unique_sorted
from agreement.alpha_ot import canonical_sample_order
from agreement.data import class_codes
from agreement.geometry.boxes import (
    giou_to_similarity,
    pairwise_centroid_closeness,
    pairwise_giou,
    pairwise_iou,
)
from agreement.rater_pairs import shared_sample_pairs
from agreement.similarity import SIMILARITIES, check_similarity, similarity_matrix
from agreement.validation import AnnotationError

__all__ = [
    "DISTANCES",
    "Estimate",
    "GeometryAgreementResult",
    "geometry_agreement",
    "GeometryShard",
    "geometry_shard",
    "merge_geometry_shards",
]

#: Distances offered: ``d = 1 - s`` for the similarity ``s`` of that name in
#: :func:`agreement.similarity.similarity_matrix`. Each is listed only once a
#: test shows the ordering property on it (noisier annotations score lower).
DISTANCES: tuple[str, ...] = tuple(
    d for d in ("giou", "iou", "centroid", "polygon_iou", "polygon_giou", "mask_iou", "oks", "cuboid_iou",
                "point3d", "polyline3d_f1", "segment_jaccard")
    if d in SIMILARITIES
)

_TAG_BETWEEN = 0x6E0B
_TAG_BOOT = 0xB007
_DRAW_CHUNK = 65_536
_MAX_BLOCK = 4_000_000  # entries of one similarity block of a large sample
_STACK_BLOCK = 8_192  # entries of a block of stacked small tasks (box similarities)


# --------------------------------------------------------------------------
# Similarities: agreement.similarity, with stacked blocks for boxes
# --------------------------------------------------------------------------


def _stacked_box_similarity(name: str, data, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    """The box similarities of :func:`agreement.similarity.similarity_matrix`
    (same formulas) for ``rows_a`` spanning several samples: used only to
    stack many small blocks into one call (see :func:`_stacker`)."""
    a, b = data.boxes[rows_a], data.boxes[rows_b]
    if name == "iou":
        return pairwise_iou(a, b)
    if name == "giou":
        return np.clip(giou_to_similarity(pairwise_giou(a, b)), 0.0, 1.0)
    wh = data.image_sizes[0]  # centroid: every sample has this size (or none is known)
    size = tuple(wh.tolist()) if np.all(np.isfinite(wh)) and np.all(wh > 0) else None
    return pairwise_centroid_closeness(a, b, size)


def _stacker(distance: str, data):
    """A function computing blocks whose ``rows_a`` span several samples, or None.

    Box similarities are cheap per entry and cost mostly call overhead, so
    small blocks are stacked into one call (the cross-block entries are
    computed and discarded). Centroid closeness depends on the image size of
    ``rows_a``'s sample, so it is stacked only when every sample has the same
    size (or none is known). Costly similarities (polygons, masks, keypoints)
    are never stacked.
    """
    if distance == "centroid":
        sz = data.image_sizes
        fin = np.isfinite(sz).all(axis=1)
        if not ((~fin).all() or (fin.all() and np.all(sz == sz[0]))):
            return None
    elif distance not in ("iou", "giou"):
        return None
    return lambda rows_a, rows_b: _stacked_box_similarity(distance, data, rows_a, rows_b)


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A statistic with its bootstrap percentile interval.

    Attributes:
        value: the point estimate; NaN when undefined.
        ci_low, ci_high: the percentile interval at the run's ``confidence``
            (NaN without bootstrap or when fewer than two resamples define it).
        reason: ``""`` or why ``value`` (or else the interval) is NaN.
        n_resamples: bootstrap resamples in which the statistic is defined.
    """

    value: float
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    reason: str = ""
    n_resamples: int = 0

    @property
    def defined(self) -> bool:
        return not np.isnan(self.value)


@dataclass(frozen=True, eq=False)
class GeometryAgreementResult:
    """Chance-corrected geometry agreement of a corpus (module docstring).

    Headline statistics (each an :class:`Estimate` with a percentile interval):

    Attributes:
        sigma: Braylan's σ, share of within-item distances below the ``sigma_p``
            quantile of the between-item distances, in ``[0, 1]`` (about
            ``sigma_p`` at chance).
        distance_alpha: ``1 - mean(within) / mean(between)``, at most 1
            (0 at chance).
        ks: two-sided KS statistic ``sup |F_W - F_B|`` in ``[0, 1]``.
        ks_greater: one-sided ``sup (F_W - F_B)``: within-item distances
            smaller than chance.
        ks_less: one-sided ``sup (F_B - F_W)``.
        detection_alpha: ``1 - U_o / U_e`` over unmatched shares, at most 1
            (1 all raters find all objects, 0 chance).
        classification_alpha: nominal α over the labels of matched pairs.

    Parts of the statistics:

    Attributes:
        mean_within, mean_between: mean matched distance within / between.
        between_quantile: ``q_p(B)``, the σ cut-off.
        ks_pvalue, ks_greater_pvalue: scipy ``ks_2samp`` p-values
            (descriptive: distances are not independent).
        unmatched_within, unmatched_between: ``U_o`` and ``U_e``.
        n_within: number of within-item matched pairs (``|W|``).
        n_between: number of between-item matched pairs, multiplicity
            included (``|B|``).
        n_within_set_pairs, n_between_set_pairs: set pairs measured
            (between: distinct set pairs; ``between_draws`` counts draws).
        n_between_population: between-item set pairs in the population.
        between_exact: whether every between-item set pair was measured.
        n_comparisons, n_between_comparisons: similarity evaluations spent.

    Budget (module docstring: ``max_pairs`` bounds the chance sample; a
    sample is skipped only when its own within-item measurement needs more
    than ``max_pairs`` comparisons):

    Attributes:
        truncated: some sample was skipped whole for the pair budget
            (``n_samples_skipped > 0``), and nothing else.
        n_samples: samples in the corpus.
        n_samples_measured: samples measured with at least one within-item
            set pair.
        n_samples_skipped: samples skipped for the budget.
        skipped_samples: one dict per skipped sample, in ``str(sample_id)``
            order: ``sample_id``, ``comparisons`` (its within-item
            comparisons, ``> max_pairs``), ``raters`` (assigned) and
            ``annotations``.

    Per sample (``S``, NaN / 0 where not measured):

    Attributes:
        sample_distance: mean within-item matched distance.
        sample_n_matched: matched within-item pairs.
        sample_n_annotations: ``sum (|A| + |B|)`` over its within set pairs.
        sample_n_unmatched: ``sum u`` over its within set pairs.
        sample_matched_fraction: ``1 - unmatched / annotations`` (pooled F1).
        sample_measured: bool, measured within the budget.
        sample_reasons: why ``sample_distance`` is NaN (``""`` if defined).
        sample_comparisons: within-item comparisons the sample needs,
            ``sum max(1, n m)`` over its set pairs (measured or not).
        sample_skipped: bool, skipped for the budget.

    Per annotation row of ``data`` (``N``):

    Attributes:
        row_distance: mean distance to its matched partners (one per other
            rater at most); NaN when unmatched or not measured.
        row_n_matched: number of raters whose annotation it was matched to.

    Matched pairs and distributions:

    Attributes:
        pair_rows: ``(K, 2)`` rows of ``data`` of every within-item matched pair.
        pair_distance: ``(K,)`` their distances (``W``).
        between_distances: ``(L,)`` distinct-draw between-item matched distances.
        between_weights: ``(L,)`` their multiplicities (``B`` is the
            weighted multiset).

    Parameters: ``distance``, ``threshold``, ``bootstrap``, ``max_pairs``,
    ``seed``, ``confidence``, ``sigma_p``, and ``similarity_report`` (from
    :func:`agreement.similarity.check_similarity`: e.g. repaired polygons).
    """

    sigma: Estimate
    distance_alpha: Estimate
    ks: Estimate
    ks_greater: Estimate
    ks_less: Estimate
    detection_alpha: Estimate
    classification_alpha: Estimate
    mean_within: float
    mean_between: float
    between_quantile: float
    ks_pvalue: float
    ks_greater_pvalue: float
    unmatched_within: float
    unmatched_between: float
    n_within: int
    n_between: int
    n_within_set_pairs: int
    n_between_set_pairs: int
    between_draws: int
    n_between_population: int
    between_exact: bool
    n_comparisons: int
    n_between_comparisons: int
    truncated: bool
    n_samples: int
    n_samples_measured: int
    n_samples_skipped: int
    sample_distance: np.ndarray = field(repr=False)
    sample_n_matched: np.ndarray = field(repr=False)
    sample_n_annotations: np.ndarray = field(repr=False)
    sample_n_unmatched: np.ndarray = field(repr=False)
    sample_matched_fraction: np.ndarray = field(repr=False)
    sample_measured: np.ndarray = field(repr=False)
    sample_reasons: tuple = field(repr=False)
    sample_comparisons: np.ndarray = field(repr=False)
    sample_skipped: np.ndarray = field(repr=False)
    skipped_samples: tuple = field(repr=False)
    row_distance: np.ndarray = field(repr=False)
    row_n_matched: np.ndarray = field(repr=False)
    pair_rows: np.ndarray = field(repr=False)
    pair_distance: np.ndarray = field(repr=False)
    between_distances: np.ndarray = field(repr=False)
    between_weights: np.ndarray = field(repr=False)
    distance: str = "giou"
    threshold: float = 0.5
    bootstrap: int | None = 1000
    max_pairs: int = 200_000
    seed: int = 0
    confidence: float = 0.95
    sigma_p: float = 0.05
    similarity_report: dict = field(default_factory=dict)

    _STATS = ("sigma", "distance_alpha", "ks", "ks_greater", "ks_less", "detection_alpha", "classification_alpha")

    def headline(self) -> dict:
        """A flat dict of the headline numbers, their intervals and reasons
        (``{name}``, ``{name}_ci_low``, ``{name}_ci_high``, ``{name}_reason``),
        plus the budget (``truncated``, ``n_samples_measured``, ...)."""
        out: dict = {}
        for name in self._STATS:
            e: Estimate = getattr(self, name)
            out[name] = e.value
            out[f"{name}_ci_low"] = e.ci_low
            out[f"{name}_ci_high"] = e.ci_high
            out[f"{name}_reason"] = e.reason
        out.update(
            mean_within=self.mean_within, mean_between=self.mean_between,
            between_quantile=self.between_quantile, ks_pvalue=self.ks_pvalue,
            ks_greater_pvalue=self.ks_greater_pvalue, unmatched_within=self.unmatched_within,
            unmatched_between=self.unmatched_between, n_within=self.n_within, n_between=self.n_between,
            between_exact=self.between_exact, truncated=self.truncated, n_samples=self.n_samples,
            n_samples_measured=self.n_samples_measured, n_samples_skipped=self.n_samples_skipped,
            distance=self.distance, threshold=self.threshold, bootstrap=self.bootstrap,
            max_pairs=self.max_pairs, seed=self.seed, confidence=self.confidence,
            sigma_p=self.sigma_p,
        )
        return out


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _check_params(distance, threshold, bootstrap, max_pairs, seed, confidence, sigma_p):
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")
    t = float(threshold)
    if not (np.isfinite(t) and 0.0 <= t <= 1.0):
        raise ValueError(f"threshold (the matching threshold on similarity) must be in [0, 1], got {threshold!r}")
    if bootstrap is not None:
        if isinstance(bootstrap, bool) or int(bootstrap) != bootstrap or int(bootstrap) < 2:
            raise ValueError(
                f"bootstrap must be a number of resamples >= 2 (or None for no intervals), got {bootstrap!r}"
            )
        bootstrap = int(bootstrap)
    if isinstance(max_pairs, bool) or int(max_pairs) != max_pairs or int(max_pairs) < 1:
        raise ValueError(f"max_pairs (the pair budget) must be a positive number of comparisons, got {max_pairs!r}")
    c = float(confidence)
    if not (0.0 < c < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    p = float(sigma_p)
    if not (0.0 < p < 1.0):
        raise ValueError(f"sigma_p (the chance percentile of σ) must be in (0, 1), got {sigma_p!r}")
    return t, bootstrap, int(max_pairs), int(seed), c, p


def _check_data(data, distance: str) -> None:
    if distance not in ("iou", "giou", "centroid"):
        return  # the geometry is checked by agreement.similarity.check_similarity
    boxes = data.boxes
    if data.cuboids is not None and len(boxes) and not np.isfinite(boxes).all():
        check_similarity(distance, data)  # 3D labels have no 2D box: the message says to use 'cuboid_iou'
    bad = ~np.isfinite(boxes).all(axis=1) | (boxes[:, 2] < 0) | (boxes[:, 3] < 0) if len(boxes) else np.zeros(0, bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        s, r = int(data.sample_index[i]), int(data.rater_index[i])
        k = i - data.rows(s, r).start
        raise AnnotationError(
            f"sample {data.sample_names[s]!r}, rater {data.raters[r]!r}, annotation {k}: box "
            f"{boxes[i].tolist()} has NaN or infinite coordinates or a negative width or height"
        )


# --------------------------------------------------------------------------
# Matching of eligible entries
# --------------------------------------------------------------------------


def _match_entries(pair: np.ndarray, i: np.ndarray, j: np.ndarray, sim: np.ndarray, n_rows: int) -> np.ndarray:
    """Which eligible entries the threshold matching keeps, for many set pairs.

    ``pair[e]`` is the set pair of entry ``e`` (rows ``i[e]`` of side A and
    ``j[e]`` of side B, similarity ``sim[e] >= t``). Set pairs whose eligible
    entries already form a matching (no row or column with two) keep them
    all; the others are solved by the Hungarian algorithm on ``K + sim``
    (maximum cardinality, then maximum total similarity).
    """
    E = len(pair)
    matched = np.zeros(E, dtype=bool)
    if E == 0:
        return matched
    base = np.int64(n_rows + 1)
    ki = pair.astype(np.int64) * base + i
    kj = pair.astype(np.int64) * base + j
    _, inv_i, cnt_i = np.unique(ki, return_inverse=True, return_counts=True)
    _, inv_j, cnt_j = np.unique(kj, return_inverse=True, return_counts=True)
    conflict = (cnt_i[inv_i] > 1) | (cnt_j[inv_j] > 1)
    bad_pairs = unique_sorted(pair[conflict])
    is_bad = np.isin(pair, bad_pairs)
    matched[~is_bad] = True
    if len(bad_pairs):
        idx = np.flatnonzero(is_bad)
        idx = idx[np.argsort(pair[idx], kind="stable")]
        p_sorted = pair[idx]
        # Local row / column numbers inside each set pair, all at once.
        ui, li = np.unique(ki[idx], return_inverse=True)
        uj, lj = np.unique(kj[idx], return_inverse=True)
        pi_first = np.searchsorted(ui // base, bad_pairs, side="left")
        pj_first = np.searchsorted(uj // base, bad_pairs, side="left")
        pi_n = np.diff(np.r_[pi_first, len(ui)])
        pj_n = np.diff(np.r_[pj_first, len(uj)])
        bounds = np.searchsorted(p_sorted, bad_pairs, side="left")
        ends = np.r_[bounds[1:], len(idx)]
        for q, (lo, hi) in enumerate(zip(bounds.tolist(), ends.tolist())):
            e = idx[lo:hi]
            r_loc = li[lo:hi] - pi_first[q]
            c_loc = lj[lo:hi] - pj_first[q]
            w = np.zeros((int(pi_n[q]), int(pj_n[q])))
            w[r_loc, c_loc] = (min(w.shape) + 1.0) + sim[e]
            r, c = linear_sum_assignment(w, maximize=True)
            chosen = np.zeros(w.shape, dtype=bool)
            chosen[r, c] = True
            matched[e] = chosen[r_loc, c_loc]
    return matched


def _eligible_entries(sim_fn, stack_fn, t, tasks_a, tasks_b, block: int | None = None):
    """Entries with similarity ``>= t`` of every task ``(rows_a, rows_b)``.

    ``sim_fn(rows_a, rows_b)`` computes one task's block (``rows_a`` of one
    sample); ``stack_fn``, when not None, computes blocks whose ``rows_a``
    span several samples, and consecutive small tasks are then stacked into
    blocks of at most ``block`` entries.

    Returns ``(colpos, row_a, row_b, sim)``: ``colpos`` indexes the
    concatenation of ``tasks_b`` (so it tells the task and the column).
    """
    block = _STACK_BLOCK if block is None else block
    n = len(tasks_a)
    out = ([], [], [], [])
    if n == 0:
        return tuple(np.zeros(0, dt) for dt in (np.intp, np.intp, np.intp, np.float64))
    la = [len(x) for x in tasks_a]
    lb = [len(x) for x in tasks_b]
    col0 = np.concatenate([[0], np.cumsum(lb)])
    k = 0
    while k < n:
        e, na, nb = k + 1, la[k], lb[k]
        if stack_fn is not None:
            while e < n and (na + la[e]) * (nb + lb[e]) <= block:
                na += la[e]
                nb += lb[e]
                e += 1
        if e - k == 1:
            A, B = tasks_a[k], tasks_b[k]
            if not len(A) or not len(B):
                k = e
                continue
            M = sim_fn(A, B)
            ia, ib = np.nonzero(M >= t)
        else:
            A = np.concatenate(tasks_a[k:e])
            B = np.concatenate(tasks_b[k:e])
            M = stack_fn(A, B)
            ta = np.repeat(np.arange(e - k), la[k:e])
            tb = np.repeat(np.arange(e - k), lb[k:e])
            ia, ib = np.nonzero((ta[:, None] == tb[None, :]) & (M >= t))
        out[0].append(col0[k] + ib)
        out[1].append(A[ia])
        out[2].append(B[ib])
        out[3].append(M[ia, ib])
        k = e
    return (np.concatenate(out[0]).astype(np.intp), np.concatenate(out[1]).astype(np.intp),
            np.concatenate(out[2]).astype(np.intp), np.concatenate(out[3]).astype(np.float64))


# --------------------------------------------------------------------------
# Statistics over weighted distributions (point estimate = unit weights)
# --------------------------------------------------------------------------


class _Engine:
    """Sufficient statistics of the corpus, reweighed by sample weights.

    ``compute(Wt)`` takes an ``(S_m, c)`` matrix: column ``r`` holds the weight
    of every measured sample (all ones for the point estimate, draw counts
    for a bootstrap resample). A within-item quantity of sample ``i`` weighs
    ``w_i``; a between-item set pair ``(i, j)`` weighs ``w_i w_j`` times its
    multiplicity. Matchings are never recomputed.

    Within-item distances are binned at the distinct between-item values
    ``b_1 < ... < b_L`` (bin ``2k``: strictly between ``b_k`` and
    ``b_{k+1}``; bin ``2k + 1``: equal to ``b_{k+1}``), which is all the
    KS statistics need: ``sup (F_W - F_B)`` is attained just below some
    ``b_k`` and ``sup (F_B - F_W)`` at some ``b_k``.
    """

    def __init__(self, S_m, dw, sw, db, sa, sb, mb, U_s, A_s, pa, pb, pm, U_k, A_k, P_s, D_s, Nsc, p):
        self.S_m, self.p = S_m, p
        ow = np.argsort(dw, kind="stable")
        self.dw, self.sw = dw[ow], sw[ow]
        del ow
        ob = np.argsort(db, kind="stable")
        self.db, self.sa, self.sb, self.mb = db[ob], sa[ob], sb[ob], mb[ob]
        self.bu, first = np.unique(self.db, return_index=True)
        L = len(self.bu)
        self.b_last = np.r_[first[1:], len(self.db)].astype(np.intp) - 1
        bins = np.searchsorted(self.bu, self.dw, side="left")  # k, then the bin 2k + tie, in place
        if L:
            tie = self.bu[np.minimum(bins, L - 1)] == self.dw
            bins *= 2
            bins += tie
            del tie
        # bins is nondecreasing, as dw is sorted: H is built row by row, without a COO copy.
        indptr = np.searchsorted(bins, np.arange(2 * L + 2), side="left")
        del bins
        self.H = sparse.csr_matrix((np.ones(len(self.dw)), self.sw, indptr), shape=(2 * L + 1, S_m))
        self.sw = self.H.indices  # the same samples, in sorted-distance order (one array, not two)
        self.dsum_s = np.bincount(self.sw, weights=self.dw, minlength=S_m)
        self.dcnt_s = np.bincount(self.sw, minlength=S_m).astype(np.float64)
        self.U_s, self.A_s = U_s, A_s
        self.QU = sparse.csr_matrix((pm * U_k, (pa, pb)), shape=(S_m, S_m))
        self.QA = sparse.csr_matrix((pm * A_k, (pa, pb)), shape=(S_m, S_m))
        self.n_set_pairs = len(U_k)
        self.P_s, self.D_s, self.Nsc = P_s, D_s, Nsc.T.tocsr()  # Nsc: (C, S_m)
        self.width = 4 * len(self.db) + 2 * L + 4 * S_m + 16

    def chunk_cols(self) -> int:
        return int(max(1, min(256, 8_000_000 // self.width)))

    def compute(self, Wt: np.ndarray) -> dict[str, np.ndarray]:
        S_m, c = Wt.shape
        nan = np.full(c, np.nan)
        out = {k: nan.copy() for k in ("sigma", "distance_alpha", "ks", "ks_greater", "ks_less",
                                      "detection_alpha", "classification_alpha", "mean_within",
                                      "mean_between", "q", "U_o", "U_e")}
        with np.errstate(invalid="ignore", divide="ignore"):
            # Localisation.
            if len(self.dw) and len(self.db):
                tw = self.dcnt_s @ Wt
                out["mean_within"] = mw = (self.dsum_s @ Wt) / tw
                wb = np.take(Wt, self.sa, axis=0)
                wb *= np.take(Wt, self.sb, axis=0)
                wb *= self.mb[:, None]
                cb = np.cumsum(wb, axis=0)
                tb = cb[-1]
                out["mean_between"] = mb = (self.db @ wb) / tb
                ok = (tw > 0) & (tb > 0)
                out["distance_alpha"] = np.where(ok & (mb > 0), 1.0 - mw / mb, np.nan)
                CW = np.cumsum(np.asarray(self.H @ Wt), axis=0)  # (2L + 1, c)
                L = len(self.bu)
                Fb = cb[self.b_last] / tb  # F_B(b_k)
                Fb_prev = np.vstack([np.zeros((1, c)), Fb[:-1]])
                Fw_left = CW[0:2 * L:2] / tw  # F_W(b_k^-)
                Fw_at = CW[1:2 * L:2] / tw  # F_W(b_k)
                dplus = np.maximum((Fw_left - Fb_prev).max(axis=0), 0.0)
                dminus = np.maximum((Fb - Fw_at).max(axis=0), 0.0)
                out["ks_greater"] = np.where(ok, dplus, np.nan)
                out["ks_less"] = np.where(ok, dminus, np.nan)
                out["ks"] = np.where(ok, np.maximum(dplus, dminus), np.nan)
                q = np.full(c, np.nan)
                sig = np.full(c, np.nan)
                cbT = np.ascontiguousarray(cb.T)
                for r in range(c):
                    M = tb[r]
                    if not (M >= 1 and tw[r] > 0):
                        continue
                    h = (M - 1.0) * self.p
                    lo = np.floor(h)
                    e = np.searchsorted(cbT[r], [lo, min(lo + 1.0, M - 1.0)], side="right")
                    v0, v1 = self.db[e[0]], self.db[e[1]]
                    q[r] = qr = v0 + (h - lo) * (v1 - v0)
                    # Within-item weight strictly below q: whole bins up to the
                    # largest b_k < q, plus the open bin (b_k, q) element-wise.
                    kq = int(np.searchsorted(self.bu, qr, side="left"))
                    below = CW[2 * kq - 1, r] if kq >= 1 else 0.0
                    e_lo = int(np.searchsorted(self.dw, self.bu[kq - 1], side="right")) if kq >= 1 else 0
                    e_hi = int(np.searchsorted(self.dw, qr, side="left"))
                    if e_hi > e_lo:
                        below += float(Wt[self.sw[e_lo:e_hi], r].sum())
                    sig[r] = below / tw[r]
                out["q"], out["sigma"] = q, sig
            # Detection.
            Uo = (self.U_s @ Wt) / (self.A_s @ Wt)
            if self.n_set_pairs:
                Ue = (Wt * (self.QU @ Wt)).sum(axis=0) / (Wt * (self.QA @ Wt)).sum(axis=0)
            else:
                Ue = nan
            out["U_o"], out["U_e"] = Uo, Ue
            out["detection_alpha"] = np.where(np.isfinite(Uo) & (Ue > 0), 1.0 - Uo / Ue, np.nan)
            # Classification.
            P = self.P_s @ Wt
            D = self.D_s @ Wt
            n = 2.0 * P
            Nc = np.asarray(self.Nsc @ Wt)
            sq = (Nc * Nc).sum(axis=0) if Nc.size else np.zeros(c)
            De = (n * n - sq) / (n * (n - 1.0))
            out["classification_alpha"] = np.where((n >= 2) & (De > 1e-15), 1.0 - (D / P) / De, np.nan)
        return out


# --------------------------------------------------------------------------
# The corpus computation, in stages
# --------------------------------------------------------------------------
#
# Every stage works on the (sample, assigned rater pair) triples, on the rater
# pairs that share a measured sample, or on the drawn chance sample: never on
# all R (R - 1) / 2 rater pairs, so that a crowd of R = 500 raters with 10
# assigned per sample costs what 10 raters on every sample cost.


@dataclass(frozen=True)
class _SetPairs:
    """Within-item set pairs: one entry per (sample ``s``, rater ``a`` < rater
    ``b``) with both assigned, sorted by ``(s, a, b)``, with the set sizes
    ``n = |A|``, ``m = |B|`` and the cost ``max(1, n m)`` in comparisons."""

    s: np.ndarray
    a: np.ndarray
    b: np.ndarray
    n: np.ndarray
    m: np.ndarray
    cost: np.ndarray

    def __len__(self) -> int:
        return len(self.s)

    def select(self, sel: np.ndarray) -> "_SetPairs":
        return _SetPairs(self.s[sel], self.a[sel], self.b[sel], self.n[sel], self.m[sel], self.cost[sel])

    def index(self, s: np.ndarray, a: np.ndarray, b: np.ndarray, R: int) -> np.ndarray:
        """Position of each ``(s, a, b)`` (``a < b``, present) in this list."""
        key = (self.s.astype(np.int64) * R + self.a) * R + self.b
        return np.searchsorted(key, (s.astype(np.int64) * R + a) * R + b)


def _within_set_pairs(data, counts: np.ndarray) -> _SetPairs:
    """Every (sample, rater a < rater b) with both assigned, via
    :func:`agreement.rater_pairs.shared_sample_pairs` (work grows with the
    triples, not with ``R^2``)."""
    s, a, b, _ = shared_sample_pairs(data.assigned)
    n, m = counts[s, a].astype(np.int64), counts[s, b].astype(np.int64)
    return _SetPairs(s, a, b, n, m, np.maximum(1, n * m))


@dataclass(frozen=True)
class _PairSums:
    """The within-item set pairs summed per rater pair, which is all the chance strata and the
    totals need of them: ``code = a * R + b`` (rater indices, ``a < b``, sorted), the number of
    set pairs of each (``count``) and their comparisons (``cost``), both exact integers."""

    code: np.ndarray
    count: np.ndarray
    cost: np.ndarray

    @classmethod
    def of(cls, pairs: _SetPairs, R: int) -> "_PairSums":
        return cls._summed(pairs.a.astype(np.int64) * R + pairs.b, np.ones(len(pairs), np.int64), pairs.cost)

    @classmethod
    def merge(cls, parts: Sequence["_PairSums"]) -> "_PairSums":
        """The sums of several shards (integer sums: exact in any order)."""
        cat = np.concatenate
        return cls._summed(cat([p.code for p in parts]), cat([p.count for p in parts]),
                           cat([p.cost for p in parts]))

    @classmethod
    def _summed(cls, code: np.ndarray, count: np.ndarray, cost: np.ndarray) -> "_PairSums":
        uniq, inv = np.unique(code, return_inverse=True)
        inv = inv.reshape(-1)
        tot_count, tot_cost = np.zeros(len(uniq), np.int64), np.zeros(len(uniq), np.int64)
        np.add.at(tot_count, inv, count)
        np.add.at(tot_cost, inv, cost)
        return cls(uniq.astype(np.int64), tot_count, tot_cost)

    @property
    def n_set_pairs(self) -> int:
        return int(self.count.sum())

    @property
    def n_comparisons(self) -> int:
        return int(self.cost.sum())


@dataclass(frozen=True)
class _Budget:
    """Which samples are measured (``keep``) and which are skipped
    (``skipped``: a sample whose within-item measurement alone needs more than
    ``max_pairs`` comparisons), what each sample's within-item measurement
    costs (``cost_s``), and the budget of the chance sample."""

    keep: np.ndarray
    skipped: np.ndarray
    cost_s: np.ndarray
    chance_budget: int


def _plan_budget(data, pairs: _SetPairs, max_pairs: int) -> _Budget:
    """The pair budget: a sample is skipped whole when its own within-item
    cost ``sum max(1, n m)`` over its set pairs exceeds ``max_pairs``; every
    other sample is measured; the chance sample gets all of ``max_pairs``.

    A property of each sample alone, so the measured samples depend neither
    on the seed nor on the order or number of the other samples."""
    cost_s = np.bincount(pairs.s, weights=pairs.cost, minlength=data.num_samples).astype(np.int64)
    skipped = cost_s > max_pairs
    return _Budget(~skipped, skipped, cost_s, max_pairs)


def _skipped_records(data, budget: _Budget, counts: np.ndarray) -> tuple[dict, ...]:
    """One record per skipped sample, in canonical sample order: ``sample_id``,
    ``comparisons`` (what its within-item measurement needs), ``raters``
    (assigned) and ``annotations``."""
    idx = np.flatnonzero(budget.skipped)
    if not len(idx):
        return ()
    idx = idx[canonical_sample_order(data.sample_ids[idx])]
    raters = data.assigned[idx].sum(axis=1)
    anns = counts[idx].sum(axis=1)
    return tuple({"sample_id": data.sample_ids[s], "comparisons": int(budget.cost_s[s]), "raters": int(k),
                  "annotations": int(n)} for s, k, n in zip(idx.tolist(), raters.tolist(), anns.tolist()))


@dataclass(frozen=True)
class _WithinMatch:
    """The threshold matching of every within-item set pair: matched rows,
    their set pair, distance and sample, and the unmatched count ``u`` per
    set pair."""

    rows: np.ndarray
    pid: np.ndarray
    distance: np.ndarray
    sample: np.ndarray
    unmatched: np.ndarray


@dataclass(frozen=True)
class _WithinSums:
    """What the statistics need of a shard's within-item matching per matched pair: its distance and
    its sample (``int32``, shard order), and the matched rows (``(0, 2)`` once the per-row outputs are
    written: :meth:`GeometryShard.without_rows`). The per-sample sums (unmatched annotations, all
    annotations) are the shard's outputs ``sample_n_unmatched`` and ``sample_n_annotations``."""

    distance: np.ndarray
    sample: np.ndarray
    rows: np.ndarray


def _match_within(data, pairs: _SetPairs, sim_fn, stack_fn, t: float) -> _WithinMatch:
    """Matches every within-item set pair: one similarity block per sample
    (all its rows against all its rows; one block per rater against the later
    raters for a large sample), entries of a rater with itself dropped."""
    R, N = data.num_raters, len(data)
    offsets, rater_of_row = data.offsets, data.rater_index
    tasks_a: list[np.ndarray] = []
    tasks_b: list[np.ndarray] = []
    for s in np.unique(pairs.s).tolist():
        lo, hi = int(offsets[s * R]), int(offsets[(s + 1) * R])
        if hi - lo < 2 or rater_of_row[lo] == rater_of_row[hi - 1]:
            continue  # fewer than two raters with annotations: nothing to match
        if (hi - lo) ** 2 <= _MAX_BLOCK:
            rows = np.arange(lo, hi)
            tasks_a.append(rows)
            tasks_b.append(rows)
        else:  # a large sample: one block per rater against the later raters
            rr = rater_of_row[lo:hi]
            for r in np.unique(rr)[:-1].tolist():
                tasks_a.append(np.flatnonzero(rr == r) + lo)
                tasks_b.append(np.flatnonzero(rr > r) + lo)
    _, gi, gj, sim = _eligible_entries(sim_fn, stack_fn, t, tasks_a, tasks_b)
    keep_e = rater_of_row[gi] < rater_of_row[gj]  # each unordered pair once, never a rater with itself
    gi, gj, sim = gi[keep_e], gj[keep_e], sim[keep_e]
    ent_p = pairs.index(data.sample_index[gi], rater_of_row[gi], rater_of_row[gj], R).astype(np.int64)
    mk = _match_entries(ent_p, gi, gj, sim, N)
    rows = np.stack([gi[mk], gj[mk]], axis=1) if mk.any() else np.zeros((0, 2), np.intp)
    pid, distance = ent_p[mk], np.clip(1.0 - sim[mk], 0.0, 1.0)
    o = np.lexsort((rows[:, 1], rows[:, 0])) if len(rows) else np.zeros(0, np.intp)
    rows, pid, distance = rows[o], pid[o], distance[o]
    sample = pairs.s[pid] if len(pid) else np.zeros(0, np.intp)
    matched = np.bincount(pid, minlength=len(pairs)).astype(np.int64)
    return _WithinMatch(rows, pid, distance, sample, pairs.n + pairs.m - 2 * matched)


def _per_sample_outputs(data, pairs: _SetPairs, match: _WithinMatch, budget: _Budget,
                        max_pairs: int, t: float) -> dict:
    """Per-sample and per-row results of the within-item matching, with a
    reason for every sample whose distance is NaN."""
    S, N = data.num_samples, len(data)
    s_dsum = np.bincount(match.sample, weights=match.distance, minlength=S)
    s_nm = np.bincount(match.sample, minlength=S).astype(np.int64)
    s_ann = np.bincount(pairs.s, weights=pairs.n + pairs.m, minlength=S).astype(np.int64)
    s_un = np.bincount(pairs.s, weights=match.unmatched, minlength=S).astype(np.int64)
    has_pairs = np.bincount(pairs.s, minlength=S) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        sample_distance = np.where(s_nm > 0, s_dsum / np.maximum(s_nm, 1), np.nan)
        sample_matched = np.where(has_pairs & (s_ann > 0), 1.0 - s_un / np.maximum(s_ann, 1), np.nan)
    n_assigned = data.assigned.sum(axis=1)
    reasons = []
    for s in range(S):
        if s_nm[s] > 0:
            reasons.append("")
        elif n_assigned[s] < 2:
            reasons.append(f"fewer than two raters assigned ({int(n_assigned[s])}): nothing to compare")
        elif budget.skipped[s]:
            reasons.append(
                f"skipped whole: its within-item measurement alone needs {int(budget.cost_s[s])} comparisons "
                f"({int(n_assigned[s])} raters), more than the pair budget (max_pairs = {max_pairs})")
        elif s_ann[s] == 0:
            reasons.append("every assigned rater drew nothing (explicit absence): no annotation to match")
        else:
            reasons.append(f"no two raters' annotations match at similarity >= {t:g}")
    rd = np.zeros(N)
    rn = np.zeros(N, dtype=np.int64)
    if len(match.rows):
        np.add.at(rd, match.rows[:, 0], match.distance)
        np.add.at(rd, match.rows[:, 1], match.distance)
        rn = np.bincount(match.rows.ravel(), minlength=N).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        row_distance = np.where(rn > 0, rd / np.maximum(rn, 1), np.nan)
    return dict(sample_distance=sample_distance, sample_n_matched=s_nm, sample_n_annotations=s_ann,
                sample_n_unmatched=s_un, sample_matched_fraction=sample_matched,
                sample_measured=has_pairs & budget.keep, sample_reasons=tuple(reasons),
                row_distance=row_distance, row_n_matched=rn)


@dataclass(frozen=True)
class _Strata:
    """The chance population, one stratum per rater pair that shares a
    measured sample, ordered by rater names: ``first`` (rater a, the first set)
    and ``second`` (rater b). Stratum ``x`` holds every ``(i, j)`` with ``i``
    in ``first``'s measured samples and ``j`` in ``second``'s, canonical
    sample order (``size`` of them, ``pop`` with ``i != j``, costing ``cost``
    comparisons). ``rater_samples[rater_ptr[r]:rater_ptr[r + 1]]`` lists rater
    ``r``'s measured samples in canonical order."""

    first: np.ndarray
    second: np.ndarray
    size: np.ndarray
    pop: np.ndarray
    cost: np.ndarray
    rater_ptr: np.ndarray
    rater_samples: np.ndarray

    def locate(self, x: np.ndarray, loc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Samples ``(i, j)`` of position ``loc`` (``i``-major) of stratum ``x``."""
        nb = self.rater_ptr[self.second[x] + 1] - self.rater_ptr[self.second[x]]
        i = self.rater_samples[self.rater_ptr[self.first[x]] + loc // nb]
        j = self.rater_samples[self.rater_ptr[self.second[x]] + loc % nb]
        return i, j


class _Cells:
    """The assigned (sample, rater) cells of a corpus and their set sizes, sparse: ``counts[s, r]`` of
    :meth:`agreement.data.MultiRaterAnnotations.counts` for arrays ``s``, ``r`` (0 where not assigned),
    in memory of the assigned cells rather than samples × raters."""

    def __init__(self, s: np.ndarray, r: np.ndarray, n: np.ndarray, n_raters: int):
        self.R = int(n_raters)
        key = s.astype(np.int64) * self.R + r
        o = np.argsort(key, kind="stable")
        self.key, self.s, self.r, self.n = key[o], s[o].astype(np.intp), r[o].astype(np.intp), n[o].astype(np.int64)

    @classmethod
    def of(cls, data) -> "_Cells":
        s, r = np.nonzero(data.assigned)
        return cls(s, r, data.counts()[s, r], data.num_raters)

    def __getitem__(self, where) -> np.ndarray:
        s, r = where
        key = np.asarray(s, dtype=np.int64) * self.R + np.asarray(r, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.key, key), max(len(self.key) - 1, 0))
        found = self.key[pos] == key if len(self.key) else np.zeros(np.shape(key), dtype=bool)
        return np.where(found, self.n[pos] if len(self.n) else 0, 0)


def _chance_strata(raters: tuple, cells: _Cells, pair_sums: _PairSums, canon_kept: np.ndarray, S: int) -> _Strata:
    """Sizes and costs of the strata, from per-rater sums and the per-rater-pair sums of the triples.

    For stratum ``(a, b)`` with measured sample lists ``S_a``, ``S_b`` and
    their shared samples ``C``: ``size = |S_a| |S_b|``, ``pop = size - |C|``
    and ``cost = sum_{i in S_a, j in S_b, i != j} max(1, n_ia n_jb)``
    ``= (sum n_a)(sum n_b) + #{n_ia n_jb = 0} - sum_{C} max(1, n_ia n_ib)``.
    """
    R = len(raters)
    names = list(raters)
    nrank = np.empty(R, dtype=np.int64)
    nrank[sorted(range(R), key=names.__getitem__)] = np.arange(R)
    # Each rater's measured samples, canonical order (CSR by rater).
    cpos = np.full(S, -1, dtype=np.int64)
    cpos[canon_kept] = np.arange(len(canon_kept))
    keep = cpos[cells.s] >= 0
    pos, rr = cpos[cells.s[keep]], cells.r[keep]
    o = np.lexsort((pos, rr))
    rsamp, rr = canon_kept[pos[o]].astype(np.intp), rr[o]
    ptr = np.searchsorted(rr, np.arange(R + 1)).astype(np.intp)
    nS = np.diff(ptr).astype(np.int64)
    n_cell = cells.n[keep][o]
    tot = np.bincount(rr, weights=n_cell, minlength=R).astype(np.int64)
    nz = np.bincount(rr, weights=n_cell > 0, minlength=R).astype(np.int64)
    # Strata: the distinct rater pairs of the measured triples, by names.
    pa, pb = pair_sums.code // R, pair_sums.code % R
    swap = nrank[pa] > nrank[pb]
    fa, fb = np.where(swap, pb, pa), np.where(swap, pa, pb)
    code, inv = np.unique(nrank[fa] * R + nrank[fb], return_inverse=True)
    inv = inv.reshape(-1)
    common, diag = np.zeros(len(code), np.int64), np.zeros(len(code), np.int64)
    np.add.at(common, inv, pair_sums.count)
    np.add.at(diag, inv, pair_sums.cost)
    first = np.zeros(len(code), np.intp)
    second = np.zeros(len(code), np.intp)
    first[inv], second[inv] = fa, fb
    size = nS[first] * nS[second]
    cost = tot[first] * tot[second] + (size - nz[first] * nz[second]) - diag
    return _Strata(first, second, size, size - common, cost, ptr, rsamp)


@dataclass(frozen=True)
class _ChanceSample:
    """Distinct between-item set pairs ``(i, first[x])`` vs ``(j, second[x])``
    of stratum ``x``, with their multiplicity, sorted by ``(x, i, j)``."""

    i: np.ndarray
    j: np.ndarray
    a: np.ndarray
    b: np.ndarray
    mult: np.ndarray
    draws: int
    exact: bool
    n_population: int


def _chance_set_pairs(strata: _Strata, counts: np.ndarray, budget: int, seed: int) -> _ChanceSample:
    """Every between-item set pair when their cost fits in ``budget``;
    otherwise uniform draws with replacement over the strata (a draw with
    ``i == j`` is rejected) until the next one would exceed it."""
    n_pop, pop_cost = int(strata.pop.sum()), int(strata.cost.sum())
    exact = pop_cost <= budget
    cum_end = np.cumsum(strata.size)
    cum_start = cum_end - strata.size
    bi, bj, bx, draws = [], [], [], 0
    if n_pop and exact:
        x = np.repeat(np.arange(len(strata.size)), strata.size)
        i, j = strata.locate(x, np.arange(int(cum_end[-1]), dtype=np.int64) - cum_start[x])
        ok = i != j
        bi, bj, bx, draws = [i[ok]], [j[ok]], [x[ok]], n_pop
    elif n_pop:
        rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, _TAG_BETWEEN]))
        remaining = budget
        while remaining > 0:
            u = rng.integers(0, int(cum_end[-1]), size=_DRAW_CHUNK, dtype=np.int64)
            x = np.searchsorted(cum_end, u, side="right")
            i, j = strata.locate(x, u - cum_start[x])
            ok = i != j
            i, j, x = i[ok], j[ok], x[ok]
            cc = np.cumsum(np.maximum(1, counts[i, strata.first[x]] * counts[j, strata.second[x]]))
            take = int(np.searchsorted(cc, remaining, side="right"))
            bi.append(i[:take]); bj.append(j[:take]); bx.append(x[:take])
            draws += take
            if take < len(cc):
                break
            remaining -= int(cc[-1]) if len(cc) else 0
    i, j, x = (np.concatenate(v).astype(np.intp) if v else np.zeros(0, np.intp) for v in (bi, bj, bx))
    mult = np.zeros(0, np.int64)
    if len(i):  # distinct set pairs, sorted by (x, i, j), with multiplicities
        o = np.lexsort((j, i, x))
        i, j, x = i[o], j[o], x[o]
        new = np.r_[True, (x[1:] != x[:-1]) | (i[1:] != i[:-1]) | (j[1:] != j[:-1])]
        start = np.flatnonzero(new)
        mult = np.diff(np.r_[start, len(i)]).astype(np.int64)
        i, j, x = i[start], j[start], x[start]
    return _ChanceSample(i, j, strata.first[x], strata.second[x], mult, int(draws), bool(exact), n_pop)


@dataclass(frozen=True)
class _BetweenMatch:
    """The threshold matching of the chance sample: per matched pair its set
    pair (``pid``) and distance; per set pair its sizes and unmatched count;
    and the comparisons spent."""

    pid: np.ndarray
    distance: np.ndarray
    n: np.ndarray
    m: np.ndarray
    unmatched: np.ndarray
    comparisons: int


def _match_between(data, counts: np.ndarray, chance: _ChanceSample, sim_fn, stack_fn, t: float) -> _BetweenMatch:
    """Matches every drawn set pair: one similarity block per (sample ``i``,
    rater ``a``) against the sets of all its partners."""
    R, N = data.num_raters, len(data)
    bi, bj, ba, bb = chance.i, chance.j, chance.a, chance.b
    K = len(bi)
    bn = counts[bi, ba].astype(np.int64) if K else np.zeros(0, np.int64)
    bm = counts[bj, bb].astype(np.int64) if K else np.zeros(0, np.int64)
    tasks_a, tasks_b, task_pairs = [], [], []
    if K:
        go = np.lexsort((bj, ba, bi))
        gkey = bi[go].astype(np.int64) * R + ba[go]
        starts = np.flatnonzero(np.r_[True, gkey[1:] != gkey[:-1]])
        ends = np.r_[starts[1:], len(go)]
        for lo_g, hi_g in zip(starts.tolist(), ends.tolist()):
            ks = go[lo_g:hi_g]
            i0, a0 = int(bi[ks[0]]), int(ba[ks[0]])
            if counts[i0, a0] == 0:
                continue
            ks = ks[bm[ks] > 0]
            if not len(ks):
                continue
            cstart = data.offsets[bj[ks] * R + bb[ks]]
            clen = bm[ks]
            cend = np.cumsum(clen)
            tasks_b.append(np.repeat(cstart - (cend - clen), clen) + np.arange(int(cend[-1])))
            ra = data.rows(i0, a0)
            tasks_a.append(np.arange(ra.start, ra.stop))
            task_pairs.append(np.repeat(ks, clen))  # set pair of every column
    colpos, ei, ej, es = _eligible_entries(sim_fn, stack_fn, t, tasks_a, tasks_b)
    ep = np.concatenate(task_pairs)[colpos].astype(np.int64) if len(colpos) else np.zeros(0, np.int64)
    mk = _match_entries(ep, ei, ej, es, N)
    pid = ep[mk]
    matched = np.bincount(pid, minlength=K).astype(np.int64)
    return _BetweenMatch(pid, np.clip(1.0 - es[mk], 0.0, 1.0), bn, bm, bn + bm - 2 * matched,
                         int(np.maximum(1, bn * bm).sum()) if K else 0)


@dataclass(frozen=True)
class _LabelCounts:
    """What classification α needs of the within-item matched pairs, per sample (corpus order):
    matched pairs, pairs whose labels differ, and ``classes``, the ``(S, C)`` sparse counts of
    the classes of their labels (exact integers, so shards stack in any grouping)."""

    pairs: np.ndarray
    differ: np.ndarray
    classes: sparse.csr_matrix
    n_classes: int

    @classmethod
    def of(cls, data, within: _WithinMatch) -> "_LabelCounts":
        codes, cats = class_codes(data)
        S, C = data.num_samples, len(cats)
        if not len(within.rows):
            return cls(np.zeros(S), np.zeros(S), sparse.csr_matrix((S, C)), C)
        la, lb = codes[within.rows[:, 0]], codes[within.rows[:, 1]]
        ps = within.sample
        classes = sparse.csr_matrix((np.ones(2 * len(ps)), (np.r_[ps, ps], np.r_[la, lb])), shape=(S, C))
        classes.sum_duplicates()
        return cls(np.bincount(ps, minlength=S).astype(np.float64),
                   np.bincount(ps, weights=(la != lb).astype(np.float64), minlength=S), classes, C)

    @classmethod
    def stack(cls, parts: Sequence["_LabelCounts"]) -> "_LabelCounts":
        """The counts of consecutive shards, as one corpus."""
        cat = np.concatenate
        return cls(cat([p.pairs for p in parts]), cat([p.differ for p in parts]),
                   sparse.vstack([p.classes for p in parts], format="csr"), parts[0].n_classes)


def _make_engine(within: _WithinSums, outputs: dict, labels: _LabelCounts, chance: _ChanceSample,
                 between: _BetweenMatch, cidx: np.ndarray, canon_kept: np.ndarray, p: float) -> _Engine:
    """The sufficient statistics on the measured samples (``canon_kept``: the
    corpus positions in canonical order; ``cidx``: the inverse, -1 elsewhere;
    ``outputs``: the per-sample outputs, whose unmatched and annotation counts it takes)."""
    S_m = len(canon_kept)
    none = np.zeros(0, np.intp)
    pid = between.pid
    K = len(chance.i)
    return _Engine(
        S_m=S_m,
        dw=within.distance, sw=cidx[within.sample] if len(within.sample) else none,
        db=between.distance, sa=cidx[chance.i[pid]] if len(pid) else none,
        sb=cidx[chance.j[pid]] if len(pid) else none,
        mb=chance.mult[pid].astype(np.float64) if len(pid) else np.zeros(0),
        U_s=outputs["sample_n_unmatched"][canon_kept].astype(np.float64),
        A_s=outputs["sample_n_annotations"][canon_kept].astype(np.float64),
        pa=cidx[chance.i] if K else none, pb=cidx[chance.j] if K else none,
        pm=chance.mult.astype(np.float64), U_k=between.unmatched.astype(np.float64),
        A_k=(between.n + between.m).astype(np.float64),
        P_s=labels.pairs[canon_kept], D_s=labels.differ[canon_kept], Nsc=labels.classes[canon_kept], p=p,
    )


def _undefined_reasons(R: int, pv: dict, engine: _Engine, n_within_pairs: int, n_w: int, n_b: int,
                       chance: _ChanceSample, any_skipped: bool, max_pairs: int, t: float) -> dict[str, str]:
    """Why each headline statistic is NaN (``""`` where it is defined)."""
    if R < 2:
        return {k: f"fewer than two raters ({R}): nothing to compare" for k in GeometryAgreementResult._STATS}
    why: dict[str, str] = {}
    no_pairs = (
        f"every sample with two raters needs more within-item comparisons than the pair budget "
        f"(max_pairs = {max_pairs}) and was skipped whole" if any_skipped
        else "no sample has two raters assigned: no within-item set pair")
    no_chance = "no between-item set pair: a chance baseline needs two measured samples with different raters"
    loc = ""
    if not n_within_pairs:
        loc = no_pairs
    elif n_w == 0:
        loc = f"no within-item matched pair: no two raters' annotations on a sample match at similarity >= {t:g}"
    elif chance.n_population == 0:
        loc = no_chance
    elif n_b == 0:
        loc = (f"no between-item matched pair: annotations of different samples never match at similarity "
               f">= {t:g}, so there is no chance distribution of matched distances at this threshold")
    for k in ("sigma", "distance_alpha", "ks", "ks_greater", "ks_less"):
        why[k] = loc
    if not loc and not pv["mean_between"] > 0:
        why["distance_alpha"] = ("every between-item matched pair has distance 0 (identical across samples): "
                                 "no variation to correct against")
    det = ""
    if not n_within_pairs:
        det = no_pairs
    elif not np.nansum(engine.A_s) > 0:
        det = "no annotation in any within-item set pair: every assigned rater drew nothing"
    elif len(chance.i) == 0:
        det = no_chance
    elif not (pv["U_e"] > 0):
        det = ("every between-item set pair matches completely at this threshold: finding these objects "
               "cannot be told apart from chance (no variation to correct against)")
    why["detection_alpha"] = det
    cls = ""
    if n_w == 0:
        cls = "no within-item matched pair: no labels to compare"
    elif not np.isfinite(pv["classification_alpha"]):
        cls = "no variation: every label of a matched pair is the same class (D_e = 0)"
    why["classification_alpha"] = cls
    return why


def _bootstrap_values(engine: _Engine, bootstrap: int | None, seed: int, S_m: int) -> dict[str, np.ndarray]:
    """Every statistic on ``bootstrap`` resamples of the measured samples
    (resample ``r`` from the seed sequence ``(seed, _TAG_BOOT, r)``)."""
    if bootstrap is None or S_m == 0:
        return {}
    vals = {k: np.empty(bootstrap) for k in GeometryAgreementResult._STATS}
    ch = engine.chunk_cols()
    for b0 in range(0, bootstrap, ch):
        b1 = min(bootstrap, b0 + ch)
        Wt = np.empty((S_m, b1 - b0))
        for r in range(b0, b1):
            rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, _TAG_BOOT, r]))
            Wt[:, r - b0] = np.bincount(rng.integers(0, S_m, size=S_m), minlength=S_m)
        res = engine.compute(Wt)
        for k in vals:
            vals[k][b0:b1] = res[k]
    return vals


def _estimate(v: float, reason: str, boot: np.ndarray | None, bootstrap: int | None, S_m: int,
              confidence: float) -> Estimate:
    """The point estimate ``v`` with its percentile interval from ``boot``."""
    if not np.isfinite(v):
        return Estimate(float("nan"), float("nan"), float("nan"), reason or "undefined", 0)
    if bootstrap is None:
        return Estimate(v, float("nan"), float("nan"), "", 0)
    if S_m == 0:
        return Estimate(v, float("nan"), float("nan"), "no measured sample to resample", 0)
    x = boot[np.isfinite(boot)]
    if len(x) < 2:
        return Estimate(v, float("nan"), float("nan"),
                        f"interval undefined: the statistic is defined in {len(x)} of {bootstrap} resamples", len(x))
    lo_q, hi_q = (1.0 - confidence) / 2.0, 1.0 - (1.0 - confidence) / 2.0
    q = np.quantile(x, [lo_q, hi_q])
    return Estimate(v, float(q[0]), float(q[1]), "", int(len(x)))


def _ks_pvalues(w: np.ndarray, b: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """scipy's ``ks_2samp`` p-values, two-sided and ``"greater"`` (descriptive)."""
    if not (len(w) and len(b)):
        return float("nan"), float("nan")
    full = np.repeat(b, weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # exact -> asymptotic switch
        return (float(stats.ks_2samp(w, full, alternative="two-sided").pvalue),
                float(stats.ks_2samp(w, full, alternative="greater").pvalue))


def geometry_agreement(
    data,
    distance: str = "giou",
    threshold: float = 0.5,
    bootstrap: int | None = 1000,
    max_pairs: int = 200_000,
    seed: int = 0,
    confidence: float = 0.95,
    sigma_p: float = 0.05,
    sigmas: np.ndarray | None = None,
    stack: bool = True,
) -> GeometryAgreementResult:
    r"""Chance-corrected localisation, detection and classification agreement.

    Within-item set pairs (same sample, two raters) and between-item set pairs
    (different samples, two raters) are compared by the same threshold
    matching on similarity ``s`` (``s >= threshold``; matched distance
    ``d = 1 - s``), and the statistics of the module docstring are reported
    with bootstrap percentile intervals over samples:

    * ``sigma = #{w in W : w < q_p(B)} / |W|`` (Braylan et al.; ``q_p`` the
      type-7 quantile at ``p = sigma_p``), in ``[0, 1]``, about ``p`` at chance;
    * ``distance_alpha = 1 - mean(W) / mean(B)``, at most 1, 0 at chance;
    * KS ``sup |F_W - F_B|`` and one-sided ``sup (F_W - F_B)``,
      ``sup (F_B - F_W)``, in ``[0, 1]``;
    * ``detection_alpha = 1 - U_o / U_e`` over the shares of unmatched
      annotations within / between, at most 1 (1 when every rater finds every
      object, about 0 for unrelated samples);
    * ``classification_alpha``: nominal α over the labels of matched pairs.

    Distances (``distance``), ``d = 1 - s`` for the similarity ``s`` of
    :func:`agreement.similarity.similarity_matrix`:

    * ``"giou"`` (default): ``d = (1 - GIoU) / 2`` of the boxes, so the
      default ``threshold = 0.5`` matches boxes with ``GIoU >= 0``;
    * ``"iou"``: ``d = 1 - IoU`` of the boxes;
    * ``"centroid"``: box-centre distance over the image diagonal;
    * ``"polygon_iou"``, ``"polygon_giou"``: the same on polygons;
    * ``"mask_iou"``: ``1 -`` pixel IoU of instance masks (or rasterised
      polygons);
    * ``"oks"``: ``1 -`` symmetric object keypoint similarity (``sigmas``);
      objects of different images almost never reach OKS 0.5, so at the
      default threshold the chance distribution is empty (σ NaN, with that
      reason): use a low threshold such as 0 for keypoints;
    * ``"cuboid_iou"``: ``1 -`` exact volumetric IoU of 3D cuboids.

    For a between-item pair the image frame is that of the first set's
    sample (the convention of :mod:`agreement.similarity`).

    Args:
        data: a :class:`agreement.data.MultiRaterAnnotations`.
        distance: one of :data:`DISTANCES`.
        threshold: matching threshold on the similarity, in ``[0, 1]``
            (0 matches as many pairs as possible whatever their similarity).
        bootstrap: number of resamples (``>= 2``), or ``None`` for no
            intervals.
        max_pairs: the pair budget, in comparisons (``max(1, n m)`` for sets
            of ``n`` and ``m`` annotations): at most this many between-item
            comparisons for the chance sample (exact when the population
            costs no more); a sample whose within-item measurement alone
            needs more is skipped whole and listed in ``skipped_samples``
            (module docstring). Positive integer.
        seed: seed of the chance draws and the resamples.
        confidence: level of the percentile intervals, in ``(0, 1)``.
        sigma_p: the chance percentile of σ (Braylan et al.: 0.05).
        sigmas: per-keypoint σ for ``"oks"`` (default: COCO's 17 person
            keypoints).
        stack: compute many small box-similarity blocks in one call (same
            numbers, faster); ``False`` calls ``similarity_matrix`` per block.

    Returns:
        :class:`GeometryAgreementResult`; undefined values are NaN with a
        reason.

    Raises:
        ValueError: bad parameters (e.g. ``bootstrap < 2``); annotations
            lacking the geometry of ``distance`` (named, by
            :func:`agreement.similarity.check_similarity`); or
            :class:`agreement.validation.AnnotationError` naming the sample and
            rater of a box with NaN/infinite coordinates or a negative size.

    References:
        Braylan, Alonso & Lease, WWW 2022 (σ, distance α, KS); Krippendorff
        2011 (α); Efron & Tibshirani 1993 (percentile bootstrap).
    """
    _check_params(distance, threshold, bootstrap, max_pairs, seed, confidence, sigma_p)
    shard = geometry_shard(data, distance, threshold, max_pairs, sigmas=sigmas, stack=stack)
    return merge_geometry_shards([shard], lambda idx: (data, idx), distance=distance, threshold=threshold,
                                 bootstrap=bootstrap, max_pairs=max_pairs, seed=seed, confidence=confidence,
                                 sigma_p=sigma_p, sigmas=sigmas, stack=stack, checked=True)


@dataclass(frozen=True, eq=False)
class GeometryShard:
    """The within-item measurement of one shard of a corpus (:func:`geometry_shard`), in the shard's
    sample order, to be merged with the other shards (:func:`merge_geometry_shards`).

    Everything here depends on the shard's own samples only: the budget (a
    property of each sample), the threshold matching of each set pair, the
    per-sample and per-row outputs, and the sums the statistics need: per
    rater pair (``pair_sums``), per sample (``within``, ``labels``) and per
    matched pair (its distance and sample), never per set pair or per label
    once the rows are written (:meth:`without_rows`). The chance baseline,
    which pairs samples of different shards, is drawn at the merge.
    """

    sample_ids: np.ndarray
    raters: tuple
    cells: "_Cells"
    pair_sums: _PairSums
    within: _WithinSums
    labels: _LabelCounts
    keep: np.ndarray
    skipped: np.ndarray
    cost_s: np.ndarray
    skipped_samples: tuple
    outputs: dict
    n_rows: int
    similarity_report: dict
    has_rows: bool = True

    def without_rows(self) -> "GeometryShard":
        """The shard without its per-row outputs (written back already: the merge does not need them)."""
        outputs = {k: v for k, v in self.outputs.items() if not k.startswith("row_")}
        within = replace(self.within, rows=np.zeros((0, 2), np.intp))
        return replace(self, outputs=outputs, within=within, has_rows=False)


def geometry_shard(
    data,
    distance: str = "giou",
    threshold: float = 0.5,
    max_pairs: int = 200_000,
    sigmas: np.ndarray | None = None,
    stack: bool = True,
) -> GeometryShard:
    """The within-item part of :func:`geometry_agreement` on one shard of a corpus.

    Shards of one corpus must share raters and class vocabulary
    (``data.classes``). Parameters as in :func:`geometry_agreement`.
    """
    t, _, max_pairs, _, _, _ = _check_params(distance, threshold, None, max_pairs, 0, 0.5, 0.05)
    _check_data(data, distance)
    report = check_similarity(distance, data, sigmas=sigmas)
    counts = data.counts().astype(np.int64)

    def sim_fn(rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        return similarity_matrix(distance, data, rows_a, rows_b, sigmas=sigmas)

    stack_fn = _stacker(distance, data) if stack else None
    all_pairs = _within_set_pairs(data, counts)
    budget = _plan_budget(data, all_pairs, max_pairs)
    pairs = all_pairs.select(budget.keep[all_pairs.s])
    within = _match_within(data, pairs, sim_fn, stack_fn, t)
    outputs = _per_sample_outputs(data, pairs, within, budget, max_pairs, t)
    sums = _WithinSums(within.distance, within.sample.astype(np.int32), within.rows)
    return GeometryShard(
        sample_ids=np.asarray(data.sample_ids, dtype=object), raters=tuple(data.raters), cells=_Cells.of(data),
        pair_sums=_PairSums.of(pairs, len(data.raters)), within=sums, labels=_LabelCounts.of(data, within),
        keep=budget.keep,
        skipped=budget.skipped, cost_s=budget.cost_s, skipped_samples=_skipped_records(data, budget, counts),
        outputs=outputs, n_rows=len(data), similarity_report=report,
    )


def _concat_shards(shards: Sequence[GeometryShard]):
    """One :class:`GeometryShard` of the whole corpus from its shards (sample and row indices offset)."""
    if len(shards) == 1:
        return shards[0]
    first = shards[0]
    for sh in shards[1:]:
        if sh.raters != first.raters or sh.labels.n_classes != first.labels.n_classes:
            raise ValueError("geometry shards of one corpus must share raters and class vocabulary")
    so = np.cumsum([0] + [len(sh.sample_ids) for sh in shards]).tolist()
    ro = np.cumsum([0] + [sh.n_rows for sh in shards]).tolist()
    cat = np.concatenate
    R = len(first.raters)
    cells = _Cells(cat([sh.cells.s + o for sh, o in zip(shards, so)]), cat([sh.cells.r for sh in shards]),
                   cat([sh.cells.n for sh in shards]), R)
    has_rows = all(sh.has_rows for sh in shards)
    rows = (cat([sh.within.rows + o for sh, o in zip(shards, ro)]) if has_rows else np.zeros((0, 2), np.intp))
    within = _WithinSums(cat([sh.within.distance for sh in shards]),
                         cat([sh.within.sample + np.int32(o) for sh, o in zip(shards, so)]), rows)
    outputs = {}
    for k, v in first.outputs.items():
        parts = [sh.outputs[k] for sh in shards]
        outputs[k] = tuple(x for part in parts for x in part) if isinstance(v, tuple) else cat(parts)
    report = dict(first.similarity_report)
    report["repaired_polygons"] = sum(int(sh.similarity_report.get("repaired_polygons", 0)) for sh in shards)
    return GeometryShard(
        sample_ids=cat([sh.sample_ids for sh in shards]), raters=first.raters, cells=cells,
        pair_sums=_PairSums.merge([sh.pair_sums for sh in shards]), within=within,
        labels=_LabelCounts.stack([sh.labels for sh in shards]), keep=cat([sh.keep for sh in shards]),
        skipped=cat([sh.skipped for sh in shards]), cost_s=cat([sh.cost_s for sh in shards]),
        skipped_samples=_canonical_records([r for sh in shards for r in sh.skipped_samples]),
        outputs=outputs, n_rows=int(ro[-1]), similarity_report=report, has_rows=has_rows,
    )


def _canonical_records(records: list) -> tuple:
    """Skipped-sample records in ``str(sample_id)`` order."""
    return tuple(sorted(records, key=lambda rec: str(rec["sample_id"])))


def merge_geometry_shards(
    shards: Sequence[GeometryShard],
    read_samples,
    distance: str = "giou",
    threshold: float = 0.5,
    bootstrap: int | None = 1000,
    max_pairs: int = 200_000,
    seed: int = 0,
    confidence: float = 0.95,
    sigma_p: float = 0.05,
    sigmas: np.ndarray | None = None,
    stack: bool = True,
    checked: bool = False,
) -> GeometryAgreementResult:
    """:func:`geometry_agreement` of a corpus from the :func:`geometry_shard` of its shards.

    The chance sample is drawn on the whole corpus (its strata need every
    rater's measured samples and set sizes), then its sets are read back:
    ``read_samples(idx)`` gets the corpus positions (in the order of the
    shards' samples, increasing) of the samples the chance sample uses and
    returns ``(corpus, rows)``: a :class:`agreement.data.MultiRaterAnnotations`
    holding them and their sample indices in it. The chance sample is bounded
    by ``max_pairs`` comparisons, so this second read is small. The numbers
    are those of one shard of the whole corpus in the same sample order,
    bit for bit.

    Per-row outputs (``row_distance``, ``row_n_matched``, ``pair_rows``) are
    merged only when every shard kept them (:meth:`GeometryShard.without_rows`);
    otherwise they are empty.
    """
    t, bootstrap, max_pairs, seed, confidence, p = _check_params(
        distance, threshold, bootstrap, max_pairs, seed, confidence, sigma_p)
    if not shards:
        raise ValueError("merge_geometry_shards needs at least one shard")
    sh = _concat_shards(shards)
    S, R = len(sh.sample_ids), len(sh.raters)

    # Between-item: the chance sample, its sets read back, their matching.
    canon = canonical_sample_order(sh.sample_ids)
    canon_kept = canon[sh.keep[canon]]
    cidx = np.full(S, -1, dtype=np.int32 if S < 2**31 else np.int64)
    cidx[canon_kept] = np.arange(len(canon_kept))
    strata = _chance_strata(sh.raters, sh.cells, sh.pair_sums, canon_kept, S)
    chance = _chance_set_pairs(strata, sh.cells, max_pairs, seed)
    between = _between_of(chance, read_samples, distance, t, sigmas, stack, checked)

    # Statistics, reasons, intervals.
    S_m = len(canon_kept)
    within, outputs, n_set_pairs = sh.within, sh.outputs, sh.pair_sums.n_set_pairs
    engine = _make_engine(within, outputs, sh.labels, chance, between, cidx, canon_kept, p)
    pv = {k: float(v[0]) for k, v in engine.compute(np.ones((S_m, 1))).items()}
    b_weights = chance.mult[between.pid] if len(between.pid) else np.zeros(0, np.int64)
    n_w, n_b = len(within.distance), int(b_weights.sum())
    why = _undefined_reasons(R, pv, engine, n_set_pairs, n_w, n_b, chance, bool(sh.skipped.any()), max_pairs, t)
    boot = _bootstrap_values(engine, bootstrap, seed, S_m)
    del engine  # its sorted copies are not needed for the p-values (which sort again): lower peak memory
    est = {k: _estimate(pv[k], why.get(k, ""), boot.get(k), bootstrap, S_m, confidence)
           for k in GeometryAgreementResult._STATS}
    ks_p, ks_gp = _ks_pvalues(within.distance, between.distance, b_weights)
    empty_rows = {"row_distance": np.zeros(0), "row_n_matched": np.zeros(0, np.int64)}
    return GeometryAgreementResult(
        **est,
        mean_within=pv["mean_within"], mean_between=pv["mean_between"], between_quantile=pv["q"],
        ks_pvalue=ks_p, ks_greater_pvalue=ks_gp, unmatched_within=pv["U_o"], unmatched_between=pv["U_e"],
        n_within=n_w, n_between=n_b, n_within_set_pairs=n_set_pairs, n_between_set_pairs=len(chance.i),
        between_draws=chance.draws, n_between_population=chance.n_population, between_exact=chance.exact,
        n_comparisons=sh.pair_sums.n_comparisons, n_between_comparisons=between.comparisons,
        truncated=bool(sh.skipped.any()), n_samples=S,
        n_samples_measured=int(outputs["sample_measured"].sum()), n_samples_skipped=int(sh.skipped.sum()),
        skipped_samples=sh.skipped_samples, sample_comparisons=sh.cost_s,
        sample_skipped=sh.skipped, **{**empty_rows, **outputs}, pair_rows=within.rows, pair_distance=within.distance,
        between_distances=between.distance, between_weights=b_weights,
        distance=distance, threshold=t, bootstrap=bootstrap, max_pairs=max_pairs, seed=seed,
        confidence=confidence, sigma_p=p, similarity_report=sh.similarity_report,
    )


def _between_of(chance: _ChanceSample, read_samples, distance: str, t: float, sigmas, stack: bool,
                checked: bool) -> _BetweenMatch:
    """The matching of the chance sample, on the corpus ``read_samples`` gives back for its samples."""
    used = unique_sorted(np.r_[chance.i, chance.j].astype(np.int64))
    data, rows = read_samples(used)
    rows = np.asarray(rows, dtype=np.intp)
    if not checked:
        check_similarity(distance, data, sigmas=sigmas)
    local = replace(chance, i=rows[np.searchsorted(used, chance.i)], j=rows[np.searchsorted(used, chance.j)])

    def sim_fn(rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        return similarity_matrix(distance, data, rows_a, rows_b, sigmas=sigmas)

    return _match_between(data, data.counts().astype(np.int64), local, sim_fn,
                          _stacker(distance, data) if stack else None, t)
