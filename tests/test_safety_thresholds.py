"""Exact thresholds and image borders through the public entry points.

* IoU exactly τ: boxes with power-of-two coordinates, whose IoU is exactly 0.5 in floating point, are a
  match at τ = 0.5 (``s >= τ``) and not at the next float above, in KαLOS (its global α), the consensus
  (its units), the geometry agreement (its matching) and OT's F1@IoU baseline; pure library and FiftyOne.
* Boxes past each of the four image borders under every ``box_policy``: ``"clip"`` clips them and reports
  the repair, ``"drop"`` leaves them out and reports it, ``"error"`` refuses them naming sample and field.
"""

from __future__ import annotations

import numpy as np
import pytest

from agreement.core.data import AnnotationSet, MultiRaterAnnotations

#: IoU(A, B) = 0.125 / 0.25 = 0.5 exactly, likewise (C, D); every number a power of two or a sum of two.
A, B = [0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.25]
C, D = [0.5, 0.5, 0.25, 0.5], [0.5, 0.5, 0.25, 0.25]
ABOVE = float(np.nextafter(0.5, 1.0))


def _set(boxes, labels, prefix):
    return AnnotationSet(np.asarray(boxes, float).reshape(-1, 4), list(labels),
                         [f"{prefix}{k}" for k in range(len(boxes))])


def _half_iou_corpus(S=6):
    """S samples, raters a and b; on each, two objects, a's box and b's box at IoU exactly 0.5, the same
    class (cat/dog, varying), so every unit at τ = 0.5 is unanimous."""
    sets = []
    for s in range(S):
        la, lb = ("cat", "dog") if s % 2 else ("dog", "dog" if s % 3 else "cat")
        sets.append({"a": _set([A, C], [la, lb], f"{s}a"), "b": _set([B, D], [la, lb], f"{s}b")})
    return MultiRaterAnnotations.from_sets([f"s{s}" for s in range(S)], ["a", "b"], sets)


def test_the_boxes_have_iou_exactly_one_half():
    from agreement.geometry.similarity import similarity_matrix

    data = _half_iou_corpus(1)
    sim = similarity_matrix("iou", data, np.array([0, 1]), np.array([2, 3]))
    assert sim[0, 0] == 0.5 and sim[1, 1] == 0.5 and sim[0, 1] == 0.0


def test_kalos_matches_at_iou_exactly_tau():
    from agreement.methods.kalos import kalos_alpha

    data = _half_iou_corpus()
    at = kalos_alpha(data, tau=0.5)
    assert at.global_alpha == 1.0 and at.mean_alpha == 1.0
    assert at.n_units.tolist() == [2] * data.num_samples
    above = kalos_alpha(data, tau=ABOVE)  # one float above: nothing matches, every box its own unit
    assert above.n_units.tolist() == [4] * data.num_samples and above.global_alpha < 0.5
    for solver in ("greedy", "hungarian", "agglomerative"):
        assert kalos_alpha(data, tau=0.5, solver=solver).global_alpha == 1.0, solver


def test_consensus_units_join_at_iou_exactly_tau():
    from agreement.methods.consensus import consensus

    data = _half_iou_corpus()
    for method in ("em", "majority"):
        at = consensus(data, method=method, tau=0.5)
        assert at.support.tolist() == [2] * (2 * data.num_samples), method
        above = consensus(data, method=method, tau=ABOVE)
        assert above.support.tolist() == [1] * (4 * data.num_samples), method


def test_geometry_agreement_matches_at_similarity_exactly_the_threshold():
    from agreement.methods.geometry_agreement import geometry_agreement

    data = _half_iou_corpus()
    at = geometry_agreement(data, distance="iou", threshold=0.5, bootstrap=None)
    assert at.row_n_matched.tolist() == [1] * len(data)
    np.testing.assert_array_equal(at.row_distance, np.full(len(data), 0.5))
    above = geometry_agreement(data, distance="iou", threshold=ABOVE, bootstrap=None)
    assert above.row_n_matched.tolist() == [0] * len(data)


def test_f1_at_iou_matches_at_iou_exactly_the_threshold():
    from agreement.methods.ot.baselines import f1_at_iou

    assert f1_at_iou(np.array([A, C]), ["x", "y"], np.array([B, D]), ["x", "y"], iou_threshold=0.5).f1 == 1.0
    assert f1_at_iou(np.array([A, C]), ["x", "y"], np.array([B, D]), ["x", "y"], iou_threshold=ABOVE).f1 == 0.0


