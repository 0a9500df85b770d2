"""The entry point: :func:`consensus` (see the package docstring for the overview).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from agreement.core.data import MultiRaterAnnotations, encode_classes
from agreement.core.kinds import column_kind, consensus_spec, is_column
from agreement.core.rater_pairs import co_assignment
from agreement.geometry.correspondence import check_cost, check_solver
from agreement.methods.consensus.em import RATE_PRIOR, ConsensusModel, EMSettings, fit_em
from agreement.methods.consensus.fusion import fuse_declared, row_weights
from agreement.methods.consensus.majority import unit_majority_vote
from agreement.methods.consensus.pixels import fuse_pixels
from agreement.methods.consensus.report import member_similarity, rater_report, review_flags, row_and_sample_summaries
from agreement.methods.consensus.result import NO_TWO_RATERS, ConsensusResult
from agreement.methods.consensus.threshold import check_tau_or_auto, resolve_tau
from agreement.methods.consensus.units import (
    METHODS,
    UnitTable,
    build_units,
    check_probability,
    check_review_band,
    estimate_coincidence,
    fusion_hook,
    geometry_fusion,
    label_type,
    unit_keys,
    units_from_labels,
)
from agreement.methods.consensus.wbf import weighted_boxes_fusion

__all__ = ["MIN_MAJORITY_KEPT", "consensus", "em_degeneracy"]


def _check_inputs(data: Any, method: str, max_iter: Any, tol: Any, smoothing: Any, rate_prior: Any) -> None:
    if not isinstance(data, MultiRaterAnnotations):
        raise TypeError(f"data must be a MultiRaterAnnotations, got {type(data).__name__}")
    if data.num_raters < 2:
        raise ValueError(
            f"a consensus combines raters: it needs at least two, got {data.num_raters} ({list(data.raters)})"
        )
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(map(repr, METHODS))}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    for name, v in (("tol", tol), ("smoothing", smoothing), ("rate_prior", rate_prior)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")


def _check_parameters(tau: Any, min_confidence: Any, quorum: Any, review_band: Any, solver: str, cost: str,
                      coincidence: Any, tail: Any) -> tuple[Any, float, float, tuple[float, float]]:
    """The validated ``(tau, min_confidence, quorum, review_band)``; ``ValueError`` naming a bad one."""
    check_solver(solver)
    check_cost(cost)
    if coincidence is not None and not (isinstance(coincidence, (int, float)) and 0 < coincidence < 1):
        raise ValueError(f"coincidence must be in (0, 1), got {coincidence!r}")
    if tail is not None and not (isinstance(tail, (int, float)) and not isinstance(tail, bool) and tail > 0):
        raise ValueError(f"tail must be a number > 0 (inf: Gaussian), got {tail!r}")
    return (check_tau_or_auto(tau), check_probability(min_confidence, "min_confidence"),
            check_probability(quorum, "quorum"), check_review_band(review_band))


def _model_codes(data: MultiRaterAnnotations, model: ConsensusModel) -> np.ndarray:
    """Class codes of ``data`` in the classes of a fitted ``model``; its raters must match."""
    if tuple(model.raters) != tuple(data.raters):
        raise ValueError(f"the model was fitted on raters {list(model.raters)}, the data has {list(data.raters)}")
    index = {c: k for k, c in enumerate(model.classes)}
    unknown = sorted({str(v) for v in data.labels.tolist() if v not in index})
    if unknown:
        raise ValueError(f"classes {unknown[:5]} are not in the fitted model's classes")
    return np.fromiter((index[v] for v in data.labels.tolist()), np.int64, len(data))


def _run_wbf(data: MultiRaterAnnotations, codes: np.ndarray, tau: float) -> tuple[UnitTable, dict]:
    """WBF clusters as units: fused boxes, fused scores, class = the cluster's."""
    b = data.boxes
    res = weighted_boxes_fusion(np.concatenate([b[:, :2], b[:, :2] + b[:, 2:]], axis=1), np.ones(len(data)),
                                codes, data.rater_index, groups=data.sample_index,
                                group_models=data.assigned, iou_thr=tau)
    order = np.lexsort((np.arange(len(res.group)), res.group))  # units sample by sample
    new = np.empty(len(order), np.int64)
    new[order] = np.arange(len(order))
    row_unit = np.where(res.cluster >= 0, new[np.maximum(res.cluster, 0)], -1)
    units = units_from_labels(row_unit, data.sample_index, n_units=len(order))
    fb = res.boxes[order]
    n = len(order)
    return units, dict(confidence=res.scores[order], top_class=res.labels[order], top_probability=np.ones(n),
                       second_class=np.full(n, -1), second_probability=np.zeros(n),
                       boxes=np.concatenate([fb[:, :2], fb[:, 2:] - fb[:, :2]], axis=1))


