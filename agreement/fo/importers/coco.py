"""Import and export of the multi-rater COCO layout (KαLOS tool) to and from FiftyOne.

Import builds a dataset in either layout:

* ``layout="fields"``: one ``Detections`` field per rater, named after the
  rater (prefixed ``rater_`` when the id is not a valid field name);
* ``layout="attribute"``: one ``Detections`` field (``field``, default
  ``"ground_truth"``) whose labels carry the rater in ``rater_attr``.

Both layouts also get a sample-level list field ``raters`` (the image's
``rater_list``). An assigned rater's field is an empty ``Detections()`` when
they drew nothing (explicit absence); an unassigned rater's field is ``None``
(implicit absence). Polygons become, by choice, a ``Polylines`` field beside
each box field (``<box field>_polygons``, lossless), instance masks on the
detections (rasterised with OpenCV inside the box, lossy), or are dropped.

Every label carries ``coco_id`` (the annotation id) and the annotation's other
keys (``area``, ``iscrowd``, ...); samples carry ``coco_id`` (the image id);
the dataset's ``info["iaa_coco"]`` keeps categories, original rater ids and the
layout, so that :func:`export_multi_rater_coco` reproduces the file.
"""

from __future__ import annotations

import os
import re
import uuid
import warnings
from typing import Any, Sequence

import cv2
import numpy as np

import fiftyone as fo

from agreement.core.data import MultiRaterAnnotations
from agreement.core.validation import AnnotationError
from agreement.fo.importers.media_types import decide_media_type, media_sample, set_empty_dataset_media_type
from agreement.fo.storage.reading import read_annotations
from agreement.io.coco import MultiRaterCoco, read_multi_rater_coco, write_multi_rater_coco

__all__ = ["import_multi_rater_coco", "export_multi_rater_coco", "rater_field_name"]

LAYOUTS = ("fields", "attribute")
POLYGON_MODES = ("polylines", "masks", "none")
# sample field names an importer never gives a rater (FiftyOne's own fields and the plugin's)
RESERVED_FIELDS = {"id", "filepath", "tags", "metadata", "created_at", "last_modified_at", "raters", "coco_id", "frames"}
INFO_KEY = "iaa_coco"


def rater_field_name(rater: str) -> str:
    """A valid, non-reserved FiftyOne field name for a rater id (``"r1"`` -> ``"r1"``, ``"7"`` -> ``"rater_7"``)."""
    name = re.sub(r"\W", "_", str(rater))
    if not name or not re.match(r"^[A-Za-z][A-Za-z0-9_]*$", name) or name in RESERVED_FIELDS:
        name = f"rater_{name}"
    return name


def _mask(rings: list[np.ndarray], box: np.ndarray, W: float, H: float) -> np.ndarray | None:
    x, y, w, h = box * [W, H, W, H]
    mw, mh = max(1, int(round(w))), max(1, int(round(h)))
    mask = np.zeros((mh, mw), dtype=np.uint8)
    pts = [np.round((r * [W, H] - [x, y]) * [mw / max(w, 1e-9), mh / max(h, 1e-9)]).astype(np.int32) for r in rings]
    cv2.fillPoly(mask, pts, 1)
    return mask.astype(bool)


