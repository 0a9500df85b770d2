"""A run's labelling rounds, recorded with the run.

The rounds live in the run's config (:class:`agreement.fo.runs.classes.AgreementRunConfig`, attribute
:data:`HISTORY_ATTR`): a list of plain dicts, oldest first. So they follow the run: FiftyOne's
``rename_run`` keeps them, ``delete_run`` removes them with the run, and
:func:`agreement.fo.labelling.load.load_requested_labels` carries them over to the recomputed run. A
recomputation by hand (``overwrite=True``) starts a new run without them.

A round is::

    {"round": 1, "anno_key": "cons_round_1", "rater": "rater_4", "label_field": "rater_4", "backend": "labelstudio",
     "source": "suggested", "budget": 10, "n_samples": 10, "sample_ids": [...], "label_type": "classification",
     "classes": [...], "requested_at": "...", "status": "sent" | "loaded",
     # once loaded:
     "n_loaded": 10, "loaded_at": "...", "before": {headline numbers}, "after": {headline numbers}}

No server URL or API key is ever recorded: they come from FiftyOne's annotation config.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Mapping

from agreement.fo.runs import store as runs
from agreement.fo.runs.errors import RunError
from agreement.fo.runs.locking import schema_lock

__all__ = ["HISTORY_ATTR", "run_rounds", "save_rounds", "find_round", "pending_raters", "headline", "now"]

#: The run config's attribute holding the rounds.
HISTORY_ATTR = "labelling_rounds"


def now() -> str:
    """The time of a round's event, ISO 8601 in UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_rounds(samples, key: str) -> list[dict]:
    """The labelling rounds of run ``key``, oldest first (``[]`` for a run without any).

    Args:
        samples: the dataset (or a view of it) holding the run.
        key: the run key.

    Raises:
        RunError: the dataset has no agreement run ``key``.
    """
    runs.get_agreement_run_info(samples, key)  # refuses a missing run, naming the runs there are
    config = samples._root_dataset.get_run_info(key).config
    return [dict(r) for r in (getattr(config, HISTORY_ATTR, None) or [])]


def save_rounds(samples, key: str, rounds: list[dict]) -> None:
    """Records ``rounds`` (the whole history) with run ``key`` (under the dataset's schema lock)."""
    dataset = samples._root_dataset
    with schema_lock(dataset):
        config = dataset.get_run_info(key).config
        setattr(config, HISTORY_ATTR, runs.to_json(list(rounds)))
        dataset.update_run_config(key, config)


def find_round(rounds: list[dict], key: str, anno_key: str | None) -> dict:
    """The round of ``anno_key``, or (``None``) the one round sent and not loaded yet.

    Raises:
        RunError: no such round; no open round; several open rounds and no ``anno_key``; a round loaded already.
    """
    if anno_key is None:
        open_rounds = [r for r in rounds if r.get("status") != "loaded"]
        if not open_rounds:
            raise RunError(f"run {key!r} has no round waiting for its labels"
                           + (f" (rounds loaded: {[r['anno_key'] for r in rounds]})" if rounds else
                              ": send samples with request_labels first"))
        if len(open_rounds) > 1:
            raise RunError(f"run {key!r} has {len(open_rounds)} rounds waiting for their labels "
                           f"({[r['anno_key'] for r in open_rounds]}): give anno_key")
        return open_rounds[0]
    found = next((r for r in rounds if r.get("anno_key") == anno_key), None)
    if found is None:
        raise RunError(f"run {key!r} has no labelling round {anno_key!r}; its rounds: "
                       f"{[r['anno_key'] for r in rounds] or 'none'}")
    if found.get("status") == "loaded":
        raise RunError(f"round {anno_key!r} of run {key!r} was loaded already ({found.get('loaded_at')}); "
                       "request a new round for more labels")
    return found


def pending_raters(rounds: list[dict]) -> dict[str, str]:
    """Rater -> anno key of the rounds sent and not loaded yet."""
    return {str(r["rater"]): str(r["anno_key"]) for r in rounds if r.get("status") != "loaded"}


def headline(samples, key: str, summary: Mapping[str, Any] | None = None) -> dict:
    """The run's headline numbers: the numeric summary values of its method's panel and report cards (and
    ``n_raters``), NaN as ``None``.

    Args:
        samples: the dataset or view holding the run.
        key: the run key.
        summary: the run's summary when the caller has it (what a computation returns): its results are then
            not read again.
    """
    from agreement.fo.methods import declaration_of
    from agreement.fo.runs.results import results_class
    from agreement.reporting.figures.method_figures import METHOD_VIEWS

    info = runs.get_agreement_run_info(samples, key)
    if summary is None:
        summary = runs.load_agreement_results(samples, key).get("summary", {}) or {}
    declaration_of(info["method"])  # the declared methods' views registered
    view = results_class(info["method"]).view or METHOD_VIEWS.get(info["method"]) or {}
    cards = [*(view.get("cards") or []), *(view.get("report_cards") or [])]
    names = [c["key"] for c in cards if isinstance(c, Mapping) and "key" in c] + ["n_raters"]
    out: dict[str, Any] = {}
    for name in dict.fromkeys(names):
        value = summary.get(name)
        if name in summary and (value is None or isinstance(value, float) and not math.isfinite(value)):
            out[name] = None  # NaN, stored or (a computation's summary) already as None
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = value
    return out

