"""Bring a round's labels back and recompute the run with the new rater: :func:`load_requested_labels`.

1. find the round (:func:`agreement.fo.labelling.history.find_round`), check the backend's config and server
   and, for Label Studio, FiftyOne's task -> sample mapping task by task
   (:func:`agreement.fo.labelling.backend.check_label_studio_tasks`): labels that came back for other samples
   are refused before anything is written;
2. FiftyOne's ``dataset.load_annotations(anno_key)`` writes the labels into the rater's new field (attribute
   layout: into the round's field, whose labels then join the run's field with the rater's name, the rater
   joining the samples' ``raters_field``; the round's field is deleted);
3. the run is recomputed with its recorded method, parameters, samples and rater layout, the rater added, by
   the same declared computation as a fresh run (:func:`agreement.fo.runs.declaration.run_declared`): the
   result equals a full recomputation. The old run is kept aside under a backup key while the new one is
   computed (:func:`recompute_with_rater`): on any failure the new run is discarded, the old one renamed back,
   the rater's field deleted and (attribute layout) the run's field and ``raters_field`` put back on the
   round's samples, so a failed round leaves the run and the dataset as they were;
4. the round is recorded as loaded, with the run's headline numbers before and after.

Only this run is recomputed; other runs on the same raters are left as they are (recompute them with
``overwrite=True`` and the new rater field to include its labels).
"""

from __future__ import annotations

from typing import Any

import fiftyone as fo  # noqa: F401 - the bridge reaches FiftyOne (load_annotations)

from agreement.fo.labelling.backend import check_backend, check_label_studio_tasks
from agreement.fo.labelling.history import find_round, headline, now, run_rounds, save_rounds
from agreement.fo.labelling.schema import round_layout
from agreement.fo.runs import store as runs
from agreement.fo.runs.errors import RunError

__all__ = ["load_requested_labels", "recompute_with_rater", "backup_key"]


def backup_key(dataset, key: str) -> str:
    """A free run key to keep run ``key`` under while it is recomputed (``{key}_before_round``, numbered if
    taken)."""
    schema, taken = dataset.get_field_schema(), set(dataset.list_runs())
    base, n = f"{key}_before_round", 1
    candidate = base
    while candidate in taken or any(f.startswith(candidate + "_") for f in schema):
        n += 1
        candidate = f"{base}{n}"
    return candidate


def recompute_with_rater(samples, key: str, rater: str) -> dict:
    """Recomputes run ``key`` on its own samples with its recorded method, parameters and rater layout, rater
    ``rater`` added (``fields`` layout: its field added to the fields; ``attribute`` layout: its labels are in
    the run's field already); all or nothing (the old run is renamed back on failure).

    Args:
        samples: the dataset (or a view of it) holding the run.
        key: the run.
        rater: the new rater.

    Returns:
        The new run's headline numbers (what the declared computation returns).

    Raises:
        RunError: the run's method is no declared method (it cannot be recomputed), or its layout is not
            supported (:func:`agreement.fo.labelling.schema.round_layout`); whatever the computation raises (the
            run then stays as it was).
    """
    from agreement.fo.methods import declaration_of
    from agreement.fo.runs.declaration import run_declared

    dataset = samples._root_dataset
    info = runs.get_agreement_run_info(dataset, key)
    decl = declaration_of(info["method"])
    if decl is None:
        raise RunError(f"run {key!r} of method {info['method']} cannot be recomputed: it is no declared method")
    layout: dict[str, Any] = {k: v for k, v in round_layout(info).items() if k != "layout"}
    if "fields" in layout:
        layout["fields"] = [*layout["fields"], rater]
    params = info["params"]
    own = {p.name: params[p.name] for p in decl.method_params if p.name in params}
    target = params.get("target") if isinstance(params.get("target"), dict) else None
    view = dataset.load_run_view(key)
    backup = backup_key(dataset, key)
    runs.rename_agreement_run(dataset, key, backup)
    try:
        out = run_declared(decl, view, key, target=target, **own, **layout)
    except BaseException:
        try:  # the user's run goes back under its key even if discarding the half-made one fails
            if key in dataset.list_runs():
                runs.delete_agreement_run(dataset, key)
        finally:
            runs.rename_agreement_run(dataset, backup, key)
        raise
    runs.delete_agreement_run(dataset, backup)
    return out


def _filepaths(dataset, ids: list[str]) -> dict[str, str]:
    view = dataset.select(ids)
    got_ids, paths = view.values(["id", "filepath"])
    return {str(i): str(p) for i, p in zip(got_ids, paths, strict=True)}


