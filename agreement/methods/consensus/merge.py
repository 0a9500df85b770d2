r"""A consensus of a corpus computed in parts: its summary and rater report from each part's sums.

A large corpus is fitted on a window (its first samples) and the rest is computed in shards with the
window's fit fixed (``consensus(shard, model=...)``, the ``tau`` and ``rater_meets`` of the whole
corpus): every sample's consensus depends on the fit and on its own labels only. What the run reports
about the whole corpus is then made of sums over the parts (:class:`ConsensusStats`, :func:`part_stats`):

* counts (samples, units, consensus labels, labels to review, ...) add up;
* ``mean_confidence`` is :math:`\sum c / n` over the finite confidences of the consensus labels of every
  part, ``agreement`` :math:`\sum a / n` over the labels on samples of two raters or more;
* per rater, the fitted parameters (EM: sensitivity, false-positive rate, class confusion and
  localisation noise) are the window's model; precision, localisation error, agreement, labels and
  samples are sums over the parts (majority vote and WBF: the empirical rates against the consensus,
  from summed counts), with every estimate NaN for a rater who never meets another
  (:func:`agreement.methods.consensus.api.rater_meets` over the whole corpus).

For a corpus of one part the numbers are :meth:`agreement.methods.consensus.ConsensusResult.summary`'s and
its report's (up to the order of the floating-point sums).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from agreement.core.data import MultiRaterAnnotations, encode_classes
from agreement.methods.consensus.result import NO_TWO_RATERS, NOTHING_LABELLED, ConsensusResult, RaterReport

__all__ = ["ConsensusStats", "part_stats", "merged_summary", "merged_report"]

#: The summary keys that are counts over the samples (summed over the parts).
COUNTS = ("n_samples", "n_units", "n_consensus", "n_review", "n_review_samples", "n_single_rater")


@dataclass
class ConsensusStats:
    """Sums over one part of a corpus (:func:`part_stats`); ``info`` and ``report`` are the fitted part's.

    Attributes:
        counts: :data:`COUNTS` of the part.
        conf_sum, conf_n: sum and number of the finite confidences of its consensus labels.
        agree_sum, agree_n: agreeing labels and labels on samples of two raters or more.
        n_rows, n_rated2: its labels; its samples of two raters or more.
        n_labels, n_samples, precision_sum, loc_sum, loc_n, agree_r_sum, agree_r_n, kept_members, cons_seen:
            ``(R,)`` per rater: labels, samples assigned, summed existence (EM) of its labels' units, summed
            ``1 - similarity`` to the consensus and their number, agreeing labels and labels on samples of
            two raters or more, labels in consensus labels, consensus labels on its samples.
        confusion: ``(R, C, C)`` counts of (consensus class, rater's class) of its labels in consensus labels.
        warnings: the part's own (e.g. a degenerate fit replaced by majority vote).
        info: the fitted part's summary entries that are not counts (method, τ, iterations, ...); ``{}``.
        report: the fitted part's :class:`RaterReport` (``None`` for the other parts).
        model: the fitted part's EM model (``None``: none).
    """

    counts: dict
    conf_sum: float
    conf_n: int
    agree_sum: int
    agree_n: int
    n_rows: int
    n_rated2: int
    n_labels: np.ndarray
    n_samples: np.ndarray
    precision_sum: np.ndarray
    loc_sum: np.ndarray
    loc_n: np.ndarray
    agree_r_sum: np.ndarray
    agree_r_n: np.ndarray
    kept_members: np.ndarray
    cons_seen: np.ndarray
    confusion: np.ndarray
    warnings: tuple = ()
    info: dict = field(default_factory=dict)
    report: RaterReport | None = None
    model: Any = None


def part_stats(res: ConsensusResult, data: MultiRaterAnnotations, *, fitted: bool = False) -> ConsensusStats:
    """The sums of one part: ``res`` is ``consensus(data, ...)``; ``fitted``: the part the model was fitted on
    (its summary entries, report and model are kept).

    Args:
        res: the part's consensus.
        data: the part's corpus.
        fitted: keep the fitted part's summary entries, report and model.

    Returns:
        The part's :class:`ConsensusStats`.
    """
    R = data.num_raters
    summary = res.summary()
    kept = res.is_consensus
    rated = np.asarray(data.assigned, dtype=bool).sum(axis=1)
    multi = (rated >= 2)[data.sample_index]
    member_rows = np.asarray(res.member_rows, dtype=np.intp)
    mu = np.repeat(np.arange(res.n_units), np.diff(res.member_offsets))
    mr = data.rater_index[member_rows]
    in_kept = kept[mu]
    sim = res.row_similarity[member_rows]
    conf = res.confidence[kept]
    existence = np.nan_to_num(res.confidence, nan=0.0)[mu] if res.method == "em" else np.zeros(len(mu))
    codes = encode_classes(data)[0] if len(data) else np.zeros(0, np.int64)
    C = len(res.classes)
    top = res.label_code[mu][in_kept]
    n_cons = np.bincount(res.unit_sample[kept], minlength=data.num_samples)
    return ConsensusStats(
        counts={k: int(summary[k]) for k in COUNTS},
        conf_sum=float(conf[np.isfinite(conf)].sum()), conf_n=int(np.isfinite(conf).sum()),
        agree_sum=int(res.row_agrees[multi].sum()), agree_n=int(multi.sum()), n_rows=len(data),
        n_rated2=int((rated >= 2).sum()),
        n_labels=np.bincount(data.rater_index, minlength=R), n_samples=np.asarray(data.assigned).sum(axis=0),
        precision_sum=np.bincount(mr, existence, R),
        loc_sum=np.bincount(mr[in_kept], 1.0 - sim[in_kept], R), loc_n=np.bincount(mr[in_kept], minlength=R),
        agree_r_sum=np.bincount(data.rater_index[multi], res.row_agrees[multi].astype(float), R),
        agree_r_n=np.bincount(data.rater_index[multi], minlength=R),
        kept_members=np.bincount(mr[in_kept], minlength=R),
        cons_seen=np.asarray(data.assigned).T.astype(float) @ n_cons,
        confusion=np.bincount((mr[in_kept] * C + top) * C + codes[member_rows][in_kept],
                              minlength=R * C * C).reshape(R, C, C),
        warnings=(res.warning,) if res.warning else (),
        info={k: v for k, v in summary.items() if k not in COUNTS} if fitted else {},
        report=res.report if fitted else None, model=res.model if fitted else None,
    )


def _ratio(num: Any, den: Any) -> Any:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(num, dtype=np.float64) / den


def merged_summary(parts: list[ConsensusStats]) -> dict[str, Any]:
    """The headline numbers of every part together (the keys of
    :meth:`agreement.methods.consensus.ConsensusResult.summary`); the first part is the fitted one.

    Args:
        parts: the parts' statistics, the fitted part first.

    Returns:
        The summary: counts summed, ``mean_confidence`` and ``agreement`` from the summed sums (NaN with
        their reasons where undefined), the fit's entries (method, τ, iterations, ...) from the first part.
    """
    total = {k: sum(p.counts[k] for p in parts) for k in COUNTS}
    conf_n, agree_n = sum(p.conf_n for p in parts), sum(p.agree_n for p in parts)
    n_rows, n_rated2 = sum(p.n_rows for p in parts), sum(p.n_rated2 for p in parts)
    mean_conf = sum(p.conf_sum for p in parts) / conf_n if conf_n else float("nan")
    agreement = sum(p.agree_sum for p in parts) / agree_n if agree_n else float("nan")
    conf_reason = "" if conf_n else (
        "no rater labelled anything: no consensus label" if not n_rows else "no consensus label"
        if not total["n_consensus"] else
        "every consensus label is one rater's, and its raters never meet another: no confidence")
    agree_reason = "" if agree_n else (NOTHING_LABELLED if not n_rows else NO_TWO_RATERS if not n_rated2
                                       else "no label on a sample of two raters or more")
    return {**parts[0].info, **total, "mean_confidence": mean_conf, "mean_confidence_reason": conf_reason,
            "agreement": agreement, "agreement_reason": agree_reason}


def merged_report(parts: list[ConsensusStats], meets: np.ndarray) -> RaterReport:
    """The rater report of every part together (module docstring); the first part is the fitted one.

    Args:
        parts: the parts' statistics, the fitted part first (its ``report``, and its ``model`` for the EM).
        meets: ``(R,)`` whether each rater shares a sample with another anywhere in the corpus.

    Returns:
        The :class:`RaterReport`: the fit's parameters, the other columns summed over the parts.
    """
    first = parts[0]
    report, model = first.report, first.model
    if report is None:
        raise ValueError("the first part must be the fitted one (part_stats(..., fitted=True))")

    def total(name: str) -> np.ndarray:
        return np.asarray(sum(getattr(p, name) for p in parts))

    n_labels, n_samples, kept = total("n_labels"), total("n_samples"), total("kept_members")
    if model is not None:
        sens, fp = np.asarray(model.sensitivity, float), np.asarray(model.false_positive_rate, float)
        precision, confusion, noise = _ratio(total("precision_sum"), n_labels), model.confusion, \
            np.asarray(model.localisation_noise, float)
    else:
        sens, precision, fp = _ratio(kept, total("cons_seen")), _ratio(kept, n_labels), _ratio(n_labels - kept,
                                                                                               n_samples)
        counts = total("confusion").astype(np.float64)
        confusion, noise = _ratio(counts, counts.sum(axis=2, keepdims=True)), np.full(len(n_labels), np.nan)
    lone = ~np.asarray(meets, dtype=bool)
    return replace(
        report, sensitivity=np.where(lone, np.nan, sens), false_positive_rate=np.where(lone, np.nan, fp),
        precision=np.where(lone, np.nan, precision), localisation_noise=np.where(lone, np.nan, noise),
        localisation_error=_ratio(total("loc_sum"), total("loc_n")),
        agreement=_ratio(total("agree_r_sum"), total("agree_r_n")), confusion=confusion,
        n_labels=n_labels, n_samples=n_samples,
    )
