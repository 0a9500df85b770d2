"""Agreement runs exported as files, for the people who never open the App.

:func:`export_agreement_report` writes, for each run:

* ``<key>.json``: the run (method, parameters, input layout, fields written,
  timestamp) and its full results (``summary`` and ``detail``), as saved
  with the run; NaN is ``null``;
* ``<key>_raters.csv``: one row per rater with every per-rater column the
  run has (e.g. KαLOS's ``vitality``, box repairs per rater);
* ``<key>_pairs.csv``: one row per rater pair (``detail["rater_pairs"]``);
* ``<key>_classes.csv``: one row per class, where the run has them;
* ``<key>_samples.csv``: one row per sample: id, file path and the run's
  per-sample fields.

A table the run does not have is not written (the returned dict lists what
was). Numbers are written as Python prints them (``repr``), undefined ones
as an empty cell.
"""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Any, Iterable, Sequence

from agreement.fo.runs import get_agreement_run_info, list_agreement_runs, load_agreement_results, to_json

__all__ = ["export_agreement_report", "run_tables"]

_ROW_KEYS = {"raters": "rater", "classes": "class"}


def _cell(v: Any) -> Any:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return v


def _column_tables(detail: dict, index: str) -> dict[str, dict]:
    """Column-oriented blocks of ``detail`` indexed by ``index`` (``"raters"`` or ``"classes"``):
    ``{"block.column": {row name: value}}``."""
    columns: dict[str, dict] = {}
    for block, value in detail.items():
        if not isinstance(value, dict) or not isinstance(value.get(index), list):
            continue
        rows = [str(r) for r in value[index]]
        for col, vals in value.items():
            if col != index and isinstance(vals, list) and len(vals) == len(rows):
                columns[f"{block}.{col}"] = dict(zip(rows, vals))
    return columns


def _per_rater_dicts(detail: dict, raters: Sequence[str]) -> dict[str, dict]:
    """``{rater: {...}}`` blocks (e.g. ``repairs.per_rater``), flattened to ``"block.key"`` columns."""
    columns: dict[str, dict] = {}
    candidates = [(k, v) for k, v in detail.items() if isinstance(v, dict)]
    candidates += [(f"{k}.per_rater", v["per_rater"]) for k, v in detail.items()
                   if isinstance(v, dict) and isinstance(v.get("per_rater"), dict)]
    for block, value in candidates:
        if not value or not set(value) <= set(raters):
            continue
        for rater, entry in value.items():
            items = entry.items() if isinstance(entry, dict) else [("value", entry)]
            for col, v in items:
                columns.setdefault(f"{block}.{col}", {})[rater] = v
    return columns


def run_tables(results: dict) -> dict[str, list[dict]]:
    """The per-rater, per-pair and per-class tables of a run's results, as lists of row dicts."""
    detail = results.get("detail") or {}
    tables: dict[str, list[dict]] = {}
    raters = [str(r) for r in detail.get("raters") or []]
    columns = {**_column_tables(detail, "raters"), **_per_rater_dicts(detail, raters)}
    if raters:
        tables["raters"] = [{"rater": r, **{c: vals.get(r) for c, vals in columns.items()}} for r in raters]
    pairs = detail.get("rater_pairs")
    if isinstance(pairs, list) and pairs and all(isinstance(p, dict) for p in pairs):
        tables["pairs"] = [dict(p) for p in pairs]
    classes = _column_tables(detail, "classes")
    if classes:
        names = list(next(iter(classes.values())))
        tables["classes"] = [{"class": c, **{col: vals.get(c) for col, vals in classes.items()}} for c in names]
    return tables


def _write_csv(path: str, rows: list[dict]) -> None:
    header = list(dict.fromkeys(k for row in rows for k in row))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in header})


def _sample_rows(samples, fields: Sequence[str]) -> list[dict]:
    present = [f for f in fields if f in samples._root_dataset.get_field_schema()]
    ids, paths, *values = samples.values(["id", "filepath", *present])
    return [{"sample_id": i, "filepath": p, **{f: v[k] for f, v in zip(present, values)}}
            for k, (i, p) in enumerate(zip(ids, paths))]


def export_agreement_report(
    samples,
    output_dir: str | os.PathLike,
    keys: str | Iterable[str] | None = None,
    samples_csv: bool = True,
) -> dict:
    """Writes each run's JSON and CSV tables into ``output_dir`` (created if needed).

    Args:
        samples: the dataset (or a view of it: the per-sample table then
            holds only its samples; the run results are the whole run's).
        output_dir: the folder for the files.
        keys: a run key, several, or ``None`` for every agreement run.
        samples_csv: also write the per-sample table.

    Returns:
        ``{"output_dir", "runs": {key: {"json", "raters", "pairs", ...: path}}}``.

    Raises:
        agreement.fo.runs.RunError: a key that is not an agreement run of the dataset.
        ValueError: no runs to export.
    """
    keys = [keys] if isinstance(keys, str) else list(keys or list_agreement_runs(samples))
    if not keys:
        raise ValueError(f"dataset {samples._root_dataset.name!r} has no agreement runs to export")
    infos = {k: get_agreement_run_info(samples, k) for k in keys}  # checks every key before writing
    out_dir = os.fspath(output_dir)
    os.makedirs(out_dir, exist_ok=True)
    written: dict[str, dict] = {}
    for key in keys:
        results = load_agreement_results(samples, key)
        files = {"json": os.path.join(out_dir, f"{key}.json")}
        doc = {"dataset": samples._root_dataset.name, "run": infos[key], "results": to_json(results)}
        with open(files["json"], "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, allow_nan=False, default=str)
        for name, rows in run_tables(results).items():
            files[name] = os.path.join(out_dir, f"{key}_{name}.csv")
            _write_csv(files[name], rows)
        if samples_csv and infos[key]["sample_fields"]:
            files["samples"] = os.path.join(out_dir, f"{key}_samples.csv")
            _write_csv(files["samples"], _sample_rows(samples, infos[key]["sample_fields"]))
        written[key] = files
    return {"output_dir": out_dir, "runs": written}
