"""Agreement runs on video frame labels (``frames.<field>``): every declared method, computed per frame,
registered on the video dataset.

:func:`run_on_frames` is what :func:`agreement.fo.runs.declaration.run_declared`
calls when the rater fields are frame fields. The lifecycle:

1. check the key on the video dataset (a run of that key, frame fields
   ``{key}_x``, label attributes and per-video fields it would write) before
   reading anything; free an overwritten run and register the new one
   ``incomplete`` on the video dataset with everything it may own (from
   here a failure deletes the run and every value it wrote);
2. copy the frames of the view's videos into a temporary image dataset of
   frame units (:func:`agreement.fo.frames.units.build_frame_units`: the unit
   keeps the frame's id; a rater who labelled some frame of a video was
   assigned every frame of it) and run the method there with the engine
   (:func:`agreement.fo.runs.engine.run_method`; streamed, serial or on Dask,
   exactly as on images). Its chance baselines draw pairs of frames from
   *different videos* (:func:`agreement.fo.frames.units.chance_groups`):
   frames of one video are not independent, so pairing two frames of a video
   would make chance look like agreement. The engine's bulk write-back goes
   straight to the frames (:mod:`agreement.fo.frames.targets`): one
   ``UpdateOne`` per frame document with its per-frame values and label
   attributes, declared in the frame schema first; nothing is written on the
   units and nothing is copied afterwards;
3. record in the run what it wrote (``frame_fields``, ``label_attrs``);
4. per video, from the per-frame scores kept in memory while they were
   written (:mod:`agreement.fo.frames.aggregates`): the mean, the worst frame
   and the share of frames worse than the method's frame threshold of its
   per-frame score (the panel's score: KαLOS α, OT score, matched distance,
   ...), and the number of frames scored, as sample fields
   ``{key}_frames_mean``, ``{key}_frames_worst``, ``{key}_frames_low``,
   ``{key}_frames_n`` (sort and filter videos; filter frames on
   ``frames.{key}_<score>``); a method may add per-video values of its own
   (``detail["video_values"]``: ``{suffix: {video id: value}}``, e.g. the
   HOTA of a video's tracks), written as ``{key}_<suffix>``; all of them in
   one bulk pass, one update per video;
5. complete the run with the method's results (corpus statistics pool every
   frame of every video) and delete the units.

The threshold is the method's ``frame_threshold`` (panel view) when it
declares one, else the middle of its score's range (α: 0, chance; OT score:
``1 - beta/2``; a confidence: 0.5).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping

from agreement.fo.frames.targets import captured_values
from agreement.fo.frames.units import (
    UNIT_RATERS_FIELD,
    build_frame_units,
    delete_frame_units,
    merge_back,
    strip_frames_prefix,
)
from agreement.fo.runs import store as runs
from agreement.fo.runs.classes import AgreementRunConfig, RunError
from agreement.fo.runs.locking import schema_lock
from agreement.fo.runs.method_spec import clean_summary
from agreement.fo.runs.options import Execution, RaterLayout

__all__ = ["AGGREGATE_SUFFIXES", "is_frame_layout", "run_on_frames", "frame_score"]

#: The per-video fields of a frame run: ``{key}_<suffix>``.
AGGREGATE_SUFFIXES = ("frames_mean", "frames_worst", "frames_low", "frames_n")


def is_frame_layout(layout: RaterLayout | Mapping[str, Any]) -> bool:
    """Whether the rater fields of a layout are frame fields (``frames.<field>``); mixing is refused."""
    names = layout.names if isinstance(layout, RaterLayout) else (
        list(layout.get("fields") or []) or ([layout["field"]] if layout.get("field") else []))
    frame = [n.startswith("frames.") for n in names]
    if any(frame) and not all(frame):
        raise ValueError("rater fields must be all frame fields (frames.<field>) or all sample fields; got "
                         + ", ".join(repr(n) for n in names))
    return bool(names) and all(frame)


def frame_score(decl, params: Mapping[str, Any]) -> dict:
    """The per-frame score a frame run aggregates per video: ``{"suffix", "higher_is_better", "threshold"}``."""
    from agreement.reporting.figures.method_figures import METHOD_VIEWS

    view = decl.view or METHOD_VIEWS.get(decl.method) or getattr(decl.results_cls, "view", None) or {}
    suffix = view.get("score_suffix") or (decl.spec.sample_suffixes[0] if decl.spec.sample_suffixes else None)
    if suffix is None:
        return {}
    threshold = view.get("frame_threshold")
    if threshold is None and view.get("score_range") is not None:
        lo, hi = view["score_range"](params)
        threshold = (float(lo) + float(hi)) / 2
    return {"suffix": suffix, "higher_is_better": bool(view.get("higher_is_better", True)),
            "threshold": None if threshold is None else float(threshold)}


def _check_key(dataset, key: str, spec, names: list[str], overwrite: bool) -> None:
    """Fails before anything is read when ``key`` cannot be used on the video dataset."""
    plan = runs.prepare_run(dataset, key, spec.method, [f"{s}" for s in AGGREGATE_SUFFIXES], (), (),
                            overwrite=overwrite, check_only=True)
    owned: set = set()
    if key in dataset.list_runs():
        owned = set(getattr(dataset.get_run_info(key).config, "frame_fields", None) or [])
    frame_schema = dataset.get_frame_field_schema(flat=True) or {}
    for suffix in spec.sample_suffixes:
        name = f"{key}_{suffix}"
        if name in frame_schema and name not in owned:
            raise RunError(f"frame field {name!r} already exists on dataset {dataset.name!r} and does not belong "
                           f"to an agreement run {key!r}; choose another key")
    for lf in names:
        for suffix in spec.label_suffixes:
            attr = f"{key}_{suffix}"
            if any(p.startswith(f"{lf}.") and p.endswith(f".{attr}") for p in frame_schema) and not owned:
                raise RunError(f"label attribute {attr!r} already exists on frame field 'frames.{lf}' of dataset "
                               f"{dataset.name!r} and does not belong to an agreement run {key!r}; choose another key")
    del plan


def run_on_frames(decl, samples, key: str, layout: RaterLayout, params: dict, *,
                  execution: Execution | None = None, overwrite: bool = False,
                  progress: Callable[[float, str], None] | None = None) -> dict:
    """Runs declared method ``decl`` per frame on the frame fields of ``layout`` (module docstring).

    Args:
        decl: the method's declaration.
        samples: a video dataset or view.
        key: the run key.
        layout: the rater layout, naming frame fields (``frames.<field>``).
        params: the method's validated parameters.
        execution: where the units' run computes (default: serially).
        overwrite: replace an existing agreement run with this key.
        progress: optional ``callback(fraction, label)``.

    Returns:
        The method's headline numbers (corpus statistics over every frame) with ``n_videos`` and
        ``n_frames``, NaN as ``None``.
    """
    report = progress or (lambda f, s: None)
    dataset = samples._root_dataset
    if samples.media_type != "video":
        raise ValueError(f"frame fields need a video dataset; {dataset.name!r} holds {samples.media_type} media")
    runs.validate_key(key)
    fields = [strip_frames_prefix(f) for f in layout.fields] if layout.fields else None
    field = strip_frames_prefix(layout.field) if layout.field else None
    names: list[str] = fields if fields is not None else [field] if field is not None else []
    _check_key(dataset, key, decl.spec, names, overwrite)
    score = frame_score(decl, params)
    # the units' write-back goes straight to the frames: the run owns them on the videos from now on (an
    # overwritten run is freed first, so that the units copy none of its values)
    config = _register(samples, key, decl.spec, names, score)
    units = None
    try:
        report(0.0, "copying frames")
        units = build_frame_units(samples, fields, field, layout.rater_attr or "annotator", layout.raters_field)
        if len(units) == 0:
            raise ValueError(f"the {len(samples)} videos of the view have no frames holding "
                             f"{', '.join('frames.' + n for n in names)}: nothing to compute on")
        unit_layout = replace(layout, fields=fields, field=field,
                              raters_field=UNIT_RATERS_FIELD if field is not None else None)
        wanted = [f"{key}_{score['suffix']}"] if score else []
        with captured_values(dataset._frame_collection_name, wanted) as written:
            summary = runs_on_units(decl, units, key, unit_layout, params, execution=execution,
                                    progress=lambda f, s: report(0.05 + 0.8 * f, s))
        report(0.85, "writing per-video values")
        summary.update(_transfer(units, samples, key, config, score=score, raters_field=layout.raters_field,
                                  written=written))
    except BaseException:
        runs.discard_incomplete_run(dataset, key)
        raise
    finally:
        if units is not None:
            delete_frame_units(units)
    report(1.0, "done")
    return summary


def runs_on_units(decl, units, key: str, layout: RaterLayout, params: dict, *, execution: Execution | None,
                  progress: Callable[[float, str], None]) -> dict:
    """The engine's run of the method on the units (registered there; its values written to the frames)."""
    from agreement.fo.runs.engine import run_method

    return run_method(units, key, decl.spec, layout, params, execution=execution, overwrite=False, progress=progress)


