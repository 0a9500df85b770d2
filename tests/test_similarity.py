"""Tests of agreement.geometry.similarity (the registry) and of masks/keypoints in agreement.core.data.

Each similarity is checked against the geometry function it wraps, for
range, symmetry and identity, and for its errors on missing geometry. The
LVIS test compares polygon IoU and GIoU with the KαLOS reference package.
"""

from __future__ import annotations

import doctest
import gc
import json
import logging

import numpy as np
import pytest

import agreement.geometry.similarity as similarity_module
from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.core.validation import AnnotationError
from agreement.geometry.boxes import giou_to_similarity, pairwise_centroid_closeness, pairwise_giou, pairwise_iou
from agreement.geometry.keypoints import pairwise_oks
from agreement.geometry.masks import pairwise_mask_iou, pairwise_polygon_mask_iou
from agreement.geometry.polygons import pairwise_polygon_giou, pairwise_polygon_iou, polygon_boxes
from agreement.geometry.similarity import SIMILARITIES, check_similarity, distance_matrix, similarity_matrix

RATERS = ("r1", "r2", "r3")


def star(rng, centre, radius):
    k = int(rng.integers(4, 10))
    t = np.sort(rng.random(k)) * 2 * np.pi
    rr = radius * (0.6 + 0.4 * rng.random(k))
    return [np.c_[centre[0] + rr * np.cos(t), centre[1] + rr * np.sin(t)]]


def make_set(rng, objects, *, polygons=True, masks=True, keypoints=True, jitter=0.01):
    """One rater's set: noisy copies of ``objects`` (centre, radius, label)."""
    polys, labels = [], []
    for (cx, cy, r, label) in objects:
        c = np.array([cx, cy]) + rng.normal(scale=jitter, size=2)
        polys.append(star(rng, c, r))
        labels.append(label)
    boxes = polygon_boxes(polys) if polys else np.zeros((0, 4))
    n = len(polys)
    m = None
    if masks:
        m = [rng.random((int(rng.integers(3, 12)), int(rng.integers(3, 12)))) < 0.7 for _ in range(n)]
    kps = None
    if keypoints:
        kps = boxes[:, None, :2] + boxes[:, None, 2:] * rng.random((n, 17, 2))
        kps[rng.random((n, 17)) < 0.2] = np.nan
        kps[:, 0] = boxes[:, None, :2][:, 0] + 0.5 * boxes[:, 2:]  # at least one labelled point
    return AnnotationSet(boxes, labels, [f"id{rng.integers(1 << 30)}" for _ in range(n)],
                         polys if polygons else None, m, kps)


def corpus(seed=0, sizes=((640, 480), (300, 500)), **kwargs) -> MultiRaterAnnotations:
    rng = np.random.default_rng(seed)
    scenes = [
        [(0.3, 0.3, 0.1, "cat"), (0.6, 0.6, 0.15, "dog"), (0.75, 0.3, 0.08, "cat")],
        [(0.5, 0.5, 0.2, "car"), (0.2, 0.7, 0.1, "person")],
    ]
    sets = []
    for objs in scenes:
        mapping = {r: make_set(rng, objs, **kwargs) for r in RATERS[:2]}
        mapping[RATERS[2]] = make_set(rng, objs[:1], **kwargs)
        sets.append(mapping)
    sets[1][RATERS[2]] = AnnotationSet.empty()  # explicit absence
    return MultiRaterAnnotations.from_sets(["s0", "s1"], RATERS, sets, image_sizes=np.array(sizes, float),
                                           sample_names=["a.jpg", "b.jpg"])


def sample_rows(data, s):
    lo, hi = data.offsets[s * data.num_raters], data.offsets[(s + 1) * data.num_raters]
    return np.arange(lo, hi)


def with_cuboids(d: MultiRaterAnnotations) -> MultiRaterAnnotations:
    """The same corpus with 3D cuboids derived from the 2D boxes (for 'cuboid_iou')."""
    b = d.boxes
    cub = np.c_[b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2, np.zeros(len(b)), b[:, 2], b[:, 3],
                np.full(len(b), 0.5), np.zeros((len(b), 2)), b[:, 0]]
    centres = cub[:, :3] * 10.0  # metres
    lines = [[np.array([[x0, y0, 0.0], [x0 + w, y0, 0.0], [x0 + w, y0 + h, 0.5]]) * 10.0]
             for x0, y0, w, h in b]
    segments = [np.arange(int(x0 * 100), int((x0 + w) * 100) + 1) for x0, _, w, _ in b]
    return MultiRaterAnnotations(d.sample_ids, d.raters, d.assigned, d.boxes, d.labels, d.label_ids,
                                 d.sample_index, d.rater_index, d.image_sizes, d.polygons, d.sample_names,
                                 d.masks, d.keypoints, cub, centres, lines, segments, np.full(d.num_samples, 101))


