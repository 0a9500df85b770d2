"""The tidy tables of an agreement run's report: one row per rater, rater pair, class, sample, matrix cell.

Column names are plain snake_case words (``vitality``, ``alpha_without``,
``shared_samples``), never a path inside the run results; a count is an
integer, a score or any other real number is rounded to four significant
digits (:func:`round_value`); an undefined number is an empty cell with the
run's reason beside it (``reason`` columns); a matrix is a long table, one
row per cell. The per-rater numbers are those of the App panel's rater table
(:func:`agreement.fo.panel.raters.rater_table`), completed with every
other per-rater figure the run stores.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Sequence

import numpy as np

__all__ = ["round_value", "plain_name", "rater_rows", "pair_rows", "class_rows", "sample_rows", "confusion_rows",
           "curve_rows", "record_tables", "class_confusion_rows", "SIGNIFICANT_DIGITS"]

#: Real numbers in the tables are rounded to this many significant digits.
SIGNIFICANT_DIGITS = 4

# internal names a lead would not read, and what the tables call them
_RENAMES = {
    "n_shared_samples": "shared_samples", "n_shared": "shared_samples", "n_units": "units", "n_labels": "labels",
    "n_samples": "samples", "n_partners": "partners", "n_cross_pairs": "chance_pairs", "alpha_ot_se": "alpha_ot_se",
    "expected_cost_se": "expected_cost_se", "exact": "exact_chance_baseline", "pair_alpha": "pair_alpha_ot",
    "partner_agreement": "agrees_with_partners", "majority_agreement": "agrees_with_majority",
    "false_positive_rate": "false_positives_per_sample", "agreement": "agrees_with_consensus",
    "rater_sensitivity": "sensitivity", "rater_specificity": "specificity", "n_agree": "agreeing_units",
    "n_review": "flagged_for_review",
}
_COUNT_PREFIXES = ("n_",)
# per-rater or per-class lists that are orders, not figures
_NOT_FIGURES = {"rater_order"}
_COUNT_NAMES = {"shared_samples", "units", "labels", "samples", "partners", "chance_pairs", "agreeing_units",
                "exact_chance_baseline", "consensus_labels", "flagged_for_review", "rank"}


def round_value(value: Any, *, count: bool = False) -> Any:
    """A cell: ``None`` / NaN / ±inf → ``None`` (an empty cell); a count (``count``, within 1e-6 of a whole number)
    or an ``int`` → ``int``;
    a real number → rounded to :data:`SIGNIFICANT_DIGITS` significant digits (0.6000000000000001 → 0.6);
    anything else unchanged."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            return None
        if count and abs(v - round(v)) < 1e-6:  # a count summed in floating point (30.999999999999996)
            return int(round(v))
        return float(f"{v:.{SIGNIFICANT_DIGITS}g}")
    return value


def plain_name(name: str, *, block: str = "") -> str:
    """A plain snake_case column name for a value ``name`` of results block ``block`` (``reason`` of a block
    becomes ``<block>_reason``; internal count names lose their ``n_``)."""
    if name == "agreement" and block.startswith("rater_") and block != "rater_report":
        name = f"{block[len('rater_'):]}_agreement"  # rater_majority.agreement: agreement with the majority
    name = _RENAMES.get(name, name)
    if name == "reason" and block:
        base = re.sub(r"^(rater_|class_)", "", block)
        name = f"{base}_reason"
    elif name.startswith(_COUNT_PREFIXES):
        name = name[2:]
        _DERIVED_COUNTS.add(name)
    return re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_").lower()


_DERIVED_COUNTS: set[str] = set()  # names the run stored as n_<name>: counts


def _is_count(name: str) -> bool:
    return name in _COUNT_NAMES or name in _DERIVED_COUNTS


def _tidy(row: dict) -> dict:
    return {k: round_value(v, count=_is_count(k)) for k, v in row.items()}


