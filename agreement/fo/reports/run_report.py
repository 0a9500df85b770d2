"""One run's report folder: ``report.html``, ``run.json`` and the tidy CSV tables (see :mod:`agreement.fo.reports.export`)."""

from __future__ import annotations

import csv
import html
import json
import os
from collections import Counter

from agreement.fo.reports.conflict_table import CONFLICT_COLUMNS, run_conflicts
from agreement.fo.runs.store import get_agreement_run_info, load_agreement_results, to_json
from agreement.reporting.figures.base import count_text
from agreement.reporting.figures.method_figures import PanelDataError, confusion_figure, confusion_matrix
from agreement.reporting.html import html_table, render_report
from agreement.reporting.tables import (
    class_confusion_rows,
    class_rows,
    confusion_rows,
    curve_rows,
    pair_rows,
    plain_name,
    rater_rows,
    record_tables,
    sample_rows,
)

__all__ = ["write_run_report", "REPORT_OPTIONS", "MAX_CONFUSION_FIGURES", "sample_table"]

#: The panel's rater controls for a report: every rater, whatever its number of labels.
REPORT_OPTIONS = {"min_labels": 0, "rows": 10**6, "bars_k": 50, "pair_k": 30}
#: A consensus run's report draws the class confusion of at most this many raters (all are in confusion.csv).
MAX_CONFUSION_FIGURES = 6


def write_csv(path: str, rows: list[dict], header: list[str] | None = None) -> None:
    """``rows`` as a CSV file: ``header``, or the union of their keys, as the header; ``None`` as an empty cell."""
    header = list(header or dict.fromkeys(k for row in rows for k in row))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in header})


def _label_field_type(dataset, field: str):
    import fiftyone.core.labels as fol

    doc = getattr(dataset.get_field(field), "document_type", None)
    return doc if isinstance(doc, type) and issubclass(doc, fol.Label) else None


def sample_table(samples, info: dict, results: dict, score: str | None) -> list[dict]:
    """One row per sample of ``samples``: id, file name, every per-sample value the run wrote (a label field as
    counts: a consensus's number of labels and how many are flagged for review; one consensus class as its
    class), the score (``score``: the run's per-sample score field) and the reason it is undefined."""
    dataset = samples._root_dataset
    key = info["key"]
    schema = dataset.get_field_schema()
    present = [f for f in info.get("sample_fields") or [] if f in schema]
    values: dict[str, list] = {}
    for f in present:
        name = "score" if f == score else plain_name(f[len(key) + 1:] if f.startswith(f"{key}_") else f)
        doc = _label_field_type(dataset, f)
        if doc is None:
            values[name] = samples.values(f)
            continue
        list_attr = getattr(doc, "_LABEL_LIST_FIELD", None)
        if list_attr is None:  # one label per sample: its class
            values[f"{name}_class"] = samples.values(f"{f}.label")
            continue
        values[f"{name}_labels"] = [None if r is None else len(r) for r in samples.values(f"{f}.{list_attr}.id")]
        if f == f"{key}_consensus":
            review = samples.values(f"{f}.{list_attr}.{key}_review")
            values.setdefault("flagged_for_review", [None if r is None else sum(map(bool, r)) for r in review])
    ids, paths = samples.values(["id", "filepath"])
    reasons = (results.get("detail") or {}).get("undefined_samples") or {}
    ordered = {"score": values.pop("score")} if "score" in values else {}
    return sample_rows(ids, paths, {**ordered, **values}, {str(k): str(v) for k, v in reasons.items()},
                       "score" if ordered else None)


def _panel(samples, key: str) -> tuple[dict | None, str]:
    from agreement.fo.panel.data import run_panel_data

    try:
        return run_panel_data(samples._root_dataset.view(), key, whole=True, options=REPORT_OPTIONS), ""
    except PanelDataError as e:
        if "simulate_raters" in str(e):
            return None, ("A simulation run writes simulated raters, not agreement: compute agreement on the "
                          "fields it wrote to see figures here.")
        return None, f"No figures for this run: {e}"


