"""What the App panel shows, computed from run results any SDK user can load.

Every function here returns plain dicts and lists (plotly traces, cards), so
the panel stays thin and a notebook user gets the same figures with
``run_panel_data(dataset, key)``. Methods plug in through ``METHOD_VIEWS``:
which sample field is the per-sample score, which summary keys are headline
numbers, where the rater-pair matrix lives.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fiftyone import ViewField as F

from agreement.fo import runs

__all__ = ["METHOD_VIEWS", "run_panel_data", "score_histogram", "bin_view", "lowest_first_view", "PanelDataError"]


class PanelDataError(ValueError):
    """The run cannot be shown; the message says why and what to do."""


# per method: the per-sample score field suffix, headline cards (summary key,
# label, optional se / interval keys), and where the optional plots come from
METHOD_VIEWS: dict[str, dict[str, Any]] = {
    "iaa.ot_agreement": {
        "title": "OT agreement",
        "score_suffix": "ot",
        "score_label": "OT score (mean over rater pairs)",
        "score_range": lambda params: (1 - float(params.get("beta", 0.5)), 1.0),
        "cards": [
            {"key": "alpha_ot", "label": "αOT", "se": "alpha_ot_se", "reason": "alpha_ot_reason"},
            {"key": "mean_ot", "label": "mean OT score"},
            {"key": "f1", "label": "F1@IoU (baseline)"},
            {"key": "threshold_alpha", "label": "threshold α (baseline)", "reason": "threshold_alpha_reason"},
            {"key": "n_undefined", "label": "samples not scored", "integer": True},
        ],
        "pair_matrix": ("alpha_ot", "αOT per rater pair"),
    },
    "iaa.kalos": {
        "title": "KαLOS",
        "score_suffix": "alpha",
        "score_label": "Krippendorff's α of the sample",
        "score_range": lambda params: (-1.0, 1.0),
        "cards": [
            {"key": "global_alpha", "label": "global α (pooled)", "reason": "global_reason"},
            {"key": "mean_alpha", "label": "mean α (defined samples)"},
            {"key": "n_undefined", "label": "samples with α undefined", "integer": True},
            {"key": "tau", "label": "τ"},
        ],
        "pair_matrix": ("alpha", "α per rater pair (clustering order)"),
        "bars": lambda detail: _kalos_bars(detail),
        "curves": lambda detail: _kalos_curves(detail),
    },
    "iaa.geometry_agreement": {
        "title": "Geometry agreement",
        "score_suffix": "distance",
        "higher_is_better": False,
        "score_label": "mean matched distance on the sample (0 = identical)",
        "score_range": lambda params: (0.0, 1.0 - float(params.get("threshold", 0.5))),
        "cards": [
            {"key": "sigma", "label": "σ (Braylan)", "lo": "sigma_ci_low", "hi": "sigma_ci_high", "reason": "sigma_reason"},
            {"key": "distance_alpha", "label": "distance α", "lo": "distance_alpha_ci_low",
             "hi": "distance_alpha_ci_high", "reason": "distance_alpha_reason"},
            {"key": "ks", "label": "KS", "lo": "ks_ci_low", "hi": "ks_ci_high", "reason": "ks_reason"},
            {"key": "detection_alpha", "label": "detection agreement", "lo": "detection_alpha_ci_low",
             "hi": "detection_alpha_ci_high", "reason": "detection_alpha_reason"},
            {"key": "classification_alpha", "label": "classification α", "lo": "classification_alpha_ci_low",
             "hi": "classification_alpha_ci_high", "reason": "classification_alpha_reason"},
        ],
        "curves": lambda detail: _distance_curves(detail),
    },
    "iaa.mask_consensus": {
        "title": "STAPLE mask consensus",
        "score_suffix": "sensitivity",
        "score_label": "mean rater sensitivity on the sample",
        "score_range": lambda params: (0.0, 1.0),
        "cards": [
            {"key": "mean_sensitivity", "label": "mean sensitivity"},
            {"key": "mean_specificity", "label": "mean specificity"},
            {"key": "staple_vs_majority_dice", "label": "Dice STAPLE vs majority vote"},
            {"key": "n_skipped", "label": "samples skipped", "integer": True},
        ],
        "bars": lambda detail: _rater_bars(detail, [("rater_sensitivity", "sensitivity"),
                                                    ("rater_specificity", "specificity")],
                                           "Each rater's sensitivity and specificity (STAPLE)"),
    },
    "iaa.calibration": {
        "title": "Calibration",
        "score_suffix": None,
        "cards": [
            {"key": "best_distance", "label": "best-separating distance", "reason": "reason"},
            {"key": "ks", "label": "KS (one-sided)", "reason": "reason"},
            {"key": "tau_star", "label": "τ* (distance)", "reason": "reason"},
            {"key": "similarity_threshold", "label": "τ for KαLOS (similarity)", "reason": "reason"},
            {"key": "beta_star", "label": "β* for OT (λ = 1)", "reason": "beta_reason"},
        ],
        "curves": lambda detail: _calibration_curves(detail),
    },
}


def _rater_bars(detail: dict, series: list[tuple[str, str]], title: str) -> list[dict]:
    """One grouped bar chart of per-rater values."""
    raters = detail.get("raters") or []
    traces = [
        {"type": "bar", "x": raters, "y": [None if v is None else float(v) for v in (detail.get(k) or [])], "name": name}
        for k, name in series if detail.get(k) is not None
    ]
    return [{"title": title, "traces": traces}] if raters and traces else []


def _kalos_bars(detail: dict, top: int = 20) -> list[dict]:
    """Rater vitality, and the hardest classes by α."""
    bars = []
    vit = detail.get("rater_vitality") or {}
    if vit.get("raters") and any(v is not None for v in vit.get("vitality") or []):
        bars.append({"title": "Rater vitality (α − α without the rater; < 0: the rater lowers agreement)",
                     "traces": [{"type": "bar", "x": vit["raters"], "y": vit["vitality"], "name": "vitality"}]})
    cd = detail.get("class_difficulty") or {}
    if cd.get("classes"):
        order = [i for i in cd.get("hardest_first", []) if cd["alpha"][i] is not None][:top]
        if order:
            bars.append({"title": f"Class difficulty: the {len(order)} classes with the lowest α",
                         "traces": [{"type": "bar", "x": [cd["classes"][i] for i in order],
                                     "y": [cd["alpha"][i] for i in order], "name": "α"}]})
    return bars


def _kalos_curves(detail: dict) -> list[dict]:
    """α as τ varies (localisation sensitivity)."""
    c = detail.get("sensitivity_curve") or {}
    if not c.get("taus"):
        return []
    return [{"title": "α versus τ (localisation sensitivity)", "traces": [
        {"type": "scatter", "mode": "lines+markers", "x": c["taus"], "y": c["global_alpha"], "name": "global α"},
        {"type": "scatter", "mode": "lines+markers", "x": c["taus"], "y": c["mean_alpha"], "name": "mean α"},
    ]}]


def _distance_curves(detail: dict) -> list[dict]:
    """Within-item vs between-item (chance) distance densities."""
    d = detail.get("distributions") or {}
    if not d.get("edges"):
        return []
    centers = [(a + b) / 2 for a, b in zip(d["edges"][:-1], d["edges"][1:])]
    return [{"title": "Matched distances: same sample vs other samples (chance)", "traces": [
        {"type": "scatter", "mode": "lines", "x": centers, "y": d["within_density"], "name": "within (same sample)"},
        {"type": "scatter", "mode": "lines", "x": centers, "y": d["between_density"], "name": "between (chance)"},
    ]}]


def _calibration_curves(detail: dict) -> list[dict]:
    """Observed vs expected disagreement densities per distance, with τ*."""
    curves = []
    for name, d in (detail.get("per_distance") or {}).items():
        plot = d.get("plot") or {}
        if not plot.get("grid"):
            continue
        traces = [
            {"type": "scatter", "mode": "lines", "x": plot["grid"], "y": plot["density_observed"],
             "name": "observed (same sample)"},
            {"type": "scatter", "mode": "lines", "x": plot["grid"], "y": plot["density_expected"],
             "name": "expected (other sample)"},
        ]
        tau = plot.get("tau")
        if tau is not None:
            top = max([v for v in plot["density_observed"] + plot["density_expected"] if v is not None] or [1.0])
            traces.append({"type": "scatter", "mode": "lines", "x": [tau, tau], "y": [0, top],
                           "name": f"τ* = {tau:.3f}", "line": {"dash": "dash"}})
        ks = d.get("ks_one_sided")
        title = f"{name}: KS {ks:.3f}" if ks is not None else f"{name}: {d.get('reason') or 'undefined'}"
        curves.append({"title": title, "traces": traces})
    return curves


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def _card(summary: dict, spec: dict) -> dict:
    value = summary.get(spec["key"])
    card = {"label": spec["label"], "value": value}
    if isinstance(value, str) and value:
        card["text"] = value
        return card
    if not _finite(value):
        reason = summary.get(spec.get("reason", ""), "") or "undefined"
        card["text"] = f"undefined: {reason}"
        return card
    if spec.get("integer"):
        card["text"] = f"{int(value)}"
        return card
    text = f"{value:.3f}"
    se = summary.get(spec.get("se", ""))
    if _finite(se) and se > 0:
        text += f" ± {1.96 * se:.3f}"
    lo, hi = summary.get(spec.get("lo", "")), summary.get(spec.get("hi", ""))
    if _finite(lo) and _finite(hi):
        text += f" [{lo:.3f}, {hi:.3f}]"
    card["text"] = text
    return card


MAX_HEATMAP_RATERS = 30


def pair_matrix(detail: dict, value: str, title: str, max_raters: int = MAX_HEATMAP_RATERS) -> dict | None:
    """The rater-pair heatmap from the sparse ``detail["rater_pairs"]`` records.

    Raters in ``detail["rater_order"]`` (clustering order) when given, else as
    listed. With more than ``max_raters`` raters, the ``max_raters`` who share
    the most samples with others are shown, and the title says so. A cell of
    two raters who never shared a sample is empty ("no data"), not 0.

    Returns:
        ``{"raters", "z", "shared", "title"}`` (``z`` ``None`` where undefined
        or no data; ``shared`` the shared-sample counts), or ``None``.
    """
    from agreement.rater_pairs import records_to_matrix

    raters = list(detail["raters"])
    records = detail.get("rater_pairs") or []
    order = detail.get("rater_order") or list(range(len(raters)))
    ordered = [raters[i] for i in order]
    if len(ordered) > max_raters:
        weight: dict[str, int] = {}
        for rec in records:
            for r in (rec["rater_a"], rec["rater_b"]):
                weight[r] = weight.get(r, 0) + int(rec.get("n_shared_samples", 0))
        top = set(sorted(ordered, key=lambda r: (-weight.get(r, 0), r))[:max_raters])
        title = f"{title}: the {max_raters} of {len(ordered)} raters who share the most samples"
        ordered = [r for r in ordered if r in top]
    if not ordered:
        return None
    names, z, shared = records_to_matrix(records, value, ordered)
    return {
        "raters": names,
        "z": [[None if not np.isfinite(v) else float(v) for v in row] for row in z],
        "shared": shared.tolist(),
        "title": title,
    }


def input_cards(info: dict, summary: dict) -> list[dict]:
    """Cards that say what the run assumed about its input: the rater assignment and the box repairs."""
    layout = info.get("input") or {}
    cards = []
    if layout.get("layout") == "attribute":
        if layout.get("raters_field"):
            source = layout.get("raters_field_source") or "given"
            text = f"listed in {layout['raters_field']!r} ({source})"
        else:
            text = "assumed fully crossed: every rater looked at every sample with labels"
        cards.append({"label": "rater assignment", "value": text, "text": text})
    elif layout.get("layout") == "fields":
        text = "a rater is assigned where its field is set (None = not assigned)"
        cards.append({"label": "rater assignment", "value": text, "text": text})
    repaired = {k: int(summary.get(k) or 0) for k in ("clipped_boxes", "outside_boxes", "dropped_boxes")}
    if any(repaired.values()):
        policy = layout.get("box_policy") or info.get("params", {}).get("box_policy") or "clip"
        parts = [f"{n} {what}" for what, n in (("clipped", repaired["clipped_boxes"]),
                                             ("outside the image, kept as zero-area", repaired["outside_boxes"]),
                                             ("dropped", repaired["dropped_boxes"])) if n]
        text = f"{', '.join(parts)} (box_policy={policy!r}; per rater in the run's repairs)"
        cards.append({"label": "boxes past the border", "value": text, "text": text})
    return cards


def _method_view(info: dict) -> dict:
    view = METHOD_VIEWS.get(info["method"])
    if view is None:
        raise PanelDataError(
            f"run {info['key']!r} has method {info['method']!r}, which this version of the panel cannot show; "
            "its results are still loadable with dataset.load_run_results()"
        )
    if info.get("format_version") != runs.RUN_FORMAT_VERSION:
        raise PanelDataError(
            f"run {info['key']!r} was written in result format {info.get('format_version')!r}, this plugin reads "
            f"format {runs.RUN_FORMAT_VERSION}: re-run it (same key, overwrite) to see it here"
        )
    return view


def score_field(info: dict) -> str | None:
    """The run's per-sample score field, or ``None`` for runs without one."""
    suffix = _method_view(info)["score_suffix"]
    return f"{info['key']}_{suffix}" if suffix else None


