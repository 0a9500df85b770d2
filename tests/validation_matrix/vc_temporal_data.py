"""Designs of temporal segments and frame labels for the 'video_classes' part of the validation matrix.

Temporal segments are lists of clips ``(N, {rater: (supports (k, 2), labels (k,))})``: a rater absent
from a clip's dict was not assigned it (implicit absence); an empty array is explicit absence. They
become boxes in relative time (:func:`agreement.geometry.temporal.supports_to_boxes`), as
``experiments/temporal_chance.py`` does. Frame labels are lists of items ``(video, {rater: (boxes,
labels)})``, one item per frame, the chance pairs drawn between frames of different videos (the
bridge's :func:`agreement.fo.frames.units.chance_groups`).

Every random draw comes from one ``numpy.random.default_rng`` per design and seed, in fixed shapes, and
each rater's draws are their own rows: raters are independent.
"""

from __future__ import annotations

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.temporal import boxes_to_supports, supports_to_boxes

CLASSES = ("jump", "run", "sit", "wave")
RARE = np.array([0.9, 0.05, 0.03, 0.02])
Clips = list
Items = list


def _draw_segments(rng: np.random.Generator, n: int, k: int, rel: tuple[float, float] | None,
                   absolute: tuple[int, int] | None) -> np.ndarray:
    """``k`` segments placed uniformly in a clip of ``n`` frames: lengths a share ``rel`` of the clip or
    ``absolute`` frames (clipped to the clip)."""
    if rel is not None:
        length = np.maximum(1, np.round(rng.uniform(*rel, k) * n)).astype(int)
    else:
        length = np.minimum(n, rng.integers(absolute[0], absolute[1] + 1, k))
    first = np.floor(rng.random(k) * (n - length + 1)).astype(int) + 1
    return np.stack([first, first + length - 1], 1)


def random_clips(seed: int, heterogeneous: bool) -> Clips:
    """Independent random raters. Homogeneous: 80 clips of 120–600 frames, 3 raters on every clip, 1–3
    segments of 5–30 % of the clip, 2 equally likely classes. Heterogeneous: 150 clips of 60 to 6,000
    frames (log-uniform), a crowd of 200 raters of whom 2–5 rate each clip, 1–50 segments of 5–30 frames
    per rater and clip, classes of prior 0.9/0.05/0.03/0.02."""
    rng = np.random.default_rng(seed)
    if not heterogeneous:
        S, raters = 80, [f"r{i}" for i in range(3)]
        lengths = rng.integers(120, 601, S)
        who = np.ones((S, 3), bool)
    else:
        S, R = 150, 200
        raters = [f"w{i:03d}" for i in range(R)]
        lengths = np.round(60 * 100 ** rng.random(S)).astype(int)
        m = rng.integers(2, 6, S)
        who = np.argsort(rng.random((S, R)), axis=1).argsort(axis=1) < m[:, None]
    clips = []
    for s, n in enumerate(lengths):
        item = {}
        for r in np.flatnonzero(who[s]):
            if heterogeneous:
                k = int(rng.integers(1, 51))
                sup = _draw_segments(rng, int(n), k, None, (5, 30))
                lab = np.array(CLASSES, dtype=object)[rng.choice(4, k, p=RARE)]
            else:
                k = int(rng.integers(1, 4))
                sup = _draw_segments(rng, int(n), k, (0.05, 0.3), None)
                lab = np.array(CLASSES[:2], dtype=object)[rng.integers(0, 2, k)]
            item[raters[r]] = (sup, lab)
        clips.append((int(n), item))
    return clips


def true_clips(seed: int, n_clips: int = 60, classes: tuple = CLASSES[:2]) -> list:
    """Per clip of 120–600 frames: 2–4 true segments (one per equal slot, 40–90 % of it), their classes and
    the standard normal boundary draws of 3 raters (coupled across noise levels)."""
    rng = np.random.default_rng(1000 + seed)
    out = []
    for n in rng.integers(120, 601, n_clips):
        k = int(rng.integers(2, 5))
        slot = n / k
        length = rng.uniform(0.4, 0.9, k) * slot
        start = np.arange(k) * slot + rng.random(k) * (slot - length)
        truth = np.stack([np.floor(start) + 1, np.floor(start + length)], 1).astype(int)
        out.append((int(n), truth, np.array(classes, dtype=object)[rng.integers(0, len(classes), k)],
                    rng.standard_normal((3, k, 2))))
    return out


