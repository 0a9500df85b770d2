"""Per-rater and per-rater-pair counts of a run, read from the dataset (what the run results do not hold).

* :func:`rater_label_counts`: each rater's labels and assigned samples in the
  run (database aggregations), for the rater tables' minimum-labels filter;
* :func:`kalos_pair_counts`: for a KαLOS run, each rater pair's units (the
  objects either of the two drew on the samples both were given) and how
  many of them both drew alike, from the run's per-label ``{key}_unit``
  (:func:`agreement.reporting.pair_statistics.pair_unit_agreement`); their ``n_units``
  are the run's own per-pair ``n_units`` (tested), and they give each pair
  its observed agreement.

Both are whole-run numbers: the samples the run scored (those with its
per-sample fields), read again as the run read them (its recorded input).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from agreement.reporting.pair_statistics import pair_unit_agreement

__all__ = ["run_samples", "rater_label_counts", "kalos_pair_counts"]

_CACHE: "OrderedDict[tuple, dict]" = OrderedDict()
_CACHE_SIZE = 8


def _cached(samples, info: dict, what: str, compute):
    dataset = samples._root_dataset
    key = (what, dataset.name, str(dataset._doc.id), info["key"], info["timestamp"])
    hit = _CACHE.get(key)
    if hit is None:
        hit = _CACHE[key] = compute()
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return hit


def run_samples(samples, info: dict):
    """The samples of the whole run: the dataset's samples with any of the run's per-sample fields set."""
    from fiftyone import ViewField as F

    dataset = samples._root_dataset
    fields = list(info.get("sample_fields") or [])
    return dataset.match(F.any([F(f).exists() for f in fields])) if fields else dataset.view()


def _list_path(dataset, field: str) -> str:
    """The path of a rater field's labels (the field itself for one ``Classification`` per sample)."""
    from agreement.fo.storage.label_schema import label_list_path

    return label_list_path(field, dataset.get_field(field).document_type)


def rater_label_counts(samples, info: dict) -> dict[str, dict[str, int]]:
    """Rater → ``{"labels", "samples"}``: its labels and the samples it was assigned, in the whole run.

    Attribute layout: labels counted by the rater attribute, samples by the
    run's raters field (every run sample when the run assumed a fully
    crossed design). Fields layout: a rater's field's labels, and the samples
    where its field is set. Cached per run (dataset, key, timestamp).
    """
    return _cached(samples, info, "labels", lambda: _label_counts(run_samples(samples, info), info))


def _label_counts(view, info: dict) -> dict[str, dict[str, int]]:
    import fiftyone.core.aggregations as foa

    layout = info.get("input") or {}
    dataset = view._root_dataset
    out: dict[str, dict[str, int]] = {}
    if layout.get("layout") == "fields":
        fields = list(layout.get("fields") or [])
        aggs = [foa.Count(_list_path(dataset, f)) for f in fields] + [foa.Count(f) for f in fields]
        res = view.aggregate(aggs)
        for i, f in enumerate(fields):  # a frame field's rater is named without "frames." (its frames: samples)
            out[f[len("frames."):] if f.startswith("frames.") else f] = {"labels": int(res[i]),
                                                                         "samples": int(res[len(fields) + i])}
        return out
    field = layout["field"]
    attr = layout.get("rater_attr") or "annotator"
    aggs = [foa.CountValues(f"{_list_path(dataset, field)}.{attr}")]
    if layout.get("raters_field"):
        aggs.append(foa.CountValues(layout["raters_field"]))
    res = view.aggregate(aggs)
    n = len(view)
    per_sample = res[1] if len(res) > 1 else {}
    for r in set(res[0]) | set(per_sample):
        if r is None:
            continue
        out[str(r)] = {"labels": int(res[0].get(r, 0)),
                       "samples": int(per_sample.get(r, 0)) if layout.get("raters_field") else n}
    return out


def kalos_pair_counts(samples, info: dict) -> dict[str, dict[str, int]]:
    """``"a|b"`` (``a < b``) → ``{"n_shared", "n_units", "n_agree"}`` for every rater pair of KαLOS run
    ``info`` that shares a sample (see the module docstring). Cached per run."""
    return _cached(samples, info, "pairs", lambda: _pair_counts(run_samples(samples, info), info))


def _pair_counts(view, info: dict) -> dict[str, dict[str, int]]:
    from agreement.fo.panel.video_figures import is_frame_run
    from agreement.fo.storage.reading import read_annotations

    if is_frame_run(info):  # computed per frame: its samples are frames, read from the videos
        from agreement.fo.frames.counts import frame_pair_counts

        return frame_pair_counts(view, info)
    layout = info.get("input") or {}
    kw: dict[str, Any] = {"box_policy": layout.get("box_policy") or "clip", "min_raters": 2}
    if layout.get("layout") == "fields":
        read = read_annotations(view, fields=list(layout["fields"]), **kw)
    else:
        read = read_annotations(view, field=layout["field"], rater_attr=layout.get("rater_attr") or "annotator",
                                raters_field=layout.get("raters_field"),
                                assume_crossed=bool(layout.get("assumed_crossed")), **kw)
    data = read.annotations
    dataset = view._root_dataset
    unit_of: dict = {}
    for f in read.label_fields:
        ids, units = view.values([f"{_list_path(dataset, f)}.id", f"{_list_path(dataset, f)}.{info['key']}_unit"],
                                 unwind=True)
        unit_of.update(zip(ids, units, strict=False))
    units = np.array([-1 if unit_of.get(lid) is None else int(unit_of[lid]) for lid in data.label_ids], dtype=np.int64)
    _, codes = np.unique(np.asarray(data.labels, dtype=object).astype(str), return_inverse=True)
    ss, rr = np.nonzero(np.asarray(data.assigned, dtype=bool))
    res = pair_unit_agreement(assigned_sample=ss, assigned_rater=rr, label_sample=data.sample_index,
                              label_rater=data.rater_index, label_unit=units, label_code=codes.reshape(-1),
                              n_samples=data.num_samples, n_raters=data.num_raters)
    names = [str(r) for r in data.raters]
    out = {}
    for a, b, s, u, g in zip(res["a"].tolist(), res["b"].tolist(), res["n_shared"].tolist(), res["n_units"].tolist(),
                             res["n_agree"].tolist(), strict=True):
        x, y = sorted([names[a], names[b]])
        out[f"{x}|{y}"] = {"n_shared": s, "n_units": u, "n_agree": g}
    return out
