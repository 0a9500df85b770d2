"""The rater-pair heatmap: which raters it shows, each cell's support, and a figure that fits the panel.

A crowd has hundreds of raters and thousands of pairs, each sharing a sample
or two. The heatmap shows at most ``MAX_HEATMAP_RATERS`` raters, picked by a
rule the user sets (:func:`select_pair_raters`):

* ``"shared"``: raters who share the most samples *with each other* (greedy:
  the pair sharing the most, then the rater sharing the most with those
  already chosen), so that the cells are filled;
* ``"lowest"``: the raters of the pairs with the lowest value (both raters
  of the lowest pair, then of the next, ...);
* ``"rater"``: one named rater and the partners it shares the most samples
  with.

Every cell carries its support (shared samples and, for KαLOS, the objects
either rater drew) in its hover and optionally in the cell, and pairs with
fewer shared samples than a minimum are hidden (greyed, "below the minimum
support"), not coloured. No FiftyOne here.
"""

from __future__ import annotations

from typing import Sequence

from agreement.reporting.figures.base import count_text, figure, figure_layout, is_finite, plural, sig3
from agreement.reporting.figures.palette import SELECTED, agreement_colour_axis
from agreement.reporting.pair_statistics import observed_agreement

__all__ = ["MAX_HEATMAP_RATERS", "DEFAULT_HEATMAP_RATERS", "MAX_TEXT_RATERS", "PAIR_RULES", "PAIR_STATISTICS", "pair_key",
           "select_pair_raters", "pair_matrix", "pair_matrix_figure"]

MAX_HEATMAP_RATERS = 20
DEFAULT_HEATMAP_RATERS = 10
#: Up to this many raters the cells carry their values (beyond, a cell is too narrow in the panel).
MAX_TEXT_RATERS = 10
#: The rules that pick the heatmap's raters, and how the panel names them.
PAIR_RULES = {"shared": "raters who share the most samples", "lowest": "raters of the lowest pairs",
              "rater": "one rater and its partners"}
#: What the cells can be coloured by: the run's pairwise statistic or the pair's observed agreement.
PAIR_STATISTICS = {"value": "the run's pairwise statistic", "observed": "observed agreement"}


def pair_key(a: str, b: str) -> str:
    """The order-free key ``"a|b"`` (``a < b``) of a rater pair."""
    a, b = sorted([str(a), str(b)])
    return f"{a}|{b}"


def _support(records: Sequence[dict], min_support: int) -> list[dict]:
    return [r for r in records if int(r.get("n_shared_samples") or 0) >= max(1, int(min_support))]


def _greedy_shared(records: list[dict], k: int) -> list[str]:
    """Raters who share the most samples with each other: the best pair, then, one at a time, the rater
    sharing the most samples with those chosen (ties: most shared samples overall, then name)."""
    shared: dict[str, dict[str, int]] = {}
    total: dict[str, int] = {}
    for r in records:
        a, b, n = str(r["rater_a"]), str(r["rater_b"]), int(r.get("n_shared_samples") or 0)
        shared.setdefault(a, {})[b] = n
        shared.setdefault(b, {})[a] = n
        total[a], total[b] = total.get(a, 0) + n, total.get(b, 0) + n
    if not records:
        return []
    best = min(records, key=lambda r: (-int(r.get("n_shared_samples") or 0), str(r["rater_a"]), str(r["rater_b"])))
    chosen = [str(best["rater_a"]), str(best["rater_b"])]
    while len(chosen) < k:
        gain: dict[str, int] = {}
        for c in chosen:
            for other, n in shared.get(c, {}).items():
                if other not in chosen:
                    gain[other] = gain.get(other, 0) + n
        pool = gain or {r: 0 for r in total if r not in chosen}
        if not pool:
            break
        chosen.append(min(pool, key=lambda r: (-pool[r], -total.get(r, 0), r)))
    return chosen