def _column_blocks(detail: dict, index: str) -> dict[str, dict]:
    """Blocks of ``detail`` indexed by the list ``index`` (``"raters"``, ``"classes"``): plain column name →
    ``{row name: value}`` (lists of indices such as ``hardest_first`` become a ``difficulty_rank`` column)."""
    columns: dict[str, dict] = {}
    for block, value in detail.items():
        if not isinstance(value, dict) or not isinstance(value.get(index), list):
            continue
        rows = [str(r) for r in value[index]]
        for col, vals in value.items():
            if col == index or not isinstance(vals, list) or len(vals) != len(rows):
                continue
            if col == "hardest_first":
                columns["difficulty_rank"] = {rows[int(i)]: k + 1 for k, i in enumerate(vals)}
                continue
            if any(isinstance(v, (list, dict)) for v in vals):
                continue
            columns.setdefault(plain_name(col, block=block), dict(zip(rows, vals, strict=False)))
    return columns


def rater_rows(detail: dict, *, panel_rows: Sequence[dict] | None = None) -> list[dict]:
    """One row per rater: the panel's rater table (``panel_rows``), then every per-rater list and per-rater
    number of ``detail`` not already there (e.g. KαLOS's ``vitality_reason``, box repairs per rater), and
    per-rater vectors stored at the top level (``rater_sensitivity``)."""
    raters = [str(r) for r in detail.get("raters") or []]
    panel = {str(r["rater"]): r for r in panel_rows or []}
    raters += [r for r in panel if r not in raters]
    if not raters:
        return []
    columns = _column_blocks(detail, "raters")
    for k, v in detail.items():  # per-rater vectors at the top level (mask consensus)
        if k != "raters" and k not in _NOT_FIGURES and isinstance(v, list) and len(v) == len(detail.get("raters") or []) and v \
                and all(x is None or isinstance(x, (int, float)) for x in v):
            columns.setdefault(plain_name(k), dict(zip(raters, v, strict=False)))
    for block, value in detail.items():  # {rater: {...}} blocks (consensus rater report, repairs per rater)
        per = value.get("per_rater") if isinstance(value, dict) and isinstance(value.get("per_rater"), dict) else value
        if not isinstance(per, dict) or not per or not set(map(str, per)) <= set(raters):
            continue
        for rater, entry in per.items():
            for col, v in (entry.items() if isinstance(entry, dict) else [("value", entry)]):
                if not isinstance(v, (list, dict)):
                    name = plain_name(col) if block == "rater_report" else plain_name(f"{block}_{col}")
                    columns.setdefault(name, {})[str(rater)] = v
    out = []
    for r in raters:
        row: dict[str, Any] = {"rater": r}
        for k, v in (panel.get(r) or {}).items():
            if k not in ("rater", "text") and not isinstance(v, (list, dict)):
                row[plain_name(k)] = v
        for name, vals in columns.items():
            row.setdefault(name, vals.get(r))
        out.append(_tidy(row))
    return out


def pair_rows(detail: dict) -> list[dict]:
    """One row per rater pair (``detail["rater_pairs"]``): ``rater_a``, ``rater_b`` and every value the run
    stores per pair; a pair that shares no sample is absent (no data)."""
    pairs = detail.get("rater_pairs")
    if isinstance(pairs, dict) and pairs and all(isinstance(v, list) for v in pairs.values()):  # stored as columns
        n = len(next(iter(pairs.values())))
        pairs = [{k: v[i] for k, v in pairs.items()} for i in range(n)]
    if not isinstance(pairs, list) or not all(isinstance(p, dict) for p in pairs):
        return []
    return [_tidy({plain_name(k): v for k, v in p.items() if not isinstance(v, (list, dict))}) for p in pairs]