def _register(samples, key: str, spec, names: list[str], score: dict) -> AgreementRunConfig:
    """Frees an overwritten run and registers run ``key`` ``incomplete`` on the video dataset, owning every
    frame field, label attribute and per-video field it may write (a failure deletes them with it)."""
    dataset = samples._root_dataset
    aggregates = [f"{key}_{s}" for s in AGGREGATE_SUFFIXES] if score else []
    config = AgreementRunConfig(
        method=spec.method, plugin=runs.PLUGIN_NAME, format_version=runs.RUN_FORMAT_VERSION, status="incomplete",
        params={}, input={}, sample_fields=aggregates,
        frame_fields=[f"{key}_{s}" for s in spec.sample_suffixes],
        label_attrs=[[f"frames.{lf}", f"{key}_{s}"] for lf in names for s in spec.label_suffixes])
    owned = set(dataset.get_run_info(key).config.sample_fields or []) if key in dataset.list_runs() else set()
    _refuse_taken(dataset, key, [f for f in aggregates if f not in owned])
    if key in dataset.list_runs():
        runs.delete_agreement_run(dataset, key)
    with schema_lock(dataset):
        if key in dataset.list_runs():
            raise RunError(f"run key {key!r} was taken by another process while this run was computing")
        samples.register_run(key, config, overwrite=False)
    return config


