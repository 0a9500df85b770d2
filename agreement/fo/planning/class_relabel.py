"""The ``relabel`` hook of class runs: the value of one more class label per sample, for ``suggest_relabel``.

:func:`class_relabel` is :attr:`agreement.fo.runs.method_spec.MethodHooks.relabel` of class consensus runs
(``compute_consensus`` on ``Classification`` fields, through :func:`consensus_relabel`, the hook of every
consensus run, which asks the run's label kind whether it holds instances) and of class agreement runs
(``compute_class_agreement`` read as classes). A run that owns a ``{key}_consensus`` field is replayed as a
consensus.
It reads the raters' classes of every sample of the run's view with the run's rater layout, and gives the
pure rule (:func:`agreement.methods.planning.relabel.class_relabel_priority`) what it needs:

* a **consensus run**: the class consensus refitted with the run's method and seed on the same ratings, so that
  the posterior and the rater confusions are exactly the run's; the fitted classes and confidences must equal
  the run's stored ``{key}_consensus`` (else the data changed since the run: refused, saying to rerun it);
* an **agreement run** (no consensus of its own): MACE (:func:`agreement.methods.consensus.class_labels.mace`,
  the project's default class consensus) fitted here on the run's ratings, said so in the notes; the stored
  ``{key}_n_ratings`` must equal the ratings read; ``lowest_agreement`` ranks by the run's ``{key}_agreement``.

Every sample of the run's view is an item, a sample no rater classified with ``n_ratings`` 0 (coverage: the
rule weighs it by the class prior). Items are given to the rule in sample-id order, so the ranking of equal
priorities never depends on the order of the view.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from agreement.core.ratings import class_ratings
from agreement.fo.planning.box_relabel import run_samples
from agreement.fo.planning.plan_input import run_layout
from agreement.fo.runs import store as runs
from agreement.fo.runs.engine import read_whole_corpus
from agreement.fo.runs.options import RaterLayout
from agreement.methods.classes.diagnostics import sample_observed_agreement
from agreement.methods.consensus.class_headline import class_consensus_headline
from agreement.methods.consensus.class_labels import class_consensus
from agreement.methods.planning.priority import RelabelPriority

__all__ = ["class_relabel", "consensus_relabel", "read_run_ratings"]

#: Relative tolerance of the refitted consensus confidence against the stored one.
CONFIDENCE_RTOL = 1e-9


def read_run_ratings(samples, info: dict, classes: Any = None):
    """The raters' classes of the run's view, read with the run's rater layout as the run read them.

    Args:
        samples: any collection of the run's dataset.
        info: :func:`agreement.fo.runs.store.get_agreement_run_info` of the run.
        classes: the class order (``None``: the vocabulary read).

    Returns:
        ``(view, read, ratings)``: the run's view, the :class:`agreement.fo.storage.reading.ReadResult` and its
        :class:`agreement.core.ratings.ClassRatings`.

    Raises:
        agreement.fo.runs.store.RunError: the run's layout is not recorded, or its samples are no longer there.
    """
    view = run_samples(samples, info)
    rater_layout = RaterLayout(**run_layout(info, what="suggest_relabel"))
    read = read_whole_corpus(view, rater_layout, {})  # in the order the run read it (a large view: by sample id)
    return view, read, class_ratings(read.annotations, classes=classes)


def _changed(key: str, what: str) -> runs.RunError:
    return runs.RunError(f"run {key!r}: {what}; the data changed since the run. Rerun it (overwrite=True) "
                         "before suggest_relabel")


def _check_stored_consensus(view, key: str, ratings, labels: np.ndarray, confidence: np.ndarray) -> None:
    """Refuses unless the stored ``{key}_consensus`` holds exactly the refitted classes and confidences."""
    field = f"{key}_consensus"
    ids, stored_labels, stored_conf = view.values(["id", f"{field}.label", f"{field}.confidence"])
    stored = {sid: (lab, c) for sid, lab, c in zip(ids, stored_labels, stored_conf, strict=True)}
    for s, sid in enumerate(ratings.sample_ids):
        label, conf = stored.get(sid, (None, None))
        want = None if labels[s] < 0 else str(ratings.classes[labels[s]])
        if label != want:
            raise _changed(key, f"sample {sid!r} has consensus {label!r} stored, the raters' classes now give {want!r}")
        if want is None:
            continue
        c = float("nan") if conf is None else float(conf)
        same = (math.isnan(c) and math.isnan(confidence[s])) or math.isclose(c, confidence[s], rel_tol=CONFIDENCE_RTOL)
        if not same:
            raise _changed(key, f"sample {sid!r} has consensus confidence {c!r} stored, the raters' classes now "
                                f"give {float(confidence[s])!r}")


def _class_prior(fit, codes: np.ndarray, K: int) -> np.ndarray:
    """The fit's class prior, or (a method without one: majority vote) the share of each class in the ratings."""
    if fit.class_prior is not None and np.isfinite(fit.class_prior).all():
        return np.asarray(fit.class_prior, dtype=np.float64)
    counts = np.bincount(codes[codes >= 0], minlength=K).astype(np.float64) + 1.0  # add-one: no class impossible
    return np.asarray(counts / counts.sum())


