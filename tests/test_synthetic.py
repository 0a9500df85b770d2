"""Tests of the synthetic demo data (scenes, rendering, simulated raters).

Fast and FiftyOne-free.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import cv2
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from agreement.core.data import MultiRaterAnnotations
from agreement.core.validation import validate_boxes
from agreement.simulate.synthetic import (
    CLASSES,
    DEMO_PROFILES,
    SIMILAR_CLASSES,
    RaterProfile,
    Scene,
    box_sizes,
    generate_scenes,
    ground_truth,
    object_mask,
    render_scene,
    simulate_demo_raters,
    simulate_rater,
    write_scenes,
)

N_SCENES = 300
_SMALL_SCENES = generate_scenes(num_images=30, seed=5)


@pytest.fixture(scope="module")
def scenes() -> list[Scene]:
    return generate_scenes(num_images=N_SCENES, seed=0)


@pytest.fixture(scope="module")
def corpus(scenes) -> MultiRaterAnnotations:
    return simulate_demo_raters(scenes, seed=0)


# ------------------------------------------------------------------ helpers
def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise IoU of relative [x, y, w, h] boxes, (len(a), len(b))."""
    ax0, ay0, ax1, ay1 = a[:, 0, None], a[:, 1, None], (a[:, 0] + a[:, 2])[:, None], (a[:, 1] + a[:, 3])[:, None]
    bx0, by0, bx1, by1 = b[None, :, 0], b[None, :, 1], (b[:, 0] + b[:, 2])[None], (b[:, 1] + b[:, 3])[None]
    iw = np.clip(np.minimum(ax1, bx1) - np.maximum(ax0, bx0), 0, None)
    ih = np.clip(np.minimum(ay1, by1) - np.maximum(ay0, by0), 0, None)
    inter = iw * ih
    union = a[:, 2, None] * a[:, 3, None] + b[None, :, 2] * b[None, :, 3] - inter
    return inter / np.maximum(union, 1e-12)


def _matches(scenes, corpus, rater, min_iou=0.3):
    """Greedy one-to-one IoU matches of a rater's boxes to the truth.

    Yields (truth label, rater label, iou) per match."""
    out = []
    for s, scene in enumerate(scenes):
        aset = corpus.get(s, rater)
        if aset is None or not len(aset) or not len(scene):
            continue
        iou = _iou(scene.boxes, aset.boxes)
        while True:
            i, j = np.unravel_index(np.argmax(iou), iou.shape)
            if iou[i, j] < min_iou:
                break
            out.append((scene.labels[i], aset.labels[j], iou[i, j]))
            iou[i, :] = -1
            iou[:, j] = -1
    return out


def _assert_valid_boxes(boxes: np.ndarray) -> None:
    boxes = np.asarray(boxes).reshape(-1, 4)
    assert np.isfinite(boxes).all()
    assert (boxes[:, 2] > 0).all() and (boxes[:, 3] > 0).all()
    assert (boxes[:, :2] >= 0).all()
    assert (boxes[:, 0] + boxes[:, 2] <= 1 + 1e-12).all()
    assert (boxes[:, 1] + boxes[:, 3] <= 1 + 1e-12).all()
    validate_boxes(boxes, ["synthetic"] * len(boxes), policy="error", tolerance=1e-12)


# ------------------------------------------------------------------- scenes
def test_no_fiftyone_import():
    code = "import sys, agreement.simulate.synthetic; assert 'fiftyone' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(os.path.dirname(__file__)))


def test_generate_is_deterministic(scenes):
    again = generate_scenes(num_images=N_SCENES, seed=0)
    for a, b in zip(scenes, again):
        assert a.name == b.name
        np.testing.assert_array_equal(a.boxes, b.boxes)
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_array_equal(a.colors, b.colors)
        assert all(np.array_equal(u, v) for u, v in zip(a.vertices, b.vertices))
    # A prefix of the corpus does not depend on its length.
    short = generate_scenes(num_images=5, seed=0)
    for a, b in zip(short, scenes[:5]):
        np.testing.assert_array_equal(a.boxes, b.boxes)
    other = generate_scenes(num_images=5, seed=1)
    assert any(
        len(a) != len(b) or not np.array_equal(a.boxes, b.boxes) for a, b in zip(other, short)
    )


