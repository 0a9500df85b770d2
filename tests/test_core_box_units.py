"""The core library's inputs: relative boxes in [0, 1], pixel boxes only through ``coordinates="pixels"``.

Issue 41's case: pixel boxes given with image sizes used to be taken as relative and scored (KαLOS α 0.091, αOT
0.42 on boxes that agree well). They are now refused with a message that says how to pass them, and the one
documented way (``coordinates="pixels"``) gives the α of the same boxes normalised by hand.
"""

from __future__ import annotations

import dataclasses
import doctest

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import agreement.core.data as data_module
from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.core.validation import BOX_TOLERANCE, AnnotationError, check_relative_boxes
from agreement.io.coco import parse_multi_rater_coco
from agreement.methods.kalos import kalos_alpha
from agreement.methods.ot.alpha_ot import alpha_ot

RATERS = ("ann", "bob", "cyd")


def _agreeing_corpus(seed: int = 0, S: int = 24, sizes=(640.0, 480.0)):
    """Relative boxes three raters drew around the same objects (a small jitter), and the columns around them."""
    rng = np.random.default_rng(seed)
    boxes, s_idx, r_idx, labels = [], [], [], []
    for s in range(S):
        n = int(rng.integers(1, 5))
        xy, wh = rng.uniform(0.05, 0.6, (n, 2)), rng.uniform(0.1, 0.3, (n, 2))
        cls = rng.choice(["car", "dog", "person"], n)
        for r in range(len(RATERS)):
            boxes.append(np.concatenate([xy + rng.normal(0, 0.004, (n, 2)), wh + rng.normal(0, 0.004, (n, 2))], 1))
            s_idx += [s] * n
            r_idx += [r] * n
            labels += [str(c) for c in cls]
    columns = dict(sample_ids=np.array([f"img{s:02d}.jpg" for s in range(S)], dtype=object), raters=RATERS,
                   assigned=np.ones((S, len(RATERS)), bool), labels=np.array(labels, dtype=object),
                   label_ids=np.full(len(labels), None, dtype=object), sample_index=np.array(s_idx),
                   rater_index=np.array(r_idx), image_sizes=np.tile(sizes, (S, 1)))
    return np.concatenate(boxes), columns


def _pixels(relative: np.ndarray, columns: dict) -> np.ndarray:
    wh = columns["image_sizes"][columns["sample_index"]]
    return relative * np.concatenate([wh, wh], axis=1)


def test_issue_case_pixel_boxes_with_image_sizes_are_refused_with_the_way_out():
    relative, columns = _agreeing_corpus()
    pixels = _pixels(relative, columns)
    with pytest.raises(AnnotationError) as err:
        MultiRaterAnnotations(boxes=pixels, **columns)
    message = str(err.value)
    first = pixels[0].tolist()
    assert "sample 'img00.jpg', rater 'ann', box 0" in message  # the box, its rater and its sample
    assert str(first) in message and "label '" in message
    assert "lies outside the image [0, 1]" in message  # the problem
    assert f"{len(pixels)} box(es) in all" in message
    assert "looks like pixel coordinates" in message and "coordinates='pixels'" in message  # how to proceed


def test_pixels_through_the_documented_way_give_the_alpha_of_boxes_normalised_by_hand():
    relative, columns = _agreeing_corpus()
    by_hand = MultiRaterAnnotations(boxes=_pixels(relative, columns) / np.tile([640.0, 480.0], 2), **columns)
    converted = MultiRaterAnnotations(boxes=_pixels(relative, columns), coordinates="pixels", **columns)
    k_hand, k_conv = kalos_alpha(by_hand), kalos_alpha(converted)
    o_hand, o_conv = alpha_ot(by_hand), alpha_ot(converted)
    assert abs(k_conv.global_alpha - k_hand.global_alpha) <= 1e-12
    np.testing.assert_allclose(k_conv.alpha, k_hand.alpha, rtol=0, atol=1e-12)
    assert abs(o_conv.alpha - o_hand.alpha) <= 1e-12
    assert k_hand.global_alpha > 0.8 and o_hand.alpha > 0.8  # boxes that agree well score so


