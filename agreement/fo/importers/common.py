"""What the multi-rater importers share: the merged in-memory corpus and how it becomes a dataset.

Every importer (one export per rater through FiftyOne's own importers, or a
Label Studio export) first builds a :class:`MergedImages`: per image, its
file path, its size and, per rater, either ``None`` (the rater was not
assigned the image: implicit absence) or the rater's labels by kind (possibly
none: explicit absence). :func:`write_merged_dataset` turns it into a dataset
in either layout, with nothing half-imported: it is written under a temporary
name and takes its final name only when complete (the swap of
:mod:`agreement.fo.coco`).

Label kinds and their fields:

=============  ==========================  ==============================
kind           ``layout="fields"``         ``layout="attribute"``
=============  ==========================  ==============================
``detections`` ``<rater field>``           ``<field>``
``polylines``  ``<rater field>_polygons``  ``<field>_polygons``
``keypoints``  ``<rater field>_keypoints`` ``<field>_keypoints``
=============  ==========================  ==============================

the same names as :func:`agreement.fo.coco.import_multi_rater_coco` (whose
``_polygons`` fields hold the polygons of the boxes' annotations).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field as dc_field
from typing import Sequence

import fiftyone as fo

# the temporary-name-then-rename swap of the multi-rater COCO importer, reused
from agreement.fo.coco import INFO_KEY, LAYOUTS, _RESERVED, _discard, _swap_in, _temporary_name, rater_field_name
from agreement.fo.assignment import declare_raters_field
from agreement.fo.media_types import decide_media_type, media_sample, set_empty_dataset_media_type
from agreement.core.validation import AnnotationError

__all__ = ["KINDS", "MergedImages", "MultiRaterImportError", "write_merged_dataset", "kind_fields", "check_layout"]

KINDS = {"detections": ("", fo.Detections), "polylines": ("_polygons", fo.Polylines), "keypoints": ("_keypoints", fo.Keypoints)}
IMPORT_INFO_KEY = "iaa_import"


class MultiRaterImportError(AnnotationError):
    """An export cannot be imported as asked; the message names the rater, the file and the image."""


@dataclass
class MergedImages:
    """Several raters' labels merged by image, in memory.

    Attributes:
        keys: the images, in order (the name they were matched by).
        filepaths: the file path of each image.
        sizes: ``(width, height)`` in pixels of each image, or ``None``.
        raters: the rater names, in the order given.
        labels: per image, ``{rater: None or {kind: [FiftyOne labels]}}``;
            a rater absent from the mapping is not assigned (implicit absence).
        extra: per image, sample-level fields to set (e.g. ``ls_task_id``).
    """

    keys: list[str]
    filepaths: list[str]
    sizes: list[tuple[int, int] | None]
    raters: list[str]
    labels: list[dict[str, dict[str, list] | None]]
    extra: list[dict] = dc_field(default_factory=list)

    def kinds(self) -> list[str]:
        """The label kinds some rater has, in :data:`KINDS` order (``detections`` always)."""
        found = {k for per in self.labels for v in per.values() if v for k, labs in v.items() if labs}
        return [k for k in KINDS if k == "detections" or k in found]


def check_layout(layout: str, field: str, rater_attr: str) -> None:
    """The layout options, before anything is read."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if layout == "attribute":
        if not re.match(r"^[A-Za-z][A-Za-z0-9_]*$", field or "") or field in _RESERVED:
            raise ValueError(f"invalid label field name {field!r}")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", rater_attr or ""):
            raise ValueError(f"invalid rater attribute name {rater_attr!r}")


def check_rater_names(raters: Sequence[str], source: str = "the exports") -> None:
    """Rater names must be non-empty strings, each given once."""
    seen: dict[str, int] = {}
    for i, r in enumerate(raters):
        if not isinstance(r, str) or not r.strip():
            raise MultiRaterImportError(f"{source}: entry {i} has no rater name (got {r!r}); expected a non-empty string")
        if r in seen:
            raise MultiRaterImportError(
                f"{source}: two entries (#{seen[r]} and #{i}) have the same rater name {r!r}; "
                "each rater must be named once (merge their exports first, or give them different names)"
            )
        seen[r] = i


def kind_fields(raters: Sequence[str], kinds: Sequence[str], layout: str, field: str) -> dict[str, dict[str, str]]:
    """``{rater: {kind: field name}}``; rater names whose field names clash are an error."""
    if layout == "attribute":
        return {r: {k: field + KINDS[k][0] for k in kinds} for r in raters}
    base = {r: rater_field_name(r) for r in raters}
    out = {r: {k: base[r] + KINDS[k][0] for k in kinds} for r in raters}
    names = [n for per in out.values() for n in per.values()]
    if len(set(names)) != len(names):
        raise MultiRaterImportError(f"rater names {list(raters)} map to clashing field names {base}: rename a rater")
    return out