@pytest.mark.fiftyone
def test_every_operator_matches_at_iou_exactly_tau(fo, make_dataset):
    """The same corpus through the bridges: KαLOS's global α is 1, each consensus label fuses both raters,
    each geometry label is matched at distance 1 - IoU = 0.5, OT's F1@IoU is 1."""
    from agreement.fo.methods.consensus import compute_consensus
    from agreement.fo.methods.geometry_agreement import compute_geometry_agreement
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.fo.methods.ot_agreement import compute_ot_agreement

    data = _half_iou_corpus()
    samples = []
    for s in range(data.num_samples):
        kw = {r: fo.Detections(detections=[fo.Detection(label=str(lab), bounding_box=list(map(float, box)))
                                           for box, lab in zip(data.get(s, r).boxes, data.get(s, r).labels)])
              for r in ("a", "b")}
        samples.append(fo.Sample(filepath=f"/half/{s}.jpg", **kw))
    ds = make_dataset(samples)
    k = compute_kalos(ds, "k", fields=["a", "b"], tau=0.5)
    assert k["global_alpha"] == 1.0 and k["n_units"] == 2 * len(ds)
    assert ds.values("a.detections.k_unit") == ds.values("b.detections.k_unit") == [[0, 1]] * len(ds)
    k2 = compute_kalos(ds, "k2", fields=["a", "b"], tau=ABOVE)
    assert k2["n_units"] == 4 * len(ds) and k2["global_alpha"] < 0.5
    c = compute_consensus(ds, "c", fields=["a", "b"], tau=0.5, method="majority")
    labels = [d for v in ds.values("c_consensus") for d in v.detections]
    assert c["n_consensus"] == len(labels) == 2 * len(ds)
    assert all(len(d["c_members"]) == 2 and d["c_support"] == 1.0 for d in labels)
    g = compute_geometry_agreement(ds, "g", fields=["a", "b"], distance="iou", threshold=0.5, bootstrap=None)
    assert g["n_samples_measured"] == len(ds)
    assert ds.values("g_matched_fraction") == [1.0] * len(ds)
    assert ds.values("a.detections.g_distance") == [[0.5, 0.5]] * len(ds)
    o = compute_ot_agreement(ds, "o", fields=["a", "b"], iou_threshold=0.5)
    assert o["f1"] == 1.0 and ds.values("o_f1") == [1.0] * len(ds)


# ------------------------------------------------------------------------------------------- borders

#: Per border: a box half past it, the same box clipped, and a box entirely past it with its zero-area repair.
EDGES = {
    "left": ([-0.25, 0.25, 0.5, 0.25], [0.0, 0.25, 0.25, 0.25], [-0.5, 0.25, 0.25, 0.25], [0.0, 0.25, 0.0, 0.25]),
    "right": ([0.75, 0.25, 0.5, 0.25], [0.75, 0.25, 0.25, 0.25], [1.25, 0.25, 0.25, 0.25], [1.0, 0.25, 0.0, 0.25]),
    "top": ([0.25, -0.25, 0.25, 0.5], [0.25, 0.0, 0.25, 0.25], [0.25, -0.5, 0.25, 0.25], [0.25, 0.0, 0.25, 0.0]),
    "bottom": ([0.25, 0.75, 0.25, 0.5], [0.25, 0.75, 0.25, 0.25], [0.25, 1.25, 0.25, 0.25], [0.25, 1.0, 0.25, 0.0]),
}
INSIDE = [0.5, 0.5, 0.125, 0.125]


@pytest.mark.parametrize("edge", list(EDGES))
def test_check_boxes_clips_drops_or_refuses_a_box_past_each_border(edge):
    from agreement.core.validation import AnnotationError, RepairReport, check_boxes

    partly, clipped, outside, collapsed = EDGES[edge]
    boxes = np.array([INSIDE, partly, outside])
    where = [f"sample 's.jpg', field 'f', label {k}" for k in range(3)]
    report = RepairReport()
    out, keep = check_boxes(boxes, where, policy="clip", report=report, raters=["r", "r", "q"])
    np.testing.assert_array_equal(out, np.array([INSIDE, clipped, collapsed]))
    assert keep.all()
    assert (report.clipped_boxes, report.outside_boxes, report.dropped_boxes) == (1, 1, 0)
    assert report.per_rater["r"]["clipped_boxes"] == 1 and report.per_rater["q"]["outside_boxes"] == 1
    assert any("label 1" in m for m in report.examples) and any("label 2" in m for m in report.examples)
    report = RepairReport()
    out, keep = check_boxes(boxes, where, policy="drop", report=report, raters=["r", "r", "q"])
    assert keep.tolist() == [True, False, False] and report.dropped_boxes == 2
    assert report.per_rater == {"r": {"clipped_boxes": 0, "outside_boxes": 0, "dropped_boxes": 1},
                                "q": {"clipped_boxes": 0, "outside_boxes": 0, "dropped_boxes": 1}}
    with pytest.raises(AnnotationError, match=r"sample 's\.jpg', field 'f', label 1: .*extends outside"):
        check_boxes(boxes, where, policy="error")
    with pytest.raises(AnnotationError, match=r"label 2: .*lies entirely outside"):
        check_boxes(boxes[[0, 2]], [where[0], where[2]], policy="error")
    # a box on the border, within the tolerance, is no repair
    on_border = np.array([[0.0, 0.0, 1.0, 1.0], [1e-7 * -1, 0.5, 0.25, 0.25]])
    report = RepairReport()
    out, keep = check_boxes(on_border, where[:2], policy="clip", report=report)
    assert keep.all() and not report and np.array_equal(out, on_border)


