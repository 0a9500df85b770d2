"""Label Studio's JSON export, parsed without FiftyOne (files generated in the documented layout)."""

from __future__ import annotations

import json
import math

import pytest

from agreement.core.validation import AnnotationError
from agreement.io.labelstudio import parse_label_studio, read_label_studio
from labelstudio_export import annotation, keypoint, polygon, rectangle, task

W, H = 800, 600


def _one(results, completed_by=3, **kwargs):
    return parse_label_studio([task(1, "a.jpg", [annotation(completed_by, results)])], **kwargs)


def test_percent_becomes_relative_and_raters_come_from_completed_by(tmp_path):
    tasks = [
        task(1, "a.jpg", [
            annotation(3, [rectangle([0.1, 0.2, 0.3, 0.4], "car", W, H), polygon([[0.5, 0.5], [0.7, 0.5], [0.6, 0.8]],
                                                                                  "tree", W, H)]),
            annotation({"id": 4, "email": "bo@example.org"}, []),  # explicit absence
        ]),
        task(2, "b.jpg", [annotation(3, [keypoint([0.25, 0.75], "nose", W, H)])]),  # rater bo not assigned
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    parsed = read_label_studio(path)
    assert parsed.raters == ["3", "bo@example.org"]
    assert [t["file_name"] for t in parsed.tasks] == ["a.jpg", "b.jpg"]
    assert parsed.tasks[0]["width"] == W and parsed.tasks[0]["height"] == H
    box, poly = parsed.regions[(0, "3")]
    assert box.kind == "box" and box.label == "car" and box.box == pytest.approx((0.1, 0.2, 0.3, 0.4))
    assert poly.kind == "polygon" and poly.box == pytest.approx((0.5, 0.5, 0.2, 0.3))
    assert parsed.regions[(0, "bo@example.org")] == []
    assert (1, "bo@example.org") not in parsed.regions
    (kp,) = parsed.regions[(1, "3")]
    assert kp.kind == "keypoint" and kp.points.ravel().tolist() == pytest.approx([0.25, 0.75])
    corpus = parsed.to_annotations()
    assert corpus.assigned.tolist() == [[True, True], [True, False]]
    assert len(corpus) == 2 and corpus.polygons[1] is not None
    assert parsed.report()["per_rater"]["3"]["tasks"] == 2


def test_a_separate_labels_result_names_the_region():
    geom = {"id": "g1", "type": "rectangle", "original_width": W, "original_height": H,
            "value": {"x": 10, "y": 10, "width": 5, "height": 5, "rotation": 0}}
    labels = {"id": "g1", "type": "labels", "value": {"x": 10, "y": 10, "width": 5, "height": 5, "labels": ["dog"]}}
    parsed = _one([geom, labels])
    (region,) = parsed.regions[(0, "3")]
    assert region.label == "dog" and region.box == pytest.approx((0.1, 0.1, 0.05, 0.05))


def test_unsupported_regions_are_counted_per_rater_and_reason():
    brush = {"id": "b1", "type": "brushlabels", "value": {"format": "rle", "rle": [1, 2], "brushlabels": ["x"]}}
    ellipse = {"id": "e1", "type": "ellipselabels", "value": {"x": 1, "y": 1, "radiusX": 2, "radiusY": 2,
                                                            "ellipselabels": ["x"]}}
    relation = {"type": "relation", "from_id": "a", "to_id": "b", "direction": "right"}
    unlabeled = dict(rectangle([0.1, 0.1, 0.1, 0.1], "x", W, H))
    unlabeled["value"] = {k: v for k, v in unlabeled["value"].items() if k != "rectanglelabels"}
    two = rectangle([0.1, 0.1, 0.1, 0.1], "x", W, H)
    two["value"]["rectanglelabels"] = ["x", "y"]
    thin = polygon([[0.1, 0.1], [0.2, 0.2]], "x", W, H)
    tasks = [task(1, "a.jpg", [
        annotation(3, [brush, ellipse, relation, unlabeled, two, thin, rectangle([0.1, 0.1, 0.1, 0.1], "ok", W, H)]),
        annotation(5, [], cancelled=True),
    ])]
    parsed = parse_label_studio(tasks)
    assert len(parsed.regions[(0, "3")]) == 1
    assert parsed.skipped == {
        "brushlabels regions": 1, "ellipselabels regions": 1, "relation regions": 1, "regions without a label": 1,
        "regions with several labels": 1, "polygons with fewer than 3 points": 1, "cancelled annotations": 1,
    }
    assert parsed.per_rater["5"]["skipped"] == {"cancelled annotations": 1}
    assert (0, "5") not in parsed.regions  # a skipped task is not an assignment


def test_rotated_rectangles_are_an_error_unless_asked():
    rot = rectangle([0.1, 0.1, 0.2, 0.1], "car", W, H, rotation=90)
    with pytest.raises(AnnotationError, match=r"task 1, annotation \d+, region 'r\d+' .*rotated by 90.*rotated='bbox'"):
        _one([rot])
    parsed = _one([rot], rotated="bbox")
    (region,) = parsed.regions[(0, "3")]
    # 160 x 60 px at (80, 60), rotated 90 degrees clockwise about that corner: x in [20, 80], y in [60, 220]
    assert region.box == pytest.approx((20 / W, 60 / H, 60 / W, 160 / H))
    assert parsed.repaired == {"rotated rectangles -> bounding box": 1}
    assert _one([rot], rotated="skip").skipped == {"rotated rectangles": 1}
    assert len(_one([rectangle([0.1, 0.1, 0.2, 0.1], "car", W, H, rotation=360)]).regions[(0, "3")]) == 1


def test_a_rotated_box_past_the_border_is_refused_or_repaired_in_the_corpus():
    """A rotated rectangle's enclosing box can leave the image: the corpus refuses it by default, naming
    the task and annotator, or clips it and counts the repair (box_policy)."""
    rot = rectangle([0.02, 0.1, 0.3, 0.1], "car", W, H, rotation=90)  # turned about its corner, past x = 0
    parsed = _one([rot], rotated="bbox")
    (region,) = parsed.regions[(0, "3")]
    assert region.box[0] < 0
    with pytest.raises(AnnotationError, match=r"(?s)rater '3'.*outside the image.*box_policy"):
        parsed.to_annotations()
    corpus = parsed.to_annotations(box_policy="clip")
    assert corpus.repairs.clipped_boxes == 1 and corpus.boxes[0, 0] == 0.0


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r["value"].update(x="12"), "'x' must be a finite number, got '12'"),
    (lambda r: r["value"].update(width=math.nan), "'width' must be a finite number"),
    (lambda r: r["value"].update(height=-3), "negative width or height"),
    (lambda r: r.update(original_width=0), "original_width must be a positive number"),
])
def test_malformed_regions_name_task_annotation_and_region(mutate, message):
    region = rectangle([0.1, 0.1, 0.2, 0.1], "car", W, H)
    mutate(region)
    with pytest.raises(AnnotationError, match=r"task 1, annotation \d+, region 'r\d+' \(rectanglelabels\): .*"
                       + message.replace("(", r"\(").replace(")", r"\)")):
        _one([region])


