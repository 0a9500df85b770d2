"""The multi-rater data model: implicit vs explicit absence, ordering, selection."""

import numpy as np
import pytest

from agreement.core.data import AnnotationSet, MultiRaterAnnotations


def _set(boxes, labels):
    return AnnotationSet(np.asarray(boxes, float).reshape(-1, 4), labels, [f"id{i}" for i in range(len(labels))])


def test_implicit_and_explicit_absence_are_distinct():
    corpus = MultiRaterAnnotations.from_sets(
        ["s0", "s1"],
        ["b", "a"],
        [
            {"a": _set([[0.1, 0.1, 0.2, 0.2]], ["cat"]), "b": AnnotationSet.empty()},
            {"a": None, "b": _set([[0.5, 0.5, 0.1, 0.1], [0, 0, 0.1, 0.1]], ["dog", "cat"])},
        ],
    )
    assert corpus.raters == ("a", "b")
    assert corpus.assigned.tolist() == [[True, True], [False, True]]
    assert corpus.get(0, "b") is not None and len(corpus.get(0, "b")) == 0  # explicit absence
    assert corpus.get(1, "a") is None  # implicit absence
    assert corpus.counts().tolist() == [[1, 0], [0, 2]]
    assert corpus.get(1, "b").labels.tolist() == ["dog", "cat"]  # order kept
    assert list(corpus.iter_rater_pairs(0)) == [(0, 1)]
    assert list(corpus.iter_rater_pairs(1)) == []
    s = corpus.summary()
    assert s["per_rater"]["b"] == {"assigned_samples": 2, "annotations": 2, "explicit_absence_samples": 1}


def test_rows_are_sorted_by_sample_then_rater_whatever_the_input_order():
    boxes = np.array([[0.1, 0.1, 0.1, 0.1], [0.2, 0.2, 0.1, 0.1], [0.3, 0.3, 0.1, 0.1], [0.4, 0.4, 0.1, 0.1]])
    corpus = MultiRaterAnnotations(
        sample_ids=["s0", "s1"], raters=("a", "b"), assigned=np.ones((2, 2), bool), boxes=boxes,
        labels=["w", "x", "y", "z"], label_ids=[1, 2, 3, 4], sample_index=[1, 0, 1, 0], rater_index=[0, 1, 1, 0],
    )
    assert corpus.sample_index.tolist() == [0, 0, 1, 1]
    assert corpus.rater_index.tolist() == [0, 1, 0, 1]
    assert corpus.labels.tolist() == ["z", "x", "w", "y"]
    assert corpus.get(1, 1).boxes.tolist() == [[0.3, 0.3, 0.1, 0.1]]


def test_annotation_of_unassigned_rater_is_rejected():
    with pytest.raises(ValueError, match="not assigned"):
        MultiRaterAnnotations(
            sample_ids=["s0"], raters=("a", "b"), assigned=[[True, False]], boxes=[[0, 0, 0.1, 0.1]],
            labels=["x"], label_ids=[None], sample_index=[0], rater_index=[1],
        )


def test_select_samples_keeps_cells():
    corpus = MultiRaterAnnotations.from_sets(
        ["s0", "s1", "s2"], ["a", "b"],
        [{"a": _set([[0, 0, 0.1, 0.1]], ["x"])}, {"a": AnnotationSet.empty(), "b": _set([[0, 0, 0.2, 0.2]], ["y"])},
         {"b": _set([[0.5, 0.5, 0.1, 0.1]], ["z"])}],
    )
    sub = corpus.select_samples([2, 1])
    assert sub.sample_ids.tolist() == ["s2", "s1"]
    assert sub.assigned.tolist() == [[False, True], [True, True]]
    assert sub.get(0, "b").labels.tolist() == ["z"]
    assert sub.get(1, "b").labels.tolist() == ["y"]
    assert len(sub.get(1, "a")) == 0


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError):
        AnnotationSet(np.zeros((2, 4)), ["a"], None)


def _columns(c: MultiRaterAnnotations) -> dict:
    names = ("sample_ids", "assigned", "boxes", "labels", "label_ids", "sample_index", "rater_index", "image_sizes",
             "sample_names", "keypoints", "offsets")
    return {n: np.asarray(getattr(c, n)).tolist() for n in names} | {"polygons": [np.asarray(p).tolist()
                                                                                 for p in c.polygons]}


def test_concat_of_parts_is_the_corpus():
    """Joining consecutive parts (a view read in parts) gives back the corpus, column for column; parts
    with shorter skeletons are padded with unlabelled points."""
    rng = np.random.default_rng(3)
    sets = []
    for _s in range(7):
        per = {}
        for r in ("a", "b", "c"):
            if rng.random() < 0.2:
                continue  # implicit absence
            n = int(rng.integers(0, 3))
            per[r] = _set(rng.random((n, 4)) * 0.5, [str(x) for x in rng.choice(["x", "y"], n)])
        sets.append(per)
    corpus = MultiRaterAnnotations.from_sets([f"s{i}" for i in range(7)], ["a", "b", "c"], sets)
    N = len(corpus)
    K = 3
    kps = rng.random((N, K, 2))
    kps[corpus.sample_index < 3, 2] = np.nan  # the first part labels two points only
    polys = [rng.random((4, 2)) for _ in range(N)]
    full = MultiRaterAnnotations(
        sample_ids=corpus.sample_ids, raters=corpus.raters, assigned=corpus.assigned, boxes=corpus.boxes,
        labels=corpus.labels, label_ids=corpus.label_ids, sample_index=corpus.sample_index,
        rater_index=corpus.rater_index, keypoints=kps, polygons=polys, classes=("x", "y"))
    first, second = full.select_samples(np.arange(3)), full.select_samples(np.arange(3, 7))
    first = MultiRaterAnnotations(**{**{n: getattr(first, n) for n in (
        "sample_ids", "raters", "assigned", "boxes", "labels", "label_ids", "sample_index", "rater_index",
        "polygons", "classes")}, "keypoints": first.keypoints[:, :2]})  # a part whose skeletons are shorter
    joined = MultiRaterAnnotations.concat([first, second])
    np.testing.assert_equal(_columns(joined), _columns(full))  # NaN (unlabelled points) equal to NaN
    with pytest.raises(ValueError, match="same raters"):
        MultiRaterAnnotations.concat([first, MultiRaterAnnotations.from_sets(["t"], ["a", "z"], [{}])])
