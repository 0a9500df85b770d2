"""The criteria of the 'images' part of the validation matrix: from measured :class:`Measure` values to
``(value text, ok, note)`` of a cell. Each criterion is stated in its docstring and in the note it returns
where the cell needs one."""

from __future__ import annotations

import math

import numpy as np

from validation_matrix import UNITS_CHANCE_NOTE
from validation_matrix.images_stats import Measure, Stat

#: Largest tolerated rise between adjacent noise levels (as ``MONO_TOL`` of ``experiments/common.py``).
MONO_TOL = 0.01
#: Smallest fall from the first to the last level of a statistic documented to respond to a stage.
MONO_MIN_DROP = 0.02
#: A statistic documented blind to a stage must stay within this of its first value.
BLIND_TOL = 1e-9
INVARIANCE_TOL = 1e-9
CHANCE_ABS = 0.05


def fmt(x: float) -> str:
    return "NaN" if x is None or math.isnan(x) else f"{x:.3f}"


def short(reason: str, n: int = 90) -> str:
    reason = " ".join(reason.split())
    return reason if len(reason) <= n else reason[: n - 1] + "…"


def shown(m: Measure) -> str:
    """A measure as the page shows it: the number (with its extra), or why there is none."""
    if math.isnan(m.value):
        return f"None: {short(m.reason)}" if m.reason else "NaN (no reason given)"
    return fmt(m.value) + (f" ({m.extra})" if m.extra else "")


def identical(st: Stat, m: Measure) -> tuple[str, bool | None, str]:
    """Identical raters: the perfect value, to 1e-9."""
    if math.isnan(m.value):
        return shown(m), False, f"identical raters must give {st.perfect:g}"
    ok = not math.isnan(m.value) and abs(m.value - st.perfect) <= 1e-9
    return shown(m), ok, "" if ok else f"identical raters must give {st.perfect:g}"


def chance(st: Stat, runs: list[Measure], design: str) -> tuple[str, bool | None, str]:
    """Independent random raters: mean over seeds ± its standard error (seed-to-seed s.d. / √n).

    Chance-corrected statistics: ``|mean| <= 0.05`` or ``|mean| <= 3 s.e.``; σ: the same around its chance
    value 0.05; KS statistics: ``mean <= 0.05`` or at most the Kolmogorov null's 99.9 % quantile for the
    sample sizes measured. Undefined on every seed: n/a with the library's reason."""
    if st.chance not in ("zero", "sigma", "ks", "not_above"):
        return "", None, st.chance
    vals = np.array([m.value for m in runs])
    ok_vals = vals[~np.isnan(vals)]
    if not len(ok_vals):
        return "None", None, f"undefined on this design ({design}): {short(runs[0].reason)}"
    mean = float(ok_vals.mean())
    se = float(ok_vals.std(ddof=1) / math.sqrt(len(ok_vals))) if len(ok_vals) > 1 else float("nan")
    nan_note = f"; undefined on {len(vals) - len(ok_vals)} of {len(vals)} seeds" if len(ok_vals) < len(vals) else ""
    text = f"{mean:.3f} ± {se:.3f} ({len(ok_vals)} seeds)"
    if st.chance == "ks":
        null = float(np.nanmean([m.null for m in runs]))
        ok = mean <= CHANCE_ABS or mean <= null
        return (f"{text}, null ≤ {null:.3f}", ok,
                "" if ok and not nan_note else f"KS at chance: ≤ 0.05 or ≤ the Kolmogorov null's 99.9 % quantile"
                f"{nan_note}")
    if st.chance == "not_above":
        ok = mean <= CHANCE_ABS or mean <= 3 * se
        return text, ok, UNITS_CHANCE_NOTE + nan_note
    centre = 0.05 if st.chance == "sigma" else 0.0
    ok = abs(mean - centre) <= CHANCE_ABS or abs(mean - centre) <= 3 * se
    return text, ok, "" if ok and not nan_note else (
        f"chance value {centre:g}: |mean − {centre:g}| ≤ 0.05 or ≤ 3 s.e.{nan_note}")


