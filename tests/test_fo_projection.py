"""agreement.fo.storage.projection.read_values against FiftyOne's own values() (the oracle), on awkward data and views."""

from __future__ import annotations

import math

import pytest


def _same(a, b):
    """Equal values, NaN equal to NaN (keypoints)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


@pytest.fixture
def awkward(fo, make_dataset):
    """Boxes, polygons and keypoints with None fields, empty lists, missing and typed attributes."""
    F = fo

    def det(label, box, **kw):
        return F.Detection(label=label, bounding_box=box, **kw)

    samples = []
    for i in range(12):
        s = F.Sample(filepath=f"/img/{i}.jpg", raters=["a", "b"] if i % 3 else None,
                     metadata=F.ImageMetadata(width=640 + i, height=480) if i % 4 else None)
        if i % 5 != 0:
            s["a"] = F.Detections(detections=[det("cat", [0.1, 0.1, 0.2, 0.2], annotator="x", score=0.5),
                                              det("dog", [0.3, 0.3, 0.1, 0.1])][: i % 3])
        s["p"] = F.Polylines(polylines=[F.Polyline(label="cat", points=[[(0.1, 0.1), (0.2, 0.1), (0.2, 0.3)]],
                                                   closed=True, filled=True, annotator="y")]) if i % 2 else None
        s["k"] = F.Keypoints(keypoints=[F.Keypoint(label="p", points=[(0.1, 0.2), (float("nan"), float("nan"))])])
        samples.append(s)
    return make_dataset(samples)


PATHS = ["id", "filepath", "metadata.width", "metadata.height", "raters",
         "a.detections.bounding_box", "a.detections.label", "a.detections.id", "a.detections.annotator",
         "a.detections.score", "p.polylines.points", "p.polylines.id", "p.polylines.annotator",
         "k.keypoints.points", "k.keypoints.label", "k.keypoints.id"]


def test_read_values_equals_values_on_a_dataset_and_on_views(fo, awkward):
    from fiftyone import ViewField as Fv

    from agreement.fo.storage.projection import _expression, read_values

    assert all(_expression(awkward, p) is not None for p in PATHS)  # every path is read directly, not by values()
    views = [awkward, awkward.sort_by("filepath", reverse=True), awkward.skip(2).limit(7),
             awkward.match(Fv("raters") != None),  # noqa: E711
             awkward.filter_labels("a", Fv("label") == "cat", only_matches=False),
             awkward.select_fields(["a", "raters"])]
    for view in views:
        paths = PATHS if view is not views[-1] else ["id", "raters", "a.detections.bounding_box", "a.detections.id"]
        ours, theirs = read_values(view, paths), view.values(paths)
        for p, x, y in zip(paths, ours, theirs):
            assert _same(x, y), (p, x, y)


def test_paths_it_does_not_read_directly_go_to_values(fo, awkward):
    import numpy as np

    from agreement.fo.storage.projection import _expression, read_values

    for s in awkward.select_fields("a"):
        if s.a is not None and s.a.detections:
            s.a.detections[0].mask = np.eye(3, dtype=bool)
            s.save()
    paths = ["id", "a.detections.mask", "a.detections.bounding_box", "a.detections.id"]
    for view in (awkward, awkward.sort_by("filepath", reverse=True)):
        ours, theirs = read_values(view, paths), view.values(paths)
        assert ours[0] == theirs[0] and ours[2:] == list(theirs[2:])
        for x, y in zip(ours[1], theirs[1]):
            assert (x is None and y is None) or all(
                (u is None and v is None) or np.array_equal(u, v) for u, v in zip(x, y))

    for p in ("a.detections", "a", "metadata", "a.detections.mask", "frames.x", "tags.id"):
        assert _expression(awkward, p) is None
    patches = awkward.to_patches("a")
    assert read_values(patches, ["id", "a.label"]) == list(patches.values(["id", "a.label"]))
