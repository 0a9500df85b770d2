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
the **threshold matching** of :func:`agreement.methods.ot.baselines.threshold_match`
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
Nominal Krippendorff's α (:mod:`agreement.core.krippendorff`) over the labels of
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

This module does not import FiftyOne.

References:
    A. Braylan, O. Alonso and M. Lease, "Measuring Annotator Agreement Generally
    across Complex Structured, Multi-object, and Free-text Annotation Tasks",
    The Web Conference (WWW) 2022, 1720-1730 (σ, distance-based α, KS).
    K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011.
    B. Efron and R. Tibshirani, "An Introduction to the Bootstrap", 1993
    (percentile intervals). R. J. Hyndman and Y. Fan, "Sample Quantiles in
    Statistical Packages", The American Statistician 50(4), 1996 (type 7).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
from scipy import stats

from agreement.core.arrays import unique_sorted
from agreement.core.strata import IMAGE_SIZE, chance_strata_of, stratum_ranks
from agreement.geometry.similarity import check_similarity, similarity_matrix
from agreement.methods.geometry_agreement.chance import (
    BetweenMatch,
    Cells,
    ChanceSample,
    chance_pair_strata,
    chance_set_pairs,
    match_between,
)
from agreement.methods.geometry_agreement.engine import Engine, make_engine
from agreement.methods.geometry_agreement.matching import stacker
from agreement.methods.geometry_agreement.params import DISTANCES, GeometryParams
from agreement.methods.geometry_agreement.result import Estimate, GeometryAgreementResult
from agreement.methods.geometry_agreement.shards import GeometryShard, concat_shards, geometry_shard

# re-exported: the tests build the chance strata from these
from agreement.methods.geometry_agreement.within import PairSums, within_set_pairs  # noqa: F401
from agreement.methods.ot.alpha_ot import canonical_sample_order

if TYPE_CHECKING:
    from agreement.core.data import MultiRaterAnnotations

__all__ = [
    "DISTANCES",
    "Estimate",
    "GeometryAgreementResult",
    "GeometryParams",
    "geometry_agreement",
    "GeometryShard",
    "geometry_shard",
    "merge_geometry_shards",
]

_TAG_BOOT = 0xB007


@dataclass(frozen=True)
class _MatchCounts:
    """How much was compared: within-item set pairs, within-item and between-item matched pairs (weighted),
    and whether a sample was skipped for the pair budget."""

    n_within_pairs: int
    n_within: int
    n_between: int
    any_skipped: bool


def _undefined_reasons(R: int, pv: dict, engine: Engine, counts: _MatchCounts, chance: ChanceSample,
                       params: GeometryParams) -> dict[str, str]:
    """Why each headline statistic is NaN (``""`` where it is defined)."""
    n_within_pairs, n_w, n_b, any_skipped = counts.n_within_pairs, counts.n_within, counts.n_between, counts.any_skipped
    max_pairs, t = params.max_pairs, params.threshold
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


