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
import fiftyone.core.labels as fol

from agreement.fo.projection import LABEL_TYPES, LIST_ATTRS
from agreement.core.validation import BOX_POLICIES, AnnotationError

__all__ = ["label_fields", "frame_label_fields", "detect_raters", "IMAGE_LABEL_TYPES", "SUPPORTED_TYPES", "label_list_path"]

#: Image-level label types: a class (``Classification``), a set of tags (``Classifications``), a semantic mask.
IMAGE_LABEL_TYPES = (fol.Classification, fol.Classifications, fol.Segmentation)

#: Every label type a rater field may hold: the instance lists (:data:`LABEL_TYPES`) and the image-level types.
SUPPORTED_TYPES = tuple(LABEL_TYPES) + IMAGE_LABEL_TYPES


def label_fields(samples, types: Sequence[type] = tuple(LABEL_TYPES)) -> list[str]:
    """Names of the sample fields of ``samples`` holding one of ``types``."""
    schema = samples.get_field_schema(embedded_doc_type=tuple(types))
    return sorted(schema)


def label_list_path(field: str, doc_type: type) -> str:
    """The path of the labels of ``field``: its list (``r1.detections``, ``r1.classifications``), or the field
    itself for a single label (``Classification``, ``Segmentation``; MongoDB's ``$unwind`` takes one document
    as a list of one)."""
    attr = LIST_ATTRS.get(doc_type)
    return f"{field}.{attr}" if attr is not None else field


def frame_label_fields(samples, types: Sequence[type] = tuple(LABEL_TYPES)) -> list[str]:
    """Names ``frames.<field>`` of the frame fields of a video collection holding one of ``types`` (none for
    other media)."""
    if getattr(samples, "media_type", None) != "video":
        return []
    schema = samples.get_frame_field_schema(embedded_doc_type=tuple(types)) or {}
    return sorted(f"frames.{name}" for name in schema)


def _label_type(samples, name: str) -> type:
    frame = name.startswith("frames.")
    if frame and getattr(samples, "media_type", None) != "video":
        raise AnnotationError(
            f"field {name!r} is a frame field, but dataset {samples._dataset.name!r} holds "
            f"{getattr(samples, 'media_type', None) or 'no'} media, not videos: frame labels exist only on video "
            "datasets; name a sample label field instead"
        )
    schema = samples.get_frame_field_schema() if frame else samples.get_field_schema()
    if (name[len("frames."):] if frame else name) not in schema:
        known = label_fields(samples, SUPPORTED_TYPES) + frame_label_fields(samples, SUPPORTED_TYPES)
        raise AnnotationError(
            f"field {name!r} does not exist on dataset {samples._dataset.name!r}; "
            f"label fields are: {', '.join(known) or 'none'}"
        )
    f = schema[name[len("frames."):] if frame else name]
    doc_type = getattr(f, "document_type", None) if isinstance(f, fof.EmbeddedDocumentField) else None
    if doc_type not in SUPPORTED_TYPES:
        what = doc_type.__name__ if doc_type is not None else type(f).__name__
        raise AnnotationError(
            f"field {name!r} is a {what}, not a label field of a supported type "
            f"({', '.join(t.__name__ for t in SUPPORTED_TYPES)})"
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
    values = samples.distinct(f"{label_list_path(field, _label_type(samples, field))}.{rater_attr}")
    return sorted(str(v) for v in values if v is not None)
