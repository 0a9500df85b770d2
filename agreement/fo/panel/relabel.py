"""What the App panel's "Another opinion" section shows for a run, computed from the run and its history.

The section is the relabel loop of issue 52 in the App: how many raters the task
needs (``plan_raters``: the stored curve with its target line and one sentence),
which samples need one more rater (``suggest_relabel``), sending them to a
labelling tool and loading the labels back (``request_labels`` /
``load_requested_labels``), and the rounds so far with the run's headline numbers
before and after each. A run shows the parts its method offers: the method's
hooks (``MethodHooks.planning``, ``MethodHooks.relabel``) decide, never its name.

Every function returns plain dicts and strings (the plan's figure as
``{"traces", "layout", "config"}``), so a notebook user gets the same texts::

    section = relabel_section(dataset, "cons")
    print(section["plan_md"]); print(section["rounds_md"])
"""

from __future__ import annotations

import math
from typing import Any

from agreement.fo.methods import hooks_of
from agreement.fo.runs import store as runs

__all__ = [
    "RELABEL_HELP",
    "headline_table",
    "offers",
    "open_round",
    "plan_markdown",
    "relabel_section",
    "rounds_markdown",
    "suggestion_markdown",
]

RELABEL_HELP = (
    "**Another opinion.** *Plan raters* estimates, from this run, how many raters per item reach a target "
    "(raters subsampled within items; a projection beyond the data's largest k where the model holds). "
    "*Suggest* ranks the samples by the expected value of one more label and loads the top ones; "
    "*Send to Label Studio* creates a labelling task for a new rater (the server's URL and API key come from "
    "FiftyOne's annotation config, never from the dataset); *Load labels* brings the labels back and recomputes "
    "the run."
)


#: How the before/after table names a run's headline numbers (others: their key with spaces).
HEADLINE_NAMES = {
    "n_consensus": "consensus labels", "n_review": "flagged for review", "n_single_rater": "samples with one rater",
    "mean_confidence": "mean confidence", "agreement": "raters agreeing with the consensus", "n_raters": "raters",
    "n_classes": "classes", "iterations": "iterations (consensus fit)", "alpha": "α", "alpha_ot": "αOT",
    "global_alpha": "global α", "mean_alpha": "mean α",
}
#: How the plan's sentence names a statistic (others: their name with spaces).
STATISTIC_NAMES = {"alpha": "α", "alpha_ot": "αOT", "consensus_accuracy": "consensus accuracy"}


def offers(info: dict) -> dict[str, bool]:
    """Which parts of the relabel loop a run's method offers, from its hooks.

    Args:
        info: the run's stored info (:func:`agreement.fo.runs.store.get_agreement_run_info`).

    Returns:
        ``{"plan": bool, "relabel": bool}``: ``plan`` when the method has a ``planning`` hook, ``relabel``
        (suggest, send, load) when it has a ``relabel`` hook.
    """
    hooks = hooks_of(info.get("method"))
    return {"plan": hooks.planning is not None, "relabel": hooks.relabel is not None}


