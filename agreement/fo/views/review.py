"""Reviewing a consensus run's flagged labels: accept, reject, undo, where the queue stands, what is next.

A consensus run (:mod:`agreement.fo.methods.consensus`) flags the consensus
labels a person should look at (``{key}_review``); its review queue
(:func:`agreement.fo.methods.consensus.review_view`) shows them, least
confident first. A decision is a label tag, ``accepted`` or ``rejected``, on
the consensus label itself, and :func:`agreement.fo.methods.consensus.finalize_consensus`
reads those tags. Every function here touches exactly the flagged consensus
labels of one run, given by id: a rater's label, another run's label or an
unflagged consensus label is refused with its id, never tagged.

The consensus labels are those of the sample field ``{key}_consensus`` or, for
a consensus of video frame labels (a frame run), of the frame field
``frames.{key}_consensus``: an item of the queue (a patch, a clip, a sample)
then holds the flagged labels of its frames, possibly several.

Given the review queue itself (a patches view; a clips view of temporal
segments or of the frames holding flagged labels), the tags are written
through it, so that the App's open queue shows them at once and FiftyOne
carries them to the dataset; otherwise they are written on the dataset.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

from fiftyone import ViewField as F

from agreement.fo.methods.consensus import require_consensus_run
from agreement.fo.storage.label_schema import label_list_path
from agreement.fo.storage.projection import LIST_ATTRS

__all__ = ["DECISIONS", "ReviewError", "review_labels", "review_progress", "next_pending", "queue_label_ids",
           "queue_key", "consensus_path", "item_labels"]

#: decision -> (tag added, tag removed); ``None`` undoes a decision
DECISIONS = {"accepted": ("accepted", "rejected"), "rejected": ("rejected", "accepted"), None: (None, None)}

_FRAMES = "frames."


class ReviewError(ValueError):
    """A review action names labels it may not touch, or an unknown decision."""


class ConsensusPath(NamedTuple):
    """Where the consensus labels of a run are stored.

    Attributes:
        field: the path FiftyOne's ``select_labels``, ``filter_labels`` and ``tag_labels`` take:
            ``{key}_consensus``, or ``frames.{key}_consensus`` for a frame run.
        items: the path of its labels: its list (``{field}.detections``), or ``field`` for one label per
            sample (``Classification``).
        frames: whether the labels are frame labels (a frame run).
        single: whether a sample (frame) holds one label, not a list.
    """

    field: str
    items: str
    frames: bool
    single: bool


def consensus_path(samples, key: str) -> ConsensusPath:
    """Where the consensus labels of run ``key`` are stored (:class:`ConsensusPath`).

    Raises:
        agreement.fo.runs.store.RunError: ``key`` is no consensus run of the dataset.
    """
    info = require_consensus_run(samples, key)
    frames = bool(info.get("frame_fields"))
    field = f"{_FRAMES if frames else ''}{key}_consensus"
    doc_type = samples._root_dataset.get_field(field).document_type
    return ConsensusPath(field, label_list_path(field, doc_type), frames, doc_type not in LIST_ATTRS)


def _field(samples, key: str) -> tuple[str, str]:
    """The run's consensus field and the path of its labels (:func:`consensus_path`)."""
    path = consensus_path(samples, key)
    return path.field, path.items


def item_labels(samples, key: str, leaves: Sequence[str] = ()) -> tuple[list[str], list[list[dict]]]:
    """The items of ``samples`` and, per item, its consensus labels of run ``key``.

    An item is a sample of ``samples``: a patch or a segment's clip (one label: the item's own), a sample
    (its labels; one for a class consensus), or a clip of a frame run's queue (the labels of its frames).

    Args:
        samples: the dataset, a view, or a review queue of run ``key``.
        key: the consensus run.
        leaves: label attributes to read besides the id (``"tags"``, ``"{key}_review"``, ...).

    Returns:
        ``(item ids, per item [{"id", "frame" (its frame number; ``None`` outside frame runs), leaf: value}])``,
        labels in stored order (frame by frame).
    """
    path = consensus_path(samples, key)
    names = ["id", *leaves]
    if _queue_field(samples) == path.field:  # patches, clips of segments: the item is its label
        ids, *cols = samples.values(["id", *(f"{path.field}.{n}" for n in names)])
        return ids, [[_row(names, vals, None)] if vals[0] is not None else [] for vals in zip(*cols, strict=True)]
    if path.frames:
        ids, numbers, *cols = samples.values(["id", "frames.frame_number", *(f"{path.items}.{n}" for n in names)])
        rows = []
        for k, per_frame in enumerate(numbers):
            per_col = [col[k] or [] for col in cols]
            rows.append([_row(names, vals, n) for j, n in enumerate(per_frame or [])
                         for vals in _labels_of([c[j] if j < len(c) else None for c in per_col], path.single)])
        return ids, rows
    ids, *cols = samples.values(["id", *(f"{path.items}.{n}" for n in names)])
    return ids, [[_row(names, vals, None) for vals in _labels_of(per, path.single)] for per in zip(*cols, strict=True)]