def class_rows(detail: dict, *, mask_rows: Sequence[dict] | None = None) -> list[dict]:
    """One row per class: every per-class value of ``detail`` (KαLOS's class difficulty, a class run's
    per-class α and vitality), or a semantic mask run's class rows (:func:`agreement.reporting.figures.masks.class_rows`)."""
    if mask_rows:
        return [_tidy({"class": r["name"], "class_value": r["value"], "alpha": r["alpha"],
                       "alpha_reason": r["reason"], "dice": r["dice"], "iou": r["iou"],
                       "boundary_f1": r["boundary_f1"]}) for r in mask_rows]
    columns = _column_blocks(detail, "classes")
    if not columns:
        return []
    names = list(dict.fromkeys(c for vals in columns.values() for c in vals))
    rows = [_tidy({"class": c, **{col: vals.get(c) for col, vals in columns.items()}}) for c in names]
    if any(r.get("difficulty_rank") is not None for r in rows):
        rows.sort(key=lambda r: (r.get("difficulty_rank") is None, r.get("difficulty_rank") or 0, r["class"]))
    return rows


def sample_rows(ids: Sequence[str], paths: Sequence[str], values: dict[str, Sequence], reasons: dict[str, str],
                score: str | None) -> list[dict]:
    """One row per sample: ``sample_id``, ``file_name``, ``filepath``, then each per-sample value (plain names,
    see :func:`round_value`), and ``reason`` where ``score`` (the run's score column) is empty: the run's reason
    for the sample, or ``"not in the run"``."""
    rows = []
    for k, (sid, path) in enumerate(zip(ids, paths, strict=False)):
        row = {"sample_id": str(sid), "file_name": os.path.basename(str(path)), "filepath": str(path)}
        for name, vals in values.items():
            row[name] = round_value(vals[k], count=_is_count(name))
        if score is not None:
            row["reason"] = "" if row.get(score) is not None else (reasons.get(str(sid)) or "not scored by the run")
        rows.append(row)
    return rows


def confusion_rows(detail: dict) -> list[dict]:
    """A consensus run's class confusion of every rater as a long table: ``rater``, ``consensus_class``,
    ``rater_class``, ``probability`` (P(rater's class | consensus class); entries the run did not store, below
    0.001, are absent)."""
    rows = []
    for rater, entry in (detail.get("rater_report") or {}).items():
        for truth, row in ((entry or {}).get("confusion") or {}).items():
            for said, p in (row or {}).items():
                rows.append(_tidy({"rater": str(rater), "consensus_class": str(truth), "rater_class": str(said),
                                   "probability": p}))
    return rows


def class_confusion_rows(detail: dict) -> list[dict]:
    """A class agreement run's confusion between raters as a long table: ``class``, ``other_rater_class``,
    ``probability`` (P(another rater's class | one rater's class), one row per cell)."""
    c = detail.get("confusion") or {}
    classes, matrix = c.get("classes") or [], c.get("matrix") or []
    return [_tidy({"class": str(a), "other_rater_class": str(b), "probability": p})
            for a, row in zip(classes, matrix, strict=False) for b, p in zip(classes, row or [], strict=False)]


def curve_rows(detail: dict) -> list[dict]:
    """KαLOS's α-versus-τ curve as a table: ``tau``, ``global_alpha``, ``mean_alpha``, ``undefined_samples``,
    ``units``."""
    c = detail.get("sensitivity_curve") or {}
    taus = c.get("taus") or []
    names = {"global_alpha": "global_alpha", "mean_alpha": "mean_alpha", "n_undefined": "undefined_samples",
             "n_units": "units"}
    return [_tidy({"tau": t, **{n: (c.get(k) or [None] * len(taus))[i] for k, n in names.items()}})
            for i, t in enumerate(taus)]


def record_tables(detail: dict, *, skip: Sequence[str] = ("rater_pairs",)) -> dict[str, list[dict]]:
    """Other lists of records in ``detail`` (e.g. a mask run's ``pair_class_dice``), one long table each, named
    after the block."""
    out = {}
    for block, value in detail.items():
        if block in skip or not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
            continue
        out[plain_name(block)] = [_tidy({plain_name(k): v for k, v in rec.items() if not isinstance(v, (list, dict))})
                                  for rec in value]
    return out
