"""The Annotator Agreement panel driven through execute_operator: state, plot data, views, filters."""

import time

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

PANEL = "@iaa/agreement/annotator_agreement"


def _g3(x: float) -> str:
    """Three significant figures, trailing zeros kept (what the panel writes: 0.560, 1.00)."""
    return f"{x:#.3g}".rstrip(".")


def _panel(ds, method, state=None, view=None, filters=None, current_sample=None, panel_id="test-panel", **event):
    """Runs one panel event as the App would send it; returns (state, data, requests) after it."""
    import fiftyone.operators as foo

    params = {"__method__": method, "panel_id": panel_id, "panel_state": dict(state or {}), **event}
    ctx = dict(view=view if view is not None else ds.view(), params=params)
    if filters is not None:
        ctx["filters"] = filters
    if current_sample is not None:
        ctx["current_sample"] = current_sample
    r = foo.execute_operator(PANEL, ctx=ctx)
    assert r.error is None, r.error
    new_state, data, requests = dict(state or {}), {}, []
    for q in r.executor.to_json()["requests"]:
        uri, p = q["operator_uri"], q["params"]
        if uri == "patch_panel_state":
            new_state.update(p["state"])
        elif uri == "patch_panel_data":
            data.update(p["data"])
        requests.append((uri, p))
    return new_state, data, requests


def _memory_module():
    import sys

    for name, mod in sys.modules.items():
        if name.endswith("agreement_panel") and hasattr(mod, "_MEMORY"):
            yield mod


@pytest.fixture(autouse=True)
def _clear_memory():
    for mod in _memory_module():
        mod._MEMORY.clear()
    yield


@pytest.fixture(scope="module")
def _scored_once(fo, module_dataset):
    D = fo.Detections
    rng = np.random.default_rng(1)
    samples = []
    for i in range(30):
        base = [[float(x), float(y), 0.2, 0.2] for x, y in rng.uniform(0, 0.7, (3, 2))]
        noise = 0.0 if i < 10 else 0.15
        samples.append(fo.Sample(
            filepath=f"/d/{i}.jpg",
            a=D(detections=[fo.Detection(label="c", bounding_box=b) for b in base]),
            b=D(detections=[fo.Detection(label="c", bounding_box=[b[0] + rng.uniform(0, noise), b[1], 0.2, 0.2])
                            for b in base]),
            c=D(detections=[fo.Detection(label="c", bounding_box=b) for b in base[:2]]),
        ))
    ds = module_dataset(samples)
    import fiftyone.operators as foo

    for key, fields in (("ot", ["a", "b", "c"]), ("ot_ab", ["a", "b"])):
        foo.execute_operator("@iaa/agreement/compute_ot_agreement",
                             ctx=dict(view=ds.view(), params=dict(fields=fields, key=key)))
    return ds


@pytest.fixture
def scored(_scored_once, clone_dataset):
    """30 samples, raters a/b/c, OT runs ``ot`` (a, b, c) and ``ot_ab``: each test's own clone."""
    return clone_dataset(_scored_once)


def _set_views(requests):
    return [p["view"] for uri, p in requests if uri == "set_view"]


def _built(ds, requests):
    from fiftyone.core.view import DatasetView

    views = _set_views(requests)
    assert len(views) == 1, views
    return DatasetView._build(ds, views[0]), views[0]


def _output(requests):
    return [p for uri, p in requests if uri == "show_panel_output"][-1]["output"]


def _plots(output):
    """Every plot of a rendered panel: name -> its PlotlyView json (traces in ``data``: plot traces travel
    in the view, never in panel data, see the panel's docstring)."""
    found = {}

    def walk(node, name=None):
        if isinstance(node, dict):
            view = node.get("view") if isinstance(node.get("view"), dict) else None
            if view and view.get("name") == "PlotlyView":
                assert name.startswith("plot_"), name
                found[name[len("plot_"):]] = view
            for k, v in node.items():
                walk(v, k if k not in ("view", "type", "properties") else name)
        elif isinstance(node, list):
            for v in node:
                walk(v, name)

    walk(output)
    return found


def test_on_load_shows_cards_histogram_and_matrix(scored):
    state, data, requests = _panel(scored, "on_load")
    assert state["runs"] == ["ot", "ot_ab"] and state["run_key"] == "ot_ab"  # the newest run first
    state, data, requests = _panel(scored, "on_change_run", state, value="ot")
    labels = [c["label"] for c in state["cards"]]
    assert labels[0] == "αOT" and "mean OT score" in labels
    value = state["cards"][0]["value"]
    assert state["cards"][0]["text"].startswith(_g3(value))  # three significant figures
    hist = data["histogram"][0]
    assert hist["type"] == "bar" and sum(hist["y"]) == len(scored)
    heat = data["pair_matrix"][0]
    assert heat["x"] == ["a", "b", "c"] and heat["z"][0][0] is None
    assert "whole dataset" in data["view_note"] and "| whole run (30 samples) |" in data["summary_md"]
    assert "*Rater assignment:*" in data["summary_md"]
    assert "*Computed on:* whole dataset (30 samples)" in data["summary_md"]  # the target the run recorded
    assert any(uri == "show_panel_output" for uri, _ in requests)


