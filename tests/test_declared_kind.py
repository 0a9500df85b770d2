"""A label kind declared in one file gets reading, a method and write-back.

The toy kind, *circles*, is a ``Detection`` whose geometry is a centre and a
radius stored in label attributes (``center = [x, y]``, ``radius``, relative
units). Everything the plugin needs to know about it is declared below, once,
through the public registries:

* the corpus column ``circles`` (:mod:`agreement.core.kinds`): an ``(N, 3)``
  array ``[cx, cy, r]``, the similarity it offers (``"circle_iou"``, the exact
  IoU of two discs) and how a consensus fuses it (weighted mean);
* the FiftyOne side (:mod:`agreement.fo.kinds`): the attributes read, when a
  field carries them, how they become the column and the rows' 2D boxes, and
  the attributes a label written back gets.

The tests read a real FiftyOne dataset in both rater layouts, compute a
consensus with the declared similarity, fuse the circles with the declared
fusion, write the consensus circles back as labels, read them again, and
undo the registration (nothing leaks into other tests). With no edit
elsewhere, the kind gets what a built-in kind gets: the operators' forms offer
its fields as rater fields; ``compute_consensus`` fuses it by its hook and
writes it back as circles; ``compute_geometry_agreement`` runs on it from
Python the FiftyOne way, writes per-label results onto it, and its run lists,
renames, deletes, shows its cards in the panel and exports its report.
"""

from __future__ import annotations

import numpy as np
import pytest

RATERS = ("a", "b", "c")
#: object -> (cx, cy, r) on sample 0, its shift per sample, and the raters who draw it
OBJECTS = {0: ((0.15, 0.30, 0.10), (0.1, 0.0), RATERS), 1: ((0.70, 0.25, 0.08), (0.0, 0.1), ("a", "b"))}


def _truth(obj: int, sample: int) -> tuple[float, float, float]:
    (cx, cy, r), (dx, dy), _ = OBJECTS[obj]
    return cx + dx * sample, cy + dy * sample, r