def higher_is_better(info: dict) -> bool:
    """Whether a larger per-sample score means more agreement (False for distances)."""
    return _method_view(info).get("higher_is_better", True)


def score_histogram(samples, field: str, lo: float, hi: float, bins: int = 20) -> dict:
    """Counts of the per-sample score over ``bins`` equal bins of ``[lo, hi]``
    in ``samples`` (samples without a score are counted apart).

    Computed by the database (one ``$bucket`` aggregation and a count), never
    from all values in Python; scores outside ``[lo, hi]`` (float noise) are
    clamped into the first or last bin.
    """
    from fiftyone import ViewField as F

    edges = np.linspace(lo, hi, bins + 1)
    clamped = F(field).max(float(lo)).min(float(hi))
    counts, _, other = samples.exists(field).histogram_values(clamped, bins=int(bins), range=[float(lo), float(hi)])
    counts = list(counts)
    counts[-1] += other  # the value hi itself falls past the last bucket's open upper edge
    n_scored = samples.count(field)
    return {
        "edges": edges.tolist(),
        "counts": [int(c) for c in counts],
        "n_scored": int(n_scored),
        "n_missing": int(len(samples) - n_scored),
    }


def bin_view(samples, field: str, lo: float, hi: float, last: bool):
    """The samples whose score falls in ``[lo, hi)`` (``[lo, hi]`` for the last bin)."""
    upper = F(field) <= hi if last else F(field) < hi
    return samples.match((F(field) >= lo) & upper)


