"""Agreement runs on a FiftyOne dataset: register, list, load, rename, delete.

Every computation is a named run (``key``) registered with FiftyOne's runs API
as an :class:`agreement.fo.runs.classes.AgreementRunConfig` carrying a method
marker (``method``: ``iaa.<name>``) and ``plugin="@iaa/agreement"``, whose run
class gives FiftyOne's ``delete_run`` and ``rename_run`` their cleanup and
rename hooks. The config records exactly what the run wrote:

* ``sample_fields``: per-sample result fields, always named ``{key}_<suffix>``;
* ``label_attrs``: per-label attributes, as ``[label field, attribute]`` pairs,
  the attribute always named ``{key}_<suffix>``.

A run never writes a field it does not own: :func:`prepare_run` refuses a key
whose fields already exist unless they belong to an agreement run with the same
key and ``overwrite=True`` is given, in which case that run is deleted first.
Deleting a run removes exactly the fields and attributes it recorded, then the
run itself. Renaming a run renames its fields and attributes.

Results (the run's headline numbers and full, JSON-serialisable detail) are
saved with the run as the method's typed results class
(:mod:`agreement.fo.runs.results`) and load back with
``dataset.load_run_results(key)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterable, Mapping, Sequence

from agreement.fo.runs.classes import (
    PLUGIN_NAME,
    RUN_FORMAT_VERSION,
    AgreementRunConfig,
    RunError,
    check_rename,
    declared_label_attr,
    is_agreement_config,
    is_legacy_config,
    label_path,
    remove_run_fields,
    stored_label_attr,
    upgrade_legacy_run,
)
from agreement.fo.runs.locking import schema_lock
from agreement.fo.runs.results import results_class, to_json
from agreement.fo.storage.label_schema import label_list_path
from agreement.fo.storage.stored_values import db_value as _db_value

__all__ = [
    "RunError",
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

_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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
    return is_agreement_config(dataset.get_run_info(key).config)


def list_agreement_runs(samples, *, method: str | None = None) -> list[str]:
    """Keys of this plugin's runs on the dataset, optionally of one method."""
    from agreement.fo.runs.classes import method_marker

    dataset = _dataset(samples)
    keys = []
    for key in dataset.list_runs():
        cfg = dataset.get_run_info(key).config
        if not is_agreement_config(cfg):
            continue
        if method is not None and cfg.method != method_marker(method):
            continue
        keys.append(key)
    return sorted(keys)


def _require_run(dataset, key: str):
    """The run's info; a run of an earlier release is upgraded to the run classes first."""
    if not _is_agreement_run(dataset, key):
        runs = list_agreement_runs(dataset)
        raise RunError(
            f"dataset {dataset.name!r} has no agreement run {key!r}; its agreement runs are: {runs or 'none'}"
        )
    info = dataset.get_run_info(key)
    if is_legacy_config(info.config) and upgrade_legacy_run(dataset, key):
        info = dataset.get_run_info(key)
    return info


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
        "frame_fields": list(getattr(cfg, "frame_fields", []) or []),
    }


def load_agreement_results(samples, key: str) -> dict:
    """The results saved with a run, as a plain dict (``summary``, ``detail``, ...).

    :meth:`agreement.fo.runs.results.AgreementResults.as_dict` of
    ``dataset.load_run_results(key)``; ``detail["rater_pairs"]`` is one
    record per pair.
    """
    dataset = _dataset(samples)
    _require_run(dataset, key)
    results = dataset.load_run_results(key, cache=False)
    if results is None:
        return {}
    return results.as_dict()


@dataclass
class RunPlan:
    """The fields a run is about to write, checked against what exists."""

    key: str
    method: str
    sample_fields: list[str] = field(default_factory=list)
    label_attrs: list[list[str]] = field(default_factory=list)
    #: the clash scan of the documents still running (:func:`prepare_run` with ``scan_documents="background"``)
    pending_scan: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def check_documents(self) -> None:
        """Waits for a clash scan started in the background; raises its :class:`RunError`, if any."""
        if self.pending_scan is not None:
            self.pending_scan()

    def sample_field(self, suffix: str) -> str:
        """The name of the run's sample field ``suffix`` (``"score"`` ...): ``"{key}_{suffix}"``."""
        return f"{self.key}_{suffix}"

    def label_attr(self, suffix: str) -> str:
        """The name of the run's label attribute ``suffix``: ``"{key}_{suffix}"``."""
        return f"{self.key}_{suffix}"


