"""Results of :func:`agreement.methods.geometry_agreement.geometry_agreement`: a statistic with its bootstrap
percentile interval (:class:`Estimate`) and the corpus result (:class:`GeometryAgreementResult`).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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
        """Whether the point estimate is a number (not NaN)."""
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
    :func:`agreement.geometry.similarity.check_similarity`: e.g. repaired polygons).
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
