"""The figure of a rater plan (``plan_raters``): the statistic against raters per item, with the target.

:func:`plan_figure` draws the flat dict of :meth:`agreement.fo.planning.raters.RaterPlan.as_dict` (what
``plan_raters`` returns and stores with the run) as a plain plotly figure dict (no FiftyOne): the curve the
target is read on (the Spearman–Brown consensus reliability of α, or the consensus accuracy) as its mean
line and its interval band, the part projected beyond the raters the data has dashed, the target as a
horizontal line and a marker at ``k_needed``; for α, the measured α itself as a thin line.
"""

from __future__ import annotations

from typing import Any

from agreement.reporting.figures.base import figure, figure_layout, floats, is_finite, sig3
from agreement.reporting.figures.palette import HIGH, HIGH_BAND, REFERENCE, SELECTED

__all__ = ["plan_figure"]

_BAND = HIGH_BAND


def _band(ks: list, low: list, high: list, name: str, *, legend: bool) -> dict:
    """A filled band between ``low`` and ``high`` over ``ks`` (one closed polygon)."""
    return {"type": "scatter", "mode": "lines", "x": ks + ks[::-1], "y": high + low[::-1], "fill": "toself",
            "fillcolor": _BAND, "line": {"width": 0}, "name": name, "hoverinfo": "skip", "showlegend": legend}


def _parts(curve: dict) -> tuple[list[int], list[int]]:
    """The indices of the measured and of the projected points (the projected part starts at the last
    measured point, so the dashed line joins the solid one)."""
    projected = list(curve.get("projected") or [False] * len(curve["k"]))
    measured = [i for i, p in enumerate(projected) if not p]
    beyond = [i for i, p in enumerate(projected) if p]
    if beyond and measured:
        beyond = [measured[-1]] + beyond
    return measured, beyond


def plan_figure(plan: dict[str, Any]) -> dict:
    """The plan's curve with its interval, the projected part dashed, the target line and the ``k`` needed.

    Args:
        plan: the flat plan dict (``statistic``, ``target``, ``confidence``, ``k_needed``, ``value_at_k``,
            ``projection``, ``curve``, ``target_curve``, ``max_k``, ``reason``, ``note``).

    Returns:
        ``{"name": "plan_raters", "title", "traces", "layout", "config", "click"}``.
    """
    tc = plan.get("target_curve") or {**plan["curve"], "projected": [False] * len(plan["curve"]["k"])}
    ks = [int(k) for k in tc["k"]]
    mean, low, high = floats(tc["mean"]), floats(tc["low"]), floats(tc["high"])
    reliability = plan.get("projection") == "spearman_brown"
    what = (f"reliability of the k-rater consensus (Spearman–Brown of {plan['statistic']})" if reliability
            else str(plan["statistic"]).replace("_", " "))
    conf = f"{100 * float(plan.get('confidence') or 0.9):g} %"
    measured, beyond = _parts(tc)
    traces: list[dict[str, Any]] = []
    for idx, name, dash in ((measured, "measured (rater subsampling)", "solid"),
                            (beyond, "projected beyond the data", "dash")):
        if not idx:
            continue
        x = [ks[i] for i in idx]
        traces.append(_band(x, [low[i] for i in idx], [high[i] for i in idx], f"{conf} interval",
                            legend=dash == "solid"))
        traces.append({"type": "scatter", "mode": "lines+markers" if dash == "solid" else "lines", "x": x,
                       "y": [mean[i] for i in idx], "name": name, "line": {"color": HIGH, "dash": dash},
                       "hovertemplate": "k = %{x}: %{y:.3g}<extra>" + name + "</extra>"})
    if reliability and plan.get("curve"):
        c = plan["curve"]
        traces.append({"type": "scatter", "mode": "lines", "x": [int(k) for k in c["k"]], "y": floats(c["mean"]),
                       "name": f"{plan['statistic']} of one rater (measured)",
                       "line": {"color": REFERENCE, "width": 1},
                       "hovertemplate": "k = %{x}: %{y:.3g}<extra>" + str(plan["statistic"]) + "</extra>"})
    target = float(plan["target"])
    traces.append({"type": "scatter", "mode": "lines", "x": [min(ks), max(ks)], "y": [target, target],
                   "name": f"target {sig3(target)}", "line": {"color": REFERENCE, "dash": "dot"},
                   "hoverinfo": "skip"})
    k = plan.get("k_needed")
    if k is not None and is_finite(plan.get("value_at_k")):
        traces.append({"type": "scatter", "mode": "markers", "x": [int(k)], "y": [float(plan["value_at_k"])],
                       "name": f"k = {k} needed", "marker": {"color": SELECTED, "size": 12, "symbol": "diamond"},
                       "hovertemplate": f"k = {k}: lower bound %{{y:.3g}} ≥ target<extra></extra>"})
        answer = (f"{k} raters per sample reach {sig3(target)} ({conf} lower bound, "
                  + ("measured" if plan.get("measured") else "projected") + ")")
    else:
        answer = f"no k reaches {sig3(target)}: {plan.get('reason') or 'see the curve'}"
    title = "How many raters per sample?"
    ticks: dict[str, Any] = {"xaxis": {"dtick": 1}} if max(ks) <= 20 else {}
    layout = figure_layout(title, "raters per sample (k)", what, legend=True, subtitle=answer, **ticks)
    return figure("plan_raters", title, traces, layout)