def _run_majority(data: MultiRaterAnnotations, kind: str, units: UnitTable, codes: np.ndarray, C: int) -> dict:
    fit = unit_majority_vote(data, kind, units, codes, C)
    out = dict(confidence=fit.support, top_class=fit.top_class, top_probability=fit.top_probability,
               second_class=fit.second_class, second_probability=fit.second_probability,
               boxes=data.boxes[fit.chosen])
    if is_column(kind):  # the chosen label's own geometry, as drawn (masks, polygons, ..., a declared column)
        out[kind] = column_kind(kind).take(data.geometry[kind], fit.chosen)
    return out


def _run_em(data: MultiRaterAnnotations, kind: str, units: UnitTable, codes: np.ndarray, classes: tuple,
            tau: float, smoothing: float, coincidence: float | None, max_iter: int, tol: float, model: Any, tail: Any,
            rate_prior: float) -> dict[str, Any]:
    rho = coincidence if coincidence is not None else estimate_coincidence(data, kind, tau)
    fit = fit_em(data, units, codes, classes, kind, rho, model=model, settings=EMSettings(
        smoothing=smoothing, max_iter=max_iter, tol=tol, tail=tail, rate_prior=rate_prior))
    out: dict[str, Any] = dict(confidence=fit.existence, top_class=fit.top_class, top_probability=fit.top_probability,
               second_class=fit.second_class, second_probability=fit.second_probability,
               boxes=fit.fused.boxes, keypoints=fit.fused.keypoints, cuboids=fit.fused.cuboids,
               model=replace(fit.model, tau=float(tau)), n_iter=fit.n_iter, converged=fit.converged)
    if geometry_fusion(kind) == "pixels":
        px = fuse_pixels(data, units, kind)
        out.update(boxes=px.boxes, masks=px.masks, polygons=px.polygons, pixel=px)
    if fusion_hook(kind) is not None:  # a declared column: fused by its hook, with the members' EM weights
        out[kind] = fuse_declared(kind, data, units, row_weights(units, fit.fused.weights, len(data)))
    return out


#: The EM is judged degenerate when it keeps fewer than this share of the majority units (:func:`em_degeneracy`).
MIN_MAJORITY_KEPT = 0.5


def em_degeneracy(data: MultiRaterAnnotations, units: UnitTable, existence: np.ndarray) -> str:
    r"""Why an EM fit cannot be used as the consensus (``""``: it can).

    The fit is degenerate when an existence posterior is not finite, or when it judges real
    (``P(\text{exists}) \ge 0.5``) fewer than :data:`MIN_MAJORITY_KEPT` of the *majority units*: units
    drawn by more than half of the raters assigned to their sample, on samples of two raters or more. A
    majority of ``m`` raters drawing one spurious box needs ``m - 1`` chance coincidences (each of
    probability ``ρ``, a few per cent at most), so a fit that rejects most majority units has collapsed
    (e.g. onto the fixed point where every unit is judged absent, or onto NaN parameters), not found a
    crowd of colluding raters. The threshold is 0.5 whatever the run's ``min_confidence``, so that a
    strict keep threshold is not mistaken for a collapse.

    Args:
        data (MultiRaterAnnotations): The corpus.
        units (UnitTable): Its units.
        existence (ndarray (U,)):
            The EM's existence posteriors.

    Returns:
        str:
            The reason, for the result's ``warning``; empty when the fit is sound.
    """
    bad = int((~np.isfinite(existence)).sum())
    if bad:
        return f"{bad} of {len(existence)} existence posteriors are not finite"
    k = data.assigned.sum(axis=1)[units.unit_sample]
    majority = (k >= 2) & (2 * units.size > k)
    n_major = int(majority.sum())
    real = int((existence[majority] >= 0.5).sum())
    if n_major and real < MIN_MAJORITY_KEPT * n_major:
        return f"it judges {real} of the {n_major} objects drawn by a majority of their sample's raters real"
    return ""


