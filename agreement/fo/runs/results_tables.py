"""A run's results as tables (:meth:`agreement.fo.runs.results.AgreementResults.to_pandas`).

Three tables, one row each per rater, per rater pair and per sample, with the
plain column names of the report's CSV files (:mod:`agreement.reporting.tables`):

* ``"raters"``: the rows of the panel's rater table (the method's
  :class:`agreement.fo.runs.method_spec.RaterTable`), then every other
  per-rater number of the results (``raters.csv`` of the report);
* ``"pairs"``: every value the run stores per rater pair (``rater_pairs.csv``);
* ``"samples"``: ``sample_id``, ``filepath``, then each per-sample field the run
  wrote (by its field name; a label field as its number of labels, one label as
  its class), read with one ``values()`` call per field, and ``reason``: why the
  run gives the sample no value, where it lists one.
"""

from __future__ import annotations

from typing import Any

import fiftyone.core.labels as fol

from agreement.reporting.tables import pair_rows, rater_rows

__all__ = ["TABLES", "table_rows", "run_info"]

#: The tables a run's results convert to.
TABLES = ("raters", "pairs", "samples")


def run_info(results: Any) -> dict:
    """What the panel's table builders read of a run (:func:`agreement.fo.runs.store.get_agreement_run_info`),
    from the results' config."""
    cfg = results.config
    run = results.samples._root_dataset.get_run_info(results.key)
    return {"key": results.key, "method": getattr(cfg, "method", None), "timestamp": str(run.timestamp),
            "status": getattr(cfg, "status", "complete"),
            "params": dict(getattr(cfg, "params", {}) or {}), "input": dict(getattr(cfg, "input", {}) or {}),
            "sample_fields": list(getattr(cfg, "sample_fields", []) or []),
            "label_attrs": [list(x) for x in (getattr(cfg, "label_attrs", []) or [])],
            "frame_fields": list(getattr(cfg, "frame_fields", []) or [])}


def _rater_table(results: Any, hooks: Any) -> list[dict]:
    table = hooks.rater_table_of(results.detail) if hooks is not None else None
    panel = (table.rows(results.samples, run_info(results), results.detail) or []) if table is not None else []
    return rater_rows(results.detail, panel_rows=panel)


def _label_values(samples: Any, field: str, doc: type) -> list:
    list_attr = getattr(doc, "_LABEL_LIST_FIELD", None)
    if list_attr is None:  # one label per sample: its class
        return samples.values(f"{field}.label")
    return [None if r is None else len(r) for r in samples.values(f"{field}.{list_attr}.id")]


def _sample_table(results: Any) -> list[dict]:
    samples = results.samples
    schema = samples.get_field_schema()
    fields = [f for f in run_info(results)["sample_fields"] if f in schema]
    ids, paths = samples.values(["id", "filepath"])
    columns: dict[str, list] = {}
    for f in fields:
        doc = getattr(schema[f], "document_type", None)
        if isinstance(doc, type) and issubclass(doc, fol.Label):
            columns[f] = _label_values(samples, f, doc)
        else:
            columns[f] = samples.values(f)
    reasons = {str(k): str(v) for k, v in (results.detail.get("undefined_samples") or {}).items()}
    return [{"sample_id": sid, "filepath": path, **{f: vals[i] for f, vals in columns.items()},
             "reason": reasons.get(sid)} for i, (sid, path) in enumerate(zip(ids, paths, strict=True))]


def table_rows(results: Any, table: str, *, hooks: Any = None) -> list[dict]:
    """The rows of one of :data:`TABLES` (see the module docstring).

    Args:
        results: an :class:`agreement.fo.runs.results.AgreementResults`.
        table: ``"raters"``, ``"pairs"`` or ``"samples"``.
        hooks: the method's :class:`agreement.fo.runs.method_spec.MethodHooks` (its rater table); ``None``: the
            results' own per-rater numbers only.

    Returns:
        One dict per row.

    Raises:
        ValueError: ``table`` is none of :data:`TABLES`.
    """
    if table == "raters":
        return _rater_table(results, hooks)
    if table == "pairs":
        return pair_rows(results.detail)
    if table == "samples":
        return _sample_table(results)
    raise ValueError(f"run {results.key!r}: no table {table!r}; to_pandas() gives {', '.join(map(repr, TABLES))}")
