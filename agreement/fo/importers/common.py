"""What the multi-rater importers share: the merged in-memory corpus and how it becomes a dataset.

Every importer (one export per rater through FiftyOne's own importers, or a
Label Studio export) first builds a :class:`MergedImages`: per image, its
file path, its size and, per rater, either ``None`` (the rater was not
assigned the image: implicit absence) or the rater's labels by kind (possibly
none: explicit absence). :func:`write_merged_dataset` turns it into a dataset
in either layout, with nothing half-imported: it is written under a temporary
name and takes its final name only when complete (the swap of
:mod:`agreement.fo.importers.coco`).

Label kinds and their fields:

=============  ==========================  ==============================
kind           ``layout="fields"``         ``layout="attribute"``
=============  ==========================  ==============================
``detections`` ``<rater field>``           ``<field>``
``polylines``  ``<rater field>_polygons``  ``<field>_polygons``
``keypoints``  ``<rater field>_keypoints`` ``<field>_keypoints``
=============  ==========================  ==============================

the same names as :func:`agreement.fo.importers.coco.import_multi_rater_coco` (whose
``_polygons`` fields hold the polygons of the boxes' annotations).

Image-level kinds are declared by the importer (:class:`KindSpec` in
:attr:`MergedImages.kind_specs`): a class per rater and image
(``Classification``), a set of tags (``Classifications``) or a semantic mask
(``Segmentation``), each with its field suffix (``_class``, ``_tags``,
``_mask``, or a Label Studio control's ``_<name>``). An import without
instance labels writes no box field; its first image-level kind marked
``bare_alone`` then takes the bare name (``<rater field>`` / ``<field>``).
In the attribute layout a class or tags field is one ``Classifications``
whose labels carry the rater attribute; a semantic mask has no attribute
layout (a ``Segmentation`` field holds one mask).

Absence for image-level kinds, in the fields layout: a class or a mask that
the rater did not give is ``None`` (missing: Krippendorff's α treats it as a
missing value, as it treats an unassigned rater); a rater assigned the image
who gave no tag has an empty ``Classifications`` (explicit absence), one not
assigned ``None``. The sample's ``raters`` list says who was assigned.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field as dc_field
from typing import Mapping, Sequence

import fiftyone as fo

from agreement.core.validation import AnnotationError

# the temporary-name-then-rename swap of the multi-rater COCO importer, reused
from agreement.fo.importers.coco import (
    INFO_KEY,
    LAYOUTS,
    RESERVED_FIELDS,
    discard_dataset,
    rater_field_name,
    swap_in,
    temporary_name,
)
from agreement.fo.importers.media_types import decide_media_type, media_sample, set_empty_dataset_media_type
from agreement.fo.kinds import LIST_ATTRS, imported_kinds
from agreement.fo.storage.assignment import declare_raters_field

__all__ = ["KINDS", "KindSpec", "MergedImages", "MultiRaterImportError", "write_merged_dataset", "kind_fields",
           "check_layout"]


@dataclass(frozen=True)
class KindSpec:
    """How one label kind is written.

    Attributes:
        suffix: appended to the rater's field name (fields layout) or to
            ``field`` (attribute layout).
        doc_type: the FiftyOne label type of a rater's field: ``Detections``,
            ``Polylines``, ``Keypoints`` (instance lists), ``Classification``
            (one class), ``Classifications`` (tags) or ``Segmentation``.
        bare_alone: when the import has no instance labels, the first such
            kind takes the bare field name (no suffix).
        classes: recorded as ``dataset.classes[<field>]`` (the class order).
        mask_targets: recorded as ``dataset.mask_targets[<field>]``.
    """

    suffix: str
    doc_type: type
    bare_alone: bool = False
    classes: tuple[str, ...] | None = None
    mask_targets: dict[int, str] | None = None


#: The instance kinds (every importer may produce them), by their list attribute: derived from the declared
#: label types (:func:`agreement.fo.kinds.imported_kinds`, their ``import_suffix``), not a second table.
KINDS = {attr: KindSpec(spec.import_suffix or "", spec.doc_type) for attr, spec in imported_kinds().items()}
_LISTS = LIST_ATTRS  # label list class -> its list attribute (the declared types, agreement.fo.kinds)
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
        kind_specs: the image-level kinds of this import, in field order
            (``{kind: KindSpec}``); a rater's ``{kind: labels}`` lacking such a
            kind gave nothing of it (``None`` in its field).
    """

    keys: list[str]
    filepaths: list[str]
    sizes: list[tuple[int, int] | None]
    raters: list[str]
    labels: list[dict[str, dict[str, list] | None]]
    extra: list[dict] = dc_field(default_factory=list)
    kind_specs: dict[str, KindSpec] = dc_field(default_factory=dict)

    def spec(self, kind: str) -> KindSpec:
        """The :class:`KindSpec` of ``kind`` (an instance kind or a declared image-level one)."""
        return KINDS[kind] if kind in KINDS else self.kind_specs[kind]

    def kinds(self) -> list[str]:
        """The kinds to write: the instance kinds some rater has, in :data:`KINDS` order (``detections``
        whenever there is one, or no image-level kind), then the declared image-level kinds."""
        found = {k for per in self.labels for v in per.values() if v for k, labs in v.items() if labs}
        instance = [k for k in KINDS if k in found]
        if instance or not self.kind_specs:
            instance = [k for k in KINDS if k == "detections" or k in found]
        return instance + list(self.kind_specs)


