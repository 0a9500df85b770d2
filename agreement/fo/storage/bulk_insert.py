"""New samples and labels written as raw documents, in bulk, exactly as FiftyOne writes them.

``Dataset.add_samples`` builds, validates and serialises one FiftyOne object
per sample and per label (mongoengine documents): an import that creates tens
of thousands of labels spends nearly all its time there (44,373 crowd
judgements: 16 s on two idle cores, ~27 s on a busy machine). Here the documents are built as plain dicts and inserted
with one ``insert_many``:

* :func:`label_doc_builder` returns a function that makes the stored document
  of a new label of one class, from FiftyOne's own serialisation of an empty
  label of that class (``_id`` a fresh ``ObjectId`` when the class has ids,
  ``_cls`` its class name, defaults such as ``tags: []``), plus the given
  attributes;
* :func:`insert_sample_docs` completes sample documents the way
  ``Dataset._make_dict`` does (normalised ``filepath``, ``tags``,
  ``_media_type``, ``_rand``, ``_dataset_id``, ``created_at`` and
  ``last_modified_at``; ``None`` values left out, as FiftyOne leaves them out),
  checks them against the dataset's declared schema and inserts them.

The caller declares the sample fields first (``dataset.add_sample_field``):
nothing here guesses a schema, so a document naming an undeclared field, or an
embedded document of another class than its field declares, is refused,
naming the sample, the field and the problem. Image-like samples only: video
samples have frame documents and groups have slices, which ``add_samples``
writes.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping

from bson import ObjectId
from pymongo.errors import BulkWriteError

import fiftyone as fo
import fiftyone.core.media as fom
import fiftyone.core.odm.sample as fos_odm
import fiftyone.core.storage as fost

__all__ = ["label_doc_builder", "insert_sample_docs", "RESERVED_SAMPLE_KEYS"]

#: Keys of a sample document that :func:`insert_sample_docs` writes itself (a document passing them is refused).
RESERVED_SAMPLE_KEYS = frozenset({"_id", "id", "_dataset_id", "created_at", "last_modified_at", "_media_type", "_rand"})

_random = random.Random()
_FIFTYONE_RAND = getattr(fos_odm, "_generate_rand", None)


def _rand() -> float:
    """FiftyOne's ``_rand`` of a new sample (its own generator when it has one, else its formula, in [0.999, 1))."""
    return float(_FIFTYONE_RAND()) if callable(_FIFTYONE_RAND) else _random.random() * 0.001 + 0.999


def label_doc_builder(label_cls: type) -> Callable[..., dict]:
    """A function making the stored document of a new label of ``label_cls``, as FiftyOne would store it.

    The template is FiftyOne's own serialisation of ``label_cls()`` (its
    ``_cls``, its default values such as ``tags: []`` or ``attributes: {}``);
    each call copies it, gives it a fresh ``_id`` when the class has ids
    (``Classification``, ``Detection``, ... but not ``Classifications``) and
    sets the attributes given, in their stored form (strings, numbers, lists;
    a nested label as its own document). An attribute given as ``None`` is left
    out, as FiftyOne leaves it out.

    Args:
        label_cls: a FiftyOne label class (``fo.Classification``, ``fo.Detections``, ...).

    Returns:
        ``make(**attributes) -> dict``.

    Examples:
        >>> make = label_doc_builder(fo.Classification)
        >>> doc = make(label="cat", annotator="w1")  # {"_id": ObjectId(...), "_cls": "Classification", ...}
    """
    template = dict(label_cls().to_mongo())
    has_id = "_id" in template
    template.pop("_id", None)
    lists = [k for k, v in template.items() if isinstance(v, list)]
    dicts = [k for k, v in template.items() if isinstance(v, dict)]

    def make(**attributes: Any) -> dict:
        doc: dict = {"_id": ObjectId()} if has_id else {}
        doc.update(template)
        for key in lists:  # a default list or dict of its own per label, as mongoengine gives each document
            doc[key] = list(template[key])
        for key in dicts:
            doc[key] = dict(template[key])
        for key, value in attributes.items():
            if value is not None:
                doc[key] = value
        return doc

    return make


def _declared(dataset: fo.Dataset) -> dict[str, Any]:
    """The dataset's sample fields by stored name (``id`` is stored as ``_id``)."""
    return {getattr(f, "db_field", None) or name: f
            for name, f in dataset.get_field_schema(include_private=True).items()}


