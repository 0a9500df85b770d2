"""Values a run wrote to a dataset, compared between two runs of the same method (the delegated-run tests)."""

from __future__ import annotations

import numpy as np


def written(ds, key: str) -> dict:
    """Every per-sample field and per-label attribute a run wrote, by its name without the key."""
    from agreement.fo.runs.store import get_agreement_run_info

    info = get_agreement_run_info(ds, key)
    out = {f[len(key):]: ds.values(f) for f in info["sample_fields"]}
    for field, attr in info["label_attrs"]:
        out[f"{field}.{attr[len(key):]}"] = ds.values(f"{field}.detections.{attr}")
    return out


def plain(value, key: str):
    """``value`` with labels as dicts without their ids, and names starting with the run ``key`` renamed (a
    consensus label carries ``<key>_review``), so that two runs' values compare."""
    if hasattr(value, "to_dict"):
        value = {k: v for k, v in value.to_dict().items() if k not in ("_id", "id")}
    if isinstance(value, dict):
        return {(("KEY" + k[len(key):]) if k.startswith(key + "_") else k): plain(v, key) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v, key) for v in value]
    return value


def shape(value):
    """Nested lists with each value replaced by whether it is ``None``."""
    return [shape(v) for v in value] if isinstance(value, list) else value is None


def same(a, b) -> bool:
    """Equal values, NaN equal to NaN, nested lists and dicts compared item by item."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (np.isnan(a) and np.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b
