"""The two parameter objects every compute run shares: how the raters' labels are read
(:class:`RaterLayout`) and where the run computes (:class:`Execution`).

They travel as objects from the declaration (:func:`agreement.fo.runs.declaration.run_declared`) through
the run lifecycle (:func:`agreement.fo.runs.engine.run_method`, :func:`agreement.fo.frames.runs.run_on_frames`)
to the shards (:class:`agreement.fo.runs.engine.ShardJob`); only the reader, at the edge, takes the layout
as keyword arguments (:meth:`RaterLayout.as_dict`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from agreement.core.validation import BOX_POLICIES
from agreement.fo.runs.distributed import check_backend

__all__ = ["RaterLayout", "Execution"]


@dataclass(frozen=True)
class RaterLayout:
    """How the raters' labels are read: ``fields`` (one label field per rater), or ``field`` whose labels name
    their rater in ``rater_attr``, with the raters assigned to each sample in ``raters_field`` (default: the
    assignment the dataset records; without one, ``assume_crossed`` accepts that every rater saw every
    sample); boxes past the image border are ``box_policy`` (``"clip"``, ``"drop"``, ``"error"``)."""

    fields: Sequence[str] | None = None
    field: str | None = None
    rater_attr: str = "annotator"
    raters_field: str | None = None
    assume_crossed: bool = False
    box_policy: str = "clip"

    def __post_init__(self) -> None:
        if self.box_policy not in BOX_POLICIES:
            raise ValueError(f"box_policy must be one of {', '.join(BOX_POLICIES)}, got {self.box_policy!r}")

    @classmethod
    def of(cls, layout: RaterLayout | Mapping[str, Any]) -> RaterLayout:
        """``layout`` as a :class:`RaterLayout` (a mapping of its field names is converted once, at the edge).

        Raises:
            TypeError: a name that is not a layout field.
        """
        return layout if isinstance(layout, RaterLayout) else cls(**dict(layout))

    @property
    def names(self) -> list[str]:
        """The rater fields named: ``fields``, else ``[field]`` (empty without either)."""
        return list(self.fields or []) or ([self.field] if self.field else [])

    def as_dict(self) -> dict:
        """The layout as the reader (:func:`agreement.fo.storage.reading.read_annotations`) takes its keyword arguments."""
        return {"fields": self.fields, "field": self.field, "rater_attr": self.rater_attr,
                "raters_field": self.raters_field, "box_policy": self.box_policy,
                "assume_crossed": self.assume_crossed}


@dataclass(frozen=True)
class Execution:
    """Where a streamed run computes: ``shard_size`` samples at a time (default: chosen for the view), on
    ``backend`` ``"serial"`` (here) or ``"dask"`` (the scheduler at ``dask_address``, or a local cluster of
    ``workers`` processes). The numbers are the same whatever these are. Validated by the run, before
    anything is read (:meth:`check`)."""

    shard_size: int | None = None
    backend: str = "serial"
    dask_address: str | None = None
    workers: int | None = None

    def check(self) -> None:
        """Validates the backend options (:func:`agreement.fo.runs.distributed.check_backend`).

        Raises:
            ValueError: naming the problem (an unknown backend, Dask options without ``backend="dask"``, ...).
        """
        check_backend(self.backend, dask_address=self.dask_address, workers=self.workers)