def prepare_run(
    samples,
    key: str,
    method: str,
    sample_suffixes: Iterable[str],
    label_fields: Iterable[str] = (),
    label_suffixes: Iterable[str] = (),
    *,
    overwrite: bool = False,
    check_only: bool = False,
    scan_documents: bool | str = True,
) -> RunPlan:
    """Checks that ``key`` can be used and frees it if ``overwrite`` allows.

    With ``check_only``, nothing is deleted: computations call it first to
    fail fast, compute, then call it again to free the key just before they
    write, so a failed computation never costs the user their previous run.
    A label attribute of the run's name is a clash when the schema declares
    it or, with ``scan_documents`` (one query over the documents), when some
    label stores it undeclared; the second call of a computation skips that
    scan (``scan_documents=False``), which its first call made. With
    ``scan_documents="background"`` (and ``check_only``) that scan runs in a
    thread while the caller goes on (a collection scan: on the crowd benchmark
    0.04 s for OT's seven attributes); the caller must call
    ``plan.check_documents()`` before its first write.

    Args:
        samples: the dataset or view the run computes on.
        key: the run key.
        method: the run's method marker.
        sample_suffixes: the sample fields it will own (``{key}_<suffix>``).
        label_fields: the label fields it writes attributes on.
        label_suffixes: the label attributes it will own there (``{key}_<suffix>``).
        overwrite: an agreement run of this key may be replaced.
        check_only: check, delete and register nothing.
        scan_documents: ``True`` (scan now), ``False`` (skip) or ``"background"`` (in a thread).

    Returns:
        The :class:`RunPlan` (registered ``incomplete`` unless ``check_only``).

    Raises:
        RunError: if the key is invalid, is taken by another run (of this
            plugin without ``overwrite``, or of something else), or if a field
            the run would write already exists and is not owned by it.
    """
    validate_key(key)
    if scan_documents not in (True, False, "background"):
        raise ValueError(f"scan_documents must be True, False or 'background', got {scan_documents!r}")
    if scan_documents == "background" and not check_only:
        raise ValueError("scan_documents='background' needs check_only=True: a run registered here must be "
                         "checked first")
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
    declared, paths = declared_label_attr(dataset, [(lf, attr) for lf, attr in plan.label_attrs
                                                     if (lf, attr) not in owned_attrs])
    _raise_clash(dataset, key, declared)
    if scan_documents:
        def scan() -> None:
            _raise_clash(dataset, key, stored_label_attr(dataset._sample_collection, paths))

        if scan_documents == "background":
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