@pytest.fixture(scope="module")
def data():
    return with_cuboids(corpus())


def test_doctests():
    assert doctest.testmod(similarity_module).failed == 0


def test_registry_names():
    assert SIMILARITIES == (
        "iou", "giou", "centroid", "polygon_iou", "polygon_giou", "mask_iou", "oks", "cuboid_iou",
        "point3d", "polyline3d_f1", "segment_jaccard",
    )


@pytest.mark.parametrize("name", SIMILARITIES)
def test_range_symmetry_identity(data, name):
    check_similarity(name, data)
    for s in range(data.num_samples):
        rows = sample_rows(data, s)
        sim = similarity_matrix(name, data, rows, rows)
        assert sim.shape == (len(rows), len(rows)) and sim.dtype == np.float64
        assert np.all((sim >= 0) & (sim <= 1))
        np.testing.assert_allclose(sim, sim.T, atol=1e-12)
        if name == "polygon_giou":  # identical non-convex polygons: (1 + |A| / |conv A|) / 2
            assert np.all(np.diag(sim) > 0.5)
        else:
            np.testing.assert_allclose(np.diag(sim), 1.0, atol=1e-12)
        np.testing.assert_allclose(distance_matrix(name, data, rows, rows), 1 - sim, atol=1e-15)
        a, b = rows[:2], rows[2:]
        np.testing.assert_allclose(similarity_matrix(name, data, a, b), sim[:2, 2:], atol=1e-12)


def test_each_similarity_equals_its_geometry_function(data):
    rows = sample_rows(data, 0)
    ra, rb = rows[:3], rows[3:]
    A, B = data.boxes[ra], data.boxes[rb]
    size = tuple(data.image_sizes[0])
    pa, pb = [data.polygons[i] for i in ra], [data.polygons[i] for i in rb]
    expected = {
        "iou": pairwise_iou(A, B),
        "giou": giou_to_similarity(pairwise_giou(A, B)),
        "centroid": pairwise_centroid_closeness(A, B, image_size=size),
        "polygon_iou": pairwise_polygon_iou(pa, pb),
        "polygon_giou": giou_to_similarity(pairwise_polygon_giou(pa, pb)),
        "mask_iou": pairwise_mask_iou([data.masks[i] for i in ra], A, [data.masks[i] for i in rb], B, size),
        "oks": pairwise_oks(data.keypoints[ra], data.keypoints[rb], A, B, image_size=size),
    }
    for name, value in expected.items():
        np.testing.assert_allclose(similarity_matrix(name, data, ra, rb), value, atol=1e-12, err_msg=name)
    # Second call (cached geometry and masks) gives the same numbers.
    for name in ("polygon_iou", "mask_iou"):
        np.testing.assert_allclose(similarity_matrix(name, data, ra, rb), expected[name], atol=1e-12)


def test_mask_iou_rasterises_polygons_when_there_are_no_masks():
    d = corpus(masks=False, sizes=((1000, 1000), (1200, 900)))
    rows = sample_rows(d, 0)
    sim = similarity_matrix("mask_iou", d, rows, rows)
    polys = [d.polygons[i] for i in rows]
    np.testing.assert_allclose(sim, pairwise_polygon_mask_iou(polys, polys, (1000, 1000)), atol=1e-12)
    assert np.abs(sim - pairwise_polygon_iou(polys, polys)).max() < 0.03
    # Unknown image size: rasterised on the default square.
    unsized = corpus(masks=False, sizes=((np.nan, np.nan), (np.nan, np.nan)))
    sim = similarity_matrix("mask_iou", unsized, rows, rows)
    np.testing.assert_allclose(sim, pairwise_polygon_mask_iou(polys, polys, similarity_module.DEFAULT_RASTER_SIZE), atol=1e-12)