def _check_round(dataset, key: str, record: dict) -> str:
    """Refuses a round whose annotation run is gone or whose label field exists already; returns that field."""
    anno_key, field = record["anno_key"], record.get("label_field") or record["rater"]
    if anno_key not in dataset.list_annotation_runs():
        raise RunError(f"annotation run {anno_key!r} of round {record.get('round')} of run {key!r} is not on "
                       f"dataset {dataset.name!r} any more (deleted?): its labels cannot be loaded")
    if field in dataset.get_field_schema():
        raise RunError(f"field {field!r} of round {anno_key!r} already exists on dataset {dataset.name!r}: "
                       "a round loads into a new field")
    return field


def _merge_into_run_field(dataset, layout: dict, source: str, rater: str, ids: list[str]) -> dict:
    """Attribute layout: adds the labels of field ``source`` to the run's field, each named ``rater`` in its
    ``rater_attr``, and ``rater`` to the ``raters_field`` of the samples it labelled; returns what
    :func:`_restore` puts back (the round's samples' values of both fields before)."""
    field, attr, assigned = layout["field"], layout["rater_attr"], layout["raters_field"]
    sids, olds, news, who = dataset.select(ids).values(["id", field, source, assigned])
    before = {field: dict(zip(sids, olds, strict=True)), assigned: dict(zip(sids, who, strict=True))}
    kind = dataset.get_field(field).document_type
    list_attr = kind._LABEL_LIST_FIELD
    merged, raters = {}, {}
    for sid, old, new, listed in zip(sids, olds, news, who, strict=True):
        if new is None:
            continue
        labels = list(getattr(new, list_attr)) if hasattr(new, "_LABEL_LIST_FIELD") else [new]
        for label in labels:
            label[attr] = rater
        container = old.copy() if old is not None else kind()
        setattr(container, list_attr, list(getattr(container, list_attr) or []) + labels)
        merged[sid] = container
        raters[sid] = list(listed or []) + [rater]
    dataset.set_values(field, merged, key_field="id")
    dataset.set_values(assigned, raters, key_field="id")
    return before


def _restore(dataset, before: dict) -> None:
    """Puts back the values :func:`_merge_into_run_field` changed."""
    for field, values in before.items():
        dataset.set_values(field, values, key_field="id")


def load_requested_labels(samples, key: str, *, anno_key: str | None = None) -> dict:
    """Loads the labels of a round of run ``key`` into its rater's field and recomputes the run with it.

    Args:
        samples: the dataset (or a view of it) holding the run.
        key: the run.
        anno_key: the round's annotation key (default: the run's one round waiting for its labels).

    Returns:
        ``{"key", "anno_key", "rater", "n_loaded", "n_samples", "before", "after", "round", "n_tasks_checked"}``:
        ``before`` and ``after`` the run's headline numbers (:func:`agreement.fo.labelling.history.headline`).

    Raises:
        RunError: no run, no such round, no labels came back yet, a method that cannot be recomputed.
        LabellingBackendError: the backend is not configured or not reachable.
        TaskMismatchError: tasks mapped to other samples than the round's (nothing written).
    """
    dataset = samples._root_dataset
    info = runs.get_agreement_run_info(dataset, key)
    layout = round_layout(info)
    rounds = run_rounds(dataset, key)
    record = find_round(rounds, key, anno_key)
    anno_key, rater = record["anno_key"], record["rater"]
    field = _check_round(dataset, key, record)
    check_backend(record["backend"])
    results = dataset.load_annotation_results(anno_key, cache=False)
    ids = [str(i) for i in record["sample_ids"]]
    checked = (check_label_studio_tasks(results, _filepaths(dataset, ids), ids)
               if record["backend"] == "labelstudio" else 0)
    before = headline(dataset, key)
    merged: dict = {}
    try:
        dataset.load_annotations(anno_key, unexpected="ignore", progress=False)
        loaded = dataset.select(ids).exists(field).count() if field in dataset.get_field_schema() else 0
        if not loaded:
            raise RunError(f"no labels came back for round {anno_key!r} of run {key!r}: label the "
                           f"{len(ids)} tasks in {record['backend']} first, then load again")
        if layout["layout"] == "attribute":
            merged = _merge_into_run_field(dataset, layout, field, rater, ids)
            dataset.delete_sample_field(field)
        summary = recompute_with_rater(dataset, key, rater)
    except BaseException:
        if merged:
            _restore(dataset, merged)
        if field in dataset.get_field_schema():
            dataset.delete_sample_field(field)
        raise
    after = headline(dataset, key, summary=summary)  # the new run's summary as computed, not read back
    done = dict(record, status="loaded", n_loaded=int(loaded), loaded_at=now(), before=before, after=after)
    save_rounds(dataset, key, [done if r.get("anno_key") == anno_key else r for r in rounds])
    return {"key": key, "anno_key": anno_key, "rater": rater, "n_loaded": int(loaded), "n_samples": len(ids),
            "before": before, "after": after, "round": int(record["round"]), "n_tasks_checked": checked}
