"""The ``relabel`` hook of instance consensus runs (boxes, masks, polygons, keypoints, 3D cuboids, temporal segments)
and of KαLOS runs: which samples of the run need one more rater (issue 52).

:func:`box_relabel` is :attr:`agreement.fo.runs.method_spec.MethodHooks.relabel`: ``(samples, info, options) ->
(sample_ids, RelabelPriority)``. It reads the run's samples (the run's view, which FiftyOne keeps) with the run's rater
layout, recomputes the run's consensus with the run's parameters (:func:`agreement.methods.consensus.consensus`,
deterministic: the same units, posteriors and rater model as the run, which stores only the *kept* units,
while the rule needs the dropped candidates too) and scores every sample by
:func:`agreement.methods.planning.relabel_boxes.consensus_box_relabel`. A KαLOS run has no consensus: the EM
consensus of its units (the run's τ, similarity, solver and cost) stands in, and the notes say so.

``options``: ``rule`` (:data:`agreement.methods.planning.relabel_boxes.BOX_RELABEL_RULES`, default
``"expected_error_reduction"``), ``seed`` (0) and ``lookahead``
(:data:`agreement.methods.planning.relabel_boxes.LOOKAHEAD`); other keys are ignored.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from agreement.fo.kinds import LABEL_TYPES
from agreement.fo.planning.plan_input import check_run_size, run_view
from agreement.fo.runs import store as runs
from agreement.fo.storage.reading import read_annotations
from agreement.methods.consensus import consensus
from agreement.methods.planning.priority import RelabelPriority
from agreement.methods.planning.relabel_boxes import BOX_RELABEL_RULES, LOOKAHEAD, consensus_box_relabel

__all__ = ["box_relabel", "run_corpus_and_consensus", "run_samples"]


def _rater_field(layout: Mapping[str, Any]) -> str:
    names = list(layout.get("fields") or []) or ([layout["field"]] if layout.get("field") else [])
    if not names:
        raise runs.RunError("the run records no rater field (its input layout is empty): it cannot be replayed")
    return str(names[0])


def run_samples(samples, info: dict):
    """The samples run ``info`` was computed on (:func:`agreement.fo.planning.plan_input.run_view`), refused if
    their number changed since the run.

    Raises:
        agreement.fo.runs.store.RunError: the run's samples changed in number since it was computed.
    """
    view = run_view(samples, info)
    check_run_size(info, len(view), what="suggest_relabel")
    return view


def _consensus_kwargs(info: dict) -> tuple[dict, str]:
    """The keyword arguments of :func:`agreement.methods.consensus.consensus` that replay the run, and a note
    (``""``: the run's own consensus)."""
    params = dict(info.get("params") or {})
    if "min_confidence" in params and "review_band" in params:  # a consensus run
        from agreement.fo.methods.consensus_parts import consensus_kwargs

        method = "em" if params.get("method") in (None, "auto") else params["method"]
        if method == "mace":
            raise ValueError("method='mace' fuses image-level classes; this hook scores instance consensus runs")
        return consensus_kwargs({**params, "method": method}), ""
    if "tau" in params and "solver" in params:  # a KαLOS run: the EM consensus of its units
        kw = dict(method="em", tau=float(params["tau"]), solver=params["solver"], cost=params.get("cost", "soft"),
                  similarity=params.get("similarity"))
        return kw, (f"a {info['method']} run has no consensus: the EM consensus of its units (τ = {kw['tau']:g}, "
                    f"similarity {kw['similarity']!r}) stood in")
    raise runs.RunError(f"run {info['key']!r} ({info['method']}) is neither a consensus nor a KαLOS run: the box "
                        "relabel rule cannot replay it")


def run_corpus_and_consensus(samples, info: dict) -> tuple[Any, Any, tuple[str, ...]]:
    """``(corpus, consensus result, notes)`` of the instance run ``info`` on ``samples``: the corpus read with the
    run's rater layout from the samples the run covered, and its consensus recomputed with the run's parameters.

    Raises:
        agreement.fo.runs.store.RunError: a run that cannot be replayed (a frame run, no layout, no sample).
        ValueError: the run's labels are image-level (classes: the class hook scores them).
    """
    key, layout = info["key"], dict(info.get("input") or {})
    if info.get("frame_fields"):
        raise runs.RunError(f"run {key!r} is a run on video frames: the box relabel rule scores sample-level "
                            "instance labels only")
    field = _rater_field(layout)
    declared = samples._root_dataset.get_field_schema().get(field)
    doc_type = getattr(declared, "document_type", None)
    if doc_type not in LABEL_TYPES:
        raise ValueError(f"run {key!r} holds {getattr(doc_type, '__name__', doc_type)} labels (field {field!r}): the "
                         "box relabel rule scores instance labels (boxes, masks, polygons, keypoints, cuboids, segments)")
    kwargs, note = _consensus_kwargs(info)
    view = run_samples(samples, info)
    read_opts = {k: layout[k] for k in ("fields", "field", "rater_attr", "raters_field", "box_policy") if k in layout}
    masks = not note or kwargs.get("similarity") == "mask_iou"  # as the run read: a consensus always reads masks
    read = read_annotations(view, **read_opts, assume_crossed=bool(layout.get("assumed_crossed", False)),
                            image_sizes=True, masks=masks)
    data = read.annotations
    res = consensus(data, **kwargs)
    notes: tuple[str, ...] = (note,) if note else ()
    results = runs.load_agreement_results(samples, key)
    stored = (results.get("summary") or {}).get("n_consensus")
    if (results.get("detail") or {}).get("fit_window"):
        notes += (f"the run fitted its consensus on a window of its {len(view)} samples and streamed the rest; "
                  "the rule refitted it on all of them",)
    elif not note and stored is not None and int(stored) != res.n_consensus:
        raise runs.RunError(f"run {key!r} has {int(stored)} consensus labels, its labels now give {res.n_consensus}: "
                            "the raters' labels changed since the run; rerun it (overwrite=True) before "
                            "suggest_relabel")
    return data, res, notes


def box_relabel(samples, info: dict, options: Mapping[str, Any] | None = None) -> tuple[list[str], RelabelPriority]:
    """The ``relabel`` hook of instance consensus and KαLOS runs (module docstring).

    Args:
        samples: any collection of the run's dataset: every sample of the run is scored (the caller picks
            those of its view), by the run's consensus over all of them.
        info: :func:`agreement.fo.runs.store.get_agreement_run_info` of the run.
        options: ``rule``, ``seed``, ``lookahead`` (module docstring).

    Returns:
        ``(sample_ids, priority)``: the ids of the run's samples, in the order of ``priority``'s arrays
        (:class:`agreement.methods.planning.priority.RelabelPriority`: expected consensus errors removed per
        extra rater, ``error_now``/``error_after`` as expected error counts).

    Raises:
        ValueError: an unknown rule, image-level labels.
        agreement.fo.runs.store.RunError: a run that cannot be replayed.
    """
    options = dict(options or {})
    rule = options.get("rule") or BOX_RELABEL_RULES[0]
    if rule not in BOX_RELABEL_RULES:
        raise ValueError(f"rule must be one of {', '.join(BOX_RELABEL_RULES)}, got {rule!r}")
    data, res, notes = run_corpus_and_consensus(samples, info)
    pr = consensus_box_relabel(res, data, rule=rule, seed=int(options.get("seed", 0) or 0),
                               lookahead=int(options.get("lookahead", LOOKAHEAD)))
    if notes:
        pr = replace(pr, notes=pr.notes + notes)
    return [str(s) for s in data.sample_ids.tolist()], pr