def select_pair_raters(records: Sequence[dict], value: str, raters: Sequence[str], *, rule: str = "shared",
                       k: int = DEFAULT_HEATMAP_RATERS, rater: str | None = None, min_support: int = 1) -> list[str]:
    """The raters the heatmap shows, by ``rule`` (see the module docstring), at most ``k``.

    Only pairs with at least ``min_support`` shared samples count. With ``k``
    or fewer raters in all, every rater is shown (in the order of ``raters``).

    Args:
        records: the run's rater-pair records (``rater_a``, ``rater_b``, ``n_shared_samples``, ``value``).
        value: the record key of the pair's value (``"lowest"`` ranks by it; undefined values last).
        raters: every rater of the run, in display order.
        rule: ``"shared"``, ``"lowest"`` or ``"rater"``.
        k: how many raters, ``2 <= k <= MAX_HEATMAP_RATERS``.
        rater: the named rater of rule ``"rater"``.
        min_support: the fewest shared samples a pair needs to count.

    Returns:
        The chosen raters: in ``raters`` order, except under rule ``"rater"`` (the named rater first,
        then its partners, most shared samples first).

    Raises:
        ValueError: for an unknown rule, ``k`` out of range, or rule ``"rater"`` without a known rater.
    """
    if rule not in PAIR_RULES:
        raise ValueError(f"rule must be one of {sorted(PAIR_RULES)}, got {rule!r}")
    if not 2 <= int(k) <= MAX_HEATMAP_RATERS:
        raise ValueError(f"k must be between 2 and {MAX_HEATMAP_RATERS}, got {k!r}")
    raters = [str(r) for r in raters]
    if rule == "rater" and str(rater) not in raters:
        raise ValueError(f"rule 'rater' needs one of the run's raters, got {rater!r}")
    k = int(k)
    if len(raters) <= k:
        return raters
    kept = _support(records, min_support)
    if rule == "rater":
        mine = [r for r in kept if str(rater) in (str(r["rater_a"]), str(r["rater_b"]))]
        mine.sort(key=lambda r: (-int(r["n_shared_samples"]), _value_key(r.get(value)),
                                 str(r["rater_b"] if str(r["rater_a"]) == str(rater) else r["rater_a"])))
        partners = [str(r["rater_b"] if str(r["rater_a"]) == str(rater) else r["rater_a"]) for r in mine]
        return [str(rater)] + partners[:k - 1]
    if rule == "lowest":
        chosen: list[str] = []
        for r in sorted((r for r in kept if is_finite(r.get(value))),
                        key=lambda r: (float(r[value]), -int(r["n_shared_samples"]), str(r["rater_a"]),
                                       str(r["rater_b"]))):
            for name in (str(r["rater_a"]), str(r["rater_b"])):
                if name not in chosen and len(chosen) < k:
                    chosen.append(name)
            if len(chosen) >= k:
                break
    else:
        chosen = _greedy_shared(kept, k)
    keep = set(chosen)
    return [r for r in raters if r in keep]


def _value_key(v) -> float:
    return float(v) if is_finite(v) else float("inf")


def pair_matrix(detail: dict, value: str, title: str, *, max_raters: int = MAX_HEATMAP_RATERS,
                override: dict | None = None, raters: Sequence[str] | None = None, counts: dict | None = None,
                min_support: int = 1, rule_text: str | None = None) -> dict | None:
    """The rater-pair heatmap's matrices, from the sparse ``detail["rater_pairs"]`` records.

    Args:
        detail: the run's ``detail`` (``raters``, ``rater_pairs``, optional ``rater_order``).
        value: the record key of the pair's value.
        title: the heatmap's title.
        max_raters: without ``raters``, at most this many, picked by rule ``"shared"``.
        override: optional ``"a|b"`` → ``{value: v, "n_samples": n}`` replacing the records' values
            and shared counts (a view's numbers); pairs absent from it have no data.
        raters: the raters to show, in order (default: clustering order ``detail["rater_order"]`` or as
            listed, picked by :func:`select_pair_raters` when more than ``max_raters``).
        counts: optional ``"a|b"`` → ``{"n_units", "n_agree"}`` (KαLOS: the objects either drew and
            those both drew alike), giving each cell its observed agreement and interval.
        min_support: cells of pairs sharing fewer samples are hidden (``z`` None, ``hidden`` True).
        rule_text: how the raters were picked, for the subtitle.

    Returns:
        ``{"raters", "z", "shared", "units", "observed", "hidden", "n_hidden", "n_raters", "title",
        "rule_text", "min_support"}`` (``z`` None where undefined, no data or hidden; ``shared`` the
        shared-sample counts, 0 = never met; ``units``/``observed`` None without ``counts``), or None.
    """
    records = list(detail.get("rater_pairs") or [])
    if override is not None:
        new = []
        for rec in records:
            o = override.get(f"{rec['rater_a']}|{rec['rater_b']}") or override.get(f"{rec['rater_b']}|{rec['rater_a']}")
            if o is not None:
                new.append({**rec, value: o.get(value), "n_shared_samples": int(o.get("n_samples", 0))})
        records = new
    names = [str(r) for r in detail.get("raters") or []]
    order = detail.get("rater_order") or list(range(len(names)))
    ordered = [names[i] for i in order]
    if raters is None:
        raters = select_pair_raters(records, value, ordered, rule="shared", k=min(max_raters, MAX_HEATMAP_RATERS),
                                    min_support=min_support) if len(ordered) > max_raters else ordered
        if len(ordered) > max_raters:
            rule_text = rule_text or f"the {len(raters)} of {len(ordered)} raters who share the most samples"
    raters = [str(r) for r in raters]
    if not raters:
        return None
    return _matrices(records, value, raters, counts, min_support,
                     {"title": title, "rule_text": rule_text, "n_raters": len(names)})


