"""Consensus labels on a FiftyOne dataset: one label set from many raters, a review queue, a rater report.

Wraps :func:`agreement.methods.consensus.consensus` (EM over rater sensitivity,
false positives, class confusion and localisation noise; or a quorum vote;
or weighted boxes fusion) on the one run lifecycle of
:mod:`agreement.fo.runs.engine`. A view of more than ``fit_samples`` samples
(default 100,000) is fitted on its first ``fit_samples`` and the rest streamed
in shards with that fit fixed (:mod:`agreement.fo.methods.consensus_parts`).

Written to the dataset (``key`` is the run key):

=================================  ==================================================
``{key}_consensus``                per sample: the consensus labels, of the raters'
                                   label type (``Detections`` with boxes, masks or
                                   3D cuboids; ``Polylines``; ``Keypoints``;
                                   ``TemporalDetections``, whose ``support`` is the
                                   fused segment rounded to frames); each
                                   carries ``confidence`` (existence × class
                                   posterior; on a keypoint FiftyOne's per-point
                                   list, that value at every point), ``{key}_support`` (raters who drew it
                                   / raters assigned), ``{key}_class_confidence``,
                                   ``{key}_members`` (ids of the rater labels fused)
                                   and ``{key}_review`` (a person should look)
``{key}_n_review``                 per sample: consensus candidates flagged for review
``{key}_min_confidence``           per sample: the lowest ``confidence`` of its
                                   consensus labels (``None`` without any)
label ``{key}_consensus_id``       per rater label: the id of the consensus label it
                                   was fused into (``None``: none)
label ``{key}_agrees``             per rater label: it is in a consensus label of its class
=================================  ==================================================

The review queue is ``load_agreement_view(mode="review", key=...)``: a
patches view of the flagged consensus labels, least confident first (on
videos with temporal segments, a clips view: one clip per flagged segment). A
reviewer tags patches ``accepted`` or ``rejected``;
:func:`finalize_consensus` writes the reviewed label set ``{key}_final``
(owned by the run): flagged labels tagged ``rejected`` are left out, every
other consensus label is kept, and ``accepted`` ones get ``{key}_review``
false.
"""

from __future__ import annotations

import fiftyone as fo

from agreement.fo.kinds import LABEL_TYPES, instance_lists
from agreement.fo.methods.consensus_parts import (
    FIT_SAMPLES,
    consensus_finish,
    consensus_kernel,
    consensus_kwargs,
    consensus_output,
    window_output,
    window_refusal,
)
from agreement.fo.panel.consensus import (
    CLASS_CONSENSUS_RATER_COLUMNS,
    CONSENSUS_RATER_COLUMNS,
    class_consensus_rater_rows,
    consensus_panel_section,
    consensus_rater_rows,
)
from agreement.fo.panel.label_explanations import consensus_explanations
from agreement.fo.planning.class_relabel import consensus_relabel
from agreement.fo.planning.plan_classes import class_consensus_planning
from agreement.fo.runs import store as runs
from agreement.fo.runs.declaration import MethodDeclaration, Param, python_function
from agreement.fo.runs.method_spec import MethodHooks, MethodOutput, MethodSpec, RaterTable
from agreement.fo.runs.results import AgreementResults
from agreement.fo.storage.writing import declare_sample_field
from agreement.geometry.similarity import SIMILARITIES
from agreement.methods.consensus import METHODS, consensus
from agreement.methods.consensus.threshold import AUTO_TAU_RANGE

__all__ = ["compute_consensus", "finalize_consensus", "review_view", "export_rater_report", "METHOD", "SPEC",
           "DECLARATION", "HOOKS", "require_consensus_run"]

METHOD = "iaa.consensus"
MAX_LISTED = 1000


def _check(read, params: dict) -> None:
    if read.annotations.num_raters < 2:
        raise ValueError(
            f"a consensus combines raters: it needs at least two, got {list(read.annotations.raters)}"
        )


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    """The consensus (pure :func:`agreement.methods.consensus.consensus`), as a label field of the raters' type;
    on the window of a larger view (``extra["window"]``), the fit the rest is streamed with
    (:func:`agreement.fo.methods.consensus_parts.window_output`)."""
    out = _compute_output(read, params, report, extra)
    if extra.get("window") is None and read.annotations.num_samples > params.get("fit_samples", FIT_SAMPLES):
        out.detail["fitted_whole"] = {"n_samples": read.annotations.num_samples,
                                      "fit_samples": params.get("fit_samples", FIT_SAMPLES),
                                      "why": window_refusal(read, params)}
    return out


