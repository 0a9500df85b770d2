"""The review loop on videos (issue 48): a consensus of video frame labels (a frame run, its labels in
``frames.{key}_consensus``) and of temporal segments (``{key}_consensus``, ``TemporalDetections``), reviewed
from their queues of clips with the SDK and through the panel as the App drives it.

Three simulated videos of 12 frames, three raters (``simulate_video_dataset``), a majority consensus of their
frame boxes (run ``fr``) and of their segments (run ``sg``). Checked against what the run wrote on the frames
and samples, read here directly (never through the review functions under test): the queue's items are the
clips of the frames holding flagged labels, each with exactly those labels; a decision tags exactly the
flagged consensus labels named, through the queue or the dataset, and no other label; the counts, the next
undecided clip, the labels of an item with their frame numbers and the raters' labels fused into them.
"""

from __future__ import annotations

import pytest

from test_panel import (
    _clear_memory,  # noqa: F401 - the panel memory per test (autouse fixture)
    _panel as _panel_event,
)

pytestmark = pytest.mark.fiftyone

RATERS = ["r1", "r2", "r3"]


def _sim(layout: str = "fields"):
    from agreement.fo.simulate.video import simulate_video_dataset

    ds, _ = simulate_video_dataset(num_videos=3, num_frames=12, num_objects=3, num_raters=3, magnitude=3.0,
                                   seed=0, layout=layout, media="none")
    return ds


@pytest.fixture(scope="module")
def runs(fo):
    """The videos with a frame consensus run ``fr`` and a segment consensus run ``sg`` (majority votes: the
    objects two of the three raters drew are flagged)."""
    import fiftyone.operators as foo

    ds = _sim()
    consensus = foo.get_operator("@iaa/agreement/compute_consensus")
    consensus(ds, key="fr", fields=[f"frames.{r}" for r in RATERS], method="majority")
    consensus(ds, key="sg", fields=[f"{r}_segments" for r in RATERS], method="majority")
    yield ds
    ds.delete()


@pytest.fixture
def ds(runs):
    """The videos, every review decision undone (the tests share the module's runs)."""
    for tag in ("accepted", "rejected"):
        runs.untag_labels(tag, label_fields=["frames.fr_consensus", "sg_consensus"])
    yield runs


def _panel(ds, method, state=None, view=None, current_sample=None, panel_id="modal", **event):
    """One panel event as the App sends it (:func:`test_panel._panel`), in the sample view's panel by default."""
    return _panel_event(ds, method, state, view=view, current_sample=current_sample, panel_id=panel_id, **event)


def _output(requests) -> str:
    return str([p for uri, p in requests if uri == "show_panel_output"][-1]["output"])


def _opened(requests) -> list[str]:
    return [p.get("id") for uri, p in requests if uri == "open_sample"]


# ------------------------------------------------------------------ oracles: the stored labels, read directly
def _frame_consensus(ds, key: str = "fr") -> dict:
    """``{label id: (video id, frame number, label)}`` of every consensus label of frame run ``key``."""
    out = {}
    for sid, numbers, values in zip(*ds.values(["id", "frames.frame_number", f"frames.{key}_consensus"])):
        for n, dets in zip(numbers, values):
            out.update({d.id: (sid, n, d) for d in (dets.detections if dets else [])})
    return out


def _frame_rater_labels(ds, rater_of=None) -> dict:
    """``{label id: (rater, frame number, label)}`` of every rater's frame box (fields layout: the field names
    the rater; ``rater_of(field, label)`` otherwise)."""
    out = {}
    fields = [f for f in ds.get_frame_field_schema() if f in RATERS or f == "labels"]
    for f in fields:
        for numbers, values in zip(*ds.values(["frames.frame_number", f"frames.{f}"])):
            for n, dets in zip(numbers, values):
                out.update({d.id: (rater_of(f, d) if rater_of else f, n, d) for d in (dets.detections if dets else [])})
    return out


