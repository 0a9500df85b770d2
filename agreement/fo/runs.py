"""Agreement runs on a FiftyOne dataset: register, list, load, rename, delete.

Every computation is a named run (``key``) registered with FiftyOne's runs API
as a plain :class:`fiftyone.core.runs.RunConfig` carrying a method marker
(``method="iaa.<name>"``) and ``plugin="@iaa/agreement"``. The config records
exactly what the run wrote:

* ``sample_fields``: per-sample result fields, always named ``{key}_<suffix>``;
* ``label_attrs``: per-label attributes, as ``[label field, attribute]`` pairs,
  the attribute always named ``{key}_<suffix>``.

A run never writes a field it does not own: :func:`prepare_run` refuses a key
whose fields already exist unless they belong to an agreement run with the same
key and ``overwrite=True`` is given, in which case that run is deleted first.
Deleting a run removes exactly the fields and attributes it recorded, then the
run itself. Renaming a run renames its fields and attributes.

Results (the run's headline numbers and full, JSON-serialisable detail) are
saved with the run and load back with ``dataset.load_run_results(key)``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

import fiftyone.core.runs as fors

from agreement.fo.compact import columns_to_nested, is_nested_columns, nested_to_columns, pack, unpack
from agreement.fo.locking import schema_lock
from agreement.fo.reading import LABEL_TYPES
from agreement.fo.writing import db_value as _db_value

__all__ = [
    "PLUGIN_NAME",
    "RUN_FORMAT_VERSION",
    "RunPlan",
    "prepare_run",
    "write_sample_values",
    "write_label_values",
    "write_label_attrs",
    "write_run_columns",
    "declare_label_attrs",
    "add_run_sample_field",
    "register_run",
    "list_agreement_runs",
    "get_agreement_run_info",
    "load_agreement_results",
    "rename_agreement_run",
    "delete_agreement_run",
    "discard_incomplete_run",
    "to_json",
]

PLUGIN_NAME = "@iaa/agreement"
RUN_FORMAT_VERSION = 1
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class RunError(ValueError):
    """A run cannot be created, found, renamed or deleted as asked."""


def validate_key(key: str) -> str:
    """A run key must be usable as a field-name prefix: ``[A-Za-z_][A-Za-z0-9_]*``."""
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise RunError(
            f"invalid run key {key!r}: use letters, digits and underscores, not starting with a digit"
        )
    return key


def _dataset(samples):
    return samples._root_dataset


def _is_agreement_run(dataset, key: str) -> bool:
    if key not in dataset.list_runs():
        return False
    cfg = dataset.get_run_info(key).config
    return getattr(cfg, "plugin", None) == PLUGIN_NAME


def list_agreement_runs(samples, method: str | None = None) -> list[str]:
    """Keys of this plugin's runs on the dataset, optionally of one method."""
    dataset = _dataset(samples)
    keys = []
    for key in dataset.list_runs():
        cfg = dataset.get_run_info(key).config
        if getattr(cfg, "plugin", None) != PLUGIN_NAME:
            continue
        if method is not None and cfg.method not in (method, f"iaa.{method}"):
            continue
        keys.append(key)
    return sorted(keys)


def _require_run(dataset, key: str):
    if not _is_agreement_run(dataset, key):
        runs = list_agreement_runs(dataset)
        raise RunError(
            f"dataset {dataset.name!r} has no agreement run {key!r}; its agreement runs are: {runs or 'none'}"
        )
    return dataset.get_run_info(key)


def get_agreement_run_info(samples, key: str) -> dict:
    """What a run is: method, parameters, input layout, fields written, timestamp, format version."""
    dataset = _dataset(samples)
    info = _require_run(dataset, key)
    cfg = info.config
    return {
        "key": key,
        "method": cfg.method,
        "timestamp": str(info.timestamp),
        "format_version": getattr(cfg, "format_version", None),
        "status": getattr(cfg, "status", "complete"),
        "params": dict(getattr(cfg, "params", {}) or {}),
        "input": dict(getattr(cfg, "input", {}) or {}),
        "sample_fields": list(getattr(cfg, "sample_fields", []) or []),
        "label_attrs": [list(x) for x in (getattr(cfg, "label_attrs", []) or [])],
    }