def test_malformed_tasks_and_annotations():
    with pytest.raises(AnnotationError, match="no 'completed_by'"):
        _one([], completed_by=None)
    twice = task(1, "a.jpg", [annotation(3, []), annotation(3, [])])
    with pytest.raises(AnnotationError, match="annotator '3' has a second annotation on this task"):
        parse_label_studio([twice])
    a, b = rectangle([0.1, 0.1, 0.1, 0.1], "x", W, H), rectangle([0.1, 0.1, 0.1, 0.1], "x", W + 1, H)
    with pytest.raises(AnnotationError, match="original_width 801.0 differs from 800"):
        _one([a, b])
    with pytest.raises(AnnotationError, match="the task id appears twice"):
        parse_label_studio([task(1, "a.jpg", []), task(1, "b.jpg", [])])
    with pytest.raises(AnnotationError, match=r"no image in data\['image'\]"):
        parse_label_studio([{"id": 1, "data": {"a": 1, "b": 2}, "annotations": []}])
    with pytest.raises(AnnotationError, match="expected Label Studio's JSON export, a list of tasks"):
        parse_label_studio("nope")


def test_image_file_names_from_label_studio_paths():
    refs = {"/data/upload/3/5f1c-dog.jpg": "5f1c-dog.jpg", "/data/local-files/?d=images/sub/a%20b.png": "a b.png",
            "s3://bucket/x/y.png": "y.png", "https://host/img/z.jpg?token=1": "z.jpg"}
    tasks = [{"id": i, "data": {"image": ref}, "annotations": []} for i, ref in enumerate(refs)]
    assert [t["file_name"] for t in parse_label_studio(tasks).tasks] == list(refs.values())
    other_key = [{"id": 1, "data": {"img": "/x/q.jpg"}, "annotations": []}]
    assert parse_label_studio(other_key).tasks[0]["file_name"] == "q.jpg"
    assert parse_label_studio(other_key, image_key="img").tasks[0]["image"] == "/x/q.jpg"


