"""The Annotator Agreement panel on a semantic mask agreement run, driven through execute_operator as the App
drives it.

A ``compute_mask_agreement`` run on ``Segmentation`` fields with ``mask_targets``: the per-class bars of pixel α
and Dice (class names from ``mask_targets``, lowest α first, the reason where α is undefined), the rater pair ×
class heatmap of mean Dice ("no data" where a pair never met on a class), the per-sample Dice histogram; a class
bar and a heatmap cell drill down to exactly the samples where that class's (that pair's) Dice is lowest, lowest
first, within the sidebar-filtered view. Every expected Dice is computed here from the masks themselves.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from test_panel import _built, _clear_memory, _g3, _output, _panel, _plots, _set_views  # noqa: F401

RATERS = ["r1", "r2", "r3"]
TARGETS = {0: "background", 1: "road", 2: "car", 3: "tree"}  # nobody draws a tree
N = 12
SHAPE = (16, 20)


def _truth(i: int) -> np.ndarray:
    """Sample ``i``'s true mask: a road band of varying width; a car on samples 6-11 only."""
    m = np.zeros(SHAPE, np.uint8)
    m[8:, : 8 + i % 5] = 1
    if i >= 6:
        m[2:6, 10:16] = 2
    return m


def _rater_masks() -> list[dict[str, np.ndarray | None]]:
    """Per sample each rater's mask: r1 the truth; r2 the truth shifted right by ``i % 4`` pixels (a different
    Dice per sample); r3 the truth with the road's last ``1 + i % 3`` columns cut, on samples 0-5 only (so r3
    never meets anyone on car)."""
    out = []
    for i in range(N):
        t = _truth(i)
        r2 = np.roll(t, i % 4, axis=1)
        r3 = None
        if i < 6:
            r3 = t.copy()
            cols = np.nonzero((t == 1).any(axis=0))[0]
            r3[:, cols[-(1 + i % 3):]] = np.where(r3[:, cols[-(1 + i % 3):]] == 1, 0, r3[:, cols[-(1 + i % 3):]])
        out.append({"r1": t, "r2": r2, "r3": r3})
    return out


def _dice(a: np.ndarray, b: np.ndarray, c: int) -> float | None:
    """Dice of class ``c`` between two masks; ``None`` where neither draws it."""
    x, y = a == c, b == c
    total = int(x.sum() + y.sum())
    return None if total == 0 else 2.0 * int((x & y).sum()) / total


def _expected_dice(masks: list, ids: list[str], c: int, pair: tuple[str, str] | None = None,
                   keep: set | None = None) -> list[tuple[str, float]]:
    """``(sample id, Dice)`` lowest first: each sample's lowest pair Dice on class ``c`` (or ``pair``'s)."""
    out = []
    for sid, per in zip(ids, masks):
        if keep is not None and sid not in keep:
            continue
        pairs = [pair] if pair else [(a, b) for k, a in enumerate(RATERS) for b in RATERS[k + 1:]]
        vals = [_dice(per[a], per[b], c) for a, b in pairs if per[a] is not None and per[b] is not None]
        vals = [v for v in vals if v is not None]
        if vals:
            out.append((sid, min(vals)))
    return sorted(out, key=lambda t: (t[1], t[0]))


@pytest.fixture
def mask_ds(fo, make_dataset):
    import fiftyone.operators as foo

    masks = _rater_masks()
    samples = []
    for i, per in enumerate(masks):
        s = fo.Sample(filepath=f"/masks/{i:02d}.png")
        for r, m in per.items():
            s[r] = fo.Segmentation(mask=m) if m is not None else None
        samples.append(s)
    ds = make_dataset(samples)
    ds.default_mask_targets = TARGETS
    ds.save()
    r = foo.execute_operator("@iaa/agreement/compute_mask_agreement",
                             ctx=dict(view=ds.view(), params=dict(fields=RATERS, key="seg", n_pixels=0)))
    assert r.error is None, r.error
    ids = ds.values("id")  # the samples in insertion order, as masks
    return ds, masks, ids


def _title(plot: dict) -> str:
    """A plot's title and subtitle as one line of text (the panel wraps them into lines)."""
    return " ".join(re.sub("<[^>]+>", " ", plot["layout"]["title"]["text"]).split())


def _detail(ds, key: str = "seg") -> dict:
    from agreement.fo.runs import load_agreement_results

    return load_agreement_results(ds, key)["detail"]