def _set_rater(label: fo.Label, rater_attr: str, rater: str, image: str) -> None:
    """Writes the rater attribute; a label that already names another rater in it is an error."""
    existing = label[rater_attr] if label.has_field(rater_attr) else None
    if existing is not None and existing != rater:
        raise MultiRaterImportError(
            f"image {image!r}: a label of rater {rater!r} already has the attribute {rater_attr}={existing!r}; "
            "choose another rater_attr"
        )
    label[rater_attr] = rater


def _sample(merged: MergedImages, i: int, fields: dict[str, dict[str, str]], layout: str, rater_attr: str,
            media_type: str = "image") -> fo.Sample:
    size = merged.sizes[i]
    sample = media_sample(merged.filepaths[i], media_type)
    if size is not None:
        sample.metadata = fo.ImageMetadata(width=int(size[0]), height=int(size[1]))
    per_rater = merged.labels[i]
    assigned = [r for r in merged.raters if per_rater.get(r) is not None]
    sample["raters"] = assigned
    for key, value in (merged.extra[i] if merged.extra else {}).items():
        sample[key] = value
    if layout == "fields":
        for r in assigned:
            for kind, fname in fields[r].items():
                sample[fname] = KINDS[kind][1](**{kind: list(per_rater[r].get(kind, []))})
        return sample
    if assigned:
        for kind, fname in fields[merged.raters[0]].items():
            labels = []
            for r in assigned:
                for label in per_rater[r].get(kind, []):
                    _set_rater(label, rater_attr, r, merged.keys[i])
                    labels.append(label)
            sample[fname] = KINDS[kind][1](**{kind: labels})
    return sample


def write_merged_dataset(
    merged: MergedImages,
    name: str,
    layout: str = "fields",
    field: str = "ground_truth",
    rater_attr: str = "annotator",
    overwrite: bool = False,
    persistent: bool = False,
    source: str = "",
    report: dict | None = None,
) -> fo.Dataset:
    """Writes ``merged`` as a new dataset ``name`` in ``layout``; nothing is half-written.

    The samples get a ``raters`` list field (the raters assigned to the
    image). ``dataset.info["iaa_coco"]`` records the layout (as the COCO
    importer does, so the compute operators preselect it) and, in the
    attribute layout, ``raters`` is declared as the assignment of every label
    field (:func:`agreement.fo.reading.declare_raters_field`).
    ``dataset.info["iaa_import"]`` keeps ``report``.

    Raises:
        ValueError: ``name`` exists and ``overwrite`` is false.
        MultiRaterImportError: rater names whose field names clash.
    """
    if fo.dataset_exists(name) and not overwrite:
        raise ValueError(f"dataset {name!r} already exists; pass overwrite=True or another dataset_name")
    kinds = merged.kinds()
    fields = kind_fields(merged.raters, kinds, layout, field)
    taken = {k for extra in merged.extra for k in extra}.intersection(n for per in fields.values() for n in per.values())
    if taken:
        raise MultiRaterImportError(f"rater field name(s) {sorted(taken)} clash with sample fields this import writes")
    media = decide_media_type(merged.filepaths, reason=f"the annotations of {source or 'these exports'} are image annotations")
    samples = [_sample(merged, i, fields, layout, rater_attr, media.media_type) for i in range(len(merged.keys))]
    dataset = fo.Dataset(_temporary_name(name, "import"), persistent=False)
    try:
        set_empty_dataset_media_type(dataset, media.media_type)
        for fname, kind in dict.fromkeys((f, k) for per in fields.values() for k, f in per.items()):
            dataset.add_sample_field(fname, fo.EmbeddedDocumentField, embedded_doc_type=KINDS[kind][1])
        dataset.add_sample_field("raters", fo.ListField, subfield=fo.StringField)
        dataset.add_samples(samples, dynamic=True, progress=False)
        dataset.info[INFO_KEY] = {
            "source": source,
            "layout": layout,
            "polygons": "polylines",
            "field": field if layout == "attribute" else None,
            "rater_attr": rater_attr if layout == "attribute" else None,
            "rater_fields": {r: per["detections"] for r, per in fields.items()},
            "rater_ids": {r: r for r in merged.raters},
            "categories": None,
            "info": {},
        }
        dataset.info[IMPORT_INFO_KEY] = {**(report or {}), "media": media.to_dict()}
        dataset.save()
        if layout == "attribute":
            for fname in fields[merged.raters[0]].values():
                declare_raters_field(dataset, fname, "raters", raters=merged.raters)
    except BaseException:
        _discard(dataset)
        raise
    return _swap_in(dataset, name, overwrite=overwrite, persistent=persistent)


def file_key(path: str) -> str:
    """The name images are matched by across exports: the file name."""
    return os.path.basename(str(path).replace("\\", "/").rstrip("/"))
