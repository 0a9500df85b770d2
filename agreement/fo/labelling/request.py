"""Send a run's samples to a labelling tool for one more rater: :func:`request_labels`.

The samples (the top ``budget`` by the run's ``{key}_relabel_rank``, which ``suggest_relabel`` writes; the
view given; or the run's review queue), the label schema (the run's label type and classes) and the new rater
(the next free name of the run's layout, or one given) come from the run; FiftyOne's annotation API does the
rest (``samples.annotate(anno_key, backend=..., label_field=<rater>, label_type=..., classes=...)``), so any
FiftyOne annotation backend works the same way; Label Studio is the tested one. The round is recorded with
the run (:mod:`agreement.fo.labelling.history`). Everything is checked (the run, the samples, the rater, the
backend's config and server) before anything is written.
"""

from __future__ import annotations

import re
from typing import Any

import fiftyone as fo  # noqa: F401 - the bridge reaches FiftyOne (samples.annotate)
from fiftyone import ViewField as F

from agreement.fo.labelling.backend import check_backend, forget_url
from agreement.fo.labelling.history import now, pending_raters, run_rounds, save_rounds
from agreement.fo.labelling.schema import (
    annotation_label_type,
    check_free_field,
    check_rater_name,
    next_rater_name,
    round_layout,
    run_classes,
    run_raters,
)
from agreement.fo.runs import store as runs
from agreement.fo.runs.errors import RunError

__all__ = ["SOURCES", "PRIORITY_SUFFIX", "request_labels", "chosen_samples"]

#: Where the samples of a round come from.
SOURCES = ("suggested", "view", "review")
#: ``suggest_relabel`` writes the priority of one more label per sample into ``{key}{PRIORITY_SUFFIX}``.
PRIORITY_SUFFIX = "_relabel_priority"

_ANNO_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_budget(budget: Any) -> int | None:
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be a positive number of samples, got {budget!r}")
    return int(budget)


def _top(ids: list[str], budget: int | None, what: str) -> list[str]:
    """The first ``budget`` of ``ids`` (all without one); a budget larger than them is refused."""
    if not ids:
        raise RunError(f"{what} holds no samples: nothing to send")
    if budget is not None and budget > len(ids):
        raise RunError(f"budget {budget} is larger than the {len(ids)} samples of {what}")
    return ids[:budget] if budget is not None else ids


def _suggested(samples, key: str, budget: int | None) -> list[str]:
    """The top ``budget`` samples of run ``key``'s last suggest_relabel, in its order
    (:func:`agreement.fo.planning.relabel.suggested_view`: by ``{key}_relabel_rank``)."""
    from agreement.fo.planning.relabel import rank_field, suggested_view

    field = rank_field(key)
    if field not in samples._root_dataset.get_field_schema():
        raise RunError(f"run {key!r} has no relabel priorities (field {field!r}): run suggest_relabel first, or "
                       "send source='view' (the samples given) or source='review' (the run's review queue)")
    if budget is None:
        raise RunError("source='suggested' needs a budget: the number of top-priority samples to send")
    ranked = samples.match(F(field) != None)  # noqa: E711
    if budget > len(ranked):
        raise RunError(f"budget {budget} is larger than the {len(ranked)} samples with a {field!r}")
    return [str(i) for i in suggested_view(samples, key, budget).values("id")]


def chosen_samples(samples, key: str, info: dict, source: str, budget: int | None) -> list[str]:
    """The sample ids a round sends, in order.

    Args:
        samples: the dataset or view given.
        key: the run.
        info: its info.
        source: ``"suggested"`` (top ``budget`` by ``{key}_relabel_rank``), ``"view"`` (the samples
            given, the first ``budget`` of them) or ``"review"`` (the run's review queue, its first
            ``budget``: the method's ``review_view`` hook).
        budget: at most this many samples (``None``: all; required for ``"suggested"``).

    Raises:
        RunError: an unknown source, no priorities, no review queue, no samples, a budget larger than them.
    """
    from agreement.fo.methods import hooks_of

    if source == "suggested":
        return _suggested(samples, key, budget)
    if source == "view":
        return _top([str(i) for i in samples.values("id")], budget, "the view given")
    if source == "review":
        hook = hooks_of(info["method"]).review_view
        if hook is None:
            raise RunError(f"run {key!r} (method {info['method']}) has no review queue: send source='suggested' "
                           "or source='view'")
        queue = hook(samples, key)
        ids = queue.values("sample_id") if getattr(queue, "_is_patches", False) else queue.values("id")
        return _top(list(dict.fromkeys(map(str, ids))), budget, f"the review queue of run {key!r}")
    raise RunError(f"unknown source {source!r}; choose from {list(SOURCES)}")