# ---------------------------------------------------------------------------- the figures alone (no dataset)
def _hand_detail() -> dict:
    return {
        "classes": [0, 1, 2, 5],
        "class_alpha": {"classes": [0, 1, 2, 5], "alpha": [0.9, 0.4, None, None],
                        "reason": ["", "", "one class everywhere", "no rater drew it"]},
        "class_overlap": {"classes": [0, 1, 2, 5], "dice": [0.95, 0.6, 0.8, None], "iou": [0.9, 0.4, 0.7, None],
                          "boundary_f1": [0.9, 0.5, 0.7, None]},
        "pair_class_dice": {"sample": ["s1", "s1", "s2", "s2", "s3"],
                            "pair": ["a | b", "a | c", "a | b", "a | b", "a | b"],
                            "class_value": [1, 1, 1, 2, 1], "dice": [0.2, 0.5, 0.4, 0.8, 0.9]},
    }


def test_mask_figures_from_a_hand_built_detail():
    from agreement.reporting.figures.masks import (
        class_value,
        mask_class_bars,
        mask_class_names,
        pair_class_heatmap,
        pair_label,
    )

    info = {"input": {"mask_targets": {"0": "background", "1": "road", "2": "car", "5": "road"}}}
    names = mask_class_names(info)
    assert names == {0: "background", 1: "road (1)", 2: "car", 5: "road (5)"}  # a name given twice: its value
    assert class_value(names, "car") == 2 and class_value(names, "1") == 1 and class_value(names, 7) is None
    assert pair_label(["a | b", "a | c"], ("c", "a")) == "a | c" and pair_label(["a | b"], "b | c") is None
    bars = mask_class_bars(_hand_detail(), info, selected="car")
    alpha, dice = bars["traces"]
    # lowest α first; car (α undefined, Dice defined) after them; road (5) (in no mask) only named
    assert alpha["x"] == ["road (1)", "background", "car"] and alpha["y"] == [0.4, 0.9, None]
    assert dice["y"] == [0.6, 0.95, 0.8] and bars["click"] == "mask_class"
    notes = bars["layout"]["annotations"]
    assert [(a["x"], a["text"]) for a in notes] == [("car", "α undefined")]
    assert "one class everywhere" in notes[0]["hovertext"] and "one class everywhere" in alpha["hovertext"][2]
    assert "in no mask: road (5)" in _title(bars)
    assert bars["layout"]["shapes"][0]["x0"] == pytest.approx(1.55)  # the drilled class (the third) outlined
    assert mask_class_bars(_hand_detail(), info, top=1)["traces"][0]["x"] == ["road (1)"]
    # the heatmap: mean over samples per (pair, class); "no data" where a pair never met on a class
    heat = pair_class_heatmap(_hand_detail(), info, selected=("a | b", "car"))
    tr = heat["traces"][0]
    assert tr["y"] == ["a | b", "a | c"] and tr["x"] == ["road (1)", "car"]  # the classes some pair met on
    assert tr["z"][0][0] == pytest.approx((0.2 + 0.4 + 0.9) / 3) and tr["z"][0][1] == pytest.approx(0.8)
    assert tr["z"][1][0] == 0.5 and tr["z"][1][1] is None and tr["text"][1][1] == ""
    assert "no data" in tr["hovertext"][1][1] and heat["click"] == "mask_cell"
    assert heat["layout"]["shapes"][0]["x0"] == 0.5 and heat["layout"]["shapes"][0]["y0"] == -0.5
    restricted = pair_class_heatmap(_hand_detail(), info, ids={"s1"}, scope="1 sample in view")["traces"][0]
    assert restricted["x"] == tr["x"] and restricted["z"][0][0] == 0.2 and restricted["z"][0][1] is None