def _config(plan: RunPlan, status: str, params: dict | None = None, inputs: dict | None = None) -> AgreementRunConfig:
    return AgreementRunConfig(
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
    from agreement.fo.storage.writing import declare_sample_field

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
    sids, lids, vals = zip(*values, strict=False)
    write_label_attrs(samples, plan, label_field, sids, lids, {suffix: vals})


def declare_label_attrs(samples, plan: RunPlan, columns: dict[str, dict[str, Sequence[Any]]]) -> None:
    """Declares the run's label attributes of several label fields at once: ``{label_field: {suffix: values}}``."""
    from agreement.fo.storage.writing import declare_label_attrs as _declare_all

    dataset = _dataset(samples)
    named = {}
    for lf, cols in columns.items():
        list_path = label_list_path(lf, dataset.get_field(lf).document_type)
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
        sample_ids: the sample id of each label.
        label_ids: the id of each label.
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
    updates (:func:`agreement.fo.storage.writing.write_columns` without reloading), so
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
            by position (:class:`agreement.fo.storage.writing.LabelColumns`).
        read_stamps: sample id -> ``last_modified_at`` read with those lists, to guard
            the writes by position with (:func:`agreement.fo.storage.writing.write_columns`).

    Returns:
        ``write()``, which returns the number of labels written.
    """
    from agreement.fo.storage.writing import LabelColumns, declare_columns, write_columns

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
        list_path = label_list_path(label_field, dataset.get_field(label_field).document_type)
        blocks.append(LabelColumns(list_path, sids, lids, named, stored[0] if stored else None))
    declare_columns(dataset, {name: list(values.values()) for name, values in fields.items()},
                    {b.list_path: b.columns for b in blocks})
    stamped = "last_modified_at" in dataset.get_field_schema()
    return partial(write_columns, dataset, fields, blocks, reload=False, stamped=stamped, read_stamps=read_stamps)


def register_run(samples, plan: RunPlan, params: dict, inputs: dict, results: dict) -> None:
    """Completes the run: records its parameters and input layout, marks it ``complete``, saves its results.

    Args:
        samples: the dataset or view the run was computed on (FiftyOne stores
            the view with the run).
        plan: from :func:`prepare_run`; its fields must have been written.
        params: the method parameters, as given by the user.
        inputs: the input layout from :func:`agreement.fo.storage.reading.read_annotations`.
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
    run_results = results_class(plan.method)(samples, config, plan.key, **results)
    dataset.save_run_results(plan.key, run_results, overwrite=True, cache=False)


def _verify_schema(dataset, plan: RunPlan) -> None:
    """Re-declares any field or label attribute of the run whose declaration was lost (concurrent writers)."""
    from agreement.fo.storage.writing import declare_from_documents

    schema = dataset.get_field_schema()
    for name in plan.sample_fields:  # (a field the method did not write this time, e.g. an option's, is skipped)
        if name not in schema and dataset._sample_collection.find_one({name: {"$exists": True}}, {"_id": 1}):
            declare_from_documents(dataset, name)
    for lf, attr in plan.label_attrs:
        if lf in schema and dataset.get_field(label_path(dataset, lf, attr)) is None:
            declare_from_documents(dataset, label_path(dataset, lf, attr))


def delete_agreement_run(samples, key: str) -> dict:
    """Deletes exactly the fields and label attributes the run wrote, then the run.

    What FiftyOne's ``dataset.delete_run(key)`` does through the run's
    ``cleanup`` hook (:func:`agreement.fo.runs.classes.remove_run_fields`),
    except that an error while removing the fields is raised here (FiftyOne
    logs it and deletes the run anyway) and the run is kept.

    Returns:
        ``{"deleted_sample_fields": [...], "deleted_label_attrs": [...]}``
    """
    dataset = _dataset(samples)
    config = _require_run(dataset, key).config
    removed = remove_run_fields(dataset, config)
    with schema_lock(dataset):
        config.sample_fields, config.label_attrs = [], []  # removed: nothing left for the cleanup hook
        if getattr(config, "frame_fields", None):
            config.frame_fields = []
        dataset.update_run_config(key, config)
        dataset.delete_run(key)
    return removed


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
    """Renames a run and the fields/attributes it wrote (``{key}_x`` -> ``{new_key}_x``).

    What FiftyOne's ``dataset.rename_run(key, new_key)`` does through the run's
    ``rename`` hook (:func:`agreement.fo.runs.classes.rename_run_fields`), with
    the clashes checked first and raised (FiftyOne logs a failed hook and
    renames the run anyway).
    """
    dataset = _dataset(samples)
    validate_key(new_key)
    _require_run(dataset, key)
    if new_key in dataset.list_runs():
        raise RunError(f"dataset {dataset.name!r} already has a run {new_key!r}")
    renames, attr_renames = check_rename(dataset, key, new_key)
    dataset.rename_run(key, new_key)
    config = dataset.get_run_info(new_key).config
    expected = [renames[f] for f in renames]
    if list(getattr(config, "sample_fields", None) or []) != expected:
        raise RunError(f"run {key!r} was renamed to {new_key!r} but its fields were not: FiftyOne's rename hook "
                       "failed (see its warning in the log)")
    return {"renamed_sample_fields": renames, "renamed_label_attrs": [[lf, a, n] for lf, a, n in attr_renames]}
