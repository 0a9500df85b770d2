"""Views of a run's disagreements, built from what the run wrote.

* :func:`lowest_scoring_view`: the samples from lowest agreement up;
* :func:`rater_pair_view`: the samples where two raters agree least;
* :func:`unmatched_labels_view`: one rater's labels that match nobody;
* :func:`class_disagreement_view`: the labels of one class in units the raters disagree on (class runs:
  :func:`class_dispute_view`, the samples where that class is disputed);
* :func:`disagreeing_labels_view`: the labels that disagree, optionally of one sample;
* :func:`mask_class_view` (semantic mask runs): the samples where the raters', or one rater pair's, Dice
  on a class is lowest (:func:`mask_dice_scores`: those samples with their Dice);
* runs on video frames: :func:`disagreement_clips_view` (clips of the frames where the raters disagree),
  :func:`disagreement_frames_view` (those frames only), :func:`worst_videos_view`,
  :func:`video_pair_scores` (the videos where two raters agree least).

Every function takes the collection to start from (the App's current view,
filters included) and only adds stages to it, so a drill-down narrows what
the user was looking at instead of replacing it. They can be recomputed at any
time and saved as named views of the dataset (:func:`save_agreement_view`).
"""

from __future__ import annotations

import numpy as np

from fiftyone import ViewField as F

from agreement.fo.panel.data import higher_is_better, score_field
from agreement.fo.runs import store as runs
from agreement.fo.storage.reading import LABEL_TYPES

__all__ = [
    "lowest_scoring_view", "rater_pair_view", "rater_pair_scores", "write_rater_pair_field", "unmatched_labels_view", "class_disagreement_view",
    "disagreeing_labels_view", "save_agreement_view", "ViewError", "DRILL_LIMIT", "class_rater_disagreement_view",
    "class_dispute_view", "mask_dice_scores", "mask_class_view", "disagreement_frames_expr", "disagreement_clips_view",
    "disagreement_frames_view", "worst_videos_view", "video_pair_scores", "lone_unit_labels_view",
    "disputed_unit_labels_view", "unmatched_reason_labels_view", "disagreeing_unit_labels_view",
]

DRILL_LIMIT = 50  # samples a drill-down loads at most (the lowest-scoring first)


class ViewError(ValueError):
    """The view cannot be built as asked; the message says why."""


def lowest_scoring_view(samples, key: str, limit: int | None = 50, max_score: float | None = None):
    """The scored samples of run ``key``, lowest agreement first, optionally at
    most ``limit`` of them and only those with score ``<= max_score``."""
    info = runs.get_agreement_run_info(samples, key)
    field = score_field(info)
    if field is None:
        raise ViewError(f"run {key!r} ({info['method']}) has no per-sample score to sort by")
    better_high = higher_is_better(info)
    view = samples.exists(field)
    if max_score is not None:  # a threshold on agreement: for distances, "at least this far apart"
        view = view.match(F(field) <= float(max_score) if better_high else F(field) >= float(max_score))
    view = view.sort_by(field, reverse=not better_high)
    if limit is not None:
        if int(limit) < 1:
            raise ViewError(f"limit must be a positive number of samples, got {limit!r}")
        view = view.limit(int(limit))
    return view


def _check_raters(raters: list[str], key: str, *names: str) -> None:
    for name in names:
        if name not in raters:
            raise ViewError(f"run {key!r} has no rater {name!r}; its raters are {raters}")