def test_from_sets_converts_boxes_polygons_and_keypoints():
    ring = np.array([[64.0, 48.0], [384.0, 48.0], [384.0, 288.0]])
    kps = np.array([[[64.0, 48.0], [np.nan, np.nan]]])
    sets = [{"a": AnnotationSet([[64, 48, 320, 240]], ["car"], [None], polygons=[[ring]], keypoints=kps)},
            {"a": AnnotationSet.empty()}]
    corpus = MultiRaterAnnotations.from_sets(["x", "y"], ["a"], sets, image_sizes=[[640, 480], [np.nan, np.nan]],
                                             coordinates="pixels")
    np.testing.assert_allclose(corpus.boxes, [[0.1, 0.1, 0.5, 0.5]])
    np.testing.assert_allclose(corpus.polygons[0][0], [[0.1, 0.1], [0.6, 0.1], [0.6, 0.6]])
    np.testing.assert_allclose(corpus.keypoints[0], [[0.1, 0.1], [np.nan, np.nan]])
    assert sets[0]["a"].boxes.tolist() == [[64, 48, 320, 240]]  # the caller's sets are untouched
    assert corpus.image_sizes[0].tolist() == [640, 480]


# integer pixel boxes, integer image sizes: c * P / (c * Z) and P / Z are the same real number, correctly rounded
_pixel_box = st.tuples(st.integers(0, 60), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))


@settings(max_examples=40)
@given(
    cells=st.lists(st.lists(st.lists(_pixel_box, max_size=4), min_size=2, max_size=2), min_size=2, max_size=5),
    scale=st.integers(2, 1000),
    classes=st.lists(st.sampled_from(["a", "b"]), min_size=40, max_size=40),
)
def test_alpha_after_normalising_does_not_depend_on_the_image_size_scale(cells, scale, classes):
    sizes = np.array([[100.0, 80.0]] * len(cells))
    sets = []
    for s, cell in enumerate(cells):
        sets.append({r: AnnotationSet(np.array(boxes, dtype=np.float64).reshape(-1, 4),
                                      [classes[(s * 7 + r_i * 5 + k) % 40] for k in range(len(boxes))],
                                      [None] * len(boxes))
                     for r_i, (r, boxes) in enumerate(zip(["r1", "r2"], cell))})
    scaled = [{r: dataclasses.replace(a, boxes=a.boxes * scale) for r, a in m.items()} for m in sets]
    ids = [f"s{s}" for s in range(len(cells))]
    base = MultiRaterAnnotations.from_sets(ids, ["r1", "r2"], sets, image_sizes=sizes, coordinates="pixels")
    big = MultiRaterAnnotations.from_sets(ids, ["r1", "r2"], scaled, image_sizes=sizes * scale, coordinates="pixels")
    np.testing.assert_array_equal(big.boxes, base.boxes)
    a, b = kalos_alpha(base), kalos_alpha(big)
    np.testing.assert_allclose(b.alpha, a.alpha, rtol=0, atol=1e-12, equal_nan=True)
    assert (np.isnan(a.global_alpha) and np.isnan(b.global_alpha)) or abs(a.global_alpha - b.global_alpha) <= 1e-12


def _one(boxes, sizes=None, coordinates="relative", names=None, box_policy="error"):
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    n = len(boxes)
    return MultiRaterAnnotations(
        sample_ids=np.array(["s0"], dtype=object), raters=("r",), assigned=np.ones((1, 1), bool), boxes=boxes,
        labels=np.array(["c"] * n, dtype=object), label_ids=np.full(n, None, dtype=object),
        sample_index=np.zeros(n, np.intp), rater_index=np.zeros(n, np.intp), image_sizes=sizes,
        sample_names=names, coordinates=coordinates, box_policy=box_policy)


@pytest.mark.parametrize("box", [
    [0, 0, 1, 1], [0.5, 0.5, 0.5, 0.5], [1, 1, 0, 0], [0, 0, 0, 0], [0.25, 0, 0.75, 1],
    [-BOX_TOLERANCE / 2, 0, 1 + BOX_TOLERANCE / 4, 1],  # rounding within the tolerance
])
def test_boxes_on_the_border_are_accepted(box):
    assert _one([box]).boxes.tolist() == [box]


def test_pixel_boxes_exactly_on_the_border_are_accepted():
    corpus = _one([[0, 0, 640, 480], [640, 480, 0, 0]], sizes=[[640, 480]], coordinates="pixels")
    assert corpus.boxes.tolist() == [[0, 0, 1, 1], [1, 1, 0, 0]]


@pytest.mark.parametrize("box, problem", [
    ([0, 0, 1 + 3 * BOX_TOLERANCE, 1], "lies outside the image [0, 1] by more than 1e-06"),
    ([-0.01, 0, 0.5, 0.5], "lies outside the image [0, 1]"),
    ([0.2, 0.2, -0.1, 0.3], "has a negative size (width or height)"),
    ([0.2, np.nan, 0.1, 0.3], "has a NaN or infinite coordinate"),
    ([0.2, 0.1, np.inf, 0.3], "has a NaN or infinite coordinate"),
])
def test_bad_relative_boxes_are_refused_naming_sample_rater_and_box(box, problem):
    with pytest.raises(AnnotationError, match="sample 'a.jpg', rater 'r', box 0") as err:
        _one([[0.1, 0.1, 0.2, 0.2], box][::-1], names=["a.jpg"])
    assert problem in str(err.value)


