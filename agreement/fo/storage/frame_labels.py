"""Frame labels of video datasets written in bulk: frame documents straight into the frame collection.

FiftyOne stores a video dataset's frames in their own MongoDB collection
(``dataset._frame_collection``), one document per frame::

    {"_id": ObjectId, "_sample_id": ObjectId, "_dataset_id": ObjectId, "frame_number": int,
     "created_at": datetime, "last_modified_at": datetime,
     "<field>": {"_cls": "Detections", "detections": [
         {"_id": ObjectId, "_cls": "Detection", "attributes": {}, "tags": [], "label": str,
          "bounding_box": [x, y, w, h], "index": int, ...}, ...]}}

(as FiftyOne 1.22 writes it through ``sample.frames``; a ``None`` field is
left out). Building hundreds of thousands of ``fo.Frame`` objects one at a
time takes minutes; here the documents are built as plain dicts and inserted
with pymongo's ``insert_many`` in batches, one batch being inserted while the
next is built. The frame fields must be declared on the dataset first
(:func:`declare_frame_field`), so that FiftyOne reads them back
(``dataset.values("frames.<field>")``, ``sample.frames``, the App).

Label ids are made in bulk (:func:`object_ids`): ``bson.ObjectId()`` costs
about 10 µs each (4.5 M labels: 45 s), an id from 12 prepared bytes below 1 µs.
They follow the ObjectId layout (4-byte time, 5 random bytes per process,
3-byte counter shared by all calls), so they are unique like FiftyOne's own.
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from bson import ObjectId

import fiftyone as fo

__all__ = ["object_ids", "detection_docs", "detections_doc", "declare_frame_field", "insert_frames",
           "write_frame_values"]

_COUNTER = 1 << 24
_LOCK = threading.Lock()
_STATE: dict = {"pid": None, "prefix": b"", "counter": 0}


def _reserve(n: int) -> tuple[bytes, int, int]:
    """``(random prefix, first counter, count)``: a block of at most ``n`` counter values, never reused.

    The 5 random bytes are drawn once per process (again after a fork, and
    when the 3-byte counter wraps), as in MongoDB's ObjectId specification."""
    with _LOCK:
        if _STATE["pid"] != os.getpid():
            _STATE.update(pid=os.getpid(), prefix=os.urandom(5), counter=int.from_bytes(os.urandom(3), "big"))
        start, prefix = _STATE["counter"], _STATE["prefix"]
        m = min(n, _COUNTER - start)
        if start + m >= _COUNTER:
            _STATE.update(prefix=os.urandom(5), counter=0)
        else:
            _STATE["counter"] = start + m
    return prefix, start, m


def object_ids(n: int) -> list[ObjectId]:
    """``n`` new unique ObjectIds: 4-byte time, 5 random bytes per process, 3-byte counter (as ``ObjectId()``)."""
    out: list[ObjectId] = []
    stamp = np.frombuffer(int(time.time()).to_bytes(4, "big"), dtype=np.uint8)
    remaining = int(n)
    while remaining > 0:
        prefix, start, m = _reserve(remaining)
        buf = np.empty((m, 12), dtype=np.uint8)
        buf[:, :4] = stamp
        buf[:, 4:9] = np.frombuffer(prefix, dtype=np.uint8)
        buf[:, 9:] = np.arange(start, start + m, dtype=">u4").view(np.uint8).reshape(m, 4)[:, 1:]
        raw = buf.tobytes()
        out.extend(map(ObjectId, [raw[i:i + 12] for i in range(0, 12 * m, 12)]))
        remaining -= m
    return out