def circle_iou(data, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    """Exact IoU of two sets of discs: lens area over union area, in [0, 1]."""
    a, b = data.circles[rows_a][:, None, :], data.circles[rows_b][None, :, :]
    d = np.hypot(a[..., 0] - b[..., 0], a[..., 1] - b[..., 1])
    r1, r2 = np.broadcast_arrays(a[..., 2], b[..., 2])
    with np.errstate(invalid="ignore", divide="ignore"):
        c1 = np.clip((d ** 2 + r1 ** 2 - r2 ** 2) / (2 * d * r1), -1, 1)
        c2 = np.clip((d ** 2 + r2 ** 2 - r1 ** 2) / (2 * d * r2), -1, 1)
        k = np.sqrt(np.clip((-d + r1 + r2) * (d + r1 - r2) * (d - r1 + r2) * (d + r1 + r2), 0, None))
        lens = r1 ** 2 * np.arccos(c1) + r2 ** 2 * np.arccos(c2) - 0.5 * k
    inter = np.where(d >= r1 + r2, 0.0, np.where(d <= np.abs(r1 - r2), np.pi * np.minimum(r1, r2) ** 2, lens))
    return inter / (np.pi * r1 ** 2 + np.pi * r2 ** 2 - inter)


#: Every call of the toy fusion: ``(row weights, fused circles)``, so that a test sees the hook was used.
FUSED: list[tuple[np.ndarray, np.ndarray]] = []


def fuse_circles(circles: np.ndarray, units, wt: np.ndarray) -> np.ndarray:
    """The weighted mean circle of every unit."""
    U = len(units.unit_sample)
    rows = np.flatnonzero(units.row_unit >= 0)
    total = np.zeros((U, 3))
    weight = np.zeros(U)
    np.add.at(total, units.row_unit[rows], circles[rows] * wt[rows, None])
    np.add.at(weight, units.row_unit[rows], wt[rows])
    fused = total / weight[:, None]
    FUSED.append((wt, fused))
    return fused


def _circle_boxes(columns: dict, n: int) -> np.ndarray:
    c = columns["circles"]
    return np.stack([c[:, 0] - c[:, 2], c[:, 1] - c[:, 2], 2 * c[:, 2], 2 * c[:, 2]], axis=1).reshape(n, 4)


def _read_circles(extra: dict, where, n: int) -> dict:
    from agreement.core.validation import AnnotationError

    out = np.zeros((n, 3))
    for i, (c, r) in enumerate(zip(extra["center"], extra["radius"])):
        if c is None or r is None or len(c) != 2 or not r > 0:
            raise AnnotationError(f"{where[i]}: a circle needs a 'center' [x, y] and a 'radius' > 0")
        out[i] = [c[0], c[1], r]
    return {"circles": out}


def _circle_column():
    from agreement.core.kinds import ColumnKind, ConsensusSpec

    return ColumnKind(
        "circles", container="array", trailing=(3,), similarities={"circle_iou": circle_iou}, fusion=fuse_circles,
        consensus=ConsensusSpec(similarity="circle_iou"),
        to_relative=lambda c, wh: c / np.column_stack([wh, wh[:, :1]]),
        has_geometry=lambda c: np.ones(len(c), dtype=bool), description="(N, 3) [cx, cy, r] of discs")


@pytest.fixture
def circles_column():
    """Only the corpus column of the toy kind (no FiftyOne), declared for the test."""
    from agreement.core.kinds import register_column, unregister_column

    register_column(_circle_column())
    try:
        yield
    finally:
        unregister_column("circles")


def test_the_corpus_checks_orders_subsets_joins_and_converts_a_declared_column(circles_column):
    from agreement.core.data import AnnotationSet, MultiRaterAnnotations
    from agreement.core.kinds import ColumnKind, register_column

    # rater b first: the corpus sorts the rows by (sample, rater), and the declared column with them
    circles = {"b": np.array([[310.0, 200.0, 50.0]]), "a": np.array([[300.0, 200.0, 50.0], [100.0, 100.0, 20.0]])}
    sets = [{r: AnnotationSet(np.column_stack([c[:, :2] - c[:, 2:], 2 * c[:, 2:], 2 * c[:, 2:]]),
                              ["x"] * len(c), [None] * len(c), circles=c) for r, c in circles.items()},
            {"a": AnnotationSet.empty(), "b": None}]
    data = MultiRaterAnnotations.from_sets(["s0", "s1"], ["b", "a"], sets, image_sizes=[[1000, 500]] * 2,
                                           coordinates="pixels")
    assert data.raters == ("a", "b") and data.circles.shape == (3, 3)
    np.testing.assert_allclose(data.circles[0], [0.3, 0.4, 0.05])  # divided by (W, H, W)
    np.testing.assert_allclose(data.get(0, "b").circles, [[0.31, 0.4, 0.05]])
    assert data.get(1, "a").circles.shape == (0, 3) and data.get(1, "b") is None
    two = MultiRaterAnnotations.concat([data, data.select_samples([0])])
    assert two.circles.shape == (6, 3) and two.select_samples([2]).circles.shape == (3, 3)
    with pytest.raises(ValueError, match=r"circles must have shape \(3, 3\)"):
        MultiRaterAnnotations(data.sample_ids, data.raters, data.assigned, data.boxes, data.labels, data.label_ids,
                              data.sample_index, data.rater_index, circles=data.circles[:, :2])
    with pytest.raises(ValueError, match="declared already"):
        register_column(ColumnKind("circles"))
    with pytest.raises(ValueError, match="attribute of every corpus"):
        register_column(ColumnKind("boxes"))


def test_an_undeclared_column_is_refused_naming_the_declared_ones():
    from agreement.core.data import AnnotationSet

    with pytest.raises(ValueError, match="unknown geometry column 'circles'.*register_column"):
        AnnotationSet([[0, 0, 1, 1]], ["x"], [None], geometry={"circles": [[0.5, 0.5, 0.5]]})
    with pytest.raises(TypeError, match="unexpected keyword argument 'circles'"):
        AnnotationSet([[0, 0, 1, 1]], ["x"], [None], circles=[[0.5, 0.5, 0.5]])


def _circle_corpus():
    """The toy circles of :data:`OBJECTS` on six samples as a corpus (no FiftyOne), each rater's jittered."""
    from agreement.core.data import AnnotationSet, MultiRaterAnnotations

    sets = []
    for s in range(6):
        per = {}
        for k, r in enumerate(RATERS):
            jitter = 0.004 * ((k + s) % 3 - 1)
            c = np.array([[cx + jitter, cy - jitter, rr + jitter / 2] for o, (_, _, who) in OBJECTS.items()
                          if r in who for cx, cy, rr in [_truth(o, s)]])
            labels = [f"c{o}" for o, (_, _, who) in OBJECTS.items() if r in who]
            per[r] = AnnotationSet(_circle_boxes({"circles": c}, len(c)), labels, [None] * len(c), circles=c)
        sets.append(per)
    return MultiRaterAnnotations.from_sets([f"s{s}" for s in range(6)], list(RATERS), sets)


def test_a_consensus_fuses_a_declared_column_by_its_declared_fusion(circles_column):
    """The consensus picks the declared kind (``geometry="auto"``), fuses its column with the declared hook and
    the EM's member weights (:attr:`ConsensusResult.fused`), keeps a drawn member's under majority voting (as for
    every kind), carries it into :meth:`ConsensusResult.to_annotations`, and fuses only the boxes when asked to."""
    from agreement.core.kinds import column_kind
    from agreement.methods.consensus import consensus
    from agreement.methods.consensus.units import label_type

    data = _circle_corpus()
    assert label_type(data) == "circles" and label_type(data, geometry="boxes") == "boxes"
    FUSED.clear()
    res = consensus(data, similarity="circle_iou", tau=0.5)
    assert res.method == "em" and res.geometry == "circles" and res.fused.keys() == {"circles"}
    # fused by the declared hook, once, with the EM's weights (> 0 on the rows in a unit; not all alike: the
    # raters' precisions and Student-t weights)
    ((wt, fused),) = FUSED
    assert res.fused["circles"] is fused and ((wt > 0) == (res.row_unit >= 0)).all()
    assert len(np.unique(wt[wt > 0])) > 1
    assert res.columns.keys() == {"circles"} and res.fused["circles"].shape == (res.n_units, 3)
    kept = np.flatnonzero(res.is_consensus)
    assert len(kept) == 12
    for u in kept:  # a weighted mean of the members, each within the jitter (0.004) of the truth
        np.testing.assert_allclose(res.fused["circles"][u], _truth(int(res.label[u][1:]), int(res.unit_sample[u])),
                                   atol=0.004)
    # the hook, not the boxes: the fused radius is not half the fused box's width
    assert not np.allclose(res.fused["circles"][kept, 2], res.boxes[kept, 2] / 2, atol=1e-12, rtol=0)
    again = res.to_annotations()
    np.testing.assert_array_equal(again.circles, res.fused["circles"][kept])

    vote = consensus(data, method="majority", similarity="circle_iou", tau=0.5)
    chosen = np.array([[r for r in vote.members(u) if np.array_equal(data.boxes[r], vote.boxes[u])][0]
                       for u in range(vote.n_units)])
    np.testing.assert_array_equal(vote.fused["circles"], data.circles[chosen])  # a drawn member, as drawn
    boxes_only = consensus(data, geometry="boxes", similarity="circle_iou", tau=0.5)
    assert boxes_only.geometry == "boxes" and boxes_only.fused == {} and boxes_only.columns == {}
    np.testing.assert_array_equal(boxes_only.boxes, res.boxes)  # the same units and box fusion
    with pytest.raises(ValueError, match="method='wbf' fuses boxes; these labels are circles"):
        consensus(data, method="wbf", tau=0.5)
    assert callable(column_kind("circles").fusion)


@pytest.fixture
def circles_kind(fo):
    """The toy kind, declared for the test and undeclared after it."""
    import fiftyone.core.labels as fol

    from agreement.core.kinds import register_column, unregister_column
    from agreement.fo.kinds import GeometryVariant, declared_path, register_variant, unregister_variant

    register_column(_circle_column())
    register_variant(GeometryVariant(
        "circles", fol.Detections, ("center", "radius"),
        applies=lambda samples, fields, options: all(declared_path(samples, f"{f}.detections.radius")
                                                     for f in fields),
        read=_read_circles, boxes=_circle_boxes,
        document=lambda columns, row: {"center": columns["circles"][row, :2].tolist(),
                                       "radius": float(columns["circles"][row, 2])}))
    try:
        yield
    finally:
        unregister_variant("circles")
        unregister_column("circles")


def _circle(fo, obj: int, rater: str, sample: int):
    cx, cy, r = _truth(obj, sample)
    jitter = 0.004 * ((RATERS.index(rater) + sample) % 3 - 1)
    return fo.Detection(label=f"c{obj}", center=[cx + jitter, cy - jitter], radius=r + jitter / 2,
                        annotator=rater)


def _dataset(fo, make_dataset, layout: str):
    samples = []
    for s in range(6):
        drawn = {r: [_circle(fo, o, r, s) for o, (_, _, who) in OBJECTS.items() if r in who] for r in RATERS}
        sample = fo.Sample(filepath=f"/circles/{s}.jpg")
        if layout == "fields":
            for r in RATERS:
                sample[r] = fo.Detections(detections=drawn[r])
        else:
            sample["ann"] = fo.Detections(detections=[d for r in RATERS for d in drawn[r]])
        samples.append(sample)
    params = dict(fields=list(RATERS)) if layout == "fields" else dict(field="ann", assume_crossed=True)
    return make_dataset(samples), params


@pytest.mark.fiftyone
@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_a_kind_declared_in_one_file_is_read_compared_fused_and_written_back(fo, make_dataset, circles_kind,
                                                                             layout):
    import fiftyone.core.labels as fol

    from agreement.core.kinds import is_column
    from agreement.fo.kinds import label_documents
    from agreement.fo.storage.reading import read_annotations
    from agreement.fo.storage.writing import write_label_lists
    from agreement.geometry.similarity import check_similarity, similarity_matrix, supported_similarities
    from agreement.methods.consensus import consensus
    from agreement.methods.consensus.fusion import fuse_declared
    from agreement.methods.consensus.units import units_from_labels

    dataset, params = _dataset(fo, make_dataset, layout)

    # reading: both layouts give the declared column, and 2D boxes from it
    data = read_annotations(dataset, **params).annotations
    assert data.raters == RATERS and len(data) == 6 * 5
    assert data.circles.shape == (30, 3) and data.geometry.keys() == {"circles"}
    np.testing.assert_allclose(data.boxes[:, 2], 2 * data.circles[:, 2])
    assert data.get(0, "a").circles.shape == (2, 3)  # the sets carry it too
    assert data.select_samples([1, 2]).circles.shape == (10, 3)

    # the declared similarity, through the library's own entry points
    check_similarity("circle_iou", data)
    assert "circle_iou" in supported_similarities(data)
    rows = np.arange(data.rows(0, 0).start, data.rows(0, 2).stop)
    sim = similarity_matrix("circle_iou", data, rows, rows)
    np.testing.assert_allclose(np.diag(sim), 1.0)
    assert ((sim >= 0) & (sim <= 1)).all() and sim[0, 1] == 0.0  # the two objects do not overlap

    # one method: a consensus whose correspondence uses the declared similarity
    res = consensus(data, method="majority", similarity="circle_iou", tau=0.5)
    assert res.params["similarity"] == "circle_iou"
    kept = np.flatnonzero(res.is_consensus)
    assert len(kept) == 12  # both objects on every sample (object 1: 2 of 3 raters, quorum 0.5)
    units = units_from_labels(res.row_unit, data.sample_index, n_units=len(res.unit_sample))
    fused = fuse_declared("circles", data, units, np.ones(len(data)))
    labels = [res.classes[c] for c in res.label_code]
    for u in kept:
        np.testing.assert_allclose(fused[u], _truth(int(labels[u][1:]), int(res.unit_sample[u])), atol=0.005)

    # write-back: the consensus circles as labels of the same kind, read again
    boxes = _circle_boxes({"circles": fused}, len(fused))
    docs = label_documents(fol.Detections, boxes, labels, {"circles": fused}, rows=kept)
    sample_ids = [str(v) for v in data.sample_ids]
    per_sample = {sid: [d for u, d in zip(kept, docs) if res.unit_sample[u] == s] for s, sid in enumerate(sample_ids)}
    for name in ("consensus", "consensus_copy"):
        assert write_label_lists(dataset, name, fol.Detections, per_sample) == 12
    radii = sorted(r for per in dataset.values("consensus.detections.radius") for r in per)
    np.testing.assert_allclose(radii, [0.08] * 6 + [0.10] * 6, atol=0.005)
    again = read_annotations(dataset, fields=["consensus", "consensus_copy"]).annotations
    np.testing.assert_allclose(again.circles, np.concatenate([fused[kept].reshape(6, 2, 3)] * 2, axis=1).reshape(-1, 3))

    # the declaration is undone by the fixture: the column is known only while declared
    assert is_column("circles")


def test_the_toy_kind_does_not_leak():
    from agreement.core.kinds import is_column
    from agreement.geometry.similarity import declared_similarities

    assert not is_column("circles") and "circle_iou" not in declared_similarities()


@pytest.mark.fiftyone
def test_a_declared_kind_runs_through_an_operator_and_its_run_lifecycle(fo, make_dataset, circles_kind):
    """The operators read the kind with no edit of theirs: a geometry agreement run on the circles (their
    boxes, from the declaration), per-sample fields and per-label results written back onto the circles,
    then the run listed and deleted as any other."""
    import fiftyone.operators as foo

    from agreement.fo.runs import delete_agreement_run

    dataset, params = _dataset(fo, make_dataset, "fields")
    before = set(dataset.get_field_schema(flat=True))
    result = foo.execute_operator("@iaa/agreement/compute_geometry_agreement",
                                  ctx=dict(view=dataset.view(), params=dict(params, key="circ"))).result
    assert result["sigma"] is not None and 0.5 < result["sigma"] <= 1
    assert all(v is not None for v in dataset.values("circ_distance"))
    written = [v for per in dataset.values("a.detections.circ_distance") for v in per]
    assert written and all(v is None or 0 <= v <= 0.5 for v in written)
    assert "circ" in dataset.list_runs()
    delete_agreement_run(dataset, "circ")
    assert set(dataset.get_field_schema(flat=True)) == before


@pytest.mark.fiftyone
@pytest.mark.parametrize("layout", ["fields", "attribute"])
def test_the_consensus_operator_fuses_a_declared_kind_and_writes_it_back_as_that_kind(fo, make_dataset,
                                                                                     circles_kind, layout):
    """``compute_consensus`` on rater fields of the toy kind: the units matched by its declared similarity (the
    column's :class:`~agreement.core.kinds.ConsensusSpec`), its circles fused by its declared hook, written
    back as circles (the variant's ``document``) with the box of the fused circle (its ``boxes``), and read
    again as the kind; the rater labels get their consensus ids."""
    import fiftyone.operators as foo

    from agreement.fo.panel.data import run_panel_data
    from agreement.fo.storage.reading import read_annotations

    dataset, params = _dataset(fo, make_dataset, layout)
    before = set(dataset.get_field_schema(flat=True))
    FUSED.clear()
    cons = foo.get_operator("@iaa/agreement/compute_consensus")(dataset, key="cc", **params)
    ((_, fused),) = FUSED  # the declared hook fused the circles, and they are what is written
    assert cons.summary["geometry"] == "circles" and cons.summary["n_consensus"] == 12
    assert cons.summary["similarity"] == "circle_iou"
    written = [d for per in dataset.values("cc_consensus") for d in per.detections]
    assert len(written) == 12 and all(d["cc_review"] is False for d in written)
    for sample, per in zip(range(6), dataset.values("cc_consensus"), strict=True):
        for d in per.detections:
            cx, cy, r = _truth(int(d.label[1:]), sample)
            np.testing.assert_allclose([*d.center, d.radius], [cx, cy, r], atol=0.004)
            np.testing.assert_allclose(d.bounding_box, [d.center[0] - d.radius, d.center[1] - d.radius,
                                                        2 * d.radius, 2 * d.radius], atol=1e-12)
            assert d.confidence > 0.5 and len(d["cc_members"]) in (2, 3)
            assert (fused == [*d.center, d.radius]).all(axis=1).sum() == 1
    dataset.clone_sample_field("cc_consensus", "cc_copy")
    again = read_annotations(dataset, fields=["cc_consensus", "cc_copy"]).annotations  # read as the kind again
    assert again.geometry.keys() == {"circles"} and again.circles.shape == (24, 3)
    np.testing.assert_allclose(np.sort(again.circles[:, 2]), np.sort([d.radius for d in written] * 2))
    rater_field = "a" if layout == "fields" else "ann"
    ids = {d.id for d in written}
    linked = [v for per in dataset.values(f"{rater_field}.detections.cc_consensus_id") for v in per]
    assert linked and set(linked) <= ids
    cards = {c["label"]: c for c in run_panel_data(dataset, "cc")["consensus"]["cards"]}
    assert 0.5 < cards["mean confidence of the consensus labels"]["value"] <= 1
    dataset.delete_sample_field("cc_copy")
    dataset.delete_run("cc")
    assert set(dataset.get_field_schema(flat=True)) == before


@pytest.mark.fiftyone
def test_a_declared_kind_gets_what_a_built_in_kind_gets(fo, make_dataset, circles_kind, tmp_path):
    """The toy kind, declared in this file only, gets what a built-in kind gets: the operator's form offers its
    fields as rater fields, the Python call the FiftyOne way returns the run's typed results, the run lists,
    renames and deletes, the panel shows its cards, and the report is written."""
    import json

    import fiftyone.operators as foo
    from fiftyone.operators.executor import ExecutionContext

    from agreement.fo.panel.data import run_panel_data
    from agreement.fo.reports import export_agreement_report
    from agreement.fo.runs import list_agreement_runs, rename_agreement_run

    dataset, params = _dataset(fo, make_dataset, "fields")
    before = set(dataset.get_field_schema(flat=True))
    op = foo.get_operator("@iaa/agreement/compute_geometry_agreement")
    ctx = ExecutionContext(request_params={"dataset_name": dataset.name, "view": dataset.view()._serialize(),
                                           "params": dict(params)})
    form = op.resolve_input(ctx).type.properties
    assert {c.value for c in form["fields"].view.choices} == set(RATERS)
    consensus_form = foo.get_operator("@iaa/agreement/compute_consensus").resolve_input(ctx).type.properties
    assert {c.value for c in consensus_form["fields"].view.choices} == set(RATERS)
    assert {"auto", "em", "majority"} <= set(consensus_form["method"].type.values)  # an instance kind's methods
    assert "mace" not in consensus_form["method"].type.values

    res = op(dataset, key="circ", **params)  # the Python call, the FiftyOne way
    assert res.key == "circ" and 0.5 < res.summary["sigma"] <= 1
    assert "circ" in list_agreement_runs(dataset) and "circ" in dataset.list_runs()

    cards = run_panel_data(dataset, "circ")["cards"]
    assert cards and any(c.get("text") not in (None, "undefined") for c in cards)

    files = export_agreement_report(dataset, tmp_path, keys="circ")["runs"]["circ"]
    assert (tmp_path / "circ" / "report.html").exists() and (tmp_path / "circ" / "run.json").exists()
    assert "circ" in (tmp_path / "circ" / "report.html").read_text(encoding="utf-8")
    run = json.loads((tmp_path / "circ" / "run.json").read_text(encoding="utf-8"))
    assert run["run"]["key"] == "circ" and run["results"]["summary"]["sigma"] == pytest.approx(res.summary["sigma"])
    assert files["html"].endswith("report.html")

    rename_agreement_run(dataset, "circ", "circles2")
    assert "circles2" in dataset.list_runs() and "circ" not in dataset.list_runs()
    assert all(v is not None for v in dataset.values("circles2_distance"))
    dataset.delete_run("circles2")  # FiftyOne's own command takes the run's fields along
    assert set(dataset.get_field_schema(flat=True)) == before and not list_agreement_runs(dataset)


@pytest.mark.fiftyone
def test_the_built_in_label_types_declare_their_write_back(fo):
    """A consensus label of each built-in geometry, as the declarations write it: the documents a
    consensus run stores (agreement.fo.methods.consensus) for polygons, keypoints, cuboids and masks."""
    import fiftyone.core.labels as fol

    from agreement.fo.kinds import label_documents

    box = np.array([[0.1, 0.2, 0.3, 0.4]])
    ring = np.array([[0.1, 0.2], [0.4, 0.2], [0.4, 0.6]])
    # a polyline's or keypoint's box is that of its points: it has no box attribute (LabelType.box_attr)
    (poly,) = label_documents(fol.Polylines, box, ["p"], {"polygons": [[ring]]})
    assert poly == {"label": "p", "points": [ring.tolist()], "closed": True, "filled": True}
    (kp,) = label_documents(fol.Keypoints, box, ["k"], {"keypoints": np.array([[[0.1, 0.2], [np.nan, np.nan]]])})
    assert kp.keys() == {"label", "points"} and kp["points"][0] == [0.1, 0.2] and np.isnan(kp["points"][1]).all()
    cuboid = np.arange(9.0)[None]
    (c,) = label_documents(fol.Detections, np.full((1, 4), np.nan), ["c"], {"cuboids": cuboid})
    assert c == {"label": "c", "bounding_box": [], "location": [0.0, 1.0, 2.0], "dimensions": [3.0, 4.0, 5.0],
                 "rotation": [6.0, 7.0, 8.0]}
    mask = np.ones((2, 3), bool)
    (m,) = label_documents(fol.Detections, box, ["m"], {"masks": [mask]})
    assert m["bounding_box"] == [0.1, 0.2, 0.3, 0.4] and m["mask"].shape == (2, 3)
    (b,) = label_documents(fol.Detections, box, ["b"], {})
    assert b == {"label": "b", "bounding_box": [0.1, 0.2, 0.3, 0.4]}


def test_the_consensus_asks_the_declarations_for_what_differs_per_geometry(circles_column):
    """The consensus' geometries, their fusion, default similarity and unit keys come from the column
    declarations (agreement.core.kinds.ConsensusSpec); its shared modules test no geometry by name."""
    import ast
    from pathlib import Path

    from agreement.core.kinds import BOX_CONSENSUS, column_kinds, consensus_spec
    from agreement.methods.consensus.units import GEOMETRIES, fused_columns, geometry_fusion

    assert GEOMETRIES == ("boxes", *(k.name for k in column_kinds() if k.per == "row" and isinstance(k.fusion, str)))
    assert {geometry_fusion(g) for g in GEOMETRIES} == {"boxes", "pixels", "keypoints", "cuboids"}
    assert consensus_spec("cuboids").similarity == "cuboid_iou" and consensus_spec("cuboids").keys
    # a kind fused by its own hook (the toy circles) is no built-in consensus geometry: its boxes are fused
    assert "circles" not in {k.name for k in fused_columns()} and geometry_fusion("circles") == "boxes"
    assert consensus_spec("circles").similarity == "circle_iou" and consensus_spec("boxes") is BOX_CONSENSUS
    from agreement.methods.consensus.fusion import fuses_boxes
    from agreement.methods.consensus.units import consensus_columns, fusion_hook

    # ... but a consensus geometry of its own, fused beside its boxes by its hook
    assert "circles" in {k.name for k in consensus_columns()} and fusion_hook("circles") is not None
    assert fuses_boxes("circles") and fuses_boxes("masks") and not fuses_boxes("keypoints")
    names = {k.name for k in column_kinds()} | {"boxes"}
    root = Path(__file__).resolve().parents[1] / "agreement"
    modules = [f"methods/consensus/{m}.py" for m in ("api", "units", "fusion", "scale", "report", "em", "majority",
                                                    "pixels")]
    for module in [*modules, "fo/methods/consensus.py"]:
        tree = ast.parse((root / module).read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            named = isinstance(node.left, ast.Name) and node.left.id in ("kind", "ltype", "container")
            if not named and not (isinstance(node.left, ast.Attribute) and node.left.attr == "geometry"):
                continue  # the kind of the data, or a result's geometry (not the user's geometry= option)
            consts = [c for c in node.comparators if isinstance(c, (ast.Constant, ast.Tuple))]
            values = {c.value for c in consts if isinstance(c, ast.Constant)} | {
                e.value for c in consts if isinstance(c, ast.Tuple) for e in c.elts if isinstance(e, ast.Constant)}
            assert not values & (names | {"Keypoints"}), f"{module}:{node.lineno} tests the geometry by name"


@pytest.mark.fiftyone
def test_the_toy_kind_is_undone_after_the_fiftyone_tests(fo):
    """Run after the tests that declare the whole kind (file order): no column, similarity or FiftyOne
    variant of it is left, and a consensus of plain boxes has no declared column."""
    import fiftyone.core.labels as fol

    from agreement.core.kinds import is_column
    from agreement.fo.kinds import variants_of
    from agreement.geometry.similarity import declared_similarities
    from agreement.methods.consensus.units import consensus_columns

    assert not is_column("circles") and "circle_iou" not in declared_similarities()
    assert "circles" not in {v.name for v in variants_of(fol.Detections)}
    assert "circles" not in {k.name for k in consensus_columns()}
