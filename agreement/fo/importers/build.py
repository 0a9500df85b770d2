"""Writing a multi-rater corpus into new FiftyOne samples (either layout).

The inverse of :func:`agreement.fo.storage.reading.read_annotations` for new data (the
demo, simulated raters): it never touches existing samples.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

import fiftyone as fo

from agreement.core.data import MultiRaterAnnotations

__all__ = ["corpus_label_fields", "samples_from_corpus", "add_corpus_fields"]


def _detections(corpus: MultiRaterAnnotations, s: int, r: int, rater_attr: str | None) -> list:
    sl = corpus.rows(s, r)
    extra = {rater_attr: corpus.raters[r]} if rater_attr else {}
    return [
        fo.Detection(label=str(lab), bounding_box=box.tolist(), **extra)
        for box, lab in zip(corpus.boxes[sl], corpus.labels[sl], strict=True)
    ]


def corpus_label_fields(
    corpus: MultiRaterAnnotations,
    *,
    layout: str = "fields",
    field: str = "ground_truth",
    rater_attr: str = "annotator",
    field_names: Mapping[str, str] | None = None,
) -> list[dict]:
    """Per sample, ``{field name: Detections or None}`` for the given layout.

    ``fields``: one field per rater (``field_names`` maps rater -> field;
    default: the rater name); ``None`` where the rater is not assigned, an
    empty ``Detections`` where they found nothing. ``attribute``: one field
    ``field`` whose labels carry ``rater_attr``; ``None`` where nobody is
    assigned.
    """
    out = []
    names = dict(field_names or {r: r for r in corpus.raters})
    for s in range(corpus.num_samples):
        values: dict = {}
        if layout == "fields":
            for r, rater in enumerate(corpus.raters):
                values[names[rater]] = (
                    fo.Detections(detections=_detections(corpus, s, r, None)) if corpus.assigned[s, r] else None
                )
        elif layout == "attribute":
            dets = []
            for r in np.flatnonzero(corpus.assigned[s]).tolist():
                dets.extend(_detections(corpus, s, int(r), rater_attr))
            values[field] = fo.Detections(detections=dets) if corpus.assigned[s].any() else None
        else:
            raise ValueError(f"layout must be 'fields' or 'attribute', got {layout!r}")
        out.append(values)
    return out


def samples_from_corpus(
    corpus: MultiRaterAnnotations,
    filepaths: Sequence[str],
    *,
    layout: str = "fields",
    field: str = "ground_truth",
    rater_attr: str = "annotator",
    raters_field: str | None = "raters",
    field_names: Mapping[str, str] | None = None,
) -> list:
    """New :class:`fiftyone.Sample` objects holding ``corpus`` (see :func:`corpus_label_fields`).

    Samples get image metadata from ``corpus.image_sizes`` when known and, if
    ``raters_field`` is given, the list of raters assigned to them.
    """
    if len(filepaths) != corpus.num_samples:
        raise ValueError(f"got {len(filepaths)} file paths for {corpus.num_samples} samples")
    labels = corpus_label_fields(corpus, layout=layout, field=field, rater_attr=rater_attr, field_names=field_names)
    sizes = corpus.image_sizes  # (S, 2), NaN where unknown, once the corpus is built
    samples = []
    for s, (path, values) in enumerate(zip(filepaths, labels, strict=False)):
        w, h = sizes[s]
        kw = dict(values)
        if np.isfinite(w) and np.isfinite(h):
            kw["metadata"] = fo.ImageMetadata(width=int(w), height=int(h))
        if raters_field:
            kw[raters_field] = [corpus.raters[r] for r in np.flatnonzero(corpus.assigned[s])]
        samples.append(fo.Sample(filepath=path, **kw))
    return samples


def add_corpus_fields(dataset, field_names: Sequence[str]) -> None:
    """Declares ``Detections`` fields up front, so that a field that is ``None``
    on the first samples is still typed."""
    schema = dataset.get_field_schema()
    for name in field_names:
        if name not in schema:
            dataset.add_sample_field(name, fo.EmbeddedDocumentField, embedded_doc_type=fo.Detections)
