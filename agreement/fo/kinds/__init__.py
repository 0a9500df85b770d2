"""The FiftyOne label types and the geometry their labels carry, each declared once, by family.

* :mod:`agreement.fo.kinds.base`: the protocol (:class:`LabelType`,
  :class:`GeometryVariant`) and the registry;
* :mod:`agreement.fo.kinds.instances`: ``Detections`` (boxes, instance masks),
  ``Polylines`` (polygons), ``Keypoints``;
* :mod:`agreement.fo.kinds.temporal`: ``TemporalDetections`` (segments of videos);
* :mod:`agreement.fo.kinds.image_level`: ``Classification``, ``Classifications``
  (tag sets), ``Segmentation`` (semantic masks);
* :mod:`agreement.fo.kinds.three_d`: cuboids and points, point-cloud segments,
  3D polylines.

The corpus columns they produce are declared in :mod:`agreement.core.kinds`.
A new kind registers a column there and a label type or variant here (see
``tests/test_declared_kind.py``). Importing this package declares the built-in
types, in the order the readers list them.
"""

from __future__ import annotations

from agreement.fo.kinds import image_level, instances, temporal, three_d  # noqa: F401 - declares the types
from agreement.fo.kinds.base import (
    LABEL_TYPES,
    LIST_ATTRS,
    FinishContext,
    GeometryVariant,
    LabelType,
    ReadOptions,
    declared_path,
    declared_type,
    imported_kinds,
    instance_lists,
    item_type,
    label_boxes,
    label_documents,
    label_type,
    label_types,
    register_label_type,
    register_variant,
    unregister_variant,
    variants_of,
)

__all__ = ["instance_lists", "item_type", "LABEL_TYPES", "LIST_ATTRS", "FinishContext", "GeometryVariant", "LabelType", "ReadOptions",
           "declared_path", "declared_type", "imported_kinds", "label_boxes", "label_documents", "label_type", "label_types", "register_label_type", "register_variant",
           "unregister_variant", "variants_of"]