def test_every_chart_has_a_title_axis_titles_and_no_scroll_zoom(fo, scored):
    import fiftyone.operators as foo

    foo.execute_operator("@iaa/agreement/compute_kalos",
                         ctx=dict(view=scored.view(), params=dict(fields=["a", "b", "c"], key="kal")))
    state, _, _ = _panel(scored, "on_load")
    assert state["run_key"] == "kal"
    for key in ("kal", "ot"):
        state, data, requests = _panel(scored, "on_change_run", state, value=key)
        plots = _plots(_output(requests))
        expected = {"histogram", "pair_matrix"} | ({"bars_0", "bars_1", "curve_0"} if key == "kal" else set())
        assert expected <= set(plots), plots.keys()
        for name, view in plots.items():
            layout = view["layout"]
            assert layout["title"]["text"], name
            assert layout["xaxis"]["title"]["text"] and layout["yaxis"]["title"]["text"], name
            assert view["config"]["scrollZoom"] is False, name
            traces = view["data"]
            assert traces, name
            if len(traces) > 1:
                assert layout["showlegend"] and all(t.get("name") for t in traces), name
    # the alpha-tau curve: two named lines and the run's tau
    state, data, _ = _panel(scored, "on_change_run", state, value="kal")
    assert [t["name"] for t in data["curve_0"]][:2] == ["global α (pooled over all units)", "mean α over samples"]


def test_a_view_change_writes_data_only_and_follows_the_view(scored):
    state, _, _ = _panel(scored, "on_load")
    state, data, _ = _panel(scored, "on_change_run", state, value="ot")
    low = scored.match(fo_field("ot_ot") < 0.9)
    state2, data, requests = _panel(scored, "on_change_view", state, view=low)
    # the App keeps panel state in its workspace, and every workspace update drops the sidebar filters
    assert not [uri for uri, _ in requests if uri == "patch_panel_state"]
    # nor plot data: the App writes a rendered plot's data into its workspace too (the traces are in the view)
    assert not [k for uri, p in requests if uri == "patch_panel_data" for k in p["data"] if k.startswith("plot_")]
    assert "plot_histogram" in str(_output(requests))
    assert sum(data["histogram"][0]["y"]) == len(low) < len(scored)
    assert f"{len(low)} samples in view" in data["view_note"]
    assert "this view" in data["summary_md"] and "whole run" in data["summary_md"]
    # the heatmap follows the view: alpha-OT per pair on the view's samples
    heat = data["pair_matrix"][0]
    assert "in view" in str(heat["hovertext"]) and "shared sample" in str(heat["hovertext"])
    # repeated identical view events are not recomputed
    _, data, requests = _panel(scored, "on_change_view", state, view=low)
    assert "histogram" not in data
    state, data, _ = _panel(scored, "on_change_view", state, view=scored.limit(0))
    assert "no samples" in data["view_error"]


def test_an_event_with_an_older_run_in_its_state_does_not_write_the_run_back(fo, scored):
    """The App sends events with an older copy of the panel state; writing the panel's run over it reloaded
    the page, the run dropdown redrawn from the older state reported the older run, and the panel flipped
    between the two runs (seen in Chromium). The panel keeps showing its run and writes no run key."""
    import fiftyone.operators as foo

    foo.execute_operator("@iaa/agreement/compute_kalos",
                         ctx=dict(view=scored.view(), params=dict(fields=["a", "b", "c"], key="kal_old")))
    state, _, _ = _panel(scored, "on_load", panel_id="stale-state")
    state, data, _ = _panel(scored, "on_change_run", state, value="ot", panel_id="stale-state")
    older = {**state, "run_key": "kal_old"}  # the copy the App still had when it sent the event
    low = scored.match(fo_field("ot_ot") < 0.9)
    _, data, requests = _panel(scored, "on_change_view", older, view=low, panel_id="stale-state")
    assert not [p for uri, p in requests if uri == "patch_panel_state" and "run_key" in p["state"]]
    assert "OT" in data["summary_md"] and "KαLOS" not in data["summary_md"]  # still the run the user chose
    # a user's choice is still a choice, also straight back to the run just left
    state, data, _ = _panel(scored, "on_change_run", state, value="kal_old", panel_id="stale-state")
    assert state["run_key"] == "kal_old" and "KαLOS" in data["summary_md"]
    state, data, _ = _panel(scored, "on_change_run", state, value="ot", panel_id="stale-state")
    assert state["run_key"] == "ot" and "KαLOS" not in data["summary_md"]


def fo_field(name):
    from fiftyone import ViewField as F

    return F(name)


