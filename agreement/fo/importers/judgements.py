"""Crowd judgement files (``worker<TAB>item<TAB>label``) as a FiftyOne dataset of image-level classes.

:func:`import_judgements` reads the file with
:func:`agreement.io.judgements.read_judgements` (its repairs of repeated
judgements and of labels outside the categories are parameters, and
reported) and makes one sample per item, in the attribute layout: one ``Classifications`` field whose labels carry
the worker in ``annotator``, the workers who judged each item in the sample
list ``raters`` (declared as the field's assignment, so every compute
operator uses it by default). What was read and repaired is in
``dataset.info["iaa_import"]`` and in the result: the repairs of
:func:`~agreement.io.judgements.read_judgements`, those of reading the file as
text (a header line skipped, whitespace around fields stripped, comment
lines, a byte order mark: :mod:`agreement.io.text_files`), and ``warnings``
(one worker: agreement undefined; files that cannot be read as images).

Items and files. Each sample keeps the item exactly as written in the string
field ``item``; its ``filepath`` is the file the item names
(:func:`item_filepath`): an absolute path as it is, a relative one under
``image_dir`` (default: the judgement file's folder, never the current
directory), and a web address (``http://a.com/x``), which FiftyOne cannot
store as a file path, as a file name under ``image_dir`` made from the
address without its scheme (``a.com_x``). The items are images (their media
type is decided by :func:`agreement.fo.importers.media_types.decide_media_type`: items
named without an extension are images too, with a warning when the files
cannot be read).

Writing. The samples and their labels are inserted as documents in one bulk
write (:mod:`agreement.fo.storage.bulk_insert`), with the schema
``add_samples`` would infer declared first: the same dataset as adding FiftyOne
samples one by one, about eight times faster (44,373 judgements: 2 s instead of 16 s;
``bench/import_bench.py``).
"""

from __future__ import annotations

import logging
import os
import re
from typing import Literal, Sequence

import numpy as np

import fiftyone as fo

from agreement.fo.importers.coco import INFO_KEY, discard_dataset, swap_in, temporary_name
from agreement.fo.importers.media_types import decide_media_type, set_empty_dataset_media_type
from agreement.fo.storage.assignment import declare_raters_field
from agreement.fo.storage.bulk_insert import insert_sample_docs, label_doc_builder
from agreement.io.judgements import JudgementReport, read_judgements

__all__ = ["import_judgements", "item_filepath", "IMPORT_INFO_KEY"]

IMPORT_INFO_KEY = "iaa_import"
logger = logging.getLogger(__name__)


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def item_filepath(item: str, image_dir: str) -> str:
    """The file an item of a judgement file names (see the module docstring).

    ``/data/a.jpg`` stays; ``a.jpg`` becomes ``image_dir/a.jpg``; a web
    address ``http://a.com/x?y`` becomes ``image_dir/a.com_x_y`` (the address
    without its scheme, every run of characters other than letters, digits,
    ``.``, ``-`` and ``_`` replaced by ``_``).
    """
    item = str(item)
    if _SCHEME.match(item):
        return os.path.join(image_dir, re.sub(r"[^A-Za-z0-9._-]+", "_", _SCHEME.sub("", item)).strip("_") or "_")
    return item if os.path.isabs(item) else os.path.join(image_dir, item)


def _check_distinct(source: str, items, paths: list[str]) -> None:
    """Two items naming one file (``http://a.com/x`` and ``https://a.com/x``) would be one sample: refused."""
    by_path: dict[str, str] = {}
    for item, filepath in zip(items, paths, strict=False):
        other = by_path.setdefault(filepath, str(item))
        if other != str(item):
            raise ValueError(f"{source}: items {other!r} and {str(item)!r} name the same file {filepath!r} (web "
                             "addresses become file names under image_dir): rename one of them in the file")


#: The sample fields an import writes besides the label field (which may not take one of their names).
_SAMPLE_FIELDS = ("item", "raters")


def _check_names(field: str, rater_attr: str) -> None:
    """The label field and the rater attribute may not take a name the import or FiftyOne already uses."""
    taken = {*_SAMPLE_FIELDS, "filepath", "tags", "metadata", "id", "media_type", "created_at", "last_modified_at"}
    if not field or field in taken or field.startswith("_"):
        raise ValueError(f"field={field!r}: the label field needs a name other than {sorted(taken)} (and no "
                         "leading underscore)")
    own = set(dict(fo.Classification().to_mongo())) | {"id", "label", "confidence", "logits", "tags"}
    if not rater_attr or rater_attr in own or rater_attr.startswith("_"):
        raise ValueError(f"rater_attr={rater_attr!r}: a Classification's own attributes {sorted(own)} cannot "
                         "name the worker; choose another attribute name")


def _declare_fields(dataset: fo.Dataset, field: str, media_type: str) -> None:
    """The schema ``add_samples`` would infer from the samples (media type first, then the fields in order)."""
    set_empty_dataset_media_type(dataset, media_type)
    dataset.add_sample_field("item", fo.StringField)
    dataset.add_sample_field(field, fo.EmbeddedDocumentField, embedded_doc_type=fo.Classifications)
    dataset.add_sample_field("raters", fo.ListField, subfield=fo.StringField)