def test_unknown_image_size_fallbacks():
    d = corpus(sizes=((np.nan, np.nan), (np.nan, np.nan)))
    rows = sample_rows(d, 0)
    np.testing.assert_allclose(
        similarity_matrix("centroid", d, rows, rows), pairwise_centroid_closeness(d.boxes[rows], d.boxes[rows])
    )
    np.testing.assert_allclose(
        similarity_matrix("oks", d, rows, rows), pairwise_oks(d.keypoints[rows], d.keypoints[rows], d.boxes[rows], d.boxes[rows])
    )
    with pytest.raises(ValueError, match="image size"):
        check_similarity("mask_iou", d)
    with pytest.raises(ValueError, match="image size"):
        similarity_matrix("mask_iou", d, rows, rows)


def test_cross_sample_rows_b_and_empty_rows(data):
    r0, r1 = sample_rows(data, 0), sample_rows(data, 1)
    for name in SIMILARITIES:
        sim = similarity_matrix(name, data, r0, r1)
        assert sim.shape == (len(r0), len(r1)) and np.all((sim >= 0) & (sim <= 1))
        assert similarity_matrix(name, data, r0, r0[:0]).shape == (len(r0), 0)
        assert similarity_matrix(name, data, r0[:0], r1).shape == (0, len(r1))
    with pytest.raises(ValueError, match="one sample"):
        similarity_matrix("iou", data, np.r_[r0[:1], r1[:1]], r0)
    with pytest.raises(ValueError, match="outside"):
        similarity_matrix("iou", data, np.array([len(data)]), r0)
    with pytest.raises(ValueError, match="integer"):
        similarity_matrix("iou", data, np.ones(len(data), bool), r0)


def test_unknown_name(data):
    rows = sample_rows(data, 0)
    for call in (lambda: similarity_matrix("dice", data, rows, rows), lambda: check_similarity("dice", data)):
        with pytest.raises(ValueError, match="unknown similarity 'dice'; choose one of iou, giou"):
            call()


def test_missing_geometry_is_named():
    boxes_only = corpus(polygons=False, masks=False, keypoints=False)
    rows = sample_rows(boxes_only, 0)
    for name in ("polygon_iou", "polygon_giou", "oks"):
        with pytest.raises(ValueError, match="has none|have none"):
            check_similarity(name, boxes_only)
        with pytest.raises(ValueError, match="none"):
            similarity_matrix(name, boxes_only, rows, rows)
    with pytest.raises(ValueError, match="mask or a polygon, which 11 annotation"):
        check_similarity("mask_iou", boxes_only)
    assert check_similarity("iou", boxes_only) == {"similarity": "iou", "repaired_polygons": 0}
    # Some annotations without polygons: the first are named with sample, rater and label.
    rng = np.random.default_rng(5)
    with_poly = make_set(rng, [(0.3, 0.3, 0.1, "cat")], masks=False, keypoints=False)
    without = make_set(rng, [(0.3, 0.3, 0.1, "cat")], polygons=False, masks=False, keypoints=False)
    mixed = MultiRaterAnnotations.from_sets(["s0"], ["r1", "r2"], [{"r1": with_poly, "r2": without}],
                                            sample_names=["x.png"])
    msg = rf"needs polygons, which 1 annotation\(s\) lack: sample 'x.png', rater 'r2', label '{without.ids[0]}'"
    with pytest.raises(ValueError, match=msg):
        check_similarity("polygon_iou", mixed)
    with pytest.raises(ValueError, match=msg):
        similarity_matrix("polygon_iou", mixed, np.array([0]), np.array([1]))
    np.testing.assert_allclose(similarity_matrix("polygon_iou", mixed, np.array([0]), np.array([0])), 1.0)