def _num(x: Any, digits: int = 3) -> str:
    """A number with ``digits`` significant figures, "n/a" when undefined."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    if isinstance(x, bool) or isinstance(x, int):
        return f"{x:,}"
    return f"{float(x):#.{digits}g}".rstrip(".")


def _statistic_name(plan: dict) -> str:
    """The plan's statistic as the sentence names it (α for ``alpha``; "the reliability of their consensus" when
    the target is read on the Spearman–Brown consensus reliability)."""
    stat = str(plan.get("statistic") or "the statistic")
    name = STATISTIC_NAMES.get(stat, stat.replace("_", " "))
    if plan.get("projection") == "spearman_brown":
        return f"{name} (the reliability of their consensus, Spearman–Brown)"
    return name


def plan_markdown(plan: dict) -> str:
    """The plan's answer in one sentence: "k raters reach α ≥ T with 90 % confidence, N labels".

    Args:
        plan: a stored plan (``plan_raters``' result: ``statistic``, ``target``, ``confidence``, ``k_needed``,
            ``measured``, ``labels_needed``, ``n_items``, ``max_k``, ``projection``, ``note``, and ``reason``
            when unreachable).

    Returns:
        Markdown.
    """
    name, target = _statistic_name(plan), _num(plan.get("target"))
    conf = f"{100 * float(plan.get('confidence') or 0.9):g} %"
    k, n_items, max_k = plan.get("k_needed"), plan.get("n_items"), plan.get("max_k")
    note = str(plan.get("note") or "")
    note = f" {note[:1].upper()}{note[1:]}." if note else ""
    if k is None:
        reason = plan.get("reason") or "the curve does not reach it"
        return (f"**No number of raters reaches {name} ≥ {target}** with {conf} confidence: {reason}. "
                f"({_num(n_items)} items, at most {_num(max_k)} raters per item in the data.){note}")
    where = ("measured on the data" if plan.get("measured")
             else f"projected beyond the data's {_num(max_k)} raters per item")
    return (f"**{k} raters reach {name} ≥ {target} with {conf} confidence, {_num(plan.get('labels_needed'))} "
            f"labels** ({_num(n_items)} items; {where}).{note}")


def suggestion_markdown(result: dict) -> str:
    """What ``suggest_relabel`` chose: how many samples, by which rule, and the expected errors it buys.

    Args:
        result: ``suggest_relabel``'s result (``rule``, ``budget``, ``field``, ``sample_ids``,
            ``expected_errors_now``, ``expected_errors_after``).

    Returns:
        Markdown.
    """
    n = len(result.get("sample_ids") or []) or result.get("budget") or 0
    text = (f"**{n} sample{'s' if n != 1 else ''} suggested for another rater** (rule "
            f"*{str(result.get('rule', '')).replace('_', ' ')}*, priority in `{result.get('field')}`, highest first)")
    now, after = result.get("expected_errors_now"), result.get("expected_errors_after")
    if now is not None and after is not None:
        text += (f": expected wrong consensus labels {float(now):.3f} now, {float(after):.3f} once each has one "
                 f"more label (−{float(now) - float(after):.3f})")
    return text + (". Sent for labelling: see the rounds below." if result.get("sent") else ".")


def headline_table(before: dict, after: dict) -> str:
    """A markdown table of a run's headline numbers before and after a round (the keys of either).

    Args:
        before: headline numbers before the round.
        after: headline numbers after it.

    Returns:
        Markdown ("" when both are empty).
    """
    keys = list(dict.fromkeys([*before, *after]))
    if not keys:
        return ""
    rows = ["| | before | after |", "|---|---:|---:|"]
    rows += [f"| {HEADLINE_NAMES.get(k, k.replace('_', ' '))} | {_num(before.get(k))} | {_num(after.get(k))} |"
             for k in keys]
    return "\n".join(rows)


def rounds_markdown(rounds: list[dict]) -> str:
    """The run's labelling rounds: each round's rater, samples and state, and the last loaded round's headline
    numbers before and after.

    Args:
        rounds: the run's history (:func:`agreement.fo.labelling.history.run_rounds`), oldest first.

    Returns:
        Markdown ("" without rounds).
    """
    if not rounds:
        return ""
    lines = ["**Labelling rounds**", "", "| round | rater | samples | labels loaded | state |",
             "|---:|---|---:|---:|---|"]
    for r in rounds:
        loaded = r.get("n_loaded")
        state = "loaded" if r.get("status") == "loaded" else "sent, waiting for labels"
        lines.append(f"| {r.get('round', '')} | {r.get('rater', '')} | {_num(r.get('n_samples'))} | "
                     f"{_num(loaded) if loaded is not None else '–'} | {state} |")
    done = [r for r in rounds if r.get("status") == "loaded"]
    if done:
        last = done[-1]
        lines += ["", f"**The run before and after round {last.get('round', '')}** "
                      f"(rater {last.get('rater', '')}, anno key `{last.get('anno_key', '')}`)", "",
                  headline_table(dict(last.get("before") or {}), dict(last.get("after") or {}))]
    return "\n".join(lines)


def open_round(rounds: list[dict]) -> dict | None:
    """The round sent and not loaded yet (the last one), or None."""
    return next((r for r in reversed(rounds) if r.get("status") != "loaded"), None)


def relabel_section(samples: Any, key: str, info: dict | None = None) -> dict:
    """The "Another opinion" section of run ``key``: what it offers, its stored plan, its rounds.

    Args:
        samples: the dataset (or a view of it) holding the run.
        key: the run key.
        info: the run's info (read when omitted).

    Returns:
        ``{"offers", "plan", "plan_md", "figure", "rounds", "rounds_md", "open_round", "help_md"}``: ``plan``
        the stored plan or None, ``figure`` its curve with the target line (``{"traces", "layout",
        "config"}``) or None, ``open_round`` the round waiting for its labels or None.
    """
    info = info if info is not None else runs.get_agreement_run_info(samples, key)
    can = offers(info)
    out: dict = {"offers": can, "plan": None, "plan_md": "", "figure": None, "rounds": [], "rounds_md": "",
                 "open_round": None, "help_md": RELABEL_HELP if any(can.values()) else ""}
    if can["plan"]:
        from agreement.fo.planning.raters import stored_plan
        from agreement.reporting.figures.planning import plan_figure

        plan = stored_plan(samples, key)
        if plan:
            out["plan"], out["plan_md"] = plan, plan_markdown(plan)
            fig = plan_figure(plan)
            if fig:
                out["figure"] = {"traces": fig.get("traces") or fig.get("data") or [], "layout": fig.get("layout", {}),
                                 "config": fig.get("config", {"displayModeBar": False})}
    if can["relabel"]:
        from agreement.fo.labelling.history import run_rounds

        rounds = run_rounds(samples, key)
        out.update(rounds=rounds, rounds_md=rounds_markdown(rounds), open_round=open_round(rounds))
    return out