def test_histogram_clicks_add_to_the_view_and_replace_each_other(scored):
    state, data, _ = _panel(scored, "on_load")
    state, data, _ = _panel(scored, "on_change_run", state, value="ot_ab")
    assert state["run_key"] == "ot_ab" and state["score_field"] == "ot_ab_ot"
    user = scored.match(fo_field("ot_ab_ot") < 0.99)  # the user's own stage
    state, data, _ = _panel(scored, "on_change_view", state, view=user)
    counts, edges = data["histogram"][0]["y"], data["hist_edges"]
    first, second = [int(i) for i in np.flatnonzero(counts)[:2]]
    state, data, requests = _panel(scored, "on_histogram_click", state, view=user, idx=first)
    view, stages = _built(scored, requests)
    assert len(view) == counts[first] and "Loaded" in data["drill_md"]
    assert all(edges[first] <= v <= edges[first + 1] for v in view.values("ot_ab_ot"))
    assert stages[:len(user._serialize())] == user._serialize()  # the user's stage kept, one added
    # the App now shows the drilled view; the charts still describe the user's view, with the bar marked
    state, data, _ = _panel(scored, "on_change_view", state, view=view)
    assert data["histogram"][0]["y"] == counts
    # the note says what the grid shows (the drilled samples) and what the charts describe (issue 38: after a
    # reload the note said "30 samples in view" while the grid showed the drill-down's few)
    assert data["view_note"].startswith(f"**The grid shows the {counts[first]} sample")
    assert f"the charts describe the {len(user)} samples in view before it" in data["view_note"]
    assert data["histogram"][0]["marker"]["color"][first] != data["histogram"][0]["marker"]["color"][second]
    # another bar replaces the drill-down instead of narrowing it to nothing
    state, data, requests = _panel(scored, "on_histogram_click", state, view=view, idx=second)
    view2, stages2 = _built(scored, requests)
    assert len(view2) == counts[second] and len(stages2) == len(stages)
    # and the drill-down can be undone
    state, data, requests = _panel(scored, "on_clear_drill", state, view=view2)
    assert _set_views(requests) == [user._serialize()]


def test_pair_click_loads_the_pairs_lowest_scores(scored):
    from agreement.fo.runs import delete_agreement_run, get_agreement_run_info, load_agreement_results

    state, _, _ = _panel(scored, "on_load")
    state, _, _ = _panel(scored, "on_change_run", state, value="ot")
    state, data, requests = _panel(scored, "on_pair_click", state, x="c", y="a")
    view, _ = _built(scored, requests)
    scores = load_agreement_results(scored, "ot")["detail"]["pair_sample_scores"]["a|c"]
    expected = [sid for sid, _ in sorted(scores.items(), key=lambda t: (t[1], t[0]))][:50]
    assert view.values("id") == expected
    assert "where a and c agree least" in data["drill_md"] and "their a–c scores" in data["drill_md"]
    # the pair's own score is on every sample it was measured on, for the grid tiles; owned by the run
    assert "`ot_pair_score`" in data["drill_md"]
    assert dict(zip(*scored.values(["id", "ot_pair_score"]))) == {
        sid: scores.get(sid) for sid in scored.values("id")}
    assert "ot_pair_score" in get_agreement_run_info(scored, "ot")["sample_fields"]
    state, data, requests = _panel(scored, "on_pair_click", state, x="a", y="b")  # another pair replaces it
    ab = load_agreement_results(scored, "ot")["detail"]["pair_sample_scores"]["a|b"]
    assert dict(zip(*scored.values(["id", "ot_pair_score"]))) == {sid: ab.get(sid) for sid in scored.values("id")}
    delete_agreement_run(scored, "ot")
    assert "ot_pair_score" not in scored.get_field_schema()


def test_sidebar_filters_dropped_by_the_app_are_put_back(scored, monkeypatch):
    mods = list(_memory_module())
    assert mods
    filters = {"ot_ot": {"isMatching": True, "exclude": False, "range": [0.0, 0.9], "none": True, "nan": True,
                         "inf": True, "ninf": True}}  # as the App sends it
    state, data, _ = _panel(scored, "on_load", filters=filters)
    n_filtered = sum(data["histogram"][0]["y"])
    assert n_filtered < len(scored) and "sidebar filter on `ot_ot`" in data["view_note"]
    # the App drops the filters after the panel opened: the panel puts them back (and keeps its charts)
    state, data, requests = _panel(scored, "on_change_view", state, filters={})
    restored = [p for uri, p in requests if uri == "set_filters"]
    if mods[0]._app_can_set_filters():
        assert restored == [filters]
        assert "histogram" not in data or sum(data["histogram"][0]["y"]) == n_filtered
    else:  # an App without set_filters (FiftyOne 1.0) cannot be asked: nothing is sent
        assert restored == []
    # the window counts from the end of the panel's action, not its start: an action slower than the window
    for mod in mods:
        slow = mod.AgreementPanel._refresh

        def _slow_refresh(self, ctx, force=False, _slow=slow):
            _slow(self, ctx, force)
            time.sleep(1.5)

        monkeypatch.setattr(mod, "RESET_WINDOW", 1.0)
        monkeypatch.setattr(mod, "RESTORE_EXTENSION", 0.0)
        monkeypatch.setattr(mod.AgreementPanel, "_refresh", _slow_refresh)
    state, data, requests = _panel(scored, "on_change_view", state, filters=filters)
    state, data, requests = _panel(scored, "on_toggle_compare", state, filters=filters)
    state, data, requests = _panel(scored, "on_change_view", state, filters={})
    if mods[0]._app_can_set_filters():
        assert [p for uri, p in requests if uri == "set_filters"] == [filters]
    for mod in mods:
        monkeypatch.setattr(mod.AgreementPanel, "_refresh", slow)
    # a filter cleared by the user long after any action of the panel stays cleared
    for mod in mods:
        monkeypatch.setattr(mod, "RESET_WINDOW", -1.0)
        monkeypatch.setattr(mod, "RESTORE_EXTENSION", -1.0)
        for mem in mod._MEMORY.values():
            mem.reset_until = 0.0
    state, data, requests = _panel(scored, "on_change_view", state, filters=filters)
    state, data, requests = _panel(scored, "on_change_view", state, filters={})
    assert not [p for uri, p in requests if uri == "set_filters"]
    assert sum(data["histogram"][0]["y"]) == len(scored)


