"""The image-level label types, declared once (:mod:`agreement.fo.kinds.base`): ``Classification`` (one class
per field), ``Classifications`` (a set of tags) and ``Segmentation`` (a semantic mask, whose classes are its
pixel values). Their rows have no geometry (NaN boxes); a semantic mask is the corpus' ``masks`` entry of its
row, stored (``mask``) or read from ``mask_path``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fiftyone.core.labels as fol

from agreement.core.validation import AnnotationError
from agreement.fo.kinds.base import GeometryVariant, LabelType, register_label_type, register_variant
from agreement.fo.storage.mask_reading import decode_masks

__all__ = ["semantic_masks"]


def semantic_masks(masks: list, paths: list, where: Any) -> list:
    """The semantic mask of every row: stored (``mask``) or read from ``mask_path``, as a 2-D integer array
    (an ``(H, W, 1)`` mask is squeezed).

    Raises:
        AnnotationError: a row with neither, a file that cannot be read, or a mask that is not 2-D integer
            values, naming the sample and the rater.
    """
    out = []
    # every file decoded once, in a thread pool (agreement.fo.storage.mask_reading)
    files = decode_masks([p if m is None else None for m, p in zip(masks, paths, strict=True)], where)
    for i, (m, p) in enumerate(zip(masks, paths, strict=True)):
        if m is None and p:
            m = files[i]
        if m is None:
            raise AnnotationError(f"{where[i]}: the Segmentation has neither a mask nor a mask_path")
        m = np.asarray(m)
        if m.ndim == 3 and m.shape[2] == 1:
            m = m[:, :, 0]
        if m.ndim != 2 or not np.issubdtype(m.dtype, np.integer):
            raise AnnotationError(
                f"{where[i]}: a semantic mask must be a 2-D array of integer class values, got shape {m.shape} "
                f"of {m.dtype} (RGB masks are not read: store class values with mask_targets)"
            )
        out.append(m)
    return out


register_label_type(LabelType(fol.Classification, None, "label", image_level=True))
register_label_type(LabelType(fol.Classifications, "classifications", "label", image_level=True))
register_label_type(LabelType(fol.Segmentation, None, "id", label_attr="id", image_level=True,
                              fixed_label="segmentation"))

register_variant(GeometryVariant(
    "semantic_masks", fol.Segmentation, ("mask", "mask_path"),
    applies=lambda samples, fields, options: True,
    read=lambda extra, where, n: {"masks": semantic_masks(extra["mask"], extra["mask_path"], where)},
))