def _labels_of(columns: Sequence, single: bool) -> list[tuple]:
    """The values of each label of one sample (frame), given its columns (one per leaf, the id first): a
    list per column, or one value per column for a single label (none where the id is ``None``)."""
    if single:
        return [tuple(columns)] if columns[0] is not None else []
    return [vals for vals in zip(*(c or [] for c in columns), strict=False) if vals[0] is not None] if columns[0] else []


def _row(names: list[str], values: tuple, frame: int | None) -> dict:
    return {"frame": frame, **dict(zip(names, values, strict=False))}


def _flat(rows: list[list[dict]], name: str = "id") -> list:
    """``name`` of every label of every item, in item order."""
    return [r[name] for per in rows for r in per]


def consensus_flags(dataset, key: str, ids: list[str]) -> dict[str, bool]:
    """Which of ``ids`` are consensus labels of run ``key`` flagged for review.

    Args:
        dataset: The run's dataset.
        key: The consensus run.
        ids: Label ids.

    Returns:
        ``{label id: flagged}`` of those of ``ids`` that are consensus labels of the run (other ids absent).
    """
    field = consensus_path(dataset, key).field
    _, rows = item_labels(dataset.select_labels(ids=ids, fields=field), key, [f"{key}_review"])
    return {r["id"]: bool(r[f"{key}_review"]) for per in rows for r in per}