def test_sort_button_and_unscored_samples(fo, make_dataset):
    import fiftyone.operators as foo

    D = fo.Detections
    det = lambda x: fo.Detection(label="c", bounding_box=[x, 0.1, 0.2, 0.2])  # noqa: E731
    samples = [fo.Sample(filepath=f"/u/{i}.jpg", a=D(detections=[det(0.1)]), b=D(detections=[det(0.1 + 0.02 * i)]))
               for i in range(8)]
    samples += [fo.Sample(filepath=f"/u/x{i}.jpg", a=D(detections=[det(0.1)])) for i in range(3)]  # one rater
    ds = make_dataset(samples)
    foo.execute_operator("@iaa/agreement/compute_ot_agreement",
                         ctx=dict(view=ds.view(), params=dict(fields=["a", "b"], key="u")))
    state, data, _ = _panel(ds, "on_load")
    assert "3 samples in view have no score" in data["undefined_md"] and "| reason |" in data["undefined_md"]
    state, _, requests = _panel(ds, "on_sort_lowest", state)
    values = _built(ds, requests)[0].values("u_ot")
    assert values == sorted(values) and len(values) == 8
    state, _, requests = _panel(ds, "on_show_unscored", state)
    assert len(_built(ds, requests)[0]) == 3


def test_compare_mode_cards_histograms_and_scatter(scored):
    state, _, _ = _panel(scored, "on_load")
    state, data, requests = _panel(scored, "on_toggle_compare", state)
    assert state["compare"] is True
    assert data["compare_table"].startswith("| | run 'ot_ab' | run 'ot' |")
    assert [sum(t["y"]) for t in data["compare_hist"]] == [len(scored)] * 2
    assert [t["name"] for t in data["compare_hist"]] == ["run 'ot_ab'", "run 'ot'"]
    points = data["compare_scatter"][0]
    assert len(points["ids"]) == len(points["x"]) == len(scored)
    assert {"compare_hist", "compare_scatter"} <= set(_plots(_output(requests)))
    sid = points["ids"][3]
    state, _, requests = _panel(scored, "on_scatter_click", state, id=sid)
    assert _built(scored, requests)[0].values("id") == [sid]


def test_modal_explains_each_label_and_loads_the_disagreeing_ones(fo, scored):
    import fiftyone.operators as foo

    sample = scored.skip(15).first()  # every label of the fixture matches: rater a adds one nobody else drew
    sample["a"].detections.append(fo.Detection(label="d", bounding_box=[0.8, 0.8, 0.15, 0.15]))
    sample.save()
    foo.execute_operator("@iaa/agreement/compute_ot_agreement",
                         ctx=dict(view=scored.view(), params=dict(fields=["a", "b", "c"], key="ot", overwrite=True)))
    sid = sample.id
    state, data, requests = _panel(scored, "on_load", current_sample=sid)
    assert state["run_key"] == "ot"  # the run just computed
    md = data["labels_md"]
    one = scored.select(sid)
    stored = {f: list(zip(*one.values([f"{f}.detections.id", f"{f}.detections.label", f"{f}.detections.ot_reason"],
                                      unwind=True))) for f in ("a", "b", "c")}
    disagreeing = {lid for rows in stored.values() for lid, _, reason in rows if reason is not None}
    n = sum(len(rows) for rows in stored.values())
    assert len(disagreeing) == 1 and n == 9  # a's extra label alone; the other eight matched
    assert f"**Labels of the open sample** ({len(disagreeing)} of {n} disagree, run 'ot')" in md
    assert "| rater | label | status |" in md
    for f, rows in stored.items():  # one row per label, with its status: its reason, or matched
        for _, label, reason in rows:
            assert f"| {f} | {label} | {reason or 'matched'} |" in md, (f, label, reason)
    state, _, requests = _panel(scored, "on_show_disagreeing", state, current_sample=sid)
    view = _built(scored, requests)[0]
    assert view.values("id") == [sid]
    shown = {lid for f in ("a", "b", "c") for lid in view.values(f"{f}.detections.id", unwind=True)}
    assert shown == disagreeing  # exactly the sample's labels that were not matched