def _fallback(data: MultiRaterAnnotations, kind: str, units: UnitTable, codes: np.ndarray, C: int, em_out: dict,
              why: str) -> dict:
    """Majority vote's outputs in place of a degenerate EM's (:func:`em_degeneracy`), with the EM's
    iteration count and convergence flag, and the warning that says so."""
    out = _run_majority(data, kind, units, codes, C)
    out.update(n_iter=em_out["n_iter"], converged=em_out["converged"], method="majority", warning=(
        f"the EM consensus degenerated ({why}; {em_out['n_iter']} iterations, "
        f"{'converged' if em_out['converged'] else 'not converged'}): the consensus labels are majority "
        "vote's instead (method='majority'), and their confidences are vote shares, not posteriors"))
    return out


def consensus(
    data: MultiRaterAnnotations,
    *,
    method: str = "em",
    tau: float | str = "auto",
    min_confidence: float = 0.5,
    quorum: float = 0.5,
    review_band: tuple[float, float] = (0.2, 0.8),
    similarity: str | Callable | None = None,
    solver: str = "greedy",
    cost: str = "soft",
    geometry: str = "auto",
    smoothing: float = 1.0,
    coincidence: float | None = None,
    max_iter: int = 200,
    tol: float = 1e-5,
    model: ConsensusModel | None = None,
    tail: float | None = None,
    rate_prior: float = RATE_PRIOR,
    rater_meets: np.ndarray | None = None,
) -> ConsensusResult:
    r"""Consensus labels of a multi-rater corpus, with confidences, review flags and a rater report.

    Args:
        data (MultiRaterAnnotations):
            At least two raters. ``data.assigned`` separates a rater who was not
            given a sample (says nothing about it) from one who looked and drew
            nothing (evidence that there is no object).
        method ({"em", "majority", "wbf"}, default="em"):
            ``"em"``: the joint model of :mod:`agreement.methods.consensus.em` (existence,
            Dawid-Skene classes, localisation noise per rater); ``"majority"``:
            quorum vote over units (:mod:`agreement.methods.consensus.majority`,
            CVAT-like); ``"wbf"``: Weighted Boxes Fusion (boxes only,
            :mod:`agreement.methods.consensus.wbf`). An ``"em"`` fit that degenerates (non-finite
            posteriors, or most units drawn by a majority of their raters judged absent:
            :func:`em_degeneracy`) is replaced by ``"majority"``: the result's ``method`` is then
            ``"majority"``, ``params["requested_method"]`` ``"em"``, and ``warning`` says why.
        tau (float in (0, 1] or "auto", default="auto"):
            Similarity threshold of the correspondence (``"em"``, ``"majority"``:
            candidate pairs have similarity ``>= tau``) or WBF's ``iou_thr`` (a
            box joins a cluster at IoU ``> tau``). ``"auto"``: the threshold of
            fewest expected split and merged objects in ``[0.3, 0.5]``, estimated
            from the corpus (:func:`agreement.methods.consensus.threshold.select_tau`; with
            ``model``, the model's); the result's ``params`` give the ``tau`` used
            and ``tau_auto``, what it was chosen from.
        min_confidence (float in (0, 1], default=0.5):
            A unit is a consensus label when its confidence reaches it (``"em"``:
            the existence posterior; ``"wbf"``: the fused score).
        quorum (float in (0, 1], default=0.5):
            ``"majority"``: share of the assigned raters who must have drawn the object.
        review_band ((lo, hi), default=(0.2, 0.8)):
            Units with confidence in ``[lo, hi)``, or with confidence ``>= lo``
            and class probability ``< hi``, are flagged for review.
        similarity (str or callable, optional):
            Of the correspondence (:func:`agreement.methods.kalos.candidate_pairs`);
            default ``"cuboid_iou"`` for 3D cuboids, ``"iou"`` otherwise.
        solver (str): Correspondence solver (:mod:`agreement.geometry.correspondence`).
        cost (str): Correspondence cost (:mod:`agreement.geometry.correspondence`).
        geometry ({"auto", "boxes", "polygons", "masks", "keypoints", "cuboids"} or a fused declared column):
            What to fuse (:func:`agreement.methods.consensus.units.label_type`). A column declared with a fusion
            hook (:attr:`agreement.core.kinds.ColumnKind.fusion`) is fused by it beside its boxes, with the EM's
            member weights (majority vote: the chosen member's, as drawn), into the result's ``fused``.
        smoothing (float >= 0, default=1):
            ``α``, strength of the confusion matrices' Dirichlet prior (``"em"``).
        coincidence (float in (0, 1), optional):
            ``ρ`` (``"em"``); default estimated from pairs of different samples.
        max_iter (int): EM stopping rule: at most ``max_iter`` iterations.
        tol (float): EM stopping rule: stop when the log-likelihood gains at most ``tol`` per unit
            (:mod:`agreement.methods.consensus.em`).
        model (ConsensusModel, optional):
            Fixed EM parameters (from an earlier ``result.model``): no fitting,
            so that shards of a corpus get the same numbers as the whole.
        tail (float > 0, optional):
            ``ν`` of the Student-t weights of the EM's geometry fusion
            (:mod:`agreement.methods.consensus.scale`); ``inf`` is the Gaussian
            precision-weighted mean; default: chosen from the data (real
            annotators' boxes are heavy-tailed: ν ≈ 2-3 on LVIS, ∞ on the demo).
        rate_prior (float >= 0, default=2):
            ``κ`` (``"em"``): each rater's sensitivity and false-positive rate are shrunk toward the pooled
            rates by a prior worth ``κ`` of its samples, so that a crowd worker seen on one or two samples
            gets no rate of 0 or 1 (:mod:`agreement.methods.consensus.em`, "Sparse crowds"); 0: maximum
            likelihood.
        rater_meets ((R,) bool, optional):
            Whether each rater shares a sample with another rater anywhere in the corpus ``data`` is a part of
            (a shard of a larger corpus, with its ``model``); default: in ``data`` (:func:`rater_meets`). A
            sample whose raters meet nobody gets no confidence, and such a rater no estimates.

    Returns:
        ConsensusResult:
            ``params`` (and the summary) hold ``requested_method`` and ``warning`` (``""``, or why the EM's
            fit was replaced by majority vote).

    Raises:
        ValueError:
            Fewer than two raters; unknown method, solver, cost or geometry;
            ``tau``, ``min_confidence`` or ``quorum`` outside ``(0, 1]``; a bad
            ``review_band``; an unsupported label type (3D points, 3D
            polylines, point-cloud segments); mixed label types across raters;
            ``method="wbf"`` on anything but boxes (a declared column fused by its own hook included); an
            annotation without class.
        TypeError:
            ``data`` is not a :class:`~agreement.core.data.MultiRaterAnnotations`.

    References:
        See :mod:`agreement.methods.consensus`.
    """
    _check_inputs(data, method, max_iter, tol, smoothing, rate_prior)
    tau, min_confidence, quorum, band = _check_parameters(tau, min_confidence, quorum, review_band, solver, cost,
                                                          coincidence=coincidence, tail=tail)
    kind, codes, classes = _kind_and_codes(data, method, geometry, model)
    sim = similarity if similarity is not None else consensus_spec(kind).similarity
    tau, choice, selection = _resolved_tau(tau, data, method, sim, model)
    units, out = _fuse(data, method, kind, codes, classes, sim, tau=tau, solver=solver, cost=cost, smoothing=smoothing,
                       coincidence=coincidence, max_iter=max_iter, tol=tol, model=model, tail=tail,
                       rate_prior=rate_prior)
    params = dict(tau=tau, tau_selection=selection, min_confidence=min_confidence, quorum=quorum,
                  review_band=band, solver=solver, cost=cost, smoothing=float(smoothing), rate_prior=float(rate_prior),
                  similarity="iou" if method == "wbf" else str(getattr(sim, "__name__", sim)),
                  requested_method=method, warning=out.get("warning", ""))
    if choice is not None:
        params["tau_auto"] = choice.as_dict()
    meets = None if rater_meets is None else np.asarray(rater_meets, dtype=bool)
    if meets is not None and meets.shape != (data.num_raters,):
        raise ValueError(f"rater_meets must hold one flag per rater ({data.num_raters}), got shape {meets.shape}")
    return _assemble(data, out.get("method", method), kind, units, codes, classes, out=out, params=params,
                     meets=meets)