def _all_tags(ds) -> dict:
    """``{label id: tags}`` of every label of the dataset: raters', reference, both runs' consensus labels."""
    import fiftyone as fo

    out = {}
    for f in ds.get_frame_field_schema(embedded_doc_type=fo.Detections):
        for per_video in ds.values(f"frames.{f}"):
            out.update({d.id: list(d.tags) for dets in per_video for d in (dets.detections if dets else [])})
    for f in ds.get_field_schema(embedded_doc_type=fo.TemporalDetections):
        out.update({d.id: list(d.tags) for v in ds.values(f) for d in (v.detections if v else [])})
    return out


def _flagged_in_clip(labels: dict, sid: str, support: list[int]) -> set[str]:
    return {i for i, (s, n, d) in labels.items() if s == sid and support[0] <= n <= support[1] and d["fr_review"]}


# ------------------------------------------------------------------ frame runs, SDK
def test_frame_queue_items_are_clips_holding_exactly_their_flagged_frame_labels(ds):
    from agreement.fo.methods.consensus import review_view
    from agreement.fo.views.review import queue_key, queue_label_ids

    queue = review_view(ds, "fr")
    assert queue_key(queue) == "fr" and queue_key(ds.view()) is None and queue_key(review_view(ds, "sg")) == "sg"
    labels = _frame_consensus(ds)
    flagged = {i for i, (_, _, d) in labels.items() if d["fr_review"]}
    ids = queue_label_ids(queue, "fr")
    assert len(queue) >= 3 and len(ids) == len(set(ids)) and set(ids) == flagged
    sizes = []
    for clip, sid, support in zip(*queue.values(["id", "sample_id", "support"])):
        got = queue_label_ids(queue, "fr", [clip])
        assert set(got) == _flagged_in_clip(labels, sid, support), clip
        frames = [labels[i][1] for i in got]
        assert frames == sorted(frames)  # frame by frame
        sizes.append(len(got))
    assert max(sizes) > 1  # an item holds several labels, across its frames


def test_frame_decisions_tag_exactly_the_flagged_frame_labels_named(ds):
    from agreement.fo.methods.consensus import review_view
    from agreement.fo.views.review import ReviewError, queue_label_ids, review_labels, review_progress

    queue = review_view(ds, "fr")
    labels = _frame_consensus(ds)
    n = sum(bool(d["fr_review"]) for _, _, d in labels.values())
    before = _all_tags(ds)
    assert review_progress(queue, "fr") == {"flagged": n, "accepted": 0, "rejected": 0, "pending": n}
    clips = queue.values("id")
    first, second = queue_label_ids(queue, "fr", [clips[0]]), queue_label_ids(queue, "fr", [clips[1]])
    assert review_labels(queue, "fr", first, "accepted")["tagged"] == len(first)  # through the queue
    out = review_labels(ds, "fr", second[:1], "rejected")  # through the dataset
    assert out == {"tagged": 1, "decision": "rejected", "flagged": n, "accepted": len(first), "rejected": 1,
                   "pending": n - len(first) - 1}
    after = _all_tags(ds)
    assert {i for i in after if after[i] != before[i]} == set(first) | {second[0]}
    assert all(after[i] == ["accepted"] for i in first) and after[second[0]] == ["rejected"]
    (shown,) = queue.select(clips[0]).values("frames.fr_consensus.detections.tags")
    assert [t for per_frame in shown for t in per_frame] == [["accepted"]] * len(first)  # the open queue, at once
    review_labels(queue, "fr", first[:1], "rejected")  # a label takes one decision
    assert _all_tags(ds)[first[0]] == ["rejected"]
    assert review_progress(ds, "fr")["rejected"] == 2
    undo = review_labels(queue, "fr", first + second[:1], None)
    assert undo["pending"] == n and _all_tags(ds) == before
    # through a view of the queue that no longer shows the clip (a stage the App put after the queue): the
    # labels are still tagged, on the dataset
    assert review_labels(queue.skip(1), "fr", first, "accepted")["accepted"] == len(first)
    assert all(_all_tags(ds)[i] == ["accepted"] for i in first)
    review_labels(queue.skip(1), "fr", first, None)
    rater_label = next(iter(_frame_rater_labels(ds)))
    unflagged = next(i for i, (_, _, d) in labels.items() if not d["fr_review"])
    segment = ds.values("sg_consensus.detections.id", unwind=True)[0]
    for bad, match in (([first[0], rater_label], "not consensus labels of run 'fr'"),
                       ([segment], "not consensus labels of run 'fr'"), ([unflagged], "not flagged for review")):
        with pytest.raises(ReviewError, match=match):
            review_labels(queue, "fr", bad, "accepted")
    assert _all_tags(ds) == before  # nothing tagged by a refused call