def _compute_output(read, params: dict, report, extra: dict) -> MethodOutput:
    """:func:`_compute`'s output, by label type."""
    classes = read.layout.get("label_type") in ("Classification", "Classifications")
    params = _resolved_method(params, classes)
    if classes:
        from agreement.fo.methods.class_consensus_labels import class_consensus_output

        return class_consensus_output(read, params, report)
    if params["method"] == "mace":
        raise ValueError("method='mace' (MACE) fuses image-level classes (Classification fields); for "
                         f"{read.layout.get('label_type')} use 'em', 'majority' or 'wbf'")
    report(0.0, "units, EM and fused geometry")
    if extra.get("window") is not None:
        return window_output(read, params, extra["window"])
    res = consensus(read.annotations, **consensus_kwargs(params))
    report(0.7, "consensus labels")
    return consensus_output(read, params, res)


def _resolved_method(params: dict, classes: bool) -> dict:
    """``method="auto"`` as the evidence-based default of the label type (docs/method-consensus.md)."""
    return {**params, "method": "mace" if classes else "em"} if params["method"] == "auto" else params


def _kernel(read, params: dict, extra: dict) -> MethodOutput:
    """A shard after the fit window (:func:`agreement.fo.methods.consensus_parts.consensus_kernel`)."""
    return consensus_kernel(read, _resolved_method(params, False), extra)


def _warnings(summary: dict, detail: dict, params: dict) -> list[str]:
    """The consensus's own run warnings: the EM's fall-back to majority voting on a degenerate fit (its
    ``warning``), and consensus labels that are one rater's (engine hook
    :attr:`agreement.fo.runs.method_spec.MethodSpec.warnings`)."""
    out = [str(summary["warning"])] if summary.get("warning") else []
    fit = detail.get("fit_window") or {}
    out += [f"in the samples after the {fit['n_fitted']:,} fitted: {w}" for w in fit.get("shard_warnings", ())]
    if fit.get("pooled_raters"):
        out.append(f"rater(s) {', '.join(map(repr, fit['pooled_raters']))} have no sample among the first "
                   f"{fit['n_fitted']:,} samples the consensus was fitted on (fit_samples): their sensitivity, "
                   "false-positive rate and localisation noise are the fitted raters' medians and their class "
                   "confusion the pooled one; raise fit_samples to fit them")
    whole = detail.get("fitted_whole")
    if whole:
        out.append(f"fit_samples={whole['fit_samples']:,} was not used: {whole['why'] or 'the view was read whole'}, "
                   f"so the consensus was fitted on all {whole['n_samples']:,} samples at once (memory grows with "
                   "the view)")
    n = int(summary.get("n_single_rater") or 0)
    if not n:
        return out
    return out + [f"{n} consensus label(s) are one rater's (samples with a single rater assigned): they are kept, "
            "counted in n_single_rater, never count as agreed, and have no confidence where their rater never "
            "meets another; assign a second rater to those samples to confirm them"]


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=("consensus", "n_review", "min_confidence"),
    label_suffixes=("consensus_id", "agrees"),
    compute=_compute,
    read_options=lambda p: {"image_sizes": True, "masks": True},
    check=_check,
    warnings=_warnings,
    kernel=_kernel,
    finish=consensus_finish,
    fit_window=lambda p: p.get("fit_samples", FIT_SAMPLES),
    window_refusal=window_refusal,
)


