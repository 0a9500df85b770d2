"""Crowd judgement files (``worker<TAB>item<TAB>label``) as a FiftyOne dataset of image-level classes.

:func:`import_judgements` reads the file with
:func:`agreement.io.judgements.read_judgements` (its repairs of repeated
judgements and of labels outside the categories are parameters, and
reported) and makes one sample per item (``filepath`` the item as written:
items that are not local files, such as web addresses, are kept as names),
in the attribute layout: one ``Classifications`` field whose labels carry
the worker in ``annotator``, the workers who judged each item in the sample
list ``raters`` (declared as the field's assignment, so every compute
operator uses it by default). What was read and repaired is in
``dataset.info["iaa_import"]`` and in the result.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

import fiftyone as fo

from agreement.fo.assignment import declare_raters_field
from agreement.fo.coco import INFO_KEY, _discard, _swap_in, _temporary_name
from agreement.io.judgements import read_judgements

__all__ = ["import_judgements", "IMPORT_INFO_KEY"]

IMPORT_INFO_KEY = "iaa_import"


def _samples(ratings, field: str, rater_attr: str) -> list:
    raters = np.asarray(ratings.raters, dtype=object)
    out = []
    for s, item in enumerate(ratings.sample_ids):
        row = ratings.codes[s]
        judged = np.flatnonzero(ratings.assigned[s])
        labels = [fo.Classification(label=str(ratings.classes[row[r]]), **{rater_attr: str(raters[r])})
                  for r in judged if row[r] >= 0]
        out.append(fo.Sample(filepath=str(item), **{field: fo.Classifications(classifications=labels),
                                                    "raters": [str(raters[r]) for r in judged]}))
    return out


def import_judgements(path: str, dataset_name: str, categories: Sequence[str] | str | None = None,
                      repeated: str = "mode", unknown_labels: str = "error", field: str = "judgements",
                      rater_attr: str = "annotator", overwrite: bool = False,
                      persistent: bool = True) -> tuple[fo.Dataset, dict]:
    """Imports a judgement file as dataset ``dataset_name`` (see the module docstring).

    Args:
        path: the tab-separated ``worker, item, label`` file (no header).
        dataset_name: the new dataset.
        categories: the classes, in order (a list, or a file of one class per line); default: the labels found.
        repeated: a worker's repeated judgements of an item: ``"mode"`` (their most frequent label, ties to the
            latest), ``"last"``, ``"first"`` or ``"error"``.
        unknown_labels: labels outside ``categories``: ``"error"``, ``"drop"`` (the worker stays assigned, with a
            missing value) or ``"keep"`` (extra classes).
        field, rater_attr: the label field and the label attribute naming the worker.
        overwrite: replace an existing dataset of that name.
        persistent: keep the dataset after the session.

    Returns:
        ``(dataset, report)``: the report's counts of what was read and repaired, and its summary sentence.

    Raises:
        ValueError: an unknown label or a repeated judgement under the ``"error"`` policies (naming the lines),
            or a dataset of that name without ``overwrite``; nothing is created then.
    """
    if fo.dataset_exists(dataset_name) and not overwrite:
        raise ValueError(f"dataset {dataset_name!r} exists; pass overwrite=True or choose another name")
    ratings, report = read_judgements(path, categories, repeated=repeated, unknown_labels=unknown_labels)
    record = {
        "format": "judgements", "path": str(path), "judgements": report.n_judgements, "workers": report.n_workers,
        "items": report.n_items, "classes": list(report.classes), "repeated": repeated,
        "repeated_pairs": report.n_repeated_pairs, "repeated_judgements_set_aside": report.n_repeated_judgements,
        "conflicting_pairs": report.n_conflicting_pairs, "unknown_labels": unknown_labels,
        "unknown_counts": dict(report.unknown_counts), "dropped": report.n_dropped, "summary": report.summary(),
    }
    dataset = fo.Dataset(_temporary_name(dataset_name, "judgements"))
    try:
        dataset.add_samples(_samples(ratings, field, rater_attr), progress=False)
        dataset.classes = {field: [str(c) for c in report.classes]}
        dataset.info[INFO_KEY] = {"source": "judgements", "layout": "attribute", "field": field,
                                  "rater_attr": rater_attr, "rater_fields": {str(r): field for r in ratings.raters}}
        dataset.info[IMPORT_INFO_KEY] = record
        dataset.save()
        declare_raters_field(dataset, field, "raters", raters=list(ratings.raters))
    except BaseException:
        _discard(dataset)
        raise
    return _swap_in(dataset, dataset_name, overwrite=overwrite, persistent=persistent), record