def _bootstrap_values(engine: Engine, bootstrap: int | None, seed: int, S_m: int,
                      groups: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every statistic on ``bootstrap`` resamples of the measured samples
    (resample ``r`` from the seed sequence ``(seed, _TAG_BOOT, r)``); with
    ``groups`` (the group of each measured sample, e.g. its video), resamples
    of the groups, each drawn group bringing all its samples (a cluster
    bootstrap: samples of one group are not independent)."""
    if bootstrap is None or S_m == 0:
        return {}
    if groups is not None:
        _, g = np.unique(groups, return_inverse=True)
        g = g.reshape(-1)
        G = int(g.max()) + 1
    vals = {k: np.empty(bootstrap) for k in GeometryAgreementResult._STATS}
    ch = engine.chunk_cols()
    for b0 in range(0, bootstrap, ch):
        b1 = min(bootstrap, b0 + ch)
        Wt = np.empty((S_m, b1 - b0))
        for r in range(b0, b1):
            rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, _TAG_BOOT, r]))
            if groups is None:
                Wt[:, r - b0] = np.bincount(rng.integers(0, S_m, size=S_m), minlength=S_m)
            else:
                Wt[:, r - b0] = np.bincount(rng.integers(0, G, size=G), minlength=G)[g]
        res = engine.compute(Wt)
        for k in vals:
            vals[k][b0:b1] = res[k]
    return vals


def _estimate(v: float, reason: str, boot: np.ndarray | None, bootstrap: int | None, S_m: int,
              confidence: float) -> Estimate:
    """The point estimate ``v`` with its percentile interval from ``boot``."""
    if not np.isfinite(v):
        return Estimate(float("nan"), float("nan"), float("nan"), reason or "undefined", 0)
    if bootstrap is None or boot is None:
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
    """Scipy's ``ks_2samp`` p-values, two-sided and ``"greater"`` (descriptive)."""
    if not (len(w) and len(b)):
        return float("nan"), float("nan")
    full = np.repeat(b, weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # exact -> asymptotic switch
        return (float(stats.ks_2samp(w, full, alternative="two-sided").pvalue),
                float(stats.ks_2samp(w, full, alternative="greater").pvalue))


def geometry_agreement(
    data: MultiRaterAnnotations,
    *,
    distance: str = "giou",
    threshold: float = 0.5,
    bootstrap: int | None = 1000,
    max_pairs: int = 200_000,
    seed: int = 0,
    confidence: float = 0.95,
    sigma_p: float = 0.05,
    sigmas: np.ndarray | None = None,
    stack: bool = True,
    strata: np.ndarray | str | None = IMAGE_SIZE,
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
    :func:`agreement.geometry.similarity.similarity_matrix`:

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
    sample (the convention of :mod:`agreement.geometry.similarity`).

    Args:
        data: a :class:`agreement.core.data.MultiRaterAnnotations`.
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
        strata: which samples a between-item set pair may join, each stratum
            weighed by its share of the within-item set pairs
            (:func:`merge_geometry_shards`): ``"image_size"`` (default): images
            of comparable size (:func:`agreement.core.strata.chance_strata_of`;
            one stratum, the numbers without strata, when every image is
            within a factor 1.25 of the others or the sizes are unknown);
            ``(S,)`` integers: samples of the same stratum, e.g. clips of
            comparable length (:func:`agreement.geometry.temporal.length_strata`);
            ``None``: any two samples.

    Returns:
        :class:`GeometryAgreementResult`; undefined values are NaN with a
        reason.

    Raises:
        ValueError: bad parameters (e.g. ``bootstrap < 2``); annotations
            lacking the geometry of ``distance`` (named, by
            :func:`agreement.geometry.similarity.check_similarity`); or
            :class:`agreement.core.validation.AnnotationError` naming the sample and
            rater of a box with NaN/infinite coordinates or a negative size.

    References:
        Braylan, Alonso & Lease, WWW 2022 (σ, distance α, KS); Krippendorff
        2011 (α); Efron & Tibshirani 1993 (percentile bootstrap).
    """
    params = GeometryParams(distance=distance, threshold=threshold, bootstrap=bootstrap, max_pairs=max_pairs,
                            seed=seed, confidence=confidence, sigma_p=sigma_p, sigmas=sigmas, stack=stack).checked()
    shard = geometry_shard(data, params)
    return merge_geometry_shards([shard], lambda idx: (data, idx), params=params, checked=True,
                                 strata=chance_strata_of(data, strata=strata))


def merge_geometry_shards(
    shards: Sequence[GeometryShard],
    read_samples: Callable[[np.ndarray], tuple[MultiRaterAnnotations, Any]],
    *,
    params: GeometryParams | None = None,
    checked: bool = False,
    groups: np.ndarray | None = None,
    strata: np.ndarray | None = None,
    **options: Any,
) -> GeometryAgreementResult:
    """:func:`geometry_agreement` of a corpus from the :func:`geometry_shard` of its shards.

    ``params``: the parameters (:class:`GeometryParams`), or ``options``, its fields as keywords
    (``distance``, ``threshold``, ``bootstrap``, ``max_pairs``, ``seed``, ``confidence``, ``sigma_p``,
    ``sigmas``, ``stack``: as in :func:`geometry_agreement`). ``checked``: the annotations' geometry was
    checked already (skips :func:`agreement.geometry.similarity.check_similarity` on the chance sample).

    ``groups`` (one integer per corpus sample, optional): the between-item
    chance pairs join samples of *different* groups and the bootstrap
    resamples groups, e.g. frames of different videos (frames of one video
    are not independent items); ``None``: every sample is its own group.

    ``strata`` (one integer per corpus sample, optional): the between-item
    chance pairs join samples of the *same* stratum, e.g. images of comparable
    size or clips of comparable length
    (:func:`agreement.core.strata.corpus_strata`), and each
    stratum's between-item set pairs weigh, in total, its share of the
    within-item set pairs (module docstring); ``None``: one stratum.

    The chance sample is drawn on the whole corpus (its strata need every
    rater's measured samples and set sizes), then its sets are read back:
    ``read_samples(idx)`` gets the corpus positions (in the order of the
    shards' samples, increasing) of the samples the chance sample uses and
    returns ``(corpus, rows)``: a :class:`agreement.core.data.MultiRaterAnnotations`
    holding them and their sample indices in it. The chance sample is bounded
    by ``max_pairs`` comparisons, so this second read is small. The numbers
    are those of one shard of the whole corpus in the same sample order,
    bit for bit.

    Per-row outputs (``row_distance``, ``row_n_matched``, ``pair_rows``) are
    merged only when every shard kept them (:meth:`GeometryShard.without_rows`);
    otherwise they are empty.

    Returns:
        :class:`GeometryAgreementResult`, as :func:`geometry_agreement`.

    Raises:
        ValueError: bad parameters, or no shard.
    """
    params = GeometryParams.of(params, options)
    bootstrap, seed, confidence = params.bootstrap, params.seed, params.confidence
    if not shards:
        raise ValueError("merge_geometry_shards needs at least one shard")
    sh = concat_shards(shards)
    S, R = len(sh.sample_ids), len(sh.raters)

    # Between-item: the chance sample, its sets read back, their matching.
    canon = canonical_sample_order(sh.sample_ids)
    canon_kept = canon[sh.keep[canon]]
    cidx = np.full(S, -1, dtype=np.int32 if S < 2**31 else np.int64)
    cidx[canon_kept] = np.arange(len(canon_kept))
    chance_strata = chance_pair_strata(sh.raters, sh.cells, sh.pair_sums, canon_kept, S, strata)
    groups = None if groups is None else np.asarray(groups, dtype=np.int64)
    chance = chance_set_pairs(chance_strata, sh.cells, params.max_pairs, seed, groups)
    scale = _stratum_scale(chance, sh.cells, sh.keep, strata)
    between = _between_of(chance, read_samples, params, checked)

    # Statistics, reasons, intervals.
    S_m = len(canon_kept)
    within, outputs, n_set_pairs = sh.within, sh.outputs, sh.pair_sums.n_set_pairs
    engine = make_engine(within, outputs, sh.labels, chance, between, cidx=cidx, canon_kept=canon_kept,
                          p=params.sigma_p, scale=scale)
    pv = {k: float(v[0]) for k, v in engine.compute(np.ones((S_m, 1))).items()}
    b_weights = chance.mult[between.pid] if len(between.pid) else np.zeros(0, np.int64)
    n_w, n_b = len(within.distance), int(b_weights.sum())
    counts = _MatchCounts(n_within_pairs=n_set_pairs, n_within=n_w, n_between=n_b, any_skipped=bool(sh.skipped.any()))
    why = _undefined_reasons(R, pv, engine, counts, chance, params)
    boot = _bootstrap_values(engine, bootstrap, seed, S_m, None if groups is None else groups[canon_kept])
    del engine  # its sorted copies are not needed for the p-values (which sort again): lower peak memory
    est = {k: _estimate(pv[k], why.get(k, ""), boot.get(k), bootstrap, S_m, confidence)
           for k in GeometryAgreementResult._STATS}
    ks_p, ks_gp = _ks_pvalues(within.distance, between.distance, b_weights)
    empty_rows = {"row_distance": np.zeros(0), "row_n_matched": np.zeros(0, np.int64)}
    return GeometryAgreementResult(
        sigma=est["sigma"], distance_alpha=est["distance_alpha"], ks=est["ks"], ks_greater=est["ks_greater"],
        ks_less=est["ks_less"], detection_alpha=est["detection_alpha"],
        classification_alpha=est["classification_alpha"],
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
        distance=params.distance, threshold=params.threshold, bootstrap=bootstrap, max_pairs=params.max_pairs,
        seed=seed, confidence=confidence, sigma_p=params.sigma_p, similarity_report=sh.similarity_report,
    )


def _stratum_scale(chance: ChanceSample, cells: Cells, keep: np.ndarray,
                   strata: np.ndarray | None) -> np.ndarray | None:
    r"""The weight of every between-item set pair of the chance sample under length strata (``None``: one
    stratum, every set pair weighs its multiplicity).

    Under chance the within-item set pairs of stratum ``k`` are distributed like its between-item ones, so
    the chance expectation of a within-item statistic mixes the strata in the proportions ``V_k / V`` of
    the within-item set pairs (``V_k = sum_{i in k} m_i (m_i - 1) / 2`` over the measured samples, ``m_i``
    the raters assigned to ``i``); the chance sample has them in the proportions ``B_k / B`` of its set
    pairs (multiplicities), so each of its set pairs in ``k`` is weighed by
    ``rho_k = (V_k / V) / (B_k / B)`` (strata with between-item set pairs only).
    """
    if strata is None or not len(chance.i):
        return None
    k_of = stratum_ranks(strata, len(keep))
    K = int(k_of.max(initial=0)) + 1
    if K == 1:
        return None
    kept = keep[cells.s]
    m = np.bincount(cells.s[kept], minlength=len(keep)).astype(np.float64)
    V = np.bincount(k_of, m * (m - 1.0) / 2.0 * keep, K)
    Bk = np.bincount(k_of[chance.i], chance.mult.astype(np.float64), K)
    has = Bk > 0
    if not V[has].sum() > 0:
        return None
    rho = np.zeros(K)
    rho[has] = (V[has] / V[has].sum()) / (Bk[has] / Bk[has].sum())
    weights: np.ndarray = rho[k_of[chance.i]]
    return weights


def _between_of(chance: ChanceSample, read_samples: Callable[[np.ndarray], tuple[MultiRaterAnnotations, Any]],
                params: GeometryParams, checked: bool) -> BetweenMatch:
    """The matching of the chance sample, on the corpus ``read_samples`` gives back for its samples."""
    distance, sigmas = params.distance, params.sigmas
    used = unique_sorted(np.r_[chance.i, chance.j].astype(np.int64))
    data, rows = read_samples(used)
    rows = np.asarray(rows, dtype=np.intp)
    if not checked:
        check_similarity(distance, data, sigmas=sigmas)
    local = replace(chance, i=rows[np.searchsorted(used, chance.i)], j=rows[np.searchsorted(used, chance.j)])

    def sim_fn(rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        return similarity_matrix(distance, data, rows_a, rows_b, sigmas=sigmas,
                                 options=params.similarity_options)

    return match_between(data, data.counts().astype(np.int64), local, sim_fn,
                          stacker(distance, data) if params.stack else None, params.threshold)
