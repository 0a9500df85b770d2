"""The multi-rater COCO layout, without FiftyOne: parsing, errors, round trip."""

import copy
import json

import numpy as np
import pytest

from agreement.core.validation import AnnotationError
from agreement.io.coco import parse_multi_rater_coco, read_multi_rater_coco, to_coco_dict


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


# --- strict reading: every malformed case names the file, the image, the annotation and what was expected


def _set(path, value):
    """A mutation setting ``data[path[0]][path[1]]...[path[-1]] = value``."""

    def mutate(d):
        target = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _both(*mutations):
    def mutate(d):
        for m in mutations:
            m(d)

    return mutate


STRICT_CASES = {
    "images not a list": (
        _set(["images"], {"1": {"id": 1}}),
        ["top-level list 'images'", "(an object)", "expected a list of objects"],
    ),
    "annotation not an object": (
        lambda d: d["annotations"].append([1, 2]),
        ["annotations[3]", "(a list)", "expected an object"],
    ),
    "string-typed number in a bbox": (
        _set(["annotations", 0, "bbox"], [10, "5", 20, 10]),
        ["annotation 10 on image 1 (a.jpg)", "'bbox'", "'5'", "expected [x, y, w, h], four numbers",
         "a number written as a string is not converted"],
    ),
    "string-typed image width": (
        _set(["images", 1, "width"], "200"),
        ["image 2 (b.jpg)", "'width'", "'200' (a string)", "expected a positive finite number",
         "not converted"],
    ),
    "string-typed annotation id": (
        _set(["annotations", 1, "id"], "11"),
        ["annotations[1] on image 1 (a.jpg)", "invalid 'id'", "'11' (a string)", "expected an integer"],
    ),
    "string-typed image_id": (
        _set(["annotations", 0, "image_id"], "1"),
        ["annotation 10 ", "invalid 'image_id'", "'1' (a string)", "expected an integer image id"],
    ),
    "bool as a width": (
        _set(["images", 0, "width"], True),
        ["image 1 (a.jpg)", "'width'", "True (a boolean)", "expected a positive finite number",
         "a boolean is not a number"],
    ),
    "bool as a coordinate": (
        _set(["annotations", 0, "segmentation"], [[10, 5, 30, 5, True, 15]]),
        ["annotation 10 on image 1 (a.jpg)", "malformed polygon", "segmentation[0]",
         "expected a flat list of numbers", "a boolean is not a number"],
    ),
    "bool as a category id": (
        _set(["categories", 0, "id"], True),
        ["categories[0]", "invalid 'id'", "True (a boolean)", "expected an integer"],
    ),
    "duplicate annotation id": (
        _set(["annotations", 2, "id"], 10),
        ["annotation 10 on image 2 (b.jpg) (annotations[2])", "repeats the annotation id 10",
         "annotation 10 on image 1 (a.jpg) (annotations[0])", "expected unique annotation ids"],
    ),
    "duplicate image id": (
        _set(["images", 2, "id"], 1),
        ["image 1 (c.jpg) (images[2])", "repeats the image id 1", "image 1 (a.jpg) (images[0])",
         "expected unique image ids"],
    ),
    "duplicate category id": (
        _set(["categories", 1, "id"], 7),
        ["categories[1]", "repeats the category id 7", "categories[0]", "expected unique category ids"],
    ),
    "duplicate category name": (
        _set(["categories", 1, "name"], "cat"),
        ["categories[1]", "repeats the category name 'cat'", "expected unique category names"],
    ),
    "unknown image": (
        _set(["annotations", 0, "image_id"], 99),
        ["annotation 10 refers to unknown image id 99", "expected the id of an entry of 'images'"],
    ),
    "unknown category": (
        _set(["annotations", 1, "category_id"], 3),
        ["annotation 11 on image 1 (a.jpg)", "unknown category_id 3", "expected the id of an entry of 'categories'"],
    ),
    "unknown rater": (
        _set(["annotations", 2, "rater_id"], "u2"),
        ["annotation 12 on image 2 (b.jpg)", "rater 'u2'", "not in its rater_list ['u1']",
         "expected a rater assigned to the image"],
    ),
    "rater_list not a list": (
        _set(["images", 0, "rater_list"], "u1,u2"),
        ["image 1 (a.jpg)", "invalid 'rater_list'", "'u1,u2' (a string)", "expected a list of rater ids"],
    ),
    "rater id neither string nor integer": (
        _set(["images", 1, "rater_list"], [1.5]),
        ["image 2 (b.jpg)", "1.5 (a number)", "expected a non-empty string or an integer"],
    ),
    "rater listed twice": (
        _set(["images", 0, "rater_list"], ["u1", "u1"]),
        ["image 1 (a.jpg)", "rater 'u1' twice", "expected each assigned rater once"],
    ),
    "rater typed inconsistently across images": (
        _both(_set(["images", 0, "rater_list"], ["7", "u2"]), _set(["annotations", 0, "rater_id"], "7"),
              _set(["images", 1, "rater_list"], [7]), _set(["annotations", 2, "rater_id"], 7)),
        ["image 2 (b.jpg)", "7 (a number)", "'7' (a string) in the rater_list of image 1 (a.jpg)",
         "expected one type (string or integer)"],
    ),
    "rater_id typed unlike its rater_list": (
        _both(_set(["images", 0, "rater_list"], ["7", "u2"]), _set(["annotations", 0, "rater_id"], 7)),
        ["annotation 10 on image 1 (a.jpg)", "'rater_id'", "7 (a number)", "'7' (a string)",
         "expected one type (string or integer)"],
    ),
    "odd-length polygon": (
        _set(["annotations", 0, "segmentation"], [[10, 5, 30, 5, 30]]),
        ["annotation 10 on image 1 (a.jpg)", "malformed polygon", "segmentation[0]",
         "odd number of coordinates (5)", "expected x, y pairs"],
    ),
    "polygon not nested": (
        _set(["annotations", 0, "segmentation"], [10, 5, 30, 5, 30, 15]),
        ["annotation 10 on image 1 (a.jpg)", "malformed polygon", "10 (a number)", "expected a flat list of numbers"],
    ),
    "image without file_name is still named": (
        _both(lambda d: d["images"][0].pop("file_name"), _set(["annotations", 0, "category_id"], 3)),
        ["annotation 10 on image 1 (no file_name)", "unknown category_id 3"],
    ),
}