def test_next_pending_walks_the_clips_and_skips_those_fully_decided(ds):
    from agreement.fo.methods.consensus import review_view
    from agreement.fo.views.review import next_pending, queue_label_ids, review_labels

    queue = review_view(ds, "fr")
    clips = queue.values("id")
    assert next_pending(queue, "fr") == clips[0] and next_pending(queue, "fr", clips[0]) == clips[1]
    review_labels(ds, "fr", queue_label_ids(queue, "fr", [clips[1]]), "accepted")
    assert next_pending(queue, "fr", clips[0]) == clips[2]
    several = next(c for c in clips if len(queue_label_ids(queue, "fr", [c])) > 1)
    partly = queue_label_ids(queue, "fr", [several])
    review_labels(queue, "fr", partly[:1], "rejected")  # one label of the clip decided: still undecided
    assert several in [next_pending(queue, "fr", c) for c in clips]
    review_labels(queue, "fr", queue_label_ids(queue, "fr"), "accepted")
    assert next_pending(queue, "fr", clips[0]) is None


def test_review_item_of_a_clip_lists_its_labels_with_frames_and_the_raters_labels_fused(ds):
    from agreement.fo.methods.consensus import review_view
    from agreement.fo.views.review import review_labels
    from agreement.fo.views.review_item import review_item, review_markdown

    queue = review_view(ds, "fr")
    labels, raters = _frame_consensus(ds), _frame_rater_labels(ds)
    clips, sids, supports = queue.values(["id", "sample_id", "support"])
    assert review_item(queue, "fr", "0" * 24) is None
    for k, (clip, sid, support) in enumerate(zip(clips, sids, supports)):
        want = _flagged_in_clip(labels, sid, support)
        review_labels(ds, "fr", sorted(want)[:1], "accepted")
        item = review_item(queue, "fr", clip)
        assert (item["item"], item["sample_id"], item["position"], item["size"]) == (clip, sid, k + 1, len(clips))
        assert {lab["id"] for lab in item["labels"]} == want
        for lab in item["labels"]:
            _, frame, d = labels[lab["id"]]
            assert (lab["frame"], lab["label"], lab["confidence"], lab["support"], lab["flagged"]) == \
                (frame, d.label, d.confidence, d["fr_support"], True)
        assert [lab["decision"] for lab in item["labels"]].count("accepted") == 1
        members = {m for i in want for m in labels[i][2]["fr_members"]}
        assert members and {r["id"] for r in item["raters"]} == members
        for r in item["raters"]:
            assert (r["rater"], r["frame"], r["label"], r["agrees"]) == \
                (raters[r["id"]][0], raters[r["id"]][1], raters[r["id"]][2].label, raters[r["id"]][2]["fr_agrees"])
        md = review_markdown("fr", {"flagged": 9, "accepted": 1, "rejected": 0, "pending": 8}, item)
        assert f"**Item {k + 1} of {len(clips)}**" in md and "| frame | consensus label |" in md
        for lab in item["labels"]:
            assert f"| {lab['frame']} | **{lab['label']}** |" in md
        assert f"({sum(r['agrees'] for r in item['raters'])} of {len(members)} agree)" in md


