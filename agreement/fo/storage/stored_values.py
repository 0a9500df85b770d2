"""Values, labels and ObjectIds as FiftyOne stores them, for writes that bypass FiftyOne's documents.

:func:`db_value` (numpy scalars as Python scalars, NaN as ``None``),
:func:`label_document` (one label as stored) and :func:`label_field_value`
(a label list field holding them), and new ObjectIds made in bulk
(:func:`new_object_ids`, :func:`new_object_id_bytes`, :func:`object_id_strings`).
Written by :mod:`agreement.fo.storage.writing` and the methods that create labels.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from bson import ObjectId

__all__ = ["db_value", "label_document", "label_field_value", "new_object_ids", "new_object_id_bytes",
           "object_id_strings", "STORED_AS_IS"]


#: Types stored exactly as they are (no conversion by :func:`db_value`).
STORED_AS_IS = frozenset({str, int, bool, type(None)})


def _spec(container: str):
    """The declaration (:mod:`agreement.fo.kinds`) of the label type named ``container``."""
    from agreement.fo.kinds import label_type, label_types

    by_name = {t.__name__: t for t in label_types()}
    if container not in by_name:
        raise KeyError(container)
    return label_type(by_name[container])


def _list_attr(container: str) -> str:
    """The list attribute of the label list type named ``container`` (``"detections"``)."""
    attr = _spec(container).list_attr
    if attr is None:
        raise KeyError(container)
    return attr


def _item_name(container: str) -> str:
    """The class name of one label of the label type named ``container`` (``"Detection"``; a single-label
    type's own)."""
    spec = _spec(container)
    if spec.list_attr is None:
        return container
    return spec.doc_type._fields[spec.list_attr].field.document_type.__name__


#: Label types of which a field holds one label (its value is the label document itself).
SINGLE = frozenset({"Classification", "Segmentation"})


def db_value(v: Any) -> Any:
    """A value as stored: numpy scalars as Python scalars, NaN as ``None``."""
    if isinstance(v, (np.floating, float)):
        v = float(v)
        return None if math.isnan(v) else v
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def label_document(container: str, _id: ObjectId | None = None, **values: Any) -> dict:
    """A label as stored by FiftyOne (``_id``, ``_cls``, ``tags``, ``attributes``, then ``values``).

    ``container`` is the list type (``"Detections"``, ``"Polylines"`` or
    ``"Keypoints"``); a ``mask`` value is serialised as FiftyOne stores it.
    ``_id``: the label's id (a new one when None, see :func:`new_object_ids`).
    """
    doc = {"_id": ObjectId() if _id is None else _id, "_cls": _item_name(container), "attributes": {}, "tags": []}
    for k, v in values.items():
        if type(v) in STORED_AS_IS or type(v) is list:
            doc[k] = v
        elif k == "mask" and v is not None:
            import fiftyone.core.utils as fou

            doc[k] = fou.serialize_numpy_array(np.asarray(v))
        else:
            doc[k] = db_value(v)
    return doc


def new_object_ids(n: int) -> list[ObjectId]:
    """``n`` new, distinct ObjectIds (:func:`new_object_id_bytes`), about ten times faster than
    ``ObjectId()`` one at a time."""
    data = new_object_id_bytes(n)
    return [ObjectId(data[i:i + 12]) for i in range(0, len(data), 12)]


def new_object_id_bytes(n: int) -> bytes:
    """The 12 bytes of each of ``n`` new, distinct ObjectIds, one after the other, made in one vectorised step.

    The layout of the BSON specification: a 4-byte big-endian timestamp, 5
    random bytes and a 3-byte big-endian counter (here from a random start,
    so that two calls in the same second cannot collide unless the 5 random
    bytes do). Id ``i`` is ``ObjectId(data[12 i: 12 i + 12])``; its string,
    :func:`object_id_strings`.
    """
    import os
    import time

    if n <= 0:
        return b""
    if n > 1 << 24:
        return new_object_id_bytes(1 << 24) + new_object_id_bytes(n - (1 << 24))
    raw = np.empty((n, 12), dtype=np.uint8)
    raw[:, 0:4] = np.frombuffer(int(time.time()).to_bytes(4, "big"), dtype=np.uint8)
    raw[:, 4:9] = np.frombuffer(os.urandom(5), dtype=np.uint8)
    counter = (int.from_bytes(os.urandom(3), "big") + np.arange(n, dtype=np.uint64)) % (1 << 24)
    raw[:, 9:12] = counter.astype(">u4").view(np.uint8).reshape(n, 4)[:, 1:]
    return raw.tobytes()


def object_id_strings(data: bytes) -> np.ndarray:
    """The 24-digit hexadecimal strings (``str(ObjectId)``) of ObjectIds given as consecutive 12-byte
    runs (:func:`new_object_id_bytes`), vectorised."""
    import binascii

    return np.frombuffer(binascii.hexlify(data), dtype="S24").astype(str).astype(object)


def label_field_value(container: str, docs: Sequence[dict]) -> dict | None:
    """The stored value of a label field of type ``container`` holding the :func:`label_document` ``docs``
    (a single-label type, :data:`SINGLE`: the one document, ``None`` without one)."""
    if container in SINGLE:
        return docs[0] if len(docs) else None
    return {"_cls": container, _list_attr(container): list(docs)}


def label_path(name: str, container: str) -> str:
    """The path of the labels of label field ``name`` of type ``container``: its list, or the field itself for a
    single-label type."""
    return name if container in SINGLE else f"{name}.{_list_attr(container)}"
