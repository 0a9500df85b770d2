"""Where a frame-units dataset's results go: straight to the frames of its videos, written once.

A frame run (:mod:`agreement.fo.frames.runs`) computes on a temporary image
dataset whose samples are the frames of the videos (:mod:`agreement.fo.frames.units`;
a unit keeps its frame's ``_id``, its labels and its ``last_modified_at``).
The units dataset names, in its ``info`` (:data:`WRITE_TARGET_KEY`), the
frame collection of its video dataset: the bulk write-back
(:func:`agreement.fo.storage.writing.write_columns`) then sends each unit's
``UpdateOne`` to that frame document instead of to the unit, so that a
frame's per-frame values and label attributes are written once, directly
(no copy on the units, no second pass). The info is stored with the units,
so that Dask workers, which load the units by name, write to the frames too.

``positions`` says whether a label's position in a unit's list is its
position in the frame's stored list (the view of the videos gave the lists
as stored, :func:`agreement.fo.storage.reading.positions_as_stored`); if
not, labels are addressed by their ids.

:func:`captured_values` keeps, in this process, the values written for some
fields (the per-frame score), so that the per-video aggregates are computed
from them in memory rather than read back.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence

__all__ = ["WRITE_TARGET_KEY", "write_target", "declare_on_frames", "capture", "captured_values"]

#: ``dataset.info`` entry of a frame-units dataset: ``{"dataset": <video dataset name>, "collection": <its frame
#: collection>, "positions": bool}``.
WRITE_TARGET_KEY = "iaa_write_target"

_LOCK = threading.Lock()
_CAPTURED: dict[str, dict[str, dict[str, Any]]] = {}


def write_target(dataset) -> Mapping[str, Any] | None:
    """The frame collection that receives ``dataset``'s sample-document updates (module docstring), or
    ``None`` for any dataset that is not a frame-units dataset."""
    info = getattr(dataset, "info", None) or {}
    target = info.get(WRITE_TARGET_KEY)
    return target if isinstance(target, Mapping) and target.get("collection") else None


def declare_on_frames(units, fields: Sequence[str], label_fields: Sequence[str]) -> None:
    """Declares on the frames of a frame-units dataset's videos what the units declare for its fields and
    label fields (their attributes included), before the write-back sends values there (FiftyOne refuses to
    load a frame holding an undeclared field); a no-op for any other dataset, or when nothing is new."""
    target = write_target(units)
    if target is None or not (fields or label_fields):
        return
    import fiftyone as fo

    from agreement.fo.frames.fields import declare_frame_fields

    video = fo.load_dataset(target["dataset"])
    tops = set(fields) | set(label_fields)
    wanted = [p for p in units.get_field_schema(flat=True) if p.split(".")[0] in tops]
    have = video.get_frame_field_schema(flat=True) or {}
    if any(p not in have for p in wanted):
        declare_frame_fields(units, video, list(fields), list(label_fields))


def capture(target: Mapping[str, Any], sample_columns: Mapping[str, Mapping[str, Any]],
            stored: Callable[[Any], Any]) -> None:
    """Keeps the values (as ``stored(value)`` gives them) of the captured fields among ``sample_columns``
    (``{field: {sample id: value}}``) written to ``target`` (a no-op unless :func:`captured_values` is
    open for it)."""
    sink = _CAPTURED.get(str(target["collection"]))
    if sink is None:
        return
    with _LOCK:
        for name, values in sample_columns.items():
            if name in sink:
                sink[name].update((str(s), stored(v)) for s, v in values.items())


@contextmanager
def captured_values(collection: str, fields: list[str]) -> Iterator[dict[str, dict[str, Any]]]:
    """While open, the values written to frame collection ``collection`` for ``fields`` are kept, in this
    process: ``{field: {frame id: stored value}}`` (values written by other processes, e.g. Dask workers,
    are not: the caller reads those back)."""
    sink: dict[str, dict[str, Any]] = {f: {} for f in fields}
    with _LOCK:
        if collection in _CAPTURED:
            raise RuntimeError(f"values written to {collection!r} are already being captured")
        _CAPTURED[collection] = sink
    try:
        yield sink
    finally:
        with _LOCK:
            _CAPTURED.pop(collection, None)