@pytest.mark.parametrize("case", list(STRICT_CASES))
def test_strict_reading_names_file_image_annotation_and_expectation(case):
    mutate, fragments = STRICT_CASES[case]
    data = _tiny()
    mutate(data)
    with pytest.raises(AnnotationError) as err:
        parse_multi_rater_coco(data, source="raters.json")
    message = str(err.value)
    assert message.startswith("raters.json: ")
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


@pytest.mark.parametrize("top", [[], "images", 3, None])
def test_top_level_must_be_an_object(tmp_path, top):
    path = tmp_path / "top.json"
    path.write_text(json.dumps(top))
    with pytest.raises(AnnotationError, match="expected a JSON object with 'images', 'annotations' and 'categories'") as err:
        read_multi_rater_coco(path)
    assert str(err.value).startswith(f"{path}: the top level is ")


def test_numbers_are_never_converted_silently():
    """A numeric string that numpy would happily convert is refused, wherever it is."""
    for path in (["annotations", 0, "segmentation"], ["annotations", 0, "bbox"]):
        data = _tiny()
        _set(path, [["10", 5, 30, 5, 30, 15]] if path[-1] == "segmentation" else ["10", 5, 20, 10])(data)
        with pytest.raises(AnnotationError, match="not converted"):
            parse_multi_rater_coco(data)


def test_integer_rater_ids_and_float_sizes_are_accepted():
    data = _tiny()
    for img in data["images"]:
        img["rater_list"] = [1 if r == "u1" else 2 for r in img["rater_list"]]
    for ann in data["annotations"]:
        ann["rater_id"] = 1 if ann["rater_id"] == "u1" else 2
    data["images"][0]["width"] = 100.0
    coco = parse_multi_rater_coco(data)
    assert coco.annotations.raters == ("1", "2") and coco.rater_ids == {"1": 1, "2": 2}
    assert [a["rater_id"] for a in to_coco_dict(coco)["annotations"]] == [1, 2, 1]