@pytest.fixture
def edge_ds(fo, make_dataset):
    """One sample per border: rater a drew a box half past it, rater b the same box inside the image (IoU
    of the two 0.5 as drawn, 1 once a's box is clipped); both also drew one box well inside."""
    samples = []
    for edge, (partly, clipped, _, _) in EDGES.items():
        samples.append(fo.Sample(
            filepath=f"/edges/{edge}.jpg",
            a=fo.Detections(detections=[fo.Detection(label="x", bounding_box=INSIDE),
                                        fo.Detection(label="x", bounding_box=partly)]),
            b=fo.Detections(detections=[fo.Detection(label="x", bounding_box=INSIDE),
                                        fo.Detection(label="x", bounding_box=clipped)])))
    return make_dataset(samples)


@pytest.mark.fiftyone
def test_clip_clips_each_border_and_reports_it(edge_ds):
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.fo.runs import load_agreement_results
    from agreement.fo.storage.reading import read_annotations

    ds = edge_ds
    read = read_annotations(ds, fields=["a", "b"], box_policy="clip")
    by_file = dict(zip(ds.values("id"), ds.values("filepath")))
    for s, sid in enumerate(read.annotations.sample_ids):
        edge = by_file[sid].split("/")[-1][:-4]
        np.testing.assert_array_equal(read.annotations.get(s, "a").boxes, [INSIDE, EDGES[edge][1]])
    r = compute_kalos(ds, "kc", fields=["a", "b"], tau=0.75, box_policy="clip")
    assert (r["clipped_boxes"], r["outside_boxes"], r["dropped_boxes"]) == (4, 0, 0)
    repairs = load_agreement_results(ds, "kc")["detail"]["repairs"]
    assert repairs["per_rater"] == {"a": {"clipped_boxes": 4, "outside_boxes": 0, "dropped_boxes": 0}}
    # clipped, a's box is b's: the same unit on every sample, and every sample agrees perfectly
    assert ds.values("a.detections.kc_unit") == ds.values("b.detections.kc_unit")
    assert r["n_units"] == 8 and ds.values("kc_n_units") == [2] * 4


@pytest.mark.fiftyone
def test_drop_drops_each_border_and_reports_it(edge_ds):
    from agreement.fo.methods.kalos import compute_kalos
    from agreement.fo.runs import load_agreement_results

    ds = edge_ds
    r = compute_kalos(ds, "kd", fields=["a", "b"], tau=0.75, box_policy="drop")
    assert (r["clipped_boxes"], r["outside_boxes"], r["dropped_boxes"]) == (0, 0, 4)
    assert load_agreement_results(ds, "kd")["detail"]["repairs"]["per_rater"] == {
        "a": {"clipped_boxes": 0, "outside_boxes": 0, "dropped_boxes": 4}}
    # the dropped label is untouched and gets no result; the others are computed without it
    units_a, units_b = ds.values("a.detections.kd_unit"), ds.values("b.detections.kd_unit")
    assert all(u[0] is not None and u[1] is None for u in units_a)
    assert all(ua[0] == ub[0] and ub[1] is not None and ub[1] != ub[0] for ua, ub in zip(units_a, units_b))
    assert ds.values("kd_n_units") == [2] * 4
    assert [len(v.detections) for v in ds.values("a")] == [2] * 4  # nothing removed from the dataset


@pytest.mark.fiftyone
@pytest.mark.parametrize("edge", list(EDGES))
def test_error_refuses_each_border_naming_sample_and_field(edge_ds, edge):
    from agreement.core.validation import AnnotationError
    from agreement.fo.methods.kalos import compute_kalos

    ds = edge_ds
    view = ds.select(ds.values("id")[list(EDGES).index(edge)])
    with pytest.raises(AnnotationError) as err:
        compute_kalos(view, "ke", fields=["a", "b"], box_policy="error")
    msg = str(err.value)
    assert f"sample '{edge}.jpg'" in msg and "field 'a'" in msg and "extends outside" in msg
    assert str(EDGES[edge][0]) in msg
    assert ds.list_runs() == [] and "ke_alpha" not in ds.get_field_schema()
