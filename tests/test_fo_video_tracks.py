"""Track agreement (``compute_track_agreement``) on a FiftyOne video dataset: the operator's numbers equal the
track library's on the tracks read back from the dataset (the library is checked against TrackEval and
py-motmetrics in tests/test_tracks_oracles.py), both layouts, per-box and per-video values written and
removed with the run, bad inputs refused."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.methods.tracks import Tracks, pool_track_agreement, track_agreement

pytestmark = pytest.mark.fiftyone


@pytest.fixture(scope="module")
def sim(fo):
    from agreement.fo.simulate.video import simulate_video_dataset

    ds, simulation = simulate_video_dataset(num_videos=3, num_frames=40, num_objects=3, num_raters=3,
                                            reference_field=None, seed=3)
    att, _ = simulate_video_dataset(num_videos=3, num_frames=40, num_objects=3, num_raters=3, layout="attribute",
                                    reference_field=None, seed=3)
    yield ds, att, list(simulation.raters)
    ds.delete()
    att.delete()


def _op(name: str):
    import fiftyone.operators as foo

    return foo.get_operator(f"@iaa/agreement/{name}")


def _stored_tracks(ds, raters: list[str], k: int) -> dict:
    """``{rater: Tracks}`` of video ``k`` as stored."""
    sample = ds.skip(k).first()
    tracks = {}
    for r in raters:
        frames = [(n, f[r]) for n, f in sample.frames.items()]
        rows = [(n, d.index, d.label, d.bounding_box) for n, f in frames if f is not None for d in f.detections]
        if any(f is not None for _, f in frames):
            tracks[r] = Tracks.from_records(rows) if rows else Tracks.empty()
    return tracks


def _library(ds, raters: list[str]):
    """The track library on the tracks as stored (independent read: FiftyOne's values())."""
    results = []
    for fp, numbers, *per_rater in zip(*ds.values(["filepath", "frames.frame_number"]
                                                + [f"frames.{r}" for r in raters])):
        tracks = {}
        for r, frames in zip(raters, per_rater):
            rows = [(n, d.index, d.label, d.bounding_box) for n, f in zip(numbers, frames) if f is not None
                    for d in f.detections]
            if any(f is not None for f in frames):
                tracks[r] = Tracks.from_records(rows) if rows else Tracks.empty()
        results.append(track_agreement(tracks, video=fp))
    return pool_track_agreement(results), results


def test_operator_numbers_equal_the_library_on_the_stored_tracks(fo, sim):
    ds, _, raters = sim
    got = _op("compute_track_agreement")(ds, key="tr", fields=[f"frames.{r}" for r in raters]).summary
    pooled, per_video = _library(ds, raters)
    alphas = pooled.alpha.as_dict()
    for name in ("presence", "classes", "localisation"):
        assert got[f"alpha_{name}"] == pytest.approx(alphas[name]["alpha"], abs=1e-12, nan_ok=True)
    records = pooled.pair_records()
    assert got["hota"] == pytest.approx(np.mean([r["hota"] for r in records]), abs=1e-12)
    assert got["idf1"] == pytest.approx(np.mean([r["idf1"] for r in records]), abs=1e-12)
    assert got["id_switches"] == sum(r["id_switches"] for r in records)
    assert got["n_videos"] == 3 and got["n_frames"] == ds.count("frames")
    # per video: its HOTA (mean over pairs) and identity switches
    for res, hota, switches in zip(per_video, *ds.values(["tr_hota", "tr_id_switches"])):
        pairs = [p.as_dict() for p in res.pairs]
        assert hota == pytest.approx(np.nanmean([p["hota"] for p in pairs]), abs=1e-12)
        assert switches == sum(p["id_switches"] for p in pairs)
    # per box: its track unit; per frame: the share of boxes tracked by every rater
    assert ds.count("frames.r1.detections.tr_track_unit") == ds.count("frames.r1.detections")
    scores = [x for x in ds.values("frames.tr_tracks_agree", unwind=True) if x is not None]
    assert scores and all(0.0 <= x <= 1.0 for x in scores)
    assert ds.get_run_info("tr").config.method == "iaa.tracks"


def test_attribute_layout_and_execute_operator(fo, sim):
    import fiftyone.operators as foo

    ds, att, raters = sim
    a = foo.execute_operator("@iaa/agreement/compute_track_agreement",
                             ctx=dict(view=att.view(), params=dict(key="tr", field="frames.labels"))).result
    b = _op("compute_track_agreement")(ds, key="tr_b", fields=[f"frames.{r}" for r in raters]).summary
    for name in ("alpha_presence", "alpha_localisation", "hota", "idf1"):
        assert a[name] == pytest.approx(b[name], abs=1e-12), name
    assert a["id_switches"] == b["id_switches"] and a["n_frames"] == att.count("frames")
    # the forms offer frame fields beside the sample label fields (here the raters' segments)
    k = foo.execute_operator("@iaa/agreement/compute_kalos",
                             ctx=dict(view=att.view(), params=dict(key="k_att", field="frames.labels")))
    assert k.error is None and k.result["n_frames"] == att.count("frames")
    assert att.get_run_info("k_att").config.input["raters_field"] is None  # not the frame units' own field
    from agreement.fo.runs import get_agreement_run_info
    from operators.outputs import run_fields

    assert "frames.tr_tracks_agree" in run_fields(get_agreement_run_info(att, "tr"))


def test_consensus_tracks_then_delete_run_removes_frame_box_and_video_values(fo, sim):
    ds, _, raters = sim
    got = _op("compute_track_agreement")(ds, key="gone", fields=[f"frames.{r}" for r in raters], consensus=True)
    pooled, per_video = _library(ds, raters)
    want = [track_agreement({r: t for r, t in _stored_tracks(ds, raters, k).items()}, consensus=True).consensus
            for k in range(len(ds))]
    assert got.summary["n_consensus_tracks"] == sum(len(np.unique(c.tracks.track_ids)) for c in want)
    boxes = ds.values("frames.gone_consensus.detections", unwind=True)
    assert len(boxes) == sum(len(c.tracks.frames) for c in want) and all(b.index is not None for b in boxes)
    assert all(0 < b.confidence <= 1 and b["gone_n_raters"] >= 1 for b in boxes)
    ds.delete_run("gone")
    assert not [f for f in ds.get_field_schema() if f.startswith("gone_")]
    assert not [f for f in ds.get_frame_field_schema(flat=True) if "gone_" in f]
    assert not ds.count("frames.r2.detections.gone_track_unit")


def test_bad_track_inputs(fo, sim, make_dataset):
    ds, _, raters = sim
    images = make_dataset([fo.Sample(filepath=f"/i/{i}.jpg", r1=fo.Detections(), r2=fo.Detections())
                           for i in range(2)])
    with pytest.raises(Exception, match="reads tracks on video frames"):
        _op("compute_track_agreement")(images, key="x", fields=["r1", "r2"])
    clone = ds.clone()
    try:
        sample = clone.first()
        sample.frames[1][raters[0]].detections[0].index = None
        sample.save()
        with pytest.raises(Exception, match=r"frame 1, rater 'r1'.*no track id"):
            _op("compute_track_agreement")(clone, key="x", fields=[f"frames.{r}" for r in raters])
        assert "x" not in clone.list_runs()
        dets = sample.frames[1][raters[0]].detections
        dets[0].index = dets[1].index = 7  # one rater gives one track id to two boxes of a frame
        sample.save()
        with pytest.raises(Exception, match=r"rater 'r1'.*frame 1.*track 7"):
            _op("compute_track_agreement")(clone, key="x", fields=[f"frames.{r}" for r in raters])
        assert "x" not in clone.list_runs() and not [f for f in clone.get_frame_field_schema() if f.startswith("x_")]
    finally:
        clone.delete()