def _matrices(records: list[dict], value: str, raters: list[str], counts: dict | None, min_support: int,
              extra: dict) -> dict:
    pos = {r: i for i, r in enumerate(raters)}
    n = len(raters)
    z: list[list[float | None]] = [[None] * n for _ in range(n)]
    shared = [[0] * n for _ in range(n)]
    hidden = [[False] * n for _ in range(n)]
    units: list[list[int | None]] = [[None] * n for _ in range(n)]
    observed: list[list[dict | None]] = [[None] * n for _ in range(n)]
    n_hidden = 0
    for rec in records:
        i, j = pos.get(str(rec["rater_a"])), pos.get(str(rec["rater_b"]))
        if i is None or j is None or i == j:
            continue
        s = int(rec.get("n_shared_samples") or 0)
        shared[i][j] = shared[j][i] = s
        if counts is not None:
            c = counts.get(pair_key(rec["rater_a"], rec["rater_b"]))
            if c is not None:
                units[i][j] = units[j][i] = int(c["n_units"])
                observed[i][j] = observed[j][i] = observed_agreement(c["n_agree"], c["n_units"])
        if s < int(min_support):
            hidden[i][j] = hidden[j][i] = True
            n_hidden += 1
            continue
        v = rec.get(value)
        z[i][j] = z[j][i] = float(v) if is_finite(v) else None
    return {"raters": raters, "z": z, "shared": shared, "units": units if counts is not None else None,
            "observed": observed if counts is not None else None, "hidden": hidden,
            "n_hidden": n_hidden, "min_support": int(min_support), **extra}


def _cell_hover(pm: dict, i: int, j: int, value_name: str, where: str, clickable: bool) -> str:
    a, b = pm["raters"][i], pm["raters"][j]
    if i == j:
        return f"{a}: the diagonal (a rater with itself) is not measured"
    s = pm["shared"][i][j]
    if not s:
        return f"{a} × {b}: never given the same sample (no data)"
    support = count_text(s, what="shared sample") + where
    if pm["units"] is not None and pm["units"][i][j] is not None:
        support += f", {count_text(pm['units'][i][j], what='object')} either drew"
    if pm["hidden"][i][j]:
        return f"{a} × {b}: hidden, {support} (below the minimum of {pm['min_support']})"
    v = pm["z"][i][j]
    text = f"{a} × {b}: {value_name} {sig3(v) if v is not None else 'undefined'} on {support}"
    obs = pm["observed"][i][j] if pm["observed"] is not None else None
    if obs and obs["value"] is not None:
        text += (f"<br>observed agreement {sig3(obs['value'])}, 95% [{sig3(obs['lo'])}, {sig3(obs['hi'])}]"
                 f" ({round(obs['value'] * obs['n'])} of {obs['n']} objects alike)")
    if v is None and obs and obs["value"] == 1:
        text += f"<br>{value_name} undefined: they drew the same objects, all of one class (no variation)"
    return text + ("<br>click: the samples where the two disagree most" if clickable else "")


