"""Designs of the 'images' part of the validation matrix built from a reference rater: noisy copies (the
simulator's perturbations, coupled across levels), the degenerate designs and the invariance transforms.
All act on the box corpus of :class:`~validation_matrix.images_corpora.Objects`; the label types follow
through :func:`~validation_matrix.images_corpora.realise` (the perturbed boxes keep their source's label id,
hence its shape)."""

from __future__ import annotations

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.simulate.noise import perturbation_series
from validation_matrix.images_corpora import Objects


def _with(data: MultiRaterAnnotations, keep_rows: np.ndarray | None = None, **kw) -> MultiRaterAnnotations:
    """``data`` with some columns replaced (rows ``keep_rows`` only, when given)."""
    rows = np.arange(len(data)) if keep_rows is None else np.asarray(keep_rows, dtype=np.intp)
    base = dict(sample_ids=data.sample_ids, raters=data.raters, assigned=data.assigned, boxes=data.boxes[rows],
                labels=data.labels[rows], label_ids=data.label_ids[rows], sample_index=data.sample_index[rows],
                rater_index=data.rater_index[rows], image_sizes=data.image_sizes, sample_names=data.sample_names)
    base.update(kw)
    return MultiRaterAnnotations(**base)


def merge_raters(parts: list[MultiRaterAnnotations]) -> MultiRaterAnnotations:
    """One corpus of the raters of ``parts`` (the same samples, disjoint rater names)."""
    first = parts[0]
    raters = [r for p in parts for r in p.raters]
    shift = np.cumsum([0] + [p.num_raters for p in parts[:-1]])
    return MultiRaterAnnotations(
        sample_ids=first.sample_ids, raters=tuple(raters), assigned=np.concatenate([p.assigned for p in parts], 1),
        boxes=np.concatenate([p.boxes for p in parts]), labels=np.concatenate([p.labels for p in parts]),
        label_ids=np.concatenate([p.label_ids for p in parts]),
        sample_index=np.concatenate([p.sample_index for p in parts]),
        rater_index=np.concatenate([p.rater_index + k for p, k in zip(parts, shift)]),
        image_sizes=first.image_sizes, sample_names=first.sample_names)


def noisy(ref: Objects, stages: list[tuple[str, float]], seed: int, name: str) -> MultiRaterAnnotations:
    """The reference rater under the simulator's perturbations ``stages`` applied in turn, as rater ``name``."""
    data = ref.data
    for k, (kind, gamma) in enumerate(stages):
        data = perturbation_series(data, kind, [gamma], seed=seed, names=[name if k == len(stages) - 1 else "tmp"])
    return data


def pair(ref: Objects, stages: list[tuple[str, float]], seed: int = 0, name: str = "noisy") -> Objects:
    """The reference and a perturbed copy of it (two raters)."""
    return Objects(merge_raters([ref.data, noisy(ref, stages, seed, name)]), ref.shapes)


def crowd(ref: Objects) -> Objects:
    """Three raters with every kind of disagreement: the reference and two copies under shift 0.2, swap 0.3
    and drop 0.2 (independent draws): the corpus of the invariance checks."""
    stages = [("shift", 0.2), ("swap", 0.3), ("drop", 0.2)]
    return Objects(merge_raters([ref.data, noisy(ref, stages, 1, "alice"), noisy(ref, stages, 2, "bob")]),
                   ref.shapes)


# --------------------------------------------------------------------------
# Degenerate designs
# --------------------------------------------------------------------------


def _empty_rater(data: MultiRaterAnnotations, name: str) -> MultiRaterAnnotations:
    S = data.num_samples
    return MultiRaterAnnotations(sample_ids=data.sample_ids, raters=(name,), assigned=np.ones((S, 1), bool),
                                 boxes=np.zeros((0, 4)), labels=np.zeros(0, object), label_ids=np.zeros(0, object),
                                 sample_index=np.zeros(0, np.intp), rater_index=np.zeros(0, np.intp),
                                 image_sizes=data.image_sizes, sample_names=data.sample_names)


def degenerate(ref: Objects, design: str) -> Objects:
    """The degenerate ``design`` built from the reference rater (keys of ``PROPERTIES``):

    * ``one_rater``: the reference alone;
    * ``never_meet``: the reference on the first half of the samples, a careful copy (shift 0.1) on the other;
    * ``empty_rater``: the reference and a rater assigned everywhere who labels nothing;
    * ``all_empty``: two raters assigned everywhere, neither labels anything;
    * ``single_class``: one class only, the reference and a careful copy (shift 0.1, drop 0.2).
    """
    data = ref.data
    if design == "one_rater":
        return ref
    if design == "never_meet":
        both = pair(ref, [("shift", 0.1)]).data
        half = np.arange(data.num_samples) < data.num_samples // 2
        assigned = np.stack([~half, half], axis=1)  # raters sorted: "noisy" < "ref"
        keep = np.flatnonzero(assigned[both.sample_index, both.rater_index])
        return Objects(_with(both, keep, assigned=assigned), ref.shapes)
    if design == "empty_rater":
        return Objects(merge_raters([data, _empty_rater(data, "silent")]), ref.shapes)
    if design == "all_empty":
        return Objects(merge_raters([_empty_rater(data, "a"), _empty_rater(data, "b")]), ref.shapes)
    if design == "single_class":
        one = Objects(_with(data, labels=np.full(len(data), "object", dtype=object)), ref.shapes)
        return pair(one, [("shift", 0.1), ("drop", 0.2)])
    raise ValueError(f"unknown degenerate design {design!r}")


# --------------------------------------------------------------------------
# Invariance transforms
# --------------------------------------------------------------------------


def reordered(obj: Objects, seed: int = 0) -> Objects:
    """The same corpus with samples in another order, the labels of every (sample, rater) shuffled and the
    classes renamed (in reversed sort order)."""
    data = obj.data
    rng = np.random.default_rng(seed)
    data = data.select_samples(rng.permutation(data.num_samples))
    rows = rng.permutation(len(data))
    classes = sorted(set(data.labels.tolist()))
    cmap = {c: f"k{len(classes) - i:02d}_{c}" for i, c in enumerate(classes)}
    return Objects(_with(data, rows, labels=np.asarray([cmap[c] for c in data.labels[rows].tolist()], dtype=object)),
                   obj.shapes)


def renamed_raters(obj: Objects) -> Objects:
    """The same corpus with the raters renamed so that their sort order is reversed."""
    data = obj.data
    new = [f"q{data.num_raters - r:02d}_{n}" for r, n in enumerate(data.raters)]
    order = np.argsort(new)  # the corpus keeps raters sorted: rater r moves to position where[r]
    where = np.argsort(order)
    return Objects(_with(data, raters=tuple(np.asarray(new)[order].tolist()), assigned=data.assigned[:, order],
                         rater_index=where[data.rater_index]), obj.shapes)
