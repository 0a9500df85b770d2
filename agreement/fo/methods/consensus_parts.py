"""The consensus of :mod:`agreement.fo.methods.consensus` on the run engine: its output for a corpus (the label
documents of ``{key}_consensus`` made part by part, the per-sample and per-label values), and a large view fitted
on a window and streamed (:attr:`agreement.fo.runs.method_spec.MethodSpec.fit_window`).

A view of more than ``fit_samples`` samples (default :data:`FIT_SAMPLES`) is fitted on its first
``fit_samples`` samples in the canonical corpus order (:func:`window_output`: the EM's rater model,
``tau="auto"``'s threshold, the coincidence rate), then the rest is read, computed and written shard by
shard with that fit fixed (:func:`consensus_kernel`: one E-step and the fusion per shard, every shard read
once, nothing kept but sums), and the summary and rater report are merged
(:func:`consensus_finish`, :mod:`agreement.methods.consensus.merge`). A view of at most ``fit_samples``
samples is fitted whole, as before. Raters of the view without a sample in the window get the fitted
raters' median sensitivity, false-positive rate and localisation noise (what the EM's E-step gives a
rater without data) and the pooled class confusion (the Dirichlet prior's centre, which a rater without
labels has), and the run warns, naming them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any

import numpy as np
from bson import ObjectId

from agreement.core.gc_pause import gc_paused
from agreement.fo.kinds import declared_type, label_boxes, label_documents, label_type
from agreement.fo.runs.method_spec import FitWindow, MethodOutput, StreamContext
from agreement.fo.storage.assignment import read_assignment
from agreement.fo.storage.stored_values import label_document, new_object_id_bytes, object_id_strings
from agreement.fo.storage.temporal import support_documents
from agreement.methods.consensus import consensus
from agreement.methods.consensus.api import rater_meets
from agreement.methods.consensus.merge import ConsensusStats, merged_report, merged_summary, part_stats
from agreement.methods.consensus.units import geometry_fusion, label_type as geometry_of

__all__ = ["FIT_SAMPLES", "consensus_output", "consensus_kwargs", "window_output", "window_refusal",
           "consensus_kernel", "consensus_finish", "WindowFit"]

#: Default ``fit_samples``: a view of up to this many samples is fitted whole (the numbers of a whole fit).
FIT_SAMPLES = 100_000


class _ConsensusDocuments:
    """The consensus label documents of the kept units, made for a part of the corpus at a time
    (:attr:`agreement.fo.runs.engine.MethodOutput.label_fields`: the engine writes one part while the next
    is made), and the id of every unit's label (``unit_id``; ``None``: not kept), known up front for the
    rater labels' ``{key}_consensus_id``."""

    def __init__(self, res, ltype: str, key: str, label_ids: np.ndarray, sample_ids,
                 frame_counts: np.ndarray | None = None) -> None:
        self.res, self.ltype, self.key, self.sample_ids = res, ltype, key, sample_ids
        self.frame_counts = frame_counts  # temporal segments: per sample, its video's frames
        # the fused geometry columns, written back as the label type declares them (agreement.fo.kinds)
        self.columns = res.columns if frame_counts is None else {}
        self.per_point = label_type(declared_type(ltype)).per_point  # a keypoint's confidence: one per point
        self.doc_type = declared_type(ltype) if self.columns else None
        self.boxes = label_boxes(self.doc_type, res.boxes, self.columns) if self.doc_type else res.boxes
        self.kept = np.flatnonzero(res.is_consensus)
        self.id_bytes = new_object_id_bytes(len(self.kept))
        self.unit_id = np.full(res.n_units, None, dtype=object)
        self.unit_id[self.kept] = object_id_strings(self.id_bytes)
        self.member_labels = np.asarray(label_ids, dtype=object)[res.member_rows]
        self.member_offsets = np.asarray(res.member_offsets)

    def __call__(self, part: slice) -> dict[str, list[dict]]:
        """``{sample_id: [label documents]}`` of every corpus sample in ``part`` (an empty list: none kept)."""
        res, key, raw = self.res, self.key, self.id_bytes
        here = res.unit_sample[self.kept]
        j = np.flatnonzero((here >= part.start) & (here < part.stop))  # positions among the kept units: ids
        at = self.kept[j]
        ids = [ObjectId(raw[12 * i: 12 * i + 12]) for i in j.tolist()]
        confidence = _stored((res.confidence * res.class_probability)[at])
        support = _stored((res.support / np.maximum(res.n_assigned, 1))[at])
        class_confidence = _stored(res.class_probability[at])
        review = res.review[at].astype(bool).tolist()
        members = _member_ids(self.member_labels, self.member_offsets, at)
        docs: dict[str, list[dict]] = {sid: [] for sid in self.sample_ids[part].tolist()}
        unit_sample = res.unit_sample
        if self.doc_type is None and self.frame_counts is None:  # plain boxes: label_document's dicts, made here
            sids = self.sample_ids[unit_sample[at]].tolist()
            with gc_paused():
                for sid, doc in zip(sids, self._box_documents(at, ids, (confidence, support, class_confidence,
                                                                        members, review)), strict=True):
                    docs[sid].append(doc)
            return docs
        with gc_paused():  # ~10^5 small dicts, no cycles: no collector passes over the whole heap
            for k, (u, geo) in enumerate(zip(at.tolist(), self._geometry(at), strict=False)):
                doc = label_document(
                    self.ltype, ids[k], **geo,
                    confidence=_label_confidence(self.per_point, geo, confidence[k]),
                    **{f"{key}_support": support[k], f"{key}_class_confidence": class_confidence[k],
                       f"{key}_members": members[k], f"{key}_review": review[k]},
                )
                docs[self.sample_ids[unit_sample[u]]].append(doc)
        return docs

    def _box_documents(self, at: np.ndarray, ids: list, values: tuple) -> Iterator[dict]:
        """The documents :func:`agreement.fo.storage.stored_values.label_document` makes for plain boxes (the same
        keys in the same order, the values already as stored), without its per-label lookups."""
        key, cls = self.key, label_document(self.ltype)["_cls"]
        names, boxes = self.res.label[at].tolist(), self.boxes[at].tolist()
        for i, name, box, conf, sup, ccf, mem, rev in zip(ids, names, boxes, *values, strict=True):
            yield {"_id": i, "_cls": cls, "attributes": {}, "tags": [], "label": name, "bounding_box": box,
                   "confidence": conf, f"{key}_support": sup, f"{key}_class_confidence": ccf, f"{key}_members": mem,
                   f"{key}_review": rev}

    def declared_attrs(self) -> dict[str, list]:
        """The label attributes that a column fused by its declared hook writes (``ConsensusResult.fused``),
        each with an example value, to declare them on the consensus field (so that it reads back as its kind)."""
        if self.doc_type is None or not self.res.fused or not len(self.kept):
            return {}
        (doc,) = label_documents(self.doc_type, self.boxes, self.res.label, self.res.fused, rows=[int(self.kept[0])])
        return {k: [v] for k, v in doc.items() if k not in ("label", label_type(self.doc_type).box_attr)}

    def _geometry(self, at: np.ndarray) -> Iterator[dict]:
        """The class and geometry attributes of the labels of units ``at``: a segment's support in frames, a
        plain box, or the label type's declared write-back of the fused columns
        (:func:`agreement.fo.kinds.label_documents`)."""
        names = self.res.label
        if self.frame_counts is not None:  # a segment in relative time, back to the frames of its video
            supports = support_documents(self.res.boxes[at], self.frame_counts[self.res.unit_sample[at]])
            return ({"label": names[u], **geo} for u, geo in zip(at.tolist(), supports, strict=False))
        if self.doc_type is None:  # plain boxes
            return ({"label": names[u], "bounding_box": b} for u, b in zip(at.tolist(), self.boxes[at].tolist(),
                                                                            strict=True))
        return iter(label_documents(self.doc_type, self.boxes, names, self.columns, rows=at.tolist()))


