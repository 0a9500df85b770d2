"""The "Annotator Agreement" panel: a thin view over run results.

All numbers and figures come from :mod:`agreement.fo.panel_data` (what any SDK
user can compute) and every drill-down from :mod:`agreement.fo.views`; this
module lays them out, follows the App's view and turns clicks into views.

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
  its sidebar filters by itself. The panel remembers the filters it last saw
  and, when they vanish within a few seconds of such an action of its own, puts
  them back (the App's ``set_filters``); a drill-down view therefore adds to
  the user's filters instead of replacing them. Filters cleared by the user
  (the "whole dataset" button, or the sidebar outside that short window) stay
  cleared.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field

import fiftyone.operators as foo
import fiftyone.operators.types as types

from agreement.fo import runs
from agreement.fo.panel_data import (
    METHOD_VIEWS,
    PanelDataError,
    bin_view,
    review_queue_view,
    compare_data,
    label_explanations,
    lowest_first_view,
    run_panel_data,
    sig3,
    unscored_view,
)
from agreement.fo.reading import label_fields

EMPTY_HELP = """**No agreement runs yet**

Agreement is computed by the plugin's operators. Open the operator browser
(the backtick key, or the list icon above the grid) and run, for example,
**Annotator Agreement: OT agreement**: pick the label fields of your raters
(one field per rater, or one field whose labels carry the rater in an
attribute), give the run a key such as *ot*, and run it. This panel then
shows the new run.

From Python:

