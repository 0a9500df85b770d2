"""What a method declares to the run lifecycle of :mod:`agreement.fo.engine`, and what it returns.

:class:`MethodSpec` (the fields and label attributes a method owns, how its
input is read, its whole-corpus ``compute`` or its streamed ``kernel`` and
``finish``), :class:`MethodOutput` (what a method computed),
:class:`StreamContext` (what a streamed ``finish`` gets besides its
statistics) and :func:`clean_summary`. Importable from :mod:`agreement.fo.engine`
too.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Mapping, Sequence

import numpy as np

from agreement.fo.reading import ReadResult

__all__ = ["MethodSpec", "MethodOutput", "StreamContext", "clean_summary", "Progress"]

Progress = Callable[[float, str], None]


@dataclass
class MethodOutput:
    """What a method computed on a corpus.

    Attributes:
        summary: the headline numbers (flat; NaN where undefined).
        detail: everything else for the run results (JSON-serialisable after
            :func:`agreement.fo.runs.to_json`).
        sample_values: suffix → one value per corpus sample (corpus order).
        label_values: suffix → one value per corpus annotation row.
        sample_objects: suffix → ``{sample_id: value}`` for values given per
            sample id, samples not listed untouched.
        label_fields: suffix → ``(container, docs, {attr: example values})``: a whole label
            field the run owns (e.g. a consensus), written in bulk from
            :func:`agreement.fo.writing.label_document` documents; ``docs`` is
            ``{sample_id: [label documents]}``, or a function of a ``slice`` of
            corpus samples returning that map for them (documents made part by
            part while earlier parts are written).
        stats: a streamed method's mergeable corpus statistics of the shard
            (handed to the method's ``finish`` with those of every other shard).
    """

    summary: dict
    detail: dict
    sample_values: Mapping[str, Sequence[Any] | np.ndarray] = field(default_factory=dict)
    label_values: Mapping[str, Sequence[Any] | np.ndarray] = field(default_factory=dict)
    sample_objects: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    label_fields: dict[str, tuple] = field(default_factory=dict)
    stats: Any = None


@dataclass(frozen=True)
class MethodSpec:
    """A method, declared once.

    Attributes:
        method: the run's method marker, e.g. ``"iaa.<name>"`` (:data:`agreement.fo.methods.kalos.METHOD`).
        sample_suffixes: the per-sample fields it owns, ``{key}_<suffix>``.
        label_suffixes: the per-label attributes it owns on every rater label field.
        compute: ``(read, params, progress, extra) -> MethodOutput`` (pure agreement code inside) on
            the whole corpus at once; ``None`` for a method that always streams.
        read_options: extra :func:`agreement.fo.reading.read_annotations` options from the parameters
            (``image_sizes``, ``masks``, ...).
        context: a context manager around the computation (e.g. similarity options).
        check: validates the corpus before anything is written (raises with a message).
        extra: ``(samples, read, params) -> dict`` of further inputs read from the dataset
            (e.g. a session attribute), passed to ``compute`` as ``extra``.
        kernel: a method that streams: ``(read, params, extra) -> MethodOutput`` on one shard
            (per-sample and per-label values of the shard, its mergeable ``stats``;
            no summary). Pure :mod:`agreement` code inside.
        finish: ``(stats of every shard in corpus order, params, StreamContext) -> (summary, detail)``.
        prepare: ``(samples, plan, sample_ids, layout, params) -> state`` (``layout``: the run's
            :class:`agreement.fo.run_options.RaterLayout`), run once before the
            first shard (e.g. a chance sample drawn from the assignment, whose sets the shards
            then collect as they pass); the kernel finds it in ``extra["state"]``, with the
            shard's first corpus position in ``extra["sample_offset"]``.
        shard_cap: at most this many samples per shard when no shard size is given (a method whose samples
            are large, e.g. full-image masks: 200 samples of three 512 x 512 masks are about 160 MB); ``None``:
            :func:`agreement.fo.engine.default_shard_size`.
        warnings: ``(summary, detail, params) -> [sentences]``: the method's own warnings of a finished run
            (e.g. consensus labels drawn by a single rater), recorded with the run's design warnings
            (:mod:`agreement.fo.run_warnings`) and returned under the operator's ``warnings`` key.
        rater_design: the run compares raters, so its design is checked (fewer than two raters, raters
            who never meet, ...); ``False`` for a run that reads one field as one rater (a simulation).
        finish_rereads: its ``finish`` reads samples again (:attr:`StreamContext.read_samples`);
            a view of one shard serves them from memory, so such a method streams a view of at
            most :data:`agreement.fo.engine.DEFAULT_SHARD_SIZE` samples in one shard by default (not
            :func:`agreement.fo.engine.default_shard_size`).
        whole_corpus: ``params -> reason or None``: why these parameters need the whole
            corpus at once (``compute`` then runs, and a shard size smaller than the
            view or the Dask backend is refused with this reason); ``None``: it streams.
    """

    method: str
    sample_suffixes: tuple[str, ...]
    label_suffixes: tuple[str, ...]
    compute: Callable[[ReadResult, dict, Progress, dict], MethodOutput] | None
    read_options: Callable[[dict], dict] = lambda params: {}
    context: Callable[[dict], ContextManager] = lambda params: nullcontext()
    check: Callable[[ReadResult, dict], None] = lambda read, params: None
    extra: Callable[[Any, ReadResult, dict], dict] = lambda samples, read, params: {}
    kernel: Callable[[ReadResult, dict, dict], MethodOutput] | None = None
    finish: Callable[[list, dict, "StreamContext"], tuple[dict, dict]] | None = None
    whole_corpus: Callable[[dict], str | None] = lambda params: None
    prepare: Callable[[Any, Any, list, Any, dict], Any] | None = None
    finish_rereads: bool = False
    shard_cap: int | None = None
    warnings: Callable[[dict, dict, dict], list] = lambda summary, detail, params: []
    rater_design: bool = True


@dataclass
class StreamContext:
    """What a streamed method's ``finish`` (and, through ``extra``, its ``kernel``) gets besides its statistics.

    Attributes:
        sample_ids: every sample id of the view, in the canonical corpus order (sorted as strings).
        state: what the method's ``prepare`` returned (``None`` without one).
        read_samples: ``(sample_ids) -> MultiRaterAnnotations``: those samples read again, as the
            shards were read (for corpus statistics that need a few samples together).
        groups: the group of each sample (integers, ``sample_ids`` order) when samples are not independent
            items (frames: their video, :func:`agreement.fo.frame_units.chance_groups`); ``None``: each sample
            is its own group. Chance baselines pair samples of different groups; bootstraps resample groups.
    """

    sample_ids: list
    state: Any = None
    read_samples: Callable[[Sequence[str]], Any] | None = None
    groups: Any = None


def clean_summary(summary: Mapping[str, Any]) -> dict:
    """NaN and infinite floats as ``None``, numpy scalars as Python scalars (the operators' return value)."""
    out = {}
    for k, v in summary.items():
        if isinstance(v, (float, np.floating)):
            v = float(v) if np.isfinite(v) else None
        elif isinstance(v, np.integer):
            v = int(v)
        elif isinstance(v, np.bool_):
            v = bool(v)
        out[k] = v
    return out
