"""The multi-rater data model: implicit vs explicit absence, ordering, selection."""

import numpy as np
import pytest

from agreement.data import AnnotationSet, MultiRaterAnnotations


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