def test_kalos_bar_clicks(fo, scored):
    import fiftyone.operators as foo

    foo.execute_operator("@iaa/agreement/compute_kalos",
                         ctx=dict(view=scored.view(), params=dict(fields=["a", "b", "c"], key="kal")))
    state, data, _ = _panel(scored, "on_load")
    vit = data["bars_0"][0]
    rater = vit["x"][0]
    state, data, requests = _panel(scored, "on_vitality_click", state, x=rater)
    view = _built(scored, requests)[0]
    units: dict = {}
    for f in ("a", "b", "c"):
        for sid, us in zip(*scored.values(["id", f"{f}.detections.kal_unit"])):
            for u in us or []:
                units[(sid, u)] = units.get((sid, u), 0) + 1
    alone = {lid for sid, ids, us in zip(*scored.values(["id", f"{rater}.detections.id", f"{rater}.detections.kal_unit"]))
             for lid, u in zip(ids or [], us or []) if units[(sid, u)] == 1}
    assert alone  # the bar is the rater with most labels alone in their unit
    shown = set()
    for f in ("a", "b", "c"):
        for sid, ids, us in zip(*view.values(["id", f"{f}.detections.id", f"{f}.detections.kal_unit"])):
            for lid, u in zip(ids or [], us or []):
                assert f == rater and units[(sid, u)] == 1
                shown.add(lid)
    assert shown == alone
    state, data, requests = _panel(scored, "on_class_click", state, x="c")
    # every label is class c and every rater is assigned everywhere: the units some rater missed
    missed = {lid for f in ("a", "b", "c")
              for sid, ids, us in zip(*scored.values(["id", f"{f}.detections.id", f"{f}.detections.kal_unit"]))
              for lid, u in zip(ids or [], us or []) if units[(sid, u)] < 3}
    drilled = _built(scored, requests)[0]
    got = {lid for f in ("a", "b", "c") for lid in drilled.values(f"{f}.detections.id", unwind=True)}
    assert missed and got == missed


def test_new_run_is_shown_and_deleted_run_and_empty_states(fo, scored, make_dataset):
    import fiftyone.operators as foo

    from agreement.fo.runs import delete_agreement_run

    state, _, _ = _panel(scored, "on_load")
    state, _, _ = _panel(scored, "on_change_run", state, value="ot")
    foo.execute_operator("@iaa/agreement/compute_ot_agreement",
                         ctx=dict(view=scored.view(), params=dict(fields=["a", "c"], key="ot_new")))
    state, _, _ = _panel(scored, "on_change_view", state)
    assert state["run_key"] == "ot_new"  # the run just computed
    delete_agreement_run(scored, "ot_new")
    state, _, requests = _panel(scored, "on_change_view", state)
    assert "no longer exists" in state["error"] and state["run_key"] in ("ot", "ot_ab")
    empty = make_dataset([fo.Sample(filepath="/d/x.jpg", a=fo.Detections())])
    state, _, requests = _panel(empty, "on_load", panel_id="other")
    assert state["runs"] == [] and state["has_label_fields"] is True
    output = str(_output(requests))
    assert "No agreement runs yet" in output and "`` ` ``" not in output
    bare = make_dataset([fo.Sample(filepath="/d/y.jpg")])
    state, _, requests = _panel(bare, "on_load", panel_id="third")
    assert state["has_label_fields"] is False
    assert "No label fields" in str(_output(requests))


def test_run_of_an_older_format_is_explained(scored):
    ds = scored
    info = ds.get_run_info("ot_ab")
    info.config.format_version = 0
    ds.update_run_config("ot_ab", info.config)
    state, _, _ = _panel(ds, "on_load")
    state, _, _ = _panel(ds, "on_change_run", state, value="ot_ab")
    assert "result format 0" in state["error"] and state["cards"] == []


def test_load_agreement_view_modes_and_run_listing(fo, scored):
    import fiftyone.operators as foo

    foo.execute_operator("@iaa/agreement/compute_kalos",
                         ctx=dict(view=scored.view(), params=dict(fields=["a", "b", "c"], key="kal")))

    def load(**params):
        r = foo.execute_operator("@iaa/agreement/load_agreement_view",
                                 ctx=dict(view=scored.view(), params=dict(key="kal", **params)))
        assert r.error is None, r.error
        return r.result

    out = load(mode="unmatched", rater="b")  # b's shifted boxes
    assert "b's labels that match nobody" in out["description"]
    view = scored.select(out["sample_ids"])
    assert out["count"] == len(view) >= 1
    out = load(mode="class", label_class="c")
    assert out["count"] >= 1 and "the c units" in out["description"]
    out = load(mode="pair", rater_a="a", rater_b="c", limit=5)  # KaLOS: the samples both labelled, lowest alpha
    alphas = scored.select(out["sample_ids"], ordered=True).values("kal_alpha")
    assert alphas == sorted(alphas) and len(alphas) == 5
    listing = foo.execute_operator("@iaa/agreement/list_agreement_runs", ctx=dict(view=scored.view())).result
    assert listing["keys"] == ["kal", "ot", "ot_ab"] and listing["newest_first"][0] == "kal"
    assert "**kal** — KαLOS" in listing["table"] and "global α (pooled)" in listing["table"]


# ---------------------------------------------------------------------------- consensus runs
@pytest.fixture(scope="module")
def _consensus_once(fo, module_dataset):
    """60 samples, 5 crowd raters, a consensus run ``cons`` with a wide review band (some labels flagged)."""
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.simulate.synthetic.crowd import CrowdNoise, crowd_corpus

    corpus, _ = crowd_corpus(60, 5, raters_per_sample=5, min_objects=1, max_objects=5, seed=11,
                             noise=CrowdNoise(miss=0.1, false_positive=0.1))
    ds = module_dataset(samples_from_corpus(corpus, [f"/c/{i}.jpg" for i in range(60)], layout="fields",
                                          raters_field=None))
    compute_consensus(ds, "cons", fields=list(corpus.raters), review_band=[0.5, 0.999])
    return ds, list(corpus.raters)