def rater_pair_scores(samples, key: str, rater_a: str, rater_b: str) -> list[tuple[str, float]]:
    """``(sample id, score)`` of the samples of ``samples`` that raters ``rater_a`` and ``rater_b``
    both labelled, lowest agreement first.

    The score is the pair's own score on the sample when the run stores one
    (OT: ``detail["pair_sample_scores"]``); otherwise (KαLOS, geometry) the
    sample's score, over the samples both raters were assigned.
    """
    info = runs.get_agreement_run_info(samples, key)
    results = runs.load_agreement_results(samples, key)
    detail = results.get("detail", {})
    raters = [str(r) for r in detail.get("raters", [])]
    a, b = sorted([str(rater_a), str(rater_b)])
    _check_raters(raters, key, a, b)
    if a == b:
        raise ViewError(f"a rater pair needs two different raters, got {a!r} twice")
    in_view = set(samples.values("id"))
    pairs = detail.get("pair_sample_scores")
    if pairs is not None:
        scores = pairs.get(f"{a}|{b}")
        if scores is None:
            raise ViewError(f"raters {a!r} and {b!r} never labelled the same sample in run {key!r}")
        items = [(sid, float(v)) for sid, v in scores.items() if v is not None and sid in in_view]
        items.sort(key=lambda t: (t[1], t[0]))
        return items
    field = score_field(info)
    if field is None:
        raise ViewError(f"run {key!r} ({info['method']}) has no per-sample score to sort rater pairs by")
    both = _both_assigned(samples, info, a, b).exists(field)
    ids, values = both.values(["id", field])
    items = list(zip(ids, [float(v) for v in values], strict=True))
    items.sort(key=lambda t: (t[1], t[0]), reverse=False)
    if not higher_is_better(info):
        items.sort(key=lambda t: (-t[1], t[0]))
    return items


def write_rater_pair_field(samples, key: str, rater_a: str, rater_b: str) -> str:
    """Writes one rater pair's own per-sample scores into the run's field ``{key}_pair_score``, for the grid.

    The field (owned by run ``key``: deleting the run removes it) holds the
    scores of the last pair written, on the samples of ``samples`` both raters
    labelled, and ``None`` elsewhere, so that the App can show each sample's
    pair score on its tile (tick the field in the sidebar) and filter or sort
    by it. Only runs that store per-(sample, rater pair) scores (OT) have one.

    Returns:
        The field name.

    Raises:
        ViewError: the run stores no per-pair scores, or the raters are unknown or never met.
        agreement.fo.runs.store.RunError: a field of that name exists and is not the run's.
    """
    from agreement.fo.methods import hooks_of
    from agreement.fo.storage.writing import declare_sample_fields, unset_sample_field, write_columns

    if not hooks_of(runs.get_agreement_run_info(samples, key)["method"]).pair_sample_scores:
        raise ViewError(f"run {key!r} stores no per-rater-pair sample scores (only OT runs do)")
    items = rater_pair_scores(samples, key, rater_a, rater_b)
    name = f"{key}_pair_score"
    dataset = samples._root_dataset
    runs.add_run_sample_field(dataset, key, name)
    declare_sample_fields(dataset, {name: [float(s) for _, s in items[:1]] or [None]})
    unset_sample_field(dataset, name)
    write_columns(dataset, {name: dict(items)})
    return name


def _both_assigned(samples, info: dict, a: str, b: str):
    layout = info.get("input") or {}
    if layout.get("layout") == "fields":
        return samples.exists(a).exists(b)
    if layout.get("raters_field"):
        return samples.match(F(layout["raters_field"]).contains([a, b], all=True))
    return samples  # fully crossed: every rater looked at every sample


def rater_pair_view(samples, key: str, rater_a: str, rater_b: str, max_score: float | None = None,
                    limit: int | None = DRILL_LIMIT):
    """The samples where raters ``rater_a`` and ``rater_b`` agree least in run
    ``key`` (their pair score ``<= max_score``), lowest first, at most ``limit``.

    For a run with per-pair sample scores (OT) the order is the pair's own
    score; otherwise the sample's score over the samples both labelled (see
    :func:`rater_pair_scores`).
    """
    items = rater_pair_scores(samples, key, rater_a, rater_b)
    if max_score is not None:
        items = [t for t in items if t[1] <= float(max_score)]
    if limit is not None:
        if int(limit) < 1:
            raise ViewError(f"limit must be a positive number of samples, got {limit!r}")
        items = items[: int(limit)]
    return samples.select([sid for sid, _ in items], ordered=True)


