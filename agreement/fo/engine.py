"""One run lifecycle for every agreement method: validate, read, compute, write, register.

A method declares itself once as a :class:`MethodSpec`: the fields and label
attributes it owns (as suffixes of the run key), how its input is read, and a
``compute`` step that turns the corpus (pure :mod:`agreement` code) into a
:class:`MethodOutput`: per-sample values, per-label values, the headline
summary and the detail. :func:`run_method` does the rest, the same way for
all of them:

1. check the key (fail before reading anything);
2. read the raters' annotations in bulk (:func:`agreement.fo.reading.read_annotations`);
3. check the key again against the fields the run will own, compute;
4. free an overwritten run only now (a failed computation never costs the
   user their previous run), register the new one as ``incomplete`` with
   every field it will own (:func:`agreement.fo.runs.prepare_run`);
5. write per-sample values (one bulk call per field) and per-label values
   (one update per sample carrying every attribute of its labels);
6. complete the run with its parameters, input layout and results.

Adding a method means writing its pure computation and its declaration: see
the ``SPEC`` of :mod:`agreement.fo.kalos` for an example.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Mapping, Sequence

import numpy as np

from agreement.fo import runs
from agreement.fo.reading import ReadResult, read_annotations
from agreement.fo.gc_pause import gc_paused
from agreement.fo.writing import declare_label_field, label_field_value

__all__ = ["MethodSpec", "MethodOutput", "run_method", "clean_summary"]

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
        label_fields: suffix → ``(container, {sample_id: [label documents]}, {attr: example values})``:
            a whole label field the run owns (e.g. a consensus), written in
            bulk from :func:`agreement.fo.writing.label_document` documents.
    """

    summary: dict
    detail: dict
    sample_values: dict[str, Sequence[Any]] = field(default_factory=dict)
    label_values: dict[str, Sequence[Any]] = field(default_factory=dict)
    sample_objects: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    label_fields: dict[str, tuple] = field(default_factory=dict)


@dataclass(frozen=True)
class MethodSpec:
    """A method, declared once.

    Attributes:
        method: the run's method marker, e.g. ``"iaa.kalos"``.
        sample_suffixes: the per-sample fields it owns, ``{key}_<suffix>``.
        label_suffixes: the per-label attributes it owns on every rater label field.
        compute: ``(read, params, progress, extra) -> MethodOutput`` (pure agreement code inside).
        read_options: extra :func:`read_annotations` options from the parameters
            (``image_sizes``, ``masks``, ...).
        context: a context manager around the computation (e.g. similarity options).
        check: validates the corpus before anything is written (raises with a message).
        extra: ``(samples, read, params) -> dict`` of further inputs read from the dataset
            (e.g. a session attribute), passed to ``compute`` as ``extra``.
    """

    method: str
    sample_suffixes: tuple[str, ...]
    label_suffixes: tuple[str, ...]
    compute: Callable[[ReadResult, dict, Progress, dict], MethodOutput]
    read_options: Callable[[dict], dict] = lambda params: {}
    context: Callable[[dict], ContextManager] = lambda params: nullcontext()
    check: Callable[[ReadResult, dict], None] = lambda read, params: None
    extra: Callable[[Any, ReadResult, dict], dict] = lambda samples, read, params: {}


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


def _column(values: Sequence[Any]) -> np.ndarray:
    """Per-label values as an array: numeric ones keep their dtype (fast to clean), others are objects."""
    arr = np.asarray(values) if isinstance(values, np.ndarray) else np.asarray(list(values), dtype=object)
    if arr.dtype == object and len(arr) and all(isinstance(v, (float, np.floating)) for v in arr[:100]):
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError):
            return arr
    return arr


def _write(samples, plan: runs.RunPlan, read: ReadResult, spec: MethodSpec, out: MethodOutput) -> None:
    """Writes the run's object-valued sample fields, then its label fields, plain sample fields and label
    attributes in one pass (:func:`agreement.fo.runs.write_run_columns`: each sample document rewritten once)."""
    data = read.annotations
    sid = data.sample_ids
    for suffix in spec.sample_suffixes:
        if suffix in out.sample_objects and suffix not in out.label_fields:
            runs.write_sample_values(samples, plan, suffix, dict(out.sample_objects[suffix]))
    sample_values = {s: dict(zip(sid.tolist(), _column(out.sample_values[s]).tolist()))
                     for s in spec.sample_suffixes if s in out.sample_values and s not in out.label_fields}
    for suffix, (container, docs, attrs) in out.label_fields.items():
        if suffix not in spec.sample_suffixes:
            raise runs.RunError(f"label field {suffix!r} is not declared by {spec.method}")
        declare_label_field(runs._dataset(samples), plan.sample_field(suffix), container, attrs)
        with gc_paused():
            sample_values[suffix] = {s: label_field_value(container, d) for s, d in docs.items()}
    columns = {s: _column(out.label_values[s]) for s in spec.label_suffixes if s in out.label_values}
    label_values = {}
    for lf in read.label_fields if columns else ():
        rows = read.rows_of_field(lf)
        if len(rows):
            label_values[lf] = (sid[data.sample_index[rows]], data.label_ids[rows],
                                {s: col[rows] for s, col in columns.items()}, read.stored_ids_of(lf))
    runs.write_run_columns(samples, plan, sample_values, label_values)


def run_method(
    samples,
    key: str,
    spec: MethodSpec,
    layout: Mapping[str, Any],
    params: Mapping[str, Any],
    overwrite: bool = False,
    progress: Progress | None = None,
) -> dict:
    """Runs ``spec`` on ``samples`` as run ``key`` (the lifecycle in the module docstring).

    Args:
        samples: a dataset or view (only its samples are read and written).
        key: the run key.
        spec: the method.
        layout: the rater layout and reading options shared by every method
            (``fields`` or ``field``/``rater_attr``/``raters_field``,
            ``box_policy``, ``assume_crossed``).
        params: the method's validated parameters (recorded with the run).
        overwrite: replace an existing agreement run with this key.
        progress: optional ``callback(fraction, label)``.

    Returns:
        The summary with NaN as ``None`` and the repair counts.
    """
    def report(fraction: float, label: str) -> None:
        if progress is not None:
            progress(fraction, label)

    params = dict(params)
    runs.validate_key(key)
    report(0.0, "reading annotations")
    read = read_annotations(samples, **dict(layout), **spec.read_options(params))
    spec.check(read, params)
    extra = spec.extra(samples, read, params)
    runs.prepare_run(samples, key, spec.method, spec.sample_suffixes, read.label_fields, spec.label_suffixes,
                     overwrite=overwrite, check_only=True)
    report(0.1, "computing")
    with spec.context(params):
        out = spec.compute(read, params, lambda f, label: report(0.1 + 0.75 * f, label), extra)
    report(0.85, "writing results")
    plan = runs.prepare_run(samples, key, spec.method, spec.sample_suffixes, read.label_fields, spec.label_suffixes,
                            overwrite=overwrite, scan_documents=False)
    _write(samples, plan, read, spec, out)
    summary = {**out.summary, **read.repairs.counts()}
    detail = {"raters": list(read.annotations.raters), **out.detail, "repairs": read.repairs.as_dict()}
    runs.register_run(samples, plan, params, read.layout, {"summary": summary, "detail": detail})
    report(1.0, "done")
    return clean_summary(summary)
