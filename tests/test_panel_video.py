"""The Annotator Agreement panel on runs computed per frame of videos (frame runs), driven through
execute_operator as the App drives it.

Five simulated videos of 30 frames, three raters whose tracks drift, switch, miss stretches and invent short
tracks (``simulate_video_dataset``), with a KαLOS and an OT frame run on ``frames.r1`` .. ``frames.r3``. Checked
against what the run wrote per frame and what the simulation drew (never against the panel's own numbers):

* the per-video histogram counts ``{key}_frames_mean``; a bar loads its videos, the sort button the videos
  worst first, a heatmap cell the videos where that pair agrees least (OT: the mean of the pair's frame
  scores, computed here from the run's per-frame pair scores);
* the timeline of a video: each rater's tracks as the runs of frames the simulation gave them, the per-frame
  score as written on the frames, the frames worse than the run's threshold and their stretches;
* the clips drill-downs: exactly the stretches of consecutive frames worse than the threshold, of every video
  in view or of the timeline's video, within the sidebar filters (as stages, put back on undo);
* the open video in the sample view: its timeline, not a label table;
* the attribute layout gives the same timeline and pair counts as the fields layout.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from test_panel import _built, _can_set_filters, _clear_memory, _output, _panel, _plots  # noqa: F401

pytestmark = pytest.mark.fiftyone

RATERS = ["r1", "r2", "r3"]
N_VIDEOS, N_FRAMES = 5, 30


def _sim_kwargs(layout: str = "fields") -> dict:
    return dict(num_videos=N_VIDEOS, num_frames=N_FRAMES, num_objects=3, num_raters=3, magnitude=3.0, seed=0,
                layout=layout)


@pytest.fixture(scope="module")
def video_runs(fo):
    """The simulated videos with a KαLOS frame run ``k`` and an OT frame run ``ot``."""
    import fiftyone.operators as foo

    from agreement.fo.simulate.video import simulate_video_dataset

    ds, sim = simulate_video_dataset(**_sim_kwargs())
    fields = [f"frames.{r}" for r in RATERS]
    foo.get_operator("@iaa/agreement/compute_kalos")(ds, key="k", fields=fields)
    foo.get_operator("@iaa/agreement/compute_ot_agreement")(ds, key="ot", fields=fields)
    yield ds, sim
    ds.delete()


def _title(plot: dict) -> str:
    return " ".join(re.sub("<[^>]+>", " ", plot["layout"]["title"]["text"]).split())


def _frame_scores(ds, key: str, suffix: str) -> dict[str, tuple[list, list]]:
    """Per video id: its frame numbers and the per-frame score the run wrote."""
    ids, numbers, scores = ds.values(["id", "frames.frame_number", f"frames.{key}_{suffix}"])
    return {i: (list(n), list(s)) for i, n, s in zip(ids, numbers, scores)}


def _open(ds, key: str, **kw):
    """The panel opened on run ``key`` (the newest run opens first): ``(state, data, requests)``."""
    state, data, requests = _panel(ds, "on_load", **kw)
    if state["run_key"] != key:
        state, data, requests = _panel(ds, "on_change_run", state, value=key, **kw)
    return state, data, requests


def _bad_supports(numbers, scores, threshold: float, higher: bool = True) -> list[list[int]]:
    """The stretches of consecutive frames whose score is a number worse than ``threshold``, by hand."""
    bad = [n for n, s in zip(numbers, scores) if s is not None and (s < threshold if higher else s > threshold)]
    out = []
    for n in sorted(bad):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


# ---------------------------------------------------------------------------- figures alone (no dataset)
def test_runs_and_bad_stretches_by_hand():
    from agreement.fo.panel.video_figures import bad_frames, bad_stretches, runs_of

    assert runs_of([5, 1, 2, 3, 7, 8, 2]) == [(1, 3), (5, 5), (7, 8)] and runs_of([]) == []
    frames, scores = [1, 2, 3, 4, 5, 6, 7], [0.5, -0.1, -0.3, None, -0.2, 0.1, -0.5]
    assert bad_frames(frames, scores, 0.0, True) == [2, 3, 5, 7]
    assert bad_stretches(frames, scores, 0.0, True) == [(2, 3), (5, 5), (7, 7)]  # an undefined frame breaks a run
    assert bad_stretches(frames, scores, 0.2, False) == [(1, 1)]  # a distance: worse is above
    assert bad_stretches(frames, scores, None, True) == []


def _hand_timeline() -> dict:
    return {"video": "v1", "name": "clip.mp4", "num_frames": 10, "raters": [("a", 9), ("b", 4)],
            "tracks": {"a": [{"track": 1, "label": "car", "runs": [(1, 4), (7, 9)], "n_frames": 7},
                             {"track": 2, "label": "dog", "runs": [(2, 3)], "n_frames": 2}],
                       "b": [{"track": 5, "label": "car", "runs": [(1, 4)], "n_frames": 4}]},
            "frames": list(range(1, 11)), "scores": [0.9, 0.8, -0.2, -0.4, 0.7, None, 0.5, -0.1, 0.6, 0.9],
            "bad": [3, 4, 8], "stretches": [(3, 4), (8, 8)], "threshold": 0.0, "higher_is_better": True,
            "score_name": "α", "video_score": 0.41, "kind": "frames"}


def test_timeline_figure_draws_tracks_score_strip_and_bad_stretches():
    from agreement.fo.panel.video_figures import timeline_figure

    fig = timeline_figure(_hand_timeline(), selected=[3, 4])
    a, b, score, threshold = fig["traces"]
    # rater a's two tracks: a line per run of frames, at two heights within its row (row 0)
    assert [x for x in a["x"] if x is not None] == [0.55, 4.45, 6.55, 9.45, 1.55, 3.45]
    heights = sorted({y for y in a["y"] if y is not None})
    assert len(heights) == 2 and all(-0.5 < y < 0.5 for y in heights)
    assert {y for y in b["y"] if y is not None} == {1.0} and "b · track 5 (car): frames 1–4" in b["hovertext"]
    # the strip: every frame's score (None where undefined), the bad frames red, clickable with video:frame ids
    assert score["yaxis"] == "y2" and score["y"][5] is None and score["ids"][2] == "v1:3"
    from agreement.reporting.figures.palette import LOW

    assert [c == LOW for c in score["marker"]["color"]] == [f in (3, 4, 8) for f in range(1, 11)]
    assert threshold["y"] == [0.0, 0.0] and fig["click"] == "video_strip"
    shaded = [(s["x0"], s["x1"]) for s in fig["layout"]["shapes"] if s.get("fillcolor")]
    assert shaded == [(2.5, 4.5), (7.5, 8.5)]
    outlined = [s for s in fig["layout"]["shapes"] if not s.get("fillcolor")]
    assert [(s["x0"], s["x1"]) for s in outlined] == [(2.5, 4.5)]  # the open clip
    assert fig["layout"]["yaxis"]["ticktext"] == ["a", "b"] and fig["layout"]["xaxis"]["anchor"] == "y2"
    title = _title(fig)
    assert "Timeline of clip.mp4" in title and "3 of 9 scored frames with α below 0" in title
    assert "2 stretches shaded" in title


def test_timeline_of_segments_has_no_strip_and_a_crowd_is_cut():
    from agreement.fo.panel.video_figures import timeline_figure

    tl = _hand_timeline()
    many = {f"r{i}": [{"track": "segment 1", "label": "walk", "runs": [(1, 1 + i % 5)], "n_frames": 1 + i % 5}]
            for i in range(20)}
    tl.update(kind="segments", frames=[], scores=[], bad=[], stretches=[], threshold=None, tracks=many,
              raters=[(r, t[0]["n_frames"]) for r, t in many.items()])
    fig = timeline_figure(tl, top=5)
    assert len(fig["traces"]) == 5 and fig["click"] is None and "yaxis2" not in fig["layout"]
    assert {t["name"] for t in fig["traces"]} == {"r4", "r9", "r14", "r19", "r3"}  # the most labels
    assert "the 5 of 20 raters with the most labels here" in _title(fig)


# ---------------------------------------------------------------------------- a frame run in the panel
def test_frame_run_opens_as_videos_histogram_heatmap_and_timeline(video_runs):
    ds, sim = video_runs
    state, data, requests = _open(ds, "k")
    assert state["score_field"] == "k_frames_mean"
    hist = data["histogram"][0]
    assert sum(hist["y"]) == ds.count("k_frames_mean") == N_VIDEOS
    plots = _plots(_output(requests))
    assert {"histogram", "pair_matrix", "video_timeline"} <= set(plots)
    assert _title(plots["histogram"]).startswith("Per-video mean α")
    assert plots["histogram"]["layout"]["yaxis"]["title"]["text"] == "number of videos"
    assert "| whole run (5 videos) |" in data["summary_md"] and "| frames | 150 |" in data["summary_md"]
    assert "frames with α undefined" in data["summary_md"]
    # the heatmap: the run's per-pair α, its support in frames
    heat = plots["pair_matrix"]["data"][0]
    assert "150 shared frames" in heat["hovertext"][0][1] and "shared frames" in data["pair_note_md"]
    # the timeline: the worst video of the view, its per-frame α as written on its frames
    worst = ds.sort_by("k_frames_mean").first()
    tl = plots["video_timeline"]
    assert f"Timeline of {worst.filepath.split('/')[-1]}" in _title(tl)
    numbers, scores = _frame_scores(ds, "k", "alpha")[worst.id]
    strip = next(t for t in tl["data"] if t.get("yaxis") == "y2" and t.get("ids"))
    assert strip["x"] == numbers and strip["y"] == [None if s is None else pytest.approx(s) for s in scores]
    expected = _bad_supports(numbers, scores, 0.0)
    assert [(s["x0"] + 0.5, s["x1"] - 0.5) for s in tl["layout"]["shapes"]] == [tuple(e) for e in expected]
    assert "the video in view with the lowest agreement" in data["video_md"]


def test_timeline_tracks_are_the_simulated_raters_tracks(video_runs):
    from agreement.fo.panel.video_figures import runs_of, video_timeline
    from agreement.fo.runs import get_agreement_run_info

    ds, sim = video_runs
    info = get_agreement_run_info(ds, "k")
    names = ds.values("filepath")
    for v, vid in enumerate(ds.values("id")[:3]):
        tl = video_timeline(ds, info, vid)
        assert names[v].endswith(tl["name"]) and tl["num_frames"] == N_FRAMES
        for r in RATERS:
            video = sim.videos[r][v]
            expected = {int(t): runs_of(video.frames[video.tracks == t]) for t in np.unique(video.tracks)}
            assert {t["track"]: t["runs"] for t in tl["tracks"][r]} == expected, (v, r)


def test_histogram_bar_sort_and_heatmap_cell_load_videos(video_runs):
    from agreement.reporting.figures.method_figures import METHOD_VIEWS

    ds, sim = video_runs
    state, data, _ = _open(ds, "ot")
    means = dict(zip(ds.values("id"), ds.values("ot_frames_mean")))
    lo, hi = METHOD_VIEWS["iaa.ot_agreement"]["score_range"]({"beta": 0.5})
    edges = np.linspace(lo, hi, 21)
    k = int(np.argmax(data["histogram"][0]["y"]))
    state, data, requests = _panel(ds, "on_histogram_click", state, idx=k)
    view, _ = _built(ds, requests)
    assert set(view.values("id")) == {v for v, m in means.items() if edges[k] <= m < edges[k + 1]}
    # lowest agreement first: the videos by their mean OT score over frames
    state, data, requests = _panel(ds, "on_sort_lowest", state)
    view, _ = _built(ds, requests)
    assert view.values("id") == sorted(means, key=means.get)
    # a heatmap cell: the videos by the mean of the pair's OT scores over their frames, lowest first
    from agreement.fo.runs import load_agreement_results

    pair = load_agreement_results(ds, "ot")["detail"]["pair_sample_scores"]["r1|r3"]
    expected = {}
    for vid, frame_ids in zip(*ds.values(["id", "frames.id"])):
        vals = [pair[f] for f in frame_ids if pair.get(f) is not None]
        expected[vid] = float(np.mean(vals))
    state, data, requests = _panel(ds, "on_pair_click", state, x="r3", y="r1")
    view, _ = _built(ds, requests)
    assert view.values("id") == sorted(expected, key=expected.get)
    assert "r1 and r3 agree least" in data["drill_md"]
    assert "ot_pair_score" not in ds.get_field_schema()  # no per-sample pair field for frame scores


def test_clips_of_every_video_and_of_the_timelines_video(video_runs):
    ds, sim = video_runs
    state, data, requests = _open(ds, "k")
    scores = _frame_scores(ds, "k", "alpha")
    expected = {vid: _bad_supports(n, s, 0.0) for vid, (n, s) in scores.items()}
    n_bad = sum(len(e) for e in expected.values())
    assert n_bad >= 2 and sum(1 for e in expected.values() if e) >= 2  # the simulation has disagreeing stretches
    label = str(_output(requests))
    n_frames = sum(b - a + 1 for e in expected.values() for a, b in e)
    assert f"Load the clips where the raters disagree ({n_frames} frames with α below 0" in label
    state, data, requests = _panel(ds, "on_video_clips", state)
    view, stages = _built(ds, requests)
    assert view._is_clips and stages[-1]["_cls"].endswith("ToClips")
    got = sorted(zip(view.values("sample_id"), view.values("support")))
    assert got == sorted((vid, s) for vid, e in expected.items() for s in e)
    assert f"{n_bad:,} clips." in data["drill_md"]
    # the score strip of one video: that video's clips only
    vid = next(v for v, e in expected.items() if len(e) >= 1)
    state, data, requests = _panel(ds, "on_video_strip_click", state, view=view, id=f"{vid}:3")
    view, _ = _built(ds, requests)
    assert view.values("support") == expected[vid] and set(view.values("sample_id")) == {vid}


def test_clips_keep_the_sidebar_filter_as_stages_and_undo_puts_it_back(video_runs):
    from fiftyone import ViewField as F

    ds, sim = video_runs
    cut = float(np.median(ds.values("k_frames_mean")))
    filters = {"k_frames_mean": {"isMatching": True, "exclude": False, "range": [-1.0, cut], "none": False,
                                 "nan": False, "inf": False, "ninf": False}}
    low = ds.match(F("k_frames_mean") <= cut)
    state, data, _ = _open(ds, "k", filters=filters)
    assert sum(data["histogram"][0]["y"]) == len(low) < N_VIDEOS
    state, data, requests = _panel(ds, "on_video_clips", state, filters=filters)
    view, stages = _built(ds, requests)
    assert set(view.values("sample_id")) <= set(low.values("id")) and len(view)
    # undo: back to the user's view and filter
    state, data, requests = _panel(ds, "on_change_view", state, view=view, filters={})
    state, data, requests = _panel(ds, "on_clear_drill", state, view=view, filters={})
    assert [p["view"] for u, p in requests if u == "set_view"] == [[]]  # the user's (empty) stages
    put_back = [p for u, p in requests if u == "set_filters"]
    assert put_back == ([filters] if _can_set_filters() else [])


def test_chosen_and_open_video_get_the_timeline(video_runs):
    ds, sim = video_runs
    state, data, _ = _open(ds, "k")
    best = ds.sort_by("k_frames_mean", reverse=True).first()
    state, data, requests = _panel(ds, "on_change_video", state, value=best.id)
    tl = _plots(_output(requests))["video_timeline"]
    assert best.filepath.split("/")[-1] in _title(tl) and "the chosen video" in data["video_md"]
    # a video selected in the grid: its timeline
    import fiftyone.operators as foo

    third = ds.skip(2).first()
    assert third.id not in (best.id, ds.sort_by("k_frames_mean").first().id)  # neither shown before
    r = foo.execute_operator("@iaa/agreement/annotator_agreement", ctx=dict(view=ds.view(), selected=[third.id], params={
        "__method__": "on_change_selected", "panel_id": "test-panel", "panel_state": dict(state)}))
    assert r.error is None, r.error
    out = [q["params"] for q in r.executor.to_json()["requests"] if q["operator_uri"] == "show_panel_output"][-1]
    assert third.filepath.split("/")[-1] in _title(_plots(out["output"])["video_timeline"])
    # the sample view: the open video's timeline, no dashboard, no label table
    other = ds.skip(1).first()
    state, data, requests = _panel(ds, "on_change_current_sample", state, current_sample=other.id)
    plots = _plots(_output(requests))
    assert set(plots) == {"video_timeline"} and other.filepath.split("/")[-1] in _title(plots["video_timeline"])
    assert "the open video" in data["video_md"] and data["labels_md"] == ""


def test_frame_pair_counts_are_the_runs_own_per_pair_units(video_runs):
    from agreement.fo.panel.rater_counts import kalos_pair_counts
    from agreement.fo.runs import get_agreement_run_info, load_agreement_results

    ds, sim = video_runs
    counts = kalos_pair_counts(ds, get_agreement_run_info(ds, "k"))
    records = load_agreement_results(ds, "k")["detail"]["rater_pairs"]
    assert len(records) == 3
    for rec in records:
        c = counts[f"{rec['rater_a']}|{rec['rater_b']}"]
        assert c["n_shared"] == rec["n_shared_samples"] and c["n_units"] == rec["n_units"]
        assert 0 < c["n_agree"] <= c["n_units"]


def test_attribute_layout_gives_the_same_timeline_and_pair_counts(fo, video_runs):
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.fo.panel.rater_counts import kalos_pair_counts
    from agreement.fo.panel.video_figures import video_timeline
    from agreement.fo.runs import get_agreement_run_info
    from agreement.fo.simulate.video import simulate_video_dataset

    ds, _ = video_runs
    attr, _ = simulate_video_dataset(**_sim_kwargs("attribute"))
    try:
        compute_kalos(attr, "k", field="frames.labels", rater_attr="annotator", raters_field="raters")
        a, b = get_agreement_run_info(ds, "k"), get_agreement_run_info(attr, "k")
        assert kalos_pair_counts(attr, b) == kalos_pair_counts(ds, a)
        for v in (0, 2):
            ta = video_timeline(ds, a, ds.values("id")[v])
            tb = video_timeline(attr, b, attr.values("id")[v])
            assert tb["tracks"] == ta["tracks"] and tb["raters"] == ta["raters"]
            assert tb["scores"] == pytest.approx(ta["scores"]) and tb["stretches"] == ta["stretches"]
        state, data, requests = _open(attr, "k")  # the panel: its rater table, heatmap and timeline
        assert {"histogram", "pair_matrix", "video_timeline"} <= set(_plots(_output(requests)))
        assert "| r1 |" in data["rater_table_md"] and data["video_md"].startswith("**Timeline of video_")
    finally:
        attr.delete()


def test_temporal_segment_run_gets_a_timeline_of_segments(fo, video_runs):
    import fiftyone.operators as foo

    ds, sim = video_runs
    foo.get_operator("@iaa/agreement/compute_kalos")(ds, key="seg", fields=[f"{r}_segments" for r in RATERS])
    try:
        state, data, requests = _open(ds, "seg")
        assert state["score_field"] == "seg_alpha"  # scored per video: the method's own histogram
        plots = _plots(_output(requests))
        worst = ds.exists("seg_alpha").sort_by("seg_alpha").first()
        tl = plots["video_timeline"]
        assert f"Timeline of {worst.filepath.split('/')[-1]}: segments per rater" in _title(tl)
        assert "yaxis2" not in tl["layout"] and len(tl["data"]) == len(RATERS)  # no per-frame strip
        v = ds.values("id").index(worst.id)
        for row, r in enumerate(RATERS):  # each simulated segment [first, last] as a line over its frames
            segments = sim.videos[r][v].segments
            xs = [x for x in tl["data"][row]["x"] if x is not None]
            assert sorted(zip(xs[::2], xs[1::2])) == sorted((a - 0.45, b + 0.45) for a, b in segments.tolist())
        assert "each rater's segments" in data["video_md"] and "video_clips" not in str(_output(requests))
    finally:
        ds.delete_run("seg")


def test_timeline_without_bad_frames_says_so():
    from agreement.fo.panel.video_figures import timeline_figure

    tl = _hand_timeline()
    tl.update(scores=[0.5] * 10, bad=[], stretches=[])
    fig = timeline_figure(tl)
    assert "no frame of the 10 scored frames has α below 0" in _title(fig)
    assert not fig["layout"]["shapes"] and "click the score strip" not in _title(fig)