def _from_form(values: dict) -> dict:
    """``tau`` from the form: ``"auto"`` unless its "Choose τ from the data" checkbox is off, or ``tau`` is
    given as a number without it (SDK calls); a numeric string from an SDK call is taken as a number; the
    review band from the form's two numbers (``review_lo``, ``review_hi``), refused when it disagrees with a
    ``review_band`` given beside them."""
    values = dict(values)
    lo, hi = values.pop("review_lo", None), values.pop("review_hi", None)
    if lo is not None or hi is not None:  # the form's two numbers
        band = [lo if lo is not None else 0.2, hi if hi is not None else 0.8]
        given = values.get("review_band")
        if given is not None and [float(v) for v in given] != [float(v) for v in band]:
            raise ValueError(f"review_band {list(given)!r} and the form's review_lo/review_hi {band!r} disagree: "
                             "give one of them")
        values["review_band"] = band
    auto, tau = values.pop("tau_auto", None), values.get("tau")
    if tau == "auto" or auto is True or (auto is None and tau is None):
        values["tau"] = "auto"
    elif tau is None:
        values["tau"] = 0.5
    else:
        try:
            values["tau"] = float(tau)
        except (TypeError, ValueError):
            pass  # refused by the declaration, which names the value and the two forms
    return values


def _derive(params: dict) -> dict:
    lo, hi = params["review_band"]
    if not lo <= hi:
        raise ValueError(f"review_band must be (lo, hi) with 0 <= lo <= hi <= 1, got {params['review_band']!r}")
    return params


def _band(band: list) -> list:
    if len(band) != 2:
        raise ValueError(f"review_band must be (lo, hi) with 0 <= lo <= hi <= 1, got {band!r}")
    return band


_TAU_LO, _TAU_HI = AUTO_TAU_RANGE
#: The rater label types of the form's instance-only parameters and choices (τ, the similarity, WBF, ...), and
#: of its class-only ones (MACE).
_INSTANCES = tuple(LABEL_TYPES)
_CLASSES = (fo.Classification, fo.Classifications)

#: The panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`).
VIEW = {
    "title": "Consensus",
    "score_suffix": "min_confidence",
    "score_label": "lowest confidence of the sample's consensus labels",
    "score_axis": "lowest confidence of the sample's consensus labels (1 = certain)",
    "score_name": "lowest confidence",
    "score_range": lambda params: (0.0, 1.0),
    "cards": [],
    # the text report's lines (AgreementResults.report); the panel shows consensus_cards
    "report_cards": [
        {"key": "method", "label": "method"},
        {"key": "n_consensus", "label": "consensus labels", "integer": True},
        {"key": "n_review", "label": "labels to review", "integer": True},
        {"key": "n_review_samples", "label": "samples with labels to review", "integer": True},
        {"key": "n_single_rater", "label": "consensus labels of one rater", "integer": True},
        {"key": "mean_confidence", "label": "mean confidence", "reason": "mean_confidence_reason"},
        {"key": "agreement", "label": "agreement with the consensus", "reason": "agreement_reason"},
        {"key": "n_units", "label": "objects (clusters of labels)", "integer": True},
        {"key": "n_raters", "label": "raters", "integer": True},
        {"key": "n_classes", "label": "classes", "integer": True},
        {"key": "tau", "label": "τ"},
        {"key": "n_iter", "label": "iterations", "integer": True},
        {"key": "iterations", "label": "iterations", "integer": True},
        {"key": "converged", "label": "converged"},
        {"key": "convergence_warning", "label": "convergence"},
        {"key": "warning", "label": "note"},
    ],
    "view_labels": ("mean lowest confidence", "samples without consensus labels"),
}


def _classes(detail: dict) -> bool:
    """Whether the rater report is a class consensus's (competences, not sensitivities)."""
    return any("competence" in (e or {}) for e in (detail.get("rater_report") or {}).values())


def _conflicts(samples, info: dict, raters: list[str]):
    from agreement.fo.reports.conflict_table import fused_conflicts

    return fused_conflicts(samples, info, raters)


_REPORT = "**Rater report** (whole run, against the consensus)"
#: What its runs show beside the view (:class:`agreement.fo.runs.method_spec.MethodHooks`).
HOOKS = MethodHooks(
    panel_section=consensus_panel_section,
    rater_tables=(
        RaterTable(f"{METHOD}/classes", CLASS_CONSENSUS_RATER_COLUMNS, _REPORT,
                   lambda samples, info, detail: class_consensus_rater_rows(detail.get("rater_report") or {}),
                   applies=_classes),
        RaterTable(METHOD, CONSENSUS_RATER_COLUMNS, _REPORT,
                   lambda samples, info, detail: consensus_rater_rows(detail.get("rater_report") or {})),
    ),
    explain_labels=lambda sample, info, labels: consensus_explanations(sample, info["key"], labels),
    drill_modes=("review",),
    review_view=lambda samples, key: review_view(samples, key),
    conflicts=_conflicts,
    conflicts_how="against the consensus (the reference rater), from the labels fused into each consensus label",
    conflicts_none="A class consensus fuses one class per sample: its disagreements are the samples' classes.",
    relabel=consensus_relabel,
    planning=class_consensus_planning,
)