def detection_docs(
    boxes: np.ndarray,
    labels: Sequence[Any] | np.ndarray,
    indexes: Sequence[int] | np.ndarray | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> list[dict]:
    """The stored form of ``fo.Detection`` labels, one dict per row.

    Args:
        boxes: ``(n, 4)`` relative ``[x, y, w, h]``.
        labels: ``n`` class names.
        indexes: ``n`` track ids (``Detection.index``), or ``None``.
        attributes: extra label attributes with one value for every label
            (e.g. ``{"annotator": "r1"}``); declare them on the field
            (:func:`declare_frame_field`).
    """
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    ids = object_ids(len(boxes))
    extra = dict(attributes or {})
    labels = [str(x) for x in labels]
    if indexes is None:
        docs = [{"_id": i, "_cls": "Detection", "attributes": {}, "tags": [], "label": lab, "bounding_box": b}
                for i, lab, b in zip(ids, labels, boxes.tolist(), strict=False)]
    else:
        idx = np.asarray(indexes, dtype=np.int64).tolist()
        docs = [{"_id": i, "_cls": "Detection", "attributes": {}, "tags": [], "label": lab, "bounding_box": b,
                 "index": t} for i, lab, b, t in zip(ids, labels, boxes.tolist(), idx, strict=False)]
    if extra:
        for d in docs:
            d.update(extra)
    return docs


def detections_doc(docs: list[dict]) -> dict:
    """The stored form of an ``fo.Detections`` holding ``docs`` (an empty list: explicit absence)."""
    return {"_cls": "Detections", "detections": docs}


def declare_frame_field(dataset: fo.Dataset, name: str, doc_type: type = fo.Detections,
                        attributes: Mapping[str, type] | None = None) -> None:
    """Declares the frame field ``name`` of label type ``doc_type`` and its labels' extra ``attributes``.

    ``attributes`` maps an attribute name to its FiftyOne field class (e.g.
    ``{"annotator": fo.StringField}``); they are declared on the field's
    label list (``<name>.detections.<attribute>``).
    """
    dataset.add_frame_field(name, fo.EmbeddedDocumentField, embedded_doc_type=doc_type)
    from agreement.fo.kinds import LABEL_TYPES

    list_attr = LABEL_TYPES.get(doc_type)
    for attr, ftype in (attributes or {}).items():
        path = f"{name}.{list_attr}.{attr}" if list_attr else f"{name}.{attr}"
        dataset.add_frame_field(path, ftype)


def insert_frames(dataset: fo.Dataset, frames: Iterable[dict], batch_size: int = 2000) -> int:
    """Inserts frame documents into ``dataset``'s frame collection, in batches; returns how many.

    Each item is ``{"_sample_id": ObjectId, "frame_number": int, <field>: <stored label>, ...}``
    for a sample of ``dataset`` (a video dataset); ``_id``, ``_dataset_id``,
    ``created_at`` and ``last_modified_at`` are added here. One batch is
    inserted (in a worker thread: MongoDB works while Python builds the next
    batch) while the next is built, so at most two batches are in memory.
    A frame that already exists for its sample is a ``BulkWriteError``
    (the collection's unique ``(_sample_id, frame_number)`` index).
    """
    if dataset.media_type != "video":
        raise ValueError(f"dataset {dataset.name!r} holds {dataset.media_type!r} media, not videos")
    coll = dataset._frame_collection
    dataset_id = dataset._doc.id
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    total, batch = 0, []
    pending: Future | None = None

    def flush(docs: list[dict]) -> None:
        for doc, oid in zip(docs, object_ids(len(docs)), strict=False):
            doc["_id"] = oid
            doc["_dataset_id"] = dataset_id
            doc["created_at"] = doc["last_modified_at"] = now
        coll.insert_many(docs, ordered=False)

    with ThreadPoolExecutor(max_workers=1) as pool:
        for doc in frames:
            batch.append(doc)
            if len(batch) >= batch_size:
                if pending is not None:
                    pending.result()
                pending, total, batch = pool.submit(flush, batch), total + len(batch), []
        if pending is not None:
            pending.result()
        if batch:
            flush(batch)
            total += len(batch)
    return total


def write_frame_values(dataset: fo.Dataset, field: str, values: Mapping[ObjectId, Any], batch_size: int = 500) -> int:
    """Sets frame field ``field`` of the frames of ``dataset`` named in ``values`` (frame ``_id`` -> the
    value as stored: a label's ``to_mongo()``, a number, ``None``) in one bulk pass: one ``UpdateOne`` per
    frame document (``last_modified_at`` stamped), sent unordered in batches of ``batch_size``. What
    ``set_values("frames.<field>", ...)`` stores, without building its per-frame pipeline; the field is
    declared by the caller. Returns the number of frames matched.
    """
    from pymongo import UpdateOne

    coll = dataset._frame_collection
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    ops = [UpdateOne({"_id": fid}, {"$set": {field: value, "last_modified_at": now}}) for fid, value in values.items()]
    return sum(coll.bulk_write(ops[i:i + batch_size], ordered=False).matched_count
               for i in range(0, len(ops), batch_size))
