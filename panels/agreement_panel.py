"""The "Annotator Agreement" panel: a thin view over run results.

All numbers and plot data come from :func:`agreement.fo.panel_data.run_panel_data`
(what any SDK user can load); this module only lays them out and turns clicks
into views.
"""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from agreement.fo import runs
from agreement.fo.panel_data import PanelDataError, bin_view, lowest_first_view, run_panel_data
from agreement.fo.reading import label_fields

EMPTY_HELP = """### No agreement runs yet

Agreement is computed by the plugin's operators (press `` ` `` or use the
operator browser), for example **Annotator Agreement: OT agreement**: pick the
label fields of your raters (one field per rater, or one field whose labels
carry the rater in an attribute), give the run a key, and run it. Then come
back here to see the score distribution and who agrees with whom.

From Python:

```python
import fiftyone.operators as foo
foo.execute_operator("@iaa/agreement/compute_ot_agreement",
    ctx=dict(view=dataset.view(), params=dict(fields=["r1", "r2"], key="ot")))
```
"""


class AgreementPanel(foo.Panel):
    @property
    def config(self):
        return foo.PanelConfig(
            name="annotator_agreement",
            label="Annotator Agreement",
            surfaces="grid",
            help_markdown="Chance-corrected inter-annotator agreement of this dataset's agreement runs",
        )

    # ------------------------------------------------------------------ events
    def on_load(self, ctx):
        self._refresh(ctx)

    def on_change_view(self, ctx):
        self._refresh(ctx)

    def on_change_dataset(self, ctx):
        ctx.panel.state.run_key = None
        self._refresh(ctx)

    def on_change_run(self, ctx):
        ctx.panel.state.run_key = ctx.params.get("value")
        self._refresh(ctx)

    def on_histogram_click(self, ctx):
        edges = ctx.panel.state.hist_edges or []
        field = ctx.panel.state.score_field
        idx = ctx.params.get("idx")
        if field is None or idx is None or not (0 <= int(idx) < len(edges) - 1):
            return
        idx = int(idx)
        view = bin_view(ctx.view, field, edges[idx], edges[idx + 1], last=idx == len(edges) - 2)
        self._load(ctx, view, f"samples with {field} in bin {idx + 1}")

    def on_sort_lowest(self, ctx):
        field = ctx.panel.state.score_field
        if field is None:
            return
        descending = bool(ctx.panel.state.worst_first_descending)
        self._load(ctx, lowest_first_view(ctx.view, field, descending),
                   f"samples sorted by {field}, lowest agreement first")

    # ----------------------------------------------------------------- helpers
    def _load(self, ctx, view, description):
        ctx.panel.state.loaded_view = {"description": description, "count": len(view), "stages": view._serialize()}
        ctx.ops.set_view(view=view)

    def _refresh(self, ctx):
        state = ctx.panel.state
        dataset = ctx.dataset
        state.error = None
        keys = runs.list_agreement_runs(dataset) if dataset is not None else []
        state.runs = keys
        if not keys:
            state.run_key = None
            state.has_label_fields = bool(dataset is not None and label_fields(dataset))
            ctx.panel.data.clear()
            return
        key = state.run_key
        if key not in keys:
            newest = max(keys, key=lambda k: dataset.get_run_info(k).timestamp)
            if key is not None:
                state.error = f"Run {key!r} no longer exists (deleted or renamed); showing {newest!r} instead."
            key = newest
            state.run_key = key
        if len(ctx.view) == 0:
            state.error = "The current view has no samples: clear the filters or stages to see this run."
            state.cards = []
            ctx.panel.data.clear()
            return
        try:
            data = run_panel_data(ctx.view, key)
        except (PanelDataError, runs.RunError) as e:
            state.error = str(e)
            state.cards = []
            ctx.panel.data.clear()
            return
        state.title = data["title"]
        state.cards = data["cards"]
        state.score_field = data["score_field"]
        state.worst_first_descending = data["worst_first_descending"]
        hist = data["histogram"]
        if hist is not None:
            state.hist_edges = hist["edges"]
            centers = [(a + b) / 2 for a, b in zip(hist["edges"][:-1], hist["edges"][1:])]
            ctx.panel.data.histogram = [{
                "type": "bar", "x": centers, "y": hist["counts"], "name": data["score_label"],
                "width": (hist["edges"][1] - hist["edges"][0]) * 0.95,
                "hovertemplate": "score %{x:.3f}: %{y} samples<extra></extra>",
            }]
            state.n_missing = hist["n_missing"]
        else:
            state.hist_edges = None
            state.n_missing = 0
        pm = data["pair_matrix"]
        state.pair_title = pm["title"] if pm else None
        ctx.panel.data.pair_matrix = [{
            "type": "heatmap", "x": pm["raters"], "y": pm["raters"], "z": pm["z"], "colorscale": "Viridis",
            "zmin": -0.2, "zmax": 1.0, "customdata": pm["shared"],
            "hovertemplate": "%{y} vs %{x}: %{z:.3f} (%{customdata} shared samples)<extra></extra>",
        }] if pm else []
        for i, bar in enumerate(data["bars"]):
            ctx.panel.data.set(f"bars_{i}", bar["traces"])
        for i, curve in enumerate(data["curves"]):
            ctx.panel.data.set(f"curve_{i}", curve["traces"])
        state.bar_titles = [b["title"] for b in data["bars"]]
        state.curve_titles = [c["title"] for c in data["curves"]]

    # ------------------------------------------------------------------ render
    def render(self, ctx):
        panel = types.Object()
        state = ctx.panel.state
        keys = state.runs or []
        if not keys:
            if state.has_label_fields is False:
                panel.md(
                    "### No label fields\n\nThis dataset has no `Detections` or `Polylines` fields, so there is "
                    "nothing to compare yet. Import multi-rater annotations with **Annotator Agreement: import "
                    "multi-rater COCO**, or add one label field per rater.",
                    name="empty",
                )
            else:
                panel.md(EMPTY_HELP, name="empty")
            return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left"))
        choices = types.DropdownView()
        for k in keys:
            choices.add_choice(k, label=k)
        panel.enum("run_key", keys, default=state.run_key, label="Run", view=choices, on_change=self.on_change_run)
        if state.error:
            panel.view("error", types.Warning(label=state.error))
        cards = state.cards or []
        if cards:
            panel.md(f"### {state.title}", name="title")
            row = panel.h_stack("cards", gap=2)
            for i, card in enumerate(cards):
                row.md(f"**{card['label']}**\n\n{card['text']}", name=f"card_{i}")
        if cards and state.score_field:
            panel.plot(
                "histogram",
                layout={"title": "Per-sample agreement (click a bar to see its samples)", "bargap": 0.05,
                        "xaxis": {"title": "score"}, "yaxis": {"title": "samples"}, "height": 320},
                on_click=self.on_histogram_click,
            )
            if state.n_missing:
                panel.md(f"{state.n_missing} samples of this view have no score (see the run's undefined reasons).",
                         name="missing")
            panel.btn("sort_lowest", label="Show samples, lowest agreement first", on_click=self.on_sort_lowest)
        if cards:
            if state.pair_title:
                panel.plot("pair_matrix", layout={"title": state.pair_title, "height": 380})
            for i, title in enumerate(state.bar_titles or []):
                panel.plot(f"bars_{i}", layout={"title": title, "height": 300, "barmode": "group"})
            for i, title in enumerate(state.curve_titles or []):
                panel.plot(f"curve_{i}", layout={"title": title, "height": 300})
        return types.Property(panel, view=types.GridView(orientation="vertical", align_x="left", gap=2))