def _kind_and_codes(data: MultiRaterAnnotations, method: str, geometry: str,
                    model: ConsensusModel | None) -> tuple[str, np.ndarray, tuple]:
    """The label type to fuse (``"wbf"`` only on boxes) and the class codes: the corpus' own, or
    those of a fixed ``model``'s classes."""
    kind = label_type(data, geometry=geometry)
    if method == "wbf" and (geometry_fusion(kind) != "boxes" or fusion_hook(kind) is not None):
        raise ValueError(f"method='wbf' fuses boxes; these labels are {kind} (pass geometry='boxes' to fuse "
                         "their boxes only)")
    codes, classes = encode_classes(data)
    if model is not None:
        codes, classes = _model_codes(data, model), tuple(model.classes)
    return kind, codes, classes


def _resolved_tau(tau: Any, data: MultiRaterAnnotations, method: str, sim: Any,
                  model: ConsensusModel | None) -> tuple[float, Any, str]:
    """``(tau, choice, selection)``: the matching threshold (given, chosen from the data by
    :func:`agreement.methods.consensus.threshold.resolve_tau`, or the fixed model's), the automatic choice
    (or None) and how it was selected (``"given"``, ``"auto"`` or ``"model"``)."""
    auto = isinstance(tau, str)
    tau, choice = resolve_tau(tau, data, "iou" if method == "wbf" else sim,
                              model_tau=getattr(model, "tau", None) if model is not None else None)
    selection = "given" if not auto else ("auto" if choice is not None else "model")
    return tau, choice, selection


