"""The "Another opinion" section of the "Annotator Agreement" panel: the relabel loop of issue 52 in the App.

For a run whose method offers the hooks (``MethodHooks.planning``: **Plan raters**; ``MethodHooks.relabel``:
the rest), the section shows

1. a target and **Plan raters**: the stored curve of the statistic by raters per item with the target line,
   and "k raters reach α ≥ T with 90 % confidence, N labels" (``plan_raters``);
2. a number and **Suggest N samples for another rater**: ranks the samples by the expected value of one more
   label (``suggest_relabel``) and loads the top N as the panel's drill-down (undone by its usual button);
3. **Send to Label Studio**: the suggested samples go to a new rater's labelling task (``request_labels``;
   the server's URL and API key come only from FiftyOne's annotation config, and its error is shown when
   it is not configured);
4. **Load labels**: the labels come back into the new rater's field and the run is recomputed
   (``load_requested_labels``); the section then shows the run's headline numbers before and after.

What the section shows comes from :mod:`agreement.fo.panel.relabel` (any SDK user gets the same texts and
figure); what the user typed and last did is kept in the panel's memory (``mem.relabel``), never written to
panel state (see :mod:`.agreement_panel`).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import fiftyone.operators.types as types

from agreement.fo.panel.relabel import relabel_section, suggestion_markdown

from .panel_host import PanelHost
from .panel_memory import PanelMemory, panel_memory_of

__all__ = ["DEFAULT_BUDGET", "DEFAULT_TARGET", "RelabelEvents", "refresh_relabel", "render_relabel"]

logger = logging.getLogger(__name__)

DEFAULT_TARGET = 0.8
DEFAULT_BUDGET = 10
#: How the section names FiftyOne's annotation backends (others: their name).
BACKEND_NAMES = {"labelstudio": "Label Studio", "cvat": "CVAT", "labelbox": "Labelbox"}


def _opts(mem: PanelMemory) -> dict:
    """The section's memory (made on first use): ``target``, ``budget``, the last ``suggestion``, ``sent``
    round, ``error``, and the ``section`` data of the shown run."""
    if mem.relabel is None:
        mem.relabel = {"target": DEFAULT_TARGET, "budget": DEFAULT_BUDGET, "suggestion": None, "error": None,
                       "section": None, "key": None}
    return mem.relabel


def refresh_relabel(pdata, mem: PanelMemory, samples: Any, key: str, info: dict) -> None:
    """The section's panel data (plan sentence, suggestion, rounds, error) and what the layout needs (memory)
    for run ``key``; another run than last time forgets the last suggestion and error."""
    opts = _opts(mem)
    if opts["key"] != key:
        opts.update(key=key, suggestion=None, error=None)
    section = relabel_section(samples, key, info)
    opts["section"] = section
    pdata.relabel_help_md = section["help_md"]
    pdata.relabel_plan_md = section["plan_md"]
    pdata.relabel_suggest_md = suggestion_markdown(opts["suggestion"]) if opts["suggestion"] else ""
    pdata.relabel_rounds_md = section["rounds_md"]
    pdata.relabel_error_md = opts["error"] or ""


def render_relabel(handlers, panel, mem: PanelMemory) -> None:
    """The section's layout: the parts the run's method offers (nothing when it offers none)."""
    opts = mem.relabel or {}
    section = opts.get("section")
    if not section or not any(section["offers"].values()):
        return
    panel.str("relabel_help_md", view=types.MarkdownView())
    panel.str("relabel_error_md", view=types.MarkdownView())
    if section["offers"]["plan"]:
        row = panel.h_stack("relabel_plan_actions", gap=1, align_x="left")
        row.float("relabel_target", default=float(opts["target"]), min=0.0, max=1.0, label="Target of the statistic",
                  on_change=handlers.on_change_relabel_target)
        row.btn("relabel_plan", label="Plan raters", on_click=handlers.on_plan_raters, variant="contained")
        panel.str("relabel_plan_md", view=types.MarkdownView())
        fig = section.get("figure")
        if fig:
            panel.plot("plot_relabel_plan", data=fig["traces"], layout=fig["layout"], config=fig["config"])
    if not section["offers"]["relabel"]:
        return
    n = int(opts["budget"])
    row = panel.h_stack("relabel_suggest_actions", gap=1, align_x="left")
    row.int("relabel_budget", default=n, min=1, label="Samples to suggest", on_change=handlers.on_change_relabel_budget)
    row.btn("relabel_suggest", label=f"Suggest {n} samples for another rater", on_click=handlers.on_suggest_relabel,
            variant="contained")
    panel.str("relabel_suggest_md", view=types.MarkdownView())
    actions = panel.h_stack("relabel_round_actions", gap=1, align_x="left")
    if opts.get("suggestion") and not opts["suggestion"].get("sent"):
        actions.btn("relabel_send", label="Send to Label Studio", on_click=handlers.on_send_labels,
                    variant="contained")
    if section.get("open_round"):
        actions.btn("relabel_load", label="Load labels", on_click=handlers.on_load_labels, variant="contained")
    panel.str("relabel_rounds_md", view=types.MarkdownView())


def _round_samples(samples: Any, key: str, anno_key: Any) -> list[str]:
    """The sample ids of run ``key``'s round ``anno_key`` (from the run's history)."""
    from agreement.fo.labelling.history import run_rounds

    found = next((r for r in run_rounds(samples, key) if r.get("anno_key") == anno_key), None)
    return [str(i) for i in (found or {}).get("sample_ids") or []]


def _as_dict(result: Any) -> dict:
    """A result (with ``as_dict``, a dataclass or a dict) as a dict."""
    if hasattr(result, "as_dict"):
        return dict(result.as_dict())
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.asdict(result)
    return dict(result)


class RelabelEvents(PanelHost):
    """The section's events (mixed into :class:`.agreement_panel.AgreementPanel`): each runs one step of the
    loop through the bridge, keeps what it did in the panel's memory and redraws the section; a failed step is
    shown in the section and notified, never raised (a failed panel event makes the App close an open sample)."""

    def on_change_relabel_target(self, ctx) -> None:
        """The target of **Plan raters**."""
        value = ctx.params.get("value")
        if value is not None:
            _opts(panel_memory_of(ctx))["target"] = float(value)

    def on_change_relabel_budget(self, ctx) -> None:
        """How many samples **Suggest** picks (the button's label says it)."""
        value = ctx.params.get("value")
        if value is not None and int(value) >= 1:
            _opts(panel_memory_of(ctx))["budget"] = int(value)

    def on_plan_raters(self, ctx) -> None:
        """Runs ``plan_raters`` on the shown run with the target; the section draws the stored plan."""
        from agreement.fo.planning.raters import plan_raters

        def plan(key: str, info: dict, base: Any, stages: list | None, opts: dict) -> str:
            result = _as_dict(plan_raters(ctx.dataset, key, target=float(opts["target"])))
            k = result.get("k_needed")
            return (f"Plan: {k} raters reach the target, {result.get('labels_needed'):,} labels." if k is not None
                    else f"Plan: no number of raters reaches the target ({result.get('reason')}).")

        self._relabel_step(ctx, "Plan raters", plan)

    def on_suggest_relabel(self, ctx) -> None:
        """Runs ``suggest_relabel`` on the shown run and loads the ranked samples (the panel's drill-down)."""
        from agreement.fo.planning.relabel import suggest_relabel, suggested_view

        def suggest(key: str, info: dict, base: Any, stages: list | None, opts: dict) -> str:
            n = int(opts["budget"])
            result = _as_dict(suggest_relabel(base, key, budget=n))
            opts["suggestion"] = result
            view = suggested_view(base, key, n)
            self._drill(ctx, base, stages, view, f"the {len(view)} samples suggested for another rater of run "
                        f"{key!r}, highest priority first")
            return suggestion_markdown(result).replace("*", "").replace("`", "")

        self._relabel_step(ctx, "Suggest", suggest)

    def on_send_labels(self, ctx) -> None:
        """Sends the suggested samples to Label Studio for a new rater (``request_labels``)."""
        from agreement.fo.labelling.request import request_labels

        def send(key: str, info: dict, base: Any, stages: list | None, opts: dict) -> str:
            ids = list((opts.get("suggestion") or {}).get("sample_ids") or [])
            # exactly the samples suggested (and shown), even when the view they were chosen in was filtered
            samples = ctx.dataset.select(ids) if ids else ctx.dataset
            result = _as_dict(request_labels(samples, key, source="suggested", budget=len(ids) or int(opts["budget"])))
            if opts.get("suggestion"):
                opts["suggestion"]["sent"] = True  # sent once: the button goes
            backend = BACKEND_NAMES.get(str(result.get("backend")), result.get("backend"))
            return (f"Sent {result.get('n_samples')} samples to {backend} for rater {result.get('rater')} (round "
                    f"{result.get('round')}, anno key {result.get('anno_key')}).")

        self._relabel_step(ctx, "Send to Label Studio", send)

    def on_load_labels(self, ctx) -> None:
        """Loads the open round's labels and recomputes the run (``load_requested_labels``)."""
        from agreement.fo.labelling.load import load_requested_labels

        def load(key: str, info: dict, base: Any, stages: list | None, opts: dict) -> str:
            result = _as_dict(load_requested_labels(ctx.dataset, key))
            opts["suggestion"] = None  # the suggested samples have their label now
            ids = _round_samples(ctx.dataset, key, result.get("anno_key"))
            ctx.trigger("reload_dataset")  # the new rater's field and the recomputed run
            if ids:  # the round's samples with their new labels (the suggestion's view lost its field)
                view = base.select(ids, ordered=True)
                self._drill(ctx, base, stages, view, f"the {len(view)} samples of round {result.get('round')}, "
                            f"with rater {result.get('rater')}'s new labels")
            ctx.trigger("reload_samples")  # the grid drew the recomputed run's labels from its cache
            return (f"Loaded {result.get('n_loaded')} labels of rater {result.get('rater')} "
                    f"(round {result.get('round')}); run {key!r} recomputed.")

        self._relabel_step(ctx, "Load labels", load)

    def _relabel_step(self, ctx, what: str, step) -> None:
        """Runs ``step(key, info, base, base_stages, opts)`` on the shown run, notifies its text (or its error,
        also kept for the section) and redraws the panel."""
        mem = panel_memory_of(ctx)
        opts = _opts(mem)
        try:
            key, info, base, stages = self._context(ctx)
            text = step(key, info, base, stages, opts)
            opts["error"] = None
            ctx.ops.notify(text, variant="success")
        except Exception as e:  # noqa: BLE001 - the App's event must not fail; the error is shown instead
            if isinstance(e, ValueError):  # the plugin's refusals (RunError, LabellingBackendError, ...): said
                logger.warning("%s refused: %s", what, e)
            else:
                logger.exception("%s failed", what)
            opts["error"] = f"**{what} failed:** {e}"
            ctx.ops.notify(f"{what} failed: {e}", variant="error")
        mem.sig = None
        self._option_changed(ctx, mem)