def test_scene_contents(scenes):
    assert [s.name for s in scenes[:2]] == ["scene_0001.png", "scene_0002.png"]
    counts = np.array([len(s) for s in scenes])
    assert counts.min() == 0 and counts.max() <= 12
    assert 5 <= (counts == 0).sum() <= 0.15 * N_SCENES  # a few empty images
    labels = np.concatenate([s.labels for s in scenes])
    assert set(labels) == set(CLASSES)
    assert set(SIMILAR_CLASSES) <= set(CLASSES)
    boxes = np.concatenate([s.boxes for s in scenes])
    _assert_valid_boxes(boxes)
    # Sizes span small to large (relative to the shorter side, 480 px).
    side_frac = np.maximum(boxes[:, 2] * 640, boxes[:, 3] * 480) / 480
    assert side_frac.min() < 0.03 and side_frac.max() > 0.3
    sizes = box_sizes(boxes)
    assert 0.2 < (sizes < 0.06).mean() < 0.6  # plenty of small objects
    for s in scenes:
        assert s.width == 640 and s.height == 480
        assert s.labels.dtype == object and s.boxes.shape == (len(s), 4)
        # Limited overlap: at most 15 % of the smaller box.
        pb = s.pixel_boxes
        for i in range(len(pb)):
            for j in range(i + 1, len(pb)):
                iw = min(pb[i, 2], pb[j, 2]) - max(pb[i, 0], pb[j, 0]) + 1
                ih = min(pb[i, 3], pb[j, 3]) - max(pb[i, 1], pb[j, 1]) + 1
                inter = max(iw, 0) * max(ih, 0)
                area = lambda b: (b[2] - b[0] + 1) * (b[3] - b[1] + 1)  # noqa: E731
                assert inter <= 0.15 * min(area(pb[i]), area(pb[j])) + 1e-9


def test_generate_validates_arguments():
    with pytest.raises(ValueError):
        generate_scenes(num_images=-1)
    with pytest.raises(ValueError):
        generate_scenes(num_images=3, seed=-2)
    with pytest.raises(ValueError):
        generate_scenes(num_images=3, image_size=(10, 10))


def test_custom_image_size():
    for s in generate_scenes(num_images=10, seed=3, image_size=(320, 200)):
        assert (s.width, s.height) == (320, 200)
        _assert_valid_boxes(s.boxes)
        assert render_scene(s, seed=3).shape == (200, 320, 3)


# ---------------------------------------------------------------- rendering
def test_render_is_deterministic(scenes):
    a = render_scene(scenes[1], seed=0)
    assert a.shape == (480, 640, 3) and a.dtype == np.uint8
    np.testing.assert_array_equal(a, render_scene(scenes[1], seed=0))
    assert not np.array_equal(a, render_scene(scenes[1], seed=1))
    # Backgrounds vary per image and are textured, not flat.
    assert not np.array_equal(a, render_scene(scenes[2], seed=0))
    assert a.std() > 10