def check_layout(layout: str, field: str, rater_attr: str) -> None:
    """The layout options, before anything is read."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if layout == "attribute":
        if not re.match(r"^[A-Za-z][A-Za-z0-9_]*$", field or "") or field in RESERVED_FIELDS:
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


def kind_fields(raters: Sequence[str], kinds: Sequence[str], layout: str, field: str,
                specs: Mapping[str, KindSpec] | None = None) -> dict[str, dict[str, str]]:
    """``{rater: {kind: field name}}``; rater names whose field names clash are an error.

    ``specs`` gives the image-level kinds' :class:`KindSpec` (the instance
    kinds' are :data:`KINDS`)."""
    specs = {**KINDS, **(specs or {})}
    bare = None
    if not any(k in KINDS for k in kinds):
        bare = next((k for k in kinds if specs[k].bare_alone), None)
    suffix = {k: "" if k == bare else specs[k].suffix for k in kinds}
    if layout == "attribute":
        out = {r: {k: field + suffix[k] for k in kinds} for r in raters}
        if len(set(out[raters[0]].values()) if raters else ()) != len(kinds):
            raise MultiRaterImportError(f"label kinds {list(kinds)} map to clashing field names {out[raters[0]]}")
        return out
    base = {r: rater_field_name(r) for r in raters}
    out = {r: {k: base[r] + suffix[k] for k in kinds} for r in raters}
    names = [n for per in out.values() for n in per.values()]
    if len(set(names)) != len(names):
        raise MultiRaterImportError(f"rater names {list(raters)} map to clashing field names {base}: rename a rater")
    return out


def _field_type(spec: KindSpec, layout: str) -> type:
    """The label type of a kind's field: a class is a ``Classifications`` list in the attribute layout."""
    if layout == "attribute" and spec.doc_type is fo.Classification:
        return fo.Classifications
    return spec.doc_type


def _rater_value(spec: KindSpec, labels: list | None, rater: str, image: str) -> fo.Label | None:
    """One rater's field value in the fields layout (see the module docstring for absence)."""
    t = spec.doc_type
    if t in KINDS_TYPES:
        return t(**{_LISTS[t]: list(labels or [])})
    if t is fo.Classifications:
        return None if labels is None else fo.Classifications(classifications=list(labels))
    labels = list(labels or [])
    if len(labels) > 1:
        raise MultiRaterImportError(f"image {image!r}: rater {rater!r} gave {len(labels)} {t.__name__} labels "
                                    f"({[getattr(x, 'label', None) for x in labels]}); a {t.__name__} field holds one")
    return labels[0] if labels else None


