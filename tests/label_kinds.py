"""Small datasets of every label type the plugin reads, in both rater layouts, for operator tests.

Four raters ``a`` .. ``d`` draw object 0 alike on each of 8 samples; raters
``a`` and ``b`` also draw object 1 (so it has half the votes).
"""

from __future__ import annotations

import numpy as np

#: boxes, polygons, instance masks, keypoints and 3D cuboids
KINDS = ("boxes", "polygons", "masks", "keypoints", "3d")
RATERS = ("a", "b", "c", "d")
_CONTAINERS = {"boxes": "Detections", "polygons": "Polylines", "masks": "Detections", "keypoints": "Keypoints",
               "3d": "Detections"}
_ITEMS = {"Detections": "detections", "Polylines": "polylines", "Keypoints": "keypoints"}


def kind_label(fo, kind: str, obj: int, rater: str):
    """Object ``obj`` as rater ``rater`` draws it, for the label type ``kind`` (all raters alike)."""
    x = 0.1 + 0.4 * obj
    if kind == "boxes":
        return fo.Detection(label=f"c{obj}", bounding_box=[x, 0.1, 0.2, 0.2], annotator=rater)
    if kind == "polygons":
        return fo.Polyline(label=f"c{obj}", closed=True, filled=True, annotator=rater,
                           points=[[(x, 0.1), (x + 0.2, 0.1), (x + 0.2, 0.3), (x, 0.3)]])
    if kind == "masks":
        mask = np.zeros((40, 60), bool)
        mask[5:30, 10:50] = True
        return fo.Detection(label=f"c{obj}", bounding_box=[x, 0.1, 0.3, 0.2], mask=mask, annotator=rater)
    if kind == "keypoints":
        return fo.Keypoint(label=f"c{obj}", points=[(x, 0.2), (x + 0.05, 0.25), (x + 0.1, 0.3)], annotator=rater)
    return fo.Detection(label=f"c{obj}", location=[10.0 * obj, 2.0, 0.5], dimensions=[4.0, 2.0, 1.5],
                        rotation=[0.0, 0.0, 0.3], annotator=rater)


def kind_dataset(fo, make_dataset, kind: str, layout: str):
    """``(dataset, rater parameters of the operators, label list class, its list attribute)``: 8 samples in
    the ``"fields"`` layout (a field per rater) or the ``"attribute"`` one (field ``ann``, ``annotator``)."""
    container = getattr(fo, _CONTAINERS[kind])
    items = _ITEMS[container.__name__]
    samples = []
    for s in range(8):
        drawn = {r: [kind_label(fo, kind, 0, r)] + ([kind_label(fo, kind, 1, r)] if r in "ab" else [])
                 for r in RATERS}
        sample = fo.Sample(filepath=f"/kinds/{kind}/{s}" + (".pcd" if kind == "3d" else ".jpg"))
        if kind == "masks":
            sample["metadata"] = fo.ImageMetadata(width=200, height=200)
        if layout == "fields":
            for r in RATERS:
                sample[r] = container(**{items: drawn[r]})
        else:
            sample["ann"] = container(**{items: [lab for r in RATERS for lab in drawn[r]]})
        samples.append(sample)
    params = dict(fields=list(RATERS)) if layout == "fields" else dict(field="ann", rater_attr="annotator")
    return make_dataset(samples), params, container, items


def class_crowd_samples(fo, codes, raters, classes, path: str) -> list:
    """Samples of a class crowd in both rater layouts: ``codes[s, r]`` (-1: rater ``r`` did not label sample
    ``s``) as field ``raters[r]`` and as ``crowd`` (``annotator``), the raters who labelled it in ``assigned``;
    file paths ``path.format(s)``."""
    samples = []
    for s, row in enumerate(codes):
        sample = fo.Sample(filepath=path.format(s))
        labels = []
        for r, c in zip(raters, row):
            if c >= 0:
                sample[r] = fo.Classification(label=classes[c])
                labels.append(fo.Classification(label=classes[c], annotator=r))
        sample["crowd"] = fo.Classifications(classifications=labels)
        sample["assigned"] = [r for r, c in zip(raters, row) if c >= 0]
        samples.append(sample)
    return samples