def _fuse(data: MultiRaterAnnotations, method: str, kind: str, codes: np.ndarray, classes: tuple, sim: Any,
          tau: float, solver: str, cost: str, smoothing: float, coincidence: float | None, max_iter: int, tol: float,
          model: ConsensusModel | None, tail: Any, rate_prior: float) -> tuple[UnitTable, dict]:
    """The units and the per-unit outputs of ``method``: WBF's own clusters, or the correspondence
    units (:func:`agreement.methods.consensus.units.build_units`) fused by the EM or by majority vote; a
    degenerate EM fit (:func:`em_degeneracy`) is replaced by majority vote (``out["method"]``, ``out["warning"]``)."""
    if method == "wbf":
        return _run_wbf(data, codes, tau)
    units = build_units(data, codes, sim, tau, solver=solver, cost=cost, keys=unit_keys(data, kind))
    if method != "em":
        return units, _run_majority(data, kind, units, codes, len(classes))
    out = _run_em(data, kind, units, codes, classes, tau, smoothing=smoothing, coincidence=coincidence,
                  max_iter=max_iter, tol=tol, model=model, tail=tail, rate_prior=rate_prior)
    why = em_degeneracy(data, units, out["confidence"])
    return units, (_fallback(data, kind, units, codes, len(classes), out, why=why) if why else out)


def rater_meets(assigned: np.ndarray) -> np.ndarray:
    """``(R,)`` bool: the rater shares at least one sample with another rater (``assigned`` is ``(S, R)``).

    ``co = Aᵀ A`` (:func:`agreement.core.rater_pairs.co_assignment`) counts the samples two raters share; its
    diagonal (a rater with itself) does not count.
    """
    co = co_assignment(assigned)
    np.fill_diagonal(co, 0)
    meets: np.ndarray = co.sum(axis=1) > 0
    return meets


#: Why a number that needs raters to meet is NaN.
NEVER_MEET_REASON = NO_TWO_RATERS
ISOLATED_REASON = ("the raters of these samples never share a sample with another rater: a confidence, "
                   "sensitivity or agreement cannot be estimated for them")


