"""The rater assignment of the ``attribute`` layout, and the plan of a streamed read.

Where the sample-level list of assigned raters comes from (given, declared
with :func:`declare_raters_field`, or recorded by the importer:
:func:`recorded_assignment`), the checks of the lists read (missing, not a
list of names, names no label carries), the evidence for or against a fully
crossed design when there is no list (:func:`crossed_evidence`), and the
:class:`CorpusPlan` of a view (:func:`plan_corpus`: its raters, class
vocabulary and layout, from database aggregations) with the assigned cells it
implies (:func:`read_assignment`). The annotations themselves are read by
:func:`agreement.fo.storage.reading.read_annotations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

import fiftyone.core.fields as fof

from agreement.core.arrays import unique_sorted
from agreement.core.validation import AnnotationError
from agreement.fo.storage.label_schema import (
    check_layout_choice,
    detect_raters,
    field_label_type,
    label_list_path,
    sample_label,
)

__all__ = ["declare_raters_field", "recorded_assignment", "recorded_layout", "crossed_evidence",
           "assignment_candidates", "CorpusPlan", "plan_corpus", "coverage_evidence", "read_assignment",
           "Assignment", "dataset_raters"]


def dataset_raters(samples, field: str, rater_attr: str) -> list[str]:
    """The raters that label something in ``field`` anywhere in the dataset (not only in the view)."""
    return detect_raters(samples._dataset, field, rater_attr)


def check_planned_raters(flat_who, listed, plan: "CorpusPlan", s_rows, sample_ids, filepaths, field: str) -> None:
    """A shard's raters must be among the plan's: the labels changed between planning and reading otherwise.

    Args:
        flat_who: the rater name of each label of the shard, flattened.
        listed: the per-sample assigned rater lists (or None when the field records no assignment).
        plan: the corpus plan made before reading.
        s_rows: the shard's sample row of each label.
        sample_ids: the shard's sample ids.
        filepaths: the shard's sample file paths.
        field: the label field read.

    Raises:
        AnnotationError: when a rater not in ``plan.raters`` appears.
    """
    known = set(plan.raters)
    seen = set(flat_who.tolist()) | {x for lst in (listed or ()) if lst for x in lst}
    new = sorted(seen - known)
    if new:
        i = next((k for k, w in enumerate(flat_who.tolist()) if w in set(new)), None)
        where = f" (e.g. on {sample_label(sample_ids[s_rows[i]], filepaths[s_rows[i]])})" if i is not None else ""
        raise AnnotationError(
            f"field {field!r}: rater(s) {new[:5]} appeared{where} after the run listed the view's raters "
            f"{list(plan.raters)[:10]}: the labels changed while the run was reading them; run it again"
        )


def check_raters_field_type(samples, raters_field: str) -> None:
    """Checks that ``raters_field`` exists on the samples and is a list field.

    Args:
        samples: a FiftyOne dataset or view.
        raters_field: the sample-level field naming the assigned raters.

    Raises:
        AnnotationError: when the field is missing or is not a list field.
    """
    schema = samples.get_field_schema()
    if raters_field not in schema:
        lists = assignment_candidates(samples)
        raise AnnotationError(
            f"raters_field {raters_field!r} does not exist on dataset {samples._dataset.name!r}"
            + (f"; its list fields are: {', '.join(lists)}" if lists else "; it has no list fields")
        )
    if not isinstance(schema[raters_field], fof.ListField):
        raise AnnotationError(
            f"raters_field {raters_field!r} is a {type(schema[raters_field]).__name__}, "
            "not a list field of rater names"
        )


def assignment_candidates(samples) -> list[str]:
    """Sample-level list fields that could name the assigned raters (``tags`` excluded)."""
    return sorted(k for k, v in samples.get_field_schema().items() if isinstance(v, fof.ListField) and k != "tags")


def checked_assignment(listed: list, geo: list, named: list[str], samples, sample_ids, filepaths, field: str,
                       rater_attr: str, assignment: "Assignment") -> list:
    """The per-sample rater lists as lists of str, after checking them.

    Errors (each naming the first samples): a sample with labels in ``field``
    whose list is missing; a list that is not a list of strings; names no label
    of the dataset carries and no declaration lists (likely typos).

    Args:
        listed: the raw value of the raters field on each sample.
        geo: the value of ``field`` on each sample (None when unset).
        named: the rater names read from the labels.
        samples: the FiftyOne dataset or view read.
        sample_ids: the sample ids, aligned with ``listed``.
        filepaths: the sample file paths, aligned with ``listed``.
        field: the label field read.
        rater_attr: the label attribute naming the rater.
        assignment: the recorded assignment (its ``raters_field``).

    Returns:
        One list of rater names per sample, or None where no list is set.

    Raises:
        AnnotationError: on a missing list where labels exist, or a list that is not of strings.
    """
    rf = assignment.raters_field

    def first(where: list[int]) -> str:
        return ", ".join(sample_label(sample_ids[s], filepaths[s]) for s in where[:3])

    missing = [s for s, (lst, g) in enumerate(zip(listed, geo, strict=False)) if lst is None and g is not None]
    if missing:
        raise AnnotationError(
            f"raters_field {rf!r} is missing (None) on {len(missing)} sample(s) whose field {field!r} is set, "
            f"so their assignment is unknown: {first(missing)}. Set it on every sample (an empty list "
            "means nobody was assigned)"
        )
    bad = [s for s, lst in enumerate(listed) if lst is not None and (
        not isinstance(lst, (list, tuple)) or not all(isinstance(x, str) for x in lst))]
    if bad:
        s = bad[0]
        raise AnnotationError(
            f"raters_field {rf!r} must hold a list of rater names (strings) on every sample; "
            f"{len(bad)} sample(s) hold something else, e.g. {listed[s]!r} on {first(bad)}"
        )
    return [list(lst) if lst is not None else None for lst in listed]


def check_listed_raters_known(listed: list, named: list[str], samples, sample_ids, filepaths, field: str,
                              rater_attr: str, assignment: "Assignment", plan: "CorpusPlan | None" = None) -> None:
    """A name in the assignment that no label of the dataset carries and no declaration lists is an error (a typo).

    Args:
        listed: the checked per-sample rater lists (see :func:`checked_assignment`).
        named: the rater names read from the labels.
        samples: the FiftyOne dataset or view read.
        sample_ids: the sample ids, aligned with ``listed``.
        filepaths: the sample file paths, aligned with ``listed``.
        field: the label field read.
        rater_attr: the label attribute naming the rater.
        assignment: the recorded assignment (its ``raters_field`` and ``known_raters``).
        plan: the corpus plan, whose ``dataset_raters`` spare a scan of the dataset when set.

    Raises:
        AnnotationError: when a listed name is unknown.
    """
    rf = assignment.raters_field
    if plan is not None and plan.dataset_raters is not None:
        carried = set(plan.dataset_raters)
    else:
        carried = set(dataset_raters(samples, field, rater_attr))
    known = set(named) | set(assignment.known_raters) | carried
    unknown: dict[str, list[int]] = {}
    for s, lst in enumerate(listed):
        for x in lst or ():
            if x not in known:
                unknown.setdefault(x, []).append(s)
    if unknown:
        names = sorted(unknown)
        where = ", ".join(sample_label(sample_ids[s], filepaths[s]) for s in unknown[names[0]][:3])
        raise AnnotationError(
            f"raters_field {rf!r} names {len(names)} rater(s) that no label of field {field!r} carries in "
            f"{rater_attr!r}: {names[:5]} (e.g. on {where}). Check the spelling; a rater who "
            "truly drew nothing anywhere must be declared with "
            f"agreement.fo.storage.reading.declare_raters_field(dataset, {field!r}, {rf!r}, raters=[...])"
        )


CROSSED_MIN_MEDIAN_COVERAGE = 0.5


def crossed_evidence(counts: np.ndarray, s_rows: np.ndarray, r_rows: np.ndarray, num_raters: int) -> dict:
    """How plausible the fully crossed assumption is, from who drew on which non-empty samples.

    For each rater r, coverage_r = #{non-empty samples with a label by r} /
    #{non-empty samples}, in [0, 1]. Under a fully crossed design a rater
    misses a sample with objects only by overlooking all of them, so coverage
    is high; in a sparse design (each sample given to a few of many raters)
    it is about the share of samples a rater was given. The assumption is
    implausible when the median coverage is below
    ``CROSSED_MIN_MEDIAN_COVERAGE`` (0.5).

    Returns:
        ``n_nonempty``, ``median_coverage``, ``n_raters_below_half`` and
        ``implausible``.
    """
    nonempty = int((counts > 0).sum())
    if nonempty == 0 or num_raters == 0:
        return coverage_evidence(np.zeros(num_raters, dtype=np.int64), nonempty)
    pairs = unique_sorted(s_rows.astype(np.int64) * num_raters + r_rows)
    return coverage_evidence(np.bincount(pairs % num_raters, minlength=num_raters), nonempty)


def coverage_evidence(per_rater: np.ndarray, nonempty: int) -> dict:
    """:func:`crossed_evidence` from its counts: ``per_rater[r]`` non-empty samples with a label by rater r,
    of ``nonempty`` samples with labels."""
    per_rater = np.asarray(per_rater, dtype=np.int64)
    if nonempty == 0 or len(per_rater) == 0:
        return {"n_nonempty": int(nonempty), "median_coverage": float("nan"), "n_raters_below_half": 0,
                "implausible": False}
    coverage = per_rater / nonempty
    median = float(np.median(coverage))
    return {
        "n_nonempty": nonempty,
        "median_coverage": median,
        "median_samples": float(np.median(per_rater)),
        "n_raters_below_half": int((coverage < 0.5).sum()),
        "implausible": median < CROSSED_MIN_MEDIAN_COVERAGE,
    }


def crossed_refusal(samples, field: str, raters, evidence: dict) -> str:
    """The message refusing to assume a fully crossed design when the coverage makes it implausible.

    Args:
        samples: the FiftyOne dataset or view read (its list fields are suggested).
        field: the label field read.
        raters: the raters found.
        evidence: the result of :func:`crossed_evidence`.

    Returns:
        The error message.
    """
    lists = assignment_candidates(samples)
    choice = f" (list fields on this dataset: {', '.join(lists)})" if lists else ""
    return (
        f"field {field!r} records no rater assignment (no raters_field), so every one of the {len(raters)} raters "
        f"would be assumed to have looked at every sample with labels (a fully crossed design), and a rater "
        f"who was never given a sample would count as having found nothing there. That is implausible here: of "
        f"{evidence['n_nonempty']} samples with labels, the median rater labelled "
        f"{evidence['median_coverage']:.1%} ({evidence['median_samples']:g}), and {evidence['n_raters_below_half']} "
        f"of {len(raters)} raters labelled fewer than half. Either give the sample-level list of assigned raters "
        f"with raters_field='...'{choice} (or declare it once: agreement.fo.storage.reading.declare_raters_field(dataset, "
        f"{field!r}, '<list field>')), or, if every rater really looked at every sample, pass assume_crossed=True"
    )


@dataclass(frozen=True)
class CorpusPlan:
    """What every shard of a streamed read shares, found once for the whole view (:func:`plan_corpus`).

    Attributes:
        raters: every rater of the view, sorted (a shard's rater indices are into this).
        classes: the class vocabulary of the view (shards are coded by it).
        label_fields: the label fields read (per-label results are written to them), sorted.
        layout: ``"fields"`` (one label field per rater) or ``"attribute"``.
        raters_field: the sample-level list of assigned raters used (attribute layout), or ``None``.
        named: raters that label something in the view (attribute layout).
        evidence: the coverage evidence of the fully crossed assumption
            (attribute layout without an assignment), else ``None``.
        dataset_raters: raters that label something anywhere in the dataset
            (attribute layout with an assignment: the names it may list), else ``None``.
    """

    raters: tuple
    classes: tuple
    label_fields: tuple = ()
    layout: str = "fields"
    raters_field: str | None = None
    named: tuple = ()
    evidence: dict | None = None
    dataset_raters: tuple | None = None


def plan_corpus(
    samples,
    fields: Sequence[str] | None = None,
    field: str | None = None,
    rater_attr: str = "annotator",
    raters_field: str | None = None,
    box_policy: str = "clip",
    assume_crossed: bool = False,
    min_raters: int = 2,
) -> CorpusPlan:
    """The raters, class vocabulary and input layout of ``samples``, from database aggregations.

    Reads no label geometry: the distinct raters (the fields, or the values of
    ``rater_attr`` and of the assignment list), the distinct classes, and, in
    the attribute layout without a recorded assignment, the coverage evidence
    of :func:`crossed_evidence` (refused, as in :func:`agreement.fo.storage.reading.read_annotations`, when
    the fully crossed assumption is implausible and ``assume_crossed`` is not
    given). Every shard of a streamed run is then read with this plan
    (``read_annotations(..., plan=...)``), so that rater indices and class
    codes are the same in all of them.
    """
    from agreement.core.data import class_order

    check_layout_choice(fields, field, box_policy)
    if fields is not None:
        fields = sorted(dict.fromkeys(fields))
        found: set = set()
        for f in fields:
            found.update(_distinct_raters_and_classes(samples, label_list_path(f, field_label_type(samples, f)))[1])
        return CorpusPlan(tuple(fields), class_order(found), tuple(fields), "fields")
    assert field is not None  # check_layout_choice: `field` is given when `fields` is not
    list_path = label_list_path(field, field_label_type(samples, field))
    assignment = recorded_assignment(samples, field, raters_field)
    named, classes = _distinct_raters_and_classes(samples, list_path, rater_attr)
    listed: set = set()
    evidence = carried = None
    if assignment.raters_field is not None:
        check_raters_field_type(samples, assignment.raters_field)
        listed = {str(v) for v in samples.distinct(assignment.raters_field) if v is not None}
        # names the view's labels do not carry may still be carried elsewhere in the dataset
        unknown = listed - set(named) - set(assignment.known_raters)
        carried = tuple(dataset_raters(samples, field, rater_attr)) if unknown else named
    raters = tuple(sorted(set(named) | listed))
    if len(raters) < min_raters:
        raise AnnotationError(
            f"agreement needs at least {min_raters} raters; field {field!r} has labels by "
            f"{list(raters) or 'nobody'} in attribute {rater_attr!r}"
        )
    if assignment.raters_field is None:
        evidence = _coverage_in_database(samples, list_path, rater_attr, raters)
        if not assume_crossed and evidence["implausible"]:
            raise AnnotationError(crossed_refusal(samples, field, raters, evidence))
    return CorpusPlan(raters=raters, classes=classes, label_fields=(field,), layout="attribute",
                      raters_field=assignment.raters_field, named=named, evidence=evidence, dataset_raters=carried)


def _distinct_raters_and_classes(samples, list_path: str, rater_attr: str | None = None) -> tuple[tuple, tuple]:
    """The raters (``str``, sorted; none without ``rater_attr``) and classes
    (:func:`agreement.core.data.class_order`) of the labels of a label list, in one aggregation over the view."""
    from agreement.core.data import class_order

    group = {"_id": None, "c": {"$addToSet": "$l.label"}}
    if rater_attr is not None:
        group["r"] = {"$addToSet": f"$l.{rater_attr}"}
    pipeline = [{"$project": {"l": f"${list_path}"}}, {"$unwind": "$l"}, {"$group": group}]
    out = next(iter(samples._aggregate(pipeline=pipeline)), None) or {}
    raters = tuple(sorted(str(v) for v in out.get("r", ()) if v is not None))
    return raters, class_order(c for c in out.get("c", ()) if c is not None)


def read_assignment(samples, plan: CorpusPlan, sample_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The assigned (sample, rater) cells of the view, as :func:`agreement.fo.storage.reading.read_annotations`
    assigns them, by one projection that reads no label: ``(cell_sample, cell_rater)`` sorted by sample
    then rater, the sample an index into ``sample_ids`` (every sample of the view) and the rater into
    ``plan.raters``.

    A rater field that is set (fields layout), a name in the list of assigned
    raters (attribute layout with an assignment), or, without one, every
    rater on a sample whose field is set (the fully crossed design the plan
    accepted). A list that is not a list of names counts as empty here: the
    shard that reads it refuses it with its message.
    """
    pos = {sid: i for i, sid in enumerate(sample_ids)}
    R = len(plan.raters)
    project: dict[str, Any]
    if plan.raters_field is None:
        project = {f"f{k}": {"$gt": [f"${f}", None]} for k, f in enumerate(plan.label_fields)}
    else:
        project = {"listed": f"${plan.raters_field}"}
    rindex = {r: k for k, r in enumerate(plan.raters)}
    cs: list[int] = []
    cr: list[int] = []
    every = list(range(R))
    fields_layout = plan.layout == "fields"
    for doc in samples._aggregate(pipeline=[{"$project": project}]):
        s = pos[str(doc["_id"])]
        if plan.raters_field is not None:
            listed = doc.get("listed")
            rs = sorted({rindex[x] for x in listed if isinstance(x, str) and x in rindex}) if isinstance(
                listed, list) else []
        elif fields_layout:
            rs = [k for k in range(R) if doc.get(f"f{k}")]
        else:
            rs = every if doc.get("f0") else []
        cs.extend([s] * len(rs))
        cr.extend(rs)
    s_rows, r_rows = np.asarray(cs, dtype=np.intp), np.asarray(cr, dtype=np.intp)
    o = np.lexsort((r_rows, s_rows))
    return s_rows[o], r_rows[o]


def _coverage_in_database(samples, list_path: str, rater_attr: str, raters: Sequence[str]) -> dict:
    """:func:`coverage_evidence` counted by one aggregation: the samples with labels, and per rater those
    with a label by it."""
    pipeline = [
        {"$project": {"n": {"$size": {"$ifNull": [f"${list_path}", []]}},
                      "w": {"$setUnion": [{"$ifNull": [f"${list_path}.{rater_attr}", []]}, []]}}},
        {"$match": {"n": {"$gt": 0}}},
        {"$facet": {"nonempty": [{"$count": "n"}],
                    "per_rater": [{"$unwind": "$w"}, {"$group": {"_id": "$w", "n": {"$sum": 1}}}]}},
    ]
    out: dict = next(iter(samples._aggregate(pipeline=pipeline)), {}) or {}
    nonempty = int(out["nonempty"][0]["n"]) if out.get("nonempty") else 0
    counts = {str(d["_id"]): int(d["n"]) for d in out.get("per_rater", ())}
    return coverage_evidence(np.array([counts.get(r, 0) for r in raters], dtype=np.int64), nonempty)


ASSIGNMENT_INFO_KEY = "iaa_assignment"


@dataclass
class Assignment:
    """Where the rater assignment of an ``attribute``-layout field comes from.

    Attributes:
        raters_field: the sample-level list field of assigned raters, or ``None``.
        source: ``"given"`` (a parameter), ``"declared"`` (:func:`declare_raters_field`),
            ``"recorded by the importer"``, or ``"none"``.
        known_raters: raters declared with the field (may have drawn nothing).
    """

    raters_field: str | None
    source: str
    known_raters: tuple[str, ...] = ()


def declare_raters_field(dataset, field: str, raters_field: str, raters: Sequence[str] = ()) -> None:
    """Records, once per dataset, that ``raters_field`` lists the raters assigned to each sample for ``field``.

    Every compute operator then uses it when called with ``field`` (and
    without ``raters_field``). ``raters`` optionally names raters who may
    have drawn nothing anywhere (so that naming them is not taken for a typo).
    Stored in ``dataset.info["iaa_assignment"]``.
    """
    check_raters_field_type(dataset, raters_field)
    info = dict(dataset.info.get(ASSIGNMENT_INFO_KEY) or {})
    info[field] = {"raters_field": raters_field, "raters": sorted(str(r) for r in raters)}
    dataset.info[ASSIGNMENT_INFO_KEY] = info
    dataset.save()


def recorded_layout(dataset) -> dict:
    """The rater layout the dataset records, for forms to preselect (``{}`` when none).

    Written by this plugin's importers (``dataset.info["iaa_coco"]``: the
    ``layout`` with its ``rater_fields`` or ``field``/``rater_attr``) or by
    the demo (``dataset.info["iaa_demo"]["rater_fields"]``). Returns
    ``{"layout": "fields", "fields": [...]}`` or ``{"layout": "attribute",
    "field": ..., "rater_attr": ...}``.
    """
    info = dataset.info or {}
    coco = info.get("iaa_coco") or {}
    if coco.get("layout") == "fields" and coco.get("rater_fields"):
        return {"layout": "fields", "fields": sorted(set(coco["rater_fields"].values()))}
    if coco.get("layout") == "attribute" and coco.get("field"):
        return {"layout": "attribute", "field": coco["field"], "rater_attr": coco.get("rater_attr") or "annotator"}
    demo = info.get("iaa_demo") or {}
    if demo.get("rater_fields"):
        return {"layout": "fields", "fields": list(demo["rater_fields"])}
    return {}


def recorded_assignment(samples, field: str, raters_field: str | None = None) -> Assignment:
    """The assignment to use for ``field``: the given ``raters_field``, else the one recorded on the dataset.

    Recorded means declared with :func:`declare_raters_field`, or written by
    this plugin's importer (``dataset.info["iaa_coco"]``: the ``raters`` field
    of an ``attribute``-layout import, with the raters of the file).
    """
    info = samples._dataset.info or {}
    declared = (info.get(ASSIGNMENT_INFO_KEY) or {}).get(field)
    coco = info.get("iaa_coco") or {}
    imported = coco.get("layout") == "attribute" and coco.get("field") == field
    known: tuple[str, ...] = ()
    if declared:
        known = tuple(declared.get("raters") or ())
    elif imported:
        known = tuple(str(r) for r in (coco.get("rater_ids") or {}))
    if raters_field is not None:
        return Assignment(raters_field, "given", known)
    if declared:
        return Assignment(declared["raters_field"], "declared", known)
    if imported and "raters" in samples.get_field_schema():
        return Assignment("raters", "recorded by the importer", known)
    return Assignment(None, "none")