class ConsensusResults(AgreementResults):
    """Consensus labels: counts of consensus and review labels; ``detail["rater_report"]`` per rater
    (sensitivity, false-positive rate, precision, localisation error, class confusion)."""

    view = VIEW


DECLARATION = MethodDeclaration(
    operator="compute_consensus",
    label="Annotator Agreement: consensus labels",
    description="One label set from many raters, weighted by each rater's sensitivity, false positives, "
                "class confusion and localisation noise, with a review queue and a rater report",
    spec=SPEC,
    results_cls=ConsensusResults,
    params=(
        Param("method", str, "auto", "Method", "How the raters' labels are fused",
              choices=("auto", *METHODS, "mace"), radio=True,
              choice_types={"wbf": _INSTANCES, "mace": _CLASSES},
              choice_help={"auto": "the default chosen from evidence: EM for boxes and other instances, MACE for "
                                   "classes (docs/method-consensus.md, 'Choosing the default class consensus')",
                           "em": "EM (rater sensitivity, false positives, confusion, box noise; classes: "
                                 "Dawid-Skene)",
                           "majority": "majority vote with a quorum (CVAT-like)",
                           "wbf": "weighted boxes fusion (boxes only)",
                           "mace": "MACE, per-rater competence and spamming (classes only)"}),
        Param("tau_auto", bool, True, "Choose τ from the data",
              f"The IoU threshold for 'the same object' ({_TAU_LO:g}-{_TAU_HI:g}) with the fewest expected split "
              "and merged objects, estimated from how raters' boxes overlap", python=False, label_types=_INSTANCES),
        Param("tau", float, "auto", "τ (similarity to be the same object)",
              "Similarity threshold of the correspondence (WBF: its IoU threshold), or 'auto': chosen from the "
              f"data in [{_TAU_LO:g}, {_TAU_HI:g}]", low=0.0, high=1.0, low_open=True, special=("auto",),
              form_default=0.5, show_if=lambda p: p.get("tau_auto", True) is False, label_types=_INSTANCES),
        Param("min_confidence", float, 0.5, "Minimum confidence",
              "A candidate becomes a consensus label when its existence posterior (EM) or fused score (WBF) "
              "reaches this", low=0.0, high=1.0, low_open=True, label_types=_INSTANCES),
        Param("quorum", float, 0.5, "Quorum", "Share of the assigned raters who must have drawn the object",
              low=0.0, high=1.0, low_open=True, show_if=lambda p: p.get("method") == "majority",
              label_types=_INSTANCES),
        Param("review_band", list, (0.2, 0.8), "Review band",
              "(lo, hi): flag the consensus labels whose confidence lies in it, or whose class posterior is "
              "below hi", low=0.0, high=1.0, form=False, check=_band, form_via=("review_lo", "review_hi")),
        Param("review_lo", float, 0.2, "Review band: from",
              "Flag the consensus labels whose confidence is at least this and below 'to' (review_band[0])",
              low=0.0, high=1.0, python=False, label_types=_INSTANCES),
        Param("review_hi", float, 0.8, "Review band: to",
              "... and below this; a class consensus flags every class posterior below it (review_band[1]). A "
              "large crowd's posteriors are near 1: raise it (e.g. 0.999) to review the least certain",
              low=0.0, high=1.0, python=False),
        Param("fit_samples", int, FIT_SAMPLES, "Samples fitted",
              "A view of more samples is fitted (EM rater model, τ) on this many, the first in sample-id order, "
              "and the rest streamed in shards with that fit fixed (memory bounded by a shard); a view of at "
              "most this many is fitted whole (class consensus, masks and polygons are always fitted whole: the "
              "run says so)", low=1),
        Param("similarity", str, None, "Similarity",
              "Similarity of the correspondence (default: by label type)", choices=tuple(SIMILARITIES),
              label_types=_INSTANCES),
    ),
    outputs=(("n_consensus", "Consensus labels", "int"), ("n_review", "Labels to review", "int"),
             ("mean_confidence", "Mean confidence", "float"), ("tau", "τ used", "float")),
    key_prefix="merged",  # fields merged_consensus, merged_final, ... (not consensus_consensus)
    label_types=(fo.Detections, fo.Polylines, fo.Keypoints, fo.TemporalDetections, fo.Classification,
                 fo.Classifications),
    derive=_derive,
    streams=False,
    from_form=_from_form,
    records_key=True,
    hooks=HOOKS,
)