def lowest_first_view(samples, field: str, descending: bool = False):
    """The scored samples, lowest agreement first (``descending`` for distances)."""
    return samples.exists(field).sort_by(field, reverse=descending)


def run_panel_data(samples, key: str) -> dict:
    """Everything the panel shows for run ``key`` on ``samples`` (the current view).

    Returns:
        ``{"title", "cards", "histogram": {...}, "score_field", "score_label",
        "pair_matrix": {"raters", "z", "title"} or None, "bars": [...],
        "curves": [...]}``

    Raises:
        PanelDataError: for a run of an unknown method or older format.
        agreement.fo.runs.RunError: for a run that does not exist (anymore).
    """
    info = runs.get_agreement_run_info(samples, key)
    view = _method_view(info)
    results = runs.load_agreement_results(samples, key)
    summary = results.get("summary", {})
    detail = results.get("detail", {})
    field = score_field(info)
    lo, hi = view["score_range"](info["params"]) if field else (None, None)
    data = {
        "title": f"{view['title']} — run {key!r}",
        "method": info["method"],
        "cards": [_card(summary, spec) for spec in view["cards"]],
        "score_field": field,
        "worst_first_descending": not view.get("higher_is_better", True),
        "score_label": view.get("score_label"),
        "score_range": [lo, hi],
        "histogram": score_histogram(samples, field, lo, hi) if field and len(samples) else None,
        "pair_matrix": None,
        "bars": [],
        "curves": [],
    }
    data["cards"] += input_cards(info, summary)
    if view.get("pair_matrix") and detail.get("raters") and detail.get("rater_pairs") is not None:
        name, title = view["pair_matrix"]
        data["pair_matrix"] = pair_matrix(detail, name, title)
    if view.get("curves"):
        data["curves"] = view["curves"](detail)
    if view.get("bars"):
        data["bars"] = view["bars"](detail)
    return data