def _label_rows(samples, info: dict):
    """Every label of the run's rater fields in ``samples``: ``(sample id, rater, label id, class, path)``
    and, per sample, the raters assigned to it."""
    layout = info.get("input") or {}
    dataset = samples._root_dataset
    rows, assigned = [], {}
    if layout.get("layout") == "attribute":
        f = layout["field"]
        lf = LABEL_TYPES[dataset.get_field(f).document_type]
        attr = layout.get("rater_attr") or "annotator"
        paths = ["id", f"{f}.{lf}.id", f"{f}.{lf}.label", f"{f}.{lf}.{attr}"]
        if layout.get("raters_field"):
            paths.append(layout["raters_field"])
        values = samples.values(paths)
        for k, sid in enumerate(values[0]):
            ids, labels, who = values[1][k] or [], values[2][k] or [], values[3][k] or []
            for lid, lab, r in zip(ids, labels, who, strict=False):
                rows.append((sid, str(r), lid, lab, f))
            assigned[sid] = len(values[4][k] or []) if layout.get("raters_field") else None
        return rows, assigned
    fields = layout.get("fields") or []
    paths = ["id"]
    for f in fields:
        lf = LABEL_TYPES[dataset.get_field(f).document_type]
        paths += [f"{f}.{lf}.id", f"{f}.{lf}.label"]
    values = samples.values(paths)
    for k, sid in enumerate(values[0]):
        n = 0
        for j, f in enumerate(fields):
            ids, labels = values[1 + 2 * j][k], values[2 + 2 * j][k]
            if ids is None:  # implicit absence: the rater was not assigned
                continue
            n += 1
            for lid, lab in zip(ids, labels or [], strict=False):
                rows.append((sid, f, lid, lab, f))
        assigned[sid] = n
    return rows, assigned


def _units(samples, info: dict) -> dict[str, object]:
    """Label id → its KαLOS unit (``{key}_unit``)."""
    layout = info.get("input") or {}
    dataset = samples._root_dataset
    fields = layout.get("fields") or [layout["field"]]
    out: dict[str, object] = {}
    for f in fields:
        lf = LABEL_TYPES[dataset.get_field(f).document_type]
        ids, units = samples.values([f"{f}.{lf}.id", f"{f}.{lf}.{info['key']}_unit"], unwind=True)
        out.update(zip(ids, units, strict=False))
    return out


def _unit_groups(samples, info: dict):
    """Per (sample, unit): its members ``[(rater, label id, class)]``; and the raters assigned per sample."""
    rows, assigned = _label_rows(samples, info)
    units = _units(samples, info)
    groups: dict[tuple, list] = {}
    for sid, rater, lid, lab, _ in rows:
        unit = units.get(lid)
        groups.setdefault((sid, unit if unit is not None else f"none:{lid}"), []).append((rater, lid, lab))
    return groups, assigned


def _class_table(samples, info: dict) -> tuple[list[str], list[dict[str, str]]]:
    """The classes of a class agreement run's raters in ``samples``: sample ids and, per sample,
    ``{rater: class}`` (raters without a class left out)."""
    layout = info.get("input") or {}
    if layout.get("layout") == "fields":
        fields = list(layout.get("fields") or [])
        ids, *columns = samples.values(["id"] + [f"{f}.label" for f in fields])
        table = [{f: c for f, c in zip(fields, row, strict=True) if c is not None} for row in zip(*columns, strict=True)] if fields else []
        return ids, table or [{} for _ in ids]
    field, attr = layout["field"], layout.get("rater_attr") or "annotator"
    ids, labels, raters = samples.values(["id", f"{field}.classifications.label",
                                          f"{field}.classifications.{attr}"])
    return ids, [{str(r): c for r, c in zip(rs or [], ls or [], strict=False) if r is not None and c is not None}
                 for ls, rs in zip(labels, raters, strict=True)]


def class_rater_disagreement_view(samples, key: str, rater: str):
    """The samples of class agreement run ``key`` where ``rater``'s class differs from another rater's."""
    info = runs.get_agreement_run_info(samples, key)
    ids, table = _class_table(samples, info)
    return samples.select([sid for sid, row in zip(ids, table, strict=False)
                           if rater in row and any(c != row[rater] for r, c in row.items() if r != rater)])