#: ``compute_consensus(samples, key, *, fields=..., method="auto", tau="auto", min_confidence=0.5, ...)``: one label
#: set from many raters (field ``{key}_consensus``), stored as run ``key``; returns the headline numbers
#: (``n_consensus``, ``n_review``, ``mean_confidence``, ``agreement``, ...) and the repair counts; the rater report
#: is in the run results (``detail["rater_report"]``).
compute_consensus = python_function(DECLARATION)


def require_consensus_run(samples, key: str) -> dict:
    """The info of consensus run ``key``.

    Raises:
        agreement.fo.runs.store.RunError: ``key`` is a run of another method.
    """
    info = runs.get_agreement_run_info(samples, key)
    if info["method"] != METHOD:
        raise runs.RunError(f"run {key!r} is a {info['method']} run, not a consensus run (compute_consensus)")
    return info


def export_rater_report(samples, key: str, output_dir: str) -> dict:
    """Writes the consensus run's rater report as ``<key>_rater_report.json`` and ``<key>_rater_report.csv``.

    Per rater: sensitivity, false-positive rate (per assigned sample),
    precision, localisation error (mean 1 − IoU to the consensus), agreement,
    labels and samples counted, and the class confusion matrix (JSON; a JSON
    cell in the CSV). Returns ``{"json": path, "csv": path, "raters": n}``.
    """
    import csv
    import json
    import os

    require_consensus_run(samples, key)
    report = (runs.load_agreement_results(samples, key).get("detail") or {}).get("rater_report") or {}
    os.makedirs(output_dir, exist_ok=True)
    paths = {"json": os.path.join(output_dir, f"{key}_rater_report.json"),
             "csv": os.path.join(output_dir, f"{key}_rater_report.csv")}
    with open(paths["json"], "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    columns = list(dict.fromkeys(c for entry in report.values() for c in entry))
    with open(paths["csv"], "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["rater", *columns])
        for rater, entry in report.items():
            cells = [json.dumps(entry.get(c)) if isinstance(entry.get(c), dict) else
                     ("" if entry.get(c) is None else entry.get(c)) for c in columns]
            writer.writerow([rater, *cells])
    return {**paths, "raters": len(report)}




def review_view(samples, key: str):
    """The review queue: a patches view of the consensus labels flagged for review, least confident first.

    The queue holds the run's consensus field and nothing else (no rater's
    labels, no other run's), so that tagging "all labels" of a patch in the
    App tags exactly the flagged consensus label under review. Ties (frequent
    under majority voting) are broken by the label id, so the App and the SDK
    list the queue in the same order. Temporal segments of videos
    (``TemporalDetections``): a clips view, one clip per flagged segment
    (FiftyOne's ``to_clips``, the patches of time; a tag on a clip's label
    reaches the segment). FiftyOne makes patches of images only:
    on other media (3D scenes, point clouds) the queue is the samples with a
    flagged label, showing only those labels, the sample of the least
    confident one first (ties by sample id). A consensus of video frame labels (a frame run): clips of the
    frames holding a flagged consensus label, in video order.
    """
    from fiftyone import ViewField as F

    from agreement.fo.views.run_samples import scalar_fields

    info = require_consensus_run(samples, key)
    field = f"{key}_consensus"
    # the samples' numbers and names (no label) come along: the App's sidebar filters and the panel's counts
    # on them keep working in the queue, and a tag on "all labels" of an item still reaches only the consensus
    keep = scalar_fields(samples)
    if info.get("frame_fields"):  # a consensus of video frame labels: clips of the frames with a flagged label
        path, review = f"frames.{field}", F(f"{key}_review") == True  # noqa: E712
        items = instance_lists().get(samples.get_field(path).document_type, "detections")  # its label list
        clips = samples.select_fields([path] + keep).to_clips(F(f"{field}.{items}").filter(review).length() > 0,
                                                            other_fields=keep or None)
        return clips.filter_labels(path, review)
    flagged = samples.select_fields([field] + keep).filter_labels(field, F(f"{key}_review") == True)  # noqa: E712
    if samples.get_field(field).document_type is fo.Classification:  # classes: the samples, least confident first
        return flagged.sort_by([(f"{field}.confidence", 1), ("_id", 1)])
    if samples.media_type == "image":
        return flagged.to_patches(field, other_fields=keep or None).sort_by(
            [(f"{field}.confidence", 1), (f"{field}._id", 1)])
    if samples.get_field(field).document_type is fo.TemporalDetections:
        return flagged.to_clips(field, other_fields=keep or None).sort_by(
            [(f"{field}.confidence", 1), (f"{field}._id", 1)])
    items = LABEL_TYPES[samples.get_field(field).document_type]  # detections, polylines or keypoints
    least = F(f"{field}.{items}").map(F("confidence")).min()
    return flagged.sort_by([(least, 1), ("_id", 1)])


def finalize_consensus(samples, key: str) -> dict:
    """Writes the reviewed label set ``{key}_final`` (owned by run ``key``) from the reviewers' tags.

    Every consensus label is kept except flagged ones tagged ``rejected``;
    flagged labels tagged ``accepted`` lose their review flag. Returns the
    counts ``kept``, ``rejected``, ``accepted``, ``still_flagged``. A frame run: ``frames.{key}_final``.
    """
    info = require_consensus_run(samples, key)
    dataset = samples._root_dataset
    src, dst = f"{key}_consensus", f"{key}_final"
    counts = {"kept": 0, "rejected": 0, "accepted": 0, "still_flagged": 0}
    if info.get("frame_fields"):  # one bulk update per frame document (agreement.fo.storage.frame_labels)
        from agreement.fo.storage.frame_labels import write_frame_values

        reviewed = {}
        for ids, per_video in zip(*dataset.values(["frames._id", f"frames.{src}"]), strict=True):
            for fid, labels in zip(ids or [], per_video or [], strict=True):
                value = _reviewed(labels, key, counts)
                reviewed[fid] = None if value is None else value.to_mongo()
        _add_run_frame_field(dataset, key, dst)
        doc_type = dataset.get_field(f"frames.{src}").document_type
        if f"frames.{dst}" not in dataset.get_frame_field_schema() and dst not in dataset.get_frame_field_schema():
            dataset.add_frame_field(dst, fo.EmbeddedDocumentField, embedded_doc_type=doc_type)
        write_frame_values(dataset, dst, reviewed)
        dataset.reload()
        return counts
    out = {sid: _reviewed(labels, key, counts) for sid, labels in zip(*dataset.values(["id", src]), strict=True)
           if labels is not None}
    runs.add_run_sample_field(dataset, key, dst)
    declare_sample_field(dataset, dst, list(out.values()))
    dataset.set_values(dst, out, key_field="id")
    return counts


def _add_run_frame_field(dataset, key: str, name: str) -> None:
    """Records frame field ``name`` as owned by run ``key`` (deleting or renaming the run takes it along)."""
    cfg = dataset.get_run_info(key).config
    owned = list(getattr(cfg, "frame_fields", []) or [])
    if name not in owned:
        cfg.frame_fields = owned + [name]
        dataset.update_run_config(key, cfg)


def _reviewed(labels, key: str, counts: dict):
    """The reviewed copy of one consensus value (a label list, or a class consensus's ``Classification``): flagged
    labels tagged ``rejected`` left out, ``accepted`` ones no longer flagged; ``counts`` updated."""
    if labels is None:
        return None
    items = []
    single = isinstance(labels, fo.Classification)
    for lab in [labels] if single else getattr(labels, labels._LABEL_LIST_FIELD):
        flagged = bool(lab[f"{key}_review"])
        if flagged and "rejected" in lab.tags:
            counts["rejected"] += 1
            continue
        lab = lab.copy()
        if flagged and "accepted" in lab.tags:
            lab[f"{key}_review"] = False
            counts["accepted"] += 1
        elif flagged:
            counts["still_flagged"] += 1
        counts["kept"] += 1
        items.append(lab)
    return (items[0] if items else None) if single else type(labels)(**{labels._LABEL_LIST_FIELD: items})
