"""The "Annotator Agreement" panel: a thin view over run results.

All numbers and figures come from :mod:`agreement.fo.panel.data` (what any SDK
user can compute) and every drill-down from :mod:`agreement.fo.views.disagreements`; this
module follows the App's view and turns clicks into views. Its layout is in
:mod:`.panel_layout`, its texts in :mod:`.panel_markdown`, the data of its
optional sections (consensus, comparison, open sample) in
:mod:`.panel_sections`, a semantic mask run's figures and drill-downs in
:mod:`.panel_masks`, and what it remembers between events in
:mod:`.panel_memory`.

How it keeps the user's view
----------------------------
* The charts describe the App's current view *with its sidebar filters*
  (``ctx.view``), minus the panel's own drill-down stage, so that clicking
  another bar or cell replaces the drill-down instead of narrowing it further.
* View changes only ever write panel *data* (plots, tables), never panel
  *state*: the FiftyOne App (1.22) stores panel state in its workspace, and
  every workspace update reloads the dataset page and drops the sidebar
  filters. State changes only on user actions in the panel (run choice,
  compare mode) and when the run list changes.
* Opening a panel, changing its state and loading a view all make the App drop
  its sidebar filters by itself, sometimes several times over seconds. The
  panel remembers the filters it last saw and, when they vanish within
  ``RESET_WINDOW`` seconds of the end of such an action of its own (each
  restore extending it), puts them back (the App's ``set_filters``); a
  drill-down view therefore adds to the user's filters instead of replacing
  them. Filters cleared by the user (the "whole dataset" button, or the sidebar
  outside that window) stay cleared.
"""

from __future__ import annotations

import json
import logging
import os
import time

import fiftyone.operators as foo

from agreement.fo.panel.app_state import remember_open_run, remember_panel, restore_filters_trigger
from agreement.fo.panel.data import (
    PanelDataError,
    review_queue_view,
    run_panel_data,
)
from agreement.fo.runs import store as runs
from agreement.fo.storage.label_schema import label_fields
from agreement.fo.views.run_samples import run_field_names, run_samples

from .panel_drills import DrillEvents
from .panel_filters import load_derived_view, panel_can_set_filters, same_stages
from .panel_layout import render_panel
from .panel_markdown import drill_md, run_labels, undefined_md, view_note
from .panel_masks import MaskEvents, refresh_masks, render_masks
from .panel_memory import PANEL_MEMORY, PanelMemory, panel_memory_of
from .panel_raters import RaterEvents, refresh_raters
from .panel_relabel import RelabelEvents, refresh_relabel
from .panel_review import ReviewActions, refresh_review
from .panel_sections import refresh_compare, refresh_consensus, refresh_modal
from .panel_video import VideoEvents, refresh_video

logger = logging.getLogger(__name__)

#: The panel's memory and the App's filter support under the names the panel's tests reach them by.
_MEMORY = PANEL_MEMORY
_app_can_set_filters = panel_can_set_filters
if os.environ.get("IAA_PANEL_DEBUG") and not logger.handlers:  # every event's filters and state writes
    logger.setLevel(logging.DEBUG)
    logger.addHandler(logging.StreamHandler())
    logger.propagate = False

# Seconds after the end of an action of the panel during which filters that vanish are put back: the App
# drops them when it applies the action (on a loaded machine up to 17 s after the event ended), and again
# after they were put back (seen 8 s later), so each restore extends the window.
RESET_WINDOW = 30.0
RESTORE_EXTENSION = 10.0


#: How long after a drill-down an event may still carry the view from before it (the App applies the drill-down's
#: view asynchronously; a chart or run event sent meanwhile must not make the panel forget it).
STALE_EVENT_SECONDS = 10.0