def _refuse_taken(dataset, key: str, names: list[str]) -> None:
    """Refuses per-video fields that exist on the dataset (a run never overwrites fields it does not own)."""
    taken = [f for f in names if f in dataset.get_field_schema()]
    if taken:
        raise RunError(f"field(s) {taken} already exist on dataset {dataset.name!r} and do not belong to an "
                       f"agreement run {key!r}; choose another key (a run never overwrites fields it does not own)")


def _frame_scores(units, dataset, field: str, written: dict) -> tuple[list, list]:
    """The video and the per-frame score ``field`` of every unit: the score as written (kept in memory while
    it was written, :func:`agreement.fo.frames.targets.captured_values`), read from the frames only for
    units written by another process (Dask workers)."""
    docs = list(units._sample_collection.find({}, {"_id": 1, "_sample_id": 1}))
    ids = [str(d["_id"]) for d in docs]
    kept = written.get(field, {})
    missing = [d["_id"] for d in docs if str(d["_id"]) not in kept]
    for lo in range(0, len(missing), 50_000):
        for d in dataset._frame_collection.find({"_id": {"$in": missing[lo:lo + 50_000]}}, {field: 1}):
            kept[str(d["_id"])] = d.get(field)
    return [d.get("_sample_id") for d in docs], [kept.get(i) for i in ids]


def _transfer(units, samples, key: str, config: AgreementRunConfig, *, score: dict, raters_field: str | None,
              written: dict) -> dict:
    """Completes the run on the video dataset (module docstring, steps 3-5): records what it wrote, declares
    it on the frames, writes the per-video values; returns ``n_videos`` and ``n_frames`` (frames scored)."""
    from agreement.fo.frames.aggregates import video_aggregates, write_video_fields
    from agreement.fo.frames.fields import declare_frame_fields

    dataset = samples._root_dataset
    unit_config = units.get_run_info(key).config
    results = runs.load_agreement_results(units, key)
    frame_fields = list(unit_config.sample_fields or [])
    unit_attrs = [list(x) for x in (unit_config.label_attrs or [])]
    video_values = (results.get("detail") or {}).pop("video_values", None) or {}
    inputs = dict(getattr(unit_config, "input", {}) or {})
    for name in ("fields",):
        if inputs.get(name):
            inputs[name] = [f"frames.{f}" for f in inputs[name]]
    if inputs.get("field"):
        inputs["field"] = f"frames.{inputs['field']}"
    if "raters_field" in inputs:  # the user's (a sample-level list on the videos), not the units' own
        inputs["raters_field"] = raters_field
    owned = set(config.sample_fields or [])
    _refuse_taken(dataset, key, [f"{key}_{s}" for s in video_values if f"{key}_{s}" not in owned])
    config = AgreementRunConfig(
        method=config.method, plugin=unit_config.plugin, format_version=unit_config.format_version,
        status="incomplete", params=dict(getattr(unit_config, "params", {}) or {}, frames=score), input=inputs,
        sample_fields=list(config.sample_fields or []) + [f"{key}_{s}" for s in video_values],
        label_attrs=[[f"frames.{lf}", a] for lf, a in unit_attrs], frame_fields=frame_fields)
    with schema_lock(dataset):
        dataset.update_run_config(key, config)
    declare_frame_fields(units, dataset, frame_fields, sorted({lf for lf, _ in unit_attrs}))
    # values that reached the units another way than the bulk write-back (a method's own set_values)
    # (one scan of the units for all fields, none of which the bulk write-back leaves there; per field only
    # if some value did reach them)
    coll = units._sample_collection
    anywhere = bool(frame_fields) and coll.find_one({"$or": [{f: {"$exists": True}} for f in frame_fields]},
                                                    {"_id": 1}) is not None
    left = [f for f in frame_fields if anywhere and coll.find_one({f: {"$exists": True}}, {"_id": 1})]
    if left:
        merge_back(units, dataset, left, [])
    aggregates, counts = video_aggregates(*_frame_scores(units, dataset, f"{key}_{score['suffix']}", written),
                                          score) if score else ({}, {})
    write_video_fields(dataset, key, aggregates, video_values)
    config.status = "complete"
    with schema_lock(dataset):
        dataset.update_run_config(key, config)
    from agreement.fo.runs.results import results_class

    results = dict(results, summary={**(results.get("summary") or {}), **counts})
    run_results = results_class(config.method)(samples, config, key, **results)
    dataset.save_run_results(key, run_results, overwrite=True, cache=False)
    return clean_summary(counts)