def class_dispute_view(samples, key: str, label_class: str):
    """The samples of class agreement run ``key`` where some rater gave ``label_class`` and the raters do
    not all agree."""
    info = runs.get_agreement_run_info(samples, key)
    ids, table = _class_table(samples, info)
    return samples.select([sid for sid, row in zip(ids, table, strict=False)
                           if label_class in row.values() and len(set(row.values())) > 1])


def _mask_target(samples, key: str, label_class, pair=None) -> tuple[dict, int, str | None]:
    """A mask agreement run's ``detail``, the value of ``label_class`` (a name or a value) and the run's
    label of rater pair ``pair`` (``None`` without one)."""
    from agreement.fo.methods import hooks_of
    from agreement.reporting.figures.masks import class_value, mask_class_names, pair_label

    info = runs.get_agreement_run_info(samples, key)
    if hooks_of(info["method"]).class_scores is None:
        raise ViewError(f"run {key!r} ({info['method']}) is not a semantic mask agreement run")
    detail = runs.load_agreement_results(samples, key).get("detail", {})
    rows = detail.get("pair_class_dice") or {}
    names = mask_class_names(info, values=list(detail.get("classes") or []) + list(rows.get("class_value") or []))
    value = class_value(names, label_class)
    if value is None:
        raise ViewError(f"run {key!r} has no class {label_class!r}; its classes are {list(names.values())}")
    label = None
    if pair is not None:
        label = pair_label(dict.fromkeys(rows.get("pair") or []), pair)
        if label is None:
            raise ViewError(f"raters {pair!r} never met on a class in run {key!r}")
    return detail, value, label


def mask_dice_scores(samples, key: str, label_class, pair=None) -> list[tuple[str, float]]:
    """``(sample id, Dice)`` of the samples of ``samples`` where two raters met on class ``label_class``
    (a name from ``mask_targets`` or a pixel value) in mask agreement run ``key``, lowest first (ties by
    sample id).

    The Dice of a sample is its lowest rater-pair Dice on that class or, with ``pair`` (``"a | b"`` or
    two raters), that pair's; two raters meet on a class where both rated the sample and either drew it.
    """
    detail, value, label = _mask_target(samples, key, label_class, pair)
    rows = detail.get("pair_class_dice") or {}
    sid = np.asarray(rows.get("sample") or [], dtype=object)
    dice = np.asarray([np.nan if d is None else d for d in rows.get("dice") or []], dtype=float)
    keep = (np.asarray(rows.get("class_value") or [], dtype=np.int64) == value) & np.isfinite(dice)
    if label is not None:
        keep &= np.asarray(rows.get("pair") or [], dtype=object) == label
    keep &= np.isin(sid, np.asarray(samples.values("id"), dtype=object))
    sid, dice = sid[keep].astype(str), dice[keep]
    order = np.lexsort((dice, sid))  # by sample, lowest Dice first: the first row of each sample is its lowest
    first = np.unique(sid[order], return_index=True)[1]
    lowest = dict(zip(sid[order][first].tolist(), dice[order][first].tolist(), strict=True))
    return sorted(lowest.items(), key=lambda t: (t[1], t[0]))


def mask_class_view(samples, key: str, label_class, pair=None, limit: int | None = DRILL_LIMIT):
    """The samples of ``samples`` where the raters' Dice on class ``label_class`` is lowest in mask
    agreement run ``key`` (with ``pair``: that pair's Dice), lowest first, at most ``limit``
    (:func:`mask_dice_scores`)."""
    items = mask_dice_scores(samples, key, label_class, pair)
    if limit is not None:
        if int(limit) < 1:
            raise ViewError(f"limit must be a positive number of samples, got {limit!r}")
        items = items[: int(limit)]
    return samples.select([sid for sid, _ in items], ordered=True)