def jittered(truth: list, m: float) -> Clips:
    """Each rater's copy of the true segments, every boundary moved by ``round(m L z)`` frames (``L`` the
    segment's length), clipped to the clip; crossed ends become the frame at their mean."""
    clips = []
    for n, seg, labels, z in truth:
        length = seg[:, 1] - seg[:, 0] + 1
        raters = {}
        for j in range(3):
            s = np.clip(seg + np.round(m * length[:, None] * z[j]), 1, n)
            crossed = s[:, 0] > s[:, 1]
            s[crossed] = np.floor(s[crossed].mean(axis=1, keepdims=True))
            raters[f"r{j}"] = (s.astype(int), labels)
        clips.append((n, raters))
    return clips


def resampled(clips: Clips, factor: float) -> Clips:
    """Every clip at ``factor`` times its frame rate (``N' = round(factor N)``, supports by relative time)."""
    out = []
    for n, raters in clips:
        m = max(1, int(round(factor * n)))
        out.append((m, {r: (boxes_to_supports(supports_to_boxes(s, n), m), lab) for r, (s, lab) in raters.items()}))
    return out


def clips_to_items(clips: Clips) -> tuple[Items, np.ndarray]:
    """Clips as items of boxes in relative time (the group slot holds the clip's frame count: segments
    have no groups, their chance strata come from the lengths), and each clip's frame count."""
    items = [(n, {r: (supports_to_boxes(sup, n) if len(sup) else np.zeros((0, 4)), lab)
                  for r, (sup, lab) in raters.items()}) for s, (n, raters) in enumerate(clips)]
    return items, np.array([n for n, _ in clips])


def corpus(items: Items, ids: list[str] | None = None) -> tuple[MultiRaterAnnotations, np.ndarray]:
    """Items ``(group, {rater: (boxes, labels)})`` as a corpus (raters sorted by name), and the group of
    each sample. ``ids``: the sample ids (default ``item0000``...)."""
    raters = tuple(sorted({r for _, d in items for r in d}))
    col = {r: i for i, r in enumerate(raters)}
    assigned = np.zeros((len(items), len(raters)), bool)
    boxes, labels, s_idx, r_idx = [np.zeros((0, 4))], [], [], []
    for s, (_, d) in enumerate(items):
        for r, (b, lab) in d.items():
            assigned[s, col[r]] = True
            boxes.append(np.asarray(b, np.float64).reshape(-1, 4))
            labels += list(lab)
            s_idx += [s] * len(lab)
            r_idx += [col[r]] * len(lab)
    N = len(labels)
    ids = ids if ids is not None else [f"item{s:05d}" for s in range(len(items))]
    data = MultiRaterAnnotations(
        sample_ids=np.array(ids, dtype=object), raters=raters, assigned=assigned,
        boxes=np.concatenate(boxes), labels=np.array(labels, dtype=object), label_ids=np.full(N, None, dtype=object),
        sample_index=np.array(s_idx, dtype=np.intp), rater_index=np.array(r_idx, dtype=np.intp))
    return data, np.array([g for g, _ in items], dtype=np.int64)


# ----------------------------------------------------------------------------- frame labels

def frame_items(videos_by_rater: dict, assigned: dict | None = None) -> Items:
    """Frame labels as items: one item per frame of every video (``{rater: [VideoLabels]}``, the same
    videos for every rater), the video as the group. ``assigned[rater]``: the video indices the rater
    was assigned (default all); an assigned rater has an empty list on frames where it drew nothing."""
    raters = list(videos_by_rater)
    n_videos = len(videos_by_rater[raters[0]])
    items: Items = []
    for v in range(n_videos):
        F = videos_by_rater[raters[0]][v].num_frames
        per = {}
        for r in raters:
            if assigned is not None and v not in assigned[r]:
                continue
            vid = videos_by_rater[r][v]
            order = np.argsort(vid.frames, kind="stable")
            f = vid.frames[order]
            cut = np.searchsorted(f, np.arange(1, F + 2))
            per[r] = (vid.boxes[order], np.asarray(vid.labels, dtype=object)[order], cut)
        for k in range(F):
            items.append((v, {r: (b[c[k]:c[k + 1]], lab[c[k]:c[k + 1]]) for r, (b, lab, c) in per.items()}))
    return items