def _consensus_fit(samples, info: dict, seed: int):
    """A class consensus run refitted exactly (checked against its stored consensus)."""
    from agreement.fo.methods.class_consensus_labels import CLASS_METHODS

    key = info["key"]
    view, read, ratings = read_run_ratings(samples, info)
    summary = runs.load_agreement_results(samples, key).get("summary") or {}
    method = summary.get("method")
    if method not in CLASS_METHODS:
        raise runs.RunError(f"run {key!r} records no class consensus method ({method!r}): rerun it")
    run_seed = int((info.get("params") or {}).get("seed", 0) or 0)
    codes, K = ratings.codes, len(ratings.classes)
    fit = class_consensus(codes, K, method=CLASS_METHODS[method], seed=run_seed, orientation="units_by_raters")
    head = class_consensus_headline(codes, fit.labels, fit.confidence)
    _check_stored_consensus(view, key, ratings, np.where(head.has, fit.labels, -1), head.confidence)
    note = (f"the posterior and the rater confusions are consensus run {key!r}'s ({CLASS_METHODS[method]}, "
            f"seed {run_seed}), refitted on its {codes.shape[0]} samples and checked against its stored consensus")
    agreement = sample_observed_agreement(codes, n_classes=K, orientation="units_by_raters")
    return ratings, fit, agreement, note


def _agreement_fit(samples, info: dict, seed: int):
    """A class agreement run's ratings (its class order) with a MACE consensus fitted here, and its stored
    per-sample agreement; the stored ``{key}_n_ratings`` must equal the ratings read."""
    key = info["key"]
    results = runs.load_agreement_results(samples, key)
    if (results.get("summary") or {}).get("read_as") != "classes":
        raise runs.RunError(f"run {key!r} read its labels as tag sets: suggest_relabel ranks samples by one class "
                            "per rater (compute_class_agreement with labels='classes', or compute_consensus)")
    classes = (results.get("detail") or {}).get("classes")
    view, read, ratings = read_run_ratings(samples, info, classes=classes)
    codes, K = ratings.codes, len(ratings.classes)
    ids, n_stored, agree = view.values(["id", f"{key}_n_ratings", f"{key}_agreement"])
    stored = {sid: (n, a) for sid, n, a in zip(ids, n_stored, agree, strict=True)}
    n_now = (codes >= 0).sum(axis=1)
    for s, sid in enumerate(ratings.sample_ids):
        n, _ = stored.get(sid, (None, None))
        if n is None or int(n) != int(n_now[s]):
            raise _changed(key, f"sample {sid!r} has {n} ratings stored, {int(n_now[s])} now")
    agreement = np.array([np.nan if stored[sid][1] is None else float(stored[sid][1]) for sid in ratings.sample_ids])
    fit = class_consensus(codes, K, method="mace", seed=seed, orientation="units_by_raters")
    note = (f"class agreement run {key!r} has no consensus: the posterior and the rater confusions come from MACE "
            f"(seed {seed}) fitted here on its {codes.shape[0]} samples")
    return ratings, fit, agreement, note