def test_rater_names_rename_annotators():
    parsed = _one([rectangle([0.1, 0.1, 0.1, 0.1], "x", W, H)], rater_names={3: "alice"})
    assert parsed.raters == ["alice"]


def _choice(control: str, values, rid: str | None = None) -> dict:
    return {"id": rid or f"{control}-{values}", "type": "choices", "from_name": control, "to_name": "image",
            "value": {"choices": values}}


CONFIG = """<View><Image name="image" value="$image"/>
  <Choices name="quality" toName="image"><Choice value="bad"/><Choice value="good" alias="ok"/></Choices>
  <Choices name="content" toName="image" choice="multiple"><Choice value="cat"/><Choice value="dog"/></Choices>
  <Choices name="attr" toName="image" perRegion="true"><Choice value="x"/></Choices>
</View>"""


def test_choices_are_read_per_annotation_and_control():
    box = rectangle([0.1, 0.1, 0.1, 0.1], "car", W, H)
    per_region = _choice("attr", ["x"], rid=box["id"])  # shares the region's id: a region attribute, not read
    tasks = [task(1, "a.jpg", [annotation(3, [box, per_region, _choice("quality", ["good"]),
                                              _choice("content", ["dog", "cat"])]),
                               annotation(4, [_choice("quality", ["bad"])])]),
             task(2, "b.jpg", [annotation(3, [])])]
    parsed = parse_label_studio(tasks)
    assert parsed.choices == {(0, "3"): {"quality": ["good"], "content": ["dog", "cat"]}, (0, "4"): {"quality": ["bad"]},
                              (1, "3"): {}}
    assert len(parsed.regions[(0, "3")]) == 1 and parsed.skipped == {}
    # without the label config: several choices make tags; classes are the values seen, sorted
    assert {n: (c.multiple, c.classes, c.source) for n, c in parsed.controls.items()} == {
        "quality": (False, ("bad", "good"), "inferred from the export"),
        "content": (True, ("cat", "dog"), "inferred from the export")}
    report = parsed.report()["choices"]
    assert report["quality"]["not_answered"] == 1 and report["quality"]["not_answered_means"] == "missing (no class)"
    assert report["content"]["not_answered_means"] == "explicit absence (no tag)"


def test_the_label_config_decides_and_checks_the_choices(tmp_path):
    from agreement.io.labelstudio_choices import parse_label_config

    controls = parse_label_config(CONFIG)
    assert list(controls) == ["quality", "content"]  # the per-region control is left out
    assert controls["quality"].classes == ("bad", "ok") and not controls["quality"].multiple
    assert controls["content"].multiple and controls["content"].label_type == "tags"
    (tmp_path / "c.xml").write_text(CONFIG)
    parsed = _one([_choice("content", ["cat"])], label_config=tmp_path / "c.xml")
    assert parsed.controls["content"].multiple and parsed.controls["quality"].source == "label config"
    with pytest.raises(AnnotationError, match=r"task 1, annotation \d+ \(annotator '3'\): \['good'\] not listed in "
                       r"the label config's <Choices name='quality'> \(its choices: \['bad', 'ok'\]\)"):
        _one([_choice("quality", ["good"])], label_config=CONFIG)
    with pytest.raises(AnnotationError, match="2 choices .* on <Choices name='quality'>, a single-choice control"):
        _one([_choice("quality", ["bad", "ok"])], label_config=CONFIG)
    with pytest.raises(AnnotationError, match="control 'mood' is not a <Choices> control"):
        _one([_choice("mood", ["x"])], label_config=CONFIG)
    with pytest.raises(AnnotationError, match="label config is not valid XML"):
        _one([], label_config="<View>")
    with pytest.raises(AnnotationError, match="not XML and not a readable file"):
        _one([], label_config=tmp_path / "missing.xml")


def test_malformed_choices():
    with pytest.raises(AnnotationError, match=r"annotator '3'\), result 'q' \(choices 'quality'\): value.choices must "
                                              "be a list of strings"):
        _one([_choice("quality", "good", rid="q")])
    with pytest.raises(AnnotationError, match="control 'quality' is answered twice in one annotation"):
        _one([_choice("quality", ["good"], rid="q1"), _choice("quality", ["bad"], rid="q2")])
    twice = task(1, "a.jpg", [annotation(3, [_choice("quality", ["good"])]), annotation(3, [_choice("quality", ["bad"])])])
    with pytest.raises(AnnotationError, match="annotator '3' has a second annotation on this task"):
        parse_label_studio([twice])
