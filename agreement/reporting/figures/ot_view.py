"""αOT of a subset of an OT run's samples (the App's current view), against the whole run's chance level.

Part of OT agreement's panel (:mod:`agreement.fo.methods.ot_agreement`): its view cards and its rater-pair
heatmap recomputed on the view. Plain numbers, no FiftyOne.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agreement.reporting.figures.base import is_finite

__all__ = ["view_alpha_ot"]


def view_alpha_ot(pair_scores: dict, records: list[dict], ids: set | None) -> dict:
    """αOT of a subset of samples against the run's chance baseline.

    ``D_o`` is the mean OT cost ``1 - score`` over the subset's (sample, rater
    pair) cells (``pair_sample_scores``); ``D_e`` is the run's chance cost,
    per pair (``expected_cost`` of its record) and overall (the
    ``n_cross_pairs``-weighted mean of the pairs', which is the run's ``D_e``).
    So ``1 - D_o / D_e`` is the run's αOT when ``ids`` is every sample, and on
    a subset says how far its samples agree above what the whole run's chance
    level would give (a subset's own chance level is not recomputed).

    Args:
        pair_scores: ``detail["pair_sample_scores"]`` (``"a|b"`` → sample id → score).
        records: ``detail["rater_pairs"]``.
        ids: the subset's sample ids (``None``: every sample).

    Returns:
        ``{"alpha", "observed_cost", "expected_cost", "n_cells", "pairs": {"a|b": {"alpha", "mean_ot",
        "n_samples"}}}`` (``alpha`` ``None`` where undefined).
    """
    by_pair: dict[str, dict[str, Any]] = {f"{r['rater_a']}|{r['rater_b']}": r for r in records}
    pairs, total, n_total, de_num, de_den = {}, 0.0, 0, 0.0, 0.0
    for name, scores in pair_scores.items():
        vals = [v for sid, v in scores.items() if v is not None and (ids is None or sid in ids)]
        rec: dict[str, Any] = by_pair.get(name) or by_pair.get("|".join(reversed(name.split("|")))) or {}
        de: Any = rec.get("expected_cost")
        if is_finite(de) and is_finite(rec.get("n_cross_pairs")):
            de_num += float(de) * float(rec["n_cross_pairs"])
            de_den += float(rec["n_cross_pairs"])
        if not vals:
            continue
        mean = float(np.mean(vals))
        total += float(np.sum(vals))
        n_total += len(vals)
        alpha = 1.0 - (1.0 - mean) / de if is_finite(de) and de > 0 else None
        pairs[name] = {"alpha": alpha, "mean_ot": mean, "n_samples": len(vals)}
    d_e = de_num / de_den if de_den > 0 else None
    d_o = 1.0 - total / n_total if n_total else None
    alpha = 1.0 - d_o / d_e if d_o is not None and d_e else None
    return {"alpha": alpha, "observed_cost": d_o, "expected_cost": d_e, "n_cells": n_total, "pairs": pairs}