def unmatched_labels_view(samples, key: str, rater: str):
    """Rater ``rater``'s labels that match nobody in run ``key``, in the samples that have some: what the
    run's method gives (:attr:`agreement.fo.runs.method_spec.MethodHooks.unmatched_view`).

    KαLOS: labels alone in their unit (no other rater drew that object, :func:`lone_unit_labels_view`). OT:
    labels with a ``{key}_reason`` other than ``"matched"`` (:func:`unmatched_reason_labels_view`). Class
    agreement: the samples where the rater is contradicted (:func:`class_rater_disagreement_view`).
    """
    from agreement.fo.methods import hooks_of

    info = runs.get_agreement_run_info(samples, key)
    raters = [str(r) for r in runs.load_agreement_results(samples, key).get("detail", {}).get("raters", [])]
    _check_raters(raters, key, str(rater))
    hook = hooks_of(info["method"]).unmatched_view
    if hook is None:
        raise ViewError(f"run {key!r} ({info['method']}) records no per-label matches")
    return hook(samples, info, str(rater))


def lone_unit_labels_view(samples, info: dict, rater: str):
    """Rater ``rater``'s labels alone in their unit (``{key}_unit``: no other rater drew that object)."""
    groups, _ = _unit_groups(samples, info)
    ids = [lid for members in groups.values() if len(members) == 1 for r, lid, _ in members if r == str(rater)]
    return _select_labels(samples, info, ids)


def class_disagreement_view(samples, key: str, label_class: str):
    """The labels (or samples) of class ``label_class`` the raters of run ``key`` disagree on: what the run's
    method gives (:attr:`agreement.fo.runs.method_spec.MethodHooks.class_view`).

    KαLOS: the labels of its units with a member of that class that some assigned rater missed, or whose
    members differ in class (:func:`disputed_unit_labels_view`); class runs: :func:`class_dispute_view`;
    semantic mask runs: :func:`mask_class_view`.
    """
    from agreement.fo.methods import hooks_of

    info = runs.get_agreement_run_info(samples, key)
    hook = hooks_of(info["method"]).class_view
    if hook is None:
        raise ViewError(f"run {key!r} ({info['method']}) has no units; class drill-down needs a KαLOS run")
    return hook(samples, info, label_class)


def disputed_unit_labels_view(samples, info: dict, label_class: str):
    """The labels of the units (``{key}_unit``) with a member of class ``label_class`` that some assigned
    rater missed, or whose members differ in class."""
    groups, assigned = _unit_groups(samples, info)
    n_raters = len(runs.load_agreement_results(samples, info["key"]).get("detail", {}).get("raters", []))
    ids = []
    for (sid, _), members in groups.items():
        classes = {lab for _, _, lab in members}
        if label_class not in classes:
            continue
        expected = assigned.get(sid) or n_raters
        if len({r for r, _, _ in members}) < expected or len(classes) > 1:
            ids += [lid for _, lid, _ in members]
    return _select_labels(samples, info, ids)


def disagreeing_labels_view(samples, key: str, sample_id: str | None = None, raters: list[str] | None = None,
                            hide_other_labels: bool = False):
    """The labels that disagree in run ``key`` (OT: not matched, :func:`unmatched_reason_labels_view`; KαLOS:
    alone in their unit or in a unit whose classes differ, :func:`disagreeing_unit_labels_view`), of one
    sample (``sample_id``) or of every sample of ``samples`` that has some.

    ``hide_other_labels`` also leaves out the label fields that are not the run's raters' (a reference,
    another layout of the same labels), so that only the disagreeing labels are drawn.
    """
    from agreement.fo.methods import hooks_of

    info = runs.get_agreement_run_info(samples, key)
    if sample_id is not None:
        samples = samples.select(sample_id)
    if hide_other_labels:
        samples = _hide_other_labels(samples, info)
    hook = hooks_of(info["method"]).disagreeing_view
    if hook is None:
        raise ViewError(f"run {key!r} ({info['method']}) records no per-label matches")
    return hook(samples, info, raters)