def request_labels(samples, key: str, *, source: str = "suggested", budget: int | None = None,
                   rater: str | None = None, backend: str = "labelstudio", anno_key: str | None = None,
                   launch_editor: bool = False) -> dict:
    """Sends samples of run ``key`` to a labelling backend for one more rater, through FiftyOne's annotation API.

    Args:
        samples: the dataset or view holding the run (``source="view"``: the samples to send).
        key: the run (one label field per rater, or one field with the rater in an attribute and a
            ``raters_field``: :func:`agreement.fo.labelling.schema.round_layout`).
        source: ``"suggested"``, ``"view"`` or ``"review"`` (:func:`chosen_samples`).
        budget: at most this many samples (required for ``"suggested"``; larger than the source: refused).
        rater: the new rater's name (default: the next free name after the run's raters, e.g. ``rater_4`` after
            ``rater_1 .. rater_3``); a rater of the run is refused, and in the ``fields`` layout (the rater is
            a new label field) an existing field. In the ``attribute`` layout FiftyOne loads into the round's
            field ``{anno_key}_labels``, merged into the run's field by the load.
        backend: a FiftyOne annotation backend (``"labelstudio"``, ``"cvat"``, ...); its URL and credentials
            come from FiftyOne's annotation config only.
        anno_key: FiftyOne's annotation run key (default ``{key}_round_{n}``).
        launch_editor: open the labelling tool in a browser.

    Returns:
        ``{"key", "anno_key", "rater", "label_field", "n_samples", "backend", "round", "source", "label_type",
        "classes", "sample_ids"}``.

    Raises:
        RunError: no run, a layout, label type, source, budget or rater that cannot be used, an anno key taken.
        LabellingBackendError: the backend is not configured or not reachable (nothing written).
    """
    dataset = samples._root_dataset
    info = runs.get_agreement_run_info(samples, key)
    if info["status"] != "complete":
        raise RunError(f"run {key!r} is {info['status']}: recompute it before asking for more labels")
    layout = round_layout(info)
    results = runs.load_agreement_results(dataset, key)
    label_type = annotation_label_type(info, results.get("summary"))
    raters = run_raters(info, results.get("detail", {}))
    budget = _check_budget(budget)
    rounds = run_rounds(dataset, key)
    number = max([int(r.get("round", 0)) for r in rounds] + [0]) + 1
    anno_key = anno_key or f"{key}_round_{number}"
    if not isinstance(anno_key, str) or not _ANNO_KEY.match(anno_key):
        raise RunError(f"invalid anno_key {anno_key!r}: use letters, digits and underscores")
    if anno_key in dataset.list_annotation_runs():
        raise RunError(f"dataset {dataset.name!r} already has an annotation run {anno_key!r}; give another anno_key")
    pending = pending_raters(rounds)
    by_field = layout["layout"] == "fields"
    taken = set(pending) | (set(dataset.get_field_schema()) if by_field else set())
    rater = (check_rater_name(samples, key, rater, raters, pending, is_field=by_field) if rater is not None
             else next_rater_name(raters, taken))
    # the field FiftyOne loads into: the rater's own (fields layout), else the round's, merged into the run's
    label_field = rater if by_field else check_free_field(dataset, f"{anno_key}_labels", "the round's labels")
    run_view = dataset.load_run_view(key)
    classes = run_classes(run_view, info, results.get("detail", {}))
    ids = chosen_samples(samples, key, info, source, budget)
    in_run = {str(i) for i in run_view.values("id")}
    outside = [i for i in ids if i not in in_run]
    if outside:
        raise RunError(f"{len(outside)} of the {len(ids)} samples to send are not samples of run {key!r} "
                       f"(e.g. {outside[:3]}): its recomputation would not see their labels")
    check_backend(backend)
    view = dataset.select(ids, ordered=True)
    try:
        view.annotate(anno_key, backend=backend, label_field=label_field, label_type=label_type, classes=classes,
                      launch_editor=launch_editor)
        forget_url(dataset, anno_key)
    except BaseException:
        if anno_key in dataset.list_annotation_runs():
            dataset.delete_annotation_run(anno_key)
        raise
    record = {"round": number, "anno_key": anno_key, "rater": rater, "label_field": label_field,
              "backend": backend, "source": source, "budget": budget, "n_samples": len(ids), "sample_ids": ids,
              "label_type": label_type, "classes": classes, "requested_at": now(), "status": "sent"}
    save_rounds(dataset, key, rounds + [record])
    return {"key": key, "anno_key": anno_key, "rater": rater, "label_field": label_field, "n_samples": len(ids),
            "backend": backend, "round": number, "source": source, "label_type": label_type, "classes": classes,
            "sample_ids": ids}