def _cell_texts(pm: dict, z: list, show_support: bool) -> list[list[str]]:
    out = []
    for i, row in enumerate(z):
        line = []
        for j, v in enumerate(row):
            if i == j or not pm["shared"][i][j]:
                line.append("")
                continue
            t = ("" if pm["hidden"][i][j] else "undef.") if v is None else sig3(v)  # undefined, not "never met"
            if show_support:
                t = (t + "<br>" if t else "") + f"n={pm['shared'][i][j]}"
            line.append(t)
        out.append(line)
    return out


def pair_matrix_figure(pm: dict, value_name: str, scope: str, clickable: bool, *, where: str = "",
                       selected: list | None = None, statistic: str = "value", show_support: bool = False) -> dict:
    """The heatmap figure, sized to the panel's column.

    Cells coloured by the run's value (``statistic="value"``) or by the observed agreement (``"observed"``),
    both on the plugin's agreement scale (:mod:`agreement.reporting.figures.palette`: red at 0 or below, white
    at 0.5, blue at 1); values to three significant figures in the
    cells up to ``MAX_TEXT_RATERS`` raters (and, with ``show_support``, each pair's shared samples ``n=``); every rater's name on
    both axes; a hover naming both raters with the value, its support and the observed agreement; the
    drilled pair (``selected``) outlined. Height from the number of raters (22–30 px a row).
    """
    raters = pm["raters"]
    n = len(raters)
    observed = statistic == "observed" and pm.get("observed") is not None
    z = ([[None if o is None or pm["hidden"][i][j] else o["value"] for j, o in enumerate(row)]
          for i, row in enumerate(pm["observed"])] if observed else pm["z"])
    shown_name = "observed agreement" if observed else value_name
    hover = [[_cell_hover(pm, i, j, value_name, where, clickable) for j in range(n)] for i in range(n)]
    text = _cell_texts(pm, z, show_support) if n <= MAX_TEXT_RATERS else [[""] * n for _ in range(n)]
    trace = {"type": "heatmap", "x": raters, "y": raters, "z": z, "text": text, "texttemplate": "%{text}",
             "textfont": {"size": 11 if n <= 8 else 9}, "hovertext": hover,
             "hovertemplate": "%{hovertext}<extra></extra>", "xgap": 1, "ygap": 1, "hoverongaps": True,
             **agreement_colour_axis(shown_name, below_zero=not observed)}  # blue high, red low (at or below chance)
    lines = [pm.get("rule_text") or f"{count_text(n, what='rater')}", scope]
    if pm.get("n_hidden"):
        lines.append(f"{pm['n_hidden']:,} {plural(pm['n_hidden'], 'pair')} below {pm['min_support']} shared "
                     f"{plural(pm['min_support'], 'sample')} hidden")
    if n > MAX_TEXT_RATERS:
        lines.append(f"values in the hover (in the cells up to {MAX_TEXT_RATERS} raters)")
    if clickable:
        lines.append("click a cell: where the two disagree most")
    row = 30 if n <= 8 else 26 if n <= 12 else 22
    font = {"size": 11 if n <= 14 else 10}
    title = pm["title"] if not observed else pm["title"].replace(value_name, "Observed agreement", 1)
    ticks = {"type": "category", "tickmode": "array", "tickvals": raters, "ticktext": raters, "tickfont": font,
             "automargin": True}
    layout = figure_layout(title, "rater", "rater", height=max(300, 130 + row * n), subtitle=" · ".join(lines),
                           xaxis={**ticks, "tickangle": -60}, yaxis={**ticks, "autorange": "reversed"})
    layout["margin"]["r"] = 8
    if selected and all(r in raters for r in selected):  # the drilled pair: outline both of its cells
        i, j = raters.index(selected[0]), raters.index(selected[1])
        layout["shapes"] = [{"type": "rect", "xref": "x", "yref": "y", "x0": c - 0.5, "x1": c + 0.5, "y0": r - 0.5,
                             "y1": r + 0.5, "line": {"color": SELECTED, "width": 3}} for r, c in ((i, j), (j, i))]
    full = f"{title} ({scope}{'; click a cell to see where the two disagree' if clickable else ''})"
    return figure("pair_matrix", full, [trace], layout, clickable="pair" if clickable else None)
