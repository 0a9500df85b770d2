"""The headline numbers of a class consensus: how far the raters agree with it, and how confident it is.

Given the raters' codes (``(S, R)`` ints, ``-1`` where a rater gave no class) and a
:class:`agreement.methods.consensus.class_labels.ClassConsensus` fitted on them:

* **agreement** = Σ votes for the consensus class / Σ votes, over the samples that **two or more** raters
  classified (a sample of one rater agrees with itself: it says nothing). Range [0, 1]; not
  chance-corrected (use the class α of :mod:`agreement.methods.classes` for that). None with a reason when
  no sample has two raters.
* **confidence** per sample: the consensus posterior of the class chosen, except on a sample whose raters
  never share a sample with another rater (nothing identifies them: the fitted model's confidence there is
  an artefact of its prior); **mean_confidence** its mean over the samples where it is defined, else None
  with a reason.

Both reasons are plain sentences for the user (the run shows them as warnings). This module does not
import FiftyOne; :mod:`agreement.fo.methods.class_consensus_labels` writes these numbers on the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agreement.methods.consensus.api import rater_meets
from agreement.methods.consensus.result import NOTHING_LABELLED

__all__ = ["ClassConsensusHeadline", "class_consensus_headline"]

NO_TWO_RATERS = "no sample has two raters assigned: nothing can be agreed"
NO_CONFIDENCE = "every sample's class is one rater's, and its raters never meet another: no confidence"
NO_LABEL = "no consensus label"


@dataclass(frozen=True)
class ClassConsensusHeadline:
    """The headline of a class consensus (module docstring).

    Attributes:
        agreement: the share of votes for the consensus class on samples of two or more raters, in
            ``[0, 1]`` (NaN when there is no such sample).
        agreement_reason: why ``agreement`` is NaN (``""`` when it is defined).
        mean_confidence: the mean of ``confidence`` where defined, in ``[0, 1]`` (NaN where it is nowhere).
        mean_confidence_reason: why ``mean_confidence`` is NaN (``""`` when it is defined).
        confidence: ``(S,)`` the consensus posterior per sample, NaN without a consensus label or where its
            raters never meet another rater.
        has: ``(S,)`` bool, the sample has a consensus label.
        votes: ``(S, R)`` bool, the rater's class is the consensus class on a sample of two or more raters.
        rated_met: ``(S, R)`` bool, the rater classified a sample of two or more raters.
        n_rated: ``(S,)`` raters who classified each sample.
        meets: ``(R,)`` bool, the rater shares a sample with another rater.
        n_single_rater: consensus labels that are one rater's.
    """

    agreement: float
    agreement_reason: str
    mean_confidence: float
    mean_confidence_reason: str
    confidence: np.ndarray
    has: np.ndarray
    votes: np.ndarray
    rated_met: np.ndarray
    n_rated: np.ndarray
    meets: np.ndarray
    n_single_rater: int


def class_consensus_headline(codes: np.ndarray, labels: np.ndarray, confidence: np.ndarray) -> ClassConsensusHeadline:
    """The headline numbers of a class consensus (formulas, range and reasons: the module docstring).

    Args:
        codes: ``(S, R)`` the raters' class codes, ``-1`` for no class.
        labels: ``(S,)`` the consensus class codes, ``-1`` for none.
        confidence: ``(S,)`` the consensus posterior of the class chosen, in ``[0, 1]``.

    Returns:
        The :class:`ClassConsensusHeadline`: ``agreement`` in ``[0, 1]`` (the share of votes for the consensus
        class on samples of two or more raters) and ``mean_confidence`` in ``[0, 1]``, each NaN with a reason
        when undefined.
    """
    codes = np.asarray(codes)
    labels = np.asarray(labels)
    rated = codes >= 0
    n_rated = rated.sum(axis=1)
    has = rated.any(axis=1) & (labels >= 0)
    meets = rater_meets(rated)
    isolated = (n_rated < 2) & ~(rated & meets[None, :]).any(axis=1)
    conf = np.where(has & ~isolated, np.asarray(confidence, dtype=np.float64), np.nan)
    votes = (codes == labels[:, None]) & rated & (n_rated >= 2)[:, None]
    rated_met = rated & (n_rated >= 2)[:, None]
    defined = np.isfinite(conf)
    return ClassConsensusHeadline(
        agreement=float(votes.sum() / rated_met.sum()) if rated_met.any() else float("nan"),
        agreement_reason="" if rated_met.any() else NOTHING_LABELLED if not rated.any() else NO_TWO_RATERS,
        mean_confidence=float(conf[defined].mean()) if defined.any() else float("nan"),
        mean_confidence_reason="" if defined.any() else (NO_LABEL if not has.any() else NO_CONFIDENCE),
        confidence=conf, has=has, votes=votes, rated_met=rated_met, n_rated=n_rated, meets=meets,
        n_single_rater=int((has & (n_rated < 2)).sum()))
