"""Frame-level labels (``frames.<field>``) through every compute operator: per-frame results on the frames,
per-video aggregates on the samples, the run on the video dataset (FiftyOne's own ``rename_run`` and
``delete_run`` included), chance pairs across videos, both rater layouts, and the bad inputs.

The oracle: a frame run computes on each frame exactly what the same method computes on an image dataset
whose samples are those frames (KαLOS: every number; OT: every per-sample score), except for the chance
baselines, which draw their pairs from different videos (checked in the pure tests below)."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.methods.ot.alpha_ot import plan_chance

N_VIDEOS, N_FRAMES = 5, 6
RATERS = ("r1", "r2", "r3")


def _boxes(v: int, f: int, rater: int) -> list[tuple[str, list[float], int]]:
    """Deterministic boxes of rater ``rater`` on frame ``f`` of video ``v``: (label, box, track index)."""
    rng = np.random.default_rng(1000 * v + 10 * f + rater)
    out = []
    for k in range(3):
        if rater == 2 and (f + k) % 4 == 0:
            continue  # rater r3 misses some boxes
        x = 0.1 + 0.25 * k + 0.01 * f + rng.normal(0, 0.004 * (1 + v))
        label = "car" if (k != 1 or rater != 1 or f % 3) else "truck"
        out.append((label, [x, 0.3 + rng.normal(0, 0.004), 0.15, 0.2], k))
    return out


def _assigned(v: int, rater: int, f: int) -> str:
    """``"labels"``, ``"empty"`` (explicit absence: the rater labelled the video, nothing on this frame) or
    ``"none"`` (implicit absence: r3 was not given video 4)."""
    if rater == 2 and v == 4:
        return "none"
    if rater == 1 and f == 3:
        return "empty"
    return "labels"


def _dets(fo, v: int, f: int, rater: int, annotator: bool = False):
    kind = _assigned(v, rater, f)
    if kind == "none":
        return None
    items = [] if kind == "empty" else _boxes(v, f, rater)
    extra = (lambda: {"annotator": RATERS[rater]}) if annotator else (lambda: {})
    return fo.Detections(detections=[fo.Detection(label=lab, bounding_box=b, index=k, **extra())
                                     for lab, b, k in items])


@pytest.fixture(scope="module")
def video_ds(fo):
    ds = fo.Dataset()
    samples = []
    for v in range(N_VIDEOS):
        s = fo.Sample(filepath=f"/videos/clip{v}.mp4")
        s.metadata = fo.VideoMetadata(total_frame_count=N_FRAMES, frame_rate=25.0, frame_width=640, frame_height=480)
        for f in range(1, N_FRAMES + 1):
            frame = fo.Frame()
            for r, name in enumerate(RATERS):
                d = _dets(fo, v, f, r)
                if d is not None:
                    frame[name] = d
            merged = [_dets(fo, v, f, r, annotator=True) for r in range(3)]
            frame["labels"] = fo.Detections(detections=[d for m in merged if m is not None for d in m.detections])
            s.frames[f] = frame
        samples.append(s)
    ds.add_samples(samples, progress=False)
    ds.add_sample_field("assigned", fo.ListField, subfield=fo.StringField)
    ds.set_values("assigned", [[n for r, n in enumerate(RATERS) if _assigned(v, r, 1) != "none"]
                               for v in range(N_VIDEOS)])
    yield ds
    ds.delete()


@pytest.fixture(scope="module")
def image_ds(fo):
    """The same frames as the samples of an image dataset (the oracle)."""
    ds = fo.Dataset()
    samples = []
    for v in range(N_VIDEOS):
        for f in range(1, N_FRAMES + 1):
            s = fo.Sample(filepath=f"/videos/clip{v}_{f:03d}.jpg", video=v, frame=f)
            for r, name in enumerate(RATERS):
                s[name] = _dets(fo, v, f, r)
            samples.append(s)
    ds.add_samples(samples, progress=False)
    yield ds
    ds.delete()


def _op(name: str):
    import fiftyone.operators as foo

    return foo.get_operator(f"@iaa/agreement/{name}")


def _frame_values(ds, path: str) -> dict:
    """``{(video index, frame number): value}`` of a frame path."""
    out = {}
    for fp, frames, values in zip(*ds.values(["filepath", "frames.frame_number", f"frames.{path}"])):
        v = int(fp.split("clip")[1].split(".")[0])
        out.update({(v, n): x for n, x in zip(frames, values)})
    return out


def _image_values(ds, path: str) -> dict:
    return {(v, f): x for v, f, x in zip(*ds.values(["video", "frame", path]))}


def _same(got: dict, want: dict) -> None:
    """Equal keys; each value undefined in both or equal to 1e-12."""
    assert got.keys() == want.keys()
    for k, x in want.items():
        assert (got[k] is None and x is None) or got[k] == pytest.approx(x, abs=1e-12), (k, got[k], x)


def _no_units_left(fo):
    assert not [n for n in fo.list_datasets() if n.startswith("iaa-frames-")]


def test_kalos_per_frame_equals_kalos_on_the_frames_as_images(fo, video_ds, image_ds):
    got = _op("compute_kalos")(video_ds, key="fk", fields=[f"frames.{r}" for r in RATERS]).summary
    want = _op("compute_kalos")(image_ds, key="ik", fields=list(RATERS)).summary
    assert got["n_videos"] == N_VIDEOS and got["n_frames"] == N_VIDEOS * N_FRAMES
    assert got["global_alpha"] == pytest.approx(want["global_alpha"], abs=1e-12)
    _same(_frame_values(video_ds, "fk_alpha"), _image_values(image_ds, "ik_alpha"))
    # label attributes land on the frame labels, by label id
    units = video_ds.values("frames.r1.detections.fk_unit", unwind=True)
    assert len(units) == video_ds.count("frames.r1.detections") and all(u is not None for u in units)
    # per video: mean, worst frame, share of frames below chance (0: the middle of α's range), frames scored
    for sid, mean, worst, low, n in zip(*video_ds.values(["id", "fk_frames_mean", "fk_frames_worst",
                                                          "fk_frames_low", "fk_frames_n"])):
        vals = [x for x in video_ds[sid].frames.values() if x["fk_alpha"] is not None]
        scores = np.array([x["fk_alpha"] for x in vals])
        assert n == len(scores)
        if n:
            assert mean == pytest.approx(scores.mean()) and worst == pytest.approx(scores.min())
            assert low == pytest.approx(np.mean(scores < 0.0))
    info = video_ds.get_run_info("fk").config
    assert info.frame_fields == ["fk_alpha", "fk_n_units"] and info.params["frames"]["threshold"] == 0.0
    _no_units_left(fo)


def test_ot_per_frame_scores_equal_image_scores_and_chance_pairs_cross_videos(fo, video_ds, image_ds):
    got = _op("compute_ot_agreement")(video_ds, key="fo_ot", fields=[f"frames.{r}" for r in RATERS]).summary
    _op("compute_ot_agreement")(image_ds, key="io_ot", fields=list(RATERS))
    _same(_frame_values(video_ds, "fo_ot_ot"), _image_values(image_ds, "io_ot_ot"))
    # αOT: the pure library's on the frames as images with the videos as groups (chance pairs join frames of
    # different videos), exact at this size, so the order of the ids does not matter
    data, videos = _image_corpus(image_ds)
    want, by_frame = _alpha_ot_grouped(data, videos), _alpha_ot_grouped(data, None)
    assert got["alpha_ot"] == pytest.approx(want, abs=1e-12) and got["alpha_ot_exact"]
    assert abs(want - by_frame) > 1e-3  # pairs drawn between frames of one video would give another number
    assert video_ds.count("frames.r2.detections.fo_ot_cost") == video_ds.count("frames.r2.detections")


def _image_corpus(image_ds):
    """The corpus of the frames as images, and the video of each of its samples."""
    from agreement.fo.storage.reading import read_annotations

    data = read_annotations(image_ds, fields=list(RATERS)).annotations
    video = dict(zip(*image_ds.values(["id", "video"])))
    return data, np.array([video[str(s)] for s in data.sample_ids], dtype=np.int64)


def _alpha_ot_grouped(data, groups) -> float:
    """αOT of ``data`` with chance pairs between different ``groups`` (pure library)."""
    from agreement.methods.ot import PairCosts, SetPairs, assigned_pair_cells, solve_set_pairs
    from agreement.methods.ot.alpha_ot import CellSets, finish_alpha_ot

    cs, cr = np.nonzero(data.assigned)
    plan = plan_chance(data.sample_ids, cs, cr, data.raters, max_pairs=100_000, seed=0, groups=groups)
    _, a, b, _, a0, na, b0, nb = assigned_pair_cells(data)
    cost = solve_set_pairs(PairCosts(data.boxes, data.labels, 0.5), SetPairs(a0, na, b0, nb), beta=0.5,
                            normalization="paper", max_block=1 << 17).cost
    res = finish_alpha_ot(plan, CellSets.of(data, plan.cell_key), cost, a.astype(np.int64) * data.num_raters + b)
    assert res.exact
    return res.alpha


def test_chance_groups_are_the_videos_of_the_frame_units(fo, video_ds):
    from agreement.fo.frames.units import build_frame_units, chance_groups, delete_frame_units

    assert chance_groups(video_ds, video_ds.values("id")) is None  # not frame units: every sample its own group
    units = build_frame_units(video_ds, [f"{r}" for r in RATERS], None, "annotator", None)
    try:
        ids = units.values("id")[::-1]
        groups = chance_groups(units, ids)
        video = dict(zip(units.values("id"), map(str, units.values("sample_id"))))
        names = sorted(set(video.values()))
        assert groups.tolist() == [names.index(video[i]) for i in ids]
        assert np.bincount(groups).tolist() == [N_FRAMES] * N_VIDEOS
    finally:
        delete_frame_units(units)


def test_attribute_layout_gives_the_fields_layout_numbers(fo, video_ds):
    a = _op("compute_kalos")(video_ds, key="attr_k", field="frames.labels", rater_attr="annotator").summary
    b = _op("compute_kalos")(video_ds, key="fields_k", fields=[f"frames.{r}" for r in RATERS]).summary
    assert a["global_alpha"] == pytest.approx(b["global_alpha"], abs=1e-12)
    c = _op("compute_kalos")(video_ds, key="attr_k2", field="frames.labels", raters_field="assigned").summary
    assert c["global_alpha"] == pytest.approx(a["global_alpha"], abs=1e-12)
    _same(_frame_values(video_ds, "attr_k_alpha"), _frame_values(video_ds, "fields_k_alpha"))


def test_geometry_and_consensus_on_frames_through_execute_operator(fo, video_ds, image_ds):
    import fiftyone.operators as foo

    fields = [f"frames.{r}" for r in RATERS]
    res = foo.execute_operator("@iaa/agreement/compute_geometry_agreement",
                               ctx=dict(view=video_ds.view(), params=dict(key="geo", fields=fields)))
    assert res.result["sigma"] is not None and res.result["n_frames"] == N_VIDEOS * N_FRAMES
    # the pure library's numbers on the frames as images, chance pairs between different videos (exact)
    from agreement.methods.geometry_agreement import geometry_shard, merge_geometry_shards

    data, videos = _image_corpus(image_ds)
    kw = dict(bootstrap=None)
    want = merge_geometry_shards([geometry_shard(data)], lambda idx: (data, idx), groups=videos, **kw)
    by_frame = merge_geometry_shards([geometry_shard(data)], lambda idx: (data, idx), **kw)
    assert want.between_exact
    for k in ("sigma", "distance_alpha", "ks", "detection_alpha", "classification_alpha"):
        assert res.result[k] == pytest.approx(getattr(want, k).value, abs=1e-12), k
    assert abs(want.distance_alpha.value - by_frame.distance_alpha.value) > 1e-3
    assert video_ds.count("frames.geo_distance") > 0 and video_ds.count("geo_frames_mean") > 0
    res = foo.execute_operator("@iaa/agreement/compute_consensus",
                               ctx=dict(view=video_ds.view(), params=dict(key="cons", fields=fields)))
    assert res.result["n_consensus"] > 0
    assert video_ds.count("frames.cons_consensus.detections") == res.result["n_consensus"]
    _no_units_left(fo)


def test_fiftyone_rename_and_delete_move_and_remove_the_frame_fields(fo, video_ds):
    _op("compute_ot_agreement")(video_ds, key="tmp_ot", fields=["frames.r1", "frames.r2"])
    before = set(video_ds.get_frame_field_schema(flat=True))
    video_ds.rename_run("tmp_ot", "tmp_ot2")
    after = set(video_ds.get_frame_field_schema(flat=True))
    assert "tmp_ot2_ot" in after and "tmp_ot_ot" not in after
    assert "r1.detections.tmp_ot2_cost" in after and "r1.detections.tmp_ot_cost" not in after
    assert video_ds.count("frames.r1.detections.tmp_ot2_cost") > 0 and "tmp_ot2_frames_mean" in video_ds.get_field_schema()
    video_ds.delete_run("tmp_ot2")
    gone = set(video_ds.get_frame_field_schema(flat=True))
    assert not [p for p in gone if "tmp_ot" in p] and not [f for f in video_ds.get_field_schema() if "tmp_ot" in f]
    assert not video_ds.count("frames.r1.detections.tmp_ot2_cost")
    assert {p for p in before if "tmp_ot" not in p} <= gone  # the raters' labels and other runs untouched
    assert video_ds.count("frames.r1.detections") == sum(
        len(_boxes(v, f, 0)) for v in range(N_VIDEOS) for f in range(1, N_FRAMES + 1))


def test_bad_frame_inputs_are_refused_naming_the_fields(fo, video_ds, image_ds):
    with pytest.raises(Exception, match=r"frames\.r9.*frames\.r1"):
        _op("compute_kalos")(video_ds, key="bad", fields=["frames.r9", "frames.r1"])
    with pytest.raises(Exception, match="frame labels exist only on video"):
        _op("compute_kalos")(image_ds, key="bad", fields=["frames.r1", "frames.r2"])
    with pytest.raises(Exception, match="all frame fields"):
        _op("compute_kalos")(video_ds, key="bad", fields=["frames.r1", "labels"])
    video_ds.add_frame_field("clash_alpha", fo.FloatField)
    try:
        with pytest.raises(Exception, match="clash_alpha.*already exists"):
            _op("compute_kalos")(video_ds, key="clash", fields=["frames.r1", "frames.r2"])
        assert "clash" not in video_ds.list_runs()
    finally:
        video_ds.delete_frame_field("clash_alpha")
    _no_units_left(fo)


def test_chance_pairs_join_samples_of_different_groups_only():
    S, raters = 40, ("a", "b")
    cs, cr = np.repeat(np.arange(S), 2), np.tile([0, 1], S)
    ids = np.array([f"{i:04d}" for i in range(S)], dtype=object)
    groups = np.arange(S) // 10
    plan = plan_chance(ids, cs, cr, raters, max_pairs=100_000, seed=0, groups=groups)
    # 40 x 40 cell pairs less those within a group (4 groups of 10 x 10)
    assert int(plan.strata.size.sum()) == S * S - 4 * 100
    st = plan.strata
    ci, cj = np.asarray(plan.first_key) // 2, np.asarray(plan.second_key) // 2
    assert len(ci) and np.all(groups[ci] != groups[cj])
    # every sample its own group: the plan without groups, pair for pair
    own = plan_chance(ids, cs, cr, raters, max_pairs=100_000, seed=0, groups=np.arange(S))
    none = plan_chance(ids, cs, cr, raters, max_pairs=100_000, seed=0)
    assert np.array_equal(own.first_key, none.first_key) and np.array_equal(own.second_key, none.second_key)
    assert np.array_equal(own.strata.size, none.strata.size) and st is not None
    # one group: no cross pair at all (undefined, not a loop)
    one = plan_chance(ids, cs, cr, raters, max_pairs=100_000, seed=0, groups=np.zeros(S, np.int64))
    assert int(one.strata.size.sum()) == 0


def test_polylines_on_frames(fo):
    """Frame fields of Polylines run like boxes (per-frame distance, per-label attribute on the polylines)."""
    ds = fo.Dataset()
    try:
        for v in range(3):
            s = fo.Sample(filepath=f"/videos/poly{v}.mp4")
            for f in range(1, 5):
                def pl(d):
                    return fo.Polylines(polylines=[fo.Polyline(label="a", closed=True, filled=True,
                                                               points=[[(0.1 + d, 0.1), (0.3 + d, 0.1), (0.3 + d, 0.3)]])])
                s.frames[f] = fo.Frame(p1=pl(0.0), p2=pl(0.002 * f * (v + 1)))
            ds.add_sample(s)
        _op("compute_geometry_agreement")(ds, key="g", fields=["frames.p1", "frames.p2"], distance="polygon_iou")
        dist = [x for x in ds.values("frames.g_distance", unwind=True) if x is not None]
        assert len(dist) == 12
        # the triangle and its copy shifted by d: their intersection is the triangle of legs 0.2 - d
        for fp, frames, values in zip(*ds.values(["filepath", "frames.frame_number", "frames.g_distance"])):
            v = int(fp.split("poly")[1].split(".")[0])
            for f, x in zip(frames, values):
                inter = (0.2 - 0.002 * f * (v + 1)) ** 2 / 2
                assert x == pytest.approx(1 - inter / (0.04 - inter), abs=1e-9), (v, f)
        assert ds.count("frames.p2.polylines.g_distance") == 12
    finally:
        ds.delete()


def test_frame_consensus_review_queue_is_clips_of_flagged_frames(fo, video_ds):
    from agreement.fo.panel.consensus import review_queue_view
    from agreement.fo.views.review import review_labels

    _op("compute_consensus")(video_ds, key="rq", fields=[f"frames.{r}" for r in RATERS], method="majority")
    queue = review_queue_view(video_ds, "rq")
    n_flagged = len([x for x in video_ds.values("frames.rq_consensus.detections.rq_review", unwind=True) if x])
    assert n_flagged > 0 and len(queue) > 0
    shown = [x for x in queue.values("frames.rq_consensus.detections.rq_review", unwind=True)]
    assert len(shown) == n_flagged and all(shown)  # every flagged consensus label, and only those
    assert review_labels(video_ds, "rq", [], "accepted")["flagged"] == n_flagged  # reviewable (issue 48)


def test_frame_consensus_beyond_its_fit_window_streams_and_writes_every_frame(fo, video_ds):
    """A frame view of more frames than ``fit_samples`` (a frame is a sample of the consensus) is fitted on the
    first frames and streams the rest: every frame gets its consensus, the per-video aggregates are written, and
    the run records the window; the window's frames equal a whole fit of those frames."""
    import fiftyone.operators as foo

    from agreement.fo.runs import load_agreement_results

    fields = [f"frames.{r}" for r in RATERS]
    window = (N_VIDEOS * N_FRAMES) // 2
    whole = foo.execute_operator("@iaa/agreement/compute_consensus",
                                 ctx=dict(view=video_ds.view(), params=dict(key="cwhole", fields=fields)))
    res = foo.execute_operator("@iaa/agreement/compute_consensus",
                               ctx=dict(view=video_ds.view(), params=dict(key="cwin", fields=fields,
                                                                          fit_samples=window, shard_size=3)))
    detail = load_agreement_results(video_ds, "cwin")["detail"]
    assert detail["fit_window"]["n_fitted"] == window
    assert detail["fit_window"]["n_samples"] == N_VIDEOS * N_FRAMES
    assert res.result["n_consensus"] > 0
    assert video_ds.count("frames.cwin_consensus.detections") == res.result["n_consensus"]
    assert video_ds.count("frames.cwin_consensus") == video_ds.count("frames.cwhole_consensus")
    assert abs(res.result["n_consensus"] - whole.result["n_consensus"]) <= 0.2 * whole.result["n_consensus"]
    _no_units_left(fo)
