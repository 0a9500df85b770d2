"""KαLOS's own figures for the panel and the reports: rater vitality, class difficulty and α versus τ.

Plain dicts, as every figure of :mod:`agreement.reporting.figures.method_figures`; :mod:`agreement.fo.methods.kalos` gives them to
the panel through its view's ``bars`` and ``curves``.
"""

from __future__ import annotations

from typing import Any

from agreement.reporting.figures.base import (
    count_text,
    figure,
    figure_layout,
    floats,
    is_finite,
    plural,
    sig3,
    tick_room,
)
from agreement.reporting.figures.palette import REFERENCE, agreement_colours, effect_colours

__all__ = ["kalos_bars", "kalos_curves"]


def kalos_bars(detail: dict, *, top: int = 20) -> list[dict]:
    """Rater vitality, and the hardest classes by α (whole run); both clickable."""
    bars = []
    vit = detail.get("rater_vitality") or {}
    if vit.get("raters") and any(v is not None for v in vit.get("vitality") or []):
        raters = list(vit["raters"])
        ys = floats(vit["vitality"])
        without = floats(vit.get("alpha_without") or [None] * len(raters))
        alpha = vit.get("alpha")
        hover = [f"{r}: vitality {sig3(v, signed=True)} (α {sig3(alpha)} with, {sig3(w)} without {r})"
                 f"<br>click: {r}'s labels that match nobody" for r, v, w in zip(raters, ys, without, strict=False)]
        title = "Rater vitality: α − α without the rater (whole run)"
        bars.append(figure(
            "vitality", title,
            [{"type": "bar", "x": raters, "y": ys, "name": "vitality", "hovertext": hover,
              "hovertemplate": "%{hovertext}<extra></extra>",
              "marker": {"color": effect_colours(ys)}}],  # lowers agreement: red; raises it: blue
            figure_layout("Rater vitality (whole run)", "rater", "vitality",
                    subtitle="α − α without the rater (< 0: the rater lowers agreement) · click a bar: that rater's "
                             "labels that match nobody",
                    height=320 + tick_room(raters)),
            clickable="vitality"))
        bars[-1]["per_rater"] = True  # the panel shows the lowest and highest k raters of a crowd
    cd = detail.get("class_difficulty") or {}
    if cd.get("classes"):
        order = [i for i in cd.get("hardest_first", []) if cd["alpha"][i] is not None][:top]
        if order:
            classes = [cd["classes"][i] for i in order]
            ys = [float(cd["alpha"][i]) for i in order]
            units = [int(cd["n_units"][i]) if cd.get("n_units") else None for i in order]
            hover = [f"{c}: α {sig3(a)} over {count_text(n, what='unit') if n is not None else 'its units'}"
                     f"<br>click: {c} units where the raters disagree" for c, a, n in zip(classes, ys, units, strict=True)]
            what = (f"the {len(order)} {plural(len(order), 'class')} with the lowest α" if len(order) > 1
                    else "its one class" if len(cd["classes"]) == 1 else "the class with the lowest α")
            title = f"Class difficulty: {what} (whole run)"
            bars.append(figure(
                "classes", title,
                [{"type": "bar", "x": classes, "y": ys, "name": "α", "hovertext": hover,
                  "hovertemplate": "%{hovertext}<extra></extra>", "marker": {"color": agreement_colours(ys)}}],
                figure_layout("Class difficulty (whole run)", "class", "α of the class (1 perfect, 0 chance)",
                        subtitle=f"{what} · click a bar: that class's units with disagreement"),
                clickable="class"))
    return bars


def kalos_curves(detail: dict, *, info: dict | None = None) -> list[dict]:
    """α as τ varies (localisation sensitivity), with the run's τ marked."""
    c = detail.get("sensitivity_curve") or {}
    if not c.get("taus"):
        return []
    taus = floats(c["taus"])
    traces: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines+markers", "x": taus, "y": floats(c["global_alpha"]),
         "name": "global α (pooled over all units)",
         "hovertemplate": "τ %{x:.3g}: global α %{y:.3g}<extra></extra>"},
        {"type": "scatter", "mode": "lines+markers", "x": taus, "y": floats(c["mean_alpha"]),
         "name": "mean α over samples", "hovertemplate": "τ %{x:.3g}: mean α %{y:.3g}<extra></extra>"},
    ]
    tau = (info or {}).get("params", {}).get("tau")
    ys = [v for t in traces for v in t["y"] if v is not None]
    if is_finite(tau) and ys:
        traces.append({"type": "scatter", "mode": "lines", "x": [tau, tau], "y": [min(ys), max(ys)],
                       "name": f"this run's τ = {sig3(tau)}", "line": {"dash": "dash", "color": REFERENCE},
                       "hoverinfo": "skip"})
    title = "α versus τ (localisation sensitivity)"
    return [figure("alpha_tau", title, traces,
                    figure_layout(title, "τ (similarity a match needs)", "α (1 perfect, 0 chance)", legend=True,
                            subtitle="whole run, recomputed at each τ"))]