def unmatched_reason_labels_view(samples, info: dict, raters: list[str] | None = None):
    """The labels (of ``raters``, unless ``None``) with a ``{key}_reason`` other than ``"matched"`` (a matched
    label has no reason; runs written before 2026-12 store ``"matched"``), in the samples that have some."""
    layout = info.get("input") or {}
    reason = f"{info['key']}_reason"
    if layout.get("layout") == "attribute":
        expr = (F(reason) != "matched") & F(reason).exists()
        if raters:
            expr = expr & F(layout.get("rater_attr") or "annotator").is_in(raters)
        return samples.filter_labels(layout["field"], expr)
    fields = [f for f in layout.get("fields") or [] if raters is None or f in raters]
    view = samples
    expr = (F(reason) != "matched") & F(reason).exists()
    for f in fields:
        view = view.filter_labels(f, expr, only_matches=False)
    # keep the samples with at least one such label, in the order given
    return view.match(F.any([F(f).exists() & (F(f"{f}.{_list_field(samples, f)}").length() > 0)
                             for f in fields])) if fields else view


def disagreeing_unit_labels_view(samples, info: dict, raters: list[str] | None = None):
    """The labels (of ``raters``, unless ``None``) alone in their unit (``{key}_unit``) or in a unit whose
    members differ in class."""
    groups, _ = _unit_groups(samples, info)
    ids = []
    for members in groups.values():
        classes = {lab for _, _, lab in members}
        if len(members) == 1 or len(classes) > 1:
            ids += [lid for r, lid, _ in members if raters is None or r in raters]
    return _select_labels(samples, info, ids)


def _hide_other_labels(samples, info: dict):
    import fiftyone.core.labels as fol

    layout = info.get("input") or {}
    mine = set(layout.get("fields") or [layout.get("field")])
    schema = samples.get_field_schema(embedded_doc_type=fol.Label)
    other = sorted(f for f in schema if f not in mine)
    return samples.exclude_fields(other) if other else samples


def _list_field(samples, field: str) -> str:
    return LABEL_TYPES[samples._root_dataset.get_field(field).document_type]


def _select_labels(samples, info: dict, label_ids: list[str]):
    layout = info.get("input") or {}
    fields = layout.get("fields") or [layout["field"]]
    return samples.select_labels(ids=list(label_ids), fields=fields, omit_empty=True)


def save_agreement_view(samples, name: str, view, overwrite: bool = False) -> str:
    """Saves ``view`` under ``name`` on the dataset; an existing saved view of
    that name is replaced only with ``overwrite``."""
    dataset = samples._root_dataset
    if dataset.has_saved_view(name) and not overwrite:
        raise ViewError(f"dataset {dataset.name!r} already has a saved view {name!r}; pass overwrite=True or another name")
    dataset.save_view(name, view, overwrite=overwrite)
    return name


# --------------------------------------------------------------------------- runs on video frames
def _frame_run(samples, key: str) -> tuple[dict, dict]:
    """Run ``key``'s info and per-frame score (``{"suffix", "higher_is_better", "threshold"}``); a
    :class:`ViewError` unless it was computed per frame of videos."""
    from agreement.fo.panel.video_figures import frame_score_spec

    info = runs.get_agreement_run_info(samples, key)
    spec = frame_score_spec(info)
    if spec is None:
        raise ViewError(f"run {key!r} ({info['method']}) was not computed on video frames (frames.<field>)")
    return info, spec


def disagreement_frames_expr(samples, key: str, threshold: float | None = None):
    """The frame-level expression "the raters disagree on this frame" of frame run ``key``: its per-frame score
    ``{key}_<suffix>`` is a number worse than ``threshold`` (default: the run's; below it, or above it for a
    distance). Frames without a score never match."""
    info, spec = _frame_run(samples, key)
    thr = spec.get("threshold") if threshold is None else threshold
    if thr is None:
        raise ViewError(f"run {key!r} records no frame threshold: give one")
    f = F(f"{key}_{spec['suffix']}")
    return f.is_number() & ((f < float(thr)) if spec.get("higher_is_better", True) else (f > float(thr)))


