"""Reviewing a consensus run's flagged labels: accept, reject, undo, where the queue stands, what is next.

A consensus run (:mod:`agreement.fo.methods.consensus`) flags the consensus
labels a person should look at (``{key}_review``); its review queue
(:func:`agreement.fo.methods.consensus.review_view`) shows them, least
confident first. A decision is a label tag, ``accepted`` or ``rejected``, on
the consensus label itself, and :func:`agreement.fo.methods.consensus.finalize_consensus`
reads those tags. Every function here touches exactly the flagged consensus
labels of one run, given by id: a rater's label, another run's label or an
unflagged consensus label is refused with its id, never tagged.

Given the review queue itself (a patches view; a clips view of temporal
segments), the tags are written through it, so that the App's open queue shows
them at once and FiftyOne carries them to the dataset; otherwise they are
written on the dataset.
"""

from __future__ import annotations

from typing import Iterable

from fiftyone import ViewField as F

from agreement.fo.label_schema import label_list_path
from agreement.fo.methods.consensus import _require_consensus_run
from agreement.fo.projection import LIST_ATTRS

__all__ = ["DECISIONS", "ReviewError", "review_labels", "review_progress", "next_pending", "queue_label_ids",
           "queue_key"]

#: decision -> (tag added, tag removed); ``None`` undoes a decision
DECISIONS = {"accepted": ("accepted", "rejected"), "rejected": ("rejected", "accepted"), None: (None, None)}


class ReviewError(ValueError):
    """A review action names labels it may not touch, or an unknown decision."""


def _field(samples, key: str) -> tuple[str, str]:
    """The run's consensus field and the path of its label list (``{key}_consensus.detections``)."""
    info = _require_consensus_run(samples, key)
    field = f"{key}_consensus"
    dataset = samples._root_dataset
    if info.get("frame_fields"):
        raise ReviewError(f"run {key!r} is a consensus of video frame labels (frames.{field}): accepting and "
                          "rejecting its labels here is not supported yet; open its review queue "
                          "(load_agreement_view, mode 'review': clips of the frames with flagged labels) and tag "
                          "the labels in the App, or compute consensus tracks (compute_track_agreement, "
                          "consensus=True)")
    return field, label_list_path(field, dataset.get_field(field).document_type)


def _lists(dataset, field: str, *columns: list) -> tuple[list, ...]:
    """Per-sample columns of a consensus field's labels as lists: a field of one label (a class consensus,
    ``Classification``) gives its value per sample, made a list of one (``[]`` where it is ``None``)."""
    if dataset.get_field(field).document_type in LIST_ATTRS:
        return columns
    return tuple([[] if v is None else [v] for v in col] for col in columns)


def _flags(dataset, key: str, ids: list[str]) -> dict[str, bool]:
    """``{label id: flagged}`` of those of ``ids`` that are consensus labels of run ``key``."""
    field, items = _field(dataset, key)
    view = dataset.select_labels(ids=ids, fields=field)
    found_ids, flags = _lists(dataset, field, *view.values([f"{items}.id", f"{items}.{key}_review"]))
    return {i: bool(f) for per_i, per_f in zip(found_ids, flags) for i, f in zip(per_i or [], per_f or [])}


def review_labels(samples, key: str, label_ids: Iterable[str], decision: str | None) -> dict:
    """Tags flagged consensus labels of run ``key`` ``accepted`` or ``rejected`` (``None``: removes both tags).

    A label takes one decision: accepting removes a ``rejected`` tag and rejecting an ``accepted`` one.
    Nothing is tagged unless every id is a flagged consensus label of the run.

    Args:
        samples: the dataset, a view of it, or the run's review queue (the tags are written through a
            patches view of the consensus field, so that the App's open queue shows them).
        key: the consensus run.
        label_ids: ids of consensus labels flagged for review.
        decision: ``"accepted"``, ``"rejected"`` or ``None``.

    Returns:
        ``{"tagged": n, "decision": decision, **review_progress(...)}``.

    Raises:
        ReviewError: an unknown decision, or ids that are not flagged consensus labels of the run
            (named, with what they are instead).
    """
    if decision not in DECISIONS:
        raise ReviewError(f"decision must be 'accepted', 'rejected' or None (undo), got {decision!r}")
    ids = list(dict.fromkeys(str(i) for i in label_ids))
    dataset = samples._root_dataset
    field, _ = _field(dataset, key)
    flags = _flags(dataset, key, ids)
    foreign = [i for i in ids if i not in flags]
    if foreign:
        raise ReviewError(
            f"{len(foreign)} of the {len(ids)} labels (e.g. {foreign[0]}) are not consensus labels of run {key!r} "
            f"(field {field!r}): a review decision tags only the run's flagged consensus labels, never a rater's "
            "label or another run's")
    unflagged = [i for i in ids if not flags[i]]
    if unflagged:
        raise ReviewError(
            f"{len(unflagged)} of the {len(ids)} consensus labels (e.g. {unflagged[0]}) are not flagged for review "
            f"in run {key!r}: finalize_consensus keeps them whatever their tags; review the labels of its queue")
    add, remove = DECISIONS[decision]
    through = samples if _is_queue_of(samples, field) else dataset
    view = through.select_labels(ids=ids, fields=field)
    for tag in [remove] if decision else ["accepted", "rejected"]:
        view.untag_labels(tag, label_fields=[field])
    if decision:
        view.tag_labels(add, label_fields=[field])
    return {"tagged": len(ids), "decision": decision, **review_progress(dataset, key)}