```python
import fiftyone.operators as foo
foo.execute_operator(
    "@iaa/agreement/compute_ot_agreement",
    ctx=dict(view=dataset.view(),
             params=dict(fields=["r1", "r2"],
                         key="ot")))
```
"""

logger = logging.getLogger(__name__)
if os.environ.get("IAA_PANEL_DEBUG") and not logger.handlers:  # every event's filters and state writes
    logger.setLevel(logging.DEBUG)
    logger.addHandler(logging.StreamHandler())
    logger.propagate = False

RESET_WINDOW = 10.0  # seconds after an action of the panel during which vanished filters are put back
RESTORE_EXTENSION = 3.0


@dataclass
class _Memory:
    """What a panel instance remembers between events, on the server (never in App state, see above)."""

    filters: dict = field(default_factory=dict)
    reset_until: float = 0.0
    drill: dict | None = None  # {"stages": [...], "what": str, "bin": int | None}
    sig: str | None = None
    figures: dict = field(default_factory=dict)  # name -> {"layout", "config", "click"}
    undefined: list = field(default_factory=list)
    compare: dict | None = None
    modal: dict | None = None
    whole: bool = True
    # the source of truth for rendering: the App may send events with an older copy of the panel state
    run_key: str | None = None
    runs: list | None = None
    compare_on: bool | None = None
    compare_key: str | None = None
    shown: dict = field(default_factory=dict)  # error, has_cards, score_field, n_bars, n_curves
    dataset: str | None = None
    run_labels: dict = field(default_factory=dict)  # key -> "key — method, time" for the run dropdown
    touched: float = 0.0
    consensus_rater: str | None = None  # the rater whose confusion matrix a consensus run shows
    consensus: dict | None = None  # a consensus run: {"raters", "rater", "n_flagged"}


_MEMORY: dict[str, _Memory] = {}
_MAX_PANELS = 64


def _memory(ctx) -> _Memory:
    pid = str(ctx.params.get("panel_id") or "default")
    mem = _MEMORY.get(pid)
    if mem is None:
        if len(_MEMORY) >= _MAX_PANELS:  # forget the least recently used panel
            del _MEMORY[min(_MEMORY, key=lambda k: _MEMORY[k].touched)]
        mem = _MEMORY[pid] = _Memory()
    mem.touched = time.time()
    return mem


_SET_FILTERS: bool | None = None


def _app_can_set_filters() -> bool:
    """Whether this FiftyOne App has the ``set_filters`` operator (newer Apps; not 1.0)."""
    global _SET_FILTERS
    if _SET_FILTERS is None:
        import glob
        import os

        import fiftyone

        found = False
        static = os.path.join(os.path.dirname(fiftyone.__file__), "server", "static", "assets")
        for path in glob.glob(os.path.join(static, "*.js")):
            try:
                with open(path, encoding="utf-8", errors="ignore") as f:
                    if "set_filters`" in f.read():
                        found = True
                        break
            except OSError:
                continue
        _SET_FILTERS = found
    return _SET_FILTERS


def _strip(stage: dict) -> dict:
    return {k: v for k, v in stage.items() if k != "_uuid"}


def _same(a: list, b: list) -> bool:
    return json.dumps([_strip(s) for s in a], sort_keys=True, default=str) == \
        json.dumps([_strip(s) for s in b], sort_keys=True, default=str)


class AgreementPanel(foo.Panel):
    @property
    def config(self):
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

    # ------------------------------------------------------------------ events
    def on_load(self, ctx):
        mem = _memory(ctx)
        mem.sig = None
        self._expect_reset(ctx, mem)  # opening a panel makes the App drop its sidebar filters
        self._refresh(ctx, force=True)

    def on_change_view(self, ctx):
        self._refresh(ctx)

    def on_change_dataset(self, ctx):
        _MEMORY.pop(str(ctx.params.get("panel_id") or "default"), None)
        ctx.panel.state.run_key = None
        self._refresh(ctx, force=True)

    def on_change_current_sample(self, ctx):
        self._refresh(ctx)

    def on_change_run(self, ctx):
        mem = _memory(ctx)
        value = ctx.params.get("value")
        if value == mem.run_key:  # the dropdown reporting its value: nothing changed
            return
        ctx.panel.state.run_key = mem.run_key = value
        self._expect_reset(ctx, _memory(ctx))
        self._refresh(ctx, force=True)

    def on_toggle_compare(self, ctx):
        mem = _memory(ctx)
        on = mem.compare_on if mem.compare_on is not None else bool(ctx.panel.state.compare)
        ctx.panel.state.compare = mem.compare_on = not on
        self._expect_reset(ctx, _memory(ctx))
        self._refresh(ctx, force=True)

    def on_change_compare_key(self, ctx):
        mem = _memory(ctx)
        value = ctx.params.get("value")
        if value == (mem.compare or {}).get("key"):  # the dropdown reporting its value on display
            return
        ctx.panel.state.compare_key = mem.compare_key = value
        self._expect_reset(ctx, _memory(ctx))
        self._refresh(ctx, force=True)

    def on_histogram_click(self, ctx):
        key, info, base, base_stages = self._context(ctx)
        field = runs_score_field(info)
        lo, hi = METHOD_VIEWS[info["method"]]["score_range"](info["params"]) if field else (None, None)
        idx = ctx.params.get("idx")
        if field is None or idx is None:
            return
        import numpy as np

        edges = np.linspace(lo, hi, 21).tolist()
        idx = int(idx)
        if not 0 <= idx < len(edges) - 1:
            return
        view = bin_view(base, field, edges[idx], edges[idx + 1], last=idx == len(edges) - 2)
        close = "]" if idx == len(edges) - 2 else ")"
        self._drill(ctx, base, base_stages, view,
                    f"samples with {field} in [{sig3(edges[idx])}, {sig3(edges[idx + 1])}{close}", bin_=idx)

    def on_pair_click(self, ctx):
        from agreement.fo.views import DRILL_LIMIT, ViewError, rater_pair_scores, write_rater_pair_field

        key, info, base, base_stages = self._context(ctx)
        a, b = ctx.params.get("x"), ctx.params.get("y")
        if not a or not b or a == b:
            return
        a, b = sorted([str(a), str(b)])
        try:
            items = rater_pair_scores(base, key, a, b)
        except ViewError as e:
            ctx.ops.notify(str(e), variant="warning")
            return
        chosen = items[:DRILL_LIMIT]
        view = base.select([sid for sid, _ in chosen], ordered=True)
        own = info["method"] == "iaa.ot_agreement"
        what = (f"the {len(chosen)} samples (of {len(items)} shared) where {a} and {b} agree least, lowest "
                f"{'pair score' if own else 'sample score'} first")
        if chosen:
            what += f" (from {sig3(chosen[0][1])} to {sig3(chosen[-1][1])})"
        import os

        names = dict(zip(*view.values(["id", "filepath"])))
        scores = [{"sample": os.path.basename(names.get(sid, sid)), "score": s} for sid, s in chosen]
        field = write_rater_pair_field(base, key, a, b) if own else None
        self._drill(ctx, base, base_stages, view, what, pair_scores=scores, pair=(a, b), pair_field=field)

    def on_vitality_click(self, ctx):
        from agreement.fo.views import unmatched_labels_view

        self._drill_bar(ctx, unmatched_labels_view, "{}'s labels that match nobody (alone in their unit)")

    def on_class_click(self, ctx):
        from agreement.fo.views import class_disagreement_view

        self._drill_bar(ctx, class_disagreement_view, "the {} units the raters disagree on")

    def _drill_bar(self, ctx, make_view, what: str) -> None:
        """Drills down to ``make_view(base, key, x)`` for the clicked bar ``x``, described as ``what.format(x)``."""
        key, info, base, base_stages = self._context(ctx)
        x = ctx.params.get("x")
        if x:
            self._drill(ctx, base, base_stages, make_view(base, key, x), what.format(x))

    def on_scatter_click(self, ctx):
        sid = ctx.params.get("id")
        key, info, base, base_stages = self._context(ctx)
        if sid:
            self._drill(ctx, base, base_stages, base.select([sid]), f"sample {sid} (from the comparison)")

    def on_scatter_select(self, ctx):
        ids = [p.get("id") for p in ctx.params.get("data") or [] if p.get("id")]
        key, info, base, base_stages = self._context(ctx)
        if ids:
            self._drill(ctx, base, base_stages, base.select(ids),
                        f"{len(ids)} samples selected in the comparison")

    def on_sort_lowest(self, ctx):
        key, info, base, base_stages = self._context(ctx)
        field = runs_score_field(info)
        if field is None:
            return
        descending = not METHOD_VIEWS[info["method"]].get("higher_is_better", True)
        view = lowest_first_view(base, field, descending)
        self._drill(ctx, base, base_stages, view, f"the scored samples, lowest agreement first (by {field})")

    def on_show_unscored(self, ctx):
        key, info, base, base_stages = self._context(ctx)
        field = runs_score_field(info)
        if field is None:
            return
        reason = ctx.params.get("reason")
        mem = _memory(ctx)
        if reason is not None:
            group = next((g for g in mem.undefined if g["reason"] == reason), None)
            if group is None:
                return
            view = base.select(group["ids"])
            what = f"the {len(group['ids'])} samples without a score because: {reason}"
        else:
            view = unscored_view(base, field)
            what = "the samples without a score"
        self._drill(ctx, base, base_stages, view, what)

    def on_clear_drill(self, ctx):
        key, info, base, base_stages = self._context(ctx)
        mem = _memory(ctx)
        restore = (mem.drill or {}).get("restore")
        mem.drill = None
        if restore is not None:  # the review queue: back to the stages and sidebar filters it started from
            base_stages = restore["stages"]
            mem.filters = restore["filters"]
        self._expect_reset(ctx, mem)
        if base_stages is None:
            ctx.ops.clear_view()
            return
        ctx.trigger("set_view", params={"view": base_stages})
        if restore is not None and restore["filters"] and _app_can_set_filters():
            ctx.trigger("set_filters", params=restore["filters"])

    def on_whole_dataset(self, ctx):
        mem = _memory(ctx)
        mem.drill = None
        mem.filters = {}
        mem.reset_until = 0.0
        ctx.ops.clear_view()
        if _app_can_set_filters():
            ctx.trigger("set_filters", params={})

    def on_show_disagreeing(self, ctx):
        from agreement.fo.views import disagreeing_labels_view

        key, info, base, base_stages = self._context(ctx)
        sid = ctx.current_sample
        if not sid:
            return
        view = disagreeing_labels_view(base, key, sample_id=sid, hide_other_labels=True)
        self._drill(ctx, base, base_stages, view, f"the disagreeing labels of sample {sid}")

    def on_change_consensus_rater(self, ctx):
        mem = _memory(ctx)
        value = ctx.params.get("value")
        if not value or value == mem.consensus_rater:  # the dropdown reporting its value: nothing changed
            return
        ctx.panel.state.consensus_rater = mem.consensus_rater = value
        self._expect_reset(ctx, mem)
        self._refresh(ctx, force=True)

    def on_review_queue(self, ctx):
        """Loads the consensus run's review queue (a patches view) on the samples the panel describes.

        A patches view has none of the sample fields the sidebar filters may be on, so the filters go into
        the view as stages (the queue covers the filtered samples) and come back as sidebar filters when
        the drill-down is undone."""
        key, info, base, base_stages = self._context(ctx)
        mem = _memory(ctx)
        view = review_queue_view(base, key)
        prefix = base._serialize()  # a patches view's own _stages omit those before to_patches: serialise it whole
        added = view._serialize()[len(prefix):]
        count = len(view)
        mem.drill = {"stages": added, "what": f"the review queue of run {key!r}: the consensus labels flagged for "
                     "review, least confident first (tag them `accepted` or `rejected`)", "bin": None,
                     "count": count, "unit": "flagged label", "run": key,
                     "restore": {"stages": base_stages, "filters": dict(mem.filters)}}
        mem.sig = None
        mem.filters, mem.reset_until = {}, 0.0  # nothing to put back on the patches view
        if base_stages is None:  # a saved view
            ctx.ops.set_view(view=view)
        else:
            ctx.trigger("set_view", params={"view": prefix + added})
            if mem.drill["restore"]["filters"] and _app_can_set_filters():
                ctx.trigger("set_filters", params={})
        ctx.panel.data.drill_md = self._drill_md(mem)

    # ----------------------------------------------------------------- helpers
    def _expect_reset(self, ctx, mem: _Memory) -> None:
        filters = self._request_filters(ctx)
        if filters:
            mem.filters = filters
        mem.reset_until = time.time() + RESET_WINDOW

    @staticmethod
    def _request_filters(ctx) -> dict:
        return dict(ctx.request_params.get("filters") or {})

    def _base(self, ctx, mem: _Memory):
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
            if k and len(stages) >= k and _same(stages[-k:], mem.drill["stages"]):
                stages, drilled = stages[:-k], True
            else:
                mem.drill = None
        filters = mem.filters if mem.filters else (params.get("filters") or {})
        base = fosv.get_view(ctx.dataset, stages=stages, filters=filters or None,
                             extended_stages=params.get("extended") or None)
        return base, stages, drilled

    def _context(self, ctx):
        mem = _memory(ctx)
        self._restore_filters(ctx, mem)
        key = mem.run_key or ctx.panel.state.run_key
        keys = runs.list_agreement_runs(ctx.dataset)
        if key not in keys:
            key = self._newest(ctx.dataset, keys)
        info = runs.get_agreement_run_info(ctx.dataset, key)
        base, stages, _ = self._base(ctx, mem)
        return key, info, base, stages

    def _drill(self, ctx, base, base_stages, view, what: str, bin_: int | None = None, **extra) -> None:
        """Loads ``view`` (``base`` plus stages) in the App, on top of the user's view and filters."""
        mem = _memory(ctx)
        added = [s._serialize() for s in view._stages[len(base._stages):]]
        count = len(view)
        mem.drill = {"stages": added, "what": what, "bin": bin_, "count": count, "run": mem.run_key, **extra}
        mem.sig = None
        self._expect_reset(ctx, mem)
        if base_stages is None:  # a saved view: load the whole new view
            ctx.ops.set_view(view=view)
        else:
            ctx.trigger("set_view", params={"view": list(base_stages) + added})
        ctx.panel.data.drill_md = self._drill_md(mem)

    @staticmethod
    def _marks(mem: _Memory, key: str) -> dict:
        """The histogram bar and heatmap cell of the panel's drill-down, when it was on run ``key``."""
        d = mem.drill or {}
        if d.get("run") != key:
            return {"bin": None, "pair": None}
        return {"bin": d.get("bin"), "pair": list(d["pair"]) if d.get("pair") else None}

    @staticmethod
    def _drill_md(mem: _Memory) -> str:
        d = mem.drill
        if not d:
            return ""
        unit = d.get("unit", "sample")
        text = f"**Loaded:** {d['what']} — {d['count']:,} {unit}{'s' if d['count'] != 1 else ''}."
        if d.get("pair_scores"):
            a, b = d["pair"]
            top = d["pair_scores"][:6]
            text += (f" In grid order, their {a}–{b} scores: "
                     + ", ".join(f"{s['sample']} {sig3(s['score'])}" for s in top)
                     + (f", … ({len(d['pair_scores']) - len(top)} more)" if len(d["pair_scores"]) > len(top) else "")
                     + ".")
        if d.get("pair_field"):
            text += (f" Every sample's {d['pair'][0]}–{d['pair'][1]} score is in field `{d['pair_field']}`: "
                     "tick it in the sidebar to show it on the grid tiles, or filter and sort by it.")
        return text

    def _restore_filters(self, ctx, mem: _Memory) -> dict:
        """The user's sidebar filters: the request's, or the remembered ones when the App dropped them
        right after an action of this panel (then they are put back in the App)."""
        logger.debug("%s filters=%s stages=%d remembered=%s window=%.1f drill=%s", ctx.params.get("__method__"),
                     json.dumps(ctx.request_params.get("filters")), len(ctx.request_params.get("view") or []),
                     bool(mem.filters), mem.reset_until - time.time(), bool(mem.drill))
        filters = self._request_filters(ctx)
        if "filters" not in ctx.request_params:
            return filters
        if filters:
            mem.filters = filters
        elif mem.filters:
            if time.time() < mem.reset_until and _app_can_set_filters():
                ctx.trigger("set_filters", params=mem.filters)
                mem.reset_until = max(mem.reset_until, time.time() + RESTORE_EXTENSION)
                return mem.filters
            mem.filters = {}
        return filters

    @staticmethod
    def _run_labels(dataset, keys) -> dict:
        labels = {}
        for k in keys:
            try:
                info = runs.get_agreement_run_info(dataset, k)
                title = (METHOD_VIEWS.get(info["method"]) or {}).get("title", info["method"])
                labels[k] = f"{k} — {title}, {info['timestamp'][:16]}"
            except Exception:  # listed even when its record cannot be read
                labels[k] = k
        return labels

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
        mem = _memory(ctx)
        dataset = ctx.dataset
        if dataset is not None and mem.dataset != dataset.name:
            if mem.dataset is not None:  # another dataset in the same panel: start afresh
                _MEMORY.pop(str(ctx.params.get("panel_id") or "default"), None)
                mem = _memory(ctx)
            mem.dataset = dataset.name
        filters = self._restore_filters(ctx, mem)
        keys = runs.list_agreement_runs(dataset) if dataset is not None else []
        state = ctx.panel.state
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
        mem.run_labels = self._run_labels(dataset, keys)
        if not keys:
            mem.shown = {}
            changed |= self._set_state(ctx, has_label_fields=bool(dataset is not None and label_fields(dataset)),
                                       error=None, cards=[], score_field=None)
            if changed:
                self._expect_reset(ctx, mem)
            mem.sig = None
            return
        base, base_stages, drilled = self._base(ctx, mem)
        if not drilled:
            mem.drill = None
        if mem.compare_on is None:
            mem.compare_on, mem.compare_key = bool(state.compare), state.compare_key
        compare, compare_key = mem.compare_on, mem.compare_key
        info = runs.get_agreement_run_info(dataset, key)
        sig = json.dumps([dataset.name, str(dataset._doc.id), keys, key, info["timestamp"], compare, compare_key,
                          base_stages if base_stages is not None else repr(ctx.view), filters,
                          ctx.request_params.get("extended"), self._marks(mem, key), ctx.current_sample],
                         sort_keys=True, default=str)
        if not force and sig == mem.sig:
            return
        mem.sig = sig
        whole = (not base_stages and not filters and not ctx.request_params.get("extended")
                 and not ctx.request_params.get("view_name")) if base_stages is not None else None
        mem.whole = bool(whole) if whole is not None else len(base) == dataset.count()
        n_view = len(base)
        try:
            marks = self._marks(mem, key)
            data = run_panel_data(base, key, whole=whole, selected_bin=marks["bin"], selected_pair=marks["pair"],
                                  rater=mem.consensus_rater or state.consensus_rater)
        except (PanelDataError, runs.RunError) as e:
            changed |= self._set_state(ctx, error=str(e), cards=[], score_field=None, title=None,
                                       bar_titles=[], curve_titles=[])
            if changed:
                self._expect_reset(ctx, mem)
            mem.figures = {}
            mem.shown = {"error": str(e)}
            ctx.panel.data.clear()
            return
        # run-level state (changes only with the run: no workspace update on view changes)
        hist = data["histogram"]
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
        # view-level data
        pdata = ctx.panel.data
        mem.figures = {name: {"layout": fig["layout"], "config": fig["config"], "click": fig.get("click"),
                              "traces": fig["traces"]} for name, fig in data["figures"].items()}
        mem.undefined = data["undefined"]
        pdata.view_note = self._view_note(data, n_view, filters, base_stages, mem)
        pdata.drill_md = self._drill_md(mem)
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
        pdata.undefined_md = self._undefined_md(data, hist)
        pdata.pair_matrix = data["figures"]["pair_matrix"]["traces"] if "pair_matrix" in data["figures"] else []
        for i, bar in enumerate(data["bars"]):
            pdata.set(f"bars_{i}", bar["traces"])
        for i, curve in enumerate(data["curves"]):
            pdata.set(f"curve_{i}", curve["traces"])
        mem.figures.update({f"bars_{i}": mem.figures[b["name"]] for i, b in enumerate(data["bars"])})
        mem.figures.update({f"curve_{i}": mem.figures[c["name"]] for i, c in enumerate(data["curves"])})
        self._refresh_consensus(pdata, mem, data["consensus"])
        self._refresh_compare(ctx, mem, base, key, info, compare, compare_key)
        self._refresh_modal(ctx, mem, base, key, info)

    @staticmethod
    def _refresh_consensus(pdata, mem: _Memory, cons: dict | None) -> None:
        """A consensus run's rater report, confusion matrix and review-queue note (panel data and memory)."""
        mem.consensus = None
        if cons is None:
            return
        counts = {c["label"]: c for c in (cons["view_cards"] or cons["cards"])}
        n_flagged = counts.get("flagged for review", {}).get("count") or 0
        mem.consensus = {"raters": cons["raters"], "rater": cons["rater"], "n_flagged": int(n_flagged)}
        pdata.consensus_report_md = "**Rater report** (whole run, against the consensus)\n\n" + cons["report_md"]
        pdata.review_md = cons["review_help"]
        pdata.confusion = mem.figures["confusion"]["traces"] if "confusion" in mem.figures else []

    def _view_note(self, data, n_view, filters, base_stages, mem) -> str:
        if data["whole"] or base_stages is None and n_view == data["n_run"]:
            text = f"**{n_view:,} samples in view: the whole dataset.**"
        else:
            parts = []
            if base_stages:
                parts.append(f"{len(base_stages)} view stage{'s' if len(base_stages) != 1 else ''}")
            if filters:
                parts.append("sidebar filter" + ("s" if len(filters) != 1 else "") + " on " + ", ".join(
                    f"`{k}`" for k in filters))
            how = f" ({'; '.join(parts)})" if parts else ""
            text = (f"**{n_view:,} samples in view**{how}, of {data['n_run']:,} in the run. The charts and the "
                    "*this view* column follow the view; *whole run* numbers need the whole corpus.")
        return text

    @staticmethod
    def _undefined_md(data, hist) -> str:
        if not hist or not hist["n_missing"]:
            return ""
        lines = [f"**{hist['n_missing']:,} samples in view have no score**; the lowest-first button leaves them "
                 "out. Why (from the run results):", "", "| reason | samples |", "|:--|--:|"]
        listed = 0
        for g in data["undefined"]:
            lines.append(f"| {g['reason']} | {g['count']:,} |")
            listed += g["count"]
        if listed < hist["n_missing"]:
            lines.append(f"| (not listed in the run results) | {hist['n_missing'] - listed:,} |")
        return "\n".join(lines)

    def _refresh_compare(self, ctx, mem, base, key, info, compare, compare_key):
        mem.compare = None
        if not compare:
            return
        method = info["method"]
        others = [k for k in runs.list_agreement_runs(ctx.dataset, method=method) if k != key]
        pdata = ctx.panel.data
        if not others:
            pdata.compare_md = f"No other {METHOD_VIEWS[method]['title']} run to compare with: compute one first."
            return
        if compare_key not in others:
            compare_key = others[0]
        other = runs.get_agreement_run_info(ctx.dataset, compare_key)
        cmp = compare_data(base, info, other, whole=bool(mem.whole))
        mem.compare = {"others": others, "key": compare_key, "figures": {}}
        md = [run["key"] for run in cmp["runs"]]
        pdata.compare_table = cmp["markdown"]
        if cmp["histograms"]:
            pdata.compare_hist = cmp["histograms"]["traces"]  # for SDK users; the App gets them in the view
            mem.compare["figures"]["compare_hist"] = cmp["histograms"]
        if cmp["scatter"]:
            pdata.compare_scatter = cmp["scatter"]["traces"]
            mem.compare["figures"]["compare_scatter"] = cmp["scatter"]
            pdata.compare_md = ""
        else:
            pdata.compare_md = (f"Runs {md[0]!r} and {md[1]!r} scored no sample in common in this view, so there "
                                "is no per-sample scatter.")

    def _refresh_modal(self, ctx, mem, base, key, info):
        mem.modal = None
        sid = ctx.current_sample
        if not sid:
            ctx.panel.data.labels_md = ""
            return
        rows = label_explanations(base, info, sid)
        n_dis = sum(r["disagrees"] for r in rows)
        mem.modal = {"sample": sid, "n": len(rows), "n_disagree": n_dis}
        if not rows:
            ctx.panel.data.labels_md = f"**Labels of the open sample**\n\nNo labels of run {key!r}'s raters here."
            return
        lines = [f"**Labels of the open sample** ({n_dis} of {len(rows)} disagree, run {key!r})", "",
                 "| rater | label | status | counterpart (rater: label) | cost / unit |", "|:--|:--|:--|:--|:--|"]
        for r in rows:
            lines.append(f"| {r['rater']} | {r['label']} | {r['status']} | {r['counterpart']} | {r['value']} |")
        ctx.panel.data.labels_md = "\n".join(lines)

    # ------------------------------------------------------------------ render
    def _plot(self, panel, mem: _Memory, name: str, figures: dict | None = None, **handlers):
        fig = (figures or mem.figures).get(name)
        if fig is None:
            return
        # the traces go in the view, not in panel data: the App stores a plot's data in its workspace, and
        # a workspace update drops the sidebar filters (see the module docstring)
        panel.plot(f"plot_{name}", data=fig["traces"], layout=fig["layout"], config=fig["config"], **handlers)

    def render(self, ctx):
        panel = types.Object()
        state = ctx.panel.state
        mem = _memory(ctx)
        keys = (mem.runs if mem.runs is not None else state.runs) or []
        shown = mem.shown
        if not keys:
            if state.has_label_fields is False:
                panel.md(
                    "**No label fields**\n\nThis dataset has no `Detections` or `Polylines` fields, so there is "
                    "nothing to compare yet. Import multi-rater annotations with **Annotator Agreement: import "
                    "multi-rater COCO**, or add one label field per rater.",
                    name="empty",
                )
            else:
                panel.md(EMPTY_HELP, name="empty")
            return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left"))
        choices = types.DropdownView()
        for k in keys:
            choices.add_choice(k, label=mem.run_labels.get(k, k))
        panel.enum("run_key", keys, default=mem.run_key or state.run_key, label="Run", view=choices,
                   on_change=self.on_change_run)
        if mem.modal is not None:  # a sample is open: explain its labels (the dashboard is behind the modal)
            if mem.modal["n_disagree"]:
                panel.btn("show_disagreeing", label=f"Show only the {mem.modal['n_disagree']} disagreeing labels "
                          "of this sample", on_click=self.on_show_disagreeing, variant="outlined")
            panel.str("labels_md", view=types.MarkdownView())
            return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left", gap=2))
        if shown.get("error"):
            panel.view("error", types.Warning(label=shown["error"]))
        panel.str("view_error", view=types.MarkdownView())
        panel.str("view_note", view=types.MarkdownView())
        row = panel.h_stack("view_actions", gap=1, align_x="left")
        if not mem.whole or mem.drill:
            row.btn("whole_dataset", label="Show the whole dataset", on_click=self.on_whole_dataset,
                    variant="outlined")
        if mem.drill:
            row.btn("clear_drill", label="Undo the panel's drill-down", on_click=self.on_clear_drill,
                    variant="outlined")
        panel.str("drill_md", view=types.MarkdownView())
        if not shown.get("has_cards"):
            return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left", gap=2))
        panel.str("summary_md", view=types.MarkdownView())
        panel.btn("toggle_compare", label="Stop comparing" if mem.compare_on else
                  "Compare with another run of this method", on_click=self.on_toggle_compare, variant="outlined")
        if mem.compare_on and mem.compare:
            cmp_choices = types.DropdownView()
            for k in mem.compare["others"]:
                cmp_choices.add_choice(k, label=k)
            panel.enum("compare_key", mem.compare["others"], default=mem.compare["key"], label="Compare with",
                       view=cmp_choices, on_change=self.on_change_compare_key)
            panel.str("compare_table", view=types.MarkdownView())
            self._plot(panel, mem, "compare_hist", mem.compare["figures"])
            panel.str("compare_md", view=types.MarkdownView())
            self._plot(panel, mem, "compare_scatter", mem.compare["figures"], on_click=self.on_scatter_click,
                       on_selected=self.on_scatter_select)
        elif mem.compare_on:
            panel.str("compare_md", view=types.MarkdownView())
        if mem.consensus is not None:
            self._render_consensus(panel, mem)
        if shown.get("score_field"):
            self._plot(panel, mem, "histogram", on_click=self.on_histogram_click)
            row = panel.h_stack("sort_actions", gap=1, align_x="left")
            row.btn("sort_lowest", label="Load the scored samples, lowest agreement first",
                    on_click=self.on_sort_lowest, variant="outlined")
            panel.str("undefined_md", view=types.MarkdownView())
            if mem.undefined:
                undef = panel.h_stack("undefined_actions", gap=1, align_x="left")
                undef.btn("show_unscored", label="Load the samples without a score", on_click=self.on_show_unscored,
                          variant="outlined")
                for i, g in enumerate(mem.undefined[:3]):
                    short = g["reason"] if len(g["reason"]) <= 40 else g["reason"][:38] + "…"
                    undef.btn(f"show_unscored_{i}", label=f"{g['count']}: {short}", on_click=self.on_show_unscored,
                              params={"reason": g["reason"]}, variant="outlined")
        if "pair_matrix" in mem.figures:
            clickable = mem.figures["pair_matrix"].get("click")
            self._plot(panel, mem, "pair_matrix", **({"on_click": self.on_pair_click} if clickable else {}))
        for i in range(shown.get("n_bars", 0)):
            name = f"bars_{i}"
            click = (mem.figures.get(name) or {}).get("click")
            handler = {"vitality": self.on_vitality_click, "class": self.on_class_click}.get(click)
            self._plot(panel, mem, name, **({"on_click": handler} if handler else {}))
        for i in range(shown.get("n_curves", 0)):
            self._plot(panel, mem, f"curve_{i}")
        return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left", gap=2))


    def _render_consensus(self, panel, mem: _Memory) -> None:
        """The review-queue button and note, the rater report and one rater's confusion matrix."""
        cons = mem.consensus
        n = cons["n_flagged"]
        label = (f"Review queue: the {n:,} flagged consensus label{'s' if n != 1 else ''}, least confident first"
                 if n else "Review queue (no consensus label in view is flagged)")
        panel.btn("review_queue", label=label, on_click=self.on_review_queue, variant="contained")
        panel.str("review_md", view=types.MarkdownView())
        panel.str("consensus_report_md", view=types.MarkdownView())
        if cons["raters"]:
            choices = types.DropdownView()
            for r in cons["raters"]:
                choices.add_choice(r, label=r)
            panel.enum("consensus_rater", cons["raters"], default=cons["rater"], label="Confusion matrix of rater",
                       view=choices, on_change=self.on_change_consensus_rater)
        self._plot(panel, mem, "confusion")


def runs_score_field(info: dict) -> str | None:
    from agreement.fo.panel_data import score_field

    return score_field(info)