def test_polygon_repairs_are_reported_and_unrepairable_ones_named():
    bowtie = [np.array([[0.1, 0.1], [0.5, 0.5], [0.5, 0.1], [0.1, 0.5]])]
    square = [np.array([[0.1, 0.1], [0.5, 0.1], [0.5, 0.5], [0.1, 0.5]])]
    box = [[0.1, 0.1, 0.4, 0.4]]
    sets = [{"r1": AnnotationSet(box, ["a"], ["b1"], [bowtie]), "r2": AnnotationSet(box, ["a"], ["b2"], [square])}]
    d = MultiRaterAnnotations.from_sets(["s"], ["r1", "r2"], sets, image_sizes=np.array([[100.0, 100.0]]))
    assert check_similarity("polygon_iou", d) == {"similarity": "polygon_iou", "repaired_polygons": 1}
    assert similarity_matrix("polygon_iou", d, np.array([0]), np.array([1]))[0, 0] == pytest.approx(0.5)
    assert check_similarity("mask_iou", d)["repaired_polygons"] == 1
    line = [np.array([[0.1, 0.1], [0.3, 0.3], [0.5, 0.5]])]
    sets = [{"r1": AnnotationSet(box, ["a"], ["bad"], [line]), "r2": AnnotationSet(box, ["a"], ["b2"], [square])}]
    d = MultiRaterAnnotations.from_sets(["s"], ["r1", "r2"], sets, sample_names=["img.jpg"])
    with pytest.raises(AnnotationError, match="sample 'img.jpg', rater 'r1', label 'bad': the polygon encloses no area"):
        check_similarity("polygon_giou", d)
    with pytest.raises(AnnotationError, match="label 'bad'"):
        similarity_matrix("polygon_iou", d, np.array([1]), np.array([1]))


def test_oks_errors_and_sigmas():
    d = corpus()
    kps = d.keypoints.copy()
    kps[2] = np.nan
    bad = MultiRaterAnnotations(
        d.sample_ids, d.raters, d.assigned, d.boxes, d.labels, d.label_ids, d.sample_index, d.rater_index,
        d.image_sizes, d.polygons, d.sample_names, d.masks, kps,
    )
    with pytest.raises(ValueError, match=r"needs at least one labelled keypoint .*1 annotation\(s\) lack: sample 'a.jpg'"):
        check_similarity("oks", bad)
    rows = sample_rows(bad, 0)
    with pytest.raises(ValueError, match="labelled keypoint"):
        similarity_matrix("oks", bad, rows, rows)
    ok_rows = rows[rows != 2]
    assert similarity_matrix("oks", bad, ok_rows, ok_rows).shape == (len(ok_rows),) * 2
    five = MultiRaterAnnotations(
        d.sample_ids, d.raters, d.assigned, d.boxes, d.labels, d.label_ids, d.sample_index, d.rater_index,
        d.image_sizes, keypoints=d.keypoints[:, :5],
    )
    with pytest.raises(ValueError, match="K = 5"):
        check_similarity("oks", five)
    sig = np.full(5, 0.08)
    check_similarity("oks", five, sigmas=sig)
    np.testing.assert_allclose(
        similarity_matrix("oks", five, rows, rows, sigmas=sig),
        pairwise_oks(five.keypoints[rows], five.keypoints[rows], five.boxes[rows], five.boxes[rows], sigmas=sig, image_size=(640, 480)),
    )


def test_cache_is_released_with_the_corpus():
    d = corpus(seed=3)
    rows = sample_rows(d, 0)
    similarity_matrix("polygon_iou", d, rows, rows)
    similarity_matrix("mask_iou", d, rows, rows)
    key = id(d)
    assert key in similarity_module._CACHES
    del d
    gc.collect()
    assert key not in similarity_module._CACHES


# ------------------------------------------------------------- data model


def test_data_carries_masks_and_keypoints_through_sorting_get_and_select():
    rng = np.random.default_rng(7)
    s1 = make_set(rng, [(0.3, 0.3, 0.1, "a"), (0.6, 0.6, 0.1, "b")])
    s2 = make_set(rng, [(0.5, 0.5, 0.1, "c")], masks=False, keypoints=False)  # no masks, no keypoints
    d = MultiRaterAnnotations.from_sets(["x", "y"], ["r2", "r1"], [{"r2": s1, "r1": s2}, {"r1": AnnotationSet.empty()}])
    # Rows are sorted by (sample, rater): r1's row first.
    assert d.masks[0] is None and np.isnan(d.keypoints[0]).all()
    got = d.get(0, "r2")
    assert all(np.array_equal(a, b) for a, b in zip(got.masks, s1.masks))
    np.testing.assert_array_equal(got.keypoints, s1.keypoints)
    sub = d.select_samples(np.array([0]))
    assert len(sub.masks) == 3 and sub.keypoints.shape == (3, 17, 2)
    # Unsorted direct construction is sorted consistently.
    order = np.array([1, 2, 0])
    direct = MultiRaterAnnotations(
        d.sample_ids, d.raters, d.assigned, d.boxes[order], d.labels[order], d.label_ids[order],
        d.sample_index[order], d.rater_index[order], d.image_sizes,
        masks=[d.masks[i] for i in order], keypoints=d.keypoints[order],
    )
    np.testing.assert_array_equal(direct.keypoints, d.keypoints)
    assert direct.masks[0] is None and np.array_equal(direct.masks[1], d.masks[1])
    # Without them, nothing changes.
    plain = MultiRaterAnnotations.from_sets(["x"], ["r"], [{"r": AnnotationSet([[0, 0, 1, 1]], ["a"], None)}])
    assert plain.masks is None and plain.keypoints is None