@pytest.fixture
def consensus_ds(_consensus_once, clone_dataset):
    """:func:`_consensus_once`, each test's own clone."""
    ds, raters = _consensus_once
    return clone_dataset(ds), raters


def _consensus_labels(samples):
    return [d for v in samples.values("cons_consensus") for d in (v.detections if v else [])]


def test_consensus_cards_report_and_confusion_equal_the_run_results(consensus_ds):
    from agreement.fo.panel.consensus import REPORT_COLUMNS
    from agreement.fo.panel.data import run_panel_data
    from agreement.fo.runs import load_agreement_results

    ds, raters = consensus_ds
    results = load_agreement_results(ds, "cons")
    for samples, whole in ((ds, True), (ds.skip(7).limit(25), False)):
        data = run_panel_data(samples, "cons")
        cons = data["consensus"]
        cards = {c["label"]: c for c in (cons["cards"] if whole else cons["view_cards"])}
        labels = _consensus_labels(samples)
        flagged = [d for d in labels if d["cons_review"]]
        assert cards["consensus labels"]["value"] == len(labels) > 0
        assert cards["flagged for review"]["count"] == len(flagged) > 0
        share = len(flagged) / len(labels)
        assert cards["flagged for review"]["value"] == pytest.approx(share)
        assert cards["flagged for review"]["text"] == f"{_g3(100 * share)}% ({len(flagged)} of {len(labels)} labels)"
        mean = float(np.mean([d.confidence for d in labels]))
        assert cards["mean confidence of the consensus labels"]["text"] == _g3(mean)
        assert "| flagged for review |" in data["summary_md"]
        assert ("this view" in data["summary_md"]) is not whole
    assert cons["cards"][0]["value"] == results["summary"]["n_consensus"]
    tau = {c["label"]: c for c in cons["cards"]}["same-object threshold τ"]
    assert tau["value"] == results["summary"]["tau"] == results["detail"]["tau"]
    assert tau["text"] == f"{_g3(tau['value'])} (chosen from the data in [0.3, 0.5])"
    report = results["detail"]["rater_report"]
    assert [r["rater"] for r in cons["report_rows"]] == list(report) == raters
    for row in cons["report_rows"]:
        for k, _ in REPORT_COLUMNS:
            assert row[k] == report[row["rater"]][k]
    table = cons["report_md"].split("\n\n")[0].splitlines()
    assert table[0] == "| rater | sensitivity | FP / sample | precision | loc. error | agrees | labels | samples |"
    assert len(table) == len(raters) + 2 and "false positives per assigned sample" in cons["report_md"]
    # the confusion matrix of each rater: the run's, rows consensus class, columns the rater's class
    for rater in raters:
        cm = run_panel_data(ds, "cons", rater=rater)["consensus"]["confusion"]
        conf = report[rater]["confusion"]
        for i, y in enumerate(cm["classes"]):
            for j, c in enumerate(cm["classes"]):
                assert cm["z"][i][j] == (conf[y].get(c, 0.0) if y in conf else None)
        assert set(cm["classes"]) == set(conf) | {c for row in conf.values() for c in row}


def test_consensus_confusion_figure_is_titled_with_named_hover(consensus_ds):
    from agreement.fo.panel.data import run_panel_data

    ds, raters = consensus_ds
    fig = run_panel_data(ds, "cons", rater=raters[1])["figures"]["confusion"]
    layout, trace = fig["layout"], fig["traces"][0]
    assert f"Class confusion of rater {raters[1]}" in layout["title"]["text"]
    assert layout["xaxis"]["title"]["text"] == "rater's class" and layout["yaxis"]["title"]["text"] == "consensus class"
    assert trace["type"] == "heatmap" and trace["x"] == trace["y"]
    assert f"{raters[1]} says" in trace["hovertext"][0][1] and f"consensus {trace['y'][0]}" in trace["hovertext"][0][1]
    cells = [(t, v) for trow, zrow in zip(trace["text"], trace["z"]) for t, v in zip(trow, zrow) if v]
    assert cells and all(t == _g3(v) for t, v in cells)  # three significant figures


def test_consensus_panel_shows_report_heatmap_and_opens_the_review_queue(consensus_ds):
    import fiftyone.operators as foo

    ds, raters = consensus_ds
    state, data, requests = _panel(ds, "on_load")
    assert state["run_key"] == "cons" and state["method"] == "iaa.consensus"
    assert "**Rater report**" in data["rater_table_md"] and "finalize_consensus" in data["review_md"]
    assert "accepted" in data["review_md"] and "rejected" in data["review_md"]
    plots = _plots(_output(requests))
    assert {"confusion", "histogram"} <= set(plots)
    assert raters[0] in plots["confusion"]["layout"]["title"]["text"]
    output = str(_output(requests))
    n_flagged = sum(bool(d["cons_review"]) for d in _consensus_labels(ds))
    assert f"Review queue: the {n_flagged} flagged consensus labels" in output
    # another rater in the selector: its confusion matrix
    state, data, requests = _panel(ds, "on_change_consensus_rater", state, value=raters[3])
    assert raters[3] in _plots(_output(requests))["confusion"]["layout"]["title"]["text"]
    # the review queue: the view of load_agreement_view(mode="review"), least confident first
    state, data, requests = _panel(ds, "on_review_queue", state)
    view, _ = _built(ds, requests)
    expected = foo.execute_operator("@iaa/agreement/load_agreement_view",
                                    ctx=dict(view=ds.view(), params=dict(key="cons", mode="review"))).result
    assert view.values("id") == expected["label_ids"] and len(view) == n_flagged > 0
    assert view.values("id") == _review(ds).values("id") and view._is_patches
    conf = view.values("cons_consensus.confidence")
    assert conf == sorted(conf)
    assert f"{n_flagged} flagged labels" in data["drill_md"]
    # the App shows the queue: the charts still describe the samples, and a patch opened in it does not fail
    state, data, _ = _panel(ds, "on_change_view", state, view=view)
    assert sum(data["histogram"][0]["y"]) == len(ds.exists("cons_min_confidence"))
    _panel(ds, "on_change_current_sample", state, view=view, current_sample=view.first().id)


