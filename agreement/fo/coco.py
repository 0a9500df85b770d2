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
from typing import Any, Sequence

import cv2
import numpy as np

import fiftyone as fo

from agreement.coco import MultiRaterCoco, read_multi_rater_coco, write_multi_rater_coco
from agreement.data import MultiRaterAnnotations
from agreement.fo.reading import read_annotations
from agreement.validation import AnnotationError

__all__ = ["import_multi_rater_coco", "export_multi_rater_coco", "rater_field_name"]

LAYOUTS = ("fields", "attribute")
POLYGON_MODES = ("polylines", "masks", "none")
_RESERVED = {"id", "filepath", "tags", "metadata", "created_at", "last_modified_at", "raters", "coco_id", "frames"}
INFO_KEY = "iaa_coco"


def rater_field_name(rater: str) -> str:
    """A valid, non-reserved FiftyOne field name for a rater id (``"r1"`` -> ``"r1"``, ``"7"`` -> ``"rater_7"``)."""
    name = re.sub(r"\W", "_", str(rater))
    if not name or not re.match(r"^[A-Za-z][A-Za-z0-9_]*$", name) or name in _RESERVED:
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
) -> fo.Dataset:
    """Builds a FiftyOne dataset from a multi-rater COCO file.

    Args:
        coco_path: the JSON file.
        dataset_name: name of the new dataset (default: the file's stem).
        layout: ``"fields"`` (one field per rater) or ``"attribute"``.
        polygons: ``"polylines"``, ``"masks"`` or ``"none"``.
        field: the label field of the ``attribute`` layout.
        rater_attr: the rater attribute of the ``attribute`` layout.
        image_dir: where the images are (default: the file's folder); the
            files need not exist.
        overwrite: replace an existing dataset of that name.
        persistent: keep the dataset after the process exits.

    Raises:
        AnnotationError: for bad input, naming the image or annotation.
        ValueError: for an unknown layout or polygon mode, or an existing
            dataset without ``overwrite``.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if polygons not in POLYGON_MODES:
        raise ValueError(f"polygons must be one of {POLYGON_MODES}, got {polygons!r}")
    coco = read_multi_rater_coco(coco_path)
    name = dataset_name or os.path.splitext(os.path.basename(os.fspath(coco_path)))[0]
    if fo.dataset_exists(name):
        if not overwrite:
            raise ValueError(f"dataset {name!r} already exists; pass overwrite=True or another dataset_name")
        fo.delete_dataset(name)
    image_dir = os.fspath(image_dir) if image_dir is not None else os.path.dirname(os.path.abspath(coco_path))
    ann = coco.annotations
    if layout == "fields":
        rater_fields = {r: rater_field_name(r) for r in ann.raters}
        if len(set(rater_fields.values())) != len(rater_fields):
            raise AnnotationError(f"rater ids {list(ann.raters)} map to clashing field names {rater_fields}")
    else:
        if not re.match(r"^[A-Za-z][A-Za-z0-9_]*$", field) or field in _RESERVED:
            raise ValueError(f"invalid label field name {field!r}")
        rater_fields = {r: field for r in ann.raters}

    samples = []
    for s, img in enumerate(coco.images):
        W, H = ann.image_sizes[s]
        sample = fo.Sample(
            filepath=os.path.join(image_dir, img.get("file_name", f"{img['id']}.jpg")),
            metadata=fo.ImageMetadata(width=int(W), height=int(H)),
            coco_id=img["id"],
            raters=[str(r) for r in img["rater_list"]],
        )
        fields_of_sample: dict[str, tuple[list, list]] = {}
        for r in np.flatnonzero(ann.assigned[s]):
            rater = ann.raters[r]
            fname = rater_fields[rater]
            dets, polys = fields_of_sample.setdefault(fname, ([], []))
            for i in range(*ann.rows(s, r).indices(len(ann))):
                extra = coco.annotation_extras.get(ann.label_ids[i], {})
                attrs = {"coco_id": ann.label_ids[i], **extra}
                if layout == "attribute":
                    attrs[rater_attr] = rater
                rings = ann.polygons[i] if ann.polygons is not None else None
                det = fo.Detection(label=ann.labels[i], bounding_box=ann.boxes[i].tolist(), **attrs)
                if rings and polygons == "masks":
                    det.mask = _mask(rings, ann.boxes[i], W, H)
                dets.append(det)
                if rings and polygons == "polylines":
                    polys.append(
                        fo.Polyline(label=ann.labels[i], points=[r_.tolist() for r_ in rings], closed=True, filled=True, **attrs)
                    )
        for fname, (dets, polys) in fields_of_sample.items():
            sample[fname] = fo.Detections(detections=dets)
            if polygons == "polylines":
                sample[f"{fname}_polygons"] = fo.Polylines(polylines=polys)
        samples.append(sample)

    dataset = fo.Dataset(name, persistent=persistent)
    # declare every rater field up front so that a rater absent from the first
    # samples still gets a typed (None-valued) field
    for fname in dict.fromkeys(rater_fields.values()):
        dataset.add_sample_field(fname, fo.EmbeddedDocumentField, embedded_doc_type=fo.Detections)
        if polygons == "polylines":
            dataset.add_sample_field(f"{fname}_polygons", fo.EmbeddedDocumentField, embedded_doc_type=fo.Polylines)
    dataset.add_samples(samples, dynamic=True, validate=False, progress=False)
    dataset.info[INFO_KEY] = {
        "source": os.path.basename(os.fspath(coco_path)),
        "layout": layout,
        "polygons": polygons,
        "field": field if layout == "attribute" else None,
        "rater_attr": rater_attr if layout == "attribute" else None,
        "rater_fields": rater_fields,
        "rater_ids": {k: v for k, v in coco.rater_ids.items()},
        "categories": coco.categories,
        "info": coco.info,
    }
    dataset.save()
    return dataset


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
        if meta.get("layout") == "attribute":
            field, rater_attr = meta["field"], meta.get("rater_attr") or "annotator"
        elif meta.get("rater_fields"):
            fields = sorted(set(meta["rater_fields"].values()))
        else:
            raise ValueError("give `fields` or `field` (this dataset was not imported from multi-rater COCO)")
    schema = samples.get_field_schema()
    if raters_field is not None and raters_field not in schema:
        raters_field = None
    read = read_annotations(
        samples, fields=fields, field=field, rater_attr=rater_attr or "annotator",
        raters_field=raters_field if field is not None else None, box_policy="error", min_raters=1, image_sizes=True,
    )
    ann = read.annotations
    if np.isnan(ann.image_sizes).any():
        dataset.compute_metadata()
        read = read_annotations(
            samples, fields=fields, field=field, rater_attr=rater_attr or "annotator",
            raters_field=raters_field if field is not None else None, box_policy="error", min_raters=1, image_sizes=True,
        )
        ann = read.annotations
    box_fields = read.label_fields
    extra_keys = ("coco_id", "area", "iscrowd")
    per_label: dict[str, dict[str, Any]] = {}
    polygons_by_label: dict[str, list] = {}
    for bf in box_fields:
        paths = [f"{bf}.detections.id"] + [f"{bf}.detections.{k}" for k in extra_keys] + [f"{bf}.detections.mask"]
        vals = samples.values(paths)
        for per_sample in zip(*vals):
            if per_sample[0] is None:
                continue
            for lid, *rest in zip(*per_sample):
                per_label[lid] = dict(zip(extra_keys, rest[:-1]))
                mask = rest[-1]
                if mask is not None:
                    polygons_by_label[lid] = mask
        pf = f"{bf}_polygons"
        if pf in schema:
            coco_ids, points = samples.values([f"{pf}.polylines.coco_id", f"{pf}.polylines.points"])
            by_coco = {}
            for cids, pts in zip(coco_ids, points):
                for cid, p in zip(cids or [], pts or []):
                    by_coco[cid] = [np.asarray(r, dtype=np.float64).reshape(-1, 2) for r in p]
            for lid, extra in per_label.items():
                if extra.get("coco_id") in by_coco:
                    polygons_by_label[lid] = by_coco[extra["coco_id"]]
    polys = []
    for i, lid in enumerate(ann.label_ids):
        p = polygons_by_label.get(lid)
        if isinstance(p, np.ndarray):  # an instance mask: trace its contours
            p = _mask_polygons(p, ann.boxes[i])
        polys.append(p)
    coco_ids = [per_label.get(lid, {}).get("coco_id") for lid in ann.label_ids]
    extras = {}
    for lid, cid in zip(ann.label_ids, coco_ids):
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
