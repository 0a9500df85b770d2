"""What every figure and card of the panel shares: number formatting and the plotly layout (no FiftyOne).

The panel's column is narrow (about 480 px at 1280 × 720, 560 px at
1440 × 900), so :func:`figure_layout` wraps titles and subtitles into lines
that fit it and makes room for them, and :func:`sig3` writes every number
with three significant figures (``0.560``, not ``0.56``).
"""

from __future__ import annotations

import math
import textwrap
from typing import Any, TypeGuard

import numpy as np

from agreement.reporting.figures.palette import SERIES_COLOURS

__all__ = [
    "FIGURE_CONFIG",
    "SUBTITLE_CHARS",
    "TITLE_CHARS",
    "add_subtitle",
    "count_text",
    "figure",
    "figure_layout",
    "floats",
    "is_finite",
    "median_count",
    "plural",
    "sig3",
    "wrap_lines",
]

FIGURE_CONFIG = {"scrollZoom": False, "displayModeBar": False, "displaylogo": False, "responsive": True}
#: Characters per line of a figure's title (15 px bold) and subtitle (12 px) in a 460 px wide plot.
TITLE_CHARS = 46
SUBTITLE_CHARS = 72


def sig3(x, *, signed: bool = False) -> str:
    """``x`` to three significant figures, trailing zeros kept (``0.560``, ``1.00``, ``−0.235``);
    ``"undefined"`` for None/NaN; numbers of 1,000 and more as integers with thousands separators,
    below 0.0001 in scientific notation."""
    if x is None or not isinstance(x, (int, float, np.floating, np.integer)) or not math.isfinite(float(x)):
        return "undefined"
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) >= 1000:  # big numbers are counts: 1,234
        text = f"{x:,.0f}"
    else:  # 0.000321; below 1e-4 in scientific notation (1.23e-05)
        text = f"{x:#.3g}"
        text = f"{x:,.0f}" if "e+" in text else text if "e" in text else text.rstrip(".")
    return ("+" + text) if signed and x > 0 else text


def count_text(n: int, *, what: str = "sample") -> str:
    """``"1 sample"``, ``"1,234 samples"``."""
    return f"{int(n):,} {plural(n, what)}"


def median_count(x: float) -> str:
    """A median of counts: whole with thousands separators, a half with its one decimal (``2``, ``2.5``,
    ``1,234``): counts are exact, not three significant figures."""
    x = float(x)
    return f"{x:,.0f}" if x == int(x) else f"{x:,.1f}"


def plural(n: int, what: str) -> str:
    """``what``, with an ``s`` (``es`` after s/x) unless ``n`` is 1: ``class`` → ``classes``."""
    if int(n) == 1:
        return what
    return what + ("es" if what.endswith(("s", "x", "ch", "sh")) else "s")


def is_finite(x: object) -> TypeGuard[float | np.floating | np.integer]:
    """Whether ``x`` is a finite number (``None``, NaN, strings: no)."""
    return x is not None and isinstance(x, (int, float, np.floating, np.integer)) and math.isfinite(float(x))


def floats(values) -> list:
    """``values`` as floats, ``None`` where not finite."""
    return [float(v) if is_finite(v) else None for v in (values if values is not None else [])]


def wrap_lines(text: str, width: int) -> list[str]:
    r"""``text`` in lines of at most ``width`` characters, broken at spaces (a ``" · "`` separator
    preferably ends a line); explicit line breaks (``"\n"``) kept."""
    lines = []
    for part in str(text).split("\n"):
        lines += textwrap.wrap(part, width=width, break_long_words=False, break_on_hyphens=False) or [""]
    return lines


def figure_layout(title: str, xtitle: str, ytitle: str, *, legend: bool = False, height: int = 320,
                  subtitle: str | None = None, **extra) -> dict:
    """A plotly layout with a title (wrapped to the panel's column) and a smaller subtitle below it,
    both axis titles, room for the tick labels, no zooming; ``height`` is the plot area's height plus
    the usual margins and grows with the title's lines."""
    t_lines = wrap_lines(title, TITLE_CHARS)
    s_lines = wrap_lines(subtitle, SUBTITLE_CHARS) if subtitle else []
    text = "<br>".join(f"<b>{line}</b>" for line in t_lines)
    if s_lines:
        text += "<br>" + "<br>".join(f"<span style='font-size:12px'>{line}</span>" for line in s_lines)
    top = 22 + 20 * len(t_lines) + 16 * len(s_lines)
    layout: dict[str, Any] = {
        "title": {"text": text, "x": 0.01, "xanchor": "left", "yref": "container", "y": 1, "yanchor": "top",
                  "pad": {"t": 10}, "font": {"size": 15}},
        "xaxis": {"title": {"text": xtitle}, "automargin": True, "fixedrange": True},
        "yaxis": {"title": {"text": ytitle}, "automargin": True, "fixedrange": True},
        "showlegend": bool(legend),
        "height": height + max(0, top - 48),
        "margin": {"t": top, "l": 64, "r": 24, "b": 56, "pad": 2},
        "hoverlabel": {"namelength": -1},
        "dragmode": False,
        "colorway": list(SERIES_COLOURS),  # series told apart by colour: no agreement red or blue
    }
    if legend:
        layout["legend"] = {"orientation": "h", "x": 0, "y": -0.3, "xanchor": "left", "yanchor": "top"}
        layout["margin"]["b"] = 120
        layout["height"] += 60
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(layout.get(k), dict):
            layout[k] = {**layout[k], **v}
        else:
            layout[k] = v
    return layout


def figure(name: str, title: str, traces: list, layout: dict, *, clickable: str | None = None) -> dict:
    """A figure as the panel and the typed results pass it around: ``{"name", "title", "traces",
    "layout", "config", "click"}``."""
    return {"name": name, "title": title, "traces": traces, "layout": layout, "config": dict(FIGURE_CONFIG),
            "click": clickable}


def add_subtitle(layout: dict, text: str) -> dict:
    """``layout`` with ``text`` as further subtitle lines under its title (wrapped, room made)."""
    lines = wrap_lines(text, SUBTITLE_CHARS)
    layout["title"]["text"] += "".join(f"<br><span style='font-size:12px'>{line}</span>" for line in lines)
    layout["margin"]["t"] += 16 * len(lines)
    layout["height"] += 16 * len(lines)
    return layout


def tick_room(labels, per_char: float = 8.0, free_chars: int = 4, cap: int = 160) -> int:
    """Extra figure height for category tick labels that plotly slants (a crowd's rater names): about
    ``per_char`` pixels a character past the first ``free_chars`` of the longest, at most ``cap``; without
    it the slanted names take the plot area's height and the y title runs into the subtitle."""
    longest = max((len(str(x)) for x in labels), default=0)
    return int(min(cap, per_char * max(0, longest - free_chars)))

