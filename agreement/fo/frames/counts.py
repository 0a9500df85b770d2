"""Per-rater-pair counts of a KαLOS run computed per frame of videos (a frame run), read from the frames.

:func:`agreement.fo.panel.rater_counts.kalos_pair_counts` reads a run's labels as
the run read them; a frame run read the frames of its videos as its samples
(:mod:`agreement.fo.frames.units`), which a video view cannot be read as.
:func:`frame_pair_counts` reads the same frames directly: every frame of the
run's videos is a sample, a rater is assigned to every frame of a video in
which it labelled some frame (or, with one field carrying the rater in an
attribute, to the videos of the run's ``raters_field`` when it has one), and
each label's unit is the ``{key}_unit`` the run wrote on it. The counts are
those of :func:`agreement.reporting.pair_statistics.pair_unit_agreement`, as for an
image run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agreement.reporting.pair_statistics import pair_unit_agreement

__all__ = ["frame_pair_counts"]


def _frame_rows(view, path: str, extra: list[str]) -> tuple[list, list]:
    """Per frame of ``view``'s videos (video order, then frame order): its video's position and the values
    of ``path`` + ``extra`` (label lists, ``None`` where the frame lacks the field)."""
    values = view.values(["frames.id"] + [f"{path}.{e}" for e in extra])
    video: list[int] = []
    columns: list[list[Any]] = [[] for _ in extra]
    for v, frame_ids in enumerate(values[0]):
        n = len(frame_ids or [])
        video += [v] * n
        for c, col in enumerate(values[1:]):
            columns[c] += list(col[v] or [None] * n)
    return video, columns


def frame_pair_counts(view, info: dict) -> dict[str, dict[str, int]]:
    """``"a|b"`` (``a < b``) → ``{"n_shared", "n_units", "n_agree"}`` over the frames of KαLOS frame run
    ``info``'s videos in ``view`` (module docstring): shared frames, the units either rater drew on them and
    those both drew with the same class."""
    from agreement.fo.panel.video_figures import video_run_info
    from agreement.fo.storage.projection import LIST_ATTRS

    layout = video_run_info(view, info).get("input") or {}
    key = info["key"]
    dataset = view._root_dataset
    attribute = layout.get("layout") == "attribute"
    fields = [layout["field"]] if attribute else list(layout.get("fields") or [])
    attr = layout.get("rater_attr") or "annotator"
    raters: list[str] = [] if attribute else [f[len("frames."):] for f in fields]
    labels: list[tuple[int, str, Any, str]] = []  # (frame, rater, unit, class)
    assigned: set[tuple[int, str]] = set()
    video_of: list[int] = []
    for f in fields:
        lpath = f"{f}.{LIST_ATTRS[dataset.get_field(f).document_type]}"
        extra = ["id", f"{key}_unit", "label"] + ([attr] if attribute else [])
        video_of, (ids, units, classes, *who) = _frame_rows(view, lpath, extra)
        per_video: dict[int, set] = {}
        for k, (lids, lunits, lclasses) in enumerate(zip(ids, units, classes, strict=False)):
            names = who[0][k] if attribute else [f[len("frames."):]] * len(lids or [])
            for u, c, r in zip(lunits or [], lclasses or [], names or [], strict=False):
                labels.append((k, str(r), u, str(c)))
            if lids is not None:  # the field is set on this frame: the rater labelled the video
                per_video.setdefault(video_of[k], set()).update(str(r) for r in names or [])
                if not attribute:
                    per_video[video_of[k]].add(f[len("frames."):])
        frames_of: dict[int, list[int]] = {}
        for k, v in enumerate(video_of):
            frames_of.setdefault(v, []).append(k)
        if attribute and layout.get("raters_field"):
            per_video = {v: {str(r) for r in (rs or [])} for v, rs in enumerate(view.values(layout["raters_field"]))}
        for v, who_v in per_video.items():
            assigned.update((k, r) for k in frames_of.get(v, []) for r in who_v)
    raters = sorted(set(raters) | {r for _, r in assigned} | {r for _, r, _, _ in labels})
    index = {r: i for i, r in enumerate(raters)}
    cells = np.array([(k, index[r]) for k, r in assigned], dtype=np.int64).reshape(-1, 2)
    _, codes = np.unique(np.array([c for *_, c in labels] or [""], dtype=object).astype(str), return_inverse=True)
    res = pair_unit_agreement(assigned_sample=cells[:, 0], assigned_rater=cells[:, 1],
                              label_sample=np.array([k for k, *_ in labels], dtype=np.int64),
                              label_rater=np.array([index[r] for _, r, _, _ in labels], dtype=np.int64),
                              label_unit=np.array([-1 if u is None else int(u) for _, _, u, _ in labels],
                                                  dtype=np.int64),
                              label_code=codes.reshape(-1)[:len(labels)], n_samples=len(video_of), n_raters=len(raters))
    out = {}
    for a, b, s, u, g in zip(res["a"].tolist(), res["b"].tolist(), res["n_shared"].tolist(), res["n_units"].tolist(),
                             res["n_agree"].tolist(), strict=False):
        x, y = sorted([raters[a], raters[b]])
        out[f"{x}|{y}"] = {"n_shared": s, "n_units": u, "n_agree": g}
    return out
