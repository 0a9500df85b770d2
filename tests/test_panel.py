"""The Annotator Agreement panel driven through execute_operator: state, plot data, views."""

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone

PANEL = "@iaa/agreement/annotator_agreement"


def _panel(ds, method, state=None, view=None, **event):
    """Runs one panel event; returns (state, data, requests) after it."""
    import fiftyone.operators as foo

    params = {"__method__": method, "panel_id": "test-panel", "panel_state": dict(state or {}), **event}
    r = foo.execute_operator(PANEL, ctx=dict(view=view if view is not None else ds.view(), params=params))
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


@pytest.fixture
def scored(fo, make_dataset):
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
    ds = make_dataset(samples)
    import fiftyone.operators as foo

    for key, fields in (("ot", ["a", "b", "c"]), ("ot_ab", ["a", "b"])):
        foo.execute_operator("@iaa/agreement/compute_ot_agreement",
                             ctx=dict(view=ds.view(), params=dict(fields=fields, key=key)))
    return ds


def _view_of(ds, requests):
    from fiftyone.core.view import DatasetView

    views = [p["view"] for uri, p in requests if uri == "set_view"]
    assert len(views) == 1
    return DatasetView._build(ds, views[0])


def test_on_load_shows_cards_histogram_and_matrix(scored):
    state, data, requests = _panel(scored, "on_load")
    assert state["runs"] == ["ot", "ot_ab"] and state["run_key"] == "ot_ab"  # the newest run first
    state, data, requests = _panel(scored, "on_change_run", state, value="ot")
    labels = [c["label"] for c in state["cards"]]
    assert labels[0] == "αOT" and "mean OT score" in labels
    assert state["cards"][0]["text"].startswith(f"{state['cards'][0]['value']:.3f}")
    hist = data["histogram"][0]
    assert hist["type"] == "bar" and sum(hist["y"]) == len(scored)
    heat = data["pair_matrix"][0]
    assert heat["x"] == ["a", "b", "c"] and heat["z"][0][0] is None
    assert any(uri == "show_panel_output" for uri, _ in requests)


def test_run_change_and_histogram_click_load_matching_samples(scored):
    state, data, _ = _panel(scored, "on_load")
    state, data, _ = _panel(scored, "on_change_run", state, value="ot_ab")
    assert state["run_key"] == "ot_ab" and state["score_field"] == "ot_ab_ot"
    counts = data["histogram"][0]["y"]
    idx = int(np.flatnonzero(counts)[0])
    state, _, requests = _panel(scored, "on_histogram_click", state, idx=idx)
    view = _view_of(scored, requests)
    assert len(view) == counts[idx] == state["loaded_view"]["count"]
    lo, hi = state["hist_edges"][idx], state["hist_edges"][idx + 1]
    assert all(lo <= v <= hi for v in view.values("ot_ab_ot"))


def test_sort_button_loads_lowest_first(scored):
    state, _, _ = _panel(scored, "on_load")
    state, _, requests = _panel(scored, "on_sort_lowest", state)
    field = state["score_field"]
    values = _view_of(scored, requests).values(field)
    assert values == sorted(values) and len(values) == len(scored)


def test_view_change_recomputes_the_histogram(scored):
    state, _, _ = _panel(scored, "on_load")
    state, data, _ = _panel(scored, "on_change_view", state, view=scored.limit(7))
    assert sum(data["histogram"][0]["y"]) == 7
    state, data, _ = _panel(scored, "on_change_view", state, view=scored.limit(0))
    assert "no samples" in state["error"]


def test_deleted_run_and_empty_states(fo, scored, make_dataset):
    from agreement.fo.runs import delete_agreement_run

    state, _, _ = _panel(scored, "on_load")
    state, _, _ = _panel(scored, "on_change_run", state, value="ot_ab")
    delete_agreement_run(scored, "ot_ab")
    state, _, requests = _panel(scored, "on_change_view", state)
    assert "no longer exists" in state["error"] and state["run_key"] == "ot"  # the newest remaining run
    empty = make_dataset([fo.Sample(filepath="/d/x.jpg", a=fo.Detections())])
    state, _, requests = _panel(empty, "on_load")
    assert state["runs"] == [] and state["has_label_fields"] is True
    output = [p for uri, p in requests if uri == "show_panel_output"][0]["output"]
    assert "No agreement runs yet" in str(output)
    bare = make_dataset([fo.Sample(filepath="/d/y.jpg")])
    state, _, requests = _panel(bare, "on_load")
    assert state["has_label_fields"] is False
    assert "No label fields" in str([p for uri, p in requests if uri == "show_panel_output"][0]["output"])


def test_run_of_an_older_format_is_explained(scored):
    ds = scored
    info = ds.get_run_info("ot_ab")
    info.config.format_version = 0
    ds.update_run_config("ot_ab", info.config)
    state, _, _ = _panel(ds, "on_load")
    state, _, _ = _panel(ds, "on_change_run", state, value="ot_ab")
    assert "result format 0" in state["error"] and state["cards"] == []