def import_multi_rater_coco(
    coco_path: str | os.PathLike,
    dataset_name: str | None = None,
    layout: str = "fields",
    polygons: str = "polylines",
    field: str = "ground_truth",
    rater_attr: str = "annotator",
    image_dir: str | os.PathLike | None = None,
    overwrite: bool = False,
    persistent: bool = False,
    box_policy: str = "clip",
) -> fo.Dataset:
    """Builds a FiftyOne dataset from a multi-rater COCO file.

    Nothing is half-imported. The file is parsed and fully checked first
    (:func:`agreement.io.coco.parse_multi_rater_coco` lists the checks: types,
    unique ids, dangling references), the samples are built in memory, then
    written to a new non-persistent dataset under a temporary name. Only once
    that dataset is complete does it take ``dataset_name``: an existing
    dataset of that name (``overwrite=True``) is renamed aside, the new one
    renamed in, and the old one deleted last. A failure at any stage deletes
    the temporary dataset and, if the swap had begun, gives the old dataset
    its name back, so a failed import leaves no dataset behind and a failed
    overwrite leaves the previous dataset as it was.

    Args:
        coco_path: the JSON file.
        dataset_name: name of the new dataset (default: the file's stem).
        layout: ``"fields"`` (one field per rater) or ``"attribute"``.
        polygons: ``"polylines"``, ``"masks"`` or ``"none"``.
        field: the label field of the ``attribute`` layout.
        rater_attr: the rater attribute of the ``attribute`` layout.
        image_dir: where the images are (default: the file's folder); the
            files need not exist.
        overwrite: replace an existing dataset of that name (only once the
            new one is complete).
        persistent: keep the dataset after the process exits.
        box_policy: a box past the image border is clipped (``"clip"``), dropped
            (``"drop"``) or refused (``"error"``), see
            :func:`agreement.io.coco.parse_multi_rater_coco`; the repairs are
            recorded in ``dataset.info["iaa_coco"]["repairs"]`` (counts per
            rater and a few located examples).

    Raises:
        AnnotationError: for bad input, naming the file, the image and the
            annotation; or rater ids whose field names clash.
        ValueError: for an unknown layout or polygon mode, an invalid
            ``field`` name, or an existing dataset without ``overwrite``.
    """
    _check_options(layout, polygons, field)
    name = dataset_name or os.path.splitext(os.path.basename(os.fspath(coco_path)))[0]
    if fo.dataset_exists(name) and not overwrite:
        raise ValueError(f"dataset {name!r} already exists; pass overwrite=True or another dataset_name")
    coco = read_multi_rater_coco(coco_path, box_policy=box_policy)
    _check_extra_keys(coco, {rater_attr} if layout == "attribute" else set(), os.fspath(coco_path))
    rings = coco.annotations.polygons
    if polygons == "polylines" and (rings is None or not any(rings)):
        polygons = "none"  # no annotation has a segmentation: no empty ``_polygons`` fields
    rater_fields = _rater_fields(coco.annotations.raters, layout, field, polygons)
    image_dir = os.fspath(image_dir) if image_dir is not None else os.path.dirname(os.path.abspath(coco_path))
    media = decide_media_type(_filepaths(coco, image_dir), reason="COCO annotations describe images")
    samples = _build_samples(coco=coco, rater_fields=rater_fields, layout=layout, polygons=polygons,
                             rater_attr=rater_attr, image_dir=image_dir, media_type=media.media_type)
    info = {
        "source": os.path.basename(os.fspath(coco_path)),
        "layout": layout,
        "polygons": polygons,
        "field": field if layout == "attribute" else None,
        "rater_attr": rater_attr if layout == "attribute" else None,
        "rater_fields": rater_fields,
        "rater_ids": dict(coco.rater_ids),
        "categories": coco.categories,
        "info": coco.info,
        "media": media.to_dict(),
        "box_policy": box_policy,
        "repairs": coco.repairs.as_dict(),
    }
    dataset = _write_temporary(name, samples, rater_fields, polygons, info, media.media_type)
    return swap_in(dataset, name, overwrite=overwrite, persistent=persistent)


