"""Agreement on image-level classes: one class per rater and sample, or one set of tags.

* :mod:`~agreement.methods.classes.alpha`: Krippendorff's alpha at the nominal,
  ordinal and interval levels via the coincidence matrix, with a unit bootstrap;
* :mod:`~agreement.methods.classes.diagnostics`: per-sample observed agreement,
  rater vitality, agreement with a consensus, rater pairs (Cohen's kappa,
  pairwise alpha), class difficulty and the between-rater confusion;
* :mod:`~agreement.methods.classes.sets`: tags (multi-label): per-tag alpha and
  MASI alpha over label sets.

Input: the ``(S, R)`` class codes of :class:`agreement.core.ratings.ClassRatings`
(``-1`` missing) or the ``present``/``rated`` arrays of
:class:`agreement.core.ratings.TagRatings`. This package does not import FiftyOne.
"""

from agreement.methods.classes.alpha import (
    LEVELS,
    ClassAlpha,
    alpha_from_coincidence,
    bootstrap_alpha,
    class_alpha,
    coincidence_matrix,
    delta_matrix,
    unit_counts,
)
from agreement.methods.classes.diagnostics import (
    ClassDifficulty,
    agreement_with_consensus,
    agreement_with_others_majority,
    alpha_without_rater,
    class_difficulty,
    confusion_between_raters,
    pairwise,
    rater_vitality,
    sample_observed_agreement,
)
from agreement.methods.classes.sets import (
    PerClassAlpha,
    encode_sets,
    masi_alpha,
    masi_distance,
    masi_matrix,
    per_class_alpha,
    sample_masi_agreement,
)

__all__ = [
    "LEVELS",
    "ClassAlpha",
    "alpha_from_coincidence",
    "bootstrap_alpha",
    "class_alpha",
    "coincidence_matrix",
    "delta_matrix",
    "unit_counts",
    "ClassDifficulty",
    "agreement_with_consensus",
    "agreement_with_others_majority",
    "alpha_without_rater",
    "class_difficulty",
    "confusion_between_raters",
    "pairwise",
    "rater_vitality",
    "sample_observed_agreement",
    "PerClassAlpha",
    "encode_sets",
    "masi_alpha",
    "masi_distance",
    "masi_matrix",
    "per_class_alpha",
    "sample_masi_agreement",
]
