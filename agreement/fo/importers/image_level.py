"""Image-level labels in one-export-per-rater imports: classes, tags and semantic masks.

:mod:`agreement.fo.importers.multi_rater` reads each rater's export with
FiftyOne's importer; the labels that are not instances come out as

* ``Classification`` (an image classification directory tree: the folder an
  image is in; ``_unlabeled`` gives no class),
* ``Classifications`` (the ``<tag>`` elements of a CVAT for images 1.1 XML),
* ``Segmentation`` (an image segmentation directory: a mask per image).

Classes and tags are one kind, ``class``: per rater and image the list of
class labels. ``label_type`` decides how they are written: ``"classification"``
(at most one per rater and image: a ``Classification`` field; an image with
several is an error naming the rater, the export and the image),
``"tags"`` (a ``Classifications`` field) or ``"auto"`` (tags when some rater
gave some image several classes, else one class). The same tag twice on one
image is kept once (counted as a repair). A rater whose format can hold
image-level classes (CVAT for images, a classification tree) gave, on every
image of its export, its classes, possibly none: a missing class, or explicit
absence of tags. A rater whose format cannot (COCO, VOC, YOLO, ...) gave
nothing (``None``).

Masks keep FiftyOne's ``mask_path`` (the export's mask file). Their
``mask_targets`` (pixel value -> class) are the ``mask_targets`` given, else
those the exports record (the same for every rater), else none (the pixel
values are the classes). Every mask is read once at import: it must be a 2-D
integer image, and with ``mask_targets`` its non-zero values must be targets.
"""

from __future__ import annotations

import os
from typing import Any, Mapping
from xml.etree import ElementTree

import numpy as np

import fiftyone as fo

from agreement.fo.importers.common import KindSpec, MultiRaterImportError

__all__ = ["IMAGE_KINDS", "LABEL_TYPES", "CLASS_CARRIERS", "class_labels", "image_kind_specs", "cvat_listed_labels",
           "check_listed"]

#: FiftyOne label type -> the kind its labels become.
IMAGE_KINDS = {fo.Classification: "class", fo.Classifications: "class", fo.Segmentation: "segmentation"}
#: How classes are written (``import_multi_rater(label_type=...)``).
LABEL_TYPES = ("auto", "classification", "tags")
#: Dataset types whose exports hold image-level classes, even where an image has none.
CLASS_CARRIERS = ("CVATImageDataset", "ImageClassificationDirectoryTree")
MAX_LISTED = 10


def class_labels(value: Any) -> list:
    """The class labels of a ``Classification`` / ``Classifications`` / ``Segmentation`` value (``None``: [])."""
    if value is None:
        return []
    if isinstance(value, fo.Classifications):
        return list(value.classifications)
    return [value]


def cvat_listed_labels(labels_path: str) -> set[str] | None:
    """The label names a CVAT for images XML declares in ``<meta>`` (``None`` when it declares none)."""
    try:
        meta = ElementTree.parse(labels_path).getroot().find("meta")
    except (ElementTree.ParseError, OSError):
        return None
    if meta is None:
        return None
    names = {name for el in meta.iter("label") if (name := el.findtext("name"))}  # not None, not ""
    return names or None


def check_listed(rater: str, path: str, images: Mapping[str, tuple], listed: set[str] | None) -> None:
    """A CVAT tag whose label the file's ``<meta>`` does not declare is an error naming rater, file and image."""
    if not listed:
        return
    for key, (_, _, labels) in images.items():
        bad = sorted({c.label for c in labels.get("class") or []} - listed)
        if bad:
            raise MultiRaterImportError(
                f"rater {rater!r}: {path!r}, image {key!r}: tag(s) {bad} not among the labels the file's <meta> "
                f"declares ({sorted(listed)})"
            )


def _dedupe_tags(per_rater: dict[str, dict], reports: dict) -> None:
    """The same class twice on one image by one rater is kept once (counted per rater)."""
    for rater, images in per_rater.items():
        n = 0
        for _, _, labels in images.values():
            got = labels.get("class")
            if not got:
                continue
            first: dict[str, Any] = {}
            for c in got:
                first.setdefault(c.label, c)
            kept = list(first.values())
            n += len(got) - len(kept)
            labels["class"] = kept
        if n:
            reports[rater].setdefault("repaired", {})["the same tag twice on an image -> once"] = n


