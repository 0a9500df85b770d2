"""The markdown texts of the "Annotator Agreement" panel: the help without runs, the run dropdown's labels,
the drill-down and view notes, the unscored samples and the labels of the open sample."""

from __future__ import annotations

from agreement.fo.panel.data import METHOD_VIEWS, sig3
from agreement.fo.runs import store as runs

EMPTY_HELP = """**No agreement runs yet**

Agreement is computed by the plugin's operators. Open the operator browser
(the backtick key, or the list icon above the grid) and run, for example,
**Annotator Agreement: OT agreement**: pick the label fields of your raters
(one field per rater, or one field whose labels carry the rater in an
attribute), give the run a key such as *ot*, and run it. This panel then
shows the new run.

From Python:

```python
import fiftyone.operators as foo
foo.execute_operator(
    "@iaa/agreement/compute_ot_agreement",
    ctx=dict(view=dataset.view(),
             params=dict(fields=["r1", "r2"],
                         key="ot")))
```
"""


def run_labels(dataset, keys) -> dict:
    """Run key -> "key — method, time", the labels of the run dropdown."""
    labels = {}
    for k in keys:
        try:
            info = runs.get_agreement_run_info(dataset, k)
            title = (METHOD_VIEWS.get(info["method"]) or {}).get("title", info["method"])
            labels[k] = f"{k} — {title}, {info['timestamp'][:16]}"
        except Exception:  # listed even when its record cannot be read
            labels[k] = k
    return labels


def drill_md(mem) -> str:
    """What the panel's drill-down loaded (empty without one)."""
    d = mem.drill
    if not d:
        return ""
    unit = d.get("unit", "sample")
    text = f"**Loaded:** {d['what']} — {d['count']:,} {unit}{'s' if d['count'] != 1 else ''}."
    if d.get("pair_scores"):
        a, b = d["pair"]
        top = d["pair_scores"][:6]
        text += (f" In grid order, their {a}–{b} scores: "
                 + ", ".join(f"{s['sample']} {sig3(s['score'])}" for s in top)
                 + (f", … ({len(d['pair_scores']) - len(top)} more)" if len(d["pair_scores"]) > len(top) else "")
                 + ".")
    if d.get("pair_field"):
        text += (f" Every sample's {d['pair'][0]}–{d['pair'][1]} score is in field `{d['pair_field']}`: "
                 "tick it in the sidebar to show it on the grid tiles, or filter and sort by it.")
    return text


def view_note(data, n_view, filters, base_stages, drill: dict | None = None) -> str:
    """What the charts describe: the whole dataset, or how many samples of the run (through which stages,
    filters); with the panel's drill-down (``drill``), that the grid shows the samples it loaded while the
    charts describe the view before it (after a reload too: the grid and the note never disagree)."""
    if drill:
        unit = drill.get("unit", "sample")
        n = int(drill.get("count") or 0)
        grid = f"**The grid shows the {n:,} {unit}{'s' if n != 1 else ''} the panel loaded** (see *Loaded* below)"
        if data["whole"] or base_stages is None and n_view == data["n_run"]:
            return f"{grid}; the charts describe the {n_view:,} samples in view before it: the whole dataset."
        return (f"{grid}; the charts describe the {n_view:,} samples in view before it, of {data['n_run']:,} in "
                "the run.")
    if data["whole"] or base_stages is None and n_view == data["n_run"]:
        text = f"**{n_view:,} samples in view: the whole dataset.**"
    else:
        parts = []
        if base_stages:
            parts.append(f"{len(base_stages)} view stage{'s' if len(base_stages) != 1 else ''}")
        if filters:
            parts.append("sidebar filter" + ("s" if len(filters) != 1 else "") + " on " + ", ".join(
                f"`{k}`" for k in filters))
        how = f" ({'; '.join(parts)})" if parts else ""
        text = (f"**{n_view:,} samples in view**{how}, of {data['n_run']:,} in the run. The charts and the "
                "*this view* column follow the view; *whole run* numbers need the whole corpus.")
    return text


def undefined_md(data, hist) -> str:
    """The samples in view without a score, counted by reason (empty when every one has a score)."""
    if not hist or not hist["n_missing"]:
        return ""
    lines = [f"**{hist['n_missing']:,} samples in view have no score**; the lowest-first button leaves them "
             "out. Why (from the run results):", "", "| reason | samples |", "|:--|--:|"]
    listed = 0
    for g in data["undefined"]:
        lines.append(f"| {g['reason']} | {g['count']:,} |")
        listed += g["count"]
    if listed < hist["n_missing"]:
        lines.append(f"| (not listed in the run results) | {hist['n_missing'] - listed:,} |")
    return "\n".join(lines)


def open_sample_md(rows: list, key: str) -> str:
    """The labels of the open sample (:func:`agreement.fo.panel.data.label_explanations` rows) as a table."""
    if not rows:
        return f"**Labels of the open sample**\n\nNo labels of run {key!r}'s raters here."
    n_dis = sum(r["disagrees"] for r in rows)
    lines = [f"**Labels of the open sample** ({n_dis} of {len(rows)} disagree, run {key!r})", "",
             "| rater | label | status | counterpart (rater: label) | detail |", "|:--|:--|:--|:--|:--|"]
    for r in rows:
        lines.append(f"| {r['rater']} | {r['label']} | {r['status']} | {r['counterpart']} | {r['value']} |")
    return "\n".join(lines)
