"""The multi-rater COCO layout, without FiftyOne: parsing, errors, round trip."""

import copy
import json

import numpy as np
import pytest

from agreement.coco import parse_multi_rater_coco, read_multi_rater_coco, to_coco_dict
from agreement.validation import AnnotationError


def _tiny():
    return {
        "images": [
            {"id": 1, "file_name": "a.jpg", "width": 100, "height": 50, "rater_list": ["u1", "u2"]},
            {"id": 2, "file_name": "b.jpg", "width": 200, "height": 100, "rater_list": ["u1"]},
            {"id": 3, "file_name": "c.jpg", "width": 10, "height": 10, "rater_list": ["u1", "u2"]},
        ],
        "categories": [{"id": 7, "name": "cat"}, {"id": 9, "name": "dog"}],
        "annotations": [
            {"id": 10, "image_id": 1, "category_id": 7, "bbox": [10, 5, 20, 10], "rater_id": "u1",
             "segmentation": [[10, 5, 30, 5, 30, 15]], "area": 100, "iscrowd": 0},
            {"id": 11, "image_id": 1, "category_id": 9, "bbox": [12, 6, 20, 10], "rater_id": "u2"},
            {"id": 12, "image_id": 2, "category_id": 9, "bbox": [0, 0, 200, 100], "rater_id": "u1"},
        ],
    }


def test_parse_relative_coordinates_and_absence():
    coco = parse_multi_rater_coco(_tiny())
    a = coco.annotations
    assert a.raters == ("u1", "u2")
    assert a.assigned.tolist() == [[True, True], [True, False], [True, True]]
    np.testing.assert_allclose(a.get(0, "u1").boxes, [[0.1, 0.1, 0.2, 0.2]])
    np.testing.assert_allclose(a.get(0, "u1").polygons[0][0], [[0.1, 0.1], [0.3, 0.1], [0.3, 0.3]])
    assert a.get(1, "u2") is None  # not in rater_list: implicit absence
    assert len(a.get(2, "u1")) == 0 and len(a.get(2, "u2")) == 0  # explicit absence
    assert a.get(0, "u2").labels.tolist() == ["dog"]


def test_round_trip_is_exact():
    data = _tiny()
    out = to_coco_dict(parse_multi_rater_coco(copy.deepcopy(data)))
    by_id = {a["id"]: a for a in out["annotations"]}
    for ann in data["annotations"]:
        got = by_id[ann["id"]]
        np.testing.assert_allclose(got["bbox"], ann["bbox"], rtol=1e-12)
        assert got["category_id"] == ann["category_id"] and got["rater_id"] == ann["rater_id"]
        assert got["image_id"] == ann["image_id"]
    assert by_id[10]["segmentation"] == [[10.0, 5.0, 30.0, 5.0, 30.0, 15.0]]
    assert by_id[10]["area"] == 100 and by_id[10]["iscrowd"] == 0
    assert [i["rater_list"] for i in out["images"]] == [["u1", "u2"], ["u1"], ["u1", "u2"]]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["annotations"][0].update(image_id=99), "annotation 10 refers to unknown image id 99"),
        (lambda d: d["annotations"][1].pop("rater_id"), "annotation 11 on image 1 \\(a.jpg\\) has no 'rater_id'"),
        (lambda d: d["annotations"][2].update(rater_id="u2"), "not in its rater_list"),
        (lambda d: d["images"][0].pop("rater_list"), "image 1 \\(a.jpg\\) has no 'rater_list'"),
        (lambda d: d["images"][1].pop("width"), "image 2 \\(b.jpg\\) has no valid 'width'"),
        (lambda d: d["annotations"][0].update(category_id=3), "unknown category_id 3"),
        (lambda d: d["annotations"][0].update(bbox=[1, 1, -2, 2]), "invalid bbox"),
        (lambda d: d["annotations"][0].update(bbox=[float("nan"), 1, 2, 2]), "invalid bbox"),
    ],
)
def test_bad_coco_input_names_the_image_or_annotation(mutate, message):
    data = _tiny()
    mutate(data)
    with pytest.raises(AnnotationError, match=message):
        parse_multi_rater_coco(data)


def test_shared_lvis_subset_counts(lvis_path):
    coco = read_multi_rater_coco(lvis_path)
    a = coco.annotations
    assert a.num_samples == 200 and len(a) == 3521
    counts = a.counts()
    assert counts.sum(axis=0).tolist() == [1751, 1770]
    both_empty = (counts.sum(axis=1) == 0) & a.assigned.all(axis=1)
    assert both_empty.sum() == 14
    out = to_coco_dict(coco)
    src = {x["id"]: x for x in json.loads(lvis_path.read_text())["annotations"]}
    for ann in out["annotations"]:
        np.testing.assert_allclose(ann["bbox"], src[ann["id"]]["bbox"], rtol=1e-6)
