"""The panel data of the "Annotator Agreement" panel's optional sections: a consensus run's rater report,
the comparison with another run, and the labels of the open sample (each also noted in the panel's memory)."""

from __future__ import annotations

from agreement.fo.panel.data import METHOD_VIEWS, compare_data, label_explanations
from agreement.fo.runs import store as runs

from .panel_markdown import open_sample_md


def refresh_consensus(pdata, mem, cons: dict | None) -> None:
    """A consensus run's confusion matrix and review-queue note (panel data and memory); its rater report
    is the panel's rater table (:mod:`.panel_raters`)."""
    mem.consensus = None
    if cons is None:
        return
    counts = {c["label"]: c for c in (cons["view_cards"] or cons["cards"])}
    n_flagged = counts.get("flagged for review", {}).get("count") or 0
    mem.consensus = {"raters": cons["raters"], "rater": cons["rater"], "n_flagged": int(n_flagged),
                     "samples": bool(cons.get("class_consensus"))}
    pdata.review_md = cons["review_help"]
    pdata.confusion = mem.figures["confusion"]["traces"] if "confusion" in mem.figures else []


def refresh_compare(ctx, mem, base, key, info, compare, compare_key):
    """The comparison with another run of the same method, when compare mode is on (panel data and memory)."""
    mem.compare = None
    if not compare:
        return
    method = info["method"]
    others = [k for k in runs.list_agreement_runs(ctx.dataset, method=method) if k != key]
    pdata = ctx.panel.data
    if not others:
        pdata.compare_md = f"No other {METHOD_VIEWS[method]['title']} run to compare with: compute one first."
        return
    if compare_key not in others:
        compare_key = others[0]
    other = runs.get_agreement_run_info(ctx.dataset, compare_key)
    cmp = compare_data(base, info, other, whole=bool(mem.whole))
    mem.compare = {"others": others, "key": compare_key, "figures": {}}
    md = [run["key"] for run in cmp["runs"]]
    pdata.compare_table = cmp["markdown"]
    if cmp["histograms"]:
        pdata.compare_hist = cmp["histograms"]["traces"]  # for SDK users; the App gets them in the view
        mem.compare["figures"]["compare_hist"] = cmp["histograms"]
    if cmp["scatter"]:
        pdata.compare_scatter = cmp["scatter"]["traces"]
        mem.compare["figures"]["compare_scatter"] = cmp["scatter"]
        pdata.compare_md = ""
    else:
        pdata.compare_md = (f"Runs {md[0]!r} and {md[1]!r} scored no sample in common in this view, so there "
                            "is no per-sample scatter.")


def refresh_modal(ctx, mem, base, key, info):
    """The labels of the open sample, explained (panel data and memory); nothing without an open sample."""
    from .panel_video import video_modal

    mem.modal = None
    if video_modal(ctx, mem, info):  # a run on videos: the open video's timeline explains it
        return
    sid = ctx.current_sample
    if not sid:
        ctx.panel.data.labels_md = ""
        return
    rows = label_explanations(base, info, sid)
    n_dis = sum(r["disagrees"] for r in rows)
    mem.modal = {"sample": sid, "n": len(rows), "n_disagree": n_dis}
    ctx.panel.data.labels_md = open_sample_md(rows, key)