def _class_spec(per_rater: dict[str, dict], label_type: str, paths: Mapping[str, str],
                declared: Mapping[str, list], reports: dict) -> KindSpec | None:
    """The ``class`` kind: ``Classification`` or ``Classifications``, with its classes (``None``: no class)."""
    _dedupe_tags(per_rater, reports)
    several = [(r, k, [c.label for c in labels["class"]]) for r, images in per_rater.items()
               for k, (_, _, labels) in images.items() if len(labels.get("class") or []) > 1]
    observed = {c.label for images in per_rater.values() for _, _, labels in images.values()
                for c in labels.get("class") or []}
    if not observed and label_type == "auto":
        return None
    if label_type == "classification" and several:
        r, k, got = several[0]
        raise MultiRaterImportError(
            f"rater {r!r}: {paths[r]!r}, image {k!r} has {len(got)} classes {got} ({len(several)} such images); "
            "label_type='classification' takes one class per rater and image: use label_type='tags'"
        )
    tags = label_type == "tags" or bool(several)
    order = [c for r in per_rater for c in declared.get(r) or []]
    classes = tuple(dict.fromkeys([*order, *sorted(observed)]))
    return KindSpec("_tags" if tags else "_class", fo.Classifications if tags else fo.Classification,
                    bare_alone=True, classes=classes)


def _targets(declared: Mapping[str, dict | None], given: Mapping | None) -> dict[int, str] | None:
    """The mask targets: ``given``, else the exports' (all the same), else ``None``."""
    if given:
        try:
            return {int(k): str(v) for k, v in given.items()}
        except (TypeError, ValueError) as e:
            raise MultiRaterImportError(f"mask_targets must map integer pixel values to class names, got {given!r}") from e
    found = {r: {int(k): str(v) for k, v in t.items()} for r, t in declared.items() if t}
    distinct = {tuple(sorted(t.items())) for t in found.values()}
    if len(distinct) > 1:
        raise MultiRaterImportError(f"the raters' exports record different mask_targets {found}; pass mask_targets")
    return dict(distinct.pop()) if distinct else None


def _check_masks(per_rater: dict[str, dict], paths: Mapping[str, str], targets: dict[int, str] | None,
                 reports: dict) -> None:
    """Every mask is a 2-D integer image whose non-zero values are targets; its values are reported."""
    for rater, images in per_rater.items():
        values: set[int] = set()
        for key, (_, _, labels) in images.items():
            for seg in labels.get("segmentation") or []:
                where = f"rater {rater!r}: {paths[rater]!r}, image {key!r}, mask {seg.mask_path!r}"
                try:
                    mask = seg.get_mask()
                except Exception as e:
                    raise MultiRaterImportError(f"{where}: cannot be read ({type(e).__name__}: {e})") from e
                mask = np.asarray(mask)
                if mask.ndim == 3 and mask.shape[2] == 1:
                    mask = mask[:, :, 0]
                if mask.ndim != 2 or not np.issubdtype(mask.dtype, np.integer):
                    raise MultiRaterImportError(f"{where}: a semantic mask must be a 2-D image of integer class "
                                                f"values, got shape {mask.shape} of {mask.dtype}")
                found = {int(v) for v in np.unique(mask)}
                if targets is not None:
                    unknown = sorted(found - set(targets) - {0})
                    if unknown:
                        raise MultiRaterImportError(f"{where}: pixel values {unknown[:MAX_LISTED]} are not among "
                                                    f"mask_targets {targets}")
                values |= found
        if values:
            reports[rater]["mask_values"] = sorted(values)


def image_kind_specs(per_rater: dict[str, dict], paths: Mapping[str, str], label_type: str,
                     declared_classes: Mapping[str, list], declared_targets: Mapping[str, dict | None],
                     mask_targets: Mapping | None, reports: dict) -> dict[str, KindSpec]:
    """The image-level kinds of a merged import (``class``, ``segmentation``), checked; see the module docstring.

    Args:
        per_rater: ``{rater: {image: (filepath, size, {kind: [labels]})}}`` (class lists are deduplicated in place).
        paths: each rater's export, for messages.
        label_type: one of :data:`LABEL_TYPES`.
        declared_classes: per rater, the classes its export declares (a classification tree's folders).
        declared_targets: per rater, the mask targets its export records.
        mask_targets: the ``mask_targets`` given, or ``None``.
        reports: per-rater reports, updated (repairs, mask values).
    """
    if label_type not in LABEL_TYPES:
        raise ValueError(f"label_type must be one of {LABEL_TYPES}, got {label_type!r}")
    specs = {}
    spec = _class_spec(per_rater, label_type, paths, declared_classes, reports)
    if spec is not None:
        specs["class"] = spec
    has_masks = any(labels.get("segmentation") for images in per_rater.values() for _, _, labels in images.values())
    if has_masks:
        targets = _targets(declared_targets, mask_targets)
        _check_masks(per_rater, paths, targets, reports)
        specs["segmentation"] = KindSpec("_mask", fo.Segmentation, bare_alone=True, mask_targets=targets)
    return specs


def export_label_path(path: str) -> str:
    """The CVAT XML of an export: the file given, or ``labels.xml`` in the folder."""
    return path if os.path.isfile(path) else os.path.join(path, "labels.xml")