def _extra_figures(samples, info: dict, results: dict, data: dict | None) -> dict[str, list]:
    """The figures the panel draws outside :func:`run_panel_data`: the method's own (a mask run's, its hook
    ``panel_figures``), a consensus run's confusion per rater, a video run's timeline."""
    from agreement.fo.methods import hooks_of
    from agreement.fo.panel.video_figures import (
        choose_video,
        is_frame_run,
        is_temporal_run,
        timeline_figure,
        video_run_info,
        video_timeline,
    )

    detail = results.get("detail") or {}
    out: dict[str, list] = {"classes": [], "confusion": [], "video": []}
    own = hooks_of(info["method"]).panel_figures
    if own is not None:
        out["classes"] = own(detail, info)
    cons = data.get("consensus") if data else None
    if cons:
        for rater in cons["raters"][:MAX_CONFUSION_FIGURES]:
            cm = confusion_matrix(results, rater)
            if cm["classes"]:
                fig = confusion_figure(cm)
                fig["name"] = f"confusion_{len(out['confusion'])}"
                out["confusion"].append(fig)
    vinfo = video_run_info(samples, info)
    if is_frame_run(vinfo) or is_temporal_run(samples._root_dataset, vinfo):
        vid = choose_video(samples._root_dataset, vinfo)
        if vid is not None:
            out["video"] = [timeline_figure(video_timeline(samples._root_dataset, vinfo, vid), clickable=False)]
    return out


_TYPES_NOTE = ("<p class='note'>As in CVAT's quality report, rater a is the reference: <b>missing</b>, rater b has "
               "nothing where rater a drew a label; <b>extra</b>, rater b drew a label where rater a has nothing; "
               "<b>label differs</b>, the same object with another class; <b>low overlap</b>, the same object "
               "drawn with little overlap.</p>")


def _conflict_summary(rows: list[dict]) -> str:
    """Conflicts counted per rater pair and type, as a table."""
    counts = Counter((r["rater_a"], r["rater_b"], r["type"]) for r in rows)
    types = ["missing", "extra", "label differs", "low overlap"]
    pairs = sorted({(a, b) for a, b, _ in counts})
    table = [{"rater_a": a, "rater_b": b, **{t.replace(" ", "_"): counts.get((a, b, t), 0) for t in types},
              "total": sum(counts.get((a, b, t), 0) for t in types)} for a, b in pairs]
    table.sort(key=lambda r: -r["total"])
    return html_table(table, limit=30)


def _item(samples) -> str:
    return "video" if getattr(samples._root_dataset, "media_type", None) == "video" else "sample"


def _empty_matrix(fig: dict) -> bool:
    """Whether a heatmap has no cell to draw (every pair hidden by the panel's minimum support)."""
    z = (fig.get("traces") or [{}])[0].get("z") or []
    return not any(v is not None for row in z for v in (row or []))