# ---------------------------------------------------------------------------- a real run in the panel
@pytest.mark.fiftyone
def test_mask_run_shows_class_alpha_dice_histogram_and_pair_class_heatmap(mask_ds):
    ds, masks, ids = mask_ds
    detail = _detail(ds)
    state, data, requests = _panel(ds, "on_load")
    assert state["run_key"] == "seg" and state["method"] == "iaa.mask_agreement"
    assert state["score_field"] == "seg_dice" and sum(data["histogram"][0]["y"]) == ds.count("seg_dice") == N
    plots = _plots(_output(requests))
    assert {"histogram", "mask_classes", "mask_pairs"} <= set(plots)
    # per class: α and pooled Dice of the run, by the names of mask_targets, lowest α first
    alpha, dice = plots["mask_classes"]["data"]
    by_value = dict(zip(detail["class_alpha"]["classes"], detail["class_alpha"]["alpha"]))
    pooled = dict(zip(detail["class_overlap"]["classes"], detail["class_overlap"]["dice"]))
    shown = sorted((v for v in by_value if by_value[v] is not None), key=lambda v: by_value[v])
    assert by_value[3] is None and pooled[3] is None  # nobody draws a tree
    assert alpha["x"] == [TARGETS[v] for v in shown] and alpha["y"] == pytest.approx([by_value[v] for v in shown])
    assert dice["y"] == pytest.approx([pooled[v] for v in shown])
    title = _title(plots["mask_classes"])
    assert "Agreement per class" in title and "in no mask: tree" in title
    # the heatmap: rows are rater pairs, columns classes; each cell the mean of the Dice computed from the masks
    heat = plots["mask_pairs"]["data"][0]
    assert heat["x"] == ["background", "road", "car"] and heat["y"] == ["r1 | r2", "r1 | r3", "r2 | r3"]
    for i, pair in enumerate(heat["y"]):  # nobody draws a tree: no column
        a, b = pair.split(" | ")
        for j, c in enumerate([0, 1, 2]):
            vals = [v for per in masks if per[a] is not None and per[b] is not None
                    for v in [_dice(per[a], per[b], c)] if v is not None]
            if vals:
                assert heat["z"][i][j] == pytest.approx(np.mean(vals), abs=1e-12), (pair, c)
            else:  # r3 never meets anyone on car
                assert heat["z"][i][j] is None and "no data" in heat["hovertext"][i][j], (pair, c)
    assert heat["z"][1][2] is None and heat["z"][0][2] is not None
    assert data["mask_pairs"] == plots["mask_pairs"]["data"]  # the traces, for SDK users


@pytest.mark.fiftyone
def test_class_bar_and_heatmap_cell_drill_to_the_lowest_dice_samples(mask_ds):
    ds, masks, ids = mask_ds
    state, data, _ = _panel(ds, "on_load")
    # a class bar: every sample where two raters met on road, by its lowest pair Dice on road, lowest first
    state, data, requests = _panel(ds, "on_mask_class_click", state, x="road")
    view, _ = _built(ds, requests)
    expected = _expected_dice(masks, ids, 1)
    assert len(expected) == N and len({round(d, 9) for _, d in expected}) > 3
    assert view.values("id") == [sid for sid, _ in expected]
    assert "the raters' lowest pair Dice on road lowest, lowest first" in data["drill_md"]
    assert f"from {_g3(expected[0][1])} to {_g3(expected[-1][1])}" in data["drill_md"]
    # the drilled bar is outlined once the App shows the drill-down
    state, data, requests = _panel(ds, "on_change_view", state, view=view)
    bars = _plots(_output(requests))["mask_classes"]
    (shape,) = bars["layout"]["shapes"]
    assert bars["data"][0]["x"][round(shape["x0"] + 0.45)] == "road"
    # a heatmap cell: that pair's Dice on that class replaces the drill-down
    state, data, requests = _panel(ds, "on_mask_cell_click", state, view=view, x="car", y="r1 | r2")
    cell, _ = _built(ds, requests)
    expected = _expected_dice(masks, ids, 2, ("r1", "r2"))
    assert [sid for sid, _ in expected] == cell.values("id") and len(expected) == 6
    assert [d for _, d in expected] == sorted(d for _, d in expected)
    assert "r1 and r2's Dice on car" in data["drill_md"]
    state, data, requests = _panel(ds, "on_change_view", state, view=cell)
    assert _plots(_output(requests))["mask_pairs"]["layout"]["shapes"][0]["x0"] == 1.5  # car, outlined
    # a cell without data: a note, no view (the grid is not emptied)
    state, data, requests = _panel(ds, "on_mask_cell_click", state, view=cell, x="car", y="r1 | r3")
    uris = [u for u, _ in requests]
    assert "set_view" not in uris and "notify" in uris


