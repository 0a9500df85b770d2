"""The plugin's one colour convention, used by every figure of the panel and the reports (no FiftyOne).

**Blue is high agreement, red is low agreement**, everywhere:

* a value of agreement (a pair's α, κ, αOT or HOTA, observed agreement, a class's Dice, α or match rate) is
  coloured on :data:`AGREEMENT_SCALE`, from red at 0 (chance for a chance-corrected statistic; below 0 stays
  the darkest red) through white at 0.5 to blue at 1 (:func:`agreement_colours`, :data:`AGREEMENT_RANGE`);
* an effect on agreement (rater vitality, α − α without the rater) is blue where it raises agreement
  (≥ 0) and red where it lowers it (:func:`effect_colours`);
* a frame or item flagged as low agreement is :data:`LOW` (its stretch shaded :data:`LOW_SHADE`), the others
  :data:`HIGH`;
* quantities that are not agreement take no red or blue: shares and probabilities (a class confusion) are
  grey (:data:`SHARE_SCALE`), counts (a histogram's bars) :data:`NEUTRAL`, a drilled bar or cell is outlined
  or filled :data:`SELECTED` (orange), guide lines are :data:`REFERENCE`, and series and raters are told
  apart by :data:`SERIES_COLOURS` and :data:`RATER_COLOURS`, which hold neither the red nor the blue.

The scales are explicit colour lists, never plotly's named scales, so that the App (plotly.js) and the
reports (plotly.py) draw the same colours (plotly.js's ``"RdBu"`` runs from blue to red, plotly.py's from red
to blue).
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["HIGH", "LOW", "MIDDLE", "AGREEMENT_SCALE", "AGREEMENT_RANGE", "SHARE_SCALE", "NEUTRAL", "SELECTED",
           "REFERENCE", "LOW_SHADE", "HIGH_BAND", "SERIES_COLOURS", "RATER_COLOURS", "agreement_colours", "effect_colours",
           "agreement_colour_axis"]

#: High agreement, or a rise in agreement: blue (ColorBrewer RdBu's darkest blue).
HIGH = "#2166ac"
#: Low agreement, or a drop in agreement: red (ColorBrewer RdBu's darkest red).
LOW = "#b2182b"
#: The middle of the agreement scale (0.5): near white.
MIDDLE = "#f7f7f7"
#: Agreement from 0 (red) through 0.5 (white) to 1 (blue), as a plotly colour scale.
_STOPS: list[tuple[float, str]] = [(0.0, LOW), (0.25, "#ef8a62"), (0.5, MIDDLE), (0.75, "#67a9cf"), (1.0, HIGH)]
AGREEMENT_SCALE = [[p, c] for p, c in _STOPS]
#: The values the ends of :data:`AGREEMENT_SCALE` stand for (below 0 is drawn as 0, the darkest red).
AGREEMENT_RANGE = (0.0, 1.0)
#: Shares and probabilities that are not agreement (a class confusion): white at 0 to dark grey at 1.
SHARE_SCALE = [[0.0, "#f7f7f7"], [1.0, "#252525"]]
#: One series that is not agreement (a histogram's counts): slate grey.
NEUTRAL = "#6b7a8f"
#: The bar or cell the user drilled into: orange.
SELECTED = "#ff6d04"
#: Guide lines (a chosen τ, a threshold, a reference): grey.
REFERENCE = "#888888"
#: The shade behind a stretch of low agreement (:data:`LOW` at 13 % opacity).
LOW_SHADE = "rgba(178, 24, 43, 0.13)"
#: The band of an interval around a :data:`HIGH` curve (:data:`HIGH` at 18 % opacity).
HIGH_BAND = "rgba(33, 102, 172, 0.18)"
#: Series told apart by colour (curves, grouped bars): no red, no blue (plotly's ``layout.colorway``).
SERIES_COLOURS = ["#1b9e77", "#7570b3", "#d95f02", "#66a61e", "#e7298a", "#a6761d", "#666666", "#17becf"]
#: Raters told apart by colour (a video's tracks): no red, no blue.
RATER_COLOURS = ["#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666", "#17becf",
                 "#8c564b", "#bcbd22", "#9467bd", "#196619"]


def _mix(a: str, b: str, t: float) -> str:
    """The colour a fraction ``t`` of the way from ``a`` to ``b`` (``#rrggbb``)."""
    ca = [int(a[i:i + 2], 16) for i in (1, 3, 5)]
    cb = [int(b[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(ca, cb, strict=True))


def agreement_colours(values: Iterable[float | None], *, missing: str = REFERENCE) -> list[str]:
    """Each value's colour on :data:`AGREEMENT_SCALE` (0 red, 0.5 white, 1 blue; clipped to [0, 1]); a
    ``None`` value is ``missing``."""
    out = []
    for v in values:
        if v is None:
            out.append(missing)
            continue
        x = min(max(float(v), AGREEMENT_RANGE[0]), AGREEMENT_RANGE[1])
        for (p0, c0), (p1, c1) in zip(_STOPS[:-1], _STOPS[1:], strict=True):
            if x <= p1:
                out.append(_mix(c0, c1, (x - p0) / (p1 - p0)))
                break
    return out


def effect_colours(values: Iterable[float | None]) -> list[str]:
    """An effect on agreement (e.g. rater vitality): :data:`HIGH` (blue) where it raises agreement or is 0,
    :data:`LOW` (red) where it lowers it, :data:`REFERENCE` (grey) where undefined."""
    return [REFERENCE if v is None else LOW if float(v) < 0 else HIGH for v in values]


def agreement_colour_axis(title: str, *, below_zero: bool = True) -> dict:
    """A heatmap trace's colour settings for agreement values: :data:`AGREEMENT_SCALE` over
    :data:`AGREEMENT_RANGE` and a colour bar titled ``title``.

    Args:
        title: the colour bar's title (the value shown).
        below_zero: whether the value can fall below 0 (a chance-corrected α): the lowest tick then reads
            ``≤ 0``; ``False`` for values in ``[0, 1]`` (observed agreement, Dice), whose lowest tick reads ``0``.
    """
    lo, hi = AGREEMENT_RANGE
    return {"colorscale": AGREEMENT_SCALE, "zmin": lo, "zmax": hi,
            "colorbar": {"title": {"text": title, "side": "right"}, "thickness": 12, "len": 0.9,
                         "tickvals": [lo, 0.5, hi], "ticktext": ["≤ 0" if below_zero else "0", "0.5", "1"]}}