def test_true_boxes_are_tight_around_drawn_pixels(scenes):
    checked = 0
    for scene in scenes[:40]:
        if not len(scene):
            continue
        img = render_scene(scene, seed=0)
        empty = dataclasses.replace(
            scene, boxes=np.zeros((0, 4)), labels=np.zeros(0, dtype=object),
            vertices=(), colors=np.zeros((0, 3), dtype=np.uint8),
        )
        background = render_scene(empty, seed=0)
        changed = (img != background).any(axis=2)
        pb = scene.pixel_boxes
        for i in range(len(scene)):
            # Only objects whose box (grown by 2 px) touches no other box.
            g = pb[i] + np.array([-2, -2, 2, 2])
            others = np.delete(pb, i, axis=0)
            if len(others) and np.any(
                (others[:, 0] <= g[2]) & (others[:, 2] >= g[0]) & (others[:, 1] <= g[3]) & (others[:, 3] >= g[1])
            ):
                continue
            x0, y0 = max(g[0], 0), max(g[1], 0)
            window = changed[y0:g[3] + 1, x0:g[2] + 1]
            ys, xs = np.nonzero(window)
            drawn = (xs.min() + x0, ys.min() + y0, xs.max() + x0, ys.max() + y0)
            assert drawn == tuple(pb[i]), (scene.name, i)
            # The true relative box is exactly that pixel extent.
            x, y, w, h = scene.boxes[i]
            np.testing.assert_allclose(
                [x * 640, y * 480, (x + w) * 640 - 1, (y + h) * 480 - 1], drawn, atol=1e-9
            )
            # And the shape's own mask has the same extent.
            mys, mxs = np.nonzero(object_mask(scene, i))
            assert (mxs.min(), mys.min(), mxs.max(), mys.max()) == drawn
            checked += 1
    assert checked >= 30


def test_write_scenes(tmp_path):
    few = generate_scenes(num_images=4, seed=7)
    paths = write_scenes(few, tmp_path / "imgs", seed=7, workers=2)
    assert [os.path.basename(p) for p in paths] == [s.name for s in few]
    for scene, path in zip(few, paths):
        assert os.path.isabs(path)
        np.testing.assert_array_equal(cv2.imread(path), render_scene(scene, seed=7))
    # Existing files of the right size are kept; overwrite re-renders.
    with open(paths[0], "r+b") as f:  # corrupt the pixels, keep the header
        f.seek(60)
        f.write(b"\x00" * 4)
    mtimes = [os.stat(p).st_mtime_ns for p in paths]
    assert write_scenes(few, tmp_path / "imgs", seed=7, workers=1) == paths
    assert [os.stat(p).st_mtime_ns for p in paths] == mtimes
    write_scenes(few, tmp_path / "imgs", seed=7, overwrite=True)
    np.testing.assert_array_equal(cv2.imread(paths[0]), render_scene(few[0], seed=7))
    # A file of the wrong size is replaced.
    cv2.imwrite(paths[1], np.zeros((10, 10, 3), np.uint8))
    write_scenes(few, tmp_path / "imgs", seed=7)
    assert cv2.imread(paths[1]).shape == (480, 640, 3)


# ------------------------------------------------------------------- raters
def test_demo_profiles_are_distinct_and_documented():
    names = [p.name for p in DEMO_PROFILES]
    assert len(names) >= 5 and len(set(names)) == len(names)
    assert {"careful", "sloppy", "misses_small", "confuses_classes", "part_time"} <= set(names)
    assert all(p.description for p in DEMO_PROFILES)
    assert len({dataclasses.astuple(dataclasses.replace(p, name="x", description="")) for p in DEMO_PROFILES}) == len(names)
    import agreement.simulate.synthetic.demo_raters as dr

    for name in names:
        assert name in dr.__doc__


def test_corpus_layout(scenes, corpus):
    assert list(corpus.sample_ids) == [s.name for s in scenes]
    assert set(corpus.raters) == {p.name for p in DEMO_PROFILES}
    np.testing.assert_array_equal(corpus.image_sizes, np.tile([640.0, 480.0], (N_SCENES, 1)))
    _assert_valid_boxes(corpus.boxes)
    assert set(corpus.labels) <= set(CLASSES)
    assert all(i is None for i in corpus.label_ids)


