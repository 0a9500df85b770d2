"""The consensus of image-level classes, as :mod:`agreement.fo.methods.consensus` writes it for class fields.

The raters' classes (one ``Classification`` field per rater, or one
``Classifications`` field with a rater attribute) become one class per
sample by Dawid–Skene (``method="em"``), MACE (``"mace"``) or majority vote
(``"majority"``) (:func:`agreement.methods.consensus.class_labels.class_consensus`).
The consensus is a ``Classification`` in ``{key}_consensus`` with its
``confidence`` (the posterior of the class chosen), ``{key}_support`` (the
share of the sample's raters who gave it) and ``{key}_review`` (confidence
below the review band's upper end, ``review_band[1]``); the review queue is
those samples, least confident first. The rater report holds each rater's
estimated confusion matrix.
"""

from __future__ import annotations

import numpy as np

from agreement.core.ratings import class_ratings
from agreement.fo.runs.method_spec import MethodOutput
from agreement.fo.storage.stored_values import label_document, new_object_ids
from agreement.methods.consensus.class_headline import class_consensus_headline
from agreement.methods.consensus.class_labels import class_consensus

__all__ = ["CLASS_METHODS", "class_consensus_output"]

#: The consensus ``method`` names for classes -> the pure method.
CLASS_METHODS = {"em": "dawid_skene", "mace": "mace", "majority": "majority"}


def _rater_report(ratings, res, agree: np.ndarray, n: np.ndarray, meets: np.ndarray) -> dict:
    """Per rater: competence and confusion (``None`` for a rater who never shares a sample with another:
    nothing identifies them), agreement with the consensus on samples of two raters or more, labels."""
    classes = [str(c) for c in ratings.classes]
    report = {}
    for r, rater in enumerate(ratings.raters):
        conf = np.asarray(res.rater_confusion[r]) if meets[r] else np.full_like(res.rater_confusion[r], np.nan)
        report[rater] = {
            "competence": float(res.rater_competence[r]) if meets[r] else None,
            "agreement": float(agree[r]) if n[r] and np.isfinite(agree[r]) else None,
            "labels": int(n[r]),
            "confusion": {t: {c: round(float(conf[i, j]), 6) if np.isfinite(conf[i, j]) else None
                              for j, c in enumerate(classes)} for i, t in enumerate(classes)},
        }
    return report


def class_consensus_output(read, params: dict, report) -> MethodOutput:
    """The class consensus of ``read`` (a corpus of image-level classes) as a consensus run's output.

    Raises:
        ValueError: ``method="wbf"`` (boxes only), or a rater with two classes on one sample.
    """
    method = params["method"]
    if method not in CLASS_METHODS:
        raise ValueError(f"method={method!r} fuses boxes; for classes use one of {sorted(CLASS_METHODS)}")
    ratings = class_ratings(read.annotations)
    codes, key = ratings.codes, params["key"]
    report(0.0, f"{CLASS_METHODS[method]} on {codes.shape[0]:,} samples")
    res = class_consensus(codes, len(ratings.classes), method=CLASS_METHODS[method], seed=params.get("seed", 0),
                          orientation="units_by_raters")
    head = class_consensus_headline(codes, res.labels, res.confidence)
    rated, has, n_rated, meets = codes >= 0, head.has, head.n_rated, head.meets
    votes, rated_met, confidence = head.votes, head.rated_met, head.confidence
    support = np.where(has, (codes == res.labels[:, None]).sum(axis=1) / np.maximum(n_rated, 1), np.nan)
    review = has & (confidence < params["review_band"][1])
    report(0.7, "consensus labels")
    ids = new_object_ids(int(has.sum()))
    docs, k = {}, 0
    for s in np.flatnonzero(has):
        docs[ratings.sample_ids[s]] = [label_document(
            "Classification", ids[k], label=str(ratings.classes[res.labels[s]]), confidence=float(confidence[s]),
            **{f"{key}_support": float(support[s]), f"{key}_review": bool(review[s])})]
        k += 1
    attrs = {"confidence": [0.5], f"{key}_support": [0.5], f"{key}_review": [True]}
    per_rater = rated_met.sum(axis=0)
    agree = np.where(per_rater > 0, votes.sum(axis=0) / np.maximum(per_rater, 1), np.nan)
    summary = {
        "n_consensus": int(has.sum()), "n_review": int(review.sum()), "n_single_rater": head.n_single_rater,
        "mean_confidence": None if np.isnan(head.mean_confidence) else head.mean_confidence,
        "mean_confidence_reason": head.mean_confidence_reason,
        "agreement": None if np.isnan(head.agreement) else head.agreement,
        "agreement_reason": head.agreement_reason,
        "method": method, "n_raters": len(ratings.raters), "n_classes": len(ratings.classes),
    }
    detail = {"rater_report": _rater_report(ratings, res, agree, rated.sum(axis=0), meets),
              "classes": list(ratings.classes),
              "n_iter": int(res.n_iter), "converged": bool(res.converged), "n_kept": int(has.sum())}
    # convergence of the EM (Dawid-Skene, MACE): on the run and in the operator's output (issue 47)
    summary.update(converged=bool(res.converged), iterations=int(res.n_iter),
                   convergence_warning=res.warning or "")
    detail["warnings"] = [res.warning] if res.warning else []
    samples = {"n_review": review.astype(int), "min_confidence": confidence}
    return MethodOutput(summary, detail, sample_values=samples,
                        label_fields={"consensus": ("Classification", docs, attrs)})