def _can_set_filters() -> bool:
    mods = list(_memory_module())
    assert mods
    return mods[0]._app_can_set_filters()


def _review(samples):
    from agreement.fo.methods.consensus import review_view

    return review_view(samples, "cons")


def test_review_queue_keeps_the_sidebar_filter_as_stages_and_puts_it_back(consensus_ds):
    ds, _ = consensus_ds
    values = sorted(v for v in ds.values("cons_min_confidence") if v is not None)
    cut = values[len(values) // 2]
    filters = {"cons_min_confidence": {"isMatching": True, "exclude": False, "range": [0.0, cut], "none": False,
                                       "nan": False, "inf": False, "ninf": False}}
    state, data, _ = _panel(ds, "on_load", filters=filters)
    filtered = ds.match(fo_field("cons_min_confidence") <= cut)
    assert 0 < len(filtered) < len(ds) and len(_review(filtered))
    state, data, requests = _panel(ds, "on_review_queue", state, filters=filters)
    view, stages = _built(ds, requests)
    assert view.values("id") == _review(filtered).values("id")
    can = _can_set_filters()
    # Apps with set_filters: the sidebar is cleared (the filter is in the stages); others cannot be asked
    assert [p for uri, p in requests if uri == "set_filters"] == ([{}] if can else [])
    # undo: the user's view and filter come back
    state, data, requests = _panel(ds, "on_change_view", state, view=view, filters={})
    assert not [p for uri, p in requests if uri == "set_filters"]  # nothing put back on the patches view
    state, data, requests = _panel(ds, "on_clear_drill", state, view=view, filters={})
    assert _set_views(requests) == [[]]
    restored = [p for uri, p in requests if uri == "set_filters"]
    assert restored == ([filters] if can else [])


def test_modal_of_a_consensus_run_explains_each_rater_label(consensus_ds):
    ds, raters = consensus_ds
    sid = ds.first().id
    state, data, _ = _panel(ds, "on_load", current_sample=sid)
    md = data["labels_md"]
    assert "| rater | label | status |" in md and "consensus:" in md
    one = ds.select(sid)
    rows = [(f, *t) for f in raters for t in zip(*one.values(
        [f"{f}.detections.label", f"{f}.detections.cons_consensus_id", f"{f}.detections.cons_agrees"], unwind=True))]
    assert rows
    for f, label, cid, agrees in rows:
        status = ("in no consensus label" if cid is None else "agrees with its consensus label" if agrees
                  else "its consensus label has another class")
        assert f"| {f} | {label} | {status} |" in md, (f, label, status)
    n_dis = sum(not agrees for *_, agrees in rows)
    assert f"({n_dis} of {len(rows)} disagree, run 'cons')" in md


def _tags_of(ds, ids):
    return {d.id: sorted(d.tags) for d in _consensus_labels(ds) if d.id in set(ids)}


def test_modal_review_on_a_queue_item_accept_next_reject_undo_and_finalize(consensus_ds):
    """Issue 48: an item opened from the review queue is reviewed in the modal panel: its consensus label, the
    raters' labels it was fused from, Accept / Reject / Undo / Next acting on exactly that label, the progress
    updated at once, and Finalize offered when the queue is done. No event fails (a failed event closes the
    App's sample view)."""
    ds, raters = consensus_ds
    queue = _review(ds)
    items, label_ids = queue.values("id"), queue.values("cons_consensus.id")
    n = len(items)
    assert n >= 3
    before = {f: ds.count_label_tags(f) for f in raters}
    state, data, requests = _panel(ds, "on_load", view=queue, current_sample=items[0], panel_id="modal")
    md = data["review_state_md"]
    assert f"0 of {n} flagged labels decided" in md and f"**Item 1 of {n}**" in md
    first = queue.first().cons_consensus
    assert f"| **{first.label}** |" in md and "none yet" in md
    members = set(first["cons_members"])
    assert f" of {len(members)} agree)" in md
    shown = [line for line in md.splitlines() if line.startswith("| ") and " | " in line[2:]]
    assert sum(line.split(" | ")[0][2:] in raters for line in shown) == len(members)  # one row per member label
    output = str(_output(requests))
    assert "review_accept" in output and "review_reject" in output and "review_next" in output
    # Accept: the label is tagged and the next undecided item opens
    state, data, requests = _panel(ds, "on_review_accept", state, view=queue, current_sample=items[0],
                                   panel_id="modal")
    assert any(uri == "open_sample" and p.get("id") == items[1] for uri, p in requests), requests
    assert _tags_of(ds, [label_ids[0]]) == {label_ids[0]: ["accepted"]}
    # the next item: Reject, then Undo on it
    state, data, _ = _panel(ds, "on_change_current_sample", state, view=queue, current_sample=items[1],
                            panel_id="modal")
    assert f"1 of {n} flagged labels decided" in data["review_state_md"]
    state, data, _ = _panel(ds, "on_review_reject", state, view=queue, current_sample=items[1], panel_id="modal")
    assert _tags_of(ds, [label_ids[1]]) == {label_ids[1]: ["rejected"]}
    state, data, requests = _panel(ds, "on_review_undo", state, view=queue, current_sample=items[1],
                                   panel_id="modal")
    assert _tags_of(ds, [label_ids[1]]) == {label_ids[1]: []}
    assert f"1 of {n} flagged labels decided" in data["review_state_md"]  # at once, in the same event
    # Next skips decided items: from the last item it wraps to the first undecided one (the second)
    state, data, requests = _panel(ds, "on_review_next", state, view=queue, current_sample=items[-1],
                                   panel_id="modal")
    assert any(uri == "open_sample" and p.get("id") == items[1] for uri, p in requests)
    # decide every other item: the queue is done, Finalize writes cons_final without the rejected label
    from agreement.fo.views.review import review_labels

    review_labels(ds, "cons", label_ids[2:], "accepted")
    state, data, requests = _panel(ds, "on_review_reject", state, view=queue, current_sample=items[1],
                                   panel_id="modal")
    state, data, requests = _panel(ds, "on_change_current_sample", state, view=queue, current_sample=items[1],
                                   panel_id="modal")
    assert "The queue is done" in data["review_state_md"] and "review_finalize" in str(_output(requests))
    _panel(ds, "on_review_finalize", state, view=queue, current_sample=items[1], panel_id="modal")
    final = [d for v in ds.values("cons_final") for d in (v.detections if v else [])]
    assert len(final) == len(_consensus_labels(ds)) - 1  # the one rejected label left out
    assert not any(d["cons_review"] for d in final)  # every flagged label decided: none still flagged
    assert {f: ds.count_label_tags(f) for f in raters} == before  # no rater label was tagged


def test_panel_events_tolerate_views_without_the_runs_fields(fo, consensus_ds):
    """Issue 48: the panel's events on a queue, patches of a rater field, a select_fields or exclude_fields
    view describe the samples behind the view and never fail."""
    ds, raters = consensus_ds
    n_scored = len(ds.exists("cons_min_confidence"))
    views = {"queue": _review(ds), "patches": ds.to_patches(raters[0]), "select": ds.select_fields(raters[0]),
             "exclude": ds.exclude_fields(["cons_min_confidence", "cons_n_review"])}
    for name, view in views.items():
        state, data, _ = _panel(ds, "on_load", view=view, panel_id=name)
        assert "could not update" not in str(data.get("view_error")), (name, data.get("view_error"))
        expected = len(ds.select(view.distinct("sample_id")).exists("cons_min_confidence")) if view._is_generated \
            else n_scored
        assert sum(data["histogram"][0]["y"]) == expected, name
        first = view.first().id
        _panel(ds, "on_change_current_sample", state, view=view, current_sample=first, panel_id=name)
        state, data, requests = _panel(ds, "on_sort_lowest", state, view=view, panel_id=name)
        assert [uri for uri, _ in requests if uri in ("set_view", "set_view_")] or requests


def test_load_agreement_view_saves_the_review_queue(fo, consensus_ds):
    """Issue 48 item 10: save_as in review mode saves the queue (it was accepted and ignored)."""
    import fiftyone.operators as foo

    ds, _ = consensus_ds
    out = foo.execute_operator("@iaa/agreement/load_agreement_view", ctx=dict(
        view=ds.view(), params=dict(key="cons", mode="review", save_as="my-queue"))).result
    assert out["saved_view"] == "my-queue" and "my-queue" in ds.list_saved_views()
    saved = ds.load_saved_view("my-queue")
    assert saved.values("id") == out["label_ids"] and saved._is_patches


def test_a_decision_made_with_the_operator_updates_the_open_panels_count_at_once(consensus_ds):
    """Issue 48 item 5: the panel's "0 of 14 decided" stayed stale after review_consensus_labels."""
    import fiftyone.operators as foo

    ds, _ = consensus_ds
    queue = _review(ds)
    n = len(queue)
    _, data, _ = _panel(ds, "on_load", view=queue, panel_id="grid-panel")
    assert f"0 of {n} flagged labels decided" in data["review_state_md"]
    r = foo.execute_operator("@iaa/agreement/review_consensus_labels",
                             ctx=dict(view=queue, selected=[queue.first().id], params=dict(key="cons",
                                                                                         decision="accept")))
    assert r.error is None, r.error
    patches = [q["params"] for q in r.executor.to_json()["requests"] if q["operator_uri"] == "patch_panel_data"]
    mine = [p for p in patches if p.get("panel_id") == "grid-panel"]
    assert mine and f"1 of {n} flagged labels decided (1 accepted" in mine[-1]["data"]["review_state_md"], patches
