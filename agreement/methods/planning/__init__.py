"""Planning a labelling task: how many raters per item a task needs, and what they cost.

* :mod:`~agreement.methods.planning.raters`: a corpus statistic as a function of the number of raters per
  item, estimated by subsampling raters within items (:func:`rater_curve`, seeded, with percentile
  intervals); the Spearman–Brown reliability of the ``k``-rater consensus (:func:`consensus_reliability`);
  the smallest ``k`` whose consensus reaches a target at a confidence, and its cost in labels
  (:func:`raters_needed`).

Input: reliability data as a ``(items, raters)`` float matrix, ``NaN`` where a rater did not label an item.
This package does not import FiftyOne.
"""

from agreement.methods.planning.raters import (
    RaterCurve,
    RatersNeeded,
    Statistic,
    alpha_statistic,
    consensus_reliability,
    rater_curve,
    raters_needed,
)

__all__ = [
    "RaterCurve",
    "RatersNeeded",
    "Statistic",
    "alpha_statistic",
    "consensus_reliability",
    "rater_curve",
    "raters_needed",
]
