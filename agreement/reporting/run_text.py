"""The text report of a run's results (what :meth:`agreement.fo.runs.results.AgreementResults.report` prints).

One line per headline number, from the method's panel cards (its view's
``"cards"``, then its ``"report_cards"``: numbers the text report adds to the
panel's): counts as integers with thousands separators, flags as ``yes`` /
``no``, other numbers with three significant figures and the interval or
standard error the run has; ``(exact chance baseline)`` where the chance
baseline was computed exactly (the words of the panel and the HTML report);
``undefined (reason)`` where a number is NaN; and each count of undefined or
skipped samples followed by its reasons. Then the corpus (samples, raters) and
the run's warnings. A card is a dict:

* ``key``, ``label``: the summary number and its label;
* ``integer``: a count; ``reason``: the summary key saying why the number is undefined;
* ``se``, ``exact``: the summary keys of its standard error and of "the baseline is exact";
* ``lo``, ``hi``, ``interval``: the summary keys of its interval and the interval's name;
* ``reasons``: the ``detail`` entry listing, per sample, why it is counted (``{sample id: reason}`` or records
  with ``"reason"``); ``why``: the reason when none is listed.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping, TypeGuard

from agreement.reporting.figures.method_figures import sig3

__all__ = ["report_text", "card_text", "count_text_of", "COUNT_KEYS"]

#: Summary keys that are counts whatever their stored type (a count summed in floating point).
COUNT_KEYS = ("iterations", "labels", "id_switches", "fragmentations")
#: Reasons listed per count before "and N more".
MAX_REASONS = 3


def _finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(key: str, value: Any) -> bool:
    if isinstance(value, bool) or not _finite(value):
        return False
    if isinstance(value, int):
        return True
    return (key.startswith("n_") or key in COUNT_KEYS or key.endswith("_boxes")) and float(value).is_integer()


def _reasons(detail: Mapping[str, Any], card: Mapping[str, Any], count: int) -> str:
    """Why ``count`` samples are counted by ``card``: its listed reasons with how many samples each, most
    frequent first."""
    listed = detail.get(card.get("reasons") or "")
    if isinstance(listed, Mapping):
        reasons = [str(r) for r in listed.values()]
    elif isinstance(listed, list):
        reasons = [str(r.get("reason") or "") if isinstance(r, Mapping) else str(r) for r in listed]
    else:
        reasons = []
    why = str(card.get("why") or "")
    reasons = [r or why for r in reasons] or ([why] * count if why else [])
    if not reasons:
        return " (no reason recorded)"
    counts = Counter(reasons).most_common()
    if len(counts) == 1 and counts[0][1] >= count:
        return f" ({counts[0][0]})"
    parts = [f"{n:,}: {r}" for r, n in counts[:MAX_REASONS]]
    rest = count - sum(n for _, n in counts[:MAX_REASONS])
    if rest > 0:
        parts.append(f"{rest:,} more" + (" not listed" if len(counts) <= MAX_REASONS else ""))
    return " (" + "; ".join(parts) + ")"


def count_text_of(value: Any) -> str:
    """A count as text: an integer with thousands separators (``1,234``); a flag as ``yes`` / ``no``."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{int(round(float(value))):,}"


def card_text(summary: Mapping[str, Any], detail: Mapping[str, Any], card: Mapping[str, Any]) -> str:
    """The text of one headline number (see the module docstring for the keys of ``card``).

    Args:
        summary: the run's headline numbers.
        detail: the run's other results (the listed reasons of a count).
        card: the card.

    Returns:
        The number as text, with its interval, standard error or reason.
    """
    value = summary.get(card["key"])
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return count_text_of(value)
    if not _finite(value):
        reason = summary.get(card.get("reason") or "")
        return "undefined" + (f" ({reason})" if reason else " (no reason recorded)")
    if card.get("integer") or _is_count(card["key"], value):
        text = count_text_of(value)
        return text + (_reasons(detail, card, int(value)) if card.get("reasons") and value else "")
    text = sig3(value)
    se = summary.get(card.get("se") or "")
    if _finite(se) and se > 0:
        text += f" ± {sig3(se)} (s.e.)"
    elif card.get("exact") and summary.get(card["exact"]):
        text += " (exact chance baseline)"
    lo, hi = summary.get(card.get("lo") or ""), summary.get(card.get("hi") or "")
    if _finite(lo) and _finite(hi):
        text += f" ({card['interval']} [{sig3(lo)}, {sig3(hi)}])" if card.get("interval") else f" [{sig3(lo)}, {sig3(hi)}]"
    return text


def _default_cards(summary: Mapping[str, Any]) -> list[dict]:
    """Every number of a summary without declared cards, labelled by its key."""
    return [{"key": k, "label": k} for k, v in summary.items()
            if isinstance(v, (int, float)) and not k.endswith("_reason")]


def _corpus_cards(summary: Mapping[str, Any], detail: Mapping[str, Any], shown: set[str]) -> list[tuple[str, str]]:
    """The size of the corpus, where no card shows it (``shown``: the keys shown): samples (or videos and
    frames) and raters."""
    out = []
    for key, label in (("n_videos", "videos"), ("n_frames", "frames"), ("n_samples", "samples")):
        if key in summary and key not in shown and _finite(summary[key]):
            out.append((label, count_text_of(summary[key])))
            if key == "n_frames":
                break
    if "n_raters" in shown:
        return out
    listed = summary.get("raters") if isinstance(summary.get("raters"), list) else detail.get("raters")
    raters = summary.get("n_raters") if _finite(summary.get("n_raters")) else len(listed or [])
    if raters:
        out.append(("raters", count_text_of(raters)))
    return out


def report_text(*, title: str, key: str, view: Mapping[str, Any], summary: Mapping[str, Any],
                detail: Mapping[str, Any], warnings: list[str]) -> str:
    """The report of a run (see the module docstring).

    Args:
        title: the method's title.
        key: the run key.
        view: the method's panel view (its ``"cards"`` and ``"report_cards"``).
        summary: the run's headline numbers.
        detail: the run's other results.
        warnings: the run's warnings.

    Returns:
        The report, one line per number, then ``Warnings:`` and one line per warning.
    """
    cards = list(view.get("cards") or []) + list(view.get("report_cards") or [])
    cards = cards or _default_cards(summary)
    cards = [c for c in cards if c["key"] in summary and summary[c["key"]] != ""]
    rows = [(c["label"], card_text(summary, detail, c)) for c in cards]
    rows += _corpus_cards(summary, detail, {c["key"] for c in cards})
    width = max([len(label) for label, _ in rows] or [0])
    lines = [f"{title} run {key!r}"] + [f"  {label:<{width}}  {text}" for label, text in rows]
    if warnings:
        lines.append("Warnings:")
        lines.extend(f"  - {w}" for w in warnings)
    return "\n".join(lines)
