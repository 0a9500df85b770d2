"""Agreement on image-level classes and tags on a FiftyOne dataset or view: compute, write back, register.

The raters' labels are one ``Classification`` field per rater, or one
``Classifications`` field whose labels carry the rater attribute (with the
assignment the dataset records, as for boxes), or one ``Classifications``
field per rater holding tags. Read as:

* **classes** (one class per rater and sample): Krippendorff's α over the
  reliability matrix, ``nominal`` by default, ``ordinal`` when the classes are
  ordered, ``interval`` or ``ratio`` (``δ² = ((c − k)/(c + k))²``, numbers ≥ 0)
  when they are numeric (``level``), with a seeded
  bootstrap interval over samples; per rater, vitality (α − α without the
  rater) and agreement with the majority of the other raters; per rater pair, Cohen's κ,
  pairwise α and observed agreement (pairs that never met are absent); per
  class, difficulty and the confusion between raters
  (:mod:`agreement.methods.classes`).
* **tags** (a set per rater and sample): α over the sets with the MASI
  distance (Passonneau 2006), and per tag α over its presence and absence.

Written to the dataset (``key`` is the run key):

==========================  =====================================================
``{key}_agreement``         per sample: observed agreement, the share of agreeing
                            pairs of raters (tags: 1 − mean MASI distance);
                            ``None`` with fewer than two ratings
``{key}_n_ratings``         per sample: raters who gave a class (or a tag set)
==========================  =====================================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

import fiftyone.core.labels as fol

from agreement.core.data import class_order
from agreement.core.ratings import class_ratings, tag_ratings
from agreement.fo.panel.label_explanations import class_explanations
from agreement.fo.panel.rater_tables import PARTNERS, Column, count_columns, partner_means, row_texts
from agreement.fo.planning.class_relabel import class_relabel
from agreement.fo.planning.plan_classes import class_agreement_planning
from agreement.fo.runs.declaration import FormValues, MethodDeclaration, Param, python_function
from agreement.fo.runs.method_spec import MethodHooks, MethodOutput, MethodSpec, RaterTable
from agreement.fo.runs.results import AgreementResults
from agreement.methods.classes.alpha import bootstrap_alpha, class_alpha
from agreement.methods.classes.diagnostics import (
    agreement_with_others_majority,
    class_difficulty,
    confusion_between_raters,
    pairwise,
    rater_vitality,
    sample_observed_agreement,
)
from agreement.methods.classes.sets import masi_alpha, per_class_alpha, sample_masi_agreement
from agreement.reporting.figures.base import count_text, is_finite, sig3
from agreement.reporting.figures.classes import class_bars, class_curves

__all__ = ["compute_class_agreement", "METHOD", "SPEC", "DECLARATION", "HOOKS", "RATER_COLUMNS", "reading_of",
           "scale_values"]

METHOD = "iaa.class_agreement"
READINGS = ("auto", "classes", "tags")


def reading_of(read, labels: str) -> str:
    """``"classes"`` or ``"tags"``: as asked, or (``"auto"``) ``Classification`` fields as classes,
    ``Classifications`` per rater as tags, one ``Classifications`` field with a rater attribute as classes
    when no rater gave two labels on one sample, else as tags."""
    if labels != "auto":
        return labels
    kind = read.layout.get("label_type")
    if kind == "Classification":
        return "classes"
    if read.layout.get("layout") == "fields":
        return "tags"
    data = read.annotations
    return "tags" if len(data) and np.diff(data.offsets).max() > 1 else "classes"


def scale_values(classes: tuple, level: str, order: list | None) -> tuple[tuple, np.ndarray | None]:
    """The class order and, for ``interval`` and ``ratio``, the number of each class.

    ``nominal``: the classes as read (or ``order``). ``ordinal``: ``order`` (lowest first), or the classes
    sorted as numbers when every class name is one; else refused. ``interval``: every class name a number;
    ``ratio``: every class name a number ``>= 0`` (a ratio scale has an absolute zero).

    Raises:
        ValueError: a level that does not fit the classes, or an ``order`` that misses classes found.
    """
    numbers = {}
    for c in classes:
        try:
            numbers[c] = float(c)
        except (TypeError, ValueError):
            pass
    if order:
        missing = [c for c in classes if c not in order]
        if missing:
            raise ValueError(f"classes {missing} are labelled but not in the order given {order}; list every "
                             "class, lowest first")
        classes = tuple(order)
    if level in ("interval", "ratio"):
        words = [c for c in classes if c not in numbers or not math.isfinite(numbers[c])]
        if words:
            raise ValueError(f"level={level!r} needs numeric classes, but {words[:5]} are not numbers; use "
                             "level='ordinal' with classes=[...] lowest first, or 'nominal'")
        negative = [c for c in classes if level == "ratio" and numbers[c] < 0]
        if negative:
            raise ValueError(f"level='ratio' needs class values >= 0 (a ratio scale has an absolute zero), but "
                             f"{negative[:5]} are negative; use level='interval'")
        return classes, np.array([numbers[c] for c in classes])
    if level == "ordinal" and not order:
        if len(numbers) < len(classes):
            words = [c for c in classes if c not in numbers]
            raise ValueError(f"level='ordinal' needs the order of the classes {list(classes)}: give classes=[...] "
                             f"lowest first (the names {words[:5]} are not numbers to sort by)")
        classes = tuple(sorted(classes, key=lambda c: numbers[c]))
    return classes, None


def _check(read, params: dict) -> None:
    data = read.annotations
    rated = np.zeros(data.num_raters, dtype=np.int64)
    np.add.at(rated, data.rater_index, 1)
    silent = [r for r, n in zip(data.raters, rated, strict=True) if n == 0]
    if silent:
        where = read.layout.get("fields") or read.layout.get("field")
        raise ValueError(f"rater(s) {silent} gave no label on the {data.num_samples} samples of the view (field(s) "
                         f"{where!r}): leave them out of the rater fields, or compute on the samples they labelled")


def _classes_output(read, params: dict, report) -> MethodOutput:
    data = read.annotations
    found = data.classes if data.classes is not None else class_order(data.labels.tolist())
    classes, values = scale_values(tuple(found), params["level"], params["classes"])
    ratings = class_ratings(read.annotations, classes=classes)
    codes, level, K = ratings.codes, params["level"], len(classes)
    kw = dict(level=level, values=values, n_classes=K, orientation="units_by_raters")  # read (samples, raters)
    res = class_alpha(codes, **kw)
    report(0.3, "bootstrap interval")
    low, high = (bootstrap_alpha(codes, n_boot=params["bootstrap"], seed=params["seed"], **kw)
                 if params["bootstrap"] and math.isfinite(res.alpha) else (None, None))
    report(0.6, "raters, pairs and classes")
    agreement = sample_observed_agreement(codes, n_classes=K, orientation="units_by_raters")
    vitality = rater_vitality(codes, **kw)
    difficulty = class_difficulty(codes, n_classes=K, orientation="units_by_raters")
    majority, n_majority = agreement_with_others_majority(codes, n_classes=K, orientation="units_by_raters")
    summary = {
        "alpha": res.alpha, "alpha_low": low, "alpha_high": high, "reason": res.reason,
        "observed_disagreement": res.observed, "expected_disagreement": res.expected,
        "n_pairable": int(res.n_pairable), "n_units": int(res.n_units),
        "mean_agreement": float(np.nanmean(agreement)) if np.isfinite(agreement).any() else None,
        "level": level, "read_as": "classes", "n_raters": len(ratings.raters), "n_classes": K,
    }
    detail = {
        "classes": list(classes),
        "rater_vitality": {"raters": list(ratings.raters), "alpha": res.alpha,
                           "alpha_without": res.alpha - vitality, "vitality": vitality,
                           "reason": ["" if np.isfinite(v) else "alpha undefined without the rater"
                                      for v in vitality]},
        "class_match": {"classes": list(classes), "match_rate": difficulty.match_rate,
                        "n_values": difficulty.n_values},
        "confusion": {"classes": list(classes), "matrix": confusion_between_raters(codes, n_classes=K,
                                                                                   orientation="units_by_raters")},
        "rater_pairs": pairwise(codes, raters=ratings.raters, **kw).to_columns(arrays=True),
        "rater_majority": {"raters": list(ratings.raters), "agreement": majority, "n_samples": n_majority},
    }
    n = (codes >= 0).sum(axis=1)
    return MethodOutput(summary, detail, sample_values={"agreement": agreement, "n_ratings": n.astype(int)})


def _tags_output(read, params: dict, report) -> MethodOutput:
    ratings = tag_ratings(read.annotations, classes=params["classes"] or None)
    res = masi_alpha(ratings.present, ratings.rated)
    report(0.5, "per tag")
    per_tag = per_class_alpha(ratings.present, ratings.rated)
    agreement = sample_masi_agreement(ratings.present, ratings.rated)
    summary = {
        "alpha": res.alpha, "alpha_low": None, "alpha_high": None, "reason": res.reason,
        "observed_disagreement": res.observed, "expected_disagreement": res.expected,
        "n_pairable": int(res.n_pairable), "n_units": int(res.n_units),
        "mean_agreement": float(np.nanmean(agreement)) if np.isfinite(agreement).any() else None,
        "level": "masi", "read_as": "tags", "n_raters": len(ratings.raters), "n_classes": len(ratings.classes),
    }
    detail = {"classes": list(ratings.classes),
              "tag_alpha": {"classes": list(ratings.classes), "alpha": per_tag.alpha,
                            "reason": [str(r) for r in per_tag.reason]}}
    n = ratings.rated.sum(axis=1)
    return MethodOutput(summary, detail, sample_values={"agreement": agreement, "n_ratings": n.astype(int)})


def _compute(read, params: dict, report, extra: dict) -> MethodOutput:
    report(0.0, "reliability matrix and alpha")
    if reading_of(read, params["labels"]) == "tags":
        if params["level"] != "nominal":
            raise ValueError(f"level={params['level']!r} applies to classes; tag sets are compared with the MASI "
                             "distance (leave level='nominal')")
        return _tags_output(read, params, report)
    return _classes_output(read, params, report)


SPEC = MethodSpec(
    method=METHOD,
    sample_suffixes=("agreement", "n_ratings"),
    label_suffixes=(),
    compute=_compute,
    check=_check,
)

#: The panel's view of its runs (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`).
VIEW = {
    "title": "Class agreement",
    "score_suffix": "agreement",
    "score_label": "share of agreeing rater pairs on the sample",
    "score_axis": "observed agreement of the sample (1 = all raters agree)",
    "score_name": "agreement",
    "score_range": lambda params: (0.0, 1.0),
    "cards": [
        {"key": "alpha", "label": "Krippendorff's α", "reason": "reason", "lo": "alpha_low", "hi": "alpha_high",
         "interval": "95% bootstrap interval"},
        {"key": "mean_agreement", "label": "mean observed agreement"},
        {"key": "level", "label": "level of measurement"},
        {"key": "n_units", "label": "samples with two or more ratings", "integer": True},
    ],
    "pair_matrix": ("kappa", "Cohen's κ per rater pair"),
    "pair_value": "κ",
    "view_labels": ("mean observed agreement", "samples with fewer than two ratings"),
    "bars": lambda detail, info: class_bars(detail, info=info),
    "curves": lambda detail, info: class_curves(detail, info=info),
}


def _numbers(classes) -> dict:
    """The classes whose names are finite numbers, with their value."""
    out = {}
    for c in classes:
        try:
            value = float(c)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value):
            out[c] = value
    return out


def _recorded_order(samples, names: list, found: set) -> list | None:
    """The class list the dataset records for the rater fields (``dataset.classes``, else
    ``default_classes``; e.g. an import's categories, lowest first) when it holds every class found."""
    dataset = samples._root_dataset
    for order in [*(dataset.classes.get(n) for n in names), dataset.default_classes]:
        if order and found <= set(order):
            return [str(c) for c in order]
    return None


def class_order_form(samples, layout: Mapping[str, Any], params: Mapping[str, Any]) -> FormValues:
    """What the form offers for ``classes`` (:attr:`agreement.fo.runs.declaration.Param.form_values`): the classes
    found in the rater fields, lowest first where the data tells the order (the order the dataset records,
    else numeric order of numeric names; then filled in), and why the run would refuse the order given so far
    at the level chosen (:func:`scale_values`), in the form's words."""
    from agreement.fo.storage.label_schema import field_label_type, label_list_path

    names = list(layout.get("fields") or [layout["field"]])
    found: set[str] = set()
    for name in names:
        path = f"{label_list_path(name, field_label_type(samples, name))}.label"
        found.update(str(v) for v in samples.distinct(path) if v is not None)
    numbers = _numbers(found)
    default = _recorded_order(samples, names, found) or (
        sorted(found, key=numbers.__getitem__) if found and len(numbers) == len(found) else None)
    given = list(params.get("classes") or []) or default
    level, problem = params.get("level") or "nominal", None
    if not given and level == "ordinal" and found:
        problem = (f"level 'ordinal' needs the order of the classes: pick all {len(found)} "
                   f"({', '.join(class_order(found))}) lowest first")
    else:
        try:
            scale_values(class_order(found), level, given)
        except ValueError as e:
            problem = str(e)
    return FormValues(tuple(default or class_order(found)), default, problem)


class ClassAgreementResults(AgreementResults):
    """Class agreement: ``alpha`` (Krippendorff's, at ``level``) with ``alpha_low``/``alpha_high`` (bootstrap),
    ``mean_agreement``; ``detail``: rater vitality, rater pairs (κ, α, observed agreement), class difficulty,
    the confusion between raters, per-tag α for tags."""

    view = VIEW


#: The columns of its rater table, the default sort column first.
RATER_COLUMNS = (
    Column("vitality", "vitality", description="α minus α without the rater (< 0: the rater lowers agreement)"),
    Column("alpha_without", "α without", False, description="α without the rater"),
    Column("pair_kappa", "mean κ", description="Cohen's κ with its partners, weighted by their shared samples"),
    Column("partner_agreement", "agrees",
           description="share of the shared samples where it and a partner gave the same class (pooled over "
                       "its pairs)"),
    Column("majority_agreement", "with majority",
           description="share of its samples where it gave the majority class of the other raters (ties "
                       "shared)"),
    PARTNERS,
) + count_columns("the classes it gave")


def _rater_rows(samples, info: dict, detail: dict) -> list[dict] | None:
    """A class agreement run's raters: vitality and α without them (``detail["rater_vitality"]``), their
    mean κ and pooled observed agreement with their partners (``detail["rater_pairs"]``, weighted by shared
    samples), partners, labels and samples; ``None`` without vitality."""
    from agreement.fo.panel.rater_counts import rater_label_counts

    vit = detail.get("rater_vitality") or {}
    if not vit.get("raters"):
        return None
    counts = rater_label_counts(samples, info)
    vitality = dict(zip(vit.get("raters") or [], vit.get("vitality") or [], strict=False))
    without = dict(zip(vit.get("raters") or [], vit.get("alpha_without") or [], strict=False))
    records = list(detail.get("rater_pairs") or [])
    kappa = partner_means(records, "kappa", "n_shared_samples")
    agree = partner_means(records, "observed_agreement", "n_shared_samples")
    maj = detail.get("rater_majority") or {}
    majority = dict(zip(maj.get("raters") or [], maj.get("agreement") or [], strict=False))
    rows = []
    for r in (str(x) for x in detail.get("raters") or []):
        k, a = kappa.get(r), agree.get(r)
        row = {"rater": r, "vitality": vitality.get(r), "alpha_without": without.get(r),
               "pair_kappa": k["num"] / k["den"] if k and k["den"] else None,
               "partner_agreement": a["num"] / a["den"] if a and a["den"] else None,
               "majority_agreement": majority.get(r),
               "n_partners": k["n"] if k else None,
               "n_labels": (counts.get(r) or {}).get("labels"), "n_samples": (counts.get(r) or {}).get("samples")}
        rows.append(row_texts(row, RATER_COLUMNS))
    return rows


def _class_pair_note(records: list, value: str) -> str:
    """What a class run's heatmap cells are, and its lowest pair (the pooled α counts every rater at once)."""
    text = ("Each cell is Cohen's κ of two raters on the samples both rated (1 = always the same class, 0 = as "
            "often as chance); the headline α pools all raters. An empty cell: the two never rated a sample "
            "together (no data).")
    defined = [r for r in records if is_finite(r.get(value))]
    if defined:
        low = min(defined, key=lambda r: (float(r[value]), str(r["rater_a"]), str(r["rater_b"])))
        text += (f" Lowest pair: {low['rater_a']} × {low['rater_b']}, κ {sig3(low[value])} on "
                 f"{count_text(int(low.get('n_shared_samples') or 0), what='shared sample')}.")
    return text


def _contradicted(samples, info: dict, rater: str):
    from agreement.fo.views.disagreements import class_rater_disagreement_view

    return class_rater_disagreement_view(samples, info["key"], rater)


def _disputed(samples, info: dict, label_class: str):
    from agreement.fo.views.disagreements import class_dispute_view

    return class_dispute_view(samples, info["key"], label_class)


#: What its runs show beside the view (:class:`agreement.fo.runs.method_spec.MethodHooks`): one class per sample, so
#: its drill-downs by rater or class are samples, and its heatmap's note is about κ, not objects.
HOOKS = MethodHooks(
    rater_tables=(RaterTable(METHOD, RATER_COLUMNS, "**Raters** (whole run)", _rater_rows),),
    pooled_key="alpha",
    pair_note=lambda records, name, value_name, *_: _class_pair_note(records, name),
    explain_labels=lambda sample, info, labels: class_explanations(labels),
    unmatched_view=_contradicted,
    class_view=_disputed,
    drills_samples=True,
    relabel=class_relabel,
    planning=partial(class_agreement_planning, scale_values=scale_values),
)


DECLARATION = MethodDeclaration(
    operator="compute_class_agreement",
    label="Annotator Agreement: classes and tags",
    description="Krippendorff's alpha on image-level classes (nominal, ordinal, interval, ratio) or tag sets (MASI), "
                "with rater, pair and class diagnostics",
    spec=SPEC,
    results_cls=ClassAgreementResults,
    params=(
        Param("labels", str, "auto", "Read labels as",
              "classes: one class per rater and sample; tags: a set per rater and sample; auto: Classification "
              "fields as classes, Classifications per rater as tags, one Classifications field with a rater "
              "attribute as classes unless a rater gave two labels on a sample", choices=READINGS),
        Param("level", str, "nominal", "Level of measurement",
              "nominal: classes are names; ordinal: ordered (give their order, or numeric names); interval: "
              "numeric class names; ratio: numeric class names >= 0 with an absolute zero (distance "
              "((c - k)/(c + k))^2)", choices=("nominal", "ordinal", "interval", "ratio"), radio=True),
        Param("classes", list, None, "Class order (lowest first)",
              "Every class, lowest first: the order of an ordinal scale (default: numeric order of numeric class "
              "names, else as found; level='ordinal' with other names needs it)", item=str,
              show_if=lambda p: (p.get("level") or "nominal") != "nominal", form_values=class_order_form),
        Param("bootstrap", int, 1000, "Bootstrap resamples",
              "Resamples of the samples for the 95% interval of α (0: none)", low=0),
        Param("seed", int, 0, "Seed", "Seed of the bootstrap", low=0),
    ),
    outputs=(("alpha", "Krippendorff's alpha", "float"), ("alpha_low", "95% interval, low", "float"),
             ("alpha_high", "95% interval, high", "float"), ("mean_agreement", "Mean observed agreement", "float"),
             ("read_as", "Read as", "str")),
    key_prefix="classes",
    streams=False,
    label_types=(fol.Classification, fol.Classifications),
    hooks=HOOKS,
)

#: ``compute_class_agreement(samples, key, *, fields=..., level="nominal", bootstrap=1000, ...)``: Krippendorff's α
#: on image-level classes or tag sets, stored as run ``key``; returns ``alpha``, ``alpha_low``, ``alpha_high``,
#: ``reason``, ``mean_agreement``, ``n_units``, ``level``, ``read_as``.
compute_class_agreement = python_function(DECLARATION)