KINDS_TYPES = tuple(spec.doc_type for spec in KINDS.values())


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
                value = _rater_value(merged.spec(kind), (per_rater[r] or {}).get(kind), r, merged.keys[i])
                if value is not None:
                    sample[fname] = value
        return sample
    if assigned:
        for kind, fname in fields[merged.raters[0]].items():
            labels = []
            for r in assigned:
                for label in (per_rater[r] or {}).get(kind) or []:
                    _set_rater(label, rater_attr, r, merged.keys[i])
                    labels.append(label)
            ftype = _field_type(merged.spec(kind), layout)
            sample[fname] = ftype(**{_LISTS[ftype]: labels})
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
    importer does, so the compute operators preselect it; ``rater_fields`` and
    ``field`` name the first kind's fields, ``label_fields`` every kind's)
    and, in the attribute layout, ``raters`` is declared as the assignment of
    every label field (:func:`agreement.fo.storage.assignment.declare_raters_field`).
    ``dataset.info["iaa_import"]`` keeps ``report``. Image-level kinds record
    their ``classes`` and ``mask_targets`` on the dataset, per field.

    Raises:
        ValueError: ``name`` exists and ``overwrite`` is false.
        MultiRaterImportError: rater names whose field names clash; semantic
            masks asked in the attribute layout.
    """
    if fo.dataset_exists(name) and not overwrite:
        raise ValueError(f"dataset {name!r} already exists; pass overwrite=True or another dataset_name")
    kinds = merged.kinds()
    if layout == "attribute" and any(merged.spec(k).doc_type is fo.Segmentation for k in kinds):
        raise MultiRaterImportError(
            f"{source or 'this import'}: semantic masks (Segmentation) import in the fields layout only: a "
            "Segmentation field holds one mask, so it cannot hold several raters' masks; use layout='fields'"
        )
    fields = kind_fields(merged.raters, kinds, layout, field, merged.kind_specs)
    taken = {k for extra in merged.extra for k in extra}.intersection(n for per in fields.values() for n in per.values())
    if taken:
        raise MultiRaterImportError(f"rater field name(s) {sorted(taken)} clash with sample fields this import writes")
    media = decide_media_type(merged.filepaths, reason=f"the annotations of {source or 'these exports'} are image annotations")
    samples = [_sample(merged, i, fields, layout, rater_attr, media.media_type) for i in range(len(merged.keys))]
    dataset = fo.Dataset(temporary_name(name, "import"), persistent=False)
    try:
        set_empty_dataset_media_type(dataset, media.media_type)
        for fname, kind in dict.fromkeys((f, k) for per in fields.values() for k, f in per.items()):
            dataset.add_sample_field(fname, fo.EmbeddedDocumentField,
                                     embedded_doc_type=_field_type(merged.spec(kind), layout))
        dataset.add_sample_field("raters", fo.ListField, subfield=fo.StringField)
        dataset.add_samples(samples, dynamic=True, progress=False)
        _record_classes(dataset, merged, fields)
        primary = kinds[0]
        dataset.info[INFO_KEY] = {
            "source": source,
            "layout": layout,
            "polygons": "polylines",
            "field": fields[merged.raters[0]][primary] if layout == "attribute" else None,
            "rater_attr": rater_attr if layout == "attribute" else None,
            "rater_fields": {r: per[primary] for r, per in fields.items()},
            "label_fields": {k: {"type": _field_type(merged.spec(k), layout).__name__,
                                 "fields": {r: per[k] for r, per in fields.items()}} for k in kinds},
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
        discard_dataset(dataset)
        raise
    return swap_in(dataset, name, overwrite=overwrite, persistent=persistent)


def _record_classes(dataset: fo.Dataset, merged: MergedImages, fields: dict[str, dict[str, str]]) -> None:
    """``dataset.classes`` and ``dataset.mask_targets`` of every image-level field whose kind names them."""
    for kind, spec in merged.kind_specs.items():
        names = sorted({per[kind] for per in fields.values() if kind in per})
        for fname in names:
            if spec.classes is not None:
                dataset.classes[fname] = [str(c) for c in spec.classes]
            if spec.mask_targets:
                dataset.mask_targets[fname] = {int(k): str(v) for k, v in spec.mask_targets.items()}
    dataset.save()


def file_key(path: str) -> str:
    """The name videos are matched by across exports: the file name (images follow the rule of
    :mod:`agreement.io.image_names`)."""
    return os.path.basename(str(path).replace("\\", "/").rstrip("/"))


def rater_warnings(raters: Sequence[str]) -> list[str]:
    """What an import's result warns about its raters: agreement needs at least two."""
    if len(raters) >= 2:
        return []
    who = f"one rater ({raters[0]!r})" if raters else "no rater"
    return [f"this import has {who}: agreement needs at least two raters on the same images, so every agreement "
            "number of this dataset would be undefined. Import the other raters' exports with it (one export per "
            "rater in import_multi_rater), or check that the export names its annotators (Label Studio: "
            "completed_by, or rater_from='updated_by_fallback')"]
