"""The label schema of a FiftyOne dataset or view, as the readers see it.

The label fields of the supported types (:func:`label_fields`), the type of
one (:func:`field_label_type`, an error naming the label fields otherwise), the
raters named by a rater attribute (:func:`detect_raters`), the check of the
rater layout chosen (:func:`check_layout_choice`) and the name of a sample in
messages (:func:`sample_label`). Shared by the reading of annotations
(:mod:`agreement.fo.storage.reading`) and of the rater assignment
(:mod:`agreement.fo.storage.assignment`).
"""

from __future__ import annotations

import os
from typing import Sequence

import fiftyone.core.fields as fof

from agreement.core.validation import BOX_POLICIES, AnnotationError
from agreement.fo.kinds import LABEL_TYPES, LIST_ATTRS, label_types

__all__ = ["label_fields", "frame_label_fields", "detect_raters", "IMAGE_LABEL_TYPES", "SUPPORTED_TYPES", "label_list_path",
           "field_label_type", "sample_label", "check_layout_choice"]

#: Image-level label types: a class (``Classification``), a set of tags (``Classifications``), a semantic mask
#: (the declared label types without geometry, :mod:`agreement.fo.kinds`).
IMAGE_LABEL_TYPES = label_types(instance=False)

#: Every label type a rater field may hold: the instance lists (:data:`LABEL_TYPES`) and the image-level types.
SUPPORTED_TYPES = label_types(instance=True) + IMAGE_LABEL_TYPES


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


def field_label_type(samples, name: str) -> type:
    """The label class of field ``name`` of ``samples`` (``frames.<field>``: a frame field of a video dataset).

    Args:
        samples: a FiftyOne dataset or view.
        name: the field's name.

    Returns:
        Its label class, one of the declared label types (:mod:`agreement.fo.kinds`).

    Raises:
        AnnotationError: a frame field of a dataset of other media, an unknown field (naming the label fields),
            or a field of an unsupported type.
    """
    frame = name.startswith("frames.")
    if frame and getattr(samples, "media_type", None) != "video":
        raise AnnotationError(
            f"field {name!r} is a frame field, but dataset {samples._dataset.name!r} holds "
            f"{getattr(samples, 'media_type', None) or 'no'} media, not videos: frame labels exist only on video "
            "datasets; name a sample label field instead"
        )
    schema = samples.get_frame_field_schema() if frame else samples.get_field_schema()
    if (name[len("frames."):] if frame else name) not in schema:
        known = label_fields(samples, label_types()) + frame_label_fields(samples, label_types())
        raise AnnotationError(
            f"field {name!r} does not exist on dataset {samples._dataset.name!r}; "
            f"label fields are: {', '.join(known) or 'none'}"
        )
    f = schema[name[len("frames."):] if frame else name]
    doc_type = getattr(f, "document_type", None) if isinstance(f, fof.EmbeddedDocumentField) else None
    if doc_type not in label_types():
        what = doc_type.__name__ if doc_type is not None else type(f).__name__
        raise AnnotationError(
            f"field {name!r} is a {what}, not a label field of a supported type "
            f"({', '.join(t.__name__ for t in label_types())})"
        )
    return doc_type


def sample_label(sample_id: str, filepath: str) -> str:
    """``sample 'a.jpg' (id ...)``: a sample as messages name it."""
    return f"sample {os.path.basename(filepath)!r} (id {sample_id})"


def check_layout_choice(fields, field, box_policy: str) -> None:
    """One rater layout, and a known box policy (before anything is read)."""
    if (fields is None) == (field is None):
        raise AnnotationError("give either `fields` (one label field per rater) or `field` with `rater_attr`")
    if box_policy not in BOX_POLICIES:
        raise ValueError(f"box_policy must be one of {BOX_POLICIES}, got {box_policy!r}")


def detect_raters(samples, field: str, rater_attr: str = "annotator") -> list[str]:
    """The distinct values of ``rater_attr`` on the labels of ``field``, sorted."""
    values = samples.distinct(f"{label_list_path(field, field_label_type(samples, field))}.{rater_attr}")
    return sorted(str(v) for v in values if v is not None)