def _assemble(data: MultiRaterAnnotations, method: str, kind: str, units: UnitTable, codes: np.ndarray,
              classes: tuple, out: dict, params: dict, meets: np.ndarray | None = None) -> ConsensusResult:
    fitted, top = out["confidence"], np.asarray(out["top_class"], np.int64)
    kept = fitted >= (params["quorum"] if method == "majority" else params["min_confidence"])
    # raters who never meet: their labels are kept as consensus labels, but nothing about them is agreed
    A = np.asarray(data.assigned, dtype=bool)
    n_rated, meets = A.sum(axis=1), rater_meets(A) if meets is None else meets
    isolated = (n_rated < 2) & ~(A & meets[None, :]).any(axis=1)  # per sample: its raters meet nobody
    conf = np.where(isolated[units.unit_sample], np.nan, fitted)
    # only consensus labels are reviewed: a candidate below the keep threshold is no label, so no flag
    review = review_flags(conf, out["top_probability"], params["review_band"]) & kept
    pixel = out.get("pixel")
    sim = member_similarity(data, kind, units, out["boxes"], fused=out.get(kind),
                            pixel_iou=None if pixel is None else pixel.member_iou)
    rs = row_and_sample_summaries(data, units, kept, conf, top, codes, review=review, similarity=sim,
                                  class_probability=out["top_probability"])
    rs["row_agrees"] = rs["row_agrees"] & (n_rated >= 2)[data.sample_index]  # one rater agrees with no one
    report = rater_report(data, units, codes, classes, kept, top, row_agrees=rs["row_agrees"], similarity=sim,
                          existence=fitted if method == "em" else None,
                          model=out.get("model") if method == "em" else None, pixel=pixel)
    report = _met_only(report, data, n_rated, meets, rs["row_agrees"])
    if pixel is not None:
        params.update(pixel_n_iter=int(pixel.n_iter), pixel_converged=bool(pixel.converged))
    if out.get("model") is not None:
        params.update(tail=float(out["model"].tail), coincidence=float(out["model"].coincidence))
    return ConsensusResult(
        method=method, geometry=kind, raters=tuple(data.raters), classes=tuple(classes),
        sample_ids=data.sample_ids, unit_sample=units.unit_sample, confidence=conf, label_code=top,
        class_probability=out["top_probability"], second_code=np.asarray(out["second_class"], np.int64),
        second_probability=out["second_probability"], boxes=out["boxes"], member_rows=units.order,
        member_offsets=units.starts, support=units.size,
        n_assigned=data.assigned.sum(axis=1)[units.unit_sample], is_consensus=kept,
        consensus_index=rs["consensus_index"], review=review, row_unit=units.row_unit,
        row_consensus=rs["row_consensus"], row_agrees=rs["row_agrees"], row_similarity=rs["row_similarity"],
        sample_n_consensus=rs["sample_n_consensus"], sample_n_review=rs["sample_n_review"],
        sample_min_confidence=rs["sample_min_confidence"], report=report, params=params,
        sample_assigned=np.asarray(data.assigned.any(axis=1)), image_sizes=data.image_sizes, sample_names=data.sample_names,
        masks=out.get("masks"), polygons=out.get("polygons"), keypoints=out.get("keypoints"),
        cuboids=out.get("cuboids"), fused={kind: out[kind]} if fusion_hook(kind) is not None else {},
        model=out.get("model"), n_iter=out.get("n_iter", 0),
        converged=out.get("converged", True), sample_n_raters=n_rated, rater_meets=meets,
        row_sample=np.asarray(data.sample_index, dtype=np.intp),
    )


def _met_only(report: Any, data: MultiRaterAnnotations, n_rated: np.ndarray, meets: np.ndarray,
              row_agrees: np.ndarray) -> Any:
    """The rater report with each rater's agreement over its labels on samples of two raters or more, and
    every estimate NaN for a rater who never shares a sample with another (nothing identifies it)."""
    R = data.num_raters
    multi = (n_rated >= 2)[data.sample_index]
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = (np.bincount(data.rater_index[multi], row_agrees[multi].astype(float), R)
                     / np.bincount(data.rater_index[multi], minlength=R))
    lone = ~meets
    return replace(report, agreement=agreement,
                   **{k: np.where(lone, np.nan, getattr(report, k)) for k in
                      ("sensitivity", "false_positive_rate", "precision", "localisation_noise")})