def load_agreement_results(samples, key: str) -> dict:
    """The results saved with a run, as a plain dict (``summary``, ``detail``, ...).

    Rater-pair tables are stored as columns (compact for crowds of raters,
    :func:`agreement.rater_pairs.records_to_columns`); here
    ``detail["rater_pairs"]`` is given back as one record per pair.
    """
    from agreement.rater_pairs import columns_to_records

    dataset = _dataset(samples)
    _require_run(dataset, key)
    results = dataset.load_run_results(key, cache=False)
    if results is None:
        return {}
    out = {k: v for k, v in vars(results).items() if not k.startswith("_")}
    detail = out.get("detail")
    if isinstance(detail, dict):
        for name in COMPACT_DETAIL:
            if isinstance(detail.get(name), str):
                detail[name] = unpack(detail[name])
                if name in NESTED_DETAIL and is_nested_columns(detail[name]):
                    detail[name] = columns_to_nested(detail[name])
        if isinstance(detail.get("rater_pairs"), dict):
            detail["rater_pairs"] = columns_to_records(detail["rater_pairs"])
    return out


def _label_path(dataset, label_field: str, attr: str) -> str:
    doc_type = dataset.get_field(label_field).document_type
    return f"{label_field}.{LABEL_TYPES[doc_type]}.{attr}"


def _existing_label_attr(dataset, label_field: str, attr: str) -> bool:
    return _first_existing_label_attr(dataset, [(label_field, attr)]) is not None