def review_labels(samples, key: str, label_ids: Iterable[str], decision: str | None) -> dict:
    """Tags flagged consensus labels of run ``key`` ``accepted`` or ``rejected`` (``None``: removes both tags).

    A label takes one decision: accepting removes a ``rejected`` tag and rejecting an ``accepted`` one.
    Nothing is tagged unless every id is a flagged consensus label of the run.

    Args:
        samples: the dataset, a view of it, or the run's review queue (the tags are written through a
            patches or clips view of the consensus labels, so that the App's open queue shows them).
        key: the consensus run.
        label_ids: ids of consensus labels flagged for review (of a frame run: labels of frames).
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
    field = consensus_path(dataset, key).field
    flags = consensus_flags(dataset, key, ids)
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
    if ids:
        _tag(samples if _is_queue_of(samples, field) else dataset, key, field, ids, decision)
    return {"tagged": len(ids), "decision": decision, **review_progress(dataset, key)}


def _tag(through, key: str, field: str, ids: list[str], decision: str | None) -> None:
    """Writes ``decision`` on the labels ``ids`` of ``field`` through ``through`` (a review queue or the
    dataset); on the dataset when the queue does not show them all (stages the App put after it)."""
    view = through.select_labels(ids=ids, fields=field)
    if through is not through._root_dataset and set(_flat(item_labels(view, key)[1])) != set(ids):
        view = through._root_dataset.select_labels(ids=ids, fields=field)
    add, remove = DECISIONS[decision]
    for tag in [remove] if decision else ["accepted", "rejected"]:
        view.untag_labels(tag, label_fields=[field])
    if decision:
        view.tag_labels(add, label_fields=[field])


def queue_key(view) -> str | None:
    """The consensus run whose review queue ``view`` is, or ``None``.

    Boxes and other instances: a patches view of ``{key}_consensus``; temporal segments: a clips view of it;
    video frame labels: a clips view filtering ``frames.{key}_consensus`` (the clips of the frames with a
    flagged label). Classes (a ``Classification`` per sample): the samples view
    :func:`~agreement.fo.methods.consensus.review_view` builds, recognised by its filter of ``{key}_consensus``
    on ``{key}_review`` (the App's view of the queue, whatever stages the user put before it).
    """
    import fiftyone.core.labels as fol

    from agreement.fo.methods.consensus import METHOD
    from agreement.fo.runs.store import list_agreement_runs

    if view is None:
        return None
    dataset = view._root_dataset
    field = _queue_field(view) or _frame_queue_field(view)
    if not field:
        field = next((f for f in reversed(_filtered_fields(view)) if f.endswith("_consensus") and getattr(
            dataset.get_field(f), "document_type", None) is fol.Classification), None)
    name = field[len(_FRAMES):] if field and field.startswith(_FRAMES) else field
    if not name or not name.endswith("_consensus"):
        return None
    key = name[: -len("_consensus")]
    if key not in list_agreement_runs(dataset, method=METHOD):
        return None
    return key if consensus_path(dataset, key).field == field else None


def _filtered_fields(view) -> list[str]:
    """The fields the ``filter_labels`` stages of ``view`` filter, in stage order."""
    import fiftyone.core.stages as fos

    return [s.field for s in getattr(view, "_stages", []) if isinstance(s, fos.FilterLabels)]


def _queue_field(view) -> str | None:
    """The label field ``view`` is made of: its patches' field, or the ``TemporalDetections`` field of a clips
    view (one clip per segment); ``None`` for other views."""
    field = getattr(view, "patches_field", None)
    if not field and getattr(view, "_is_clips", False):
        field = getattr(view, "_classification_field", None)
    return field or None


def _frame_queue_field(view) -> str | None:
    """The frame consensus field ``frames.{key}_consensus`` whose labels a clips view filters (the review queue
    of a frame run: the clips of the frames with a flagged label), or ``None``."""
    if not getattr(view, "_is_clips", False) or _queue_field(view):
        return None
    return next((f for f in reversed(_filtered_fields(view)) if f.startswith(_FRAMES) and f.endswith("_consensus")),
                None)


def _is_queue_of(samples, field: str) -> bool:
    """Whether ``samples`` is a review queue of ``field``: a patches view of it, a clips view of its segments
    or of the frames holding its labels (tags written through it reach the dataset)."""
    return field in (_queue_field(samples), _frame_queue_field(samples))


def review_progress(samples, key: str) -> dict:
    """Where the review of run ``key`` stands, over the whole run.

    Returns:
        ``{"flagged", "accepted", "rejected", "pending"}``: flagged consensus labels, those tagged
        ``accepted``, ``rejected`` (a label with both tags counts as rejected, as
        :func:`~agreement.fo.methods.consensus.finalize_consensus` drops it), and those with neither.
    """
    dataset = samples._root_dataset
    field = consensus_path(dataset, key).field
    flagged_view = dataset.filter_labels(field, F(f"{key}_review") == True)  # noqa: E712
    tags = [set(t or []) for t in _flat(item_labels(flagged_view, key, ["tags"])[1], "tags")]
    rejected = sum("rejected" in t for t in tags)
    accepted = sum("accepted" in t and "rejected" not in t for t in tags)
    return {"flagged": len(tags), "accepted": accepted, "rejected": rejected,
            "pending": len(tags) - accepted - rejected}


def queue_label_ids(queue, key: str, sample_ids: Iterable[str] | None = None) -> list[str]:
    """The consensus label ids in the review queue (optionally of its samples/patches/clips ``sample_ids``), in
    queue order (frame by frame within a clip of a frame run)."""
    view = queue if sample_ids is None else queue.select(list(sample_ids), ordered=True)
    return _flat(item_labels(view, key)[1])


def _decided(dataset, key: str, label_ids: list[str]) -> set[str]:
    """Those of ``label_ids`` (consensus labels of run ``key``) tagged ``accepted`` or ``rejected`` on the
    dataset (the source of truth: a queue opened earlier may hold older tags)."""
    if not label_ids:
        return set()
    view = dataset.select_labels(ids=label_ids, fields=consensus_path(dataset, key).field)
    return {r["id"] for per in item_labels(view, key, ["tags"])[1] for r in per
            if {"accepted", "rejected"} & set(r["tags"] or [])}


def next_pending(queue, key: str, current: str | None = None) -> str | None:
    """The id of the next item (patch, clip, sample) of the review queue with a label still undecided, after
    ``current`` in queue order and wrapping around; ``None`` when every label in the queue is decided."""
    ids, rows = item_labels(queue, key)
    per_item = [[r["id"] for r in per] for per in rows]
    decided = _decided(queue._root_dataset, key, [i for p in per_item for i in p])
    pending = [any(i not in decided for i in p) for p in per_item]
    start = ids.index(current) + 1 if current in ids else 0
    for j in list(range(start, len(ids))) + list(range(start)):
        if pending[j] and ids[j] != current:
            return ids[j]
    return None