def class_relabel(samples, info: dict, options: dict) -> tuple[list[str], RelabelPriority]:
    """The value of one more class label for every sample of a class run (the module docstring).

    Args:
        samples: any collection of the run's dataset.
        info: :func:`agreement.fo.runs.store.get_agreement_run_info` of a class consensus or class agreement run.
        options: ``rule`` (one of :data:`agreement.methods.planning.relabel.RELABEL_RULES`) and ``seed``.

    Returns:
        ``(sample ids, priority)``: every sample of the run's view in sample-id order, and the rule's
        :class:`agreement.methods.planning.priority.RelabelPriority` over them.

    Raises:
        agreement.fo.runs.store.RunError: the run cannot be replayed (tag sets, no layout) or its data changed.
    """
    from agreement.methods.planning.relabel import class_relabel_priority

    if info.get("frame_fields"):
        raise runs.RunError(f"run {info['key']!r} was computed on video frames: suggest_relabel ranks samples of "
                            "image-level classes, not frames")
    rule, seed = options.get("rule", "expected_error_reduction"), int(options.get("seed", 0))
    consensus = f"{info['key']}_consensus" in (info.get("sample_fields") or [])
    ratings, fit, agreement, note = (_consensus_fit if consensus else _agreement_fit)(samples, info, seed)
    codes, K = ratings.codes, len(ratings.classes)
    order = np.argsort(np.asarray(ratings.sample_ids, dtype=str), kind="stable")  # sample-id order
    rated = codes >= 0
    priority = class_relabel_priority(
        np.asarray(fit.posterior, dtype=np.float64)[order], np.asarray(fit.rater_confusion, dtype=np.float64),
        rated.sum(axis=1)[order], class_prior=_class_prior(fit, codes, K),
        rater_weights=rated.sum(axis=0).astype(np.float64), rule=rule, agreement=agreement[order], seed=seed,
        codes=codes[order],  # the ratings: the posterior with each rater shrunk toward the typical one
        labels=np.asarray(fit.labels)[order], fit_prior=True)  # the label written; the model's own class prior
    ids = [str(ratings.sample_ids[i]) for i in order]
    return ids, replace(priority, notes=(note, *priority.notes))


def consensus_relabel(samples, info: dict, options: dict) -> tuple[list[str], RelabelPriority]:
    """The ``relabel`` hook of consensus runs, whatever their label type: the run's label kind says whether it
    is an instance kind (boxes, polygons, ...: :func:`agreement.fo.planning.box_relabel.box_relabel`) or holds
    one class per sample (:func:`class_relabel`).

    Args:
        samples: any collection of the run's dataset.
        info: :func:`agreement.fo.runs.store.get_agreement_run_info` of a consensus run.
        options: ``rule`` and ``seed`` (:func:`class_relabel`).

    Returns:
        ``(sample ids, priority)`` of the hook called.

    Raises:
        agreement.fo.runs.store.RunError: the run records no label type.
    """
    from agreement.fo.kinds import declared_type, label_type

    name = (info.get("input") or {}).get("label_type")
    if not name:
        raise runs.RunError(f"run {info['key']!r} records no label type (its input): rerun it")
    if label_type(declared_type(name)).image_level:
        return class_relabel(samples, info, options)
    from agreement.fo.planning.box_relabel import box_relabel

    out: tuple[list[str], RelabelPriority] = box_relabel(samples, info, options)
    return out