def test_data_rejects_inconsistent_masks_and_keypoints():
    with pytest.raises(ValueError, match="masks has 1 entries for 2 boxes"):
        AnnotationSet(np.zeros((2, 4)), ["a", "b"], None, masks=[None])
    with pytest.raises(ValueError, match=r"keypoints must have shape \(2, K, 2\)"):
        AnnotationSet(np.zeros((2, 4)), ["a", "b"], None, keypoints=np.zeros((2, 17)))
    a = AnnotationSet(np.zeros((1, 4)), ["a"], None, keypoints=np.zeros((1, 17, 2)))
    b = AnnotationSet(np.zeros((1, 4)), ["a"], None, keypoints=np.zeros((1, 5, 2)))
    with pytest.raises(ValueError, match="different numbers of points"):
        MultiRaterAnnotations.from_sets(["x"], ["a", "b"], [{"a": a, "b": b}])


# ------------------------------------------------------------- LVIS against the KαLOS reference


@pytest.mark.shared_data
def test_lvis_polygon_similarities_equal_the_kalos_reference(lvis_path):
    sim_fns = pytest.importorskip("kalos.iaa.similarity_functions")
    from agreement.io.coco import read_multi_rater_coco

    data = read_multi_rater_coco(lvis_path).annotations
    report = check_similarity("polygon_iou", data)
    assert report["repaired_polygons"] == 3  # three self-intersecting rings in this subset
    raw = json.loads(lvis_path.read_text())
    anns = {a["id"]: a for a in raw["annotations"]}
    images = {i["id"]: i for i in raw["images"]}

    def relative(ann):  # the reference's own conversion to relative coordinates
        img = images[ann["image_id"]]
        return [[c / img["width"] if k % 2 == 0 else c / img["height"] for k, c in enumerate(r)] for r in ann["segmentation"]]

    logging.disable(logging.CRITICAL)
    try:
        checked = 0
        for s in range(0, data.num_samples, 40):
            ra = np.arange(*data.rows(s, 0).indices(len(data)))
            rb = np.arange(*data.rows(s, 1).indices(len(data)))
            if not len(ra) or not len(rb):
                continue
            iou = similarity_matrix("polygon_iou", data, ra, rb)
            giou = similarity_matrix("polygon_giou", data, ra, rb)
            for i, a in enumerate(ra[:8]):
                for j, b in enumerate(rb[:8]):
                    pa, pb = relative(anns[data.label_ids[a]]), relative(anns[data.label_ids[b]])
                    assert iou[i, j] == pytest.approx(sim_fns.calc_iou_segm_poly(pa, pb), abs=1e-9)
                    assert giou[i, j] == pytest.approx((1 + sim_fns.calc_giou_segm_poly(pa, pb)) / 2, abs=1e-9)
                    checked += 1
        assert checked > 50
    finally:
        logging.disable(logging.NOTSET)


def test_supported_similarities_are_those_every_label_allows(data):
    """Each kind of geometry adds its similarities; a geometry some labels lack leaves its own out."""
    from agreement.geometry.similarity import supported_similarities

    assert supported_similarities(corpus(polygons=False, masks=False, keypoints=False)) == ("iou", "giou", "centroid")
    assert supported_similarities(corpus(masks=False, keypoints=False)) == (
        "iou", "giou", "centroid", "polygon_iou", "polygon_giou", "mask_iou")  # polygons rasterise
    assert supported_similarities(corpus(polygons=False, keypoints=False)) == ("iou", "giou", "centroid", "mask_iou")
    assert "oks" in supported_similarities(corpus(polygons=False, masks=False))  # 17 points: COCO σ
    assert supported_similarities(data) == SIMILARITIES  # every geometry at once
    for name in supported_similarities(data):
        check_similarity(name, data)  # each one it lists is accepted