def _sample_docs(ratings, field: str, rater_attr: str, paths: list[str]) -> list[dict]:
    """One sample document per item: its ``Classifications`` of the workers' labels and its assigned workers
    (stored documents for :func:`~agreement.fo.storage.bulk_insert.insert_sample_docs`)."""
    make_label = label_doc_builder(fo.Classification)
    make_labels = label_doc_builder(fo.Classifications)
    raters = [str(r) for r in ratings.raters]
    classes = [str(c) for c in ratings.classes]
    codes = np.asarray(ratings.codes).tolist()
    out = []
    for s, item in enumerate(ratings.sample_ids):
        row = codes[s]
        judged = np.flatnonzero(ratings.assigned[s]).tolist()
        labels = [make_label(label=classes[row[r]], **{rater_attr: raters[r]}) for r in judged if row[r] >= 0]
        out.append({"filepath": paths[s], "item": str(item), field: make_labels(classifications=labels),
                    "raters": [raters[r] for r in judged]})
    return out


def _record(report: JudgementReport, path: str, base: str, media) -> dict:
    """What the import says it read and repaired (the result, and ``dataset.info["iaa_import"]``)."""
    return {
        "format": "judgements", "path": str(path), "judgements": report.n_judgements, "workers": report.n_workers,
        "items": report.n_items, "classes": list(report.classes), "repeated": report.repeated,
        "repeated_pairs": report.n_repeated_pairs, "repeated_judgements_set_aside": report.n_repeated_judgements,
        "conflicting_pairs": report.n_conflicting_pairs, "unknown_labels": report.unknown_labels,
        "unknown_counts": dict(report.unknown_counts), "dropped": report.n_dropped, **report.text.to_dict(),
        "delimiter": report.delimiter, "columns": list(report.columns),
        "categories_file": report.categories_text.to_dict() if report.categories_text else None,
        "summary": report.summary(), "image_dir": base, "media": media.to_dict(),
        "warnings": list(report.warnings) + ([media.note] if media.note else []),
    }


def import_judgements(path: str, dataset_name: str, categories: Sequence[str] | str | None = None,
                      repeated: Literal["mode", "last", "first", "error"] = "mode",
                      unknown_labels: Literal["error", "drop", "keep"] = "error", field: str = "judgements",
                      rater_attr: str = "annotator", overwrite: bool = False,
                      persistent: bool = True, image_dir: str | None = None, delimiter: str = "\t",
                      header: bool | None = None) -> tuple[fo.Dataset, dict]:
    """Imports a judgement file as dataset ``dataset_name`` (see the module docstring).

    Args:
        path: the ``worker<TAB>item<TAB>label`` file (a header line of column names is recognised, skipped and
            reported; see :func:`agreement.io.judgements.read_judgements`).
        dataset_name: the new dataset.
        categories: the classes, in order (a list, or a file of one class per line); default: the labels found.
        repeated: a worker's repeated judgements of an item: ``"mode"`` (their most frequent label, ties to the
            latest), ``"last"``, ``"first"`` or ``"error"``.
        unknown_labels: labels outside ``categories``: ``"error"``, ``"drop"`` (the worker stays assigned, with a
            missing value) or ``"keep"`` (extra classes).
        field: the label field.
        rater_attr: the label attribute naming the worker.
        overwrite: replace an existing dataset of that name.
        persistent: keep the dataset after the session.
        image_dir: where the items' files are (default: the judgement file's folder): see :func:`item_filepath`.
        delimiter: the field separator (default a tab; ``","`` reads a CSV file).
        header: ``None`` detect a header line; ``True`` the first line is a header; ``False`` it is data.

    Returns:
        ``(dataset, report)``: the report's counts of what was read and repaired, its summary sentence, and
        ``warnings`` (one worker: every agreement number undefined; items whose files cannot be read).

    Raises:
        TextFileError: (a ``ValueError``) an empty file, one that is not UTF-8 text, a first line that is
            partly a header, a malformed line (naming the file and the line).
        ValueError: an unknown label or a repeated judgement under the ``"error"`` policies (naming the lines),
            a dataset of that name without ``overwrite``, or a ``field``/``rater_attr`` that would take a name
            the import or FiftyOne already uses; nothing is created then.
    """
    _check_names(field, rater_attr)
    if fo.dataset_exists(dataset_name) and not overwrite:
        raise ValueError(f"dataset {dataset_name!r} exists; pass overwrite=True or choose another name")
    ratings, report = read_judgements(path, categories=categories, repeated=repeated, unknown_labels=unknown_labels,
                                      delimiter=delimiter, header=header)
    base = os.path.abspath(os.fspath(image_dir) if image_dir else os.path.dirname(os.path.abspath(path)))
    paths = [item_filepath(item, base) for item in ratings.sample_ids]
    _check_distinct(path, ratings.sample_ids, paths)
    media = decide_media_type(paths, reason="crowd judgements describe images")
    record = _record(report, path, base, media)
    for warning in report.warnings:
        logger.warning(warning)
    dataset = fo.Dataset(temporary_name(dataset_name, "judgements"))
    try:
        _declare_fields(dataset, field, media.media_type)
        insert_sample_docs(dataset, _sample_docs(ratings, field, rater_attr, paths), media_type=media.media_type)
        dataset.classes = {field: [str(c) for c in report.classes]}
        dataset.info[INFO_KEY] = {"source": "judgements", "layout": "attribute", "field": field,
                                  "rater_attr": rater_attr, "rater_fields": {str(r): field for r in ratings.raters}}
        dataset.info[IMPORT_INFO_KEY] = record
        dataset.save()
        declare_raters_field(dataset, field, "raters", raters=list(ratings.raters))
    except BaseException:
        discard_dataset(dataset)
        raise
    return swap_in(dataset, dataset_name, overwrite=overwrite, persistent=persistent), record