def _sections(data: dict | None, extra: dict[str, list], tables: dict[str, list], conflicts_note: str,
              panel_note: str, method_title: str, item: str = "sample") -> list[dict]:
    figs = dict((data or {}).get("figures") or {})
    hidden = "pair_matrix" in figs and _empty_matrix(figs["pair_matrix"])
    if hidden:
        figs.pop("pair_matrix")
    bars = (data or {}).get("bars") or []
    rater_figs = [figs[n] for n in ("pair_matrix",) if n in figs] + [b for b in bars if b.get("per_rater")]
    class_figs = [b for b in bars if not b.get("per_rater")] + extra["classes"]
    undefined = [{"reason": u["reason"], "samples": u["count"]} for u in (data or {}).get("undefined") or []]
    missing = [what for what, there in (("rater-by-rater agreement matrix", "pair_matrix" in figs),
                                        ("per-rater vitality or reliability chart", any(b.get("per_rater") for b in bars)))
               if not there]
    if hidden:
        missing = [m for m in missing if not m.startswith("rater-by-rater")]
        rater_note_hidden = ("<p class='note'>The panel's rater-by-rater matrix has no cell to draw for this run "
                             "(it hides pairs below its minimum shared support); rater_pairs.csv lists every "
                             "pair's values.</p>")
    else:
        rater_note_hidden = ""
    rater_note = rater_note_hidden + (f"<p class='note'>{method_title} runs give no {' and no '.join(missing)}"
                  f"{'; the table lists every per-rater figure the run has' if tables.get('raters') else ''}.</p>"
                  if missing and (rater_figs or extra["confusion"] or tables.get("raters")) else "")
    sections: list[dict] = [
        {"title": "Per-sample scores", "figures": [figs["histogram"]] if "histogram" in figs else [],
         "absent": panel_note or f"{method_title} runs give no per-sample score.",
         "extra": (("<p class='note'>Samples without a score, by reason:</p>" + html_table(undefined)) if undefined
                   else "") + _worst_samples(tables.get("samples") or [], data, item)},
        {"title": "Raters", "figures": rater_figs + extra["confusion"],
         "absent": "" if hidden else "This run stores no rater-by-rater matrix or per-rater figure.",
         "extra": rater_note + html_table(tables.get("raters") or [], limit=30)},
        {"title": "Classes", "figures": class_figs, "absent": "This run stores no per-class figure.",
         "extra": html_table(tables.get("classes") or [], limit=30) if not class_figs else ""},
        {"title": "Curves", "figures": (data or {}).get("curves") or [],
         "absent": "This method has no α-versus-τ curve or distance distribution."},
    ]
    if extra["video"]:
        sections.append({"title": "The video with the lowest agreement", "figures": extra["video"], "absent": ""})
    rows = tables.get("conflicts")
    sections.append({"title": "Label conflicts", "figures": [], "absent": "",
                     "extra": f"<p class='note'>{conflicts_note}"
                              + (f" {count_text(len(rows), what='conflict')} in conflicts.csv; per rater pair:</p>"
                                 + _conflict_summary(rows) + _TYPES_NOTE if rows is not None else "</p>")})
    return sections


def _worst_samples(rows: list[dict], data: dict | None, item: str = "sample", top: int = 10) -> str:
    """The ``top`` samples with the least agreement (lowest score, highest for a distance), as a table."""
    scored = [r for r in rows if r.get("score") is not None]
    if not scored:
        return ""
    descending = bool((data or {}).get("worst_first_descending"))
    scored.sort(key=lambda r: (-r["score"] if descending else r["score"], r["file_name"]))
    cols = ["file_name", "score", *[k for k in scored[0] if k not in ("sample_id", "file_name", "filepath", "score",
                                                                       "reason")], "sample_id"]
    return (f"<p class='note'>The {count_text(min(top, len(scored)), what=item)} with the least agreement "
            f"(every sample is in samples.csv):</p>" + html_table(scored[:top], limit=top, columns=cols))


_FILES = {"raters": "one row per rater", "rater_pairs": "one row per rater pair", "classes": "one row per class",
          "samples": "one row per sample, with the reason where the score is undefined",
          "conflicts": "one row per label conflict (missing, extra, label differs, low overlap)",
          "confusion": "each rater's class confusion, one row per cell", "alpha_by_tau": "α at each τ",
          "class_confusion": "the classes raters confuse, one row per cell",
          "pair_class_dice": "the mean Dice of each rater pair on each class, one row per cell",
          "json": "the run and its full results"}


def _files_section(files: dict[str, str], plotly_src: str | None = None) -> dict:
    items = "".join(f"<li><code>{os.path.basename(p)}</code>: {_FILES.get(n, 'one row per record')}</li>"
                    for n, p in files.items())
    if plotly_src:
        items += (f"<li><code>{html.escape(plotly_src)}</code>: plotly.js, which draws the figures, one copy "
                  "shared by every report of the export (keep it beside the report folders)</li>")
    return {"title": "Files beside this page", "figures": [], "absent": "", "extra": f"<ul class='note'>{items}</ul>"}