def test_a_box_slightly_past_the_border_points_to_box_policy():
    with pytest.raises(AnnotationError) as err:
        _one([[0.9, 0.1, 0.2, 0.2]])
    assert "box_policy='clip'" in str(err.value) and "box_policy='drop'" in str(err.value)
    assert "looks like pixel" not in str(err.value)


def _two_raters(policy):
    ring = [np.array([[0.9, 0.1], [1.1, 0.1], [1.1, 0.3]])]
    sets = [{"a": AnnotationSet([[0.9, 0.1, 0.2, 0.2], [0.1, 0.1, 0.2, 0.2]], ["c", "c"], ["a0", "a1"],
                                polygons=[ring, None]),
             "b": AnnotationSet([[1.5, 0.1, 0.2, 0.2]], ["c"], ["b0"], polygons=[None])},
            {"a": AnnotationSet([[0.1, 0.1, 0.2, 0.2]], ["c"], ["a2"]), "b": AnnotationSet.empty()}]
    return MultiRaterAnnotations.from_sets(["x", "y"], ["a", "b"], sets, box_policy=policy)


def test_box_policy_clip_clips_and_reports_per_rater():
    corpus = _two_raters("clip")
    np.testing.assert_allclose(corpus.get(0, "a").boxes, [[0.9, 0.1, 0.1, 0.2], [0.1, 0.1, 0.2, 0.2]])
    np.testing.assert_allclose(corpus.get(0, "b").boxes, [[1.0, 0.1, 0.0, 0.2]])  # zero-area, on the border
    r = corpus.repairs
    assert (r.clipped_boxes, r.outside_boxes, r.dropped_boxes) == (1, 1, 0)
    assert r.per_rater["a"]["clipped_boxes"] == 1 and r.per_rater["b"]["outside_boxes"] == 1
    assert "sample 'x', rater 'a', box 0" in r.examples[0]


def test_box_policy_drop_leaves_the_rows_out_and_keeps_the_assignment():
    corpus = _two_raters("drop")
    assert corpus.get(0, "a").ids.tolist() == ["a1"] and corpus.get(0, "a").polygons == [None]
    assert corpus.get(0, "b") is not None and len(corpus.get(0, "b")) == 0  # explicit absence, still assigned
    assert corpus.repairs.dropped_boxes == 2 and corpus.repairs.per_rater["b"]["dropped_boxes"] == 1
    assert len(corpus) == 2


def test_box_policy_error_is_the_default_and_broken_boxes_are_refused_under_every_policy():
    with pytest.raises(AnnotationError, match="sample 'x', rater 'a', box 0"):
        _two_raters("error")
    with pytest.raises(AnnotationError, match="negative size"):
        _one([[0.2, 0.2, -0.1, 0.3], [0.9, 0.1, 0.2, 0.2]], box_policy="clip")
    with pytest.raises(ValueError, match="box_policy must be one of"):
        _two_raters("ignore")
    assert not _one([[0.1, 0.1, 0.2, 0.2]], box_policy="clip").repairs


def test_rows_without_a_2d_box_are_not_checked():
    corpus = _one([[np.nan] * 4, [0.1, 0.1, 0.2, 0.2]])  # a 3D or image-level row: all four NaN
    assert np.isnan(corpus.boxes).all(axis=1).tolist() == [True, False]


@pytest.mark.parametrize("size", [[np.nan, 480], [640, np.nan], [-640, 480], [0, 480]])
def test_pixels_without_a_positive_image_size_are_refused_naming_the_sample(size):
    with pytest.raises(AnnotationError, match="sample 'frame7.png'") as err:
        _one([[10, 10, 20, 20]], sizes=[size], coordinates="pixels", names=["frame7.png"])
    assert "size" in str(err.value)


@pytest.mark.parametrize("size", [[-640, 480], [640, 0], [np.inf, 480]])
def test_negative_zero_or_infinite_image_sizes_are_refused_in_any_units(size):
    with pytest.raises(AnnotationError, match=r"sample 'frame7.png': image size .* not a positive, finite"):
        _one([[0.1, 0.1, 0.2, 0.2]], sizes=[size], names=["frame7.png"])


def test_unknown_sizes_are_fine_for_relative_boxes_and_for_samples_without_geometry():
    assert _one([[0.1, 0.1, 0.2, 0.2]], sizes=[[np.nan, np.nan]]).num_samples == 1
    assert len(_one(np.zeros((0, 4)), sizes=[[np.nan, np.nan]], coordinates="pixels")) == 0