def _stale_event(drill: dict, stages: list) -> bool:
    """Whether an event's view ``stages`` are a view the App showed before a drill-down, sent within
    :data:`STALE_EVENT_SECONDS` of it: the App has not applied the drill-down yet. The view before is the one
    the drill-down started from (``base``), or the view the App showed when the user clicked (``from``: an
    earlier drill-down that this one replaces, e.g. a histogram bar clicked after a heatmap cell)."""
    if time.time() - drill.get("at", 0.0) >= STALE_EVENT_SECONDS:
        return False
    return any(before is not None and len(stages) == len(before) and same_stages(stages, before)
               for before in (drill.get("base"), drill.get("from")))


class AgreementPanel(DrillEvents, RaterEvents, ReviewActions, MaskEvents, VideoEvents, RelabelEvents, foo.Panel):
    """The Annotator Agreement panel: the dataset's agreement runs as cards, figures and drill-downs.

    Its events come from the mixins (drill-downs, rater tables, the review queue, mask and video figures);
    this class holds the panel's configuration, its view and run events and its rendering.
    """

    @property
    def config(self):
        """The panel's FiftyOne configuration (name, label, surfaces and help text)."""
        return foo.PanelConfig(
            name="annotator_agreement",
            label="Annotator Agreement",
            surfaces="grid modal",
            help_markdown=(
                "Chance-corrected inter-annotator agreement of this dataset's agreement runs. The charts follow "
                "the current view (stages and sidebar filters); clicking a bar, a heatmap cell or a point loads "
                "those samples on top of it. In the sample view, the panel explains every label of the open sample."
            ),
        )

    def execute(self, ctx):
        """Runs the event (FiftyOne's ``Panel.execute``), then starts the window in which vanished filters are
        put back: the App drops them when it applies the event's response, so the window counts from the end
        of the event, not its start (an event can take longer than the window on a loaded machine)."""
        try:
            return super().execute(ctx)
        finally:
            mem = panel_memory_of(ctx)
            if mem.reset_pending:
                mem.reset_pending = False
                mem.reset_until = max(mem.reset_until, time.time() + RESET_WINDOW)

    # ------------------------------------------------------------------ events
    def on_load(self, ctx):
        """Opens the panel: forgets the last view signature and draws the panel afresh."""
        mem = panel_memory_of(ctx)
        mem.sig = None
        self._expect_reset(ctx, mem)  # opening a panel makes the App drop its sidebar filters
        self._refresh(ctx, force=True)

    def on_change_view(self, ctx):
        """The App's view changed: the figures follow it."""
        self._refresh(ctx)

    def on_change_dataset(self, ctx):
        """The App opened a dataset: the panel's memory starts afresh unless it is the same dataset."""
        mem = panel_memory_of(ctx)
        if ctx.dataset is not None and mem.dataset == ctx.dataset.name:
            # the App reports the same dataset again (it does when a sample opens): nothing to start afresh, and
            # no state write (the workspace update it makes reopened a closed sample, or undid the next view)
            self._refresh(ctx)
            return
        PANEL_MEMORY.pop(str(ctx.params.get("panel_id") or "default"), None)
        ctx.panel.state.run_key = None
        self._refresh(ctx, force=True)

    def on_change_current_sample(self, ctx):
        """A sample opened or closed in the modal: the panel explains its labels."""
        self._refresh(ctx)

    def on_change_run(self, ctx):
        """The run dropdown changed: the panel shows the chosen run."""
        mem = panel_memory_of(ctx)
        value = ctx.params.get("value")
        if value == mem.run_key:  # the dropdown reporting its value: nothing changed
            return
        ctx.panel.state.run_key = mem.run_key = value
        self._expect_reset(ctx, panel_memory_of(ctx))
        self._refresh(ctx, force=True)

    def on_toggle_compare(self, ctx):
        """Turns the comparison with a second run on or off."""
        mem = panel_memory_of(ctx)
        on = mem.compare_on if mem.compare_on is not None else bool(ctx.panel.state.compare)
        ctx.panel.state.compare = mem.compare_on = not on
        self._expect_reset(ctx, panel_memory_of(ctx))
        self._refresh(ctx, force=True)

    def on_change_compare_key(self, ctx):
        """The comparison dropdown changed: the panel compares with the chosen run."""
        mem = panel_memory_of(ctx)
        value = ctx.params.get("value")
        if value == (mem.compare or {}).get("key"):  # the dropdown reporting its value on display
            return
        ctx.panel.state.compare_key = mem.compare_key = value
        self._expect_reset(ctx, panel_memory_of(ctx))
        self._refresh(ctx, force=True)

    def on_clear_drill(self, ctx):
        """Leaves a drill-down: back to the run's view (or the stages and filters a review queue started from)."""
        key, info, base, base_stages = self._context(ctx)
        mem = panel_memory_of(ctx)
        restore = (mem.drill or {}).get("restore")
        mem.drill = None
        if restore is not None:  # the review queue: back to the stages and sidebar filters it started from
            base_stages = restore["stages"]
            mem.filters = restore["filters"]
        self._expect_reset(ctx, mem)
        if base_stages is None:
            ctx.trigger("set_view", params={"view": []})
            return
        ctx.trigger("set_view", params={"view": base_stages})
        if restore is not None and restore["filters"] and panel_can_set_filters():
            ctx.trigger("set_filters", params=restore["filters"])

    def on_whole_dataset(self, ctx):
        """Clears the view and the sidebar filters: the figures show the whole dataset."""
        mem = panel_memory_of(ctx)
        logger.debug("on_whole_dataset: stages=%d", len(ctx.request_params.get("view") or []))
        mem.drill = None
        mem.filters = {}
        mem.reset_until, mem.reset_pending = 0.0, False
        ctx.trigger("set_view", params={"view": []})
        if panel_can_set_filters():
            ctx.trigger("set_filters", params={})

    def on_change_consensus_rater(self, ctx):
        """The consensus rater dropdown changed: the panel shows the chosen consensus."""
        mem = panel_memory_of(ctx)
        value = ctx.params.get("value")
        if not value or value == mem.consensus_rater:  # the dropdown reporting its value: nothing changed
            return
        ctx.panel.state.consensus_rater = mem.consensus_rater = value
        self._expect_reset(ctx, mem)
        self._refresh(ctx, force=True)

    def on_review_queue(self, ctx):
        """Loads the consensus run's review queue (a patches view; a class consensus: the flagged samples) on
        the samples the panel describes.

        A patches view has none of the sample fields the sidebar filters may be on, so the filters go into
        the view as stages (the queue covers the filtered samples) and come back as sidebar filters when
        the drill-down is undone."""
        from agreement.fo.panel.consensus import is_class_consensus

        key, info, base, base_stages = self._context(ctx)
        mem = panel_memory_of(ctx)
        view = review_queue_view(base, key)
        count = len(view)
        classes = is_class_consensus(base, key)  # one label per sample: the queue is the flagged samples
        what = (f"the review queue of run {key!r}: the samples whose consensus class is flagged for review, least "
                "confident first (open one: Accept, Reject, Next)" if classes else
                f"the review queue of run {key!r}: the consensus labels flagged for review, least confident first "
                "(review them in the sample view: Accept, Reject, Next)")
        load_derived_view(ctx, mem, base, base_stages, view, {
            "what": what, "count": count, "unit": "flagged sample" if classes else "flagged label", "run": key})

    def _option_changed(self, ctx, mem: PanelMemory) -> None:
        """A rater or heatmap control changed (:class:`.panel_raters.RaterEvents`): redraw."""
        self._expect_reset(ctx, mem)
        self._refresh(ctx, force=True)

    # ----------------------------------------------------------------- helpers
    def _expect_reset(self, ctx, mem: PanelMemory) -> None:
        filters = self._request_filters(ctx)
        if filters:
            mem.filters = filters
            if panel_can_set_filters():  # put back later even if the App sends the panel no event (opening it)
                ctx.trigger(*restore_filters_trigger(filters))
        mem.reset_until = time.time() + RESET_WINDOW
        mem.reset_pending = True  # the window starts again when the event ends (execute)

    @staticmethod
    def _request_filters(ctx) -> dict:
        return dict(ctx.request_params.get("filters") or {})

    def _base(self, ctx, mem: PanelMemory):
        """The view the charts describe (the App's view with its filters, minus the panel's drill-down),
        its stages, and whether a drill-down is active."""
        import fiftyone.server.view as fosv

        params = ctx.request_params
        if "view" not in params or params.get("view_name"):  # a saved view: no stages of ours to tell apart
            mem.drill = None
            return ctx.view, None, False
        stages = list(params.get("view") or [])
        drilled = False
        if mem.drill:
            k = len(mem.drill["stages"])
            if k and len(stages) >= k and same_stages(stages[-k:], mem.drill["stages"]):
                stages, drilled = stages[:-k], True
            elif _stale_event(mem.drill, stages):
                drilled = True  # an event the App sent before it applied the drill-down: the drill-down stays
            else:
                mem.drill = None
        filters = mem.filters if mem.filters else (params.get("filters") or {})
        base = fosv.get_view(ctx.dataset, stages=stages, filters=filters or None,
                             extended_stages=params.get("extended") or None)
        return base, stages, drilled

    def _context(self, ctx):
        """The run shown, its info, the view a drill-down starts from and that view's stages (``None``: a
        drill-down loads a whole new view). From a review queue, patches, clips or a view without the run's
        fields, a drill-down starts from the samples behind it (:func:`agreement.fo.views.run_samples.run_samples`)."""
        mem = panel_memory_of(ctx)
        self._restore_filters(ctx, mem)
        key = mem.run_key or ctx.panel.state.run_key
        keys = runs.list_agreement_runs(ctx.dataset)
        if key not in keys:
            key = self._newest(ctx.dataset, keys)
        info = runs.get_agreement_run_info(ctx.dataset, key)
        base, stages, _ = self._base(ctx, mem)
        samples = run_samples(base, run_field_names(info))
        if samples is not base:
            base, stages = samples, None
        return key, info, base, stages

    def _drill(self, ctx, base, base_stages, view, what: str, bin_: int | None = None, **extra) -> None:
        """Loads ``view`` (``base`` plus stages) in the App, on top of the user's view and filters."""
        mem = panel_memory_of(ctx)
        added = [s._serialize() for s in view._stages[len(base._stages):]]
        count = len(view)
        shown = ctx.request_params.get("view")  # the App's view when the user clicked (a stale event may repeat it)
        mem.drill = {"stages": added, "what": what, "bin": bin_, "count": count, "run": mem.run_key,
                     "base": None if base_stages is None else list(base_stages), "at": time.time(),
                     "from": list(shown) if isinstance(shown, list) else None, **extra}
        mem.sig = None
        self._expect_reset(ctx, mem)
        if base_stages is None:  # a saved view: load the whole new view
            ctx.ops.set_view(view=view)
        else:
            ctx.trigger("set_view", params={"view": list(base_stages) + added})
        ctx.panel.data.drill_md = drill_md(mem)

    @staticmethod
    def _marks(mem: PanelMemory, key: str) -> dict:
        """The histogram bar and heatmap cell of the panel's drill-down, when it was on run ``key``."""
        d = mem.drill or {}
        if d.get("run") != key:
            return {"bin": None, "pair": None}
        return {"bin": d.get("bin"), "pair": list(d["pair"]) if d.get("pair") else None}

    def _restore_filters(self, ctx, mem: PanelMemory) -> dict:
        """The user's sidebar filters: the request's, or the remembered ones when the App dropped them
        right after an action of this panel (then they are put back in the App)."""
        logger.debug("%(method)s filters=%(filters)s stages=%(stages)d remembered=%(remembered)s "
                     "window=%(window).1f drill=%(drill)s",
                     {"method": ctx.params.get("__method__"), "filters": json.dumps(ctx.request_params.get("filters")),
                      "stages": len(ctx.request_params.get("view") or []), "remembered": bool(mem.filters),
                      "window": mem.reset_until - time.time(), "drill": bool(mem.drill)})
        filters = self._request_filters(ctx)
        if "filters" not in ctx.request_params:
            return filters
        if filters:
            mem.filters = filters
        elif mem.filters:
            if time.time() < mem.reset_until and panel_can_set_filters():
                ctx.trigger("set_filters", params=mem.filters)
                mem.reset_until = max(mem.reset_until, time.time() + RESTORE_EXTENSION)
                return mem.filters
            mem.filters = {}
        return filters

    @staticmethod
    def _newest(dataset, keys):
        return max(keys, key=lambda k: dataset.get_run_info(k).timestamp) if keys else None

    @staticmethod
    def _set_state(ctx, **values) -> bool:
        """Writes the state keys whose value changed; returns whether any did (each write makes the App
        update its workspace, see the module docstring)."""
        missing = object()
        changed = {name: value for name, value in values.items() if ctx.panel.state.get(name, missing) != value}
        if changed:
            logger.debug("state patch %s", sorted(changed))
            ctx.panel.state.set(changed)  # one patch
        return bool(changed)

    def _refresh(self, ctx, force: bool = False):
        """Brings the panel up to date (:meth:`_update`); an unexpected error is logged and shown in the panel,
        never raised: a failed event makes the App close the sample it has open (issue 48)."""
        try:
            self._update(ctx, force)
        except Exception as e:  # noqa: BLE001 - the App's event must not fail
            logger.exception("the Annotator Agreement panel could not update")
            panel_memory_of(ctx).sig = None
            ctx.panel.data.view_error = f"**The panel could not update:** {type(e).__name__}: {e}"

    def _update(self, ctx, force: bool = False):
        """Brings the panel up to date with the App's dataset, runs, view and open sample (state only when
        the run changes, see the module docstring); with ``force``, even when nothing it depends on did.
        On an item opened from a review queue, only the review (:mod:`.panel_review`) is brought up to date:
        the dashboard is behind the sample view, and Accept and Next must answer at once."""
        mem = self._follow_dataset(ctx)
        dataset = ctx.dataset
        filters = self._restore_filters(ctx, mem)
        keys = runs.list_agreement_runs(dataset) if dataset is not None else []
        key, error, changed = self._choose_run(ctx, mem, keys)
        if not keys:
            self._show_no_runs(ctx, mem, changed)
            return
        # an item of a review queue open, or just closed: the review's text only (panel data). A state write
        # here makes the App update its workspace, which reopened the closed item, again and again
        closing = mem.modal is not None and not ctx.current_sample
        if (ctx.current_sample or closing) and refresh_review(ctx, mem):
            mem.sig = None  # the dashboard is brought up to date on the next change of view
            return
        state = ctx.panel.state
        base, base_stages, drilled = self._base(ctx, mem)
        if not drilled:
            mem.drill = None
        if mem.compare_on is None:
            mem.compare_on, mem.compare_key = bool(state.compare), state.compare_key
        compare, compare_key = mem.compare_on, mem.compare_key
        info = runs.get_agreement_run_info(dataset, key)
        base = run_samples(base, run_field_names(info))  # a queue, patches, clips, a select_fields view: its samples
        sig = json.dumps([dataset.name, str(dataset._doc.id), keys, key, info["timestamp"], compare, compare_key,
                          base_stages if base_stages is not None else repr(ctx.view), filters,
                          ctx.request_params.get("extended"), self._marks(mem, key), ctx.current_sample],
                         sort_keys=True, default=str)
        if not force and sig == mem.sig:
            refresh_review(ctx, mem)  # decisions change no view: the review count is read again
            return
        mem.sig = sig
        whole = (not base_stages and not filters and not ctx.request_params.get("extended")
                 and not ctx.request_params.get("view_name")) if base_stages is not None else None
        mem.whole = bool(whole) if whole is not None else len(base) == dataset.count()
        n_view = len(base)
        try:
            marks = self._marks(mem, key)
            data = run_panel_data(base, key, whole=whole, selected_bin=marks["bin"], selected_pair=marks["pair"],
                                  rater=mem.consensus_rater or state.consensus_rater, options=mem.options)
        except (PanelDataError, runs.RunError) as e:
            self._show_error(ctx, mem, str(e), changed)
            return
        self._show_run(ctx, mem, data, error, changed)
        self._fill_view_data(ctx.panel.data, mem, data, n_view, filters, base_stages)
        refresh_masks(ctx.panel.data, mem, base, data)  # a semantic mask run's class and pair figures
        refresh_video(ctx.panel.data, mem, base, data, ctx.view, ctx.current_sample)  # a run on videos: a timeline
        refresh_consensus(ctx.panel.data, mem, data["consensus"])
        refresh_raters(ctx.panel.data, mem, data)
        refresh_relabel(ctx.panel.data, mem, dataset, key, info)  # the "Another opinion" section
        refresh_compare(ctx=ctx, mem=mem, base=base, key=key, info=info, compare=compare, compare_key=compare_key)
        if not refresh_review(ctx, mem):  # the review queue explains its open patch itself
            refresh_modal(ctx, mem, base, key, info)

    @staticmethod
    def _follow_dataset(ctx) -> PanelMemory:
        """The panel's memory, started afresh when the panel now shows another dataset."""
        mem = panel_memory_of(ctx)
        dataset = ctx.dataset
        if dataset is not None and mem.dataset != dataset.name:
            if mem.dataset is not None:  # another dataset in the same panel: start afresh
                PANEL_MEMORY.pop(str(ctx.params.get("panel_id") or "default"), None)
                mem = panel_memory_of(ctx)
            mem.dataset = dataset.name
        if dataset is not None:  # a review decision made by an operator updates this panel (operators/review.py)
            remember_panel(dataset, str(ctx.params.get("panel_id") or "default"), ctx.current_sample)
        return mem

    def _choose_run(self, ctx, mem: PanelMemory, keys: list) -> tuple:
        """The run to show among ``keys``, the note when the shown one vanished, and whether state was written.

        A run computed since the panel last looked is shown; a deleted or renamed one gives way to the newest."""
        dataset, state = ctx.dataset, ctx.panel.state
        known = mem.runs if mem.runs is not None else state.runs
        key = prior = mem.run_key if mem.run_key is not None else state.run_key
        error = None
        if keys:
            fresh = [k for k in keys if known is not None and k not in known]
            if fresh:  # a run computed since the panel last looked: show it
                key = self._newest(dataset, fresh)
            elif key not in keys:
                newest = self._newest(dataset, keys)
                if key is not None:
                    error = f"Run {key!r} no longer exists (deleted or renamed); showing {newest!r} instead."
                key = newest
        else:
            key = None
        # the run key is written when the panel changes it (a new run, a deleted one), never to "correct"
        # an event's older copy of the state: the App applies that write by reloading the page, its run
        # dropdown, redrawn from the older state, reported the older run as a choice, the panel switched
        # back, wrote again, and flipped between two runs for as long as it was open (browser test)
        decided = {"run_key": key} if key != prior or state.run_key is None else {}
        changed = self._set_state(ctx, runs=keys, **decided)
        mem.runs, mem.run_key = keys, key
        mem.run_labels = run_labels(dataset, keys)
        if key != mem.remembered:  # the operators' forms preselect the run the panel shows
            remember_open_run(dataset, key)
            mem.remembered = key
        return key, error, changed

    def _show_no_runs(self, ctx, mem: PanelMemory, changed: bool) -> None:
        """The state of a dataset without agreement runs (the help, or the note that it has no label fields)."""
        dataset = ctx.dataset
        mem.shown = {}
        changed |= self._set_state(ctx, has_label_fields=bool(dataset is not None and label_fields(dataset)),
                                   error=None, cards=[], score_field=None)
        if changed:
            self._expect_reset(ctx, mem)
        mem.sig = None

    def _show_error(self, ctx, mem: PanelMemory, error: str, changed: bool) -> None:
        """The state of a run whose panel data cannot be computed: its error, and nothing else."""
        changed |= self._set_state(ctx, error=error, cards=[], score_field=None, title=None,
                                   bar_titles=[], curve_titles=[])
        if changed:
            self._expect_reset(ctx, mem)
        mem.figures = {}
        mem.shown = {"error": error}
        ctx.panel.data.clear()

    def _show_run(self, ctx, mem: PanelMemory, data: dict, error: str | None, changed: bool) -> None:
        """The run-level state (it changes only with the run: no workspace update on view changes)."""
        changed |= self._set_state(
            ctx, error=error, title=data["title"], cards=data["cards"], score_field=data["score_field"],
            worst_first_descending=data["worst_first_descending"],
            bar_titles=[b["title"] for b in data["bars"]], curve_titles=[c["title"] for c in data["curves"]],
            method=data["method"],
        )
        if changed:
            self._expect_reset(ctx, mem)
        mem.shown = {"error": error, "has_cards": bool(data["cards"]), "score_field": data["score_field"],
                     "n_bars": len(data["bars"]), "n_curves": len(data["curves"])}

    @staticmethod
    def _fill_view_data(pdata, mem: PanelMemory, data: dict, n_view: int, filters, base_stages) -> None:
        """The view-level panel data (notes, figures' traces) and the figures the layout draws (memory)."""
        hist = data["histogram"]
        mem.figures = {name: {"layout": fig["layout"], "config": fig["config"], "click": fig.get("click"),
                              "traces": fig["traces"], "per_rater": fig.get("per_rater", False)}
                       for name, fig in data["figures"].items()}
        mem.undefined = data["undefined"]
        pdata.view_note = view_note(data, n_view, filters, base_stages, mem.drill)
        pdata.drill_md = drill_md(mem)
        pdata.summary_md = f"**{data['title']}**\n\n{data['summary_md']}"
        if n_view == 0:
            pdata.view_error = "The current view has no samples: clear the filters or stages to see this run."
        else:
            pdata.view_error = ""
        if hist is not None:
            pdata.histogram = data["figures"]["histogram"]["traces"]
            pdata.hist_edges = hist["edges"]
        else:
            pdata.histogram = []
        pdata.n_missing = hist["n_missing"] if hist else 0
        pdata.undefined_md = undefined_md(data, hist)
        pdata.pair_matrix = data["figures"]["pair_matrix"]["traces"] if "pair_matrix" in data["figures"] else []
        for i, bar in enumerate(data["bars"]):
            pdata.set(f"bars_{i}", bar["traces"])
        for i, curve in enumerate(data["curves"]):
            pdata.set(f"curve_{i}", curve["traces"])
        mem.figures.update({f"bars_{i}": mem.figures[b["name"]] for i, b in enumerate(data["bars"])})
        mem.figures.update({f"curve_{i}": mem.figures[c["name"]] for i, c in enumerate(data["curves"])})

    # ------------------------------------------------------------------ render
    def render(self, ctx):
        """The panel's layout: the cards and figures, then a mask run's figures."""
        layout = render_panel(self, ctx)
        render_masks(self, layout.type, panel_memory_of(ctx))  # a mask run's figures close the dashboard
        return layout


def runs_score_field(info: dict) -> str | None:
    """The per-sample score field of a run.

    Args:
        info: the run's stored info.

    Returns:
        The field name, or None when the run stores no per-sample score.
    """
    from agreement.fo.panel.data import score_field

    return score_field(info)