def queue_key(view) -> str | None:
    """The consensus run whose review queue ``view`` is, or ``None``.

    Boxes and other instances: a patches view of ``{key}_consensus``; temporal segments: a clips view of it.
    Classes (a ``Classification`` per
    sample): the samples view :func:`~agreement.fo.methods.consensus.review_view` builds, recognised by its
    filter of ``{key}_consensus`` on ``{key}_review`` (the App's view of the queue, whatever stages the
    user put before it).
    """
    import fiftyone.core.labels as fol
    import fiftyone.core.stages as fos

    from agreement.fo.methods.consensus import METHOD
    from agreement.fo.runs import list_agreement_runs

    if view is None:
        return None
    field = _queue_field(view)
    if not field:
        dataset = view._root_dataset
        filtered = [s.field for s in getattr(view, "_stages", []) if isinstance(s, fos.FilterLabels)]
        field = next((f for f in reversed(filtered) if f.endswith("_consensus") and getattr(
            dataset.get_field(f), "document_type", None) is fol.Classification), None)
    if not field or not field.endswith("_consensus"):
        return None
    key = field[: -len("_consensus")]
    return key if key in list_agreement_runs(view._root_dataset, method=METHOD) else None


def _queue_field(view) -> str | None:
    """The label field ``view`` is made of: its patches' field, or the ``TemporalDetections`` field of a clips
    view (one clip per segment); ``None`` for other views."""
    field = getattr(view, "patches_field", None)
    if not field and getattr(view, "_is_clips", False):
        field = getattr(view, "_classification_field", None)
    return field or None


def _is_queue_of(samples, field: str) -> bool:
    """Whether ``samples`` is a patches view of ``field``, or a clips view of its segments (tags written
    through it reach the dataset)."""
    return _queue_field(samples) == field


def review_progress(samples, key: str) -> dict:
    """Where the review of run ``key`` stands, over the whole run.

    Returns:
        ``{"flagged", "accepted", "rejected", "pending"}``: flagged consensus labels, those tagged
        ``accepted``, ``rejected`` (a label with both tags counts as rejected, as
        :func:`~agreement.fo.methods.consensus.finalize_consensus` drops it), and those with neither.
    """
    dataset = samples._root_dataset
    field, items = _field(dataset, key)
    flagged_view = dataset.filter_labels(field, F(f"{key}_review") == True)  # noqa: E712
    ids, tags = _lists(dataset, field, *flagged_view.values([f"{items}.id", f"{items}.tags"]))
    flagged = accepted = rejected = 0
    for per_sample in tags:
        for t in per_sample or []:
            flagged += 1
            t = t or []
            if "rejected" in t:
                rejected += 1
            elif "accepted" in t:
                accepted += 1
    return {"flagged": flagged, "accepted": accepted, "rejected": rejected,
            "pending": flagged - accepted - rejected}


def queue_label_ids(queue, key: str, sample_ids: Iterable[str] | None = None) -> list[str]:
    """The consensus label ids in the review queue (optionally of its samples/patches ``sample_ids``), in
    queue order."""
    field, _ = _field(queue, key)
    view = queue if sample_ids is None else queue.select(list(sample_ids), ordered=True)
    if _is_queue_of(queue, field):
        return [i for i in view.values(f"{field}.id") if i is not None]
    _, items = _field(queue, key)
    (ids,) = _lists(queue._root_dataset, field, view.values(f"{items}.id"))
    return [i for per in ids for i in (per or [])]


def _decided(dataset, key: str, label_ids: list[str]) -> set[str]:
    """Those of ``label_ids`` (consensus labels of run ``key``) tagged ``accepted`` or ``rejected`` on the
    dataset (the source of truth: a queue opened earlier may hold older tags)."""
    field, items = _field(dataset, key)
    ids, tags = _lists(dataset, field,
                       *dataset.select_labels(ids=label_ids, fields=field).values([f"{items}.id", f"{items}.tags"]))
    return {i for per_i, per_t in zip(ids, tags) for i, t in zip(per_i or [], per_t or [])
            if {"accepted", "rejected"} & set(t or [])}


def next_pending(queue, key: str, current: str | None = None) -> str | None:
    """The id of the next sample (patch) of the review queue with a label still undecided, after
    ``current`` in queue order and wrapping around; ``None`` when every label in the queue is decided."""
    field, items = _field(queue, key)
    if _is_queue_of(queue, field):
        ids, per_sample = queue.values(["id", f"{field}.id"])
        per_sample = [[lid] for lid in per_sample]
    else:
        ids, per_sample = queue.values(["id", f"{items}.id"])
        (per_sample,) = _lists(queue._root_dataset, field, per_sample)
        per_sample = [list(p or []) for p in per_sample]
    decided = _decided(queue._root_dataset, key, [i for p in per_sample for i in p])
    pending = [any(i not in decided for i in p) for p in per_sample]
    start = ids.index(current) + 1 if current in ids else 0
    for j in list(range(start, len(ids))) + list(range(0, start)):
        if pending[j] and ids[j] != current:
            return ids[j]
    return None