def _label_confidence(per_point: bool, geometry: dict, confidence: float | None) -> float | list | None:
    """``confidence`` as the label type stores it (:attr:`agreement.fo.kinds.LabelType.per_point`): a number on a
    box, mask, cuboid or polygon; on a keypoint FiftyOne's per-point list, the label's confidence at every point
    (NaN at a point no rater placed, whose coordinates are NaN too)."""
    if not per_point:
        return confidence
    value = float("nan") if confidence is None else confidence
    return [float("nan") if any(c != c for c in p) else value for p in geometry["points"]]


def _stored(values: np.ndarray) -> list:
    """Floats as stored: Python floats, NaN as ``None``."""
    return [None if v != v else v for v in np.asarray(values, dtype=np.float64).tolist()]


def _member_ids(member_labels: np.ndarray, offsets: np.ndarray, units: np.ndarray) -> list[list[str]]:
    """The ids of the rater labels fused into each of ``units`` (labels without an id left out);
    ``member_labels`` are the label ids of every member in unit order, ``offsets`` each unit's first."""
    starts = offsets[units]
    lens = offsets[units + 1] - starts
    flat = member_labels[np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(int(lens.sum()))].tolist()
    it = iter(flat)
    return [[str(i) for i in islice(it, n) if i is not None] for n in lens.tolist()]