def test_simulation_is_deterministic_and_order_independent(scenes, corpus):
    again = simulate_demo_raters(scenes, profiles=tuple(reversed(DEMO_PROFILES)), seed=0)
    for attr in ("assigned", "boxes", "labels", "sample_index", "rater_index"):
        np.testing.assert_array_equal(getattr(corpus, attr), getattr(again, attr))
    assert again.raters == corpus.raters
    # Scene order does not matter either: per sample, the same sets.
    rev = simulate_demo_raters(scenes[::-1][:20], seed=0)
    for k in range(len(scenes[::-1][:20])):
        s = N_SCENES - 1 - k
        for r in corpus.raters:
            a, b = corpus.get(s, r), rev.get(k, r)
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a.boxes, b.boxes)
    # Adding a rater leaves the others unchanged.
    extra = RaterProfile(name="zz_extra", miss_rate=0.5)
    more = simulate_demo_raters(scenes[:30], profiles=(*DEMO_PROFILES, extra), seed=0)
    base = simulate_demo_raters(scenes[:30], seed=0)
    for s in range(30):
        for r in base.raters:
            a, b = base.get(s, r), more.get(s, r)
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a.boxes, b.boxes)
    other = simulate_demo_raters(scenes[:30], seed=1)
    assert not np.array_equal(other.boxes, base.boxes[: len(other.boxes)]) or len(other) != len(base)


def test_careful_is_close_to_truth(scenes, corpus):
    m = _matches(scenes, corpus, "careful")
    n_true = sum(len(s) for s in scenes)
    assert len(m) >= 0.97 * n_true
    ious = np.array([x[2] for x in m])
    assert np.median(ious) > 0.9
    assert all(t == r for t, r, _ in m)


def test_sloppy_boxes_deviate_more_than_careful(scenes, corpus):
    careful = np.array([x[2] for x in _matches(scenes, corpus, "careful")])
    sloppy = np.array([x[2] for x in _matches(scenes, corpus, "sloppy")])
    assert (1 - sloppy).mean() > 3 * (1 - careful).mean()
    assert sloppy.mean() < 0.85


def test_misses_small_drops_small_objects(scenes, corpus):
    r = corpus.raters.index("misses_small")
    c = corpus.raters.index("careful")
    truth_small = (box_sizes(np.concatenate([s.boxes for s in scenes])) < 0.06).sum()
    small = lambda k: (box_sizes(corpus.boxes[corpus.rater_index == k]) < 0.06).sum()  # noqa: E731
    assert small(r) < 0.3 * truth_small
    assert small(c) > 0.85 * truth_small
    # Large objects are still found.
    m = _matches(scenes, corpus, "misses_small", min_iou=0.5)
    truth_large = (box_sizes(np.concatenate([s.boxes for s in scenes])) >= 0.1).sum()
    assert len(m) > truth_large


def test_confuses_classes_swaps_the_similar_pair(scenes, corpus):
    m = _matches(scenes, corpus, "confuses_classes", min_iou=0.5)
    a, b = SIMILAR_CLASSES
    swap = {a: b, b: a}
    similar = [(t, r) for t, r, _ in m if t in swap]
    assert len(similar) > 100
    swapped = np.mean([r == swap[t] for t, r in similar])
    assert 0.45 < swapped < 0.75
    others = [(t, r) for t, r, _ in m if t not in swap]
    assert all(t == r for t, r in others)
    # Nobody else confuses them.
    for rater in ("careful", "misses_small", "part_time"):
        assert all(t == r for t, r, _ in _matches(scenes, corpus, rater, min_iou=0.5))


def test_part_time_is_unassigned_on_a_third(corpus):
    assigned = corpus.assigned
    p = corpus.raters.index("part_time")
    unassigned = 1 - assigned[:, p].mean()
    assert 0.25 <= unassigned <= 0.42
    others = [k for k in range(corpus.num_raters) if k != p]
    assert assigned[:, others].all()
    for s in np.flatnonzero(~assigned[:, p])[:10]:
        assert corpus.get(s, "part_time") is None
        assert "part_time" not in corpus.sets(s)