def _check_options(layout: str, polygons: str, field: str) -> None:
    """The options, before the file is read."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if polygons not in POLYGON_MODES:
        raise ValueError(f"polygons must be one of {POLYGON_MODES}, got {polygons!r}")
    if layout == "attribute" and (not re.match(r"^[A-Za-z][A-Za-z0-9_]*$", field) or field in RESERVED_FIELDS):
        raise ValueError(f"invalid label field name {field!r}")


def _check_extra_keys(coco: MultiRaterCoco, also_reserved: set[str], source: str) -> None:
    """An annotation's extra keys become label attributes: none may be a field
    FiftyOne's ``Detection``/``Polyline`` define, nor one this import writes
    (``coco_id``, the rater attribute), which would crash or be overwritten."""
    reserved = {*fo.Detection._fields_ordered, *fo.Polyline._fields_ordered, "_id", "coco_id", *also_reserved}
    ann = coco.annotations
    for i, aid in enumerate(ann.label_ids):
        clash = sorted(reserved.intersection(coco.annotation_extras.get(aid, {})))
        if clash:
            img = coco.images[ann.sample_index[i]]
            raise AnnotationError(
                f"{source}: annotation {aid!r} on image {img['id']!r} ({img.get('file_name', 'no file_name')}) "
                f"has the key(s) {clash}, which the FiftyOne label it becomes already defines or this import writes: "
                "expected other names for extra annotation keys"
            )


def _rater_fields(raters: Sequence[str], layout: str, field: str, polygons: str) -> dict[str, str]:
    """The label field of each rater; rater ids whose fields (or ``_polygons`` fields) clash are an error."""
    if layout == "attribute":
        return {r: field for r in raters}
    rater_fields = {r: rater_field_name(r) for r in raters}
    names = list(rater_fields.values())
    if polygons == "polylines":
        names += [f"{f}_polygons" for f in rater_fields.values()]
    if len(set(names)) != len(names):
        raise AnnotationError(f"rater ids {list(raters)} map to clashing field names {rater_fields}")
    return rater_fields


def _filepaths(coco: MultiRaterCoco, image_dir: str) -> list[str]:
    """The file path of each image of the file, in order."""
    return [os.path.join(image_dir, img.get("file_name", f"{img['id']}.jpg")) for img in coco.images]


def _build_samples(
    coco: MultiRaterCoco, rater_fields: dict[str, str], layout: str, polygons: str, rater_attr: str, image_dir: str,
    media_type: str = "image",
) -> list[fo.Sample]:
    """One in-memory sample per image (nothing is written), of ``media_type`` whatever the file names say."""
    ann = coco.annotations
    sizes = ann.image_sizes  # (S, 2), NaN where unknown, once the corpus is built
    samples = []
    for s, (img, path) in enumerate(zip(coco.images, _filepaths(coco, image_dir), strict=False)):
        W, H = sizes[s]
        sample = media_sample(
            path, media_type,
            metadata=fo.ImageMetadata(width=int(W), height=int(H)),
            coco_id=img["id"],
            raters=[str(r) for r in img["rater_list"]],
        )
        per_field: dict[str, tuple[list, list]] = {}
        for r in np.flatnonzero(ann.assigned[s]):
            rater = ann.raters[r]
            dets, polys = per_field.setdefault(rater_fields[rater], ([], []))
            for i in range(*ann.rows(s, int(r)).indices(len(ann))):
                det, poly = _labels(coco=coco, i=i, rater=rater if layout == "attribute" else None,
                                    rater_attr=rater_attr, polygons=polygons, W=W, H=H)
                dets.append(det)
                if poly is not None:
                    polys.append(poly)
        for fname, (dets, polys) in per_field.items():
            sample[fname] = fo.Detections(detections=dets)
            if polygons == "polylines":
                sample[f"{fname}_polygons"] = fo.Polylines(polylines=polys)
        samples.append(sample)
    return samples


def _labels(
    coco: MultiRaterCoco, i: int, rater: str | None, rater_attr: str, polygons: str, W: float, H: float
) -> tuple[fo.Detection, fo.Polyline | None]:
    """The detection of annotation row ``i`` and, in ``polylines`` mode, its polyline."""
    ann = coco.annotations
    attrs = {"coco_id": ann.label_ids[i], **coco.annotation_extras.get(ann.label_ids[i], {})}
    if rater is not None:
        attrs[rater_attr] = rater
    rings = ann.polygons[i] if ann.polygons is not None else None
    det = fo.Detection(label=ann.labels[i], bounding_box=ann.boxes[i].tolist(), **attrs)
    if rings and polygons == "masks":
        det.mask = _mask(rings, ann.boxes[i], W, H)
    poly = None
    if rings and polygons == "polylines":
        poly = fo.Polyline(label=ann.labels[i], points=[r_.tolist() for r_ in rings], closed=True, filled=True, **attrs)
    return det, poly


def temporary_name(name: str, purpose: str) -> str:
    """A fresh dataset name for a dataset built before it takes ``name``.

    Args:
        name: The dataset's final name.
        purpose: What the temporary dataset is for (``"import"``, ``"replaced"`` ...), part of the name.

    Returns:
        ``"<name>-iaa-<purpose>-<12 random hex digits>"``.
    """
    return f"{name}-iaa-{purpose}-{uuid.uuid4().hex[:12]}"


def _write_temporary(
    name: str, samples: list[fo.Sample], rater_fields: dict[str, str], polygons: str, info: dict,
    media_type: str = "image",
) -> fo.Dataset:
    """A complete, non-persistent dataset under a temporary name; deleted again if writing fails."""
    dataset = fo.Dataset(temporary_name(name, "import"), persistent=False)
    try:
        set_empty_dataset_media_type(dataset, media_type)
        # declare every rater field up front so that a rater absent from the
        # first samples still gets a typed (None-valued) field
        for fname in dict.fromkeys(rater_fields.values()):
            dataset.add_sample_field(fname, fo.EmbeddedDocumentField, embedded_doc_type=fo.Detections)
            if polygons == "polylines":
                dataset.add_sample_field(f"{fname}_polygons", fo.EmbeddedDocumentField, embedded_doc_type=fo.Polylines)
        dataset.add_samples(samples, dynamic=True, validate=False, progress=False)
        dataset.info[INFO_KEY] = info
        dataset.save()
    except BaseException:
        discard_dataset(dataset)
        raise
    return dataset


def swap_in(dataset: fo.Dataset, name: str, overwrite: bool, persistent: bool) -> fo.Dataset:
    """Gives the complete ``dataset`` its final name; the old dataset of that
    name is renamed aside first and deleted only after the swap succeeded.

    Args:
        dataset: The complete dataset, under a temporary name (:func:`temporary_name`).
        name: Its final name.
        overwrite: Whether an existing dataset called ``name`` may be replaced.
        persistent: FiftyOne's ``persistent`` flag for the renamed dataset.

    Returns:
        ``dataset``, renamed. On failure it is discarded and the previous dataset keeps ``name``.

    Raises:
        ValueError: A dataset called ``name`` exists and ``overwrite`` is false.
    """
    old = None
    try:
        if fo.dataset_exists(name):
            if not overwrite:  # created by someone else while we imported
                raise ValueError(f"dataset {name!r} already exists; pass overwrite=True or another dataset_name")
            old = fo.load_dataset(name)
            _rename(old, temporary_name(name, "replaced"))
        _rename(dataset, name)
        dataset.persistent = persistent
    except BaseException:
        discard_dataset(dataset)
        if old is not None:
            _rename(old, name)
        raise
    if old is not None:
        try:
            old.delete()
        except Exception as e:  # the import itself succeeded
            warnings.warn(f"dataset {name!r} was replaced, but the previous one could not be deleted "
                          f"and remains as {old.name!r}: {e}", stacklevel=1)
    return dataset


def _rename(dataset: fo.Dataset, name: str) -> None:
    """FiftyOne renames a dataset by assigning its name (a no-op when unchanged)."""
    dataset.name = name


def discard_dataset(dataset: fo.Dataset) -> None:
    """Deletes a partly built dataset; a failure to do so is a warning, not a new error.

    Args:
        dataset: The dataset to delete (nothing happens when it is already deleted).
    """
    try:
        if not dataset.deleted:
            dataset.delete()
    except Exception as e:  # the original error matters more; the dataset is non-persistent anyway
        warnings.warn(f"could not delete the incomplete dataset {dataset.name!r}: {e}", stacklevel=1)


def export_multi_rater_coco(
    samples,
    path: str | os.PathLike,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str | None = None,
    raters_field: str | None = "raters",
) -> dict:
    """Writes ``samples`` back to the multi-rater COCO layout.

    Without ``fields``/``field``, the layout recorded at import is used.
    Polygons come from the ``<box field>_polygons`` Polylines fields when they
    exist (lossless), else from instance masks (contours: lossy), else are
    omitted. Returns a summary ``{"images", "annotations", "raters"}``.
    """
    dataset = samples._root_dataset
    meta = dataset.info.get(INFO_KEY, {})
    if fields is None and field is None:
        fields, field, rater_attr = _recorded_export_layout(meta, rater_attr)
    schema = samples.get_field_schema()
    if raters_field is not None and raters_field not in schema:
        raters_field = None
    read = _read_for_export(samples, fields, field, rater_attr, raters_field)
    ann = read.annotations
    per_label, polygons_by_label = _stored_label_extras(samples, schema, read.label_fields)
    polys = []
    for i, lid in enumerate(ann.label_ids):
        p = polygons_by_label.get(lid)
        if isinstance(p, np.ndarray):  # an instance mask: trace its contours
            p = _mask_polygons(p, ann.boxes[i])
        polys.append(p)
    coco_ids = [per_label.get(lid, {}).get("coco_id") for lid in ann.label_ids]
    extras = {}
    for lid, cid in zip(ann.label_ids, coco_ids, strict=True):
        e = {k: v for k, v in per_label.get(lid, {}).items() if k != "coco_id" and v is not None}
        if e and cid is not None:
            extras[cid] = e
    sample_coco_ids = samples.values("coco_id") if "coco_id" in schema else [None] * ann.num_samples
    image_ids = [c if c is not None else k + 1 for k, c in enumerate(sample_coco_ids)]
    rater_ids = dict(meta.get("rater_ids", {}))
    inverse = {v: k for k, v in (meta.get("rater_fields") or {}).items()} if fields is not None else {}
    names = [inverse.get(r, r) for r in ann.raters]
    corpus = MultiRaterAnnotations(
        sample_ids=np.asarray(image_ids, dtype=object),
        raters=tuple(names),
        assigned=ann.assigned,
        boxes=ann.boxes,
        labels=ann.labels,
        label_ids=np.asarray(coco_ids + [None], dtype=object)[:-1],
        sample_index=ann.sample_index,
        rater_index=ann.rater_index,
        image_sizes=ann.image_sizes,
        polygons=polys,
        sample_names=ann.sample_names,
    )
    categories = meta.get("categories") or [
        {"id": k + 1, "name": name} for k, name in enumerate(sorted(set(ann.labels.tolist())))
    ]
    images = [
        {"id": image_ids[s], "file_name": str(ann.sample_names[s])} for s in range(ann.num_samples)
    ]
    coco = MultiRaterCoco(corpus, images, categories, extras, rater_ids, dict(meta.get("info") or {}))
    write_multi_rater_coco(coco, path)
    return {"images": ann.num_samples, "annotations": len(ann), "raters": list(names)}


def _recorded_export_layout(meta: dict, rater_attr: str | None) -> tuple:
    """``(fields, field, rater_attr)`` of the layout recorded at import (``meta``: ``dataset.info["iaa_coco"]``)."""
    fields = field = None
    if meta.get("layout") == "attribute":
        field, rater_attr = meta["field"], meta.get("rater_attr") or "annotator"
    elif meta.get("rater_fields"):
        fields = sorted(set(meta["rater_fields"].values()))
    else:
        raise ValueError("give `fields` or `field` (this dataset was not imported from multi-rater COCO)")
    return fields, field, rater_attr


def _read_for_export(samples, fields, field, rater_attr, raters_field):
    """The read of ``samples`` to export (boxes past the border are errors), with image sizes: computed
    first when some are missing."""
    read = read_annotations(
        samples, fields=fields, field=field, rater_attr=rater_attr or "annotator",
        raters_field=raters_field if field is not None else None, box_policy="error", min_raters=1, image_sizes=True,
    )
    if np.isnan(read.annotations.image_sizes).any():
        samples._root_dataset.compute_metadata()
        read = read_annotations(
            samples, fields=fields, field=field, rater_attr=rater_attr or "annotator",
            raters_field=raters_field if field is not None else None, box_policy="error", min_raters=1, image_sizes=True,
        )
    return read


def _stored_label_extras(samples, schema, box_fields) -> tuple[dict, dict]:
    """Per label id of the box fields: its stored COCO extras (``coco_id``, ``area``, ``iscrowd``), and its
    polygon (the rings of the ``<box field>_polygons`` Polylines with its ``coco_id``, else its instance mask)."""
    extra_keys = ("coco_id", "area", "iscrowd")
    per_label: dict[str, dict[str, Any]] = {}
    polygons_by_label: dict[str, list] = {}
    for bf in box_fields:
        paths = [f"{bf}.detections.id"] + [f"{bf}.detections.{k}" for k in extra_keys] + [f"{bf}.detections.mask"]
        vals = samples.values(paths)
        for per_sample in zip(*vals, strict=True):
            if per_sample[0] is None:
                continue
            for lid, *rest in zip(*per_sample, strict=False):
                per_label[lid] = dict(zip(extra_keys, rest[:-1], strict=True))
                mask = rest[-1]
                if mask is not None:
                    polygons_by_label[lid] = mask
        pf = f"{bf}_polygons"
        if pf in schema:
            coco_ids, points = samples.values([f"{pf}.polylines.coco_id", f"{pf}.polylines.points"])
            by_coco = {}
            for cids, pts in zip(coco_ids, points, strict=True):
                for cid, p in zip(cids or [], pts or [], strict=False):
                    by_coco[cid] = [np.asarray(r, dtype=np.float64).reshape(-1, 2) for r in p]
            for lid, extra in per_label.items():
                if extra.get("coco_id") in by_coco:
                    polygons_by_label[lid] = by_coco[extra["coco_id"]]
    return per_label, polygons_by_label


def _mask_polygons(mask: np.ndarray, box: np.ndarray) -> list[np.ndarray] | None:
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    mh, mw = mask.shape
    rings = []
    for c in contours:
        pts = c.reshape(-1, 2).astype(np.float64)
        if len(pts) < 3:
            continue
        rel = np.stack([box[0] + (pts[:, 0] + 0.5) / mw * box[2], box[1] + (pts[:, 1] + 0.5) / mh * box[3]], axis=1)
        rings.append(rel)
    return rings or None