def consensus_kwargs(params: dict) -> dict:
    """The run's parameters as :func:`agreement.methods.consensus.consensus` takes them."""
    return dict(method=params["method"], tau=params["tau"], min_confidence=params["min_confidence"],
                quorum=params["quorum"], review_band=tuple(params["review_band"]), similarity=params["similarity"])


def consensus_output(read, params: dict, res) -> MethodOutput:
    """The run's output for the corpus ``read`` from its consensus ``res``: the consensus label field (its
    documents made part by part), ``{key}_n_review``, ``{key}_min_confidence`` and the rater labels'
    ``{key}_consensus_id`` and ``{key}_agrees``; the summary and detail of ``res``."""
    data = read.annotations
    key, ltype = params["key"], read.layout["label_type"]
    docs = _ConsensusDocuments(res, ltype, key, data.label_ids, data.sample_ids, read.frame_counts)
    row_id = np.where(res.row_consensus >= 0, docs.unit_id[np.maximum(res.row_unit, 0)], None)
    kept = res.is_consensus
    attrs = {"confidence": [[0.5]] if docs.per_point else [0.5],  # a keypoint's: one per point
             f"{key}_support": [0.5], f"{key}_class_confidence": [0.5], f"{key}_members": [["x"]],
             f"{key}_review": [True], **docs.declared_attrs()}
    detail = {
        "rater_report": res.report.as_dict(),
        "classes": [str(c) for c in res.classes],
        "n_iter": int(res.n_iter),
        "converged": bool(res.converged),
        "n_kept": int(kept.sum()),
        "tau": float(res.params["tau"]),  # also in the summary, with tau_selection
        "tau_auto": res.params.get("tau_auto"),
    }
    samples = {"n_review": res.sample_n_review.astype(int), "min_confidence": res.sample_min_confidence}
    return MethodOutput(dict(res.summary()), detail, sample_values=samples,
                        label_fields={"consensus": (ltype, docs, attrs)},
                        label_values={"consensus_id": row_id, "agrees": res.row_agrees.astype(bool)})


def window_refusal(read, params: dict) -> str | None:
    """Why this corpus is fitted whole even beyond ``fit_samples`` (``None``: it streams after the window):
    a class consensus (Dawid-Skene, MACE: every sample's classes at once), and masks and polygons (one STAPLE
    over every unit's pixels, :mod:`agreement.methods.consensus.pixels`)."""
    if read.layout.get("label_type") in ("Classification", "Classifications"):
        return "a class consensus fits every sample at once"
    if read.annotations.num_raters >= 2 and geometry_fusion(geometry_of(read.annotations)) == "pixels":
        return "masks and polygons are fused by one STAPLE over every sample"
    return None


@dataclass
class WindowFit:
    """What the shards of a streamed consensus share: the window's statistics and fit (``stats``: its
    :class:`agreement.methods.consensus.merge.ConsensusStats`), the method actually used (``"majority"`` after a
    degenerate EM fit), ``tau`` and ``tau_auto``, whether each rater meets another anywhere in the view
    (``meets``), the samples fitted and the raters without a sample among them (``pooled``)."""

    stats: ConsensusStats
    method: str
    tau: float
    tau_auto: Any
    meets: np.ndarray
    n_fitted: int
    pooled: tuple