def test_empty_images_give_explicit_absence(scenes, corpus):
    empty = [s for s, scene in enumerate(scenes) if len(scene) == 0]
    assert empty
    n_cells = n_empty_sets = 0
    for s in empty:
        for r in corpus.raters:
            aset = corpus.get(s, r)
            if not corpus.assigned[s, corpus.raters.index(r)]:
                assert aset is None
                continue
            assert aset is not None
            n_cells += 1
            n_empty_sets += len(aset) == 0
    assert n_empty_sets >= 0.8 * n_cells
    # Careful raters find nothing where there is nothing (false positives are rare).
    careful = corpus.raters.index("careful")
    assert corpus.counts()[empty, careful].sum() <= 2


def test_ground_truth(scenes):
    gt = ground_truth(scenes)
    assert gt.raters == ("truth",)
    assert gt.assigned.all()
    np.testing.assert_array_equal(gt.counts()[:, 0], [len(s) for s in scenes])
    np.testing.assert_array_equal(gt.boxes, np.concatenate([s.boxes for s in scenes]))
    np.testing.assert_array_equal(gt.labels, np.concatenate([s.labels for s in scenes]))
    assert gt.polygons is None
    gtp = ground_truth(scenes[:10], with_polygons=True)
    assert gtp.polygons is not None and len(gtp.polygons) == len(gtp)
    for (ring,), box in zip(gtp.polygons, gtp.boxes):
        assert (ring[:, 0] >= box[0]).all() and (ring[:, 0] <= box[0] + box[2]).all()
        assert (ring[:, 1] >= box[1]).all() and (ring[:, 1] <= box[1] + box[3]).all()


def test_false_positives_and_invalid_profiles(scenes):
    only_fp = RaterProfile(name="hallucinates", miss_rate=1.0, false_positive_rate=2.0)
    sets = [simulate_rater(s, only_fp, seed=0) for s in scenes[:100]]
    counts = np.array([len(a) for a in sets])
    assert 1.5 < counts.mean() < 2.5
    boxes = np.concatenate([a.boxes for a in sets])
    _assert_valid_boxes(boxes)
    with pytest.raises(ValueError):
        RaterProfile(name="bad", miss_rate=1.5)
    with pytest.raises(ValueError):
        RaterProfile(name="bad", position_jitter=-0.1)
    with pytest.raises(ValueError):
        RaterProfile(name="bad", confusions=(("circle", "circle"),))
    with pytest.raises(ValueError):
        simulate_demo_raters(scenes[:2], profiles=(DEMO_PROFILES[0], DEMO_PROFILES[0]))


@settings(max_examples=40, deadline=None)
@given(
    assignment=st.floats(0.0, 1.0),
    miss=st.floats(0.0, 1.0),
    small_miss=st.floats(0.0, 1.0),
    pos=st.floats(0.0, 3.0),
    size=st.floats(0.0, 3.0),
    fp=st.floats(0.0, 5.0),
    seed=st.integers(0, 2**32 - 1),
    index=st.integers(0, 29),
)
def test_simulated_boxes_are_always_valid(assignment, miss, small_miss, pos, size, fp, seed, index):
    scene = _SMALL_SCENES[index]
    profile = RaterProfile(
        name="h", assignment_rate=assignment, miss_rate=miss, small_miss_rate=small_miss,
        position_jitter=pos, size_jitter=size, false_positive_rate=fp,
        confusions=(SIMILAR_CLASSES,), confusion_rate=0.5,
    )
    aset = simulate_rater(scene, profile, seed=seed)
    if assignment == 1.0:
        assert aset is not None
    if assignment == 0.0:
        assert aset is None
    if aset is not None:
        _assert_valid_boxes(aset.boxes)
        assert set(aset.labels) <= set(CLASSES)
        if fp == 0.0:
            assert len(aset) <= len(scene)
        again = simulate_rater(scene, profile, seed=seed)
        np.testing.assert_array_equal(aset.boxes, again.boxes)