def _head(samples, info: dict, results: dict, data: dict | None, tables: dict) -> dict:
    summary = results.get("summary") or {}
    detail = results.get("detail") or {}
    n_samples = (data or {}).get("n_run") or summary.get("n_samples") or len(samples._root_dataset)
    raters = detail.get("raters") or [r["rater"] for r in tables.get("raters") or []]
    labels = sum(int(r.get("labels") or 0) for r in tables.get("raters") or [])
    corpus = [count_text(int(n_samples), what=_item(samples)), count_text(len(raters), what="rater")]
    if labels:
        corpus.append(count_text(labels, what="label"))
    params = {k: v for k, v in (info.get("params") or {}).items() if v is not None and k not in ("target", "key")}
    return {"title": (data or {}).get("title") or f"Run {info['key']!r} ({info['method']})",
            "lines": [f"Dataset {samples._root_dataset.name!r} · run {info['key']!r} · method {info['method']} · "
                      f"computed {str(info.get('timestamp', ''))[:19]} UTC",
                      "Corpus: " + " · ".join(corpus)],
            "params": params, "cards": (data or {}).get("cards") or []}


def write_run_report(samples, key: str, folder: str, samples_csv: bool = True,
                     plotly_src: str | None = None) -> dict[str, str]:
    """Writes run ``key``'s report into ``folder`` (created): ``report.html``, ``run.json`` and the CSV tables it
    has (``raters``, ``rater_pairs``, ``classes``, ``samples``, ``conflicts``, ``confusion``, ``alpha_by_tau``,
    other record tables). ``report.html`` loads plotly.js from ``plotly_src`` (a URL relative to it, the file
    written by the caller) or, with ``None``, has it inlined (self-contained). Returns ``{name: path}`` of the
    files written."""
    info = get_agreement_run_info(samples, key)
    results = load_agreement_results(samples, key)
    detail = results.get("detail") or {}
    data, panel_note = _panel(samples, key)
    os.makedirs(folder, exist_ok=True)
    files = {"json": os.path.join(folder, "run.json")}
    doc = {"dataset": samples._root_dataset.name, "run": info, "results": to_json(results)}
    with open(files["json"], "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, allow_nan=False, default=str)
    table = (data or {}).get("rater_table")
    from agreement.fo.methods import hooks_of

    own_classes = hooks_of(info["method"]).report_classes  # a mask run's classes, its pair × class Dice
    mask, pair_class = own_classes(detail, info) if own_classes is not None else (None, [])
    conflicts, conflicts_note = run_conflicts(samples, info, [str(r) for r in detail.get("raters") or []])
    tables = {"raters": rater_rows(detail, panel_rows=table["rows"] if table else None), "rater_pairs": pair_rows(detail),
              "classes": class_rows(detail, mask_rows=mask), "confusion": confusion_rows(detail),
              "class_confusion": class_confusion_rows(detail),
              "alpha_by_tau": curve_rows(detail), **record_tables(detail, skip=("rater_pairs", "pair_class_dice")),
              "pair_class_dice": pair_class}
    if samples_csv and info.get("sample_fields"):
        score = (data or {}).get("score_field")
        tables["samples"] = sample_table(samples, info, results, score)
    if conflicts is not None:
        tables["conflicts"] = conflicts
    if not any(len(r) > 1 for r in tables["raters"]):  # names only: no per-rater figure to give
        tables["raters"] = []
    for name, rows in tables.items():
        if rows or name == "conflicts":
            files[name] = os.path.join(folder, f"{name}.csv")
            write_csv(files[name], rows, CONFLICT_COLUMNS if name == "conflicts" else None)
    extra = _extra_figures(samples, info, results, data)
    title = (data or {}).get("title", info["method"]).split(" — ")[0]
    page = render_report(_head(samples, info, results, data, tables),
                         _sections(data=data, extra=extra, tables=tables, conflicts_note=conflicts_note,
                                   panel_note=panel_note, method_title=title, item=_item(samples))
                         + [_files_section(files, plotly_src)], plotly_src=plotly_src)
    files["html"] = os.path.join(folder, "report.html")
    with open(files["html"], "w", encoding="utf-8") as f:
        f.write(page)
    return files