@pytest.mark.fiftyone
def test_mask_run_follows_the_sidebar_filter_and_drills_within_it(mask_ds):
    from fiftyone import ViewField as F

    ds, masks, ids = mask_ds
    cut = float(np.median(ds.values("seg_dice")))
    filters = {"seg_dice": {"isMatching": True, "exclude": False, "range": [0.0, cut], "none": False,
                            "nan": False, "inf": False, "ninf": False}}
    low = ds.match(F("seg_dice") <= cut)
    keep = set(low.values("id"))
    assert 0 < len(keep) < N
    state, data, requests = _panel(ds, "on_load", filters=filters)
    assert sum(data["histogram"][0]["y"]) == len(keep)
    assert f"this view ({len(keep)} samples)" in data["summary_md"]
    heat = _plots(_output(requests))["mask_pairs"]
    assert f"the {len(keep)} samples in view" in _title(heat)
    row = heat["data"][0]["y"].index("r1 | r2")
    road = [_dice(per["r1"], per["r2"], 1) for sid, per in zip(ids, masks) if sid in keep]
    assert heat["data"][0]["z"][row][1] == pytest.approx(np.mean(road), abs=1e-12)
    # both drill-downs stay within the filtered samples, lowest first
    state, data, requests = _panel(ds, "on_mask_class_click", state, filters=filters, x="road")
    view, stages = _built(ds, requests)
    expected = _expected_dice(masks, ids, 1, keep=keep)
    assert view.values("id") == [sid for sid, _ in expected] and len(expected) == len(keep)
    state, data, requests = _panel(ds, "on_mask_cell_click", state, filters=filters, x="road", y="r2 | r3")
    view, _ = _built(ds, requests)
    expected = _expected_dice(masks, ids, 1, ("r2", "r3"), keep=keep)
    assert view.values("id") == [sid for sid, _ in expected] and set(view.values("id")) <= keep


@pytest.mark.fiftyone
def test_mask_views_from_the_sdk(mask_ds):
    from agreement.fo.views import ViewError, class_disagreement_view, mask_class_view, mask_dice_scores

    ds, masks, ids = mask_ds
    expected = _expected_dice(masks, ids, 1, ("r1", "r3"))
    got = mask_dice_scores(ds, "seg", 1, ("r3", "r1"))
    assert [s for s, _ in got] == [s for s, _ in expected] and len(got) == 6  # r3 rated samples 0-5
    assert [d for _, d in got] == pytest.approx([d for _, d in expected], abs=1e-12)
    assert mask_class_view(ds, "seg", "road", "r1 | r3", limit=2).values("id") == [sid for sid, _ in expected[:2]]
    assert class_disagreement_view(ds, "seg", "car").values("id") == [s for s, _ in _expected_dice(masks, ids, 2)]
    with pytest.raises(ViewError, match="no class 'bus'"):
        mask_dice_scores(ds, "seg", "bus")
    assert mask_dice_scores(ds, "seg", "tree") == []


@pytest.mark.fiftyone
def test_open_sample_of_a_mask_run_hides_the_dashboard(mask_ds):
    ds, masks, ids = mask_ds
    _, data, requests = _panel(ds, "on_load", current_sample=ids[0])
    plots = _plots(_output(requests))
    assert "mask_classes" not in plots and "mask_pairs" not in plots  # the modal explains the open sample
    assert data["labels_md"].startswith("**Labels of the open sample**")
    assert "No labels of run" not in data["labels_md"]  # each rater's mask with its Dice against the others


@pytest.mark.fiftyone
def test_open_sample_lists_each_raters_mask_with_its_dice_against_the_others(mask_ds):
    from agreement.fo.panel.label_explanations import label_explanations
    from agreement.fo.runs import get_agreement_run_info
    from agreement.reporting.figures.base import sig3

    ds, masks, ids = mask_ds
    info = get_agreement_run_info(ds, "seg")
    i = 3  # r2 shifted by 3 pixels, r3 with the road cut: every pair differs
    rows = {row["rater"]: row for row in label_explanations(ds, info, ids[i])}
    per = masks[i]

    def pair_dice(a, b):  # the mean over the classes in either mask, as the run's {key}_dice
        vals = [_dice(per[a], per[b], c) for c in np.union1d(np.unique(per[a]), np.unique(per[b]))]
        return float(np.mean([v for v in vals if v is not None]))

    assert set(rows) == set(RATERS) and rows["r1"]["label"] == "background, road"
    for r in RATERS:
        others = [q for q in RATERS if q != r]
        want = np.mean([pair_dice(r, q) for q in others])
        assert rows[r]["value"] == f"mean Dice {sig3(want)}"
        assert rows[r]["counterpart"] == ", ".join(f"{q}: Dice {sig3(pair_dice(r, q))}" for q in others)
    means = {r: np.mean([pair_dice(r, q) for q in RATERS if q != r]) for r in RATERS}
    assert [r for r in RATERS if rows[r]["disagrees"]] == [min(means, key=means.get)]
    lone = label_explanations(ds, info, ids[8])  # r3 drew nothing there: two masks
    assert {row["rater"] for row in lone} == {"r1", "r2"}