def monotone(st: Stat, curves: dict[str, list[Measure]], levels: tuple[float, ...]) -> tuple[str, bool | None, str]:
    """Non-increasing as each stage grows (a rise of at most ``MONO_TOL`` between adjacent levels); falling
    by ``MONO_MIN_DROP`` over the levels under a stage it is documented to respond to; constant (to
    ``BLIND_TOL``) under a stage it is documented blind to; defined at every level."""
    parts, bad = [], []
    for stage, ms in curves.items():
        y = np.array([m.value for m in ms])
        parts.append(f"{stage} {fmt(y[0])}→{fmt(y[-1])}")
        if np.isnan(y).any():
            bad.append(f"{stage}: undefined at γ={levels[int(np.flatnonzero(np.isnan(y))[0])]:g} "
                       f"({short(ms[int(np.flatnonzero(np.isnan(y))[0])].reason, 60)})")
            continue
        if stage in st.blind:
            if np.ptp(y) > BLIND_TOL:
                bad.append(f"{stage}: documented blind, yet moves {np.round(y, 4).tolist()}")
            continue
        rises = np.diff(y)
        if rises.max() > MONO_TOL:
            w = int(np.argmax(rises))
            bad.append(f"{stage}: rises by {rises[w]:.3f} from γ={levels[w]:g} to γ={levels[w + 1]:g}")
        if stage in st.responds and y[0] - y[-1] < MONO_MIN_DROP:
            bad.append(f"{stage}: meant to respond, falls by {y[0] - y[-1]:.3f} only")
    blind = f"; blind to {', '.join(sorted(st.blind))} (constant)" if st.blind else ""
    note = "; ".join(bad) if bad else f"γ ∈ {{{', '.join(f'{g:g}' for g in levels)}}}{blind}"
    return ", ".join(parts), not bad, note


def invariant(base: dict, variants: dict[str, dict]) -> tuple[str, bool | None, str]:
    """Equal to ``INVARIANCE_TOL`` (NaN equal to NaN, the same reason) under every transform."""
    worst, bad = 0.0, []
    for name, m in variants.items():
        b = base
        if math.isnan(b.value) or math.isnan(m.value):
            if not (math.isnan(b.value) and math.isnan(m.value)):
                bad.append(f"{name}: {shown(b)} vs {shown(m)}")
            continue
        d = abs(b.value - m.value)
        worst = max(worst, d)
        if d > INVARIANCE_TOL:
            bad.append(f"{name}: {fmt(b.value)} → {fmt(m.value)}")
    return f"max |Δ| = {worst:.0e}", not bad, "; ".join(bad) if bad else "checked: " + ", ".join(variants)


def degenerate(st: Stat, design: str, m: Measure, careful: Measure | None = None) -> tuple[str, bool | None, str]:
    """A degenerate design. A value documented for it (``st.documented``) passes. Otherwise:

    * ``one_rater``, ``never_meet``, ``all_empty`` (nothing is compared): passes when the library refuses
      with a message or returns None/NaN with a reason; a number fails (a score where nothing was compared).
    * ``empty_rater`` (one rater's labels meet nothing): None/NaN with a reason, a refusal, or a number that is
      not the perfect score.
    * ``single_class`` (careful raters, one class): None/NaN with a reason, a refusal, or a number above the
      statistic's floor (chance, or its minimum) and below the perfect score; the perfect score only when the
      same careful raters with their classes kept (``careful``) score it too (a saturated measurement, not an
      artefact of the single class).
    """
    if m.crashed:
        return short(m.reason, 80), False, "a crash, not a refusal with a message"
    if m.refused:
        return f"refused: {short(m.reason[len('refused: '):], 80)}", True, ""
    if math.isnan(m.value):
        ok = bool(m.reason)
        return shown(m), ok, "" if ok else "undefined without a reason"
    if design in st.documented and abs(m.value - st.documented[design][0]) <= 1e-9:
        return shown(m), True, f"documented: {st.documented[design][1]}"
    if design in ("one_rater", "never_meet", "all_empty"):
        return shown(m), False, "a number where nothing was compared (expected None with a reason, or a refusal)"
    if design == "empty_rater":
        ok = m.value < st.perfect - 1e-9
        return shown(m), ok, "" if ok else "the perfect score for a rater who labels nothing"
    saturated = careful is not None and abs(careful.value - st.perfect) <= 1e-9
    ok = st.floor < m.value < st.perfect or (saturated and abs(m.value - st.perfect) <= 1e-9)
    if ok:
        return shown(m), True, "saturated: the same raters with their classes score it too" if m.value >= st.perfect else ""
    return shown(m), False, (f"careful raters on one class must score in ({st.floor:g}, {st.perfect:g}) "
                             f"(with their classes: {shown(careful) if careful else '?'}): a silent bound or a "
                             "silent perfect score")
