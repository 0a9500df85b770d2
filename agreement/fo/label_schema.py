"""The label schema of a FiftyOne dataset or view, as the readers see it.

The label fields of the supported types (:func:`label_fields`), the type of
one (:func:`_label_type`, an error naming the label fields otherwise), the
raters named by a rater attribute (:func:`detect_raters`), the check of the
rater layout chosen (:func:`_check_layout_choice`) and the name of a sample in
messages (:func:`_sample_label`). Shared by the reading of annotations
(:mod:`agreement.fo.reading`) and of the rater assignment
(:mod:`agreement.fo.assignment`).
"""

from __future__ import annotations

import os
from typing import Sequence

import fiftyone.core.fields as fof

from agreement.fo.projection import LABEL_TYPES
from agreement.core.validation import BOX_POLICIES, AnnotationError

__all__ = ["label_fields", "detect_raters"]


def label_fields(samples, types: Sequence[type] = tuple(LABEL_TYPES)) -> list[str]:
    """Names of the sample fields of ``samples`` holding one of ``types``."""
    schema = samples.get_field_schema(embedded_doc_type=tuple(types))
    return sorted(schema)


def _label_type(samples, name: str) -> type:
    schema = samples.get_field_schema()
    if name not in schema:
        raise AnnotationError(
            f"field {name!r} does not exist on dataset {samples._dataset.name!r}; "
            f"label fields are: {label_fields(samples) or 'none'}"
        )
    f = schema[name]
    doc_type = getattr(f, "document_type", None) if isinstance(f, fof.EmbeddedDocumentField) else None
    if doc_type not in LABEL_TYPES:
        what = doc_type.__name__ if doc_type is not None else type(f).__name__
        raise AnnotationError(
            f"field {name!r} is a {what}, not a label field of a supported type "
            f"({', '.join(t.__name__ for t in LABEL_TYPES)})"
        )
    return doc_type


def _sample_label(sample_id: str, filepath: str) -> str:
    return f"sample {os.path.basename(filepath)!r} (id {sample_id})"


def _check_layout_choice(fields, field, box_policy: str) -> None:
    """One rater layout, and a known box policy (before anything is read)."""
    if (fields is None) == (field is None):
        raise AnnotationError("give either `fields` (one label field per rater) or `field` with `rater_attr`")
    if box_policy not in BOX_POLICIES:
        raise ValueError(f"box_policy must be one of {BOX_POLICIES}, got {box_policy!r}")


def detect_raters(samples, field: str, rater_attr: str = "annotator") -> list[str]:
    """The distinct values of ``rater_attr`` on the labels of ``field``, sorted."""
    list_field = LABEL_TYPES[_label_type(samples, field)]
    values = samples.distinct(f"{field}.{list_field}.{rater_attr}")
    return sorted(str(v) for v in values if v is not None)
