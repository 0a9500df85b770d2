"""Shared pieces of the 'video_classes' part of the validation matrix: value formatting and the criteria of
each property (:data:`validation_matrix.PROPERTIES`), applied the same way to every method.

A *statistic function* maps a design to ``(value, reason)``: a float (NaN when undefined) and the library's
reason text (``""`` when defined). The cell builders below turn measured values into :class:`Cell` objects.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from validation_matrix import Cell

#: Absolute chance tolerance of the issue: ``|statistic| <= 0.05``.
CHANCE_TOL = 0.05
#: A value at or above this is "perfect".
PERFECT = 1.0 - 1e-9
#: A score "falls" at a noise step unless it rises by more than this (as the images part and
#: ``experiments/common.py``: a seeded simulation moves a score by a few thousandths between close levels).
MONO_TOL = 0.01
#: Exact invariances (permutations, renaming, frame duplication) hold to this.
EXACT_TOL = 1e-9

Stat = Callable[[object], tuple[float, str]]


def num(v: float, digits: int = 3) -> str:
    """A number as the page shows it (``"nan"`` for NaN)."""
    return "nan" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


def short(reason: str, n: int = 90) -> str:
    """A reason text cut to ``n`` characters for a cell."""
    reason = " ".join(str(reason).split())
    return reason if len(reason) <= n else reason[: n - 1] + "…"


def identical_cell(method: str, kind: str, got: tuple[float, str], perfect: float = 1.0) -> Cell:
    """Identical raters: the perfect value (to 1e-9)."""
    v, why = got
    ok = math.isfinite(v) and abs(v - perfect) <= 1e-9
    text = num(v) if math.isfinite(v) else f"None: {short(why)}"
    return Cell(method, kind, "identical", text, ok, "" if ok else f"expected {perfect:g}")


def chance_cell(method: str, kind: str, prop: str, values: Sequence[float], centre: float = 0.0,
                se: float | None = None, extra: str = "", one_sided: str = "") -> Cell:
    """Independent random raters: the mean over seeds within ``CHANCE_TOL`` of ``centre``, or within 3
    standard errors of it (``se``: the s.e. of the mean; default the seeds' standard deviation over
    ``sqrt(n)``, which needs two seeds or more). ``one_sided`` (the reason, shown in the note): only a mean
    above ``centre`` by more than that fails (a statistic documented to sit below chance by construction)."""
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all():
        return Cell(method, kind, prop, f"nan in {int((~np.isfinite(v)).sum())} of {len(v)} seeds", False,
                    "undefined at chance")
    m = float(v.mean())
    if se is None:
        se = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")
    dev = (m - centre) if one_sided else abs(m - centre)
    ok = dev <= CHANCE_TOL or (math.isfinite(se) and dev <= 3 * se)
    text = f"{m:.3f} ± {se:.3f}" + (f" ({extra})" if extra else "")
    crit = f"|mean − {centre:g}| ≤ max(0.05, 3 s.e.); s.e. of the mean over {len(v)} seeds"
    return Cell(method, kind, prop, text, ok, one_sided or ("" if ok else crit))


def ks_null(m: int, n: int) -> float:
    """The 99.9 % quantile of the asymptotic two-sample Kolmogorov null for samples of ``m`` and ``n``: a KS
    statistic is a supremum, never 0 on finite samples, so "at chance" means "within its null"."""
    if m < 1 or n < 1:
        return float("nan")
    return math.sqrt(-math.log(0.0005) / 2.0) * math.sqrt((m + n) / (m * n))


def ks_chance_cell(method: str, kind: str, prop: str, values: Sequence[float], nulls: Sequence[float],
                   extra: str = "") -> Cell:
    """Independent random raters, for a KS statistic: the mean over seeds at most 0.05 or at most the mean
    :func:`ks_null` of the samples compared (as the images part judges KS)."""
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all():
        return Cell(method, kind, prop, f"nan in {int((~np.isfinite(v)).sum())} of {len(v)} seeds", False,
                    "undefined at chance")
    m, null = float(v.mean()), float(np.nanmean(np.asarray(nulls, dtype=np.float64)))
    se = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")
    ok = m <= CHANCE_TOL or m <= null
    text = f"{m:.3f} ± {se:.3f}, null ≤ {null:.3f}" + (f" ({extra})" if extra else "")
    return Cell(method, kind, prop, text, ok, "KS at chance: ≤ 0.05 or ≤ the Kolmogorov null's 99.9 % quantile "
                "for the samples compared (frame labels: frames of a video count as one draw)")


def na_cell(method: str, kind: str, prop: str, why: str, value: str = "—") -> Cell:
    """Not applicable, with the reason."""
    return Cell(method, kind, prop, value, None, why)


def monotone_cell(method: str, kind: str, levels: Sequence[float], values: Sequence[float],
                  what: str) -> Cell:
    """Non-increasing as the noise grows (mean over seeds at each level, coupled draws)."""
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    d = np.diff(v[finite])
    ok = bool(finite.sum() >= 2 and (d <= MONO_TOL).all())
    text = " → ".join(num(x, 2) for x in v)
    note = "" if ok else (f"rises by {d.max():.3f} ({what})" if d.size else f"undefined ({what})")
    return Cell(method, kind, "monotone", text, ok, note)


def invariant_cell(method: str, kind: str, base: float, variants: dict[str, float],
                   tolerances: dict[str, float] | None = None, why_loose: str = "") -> Cell:
    """Unchanged by every variant (each within its tolerance, default :data:`EXACT_TOL`; ``why_loose`` says
    why a tolerance is wider). An undefined base value fails: nothing was compared."""
    tolerances = tolerances or {}
    if not math.isfinite(base):
        return Cell(method, kind, "invariant", "nan", False, "undefined on the invariance corpus")
    diffs = {k: (abs(x - base) if math.isfinite(x) and math.isfinite(base) else
                 (0.0 if (math.isnan(x) and math.isnan(base)) else math.inf)) for k, x in variants.items()}
    bad = [k for k, d in diffs.items() if d > tolerances.get(k, EXACT_TOL)]
    worst = max(diffs.values()) if diffs else 0.0
    text = f"max |Δ| {worst:.1g}" if worst else "max |Δ| 0"
    loose = {k: t for k, t in tolerances.items() if t > EXACT_TOL}
    note = ""
    if bad:
        note = "changed by " + ", ".join(f"{k} ({diffs[k]:.3g})" for k in bad)
    elif loose:
        note = ("exact to 1e-9 except " + ", ".join(f"{k} (≤ {t:g})" for k, t in loose.items())
                + (f": {why_loose}" if why_loose else ""))
    return Cell(method, kind, "invariant", text, not bad, note)


def degenerate_cell(method: str, kind: str, prop: str, got: tuple[float, str], need_none: bool = False,
                    floor: float | None = None, ceiling: float | None = None) -> Cell:
    """A degenerate design: NaN/None with a reason, or (unless ``need_none``) a finite value that is not a
    silent perfect score. ``floor``: careful raters must score at least this (a perfect score is then
    allowed: they may truly agree); ``ceiling``: the value without the degenerate rater (a rater who labels
    nothing must not raise the score). One rater refused with a clear ``ValueError`` is the documented
    answer (ARCHITECTURE: "a single rater gets a clear error")."""
    v, why = got
    if str(why).startswith("error:"):
        ok = prop == "one_rater" and str(why).startswith("error: ValueError")
        return Cell(method, kind, prop, "refused: " + short(why.split(":", 2)[-1]), ok,
                    "a clear error for a single rater" if ok else "the library raised instead of answering")
    if not math.isfinite(v):
        ok = bool(str(why).strip())
        return Cell(method, kind, prop, f"None: {short(why)}" if ok else "nan, no reason", ok,
                    "" if ok else "undefined without a reason")
    if need_none:
        return Cell(method, kind, prop, num(v), False, "a number where there is nothing to compare: None "
                                                       "with a reason expected")
    text = num(v) + (f" ({short(why, 60)})" if why else "")
    if floor is not None:
        ok = v >= floor
        return Cell(method, kind, prop, text, ok, "" if ok else
                    f"careful raters score {num(v)} < {floor:g}: the value does not measure their agreement")
    if ceiling is not None:
        ok = math.isfinite(ceiling) and v <= ceiling + 1e-9
        return Cell(method, kind, prop, text, ok, "" if ok else
                    f"above the {num(ceiling)} of the other raters alone: an empty rater raised the score")
    if v >= PERFECT and not why:
        return Cell(method, kind, prop, text, False, "a silent perfect score")
    return Cell(method, kind, prop, text, True)


def empty_rater_ceiling(without: float, prop: str) -> float | None:
    """The empty-rater design's ceiling (:func:`degenerate_cell`): the other raters' value alone; none when
    that is undefined (there is no score to raise: the cell then only refuses a silent perfect score)."""
    return without if prop == "empty_rater" and math.isfinite(without) else None