def _view_meets(window: FitWindow, data) -> np.ndarray:
    """Whether each rater shares a sample with another in the whole view: from the window when every rater
    meets another there, else from the view's assignment (one projection that reads no label)."""
    meets = rater_meets(np.asarray(data.assigned, dtype=bool))
    if meets.all():
        return meets
    cs, cr = read_assignment(window.samples, window.plan, window.sample_ids)
    multi = np.bincount(cs, minlength=len(window.sample_ids))[cs] >= 2
    return np.bincount(cr[multi], minlength=data.num_raters) > 0


def _with_pooled(model, absent: np.ndarray):
    """The EM ``model`` with the raters ``absent`` from the window given the others' median sensitivity,
    false-positive rate and localisation noise (the values its E-step uses for a rater without data)."""
    def filled(x: np.ndarray) -> np.ndarray:
        ok = np.isfinite(x) & ~absent
        return np.where(absent, float(np.median(x[ok])) if ok.any() else np.nan, x)

    return replace(model, sensitivity=filled(model.sensitivity), false_positive_rate=filled(model.false_positive_rate),
                   localisation_noise=filled(model.localisation_noise))


def window_output(read, params: dict, window: FitWindow) -> MethodOutput:
    """The consensus fitted on the window ``read`` (the first ``window.size`` samples of a larger view, read
    with its plan: the view's raters and classes), as the window's output; its ``stats`` are the
    :class:`WindowFit` the shards and the finish get."""
    data = read.annotations
    meets = _view_meets(window, data)
    res = consensus(data, **consensus_kwargs(params), rater_meets=meets)
    absent = np.asarray(data.assigned, dtype=bool).sum(axis=0) == 0
    pooled = tuple(str(r) for r, a in zip(data.raters, absent.tolist(), strict=True) if a)
    if res.model is not None and absent.any():
        res = replace(res, model=_with_pooled(res.model, absent))
    out = consensus_output(read, params, res)
    out.stats = WindowFit(part_stats(res, data, fitted=True), res.method, float(res.params["tau"]),
                          res.params.get("tau_auto"), meets=meets, n_fitted=data.num_samples, pooled=pooled)
    return out


def consensus_kernel(read, params: dict, extra: dict) -> MethodOutput:
    """One shard after the window: the consensus with the window's fit fixed (its model, ``tau``, the view's
    ``rater_meets``), its output and sums (:func:`agreement.methods.consensus.merge.part_stats`)."""
    fit: WindowFit = extra["state"]
    model = fit.stats.model
    kwargs = {**consensus_kwargs(params), "method": fit.method, "tau": fit.tau}
    if model is not None:
        kwargs.update(model=model, coincidence=float(model.coincidence))
    res = consensus(read.annotations, **kwargs, rater_meets=fit.meets)
    out = consensus_output(read, params, res)
    out.stats = part_stats(res, read.annotations)
    return out


def consensus_finish(stats: list, params: dict, context: StreamContext) -> tuple[dict, dict]:
    """The summary and detail of a streamed consensus from the window's :class:`WindowFit` and the shards'
    sums (:mod:`agreement.methods.consensus.merge`); the fit is recorded in ``detail["fit_window"]``."""
    fit: WindowFit = stats[0]
    parts = [fit.stats, *stats[1:]]
    summary = {**merged_summary(parts), "n_fitted": fit.n_fitted}
    report = merged_report(parts, fit.meets)
    warnings = sorted({w for p in parts[1:] for w in p.warnings})
    detail = {
        "rater_report": report.as_dict(), "classes": [str(c) for c in report.classes],
        "n_iter": int(summary["n_iter"]), "converged": bool(summary["converged"]),
        "n_kept": int(summary["n_consensus"]), "tau": float(fit.tau), "tau_auto": fit.tau_auto,
        "fit_window": {"n_fitted": fit.n_fitted, "n_samples": len(context.sample_ids),
                       "pooled_raters": list(fit.pooled), "shard_warnings": warnings},
    }
    return summary, detail
