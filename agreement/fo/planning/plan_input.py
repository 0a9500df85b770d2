"""What a method's ``planning`` hook gives ``plan_raters``, and how the class hooks read a run's raters.

:class:`PlanningInput` is the return value of :attr:`agreement.fo.runs.method_spec.MethodHooks.planning`:
the run's reliability data as an ``(items, raters)`` matrix, the statistics the method offers on it by name
(each a :data:`agreement.methods.planning.raters.Statistic`) with the projection beyond the data that holds
for each, and the sample of every item and the name of every rater.

:func:`read_run_classes` reads the raters' classes of the samples a run was computed on (FiftyOne keeps the
run's view) with the run's recorded rater layout, as the run read them; :func:`gold_codes` reads a gold
``Classification`` field on those samples as class codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

import fiftyone.core.labels as fol

from agreement.core.ratings import ClassRatings, class_ratings
from agreement.fo.runs.errors import RunError
from agreement.fo.storage.reading import ReadResult, read_annotations
from agreement.methods.planning.raters import PROJECTIONS, Statistic

__all__ = ["PlanningInput", "read_run_classes", "run_layout", "check_run_size", "refuse_gold_and_frames", "gold_codes"]


@dataclass(frozen=True)
class PlanningInput:
    """A run replayed with fewer raters per item: what ``plan_raters`` subsamples.

    Attributes:
        values: ``(items, raters)`` float reliability data, NaN where the rater did not label the item.
        statistics: the statistics the method offers, by name, the default first.
        projections: per statistic name, how :func:`agreement.methods.planning.raters.raters_needed` reads
            beyond the data: ``"spearman_brown"`` (a reliability) or ``"none"`` (e.g. an accuracy).
        sample_ids: the sample id of each item (row).
        raters: the name of each rater (column).
        notes: per statistic name, what it is on this run (its level, its reference), one sentence.
    """

    values: np.ndarray
    statistics: Mapping[str, Statistic]
    projections: Mapping[str, str]
    sample_ids: list[str]
    raters: list[str]
    notes: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.statistics:
            raise ValueError("a PlanningInput offers at least one statistic")
        missing = [n for n in self.statistics if self.projections.get(n) not in PROJECTIONS]
        if missing:
            raise ValueError(f"statistics {missing} need a projection, one of {PROJECTIONS}")
        if self.values.shape != (len(self.sample_ids), len(self.raters)):
            raise ValueError(f"values has shape {self.values.shape}, not (sample_ids, raters) = "
                             f"({len(self.sample_ids)}, {len(self.raters)})")


def run_view(samples, info: Mapping[str, Any]):
    """The samples run ``info`` was computed on (FiftyOne keeps a run's view), as a view of the dataset."""
    return samples._root_dataset.load_run_view(info["key"])


def read_run_classes(samples, info: Mapping[str, Any], *, classes: Any = None) -> tuple[Any, ReadResult, ClassRatings]:
    """The raters' classes on the run's samples, read with the run's recorded rater layout.

    Args:
        samples: any collection of the run's dataset.
        info: :func:`agreement.fo.runs.store.get_agreement_run_info` of the run.
        classes: the class order (``None``: the vocabulary read).

    Returns:
        ``(view, read, ratings)``: the run's view, the read and its :class:`agreement.core.ratings.ClassRatings`.

    Raises:
        RunError: the run records no rater layout, or its samples changed since it was computed.
        ValueError: a rater with two classes on one sample (:func:`agreement.core.ratings.class_ratings`).
    """
    view = run_view(samples, info)
    check_run_size(info, len(view))
    read = read_annotations(view, **run_layout(info))
    return view, read, class_ratings(read.annotations, classes=classes)


def run_layout(info: Mapping[str, Any], *, what: str = "plan_raters") -> dict[str, Any]:
    """The run's recorded rater layout (and box policy) as :func:`agreement.fo.storage.reading.read_annotations`
    keywords, as the run read its raters.

    Raises:
        RunError: the run records no rater layout.
    """
    layout = dict(info.get("input") or {})
    kw: dict[str, Any] = {"box_policy": layout.get("box_policy") or "clip"}
    if layout.get("layout") == "fields":
        return {"fields": list(layout["fields"]), **kw}
    if layout.get("field"):
        return {"field": layout["field"], "rater_attr": layout.get("rater_attr") or "annotator",
                "raters_field": layout.get("raters_field"), "assume_crossed": bool(layout.get("assumed_crossed")),
                **kw}
    raise RunError(f"run {info['key']!r} records no rater layout (its input): rerun it before {what}")


def refuse_gold_and_frames(info: Mapping[str, Any], options: Mapping[str, Any], *, kind: str, offers: str) -> None:
    """Refuse, for a hook that has no consensus, a ``gold_field`` option and a run computed per video frame.

    Args:
        info: the run's info.
        options: the ``plan_raters`` options.
        kind: the run's kind in the messages (``"OT agreement"``).
        offers: what the run offers instead (``"αOT only"``).

    Raises:
        ValueError: a gold field.
        RunError: a run on video frames.
    """
    key, article = info["key"], "an" if kind[:1] in "AEIOU" else "a"
    if options.get("gold_field"):
        raise ValueError(f"run {key!r} is {article} {kind} run: it offers {offers}, no consensus to score against "
                         f"gold_field {options['gold_field']!r}; leave gold_field out")
    if info.get("frame_fields"):
        raise RunError(f"run {key!r} was computed per video frame: plan_raters replays {kind} runs on images")


def check_run_size(info: Mapping[str, Any], n_samples: int, *, what: str = "plan_raters") -> None:
    """Refuse a run whose view no longer has the ``n_samples`` it was computed on (its recorded target).

    Raises:
        RunError: the view's size differs from the run's.
    """
    expected = ((info.get("params") or {}).get("target") or {}).get("n_samples")
    if expected is not None and n_samples != int(expected):
        raise RunError(f"run {info['key']!r} was computed on {expected} samples; its view now has {n_samples}: the "
                       f"data changed since the run; rerun it (overwrite=True) before {what}")


def gold_codes(view, gold_field: str, sample_ids: list[str], classes: list[str]) -> np.ndarray:
    """The gold class of each sample of ``sample_ids`` as a code of ``classes`` (NaN: no gold on the sample;
    ``len(classes)``: a gold class no rater gave, which no consensus can match).

    Raises:
        ValueError: ``gold_field`` is not a field of the dataset, is not a ``Classification`` field, or no
            sample of the run has a gold label.
    """
    dataset = view._root_dataset
    schema = dataset.get_field_schema()
    if gold_field not in schema:
        fields = sorted(n for n, f in schema.items()
                        if getattr(f, "document_type", None) is fol.Classification)
        raise ValueError(f"gold_field {gold_field!r} is not a field of dataset {dataset.name!r}; its Classification "
                         f"fields are: {fields or 'none'}")
    kind = getattr(schema[gold_field], "document_type", None)
    if kind is not fol.Classification:
        what = kind.__name__ if kind is not None else type(schema[gold_field]).__name__
        raise ValueError(f"gold_field {gold_field!r} holds {what}, not Classification: give a field with one gold "
                         "class per sample")
    ids, labels = view.values(["id", f"{gold_field}.label"])
    gold = dict(zip(ids, labels, strict=True))
    index = {c: i for i, c in enumerate(classes)}
    out = np.full(len(sample_ids), np.nan)
    for i, sid in enumerate(sample_ids):
        label = gold.get(sid)
        if label is not None:
            out[i] = index.get(str(label), len(classes))
    if np.isnan(out).all():
        raise ValueError(f"gold_field {gold_field!r} has no label on the {len(sample_ids)} samples of the run: nothing "
                         "to measure the consensus against")
    return out
