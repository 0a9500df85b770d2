"""Image-level ratings: one class per rater and sample, or one set of classes (tags) per rater and sample.

The instance data model (:mod:`agreement.core.data`) holds what raters drew;
this one holds what they *said* about a whole sample:

* :class:`ClassRatings`: a ``Classification`` per rater and sample, as a
  reliability matrix of class codes, ``-1`` where the rater gave no class
  (not assigned, or assigned and left it unlabelled: missing data either
  way, as Krippendorff's α treats a missing value).
* :class:`TagRatings`: a set of tags (``Classifications``, multi-label) per
  rater and sample, as a presence array; a rater who was assigned and gave no
  tag gave the empty set (explicit absence), a rater who was not assigned
  gave nothing (implicit absence).

Class codes index ``classes``, whose order is the order of an ordinal scale
(see :func:`agreement.methods.classes` users). This module does not import
FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from agreement.core.data import MultiRaterAnnotations

__all__ = ["ClassRatings", "TagRatings", "MISSING", "class_ratings", "tag_ratings"]

#: The code of a missing rating in :attr:`ClassRatings.codes`.
MISSING = -1


@dataclass(frozen=True)
class ClassRatings:
    """One class per rater and sample.

    Attributes:
        sample_ids: ``(S,)`` object array of sample identifiers.
        raters: the ``R`` rater names.
        classes: the ``K`` class names; codes index them (their order is an ordinal scale's order).
        codes: ``(S, R)`` int64 class codes, :data:`MISSING` (``-1``) where the rater gave no class.
        assigned: ``(S, R)`` bool, the raters assigned to each sample (a rating implies assignment).
    """

    sample_ids: np.ndarray
    raters: tuple
    classes: tuple
    codes: np.ndarray
    assigned: np.ndarray

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes, dtype=np.int64)
        S = len(self.sample_ids)
        if codes.shape != (S, len(self.raters)):
            raise ValueError(f"codes must have shape ({S}, {len(self.raters)}), got {codes.shape}")
        if codes.size and (codes.min() < MISSING or codes.max() >= len(self.classes)):
            raise ValueError(f"codes must be in [-1, {len(self.classes) - 1}]")
        assigned = np.asarray(self.assigned, dtype=bool)
        if assigned.shape != codes.shape:
            raise ValueError(f"assigned must have shape {codes.shape}, got {assigned.shape}")
        if (codes[~assigned] != MISSING).any():
            raise ValueError("a rating by a rater who was not assigned the sample")
        object.__setattr__(self, "codes", codes)
        object.__setattr__(self, "assigned", assigned)
        object.__setattr__(self, "sample_ids", np.asarray(self.sample_ids, dtype=object))
        object.__setattr__(self, "raters", tuple(self.raters))
        object.__setattr__(self, "classes", tuple(self.classes))

    @property
    def rated(self) -> np.ndarray:
        """``(S, R)`` bool: the rater gave a class."""
        rated: np.ndarray = self.codes != MISSING
        return rated

    def select_samples(self, keep: np.ndarray) -> "ClassRatings":
        """The ratings of the samples ``keep`` (a boolean mask or indices)."""
        return ClassRatings(self.sample_ids[keep], self.raters, self.classes, self.codes[keep], self.assigned[keep])


@dataclass(frozen=True)
class TagRatings:
    """One set of tags per rater and sample (multi-label).

    Attributes:
        sample_ids: ``(S,)`` object array of sample identifiers.
        raters: the ``R`` rater names.
        classes: the ``K`` tag names.
        present: ``(S, R, K)`` bool, the rater gave tag ``k`` on the sample.
        rated: ``(S, R)`` bool, the rater gave a (possibly empty) set; ``False`` is missing data.
    """

    sample_ids: np.ndarray
    raters: tuple
    classes: tuple
    present: np.ndarray
    rated: np.ndarray

    def __post_init__(self) -> None:
        S, R, K = len(self.sample_ids), len(self.raters), len(self.classes)
        present = np.asarray(self.present, dtype=bool)
        rated = np.asarray(self.rated, dtype=bool)
        if present.shape != (S, R, K):
            raise ValueError(f"present must have shape ({S}, {R}, {K}), got {present.shape}")
        if rated.shape != (S, R):
            raise ValueError(f"rated must have shape ({S}, {R}), got {rated.shape}")
        if (present & ~rated[:, :, None]).any():
            raise ValueError("a tag from a rater whose set is missing")
        object.__setattr__(self, "present", present)
        object.__setattr__(self, "rated", rated)
        object.__setattr__(self, "sample_ids", np.asarray(self.sample_ids, dtype=object))
        object.__setattr__(self, "raters", tuple(self.raters))
        object.__setattr__(self, "classes", tuple(self.classes))

    def select_samples(self, keep: np.ndarray) -> "TagRatings":
        """The ratings of the samples ``keep`` (a boolean mask or indices)."""
        return TagRatings(self.sample_ids[keep], self.raters, self.classes, self.present[keep], self.rated[keep])


def _classes_of(labels: np.ndarray, classes: Sequence[str] | None) -> tuple:
    from agreement.core.data import class_order

    found = class_order(labels.tolist())
    if classes is None:
        return tuple(found)
    unknown = sorted(set(found) - set(classes), key=str)
    if unknown:
        raise ValueError(f"labels {unknown} are not among the classes given {list(classes)}")
    return tuple(classes)


def class_ratings(data: "MultiRaterAnnotations", *, classes: Sequence[str] | None = None) -> ClassRatings:
    """The corpus ``data`` (rows without geometry, one per label) as one class per rater and sample.

    Args:
        data: a :class:`agreement.core.data.MultiRaterAnnotations` whose cells hold at most one label.
        classes: the class order (an ordinal scale's); default the corpus' vocabulary (``data.classes``), else
            :func:`agreement.core.data.class_order` of its labels.

    Raises:
        ValueError: a rater with two labels on one sample (naming them), a label outside ``classes``.
    """
    S, R = data.num_samples, data.num_raters
    counts = np.diff(data.offsets).reshape(S, R)
    if (counts > 1).any():
        s, r = map(int, np.argwhere(counts > 1)[0])
        rows = data.labels[data.offsets[s * R + r]: data.offsets[s * R + r + 1]].tolist()
        names = data.sample_ids if data.sample_names is None else data.sample_names
        raise ValueError(f"sample {names[s]!r}: rater {data.raters[r]!r} gave {counts[s, r]} classes "
                         f"{rows}; one class per rater and sample is read as a classification (several are tags: "
                         "read them as a set)")
    classes = _classes_of(data.labels, classes if classes is not None else data.classes)
    index = {c: i for i, c in enumerate(classes)}
    codes = np.full((S, R), MISSING, dtype=np.int64)
    codes[data.sample_index, data.rater_index] = [index[c] for c in data.labels.tolist()]
    return ClassRatings(data.sample_ids, data.raters, classes, codes, data.assigned)


def tag_ratings(data: "MultiRaterAnnotations", *, classes: Sequence[str] | None = None) -> TagRatings:
    """The corpus ``data`` (rows without geometry, one per tag) as one set of tags per rater and sample: an
    assigned rater without a tag gave the empty set; a tag given twice by one rater counts once."""
    classes = _classes_of(data.labels, classes if classes is not None else data.classes)
    index = {c: i for i, c in enumerate(classes)}
    present = np.zeros((data.num_samples, data.num_raters, len(classes)), dtype=bool)
    present[data.sample_index, data.rater_index, [index[c] for c in data.labels.tolist()]] = True
    return TagRatings(data.sample_ids, data.raters, classes, present, data.assigned)