def _check_doc(index: int, doc: Mapping[str, Any], declared: Mapping[str, Any]) -> None:
    """Refuses what FiftyOne's validation would refuse or what would corrupt the schema, naming sample and field."""
    where = f"sample {index} ({doc.get('filepath')!r})"
    if not isinstance(doc.get("filepath"), str) or not doc["filepath"]:
        raise ValueError(f"{where}: 'filepath' must be a non-empty string, got {doc.get('filepath')!r}")
    for key, value in doc.items():
        if key in RESERVED_SAMPLE_KEYS:
            raise ValueError(f"{where}: field {key!r} is written by the bulk insert itself; leave it out")
        if value is None:
            continue
        field = declared.get(key)
        if field is None:
            raise ValueError(f"{where}: field {key!r} is not declared on the dataset; declare it with "
                             "dataset.add_sample_field before inserting")
        doc_type = getattr(field, "document_type", None)
        if isinstance(field, fo.EmbeddedDocumentField) and doc_type is not None:
            cls = value.get("_cls") if isinstance(value, Mapping) else None
            if cls != doc_type.__name__:
                raise ValueError(f"{where}: field {key!r} holds {doc_type.__name__} documents, got "
                                 f"{cls or type(value).__name__!r}")


def _complete(doc: Mapping[str, Any], media_type: str, dataset_id: ObjectId, now: datetime) -> dict:
    """The stored document of a new sample, in ``Dataset._make_dict``'s key order."""
    filepath = fost.normalize_path(doc["filepath"])
    out: dict = {"filepath": filepath, "tags": list(doc.get("tags") or [])}
    if doc.get("metadata") is not None:
        out["metadata"] = doc["metadata"]
    out["_media_type"] = media_type
    out["_rand"] = _rand()
    out.update((k, v) for k, v in doc.items() if v is not None and k not in ("filepath", "tags", "metadata"))
    out["_dataset_id"] = dataset_id
    out["created_at"] = now
    out["last_modified_at"] = now
    return out


def insert_sample_docs(dataset: fo.Dataset, docs: Iterable[Mapping[str, Any]], *,
                       media_type: str | None = None) -> list[str]:
    """Inserts new samples given as documents, in one bulk write, as ``dataset.add_samples`` would store them.

    Args:
        dataset: a dataset (not a view) whose sample fields the documents use are declared.
        docs: one mapping per sample: ``filepath`` (normalised as FiftyOne normalises it), optional ``tags`` and
            ``metadata``, and declared fields in their stored form (labels from :func:`label_doc_builder`).
        media_type: every sample's media type; default: FiftyOne's reading of each file name's extension. An
            empty dataset without a media type takes it (as it would take its first sample's).

    Returns:
        The new samples' ids, in order.

    Raises:
        ValueError: a document without a ``filepath``, with an undeclared field, with a label of another class
            than its field declares, with a key the insert writes itself, of a media type other than the
            dataset's, a video or group dataset (all checked before anything is written), or a write the
            database refuses (naming the sample; the samples before it stay inserted).
    """
    docs = list(docs)
    if not docs:
        return []
    declared = _declared(dataset)
    for i, doc in enumerate(docs):
        _check_doc(i, doc, declared)
    types = [media_type or fom.get_media_type(fost.normalize_path(d["filepath"])) for d in docs]
    wanted = dataset.media_type or types[0]
    for i, kind in enumerate(types):
        if kind in (fom.VIDEO, fom.GROUP) or kind != wanted:
            raise ValueError(f"sample {i} ({docs[i]['filepath']!r}): media type {kind!r} cannot be bulk inserted "
                             f"into a dataset of media type {wanted!r} (only image-like samples of the dataset's "
                             "media type; use dataset.add_samples)")
    if dataset.media_type != wanted:
        dataset.media_type = wanted
    now = datetime.utcnow()
    stored = [_complete(d, kind, dataset._doc.id, now) for d, kind in zip(docs, types, strict=True)]
    try:
        dataset._sample_collection.insert_many(stored, ordered=True)  # adds each "_id"
    except BulkWriteError as e:
        first = e.details["writeErrors"][0]
        index = first.get("index", 0)
        raise ValueError(f"sample {index} ({stored[index]['filepath']!r}): the database refused it: "
                         f"{first.get('errmsg')}") from e
    dataset.reload()
    return [str(d["_id"]) for d in stored]
