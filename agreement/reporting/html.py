"""One HTML page per agreement run: the App panel's figures and cards, for people who never open the App.

The figures are those of :func:`agreement.fo.panel.data.run_panel_data` on the whole run (the same numbers
the panel shows), with the semantic mask figures of :func:`agreement.reporting.figures.masks.mask_figures`, every
rater's class confusion of a consensus run (:func:`agreement.reporting.figures.method_figures.confusion_figure`) and the timeline
of the video with the lowest agreement (:func:`agreement.fo.panel.video_figures.timeline_figure`). Each is drawn
by plotly (:func:`plotly.io.to_html`, without plotly.js). plotly.js (about 4.6 MB) is loaded once per page, in
its ``<head>``: either from a file beside the report (``plotly_src``, a relative URL such as
``../plotly.min.js``, written once per export by :func:`write_plotly_js`: a page of about 0.1 MB that opens
offline as long as the file stays beside its folder), or inlined in the page (``plotly_src=None``: one
self-contained file, e.g. to send by e-mail). The panel's "click: ..." hints are taken out: nothing here loads
samples.
"""

from __future__ import annotations

import html
import json
import os
import re
from typing import Any, Sequence

from agreement.reporting.figures.base import SUBTITLE_CHARS, sig3, wrap_lines

__all__ = ["render_report", "static_figure", "figure_html", "html_table", "write_plotly_js", "PLOTLY_JS"]

#: The file name of plotly.js beside the reports of an export (one file shared by every run's page).
PLOTLY_JS = "plotly.min.js"