def test_review_item_reads_the_raters_of_the_attribute_layout(fo):
    from agreement.fo.methods.consensus import compute_consensus, review_view
    from agreement.fo.views.review_item import review_item

    ds = _sim("attribute")
    try:
        compute_consensus(ds, "fa", field="frames.labels", rater_attr="annotator", raters_field="raters",
                          method="majority")
        queue = review_view(ds, "fa")
        raters = _frame_rater_labels(ds, rater_of=lambda f, d: d["annotator"])
        labels = _frame_consensus(ds, "fa")
        item = review_item(queue, "fa", queue.first().id)
        members = {m for lab in item["labels"] for m in labels[lab["id"]][2]["fa_members"]}
        assert members and {r["id"] for r in item["raters"]} == members
        assert {(r["id"], r["rater"], r["frame"]) for r in item["raters"]} == \
            {(m, raters[m][0], raters[m][1]) for m in members}
        assert {r["rater"] for r in item["raters"]} <= set(RATERS)
    finally:
        ds.delete()


def test_finalize_writes_the_reviewed_frame_labels(ds):
    from agreement.fo.methods.consensus import finalize_consensus, review_view
    from agreement.fo.views.review import queue_label_ids, review_labels

    queue = review_view(ds, "fr")
    ids = queue_label_ids(queue, "fr")
    review_labels(ds, "fr", ids[:1], "rejected")
    review_labels(ds, "fr", ids[1:], "accepted")
    counts = finalize_consensus(ds, "fr")
    labels = _frame_consensus(ds)
    assert counts["rejected"] == 1 and counts["accepted"] == len(ids) - 1 and counts["kept"] == len(labels) - 1
    final = set()
    for sid, numbers, values in zip(*ds.values(["id", "frames.frame_number", "frames.fr_final"])):
        for n, dets in zip(numbers, values):
            assert not any(d["fr_review"] for d in (dets.detections if dets else []))  # every flagged one decided
            final |= {(sid, n, d.label, tuple(d.bounding_box)) for d in (dets.detections if dets else [])}
    assert final == {(s, n, d.label, tuple(d.bounding_box)) for i, (s, n, d) in labels.items() if i != ids[0]}


# ------------------------------------------------------------------ the panel, as the App drives it
def test_panel_reviews_a_frame_queue_accept_next_reject_undo(ds):
    """On a clip opened from a frame run's queue: its flagged labels with their frames, Accept / Reject / Undo /
    Next acting on exactly those labels, the progress at once; no event fails (the App showed "The panel could
    not update" on every item of a frame queue)."""
    from agreement.fo.methods.consensus import review_view

    queue = review_view(ds, "fr")
    labels = _frame_consensus(ds)
    n = sum(bool(d["fr_review"]) for _, _, d in labels.values())
    clips, sids, supports = queue.values(["id", "sample_id", "support"])
    first, second = (sorted(_flagged_in_clip(labels, s, sp)) for s, sp in zip(sids[:2], supports[:2]))
    before = _all_tags(ds)
    state, data, requests = _panel(ds, "on_load", view=queue, current_sample=clips[0])
    md = data["review_state_md"]
    assert "could not update" not in str(data) and f"0 of {n} flagged labels decided" in md
    assert f"**Item 1 of {len(clips)}**" in md and "| frame | consensus label |" in md
    assert all(f"| {labels[i][1]} | **{labels[i][2].label}** |" in md for i in first)
    assert "review_accept" in _output(requests) and "review_next" in _output(requests)
    state, data, requests = _panel(ds, "on_review_accept", state, view=queue, current_sample=clips[0])
    assert _opened(requests) == [clips[1]]
    state, data, _ = _panel(ds, "on_change_current_sample", state, view=queue, current_sample=clips[1])
    assert f"{len(first)} of {n} flagged labels decided" in data["review_state_md"]
    state, data, _ = _panel(ds, "on_review_reject", state, view=queue, current_sample=clips[1])
    after = _all_tags(ds)
    assert {i for i in after if after[i] != before[i]} == set(first) | set(second)
    assert all(after[i] == ["accepted"] for i in first) and all(after[i] == ["rejected"] for i in second)
    state, data, _ = _panel(ds, "on_review_undo", state, view=queue, current_sample=clips[1])
    assert all(_all_tags(ds)[i] == [] for i in second)
    assert f"{len(first)} of {n} flagged labels decided" in data["review_state_md"]
    state, data, requests = _panel(ds, "on_review_next", state, view=queue, current_sample=clips[-1])
    assert _opened(requests) == [clips[1]]  # wraps around past the decided first clip