def test_unknown_coordinates_are_an_error():
    with pytest.raises(ValueError, match="coordinates must be one of"):
        _one([[0.1, 0.1, 0.2, 0.2]], coordinates="percent")


def test_corpus_operations_keep_relative_boxes_without_conversion():
    relative, columns = _agreeing_corpus(S=6)
    corpus = MultiRaterAnnotations(boxes=_pixels(relative, columns), coordinates="pixels", **columns)
    again = MultiRaterAnnotations.concat([corpus.select_samples(np.arange(3)), corpus.select_samples([3, 4, 5])])
    np.testing.assert_array_equal(again.boxes, corpus.boxes)
    np.testing.assert_array_equal(dataclasses.replace(corpus).boxes, corpus.boxes)  # replace: relative already
    assert not corpus.repairs and not again.repairs


def test_check_relative_boxes_passes_a_clean_corpus_and_names_labels():
    boxes, keep = check_relative_boxes(np.array([[0, 0, 1, 1]]), np.array([0]), np.array([0]), ["x"], ["r"], labels=["c"])
    assert boxes.tolist() == [[0, 0, 1, 1]] and keep.tolist() == [True]
    with pytest.raises(AnnotationError, match=r"sample 'x', rater 'r', box 1 \(row 1, label 'dog'\)"):
        check_relative_boxes(np.array([[0, 0, 1, 1], [0, 0, 2, 1]]), np.array([0, 0]), np.array([0, 0]), ["x"],
                             ["r"], labels=np.array(["cat", "dog"], dtype=object))


def _coco(bbox):
    return {"images": [{"id": 1, "file_name": "a.jpg", "width": 100, "height": 50, "rater_list": ["u1", "u2"]}],
            "categories": [{"id": 1, "name": "c"}],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 5, 20, 10], "rater_id": "u1",
                             "segmentation": [[10, 5, 30, 5, 30, 15]]},
                            {"id": 2, "image_id": 1, "category_id": 1, "bbox": bbox, "rater_id": "u2"}]}


def test_coco_reader_normalises_as_the_corpus_does():
    coco = parse_multi_rater_coco(_coco([0, 0, 100, 50]))
    a = coco.annotations
    direct = MultiRaterAnnotations(
        sample_ids=a.sample_ids, raters=a.raters, assigned=a.assigned, boxes=[[10, 5, 20, 10], [0, 0, 100, 50]],
        labels=a.labels, label_ids=a.label_ids, sample_index=a.sample_index, rater_index=a.rater_index,
        image_sizes=a.image_sizes, coordinates="pixels")
    np.testing.assert_array_equal(a.boxes, direct.boxes)
    np.testing.assert_array_equal(a.polygons[0][0], [[0.1, 0.1], [0.3, 0.1], [0.3, 0.3]])
    assert not coco.repairs


def test_coco_reader_box_past_the_border_follows_box_policy():
    data = _coco([90, 5, 20, 10])  # 10 pixels past the right border
    clipped = parse_multi_rater_coco(data)
    np.testing.assert_allclose(clipped.annotations.get(0, "u2").boxes, [[0.9, 0.1, 0.1, 0.2]])
    assert clipped.repairs.clipped_boxes == 1 and clipped.repairs.per_rater["u2"]["clipped_boxes"] == 1
    assert "annotation 2 on image 1 (a.jpg) by rater 'u2'" in clipped.repairs.examples[0]
    dropped = parse_multi_rater_coco(data, box_policy="drop")
    assert len(dropped.annotations.get(0, "u2")) == 0  # an empty set: the rater was still assigned
    assert dropped.repairs.dropped_boxes == 1 and len(dropped.annotations.get(0, "u1")) == 1
    with pytest.raises(AnnotationError, match=r"data.json: annotation 2 on image 1 \(a.jpg\) by rater 'u2'"):
        parse_multi_rater_coco(data, source="data.json", box_policy="error")
    with pytest.raises(ValueError, match="box_policy must be one of"):
        parse_multi_rater_coco(data, box_policy="ignore")


def test_simulated_corpora_are_relative():
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, truth = crowd_corpus(30, 12, raters_per_sample=4, seed=2)
    for c in (corpus, truth):
        assert np.all(c.boxes >= 0) and np.all(c.boxes[:, :2] + c.boxes[:, 2:] <= 1 + BOX_TOLERANCE)


def test_the_data_model_examples_run():
    assert doctest.testmod(data_module, optionflags=doctest.ELLIPSIS).failed == 0