_CLICK_HOVER = re.compile(r"<br>click[^<]*")
_CLICK_CLAUSE = re.compile(r"\s*(?:·|;)?\s*\(?click (?:a|on|one)\b[^·)]*\)?")
_SPAN = re.compile(r"<span style='font-size:12px'>(.*?)</span>")

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#24324a;color:#fff;padding:20px 32px}
header h1{margin:0 0 4px;font-size:24px}
header p{margin:2px 0;color:#d4dbe8;font-size:14px}
main{padding:8px 32px 32px}
section{margin-top:22px}
h2{font-size:19px;margin:0 0 8px;border-bottom:2px solid #d9dee7;padding-bottom:4px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#fff;border:1px solid #d9dee7;border-radius:6px;padding:8px 12px;min-width:170px;max-width:420px}
.card .label{font-size:13px;color:#5b6678}
.card .value{font-size:17px;font-weight:600;margin-top:2px}
.grid{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:14px}
.plot{background:#fff;border:1px solid #d9dee7;border-radius:6px;padding:4px;min-width:0}
.note{color:#5b6678;font-size:14px;margin:6px 0}
table{border-collapse:collapse;background:#fff;font-size:13px}
th,td{border:1px solid #d9dee7;padding:4px 8px;text-align:left}
th{background:#eef1f6}
td.num{text-align:right;font-variant-numeric:tabular-nums}
details{margin-top:8px}
"""


def _unwrap_subtitle(layout: dict) -> None:
    """The subtitle of a panel figure without its click hints, wrapped again (the title height follows)."""
    title = layout.get("title") or {}
    text = title.get("text") or ""
    old = _SPAN.findall(text)
    if not old:
        return
    sub = re.sub(r"(\s*·\s*)+", " · ", _CLICK_CLAUSE.sub(" · ", " ".join(old))).strip(" ·;")
    lines = wrap_lines(sub, SUBTITLE_CHARS) if sub else []
    head = text.split("<br><span", 1)[0]
    title["text"] = head + "".join(f"<br><span style='font-size:12px'>{line}</span>" for line in lines)
    removed = 16 * (len(old) - len(lines))
    if removed and isinstance(layout.get("margin"), dict):
        layout["margin"]["t"] = layout["margin"].get("t", 0) - removed
        layout["height"] = layout.get("height", 320) - removed


def _no_click(value: Any) -> Any:
    if isinstance(value, str):
        return _CLICK_HOVER.sub("", value)
    if isinstance(value, list):
        return [_no_click(v) for v in value]
    return value


def static_figure(fig: dict) -> dict:
    """A panel figure for a page where nothing is clickable: its click hints (hover and subtitle) removed."""
    traces = []
    for t in fig["traces"]:
        t = dict(t)
        if "hovertext" in t:
            t["hovertext"] = _no_click(t["hovertext"])
        traces.append(t)
    layout = {k: (dict(v) if isinstance(v, dict) else v) for k, v in fig["layout"].items()}
    if isinstance(layout.get("title"), dict):
        layout["title"] = dict(layout["title"])
        _unwrap_subtitle(layout)
    layout["autosize"] = True
    layout.pop("width", None)
    return {**fig, "traces": traces, "layout": layout, "click": None}


def figure_html(fig: dict, include_plotlyjs: bool, div_id: str) -> str:
    """One figure as an HTML ``div`` drawn by plotly (plotly.js inlined when ``include_plotlyjs``; the report
    loads it once in its ``<head>`` instead, see :func:`render_report`)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    fig = static_figure(fig)
    config = {**(fig.get("config") or {}), "displayModeBar": False, "responsive": True}
    figure = go.Figure(data=fig["traces"], layout=fig["layout"])
    return pio.to_html(figure, include_plotlyjs=include_plotlyjs, full_html=False, config=config, div_id=div_id,
                       include_mathjax=False)


def _plotly_js_text() -> str:
    """The installed plotly package's plotly.js (minified), as its offline mode ships it."""
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def write_plotly_js(folder: str | os.PathLike) -> str:
    """Writes the installed plotly's plotly.js as ``folder/plotly.min.js`` (:data:`PLOTLY_JS`), the one copy
    the reports of an export load with ``<script src="../plotly.min.js">``; an identical file already there is
    left alone. Returns its path."""
    path = os.path.join(os.fspath(folder), PLOTLY_JS)
    text = _plotly_js_text().encode("utf-8")
    if os.path.isfile(path) and os.path.getsize(path) == len(text):
        with open(path, "rb") as f:
            if f.read() == text:
                return path
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(text)
    return path


def _plotly_head(plotly_src: str | None) -> str:
    """The ``<head>`` scripts that load plotly.js once: from ``plotly_src`` (a relative URL), or inlined."""
    config = "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>"
    if plotly_src is None:
        return config + f"<script>{_plotly_js_text()}</script>"
    return config + f"<script src='{html.escape(plotly_src, quote=True)}' charset='utf-8'></script>"


def _missing_plotly_note(plotly_src: str | None) -> str:
    """A script that says, on the page, where plotly.js was expected when it did not load (a report folder
    moved away from its export's ``plotly.min.js``)."""
    if plotly_src is None:
        return ""
    where = html.escape(plotly_src)
    note = (f"<p class='note missing-plotly'><b>The figures need plotly.js</b>, expected at <code>{where}</code> "
            "relative to this page: keep the report folder inside the exported folder beside its plotly.min.js, "
            "or export again with <code>self_contained=True</code> for one file that needs nothing beside it.</p>")
    return ("<script>if (window.Plotly === undefined) { document.querySelector('main').insertAdjacentHTML("
            f"'afterbegin', {json.dumps(note)}); }}</script>")


def _cards(cards: Sequence[dict]) -> str:
    items = "".join(f"<div class='card'><div class='label'>{html.escape(str(c['label']))}</div>"
                    f"<div class='value'>{html.escape(str(c.get('text', c.get('value'))))}</div></div>" for c in cards)
    return f"<div class='cards'>{items}</div>"


def _cell(v: Any) -> str:
    if v is None or v == "":
        return "<td></td>"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f"<td class='num'>{html.escape(f'{v:,}' if isinstance(v, int) else sig3(v))}</td>"
    return f"<td>{html.escape(str(v))}</td>"


def html_table(rows: Sequence[dict], *, limit: int = 25, columns: Sequence[str] | None = None) -> str:
    """The first ``limit`` rows as an HTML table (every column, or ``columns``), with a note when cut."""
    if not rows:
        return ""
    cols = list(columns or dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{html.escape(c.replace('_', ' '))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(_cell(r.get(c)) for c in cols) + "</tr>" for r in rows[:limit])
    cut = (f"<p class='note'>The first {limit:,} of {len(rows):,} rows; all of them are in the CSV file.</p>"
           if len(rows) > limit else "")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{cut}"


def _section(title: str, figures: Sequence[dict], absent: str, extra: str = "", counter: list | None = None) -> str:
    parts = [f"<section><h2>{html.escape(title)}</h2>"]
    if counter is None:  # the figures drawn before, shared across sections (their ids stay unique)
        counter = []
    if figures:
        divs = []
        for fig in figures:
            counter.append(fig["name"])
            div_id = f"fig-{len(counter)}-{fig['name']}"
            divs.append(f"<div class='plot'>{figure_html(fig, False, div_id)}</div>")
        parts.append(f"<div class='grid'>{''.join(divs)}</div>")
    elif absent:
        parts.append(f"<p class='note'>{html.escape(absent)}</p>")
    parts.append(extra)
    parts.append("</section>")
    return "".join(parts)


def render_report(head: dict, sections: Sequence[dict], *, plotly_src: str | None = None) -> str:
    """The page: ``head`` (``title``, ``lines`` under it, ``cards``, ``params``) and ``sections``, each
    ``{"title", "figures", "absent" (the sentence shown when there is no figure), "extra" (HTML)}``.

    plotly.js is loaded once, in the page's ``<head>``: from ``plotly_src``, a URL relative to the page (e.g.
    ``"../plotly.min.js"`` written by :func:`write_plotly_js`), or, with ``plotly_src=None``, inlined (one
    self-contained page of about 5 MB)."""
    drawn: list = []
    body = "".join(_section(s["title"], s.get("figures") or [], s.get("absent", ""), s.get("extra", ""), drawn)
                   for s in sections)
    lines = "".join(f"<p>{html.escape(line)}</p>" for line in head.get("lines", []))
    params = head.get("params") or {}
    param_text = ", ".join(f"{k} = {v}" for k, v in params.items())
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(head['title'])}</title><style>{_CSS}</style>{_plotly_head(plotly_src)}</head><body>"
            f"<header><h1>{html.escape(head['title'])}</h1>{lines}"
            + (f"<p>Parameters: {html.escape(param_text)}</p>" if param_text else "")
            + f"</header><main><section><h2>At a glance</h2>{_cards(head.get('cards') or [])}</section>"
            f"{body}</main>{_missing_plotly_note(plotly_src)}</body></html>")