def test_panel_reviews_a_segment_queue_and_finalizes(ds):
    """On a clip of a temporal segment run's queue: its one segment and the raters' segments fused into it,
    Accept / Reject / Undo / Next on exactly that segment, then Finalize once every segment is decided."""
    from agreement.fo.methods.consensus import review_view
    from agreement.fo.views.review import review_labels

    queue = review_view(ds, "sg")
    clips, segment_ids = queue.values(["id", "sg_consensus.id"])
    n = len(clips)
    assert n >= 3
    segments = {d.id: d for v in ds.values("sg_consensus") for d in (v.detections if v else [])}
    rater_segments = {d.id: (r, d) for r in RATERS for v in ds.values(f"{r}_segments")
                      for d in (v.detections if v else [])}
    before = _all_tags(ds)
    state, data, requests = _panel(ds, "on_load", view=queue, current_sample=clips[0])
    md = data["review_state_md"]
    assert f"0 of {n} flagged labels decided" in md and f"**Item 1 of {n}**" in md
    assert f"| **{segments[segment_ids[0]].label}** |" in md
    members = segments[segment_ids[0]]["sg_members"]
    assert f" of {len(members)} agree)" in md
    assert all(f"| {rater_segments[m][0]}_segments | {rater_segments[m][1].label} |" in md for m in members)
    state, data, requests = _panel(ds, "on_review_accept", state, view=queue, current_sample=clips[0])
    assert _opened(requests) == [clips[1]]
    state, data, _ = _panel(ds, "on_change_current_sample", state, view=queue, current_sample=clips[1])
    state, data, _ = _panel(ds, "on_review_reject", state, view=queue, current_sample=clips[1])
    after = _all_tags(ds)
    assert {i: after[i] for i in after if after[i] != before[i]} == {segment_ids[0]: ["accepted"],
                                                                     segment_ids[1]: ["rejected"]}
    state, data, _ = _panel(ds, "on_review_undo", state, view=queue, current_sample=clips[1])
    assert _all_tags(ds)[segment_ids[1]] == [] and f"1 of {n} flagged labels decided" in data["review_state_md"]
    state, data, requests = _panel(ds, "on_review_next", state, view=queue, current_sample=clips[-1])
    assert _opened(requests) == [clips[1]]
    review_labels(ds, "sg", segment_ids[2:], "accepted")
    state, data, _ = _panel(ds, "on_review_reject", state, view=queue, current_sample=clips[1])
    state, data, requests = _panel(ds, "on_change_current_sample", state, view=queue, current_sample=clips[1])
    assert "The queue is done" in data["review_state_md"] and "review_finalize" in _output(requests)
    _panel(ds, "on_review_finalize", state, view=queue, current_sample=clips[1])
    final = [d for v in ds.values("sg_final") for d in (v.detections if v else [])]
    kept = [d for i, d in segments.items() if i != segment_ids[1]]
    assert sorted((d.label, d.support) for d in final) == sorted((d.label, d.support) for d in kept)
    assert not any(d["sg_review"] for d in final)
    changed = {i for i, t in _all_tags(ds).items() if t != before.get(i)}
    assert changed <= set(segment_ids) | {d.id for d in final}  # no rater label tagged (sg_final copies the tags)