def disagreement_clips_view(samples, key: str, video_id: str | None = None, threshold: float | None = None):
    """The clips of the videos of ``samples`` (of video ``video_id`` only, if given) made of the consecutive
    frames where the raters of frame run ``key`` disagree (:func:`disagreement_frames_expr`): a clips view
    (``to_clips``) that plays just those stretches, in video order."""
    expr = disagreement_frames_expr(samples, key, threshold)
    if video_id is not None:
        samples = samples.select(video_id)
        if not len(samples):
            raise ViewError(f"video {video_id!r} is not in the view")
    return samples.to_clips(expr)


def disagreement_frames_view(samples, key: str, threshold: float | None = None):
    """The videos of ``samples`` that have frames where the raters of frame run ``key`` disagree, with only
    those frames (``match_frames``; works without frame images or clips)."""
    return samples.match_frames(disagreement_frames_expr(samples, key, threshold))


def worst_videos_view(samples, key: str, limit: int | None = None):
    """The scored videos of frame run ``key`` in ``samples``, the ones where the raters disagree most first
    (by the mean of the per-frame score, ``{key}_frames_mean``), at most ``limit``."""
    info, spec = _frame_run(samples, key)
    field = f"{key}_frames_mean"
    view = samples.exists(field).sort_by(field, reverse=not spec.get("higher_is_better", True))
    return view.limit(int(limit)) if limit is not None else view


def video_pair_scores(samples, key: str, rater_a: str, rater_b: str) -> list[tuple[str, float]]:
    """``(video id, score)`` of the videos of ``samples`` both raters labelled in frame run ``key``, where
    they agree least first.

    A run that stores per-(frame, rater pair) scores (OT): the mean of the pair's scores over the video's
    frames. Otherwise the video's mean per-frame score (``{key}_frames_mean``) over the videos both raters
    labelled (a frame field set on some frame of the video; the attribute layout: a label of each, or both
    in the run's ``raters_field``)."""
    info, spec = _frame_run(samples, key)
    detail = runs.load_agreement_results(samples, key).get("detail", {})
    raters = [str(r) for r in detail.get("raters", [])]
    a, b = sorted([str(rater_a), str(rater_b)])
    _check_raters(raters, key, a, b)
    if a == b:
        raise ViewError(f"a rater pair needs two different raters, got {a!r} twice")
    higher = spec.get("higher_is_better", True)
    pairs = detail.get("pair_sample_scores")
    if pairs is not None:
        scores = pairs.get(f"{a}|{b}")
        if scores is None:
            raise ViewError(f"raters {a!r} and {b!r} never labelled the same frame in run {key!r}")
        items = []
        for vid, frame_ids in zip(*samples.values(["id", "frames.id"]), strict=True):
            vals = [float(scores[f]) for f in frame_ids or [] if scores.get(f) is not None]
            if vals:
                items.append((vid, float(np.mean(vals))))
    else:
        field = f"{key}_frames_mean"
        both = set(_videos_of(samples, info, a)) & set(_videos_of(samples, info, b))
        items = [(vid, float(v)) for vid, v in zip(*samples.exists(field).values(["id", field]), strict=True) if vid in both]
    items.sort(key=lambda t: ((t[1] if higher else -t[1]), t[0]))
    return items


def _videos_of(samples, info: dict, rater: str) -> list[str]:
    """The videos of ``samples`` rater ``rater`` labelled in frame run ``info`` (see :func:`video_pair_scores`)."""
    from agreement.fo.panel.video_figures import video_run_info

    layout = video_run_info(samples, info).get("input") or {}
    if layout.get("layout") == "fields":
        field = f"frames.{rater}"
        return samples.match(F("frames").filter(F(rater).exists()).length() > 0).values("id") \
            if field in (layout.get("fields") or []) else []
    if layout.get("raters_field"):
        return samples.match(F(layout["raters_field"]).contains(rater)).values("id")
    lf = LABEL_TYPES[samples._root_dataset.get_field(layout["field"]).document_type]
    attr = layout.get("rater_attr") or "annotator"
    ids, who = samples.values(["id", f"{layout['field']}.{lf}.{attr}"])
    return [vid for vid, frames in zip(ids, who, strict=True) if any(rater in (f or []) for f in frames or [])]