def _first_existing_label_attr(dataset, label_attrs: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The first ``(label_field, attr)`` declared in the schema or stored on some label, else ``None``
    (declarations first, then one query over the documents that stops at the first hit)."""
    declared, paths = _declared_label_attr(dataset, label_attrs)
    return declared if declared is not None else _stored_label_attr(dataset._sample_collection, paths)


def _declared_label_attr(dataset, label_attrs: Iterable[tuple[str, str]]) -> tuple[tuple | None, dict]:
    """The first ``(label_field, attr)`` the schema declares (else ``None``), and the document paths of
    the undeclared ones (``<field>.<list>.<attr>`` -> ``(label_field, attr)``)."""
    schema = dataset.get_field_schema()
    paths = {}
    for lf, attr in label_attrs:
        if lf not in schema:
            continue
        path = _label_path(dataset, lf, attr)
        if dataset.get_field(path) is not None:
            return (lf, attr), {}
        paths[path] = (lf, attr)
    return None, paths


def _stored_label_attr(collection, paths: Mapping[str, tuple]) -> tuple[str, str] | None:
    """The first of ``paths`` that some label of ``collection`` stores (one query, stopping at the first
    hit), else ``None``. Touches only the collection, so it may run in a thread."""
    if not paths:
        return None
    doc = collection.find_one(_any_label_stores(paths), list(paths))
    if doc is None:
        return None
    return next((found for path, found in paths.items() if _stored_at(doc, path.split("."))),
                next(iter(paths.values())))


def _any_label_stores(paths: Iterable[str]) -> dict:
    """The query of a document where some label stores one of ``paths`` (``<field>.<list>.<attr>``).

    One ``$elemMatch`` per label list, its attributes in one ``$or``: MongoDB
    then visits each label once, not once per attribute (half the time of
    an ``$exists`` per path for OT's seven attributes on the crowd benchmark).
    """
    by_list: dict[str, list[str]] = {}
    for path in paths:
        list_path, attr = path.rsplit(".", 1)
        by_list.setdefault(list_path, []).append(attr)
    clauses = [{lp: {"$elemMatch": {"$or": [{a: {"$exists": True}} for a in attrs]}}}
               for lp, attrs in by_list.items()]
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def _stored_at(value: Any, parts: list[str]) -> bool:
    """Whether a (projected) document holds a value at the dotted path ``parts``, through lists."""
    if not parts:
        return True
    if isinstance(value, list):
        return any(_stored_at(v, parts) for v in value)
    return isinstance(value, dict) and parts[0] in value and _stored_at(value[parts[0]], parts[1:])


@dataclass
class RunPlan:
    """The fields a run is about to write, checked against what exists."""

    key: str
    method: str
    sample_fields: list[str] = field(default_factory=list)
    label_attrs: list[list[str]] = field(default_factory=list)
    #: the clash scan of the documents still running (:func:`prepare_run` with ``scan_in_background``)
    pending_scan: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def check_documents(self) -> None:
        """Waits for a clash scan started in the background; raises its :class:`RunError`, if any."""
        if self.pending_scan is not None:
            self.pending_scan()

    def sample_field(self, suffix: str) -> str:
        return f"{self.key}_{suffix}"

    def label_attr(self, suffix: str) -> str:
        return f"{self.key}_{suffix}"


def prepare_run(
    samples,
    key: str,
    method: str,
    sample_suffixes: Iterable[str],
    label_fields: Iterable[str] = (),
    label_suffixes: Iterable[str] = (),
    overwrite: bool = False,
    check_only: bool = False,
    scan_documents: bool = True,
    scan_in_background: bool = False,
) -> RunPlan:
    """Checks that ``key`` can be used and frees it if ``overwrite`` allows.

    With ``check_only``, nothing is deleted: computations call it first to
    fail fast, compute, then call it again to free the key just before they
    write, so a failed computation never costs the user their previous run.
    A label attribute of the run's name is a clash when the schema declares
    it or, with ``scan_documents`` (one query over the documents), when some
    label stores it undeclared; the second call of a computation skips that
    scan, which its first call made. With ``scan_in_background`` (and
    ``check_only``) that scan runs in a thread while the caller goes on (a
    collection scan: on the crowd benchmark 0.04 s for OT's seven attributes);
    the caller must call ``plan.check_documents()`` before its first write.

    Raises:
        RunError: if the key is invalid, is taken by another run (of this
            plugin without ``overwrite``, or of something else), or if a field
            the run would write already exists and is not owned by it.
    """
    validate_key(key)
    if scan_in_background and not check_only:
        raise ValueError("scan_in_background needs check_only=True: a run registered here must be checked first")
    dataset = _dataset(samples)
    plan = RunPlan(
        key=key,
        method=method,
        sample_fields=[f"{key}_{s}" for s in sample_suffixes],
        label_attrs=[[lf, f"{key}_{s}"] for lf in dict.fromkeys(label_fields) for s in label_suffixes],
    )
    owned_fields: set = set()
    owned_attrs: set = set()
    if key in dataset.list_runs():
        if not _is_agreement_run(dataset, key):
            raise RunError(f"run key {key!r} is used by another (non-agreement) run on dataset {dataset.name!r}")
        if not overwrite:
            status = getattr(dataset.get_run_info(key).config, "status", "complete")
            what = "an incomplete (interrupted) agreement run" if status == "incomplete" else "an agreement run"
            raise RunError(
                f"dataset {dataset.name!r} already has {what} {key!r}; pass overwrite=True "
                "to replace it, delete it with delete_agreement_run, or choose another key"
            )
        if check_only:
            info = get_agreement_run_info(dataset, key)
            owned_fields = set(info["sample_fields"])
            owned_attrs = {tuple(x) for x in info["label_attrs"]}
        else:
            delete_agreement_run(dataset, key)
    schema = dataset.get_field_schema()
    for name in plan.sample_fields:
        if name in schema and name not in owned_fields:
            raise RunError(
                f"field {name!r} already exists on dataset {dataset.name!r} and does not belong to an "
                f"agreement run {key!r}; choose another key (a run never overwrites fields it does not own)"
            )
    declared, paths = _declared_label_attr(dataset, [(lf, attr) for lf, attr in plan.label_attrs
                                                     if (lf, attr) not in owned_attrs])
    _raise_clash(dataset, key, declared)
    if scan_documents:
        def scan() -> None:
            _raise_clash(dataset, key, _stored_label_attr(dataset._sample_collection, paths))

        if scan_in_background:
            plan.pending_scan = _in_thread(scan)
        else:
            scan()
    if not check_only:
        _register_incomplete(samples, plan)
    return plan


def _raise_clash(dataset, key: str, clash: tuple[str, str] | None) -> None:
    if clash is not None:
        lf, attr = clash
        raise RunError(
            f"label attribute {attr!r} already exists on field {lf!r} of dataset {dataset.name!r} and "
            f"does not belong to an agreement run {key!r}; choose another key"
        )


def _in_thread(task: Callable[[], None]) -> Callable[[], None]:
    """Starts ``task`` in a daemon thread; returns ``wait()``, which joins it and raises its error."""
    import threading

    error: list = []

    def run() -> None:
        try:
            task()
        except BaseException as exc:  # re-raised in the caller's thread by wait()
            error.append(exc)

    thread = threading.Thread(target=run, name="iaa-clash-scan", daemon=True)
    thread.start()

    def wait() -> None:
        thread.join()
        if error:
            raise error[0]

    return wait


def _config(plan: RunPlan, status: str, params: dict | None = None, inputs: dict | None = None) -> fors.RunConfig:
    return fors.RunConfig(
        method=plan.method,
        plugin=PLUGIN_NAME,
        format_version=RUN_FORMAT_VERSION,
        status=status,
        params=to_json(params or {}),
        input=to_json(inputs or {}),
        sample_fields=list(plan.sample_fields),
        label_attrs=[list(x) for x in plan.label_attrs],
    )


def _register_incomplete(samples, plan: RunPlan) -> None:
    """Registers the run as ``incomplete`` with every field it will own, before its first write.

    A run killed after this point is listed (status ``incomplete``) and can be
    deleted or overwritten: nothing it wrote is left without an owner.
    """
    dataset = _dataset(samples)
    with schema_lock(dataset):
        if plan.key in dataset.list_runs():
            raise RunError(f"run key {plan.key!r} was taken by another process while this run was starting")
        samples.register_run(plan.key, _config(plan, "incomplete"), overwrite=False)


def write_sample_values(samples, plan: RunPlan, suffix: str, values: dict[str, Any]) -> None:
    """Writes ``{sample_id: value}`` into the plan's field ``{key}_{suffix}`` in one bulk call.

    The field is declared first, under the dataset's schema lock (numeric
    when every value is undefined). NaN floats are stored as ``None`` so that
    FiftyOne's filters and sorting treat them as missing; the reason lives in
    the run results.
    """
    from agreement.fo.writing import declare_sample_field

    name = plan.sample_field(suffix)
    if name not in plan.sample_fields:
        raise RunError(f"field {name!r} was not planned for run {plan.key!r}")
    clean = {sid: _db_value(v) for sid, v in values.items()}
    declare_sample_field(_dataset(samples), name, list(clean.values()))
    samples.set_values(name, clean, key_field="id", dynamic=False, validate=False)


def add_run_sample_field(samples, key: str, name: str) -> None:
    """Adds sample field ``name`` to what run ``key`` owns (a later step of the run, e.g. a reviewed label set).

    Refused when ``name`` exists and is not the run's; recorded in the run's
    config under the schema lock, so that deleting the run removes it.
    """
    dataset = _dataset(samples)
    _require_run(dataset, key)
    with schema_lock(dataset):
        cfg = dataset.get_run_info(key).config
        owned = list(getattr(cfg, "sample_fields", []) or [])
        if name in owned:
            return
        if name in dataset.get_field_schema():
            raise RunError(
                f"field {name!r} already exists on dataset {dataset.name!r} and does not belong to run {key!r}"
            )
        cfg.sample_fields = owned + [name]
        dataset.update_run_config(key, cfg)


def write_label_values(
    samples, plan: RunPlan, label_field: str, suffix: str, values: list[tuple[str, str, Any]]
) -> None:
    """Writes per-label values ``(sample_id, label_id, value)`` as attribute ``{key}_{suffix}``.

    One attribute; :func:`write_label_attrs` writes several in the same pass.
    """
    if not values:
        return
    sids, lids, vals = zip(*values)
    write_label_attrs(samples, plan, label_field, sids, lids, {suffix: vals})


def declare_label_attrs(samples, plan: RunPlan, columns: dict[str, dict[str, Sequence[Any]]]) -> None:
    """Declares the run's label attributes of several label fields at once: ``{label_field: {suffix: values}}``."""
    from agreement.fo.writing import declare_label_attrs as _declare_all

    dataset = _dataset(samples)
    named = {}
    for lf, cols in columns.items():
        list_path = f"{lf}.{LABEL_TYPES[dataset.get_field(lf).document_type]}"
        for suffix in cols:
            if [lf, plan.label_attr(suffix)] not in plan.label_attrs:
                raise RunError(f"label attribute {plan.label_attr(suffix)!r} on {lf!r} was not planned for run {plan.key!r}")
        named[list_path] = {plan.label_attr(suffix): vals for suffix, vals in cols.items()}
    _declare_all(dataset, named)


def write_label_attrs(samples, plan: RunPlan, label_field: str, sample_ids: Sequence[str],
                      label_ids: Sequence[str], columns: dict[str, Sequence[Any]]) -> None:
    """Writes several per-label attributes ``{key}_{suffix}`` in one bulk pass (one update per sample).

    Args:
        samples: the dataset or view.
        plan: from :func:`prepare_run`; every ``(label_field, {key}_{suffix})`` must be planned.
        label_field: the label field holding the labels.
        sample_ids, label_ids: the sample and id of each label.
        columns: ``{suffix: one value per label}``; ``None``/NaN values are not written
            (an absent attribute reads as ``None``).
    """
    write_run_columns(samples, plan, label_values={label_field: (sample_ids, label_ids, columns)})


def write_run_columns(
    samples,
    plan: RunPlan,
    sample_values: dict[str, dict[str, Any]] | None = None,
    label_values: dict[str, tuple] | None = None,
    read_stamps: Mapping[str, Any] | None = None,
) -> int:
    """Writes the run's sample fields and label attributes together: each sample document is rewritten once.

    :func:`stage_run_columns`, its write, and a reload of the dataset's samples.
    Arguments as there; returns the number of labels written.
    """
    written = stage_run_columns(samples, plan, sample_values, label_values, read_stamps)()
    _dataset(samples).reload()
    return written


def stage_run_columns(
    samples,
    plan: RunPlan,
    sample_values: dict[str, dict[str, Any]] | None = None,
    label_values: dict[str, tuple] | None = None,
    read_stamps: Mapping[str, Any] | None = None,
) -> Callable[[], int]:
    """Checks and declares what :func:`write_run_columns` writes, and returns the write itself.

    Everything that touches the dataset object (the plan checks, the schema
    declarations) happens here; the returned ``write()`` only sends the
    updates (:func:`agreement.fo.writing.write_columns` without reloading), so
    that it may run in a writer thread while the caller reads the next shard.

    Args:
        samples: the dataset or view.
        plan: from :func:`prepare_run`; every field ``{key}_{suffix}`` and label
            attribute ``(label_field, {key}_{suffix})`` must be planned
            (they are declared here: a no-op when they are).
        sample_values: ``{suffix: {sample_id: value}}`` (plain values; NaN stored as ``None``).
        label_values: ``{label_field: (sample_ids, label_ids, {suffix: one value per label}[, stored_ids])}``;
            ``None``/NaN label values are not written; the optional ``stored_ids``
            (sample id -> the field's label ids as read) lets labels be addressed
            by position (:class:`agreement.fo.writing.LabelColumns`).
        read_stamps: sample id -> ``last_modified_at`` read with those lists, to guard
            the writes by position with (:func:`agreement.fo.writing.write_columns`).

    Returns:
        ``write()``, which returns the number of labels written.
    """
    from agreement.fo.writing import LabelColumns, declare_columns, write_columns

    dataset = _dataset(samples)
    fields = {}
    for suffix, values in (sample_values or {}).items():
        name = plan.sample_field(suffix)
        if name not in plan.sample_fields:
            raise RunError(f"field {name!r} was not planned for run {plan.key!r}")
        fields[name] = values
    blocks = []
    for label_field, (sids, lids, columns, *stored) in (label_values or {}).items():
        named = {}
        for suffix, vals in columns.items():
            attr = plan.label_attr(suffix)
            if [label_field, attr] not in plan.label_attrs:
                raise RunError(f"label attribute {attr!r} on {label_field!r} was not planned for run {plan.key!r}")
            named[attr] = vals
        list_path = f"{label_field}.{LABEL_TYPES[dataset.get_field(label_field).document_type]}"
        blocks.append(LabelColumns(list_path, sids, lids, named, stored[0] if stored else None))
    declare_columns(dataset, {name: list(values.values()) for name, values in fields.items()},
                    {b.list_path: b.columns for b in blocks})
    stamped = "last_modified_at" in dataset.get_field_schema()
    return partial(write_columns, dataset, fields, blocks, reload=False, stamped=stamped, read_stamps=read_stamps)


_PLAIN = (str, int, bool, type(None))

#: Large tables of the run results stored as one string each
#: (:func:`agreement.fo.compact.pack`: FiftyOne's result serialisation walks
#: every element in Python; one string is one element);
#: :func:`load_agreement_results` decodes them.
COMPACT_DETAIL = ("rater_pairs", "pair_sample_scores")
#: Those of them that are ``{outer: {inner: value}}`` maps, stored as columns.
NESTED_DETAIL = ("pair_sample_scores",)


def to_json(obj: Any) -> Any:
    """Converts numpy scalars/arrays and NaN/inf to JSON-safe values (NaN -> None).

    Lists and dicts of plain scalars (the columns of large tables) take a fast path.
    """
    if isinstance(obj, dict):
        if all(type(v) in _PLAIN or (type(v) is float and math.isfinite(v)) for v in obj.values()):
            return {str(k): v for k, v in obj.items()}
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if all(type(v) in _PLAIN or (type(v) is float and math.isfinite(v)) for v in obj):
            return list(obj)
        return [to_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_json(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def register_run(samples, plan: RunPlan, params: dict, inputs: dict, results: dict) -> None:
    """Completes the run: records its parameters and input layout, marks it ``complete``, saves its results.

    Args:
        samples: the dataset or view the run was computed on (FiftyOne stores
            the view with the run).
        plan: from :func:`prepare_run`; its fields must have been written.
        params: the method parameters, as given by the user.
        inputs: the input layout from :func:`agreement.fo.reading.read_annotations`.
        results: JSON-serialisable results; ``summary`` should hold the headline
            numbers.
    """
    dataset = _dataset(samples)
    config = _config(plan, "complete", params, inputs)
    with schema_lock(dataset):
        if plan.key in dataset.list_runs():
            dataset.update_run_config(plan.key, config)
        else:  # a plan made without registering (check_only callers)
            samples.register_run(plan.key, config, overwrite=False)
        _verify_schema(dataset, plan)
    results = dict(results)
    if isinstance(results.get("detail"), dict):
        detail = dict(results["detail"])
        for name in COMPACT_DETAIL:
            if name in detail and not isinstance(detail[name], str):
                value = detail[name]
                if name in NESTED_DETAIL and isinstance(value, dict) and not is_nested_columns(value):
                    value = nested_to_columns(value)
                detail[name] = pack(value)
        results["detail"] = detail
    run_results = fors.RunResults(samples, config, plan.key, **to_json(results))
    dataset.save_run_results(plan.key, run_results, overwrite=True, cache=False)


def _verify_schema(dataset, plan: RunPlan) -> None:
    """Re-declares any field or label attribute of the run whose declaration was lost (concurrent writers)."""
    from agreement.fo.writing import declare_from_documents

    schema = dataset.get_field_schema()
    for name in plan.sample_fields:
        if name not in schema:
            declare_from_documents(dataset, name)
    for lf, attr in plan.label_attrs:
        if lf in schema and dataset.get_field(_label_path(dataset, lf, attr)) is None:
            declare_from_documents(dataset, _label_path(dataset, lf, attr))


def delete_agreement_run(samples, key: str) -> dict:
    """Deletes exactly the fields and label attributes the run wrote, then the run.

    Values are removed from the documents directly (``$unset``), so that a
    value whose schema declaration was lost (a process killed, a concurrent
    writer) is removed too; then the declarations, then the run.

    Returns:
        ``{"deleted_sample_fields": [...], "deleted_label_attrs": [...]}``
    """
    dataset = _dataset(samples)
    info = _require_run(dataset, key)
    cfg = info.config
    sample_fields = list(getattr(cfg, "sample_fields", []) or [])
    label_attrs = [list(x) for x in (getattr(cfg, "label_attrs", []) or [])]
    from agreement.fo.writing import unset_run_values

    unset_run_values(dataset, sample_fields, label_attrs)
    deleted_fields, deleted_attrs = [], []
    with schema_lock(dataset):
        schema = dataset.get_field_schema()
        present = [f for f in sample_fields if f in schema]
        if present:
            dataset.delete_sample_fields(present)
        deleted_fields = sample_fields
        declared = []
        for lf, attr in label_attrs:
            if lf in schema:
                path = _label_path(dataset, lf, attr)
                if dataset.get_field(path) is not None:
                    declared.append(path)
                deleted_attrs.append([lf, attr])
        if declared:  # the values are gone already: drop the declarations without another pass over the samples
            dataset.remove_dynamic_sample_fields(declared)
        dataset.delete_run(key)
    return {"deleted_sample_fields": deleted_fields, "deleted_label_attrs": deleted_attrs}


def discard_incomplete_run(samples, key: str) -> bool:
    """Deletes run ``key`` if it is this plugin's and still ``incomplete`` (a computation that failed after
    its first write); returns whether it did. Best effort: a failure to clean up never hides the error
    that caused it (the run stays listed as incomplete, to be deleted or overwritten)."""
    try:
        dataset = _dataset(samples)
        if not _is_agreement_run(dataset, key):
            return False
        if getattr(dataset.get_run_info(key).config, "status", "complete") != "incomplete":
            return False
        delete_agreement_run(dataset, key)
        return True
    except Exception:  # noqa: BLE001 - the caller re-raises the original error
        return False


def rename_agreement_run(samples, key: str, new_key: str) -> dict:
    """Renames a run and the fields/attributes it wrote (``{key}_x`` -> ``{new_key}_x``)."""
    dataset = _dataset(samples)
    validate_key(new_key)
    info = _require_run(dataset, key)
    if new_key in dataset.list_runs():
        raise RunError(f"dataset {dataset.name!r} already has a run {new_key!r}")
    cfg = info.config
    schema = dataset.get_field_schema()
    renames = {}
    for f in getattr(cfg, "sample_fields", []) or []:
        new = new_key + f[len(key):]
        if new in schema:
            raise RunError(f"cannot rename run {key!r} to {new_key!r}: field {new!r} already exists")
        renames[f] = new
    attr_renames = []
    for lf, attr in getattr(cfg, "label_attrs", []) or []:
        new = new_key + attr[len(key):]
        if lf in schema and _existing_label_attr(dataset, lf, new):
            raise RunError(f"cannot rename run {key!r}: attribute {new!r} already exists on {lf!r}")
        attr_renames.append((lf, attr, new))
    present = {f: n for f, n in renames.items() if f in schema}
    if present:
        dataset.rename_sample_fields(present)
    for lf, attr, new in attr_renames:
        if lf in schema and dataset.get_field(_label_path(dataset, lf, attr)) is not None:
            dataset.rename_sample_field(_label_path(dataset, lf, attr), _label_path(dataset, lf, new))
    cfg.sample_fields = [renames.get(f, f) for f in cfg.sample_fields]
    cfg.label_attrs = [[lf, new] for lf, _, new in attr_renames]
    dataset.update_run_config(key, cfg)
    dataset.rename_run(key, new_key)
    return {"renamed_sample_fields": renames, "renamed_label_attrs": [[lf, a, n] for lf, a, n in attr_renames]}
