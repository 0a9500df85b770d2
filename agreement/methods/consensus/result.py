"""Results of a consensus: per unit, per annotation, per sample and per rater.

:class:`ConsensusResult` is what :func:`agreement.methods.consensus.consensus`
returns, whatever the method; :class:`RaterReport` is item 3 of the issue,
the per-rater report to send to a labelling vendor; :class:`ConsensusModel`
the EM's fitted parameters (:mod:`agreement.methods.consensus.em`).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.core.kinds import column_kind, is_column

__all__ = ["ConsensusModel", "RaterReport", "ConsensusResult", "NOTHING_LABELLED", "NO_TWO_RATERS"]

#: Why the headline numbers are NaN when no rater drew anything.
NOTHING_LABELLED = "no rater labelled anything: there is no label to agree on"
#: Why the agreement is NaN when no sample has two raters.
NO_TWO_RATERS = ("no sample has two raters assigned: the raters never meet, so nothing is agreed or disagreed; "
                 "each consensus label is one rater's label")


@dataclass(frozen=True)
class ConsensusModel:
    """Fitted parameters of the consensus EM (:mod:`agreement.methods.consensus.em`), reusable on other samples.

    Attributes:
        raters: the raters' names.
        classes: class names; codes index them.
        sensitivity: ``(R,)`` ``se_r`` in ``[0, 1]``: probability of drawing an object that exists (NaN: no data).
        false_positive_rate: ``(R,)`` ``λ_r >= 0``: spurious labels per assigned sample (NaN: never assigned).
        object_rate: ``μ >= 0``: real objects per sample (seen or not).
        coincidence: ``ρ`` in ``(0, 1)``: chance that two unrelated labels match at ``τ``.
        class_prior: ``(C,)`` prior probability of each class, summing to 1.
        confusion: ``(R, C, C)`` ``π_r[y, c] = P(rater r says c | true class y)``, rows sum to 1.
        localisation_noise: ``(R,)`` ``σ_r >= 0``: geometry noise relative to object size, a
            Gaussian-consistent robust scale (NaN: no rater-pair data).
        geometry: the label kind the model was fitted on (``"boxes"``, ``"masks"``, ...).
        smoothing: the additive smoothing of the rates' and confusion counts.
        tail: ``ν`` of the Student-t fusion weights (``inf``: Gaussian, plain precision weights).
        rate_prior: ``κ >= 0``, strength of the rates' prior toward the pooled rates, in samples.
        tau: the correspondence threshold the model was fitted at (``tau="auto"`` reuses it).
    """

    raters: tuple
    classes: tuple
    sensitivity: np.ndarray
    false_positive_rate: np.ndarray
    object_rate: float
    coincidence: float
    class_prior: np.ndarray
    confusion: np.ndarray = field(repr=False)
    localisation_noise: np.ndarray = field(default_factory=lambda: np.empty(0))  # every fit gives (R,)
    geometry: str = "boxes"
    smoothing: float = 1.0
    tail: float = float("inf")
    rate_prior: float = 0.0  #: ``κ``, strength of the rates' prior toward the pooled rates, in samples
    tau: float = float("nan")  #: the correspondence threshold the model was fitted at (``tau="auto"`` reuses it)

    def as_dict(self) -> dict[str, Any]:
        """Plain lists (NaN kept), for JSON."""
        return {
            "raters": list(self.raters), "classes": [str(c) for c in self.classes],
            "sensitivity": self.sensitivity.tolist(), "false_positive_rate": self.false_positive_rate.tolist(),
            "object_rate": float(self.object_rate), "coincidence": float(self.coincidence),
            "class_prior": self.class_prior.tolist(), "confusion": self.confusion.tolist(),
            "localisation_noise": self.localisation_noise.tolist(), "geometry": self.geometry,
            "smoothing": float(self.smoothing), "tail": float(self.tail), "rate_prior": float(self.rate_prior),
            "tau": float(self.tau),
        }


@dataclass(frozen=True)
class RaterReport:
    """Per rater (arrays of length R, in ``raters`` order).

    Attributes:
        raters: the raters' names.
        sensitivity: probability of drawing an object that exists, in ``[0, 1]``. EM: the
            fitted ``se_r``; majority and WBF: the share of the consensus labels
            on the rater's samples that the rater drew. NaN: no object on any of
            its samples.
        false_positive_rate: spurious labels per assigned sample, ``>= 0``. EM: the fitted
            ``λ_r``; otherwise labels in no consensus label per assigned sample.
        precision: share of the rater's labels that are real objects, in ``[0, 1]``.
            EM: mean existence posterior of the units of its labels; otherwise
            the share of its labels in a consensus label. NaN: no labels.
        localisation_error: mean ``1 - similarity`` of its labels in consensus labels to the
            consensus geometry (box IoU; pixel IoU for masks and polygons; OKS
            for keypoints; cuboid IoU in 3D), in ``[0, 1]``. NaN: none.
        localisation_noise: EM: the fitted ``σ_r`` (geometry noise relative to object size); NaN otherwise.
        agreement: share of its labels that agree with the consensus (same kept unit, same class), in ``[0, 1]``.
        confusion: ``(R, C, C)``, ``[r, y, c]``: probability that rater ``r`` says ``c`` for an object
            of class ``y``. EM: the fitted Dawid-Skene matrices; otherwise the
            row-normalised counts of (consensus class, rater's class) over its
            labels in consensus labels (NaN rows: no such object).
        classes: class names; the confusion matrices' codes index them.
        n_labels: ``(R,)`` int, annotations of the rater.
        n_samples: ``(R,)`` int, samples the rater was assigned (explicit absences included).
        pixel_sensitivity: masks and polygons (EM): the rater's STAPLE pixel sensitivity; else None.
        pixel_specificity: masks and polygons (EM): the rater's STAPLE pixel specificity; else None.
    """

    raters: tuple
    sensitivity: np.ndarray
    false_positive_rate: np.ndarray
    precision: np.ndarray
    localisation_error: np.ndarray
    localisation_noise: np.ndarray
    agreement: np.ndarray
    confusion: np.ndarray = field(repr=False)
    classes: tuple = ()
    n_labels: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # every report gives (R,)
    n_samples: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    pixel_sensitivity: np.ndarray | None = None
    pixel_specificity: np.ndarray | None = None

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """``{rater: {field: value}}`` with plain numbers (NaN kept) and the confusion matrix as
        ``{true class: {given class: probability}}`` over the classes the rater saw or used."""
        out: dict[str, dict[str, Any]] = {}
        for r, name in enumerate(self.raters):
            rows: dict[str, dict[str, float]] = {}
            conf = self.confusion[r]
            used: np.ndarray | list[int] = np.flatnonzero(np.isfinite(conf).all(axis=1) & (conf.max(axis=1) > 0)) if conf.size else []
            for y in used:
                nz = np.flatnonzero(conf[y] >= 1e-3)
                rows[str(self.classes[y])] = {str(self.classes[c]): float(conf[y, c]) for c in nz}
            entry: dict[str, Any] = {k: float(getattr(self, k)[r]) for k in (
                "sensitivity", "false_positive_rate", "precision", "localisation_error", "localisation_noise",
                "agreement")}
            entry.update(n_labels=int(self.n_labels[r]), n_samples=int(self.n_samples[r]), confusion=rows)
            if self.pixel_sensitivity is not None and self.pixel_specificity is not None:
                entry.update(pixel_sensitivity=float(self.pixel_sensitivity[r]),
                             pixel_specificity=float(self.pixel_specificity[r]))
            out[name] = entry
        return out


@dataclass(frozen=True, eq=False)
class ConsensusResult:
    """A consensus of a multi-rater corpus.

    Per **unit** (a candidate object: annotations judged to be one object;
    ``U`` units, numbered sample by sample):

    * ``unit_sample`` (U,): its sample;
    * ``confidence`` (U,): EM: the posterior probability that the object
      exists; majority: the share of assigned raters who drew it; WBF: the
      fused score (members' mean score × min(raters, members) / raters);
    * ``label`` (U,) class names, ``label_code`` (U,), ``class_probability``
      (U,): the top class and its posterior (EM) or vote share;
      ``second_label``/``second_probability``: the runner-up (``None``, 0);
    * ``boxes`` (U, 4) relative ``[x, y, w, h]`` (NaN for 3D); ``masks``,
      ``polygons``, ``keypoints`` (U, K, 2), ``cuboids`` (U, 9) when the
      geometry is of that type (else None); ``fused``: a column declared with a fusion hook
      (:attr:`agreement.core.kinds.ColumnKind.fusion`), by name, one entry per unit; :attr:`columns` all
      of them by name;
    * ``member_rows`` and ``member_offsets`` (U + 1): the annotation rows
      fused into unit ``u`` are ``member_rows[member_offsets[u]:member_offsets[u + 1]]``;
    * ``support`` (U,) raters who drew it, ``n_assigned`` (U,) raters assigned to its sample;
    * ``is_consensus`` (U,): kept as a consensus label (``confidence >=
      min_confidence``; majority: ``>= quorum``); ``consensus_index`` (U,):
      its index among the consensus labels, ``-1`` if not kept;
    * ``review`` (U,): a person should look: the confidence is inside
      ``review_band`` ``[lo, hi)``, or the unit's confidence is at least
      ``lo`` and its class probability below ``hi``; only consensus labels
      (kept units) are flagged.

    Per **annotation row** (N, the rows of the input corpus): ``row_unit``
    (``-1``: in no unit), ``row_consensus`` (index of its consensus label or
    ``-1``), ``row_agrees`` (its unit is a consensus label of its class),
    ``row_similarity`` (to the consensus geometry; NaN outside a unit).

    Per **sample** (S): ``sample_n_consensus``, ``sample_n_review`` (consensus
    labels flagged: ``review`` is set on kept units only), ``sample_min_confidence``
    (lowest label confidence, ``confidence * class_probability``, of its
    consensus labels, the order of the review queue; NaN without any).

    Per **rater**: ``report`` (:class:`RaterReport`). ``model`` holds the
    EM's fitted parameters (:class:`ConsensusModel`;
    None for the other methods), reusable with ``consensus(..., model=...)``.
    """

    method: str
    geometry: str
    raters: tuple
    classes: tuple
    sample_ids: np.ndarray
    unit_sample: np.ndarray
    confidence: np.ndarray
    label_code: np.ndarray
    class_probability: np.ndarray
    second_code: np.ndarray
    second_probability: np.ndarray
    boxes: np.ndarray
    member_rows: np.ndarray
    member_offsets: np.ndarray
    support: np.ndarray
    n_assigned: np.ndarray
    is_consensus: np.ndarray
    consensus_index: np.ndarray
    review: np.ndarray
    row_unit: np.ndarray
    row_consensus: np.ndarray
    row_agrees: np.ndarray
    row_similarity: np.ndarray
    sample_n_consensus: np.ndarray
    sample_n_review: np.ndarray
    sample_min_confidence: np.ndarray
    report: RaterReport
    params: dict
    sample_assigned: np.ndarray | None = field(default=None, repr=False)
    image_sizes: np.ndarray | None = field(default=None, repr=False)
    sample_names: np.ndarray | None = field(default=None, repr=False)
    masks: list | None = None
    polygons: list | None = None
    keypoints: np.ndarray | None = None
    cuboids: np.ndarray | None = None
    fused: dict[str, Any] = field(default_factory=dict)
    model: Any = None
    n_iter: int = 0
    converged: bool = True
    sample_n_raters: np.ndarray | None = field(default=None, repr=False)
    rater_meets: np.ndarray | None = field(default=None, repr=False)
    row_sample: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_units(self) -> int:
        """The number of units U (candidate objects), kept or not."""
        return len(self.unit_sample)

    @property
    def columns(self) -> dict[str, Any]:
        """The fused geometry column of the units, by its name (:mod:`agreement.core.kinds`), one entry per unit:
        ``{}`` for plain boxes; the built-in geometry's (``masks``, ``polygons``, ``keypoints``, ``cuboids``)
        or a declared column's (:attr:`fused`)."""
        out = dict(self.fused)
        own = getattr(self, self.geometry, None) if is_column(self.geometry) else None
        if own is not None and self.geometry not in out:
            out[self.geometry] = own
        return out

    @property
    def warning(self) -> str:
        """Why the requested method's result was replaced (``""``: it was not): an EM fit that degenerated
        is replaced by majority vote (:func:`agreement.methods.consensus.api.em_degeneracy`)."""
        return str(self.params.get("warning", ""))

    @property
    def n_consensus(self) -> int:
        """The number of consensus labels (kept units), in ``[0, U]``."""
        return int(self.is_consensus.sum())

    @property
    def label(self) -> np.ndarray:
        """Top class name of every unit."""
        return _names(self.classes, self.label_code)

    @property
    def second_label(self) -> np.ndarray:
        """Runner-up class name of every unit (``None`` where there is none)."""
        return _names(self.classes, self.second_code)

    def members(self, u: int) -> np.ndarray:
        """Annotation rows fused into unit ``u``.

        Args:
            u: the unit, in ``[0, n_units)``.

        Returns:
            int rows of the input corpus.
        """
        return self.member_rows[self.member_offsets[u]:self.member_offsets[u + 1]]

    def _rows_met(self) -> np.ndarray:
        """``(N,)`` bool: the annotation is on a sample of two raters or more."""
        rated = self.sample_n_raters if self.sample_n_raters is not None else self.n_assigned_per_sample
        if self.row_sample is None:
            return np.ones(len(self.row_agrees), bool)
        return (rated >= 2)[np.asarray(self.row_sample, dtype=np.intp)]

    @property
    def agreement(self) -> float:
        """Share of the labels on samples of two raters or more that agree with the consensus (same kept
        unit, same class), in ``[0, 1]``; NaN with :attr:`agreement_reason` when there is no such label."""
        rows = self._rows_met()
        return float(self.row_agrees[rows].mean()) if rows.any() else float("nan")

    @property
    def agreement_reason(self) -> str:
        """Why :attr:`agreement` is NaN (``""`` when it is defined)."""
        if self._rows_met().any():
            return ""
        if not len(self.row_agrees):
            return NOTHING_LABELLED
        rated = self.sample_n_raters if self.sample_n_raters is not None else self.n_assigned_per_sample
        return NO_TWO_RATERS if not (rated >= 2).any() else "no label on a sample of two raters or more"

    @property
    def mean_confidence(self) -> float:
        """Mean confidence of the consensus labels where defined (NaN with :attr:`mean_confidence_reason`)."""
        conf = self.confidence[self.is_consensus & np.isfinite(self.confidence)]
        return float(conf.mean()) if len(conf) else float("nan")

    @property
    def mean_confidence_reason(self) -> str:
        """Why :attr:`mean_confidence` is NaN (``""`` when it is defined)."""
        if np.isfinite(self.confidence[self.is_consensus]).any():
            return ""
        if not len(self.row_agrees):
            return "no rater labelled anything: no consensus label"
        if not self.is_consensus.any():
            return "no consensus label"
        return "every consensus label is one rater's, and its raters never meet another: no confidence"

    def summary(self) -> dict[str, Any]:
        """Headline numbers as a flat dict (the operator's ``ExecutionResult.result``); ``agreement`` and
        ``mean_confidence`` NaN with ``agreement_reason`` / ``mean_confidence_reason`` where undefined."""
        kept = self.is_consensus
        rated = self.sample_n_raters if self.sample_n_raters is not None else self.n_assigned_per_sample
        single = (rated < 2)[self.unit_sample] if len(self.unit_sample) else np.zeros(0, bool)
        return {
            "method": self.method, "geometry": self.geometry, "n_samples": int(len(self.sample_ids)),
            "n_units": int(self.n_units), "n_consensus": int(kept.sum()), "n_review": int(self.review.sum()),
            "n_review_samples": int((self.sample_n_review > 0).sum()),
            "n_single_rater": int((kept & single).sum()),
            "mean_confidence": self.mean_confidence, "mean_confidence_reason": self.mean_confidence_reason,
            "agreement": self.agreement, "agreement_reason": self.agreement_reason,
            "n_iter": int(self.n_iter), "converged": bool(self.converged),
            **{k: v for k, v in self.params.items() if isinstance(v, (int, float, str, bool))},
        }

    @property
    def n_assigned_per_sample(self) -> np.ndarray:
        """Raters assigned to each sample (from the units when the result does not carry it)."""
        out = np.zeros(len(self.sample_ids), dtype=np.int64)
        out[self.unit_sample] = self.n_assigned
        return out

    def to_annotations(self, name: str = "consensus") -> MultiRaterAnnotations:
        """The consensus labels as a one-rater corpus (assigned wherever a rater was).

        Keeps boxes, class names and the fused masks, polygons, keypoints, cuboids or declared column; label ids
        are ``None``.
        Useful to score the consensus like any rater (e.g. against a reference).

        Args:
            name: the one rater's name.

        Returns:
            The consensus labels as :class:`agreement.core.data.MultiRaterAnnotations`.
        """
        keep = np.flatnonzero(self.is_consensus)
        fused = {name: column_kind(name).take(value, keep) for name, value in self.fused.items()}
        return MultiRaterAnnotations(
            sample_ids=self.sample_ids, raters=(name,), assigned=np.asarray(self.sample_assigned)[:, None],
            boxes=self.boxes[keep], labels=self.label[keep], label_ids=np.full(len(keep), None, dtype=object),
            sample_index=self.unit_sample[keep], rater_index=np.zeros(len(keep), np.intp),
            image_sizes=self.image_sizes, sample_names=self.sample_names,
            polygons=[self.polygons[u] for u in keep] if self.polygons is not None else None,
            masks=[self.masks[u] for u in keep] if self.masks is not None else None,
            keypoints=self.keypoints[keep] if self.keypoints is not None else None,
            cuboids=self.cuboids[keep] if self.cuboids is not None else None, **fused,
        )


def _names(classes: tuple, codes: np.ndarray) -> np.ndarray:
    table = np.empty(len(classes) + 1, dtype=object)
    table[:-1] = list(classes)
    table[-1] = None
    return table[np.where(codes >= 0, codes, len(classes))]
