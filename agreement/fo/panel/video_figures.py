"""What the panel shows of an agreement run on video frame labels (a *frame run*), as plain dicts.

A frame run (:mod:`agreement.fo.frames.runs`) scores every frame
(``frames.{key}_<suffix>``: KαLOS α, OT score, matched distance, ...) and
aggregates per video (``{key}_frames_mean``, ``_worst``, ``_low``, ``_n``);
its config records the per-frame score in ``params["frames"]`` (``suffix``,
``higher_is_better``, ``threshold``). The panel reads such a run as videos:

* the per-sample score is the video's mean over its frames
  (:func:`frame_run_view` adapts the method's panel view: titles, axis,
  cards that count frames, the video and frame counts);
* a **timeline** of one video (:func:`video_timeline`,
  :func:`timeline_figure`): one row per rater with each of its tracks as a
  horizontal line over the frames where it has that track (a gap: frames
  without it), and under it the per-frame score as a strip, the threshold
  dashed, frames worse than it in red and their stretches shaded;
* the video the timeline shows (:func:`video_choices`,
  :func:`choose_video`): the one asked for when it is in the view, else the
  view's worst (lowest mean; highest for distances).

A temporal-segment run (``TemporalDetections`` of the raters on the
videos, scored per video) gets the same timeline with each rater's segments
as bars and no per-frame strip (:func:`is_temporal_run`).

Readers take a FiftyOne collection (one ``values()`` call per video); the
figure builders take plain dicts.
"""

from __future__ import annotations

import os
import re
from typing import Sequence

import numpy as np

from agreement.reporting.figures.base import count_text, figure, figure_layout, is_finite, plural, sig3
from agreement.reporting.figures.palette import HIGH, LOW, LOW_SHADE, RATER_COLOURS, REFERENCE, SELECTED

__all__ = ["MAX_TIMELINE_RATERS", "MAX_VIDEO_CHOICES", "frame_score_spec", "is_frame_run", "frame_field",
           "is_temporal_run", "video_run_info", "frame_run_view", "frames_wording", "frames_note", "video_choices", "choose_video", "runs_of",
           "bad_frames", "bad_stretches", "video_timeline", "timeline_figure"]

#: The timeline shows at most this many raters (those with the most labels in the video).
MAX_TIMELINE_RATERS = 12
#: The video chooser lists at most this many videos of the view (the worst first).
MAX_VIDEO_CHOICES = 30
#: The plugin's colours (:mod:`agreement.reporting.figures.palette`): a frame worse than the threshold red, the
#: others blue, a stretch of disagreement shaded red; raters told apart by colours that are neither.
BAD_COLOUR, GOOD_COLOUR, SHADE = LOW, HIGH, LOW_SHADE


# --------------------------------------------------------------------------- which run
def frame_score_spec(info: dict) -> dict | None:
    """The per-frame score of a frame run (``{"suffix", "higher_is_better", "threshold"}``), else ``None``.

    A frame run records it in ``params["frames"]`` and writes ``{key}_frames_mean`` per video."""
    frames = (info.get("params") or {}).get("frames")
    if not isinstance(frames, dict) or not frames.get("suffix"):
        return None
    if f"{info['key']}_frames_mean" not in (info.get("sample_fields") or []):
        return None
    return frames


def is_frame_run(info: dict) -> bool:
    """Whether run ``info`` was computed per frame on video frame labels (``frames.<field>``)."""
    return frame_score_spec(info) is not None


def frame_field(info: dict) -> str:
    """The frame field of a frame run's per-frame score (``{key}_<suffix>``, without ``frames.``).

    Args:
        info: the stored info of a frame run (:func:`is_frame_run`).

    Returns:
        The field's name.

    Raises:
        ValueError: ``info`` is not a frame run's.
    """
    spec = frame_score_spec(info)
    if spec is None:
        raise ValueError(f"run {info.get('key')!r} is not a frame run: it has no per-frame score")
    return f"{info['key']}_{spec['suffix']}"


def video_run_info(samples, info: dict) -> dict:
    """``info`` with a recorded ``raters_field`` the video dataset does not have left out: a frame run records
    the one of its frame units (``iaa_video_raters``, the raters of each frame's video), which is every rater
    with a label in the video unless the user gave a field (as of 2026-12, the user's field is not recorded)."""
    layout = info.get("input") or {}
    field = layout.get("raters_field")
    if not field or field in samples._root_dataset.get_field_schema():
        return info
    return {**info, "input": {**layout, "raters_field": None}}


def is_temporal_run(samples, info: dict) -> bool:
    """Whether run ``info`` compared the raters' temporal segments (``TemporalDetections`` sample fields)."""
    from agreement.fo.storage.temporal import is_temporal

    if getattr(samples, "media_type", None) != "video" or is_frame_run(info):
        return False
    layout = info.get("input") or {}
    fields = list(layout.get("fields") or []) or ([layout["field"]] if layout.get("field") else [])
    schema = samples._root_dataset.get_field_schema()
    return bool(fields) and all(is_temporal(getattr(schema.get(f), "document_type", None)) for f in fields)


def _frames_text(text: str) -> str:
    """A label that counts samples, counting frames instead."""
    return re.sub(r"\bsamples\b", "frames", re.sub(r"\bsample\b", "frame", text))


def frame_run_view(view: dict, info: dict) -> dict:
    """The method's panel view (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`) for one of its frame runs: the
    per-sample score is the video's mean over its frames (``{key}_frames_mean``), the run's cards count frames
    and are preceded by the numbers of videos and frames."""
    name = view.get("score_name", "score")
    axis = view.get("score_axis", name)
    note = re.search(r"\(([^()]*)\)\s*$", axis)
    cards = [{"key": "n_videos", "label": "videos", "integer": True},
             {"key": "n_frames", "label": "frames", "integer": True}]
    cards += [{**c, "label": _frames_text(c["label"])} for c in view.get("cards") or []]
    frames = frame_score_spec(info) or {}
    return {
        **view, "score_suffix": "frames_mean", "score_name": f"mean {name}", "item": "video", "cards": cards,
        "score_label": f"mean {name} of the video's frames",
        "score_axis": f"mean {name} of the video's frames" + (f" ({note.group(1)})" if note else ""),
        "view_labels": (f"mean of the videos' mean {name}", "videos without a scored frame"),
        "frames": frames,
    }


def _shared_frames(text: str) -> str:
    """A rater-pair text whose support counts samples, counting the frames they are in a frame run."""
    text = re.sub(r"\bshared sample(s?)\b", r"shared frame\1", text)
    text = re.sub(r"\bshare a sample\b", "share a frame", text)
    return re.sub(r"\b(\d[\d,]*) samples? in view\b", lambda m: count_text(int(m.group(1).replace(",", "")), what="video")
                  + " in view", text)


def _rewrap_subtitle(layout: dict, edit) -> None:
    """``layout``'s subtitle (the lines :func:`agreement.reporting.figures.base.figure_layout` wrote) edited by
    ``edit`` and wrapped again, the room for it adjusted."""
    from agreement.reporting.figures.base import SUBTITLE_CHARS, wrap_lines

    text = layout["title"]["text"]
    head, sep, _ = text.partition("<br><span style='font-size:12px'>")
    old = re.findall(r"<span style='font-size:12px'>(.*?)</span>", text)
    if not sep or not old:
        return
    lines = wrap_lines(edit(" ".join(old)), SUBTITLE_CHARS)
    layout["title"]["text"] = head + "".join(f"<br><span style='font-size:12px'>{line}</span>" for line in lines)
    layout["margin"]["t"] += 16 * (len(lines) - len(old))
    layout["height"] += 16 * (len(lines) - len(old))


def frames_wording(fig: dict) -> dict:
    """A rater-pair heatmap of a frame run, its support named in frames (the run's samples are frames), its
    scope in videos, its drill-down to videos."""
    trace = fig["traces"][0]
    trace["hovertext"] = [[_shared_frames(t).replace("click: the samples where", "click: the videos where")
                           for t in row] for row in trace.get("hovertext") or []]
    _rewrap_subtitle(fig["layout"], lambda t: _shared_frames(t).replace("click a cell: where",
                                                                        "click a cell: the videos where"))
    fig["title"] = _shared_frames(fig["title"])
    return fig


def frames_note(note: str) -> str:
    """The rater-pair heatmap's note of a frame run, its support named in frames."""
    return _shared_frames(note).replace("*Min. shared frames*", "*Min. shared samples* (here: frames)")


# --------------------------------------------------------------------------- which video
def _method_view(info: dict) -> dict:
    """The method's panel view (:data:`agreement.reporting.figures.method_figures.METHOD_VIEWS`; empty for an unknown method)."""
    from agreement.reporting.figures.method_figures import METHOD_VIEWS

    return METHOD_VIEWS.get(info["method"]) or {}


def _worst_first(info: dict) -> bool:
    """Whether the per-video score sorts worst first descending (distances)."""
    frames = frame_score_spec(info)
    if frames is not None:
        return not frames.get("higher_is_better", True)
    return not _method_view(info).get("higher_is_better", True)


def _video_score_field(info: dict) -> str | None:
    """The per-video score: a frame run's mean over frames, else the method's per-sample score."""
    if frame_score_spec(info) is not None:
        return f"{info['key']}_frames_mean"
    suffix = _method_view(info).get("score_suffix")
    return f"{info['key']}_{suffix}" if suffix else None


def video_choices(samples, info: dict, limit: int = MAX_VIDEO_CHOICES) -> list[dict]:
    """The scored videos of ``samples``, worst first, at most ``limit``: ``{"id", "name", "score"}`` (the
    video's per-sample score: a frame run's mean over its frames)."""
    field = _video_score_field(info)
    if field is None or not len(samples):
        return []
    view = samples.exists(field).sort_by(field, reverse=_worst_first(info)).limit(int(limit))
    ids, paths, scores = view.values(["id", "filepath", field])
    return [{"id": i, "name": os.path.basename(p), "score": s} for i, p, s in zip(ids, paths, scores, strict=True)]


def choose_video(samples, info: dict, wanted: str | None = None) -> str | None:
    """The video the timeline shows: ``wanted`` when it is a video of ``samples``, else the worst scored video
    of ``samples``, else its first video (``None`` for an empty view)."""
    if wanted and len(samples.select(wanted)):
        return wanted
    rows = video_choices(samples, info, limit=1)
    if rows:
        return rows[0]["id"]
    ids = samples.limit(1).values("id")
    return ids[0] if ids else None


# --------------------------------------------------------------------------- frames
def runs_of(frames: Sequence[int]) -> list[tuple[int, int]]:
    """The runs of consecutive frame numbers in ``frames`` as ``(first, last)``, in order (duplicates
    ignored): ``[1, 2, 3, 7, 8]`` → ``[(1, 3), (7, 8)]``."""
    f = np.unique(np.asarray(list(frames), dtype=np.int64))
    if f.size == 0:
        return []
    cut = np.nonzero(np.diff(f) != 1)[0]
    starts = np.concatenate([[0], cut + 1])
    ends = np.concatenate([cut, [f.size - 1]])
    return [(int(f[a]), int(f[b])) for a, b in zip(starts, ends, strict=True)]


def bad_frames(frames: Sequence[int], scores: Sequence, threshold: float | None, higher_is_better: bool) -> list[int]:
    """The frames whose score is worse than ``threshold`` (below it, or above it for a distance); frames
    without a score are not counted, nor anything without a threshold."""
    if threshold is None:
        return []
    return [int(f) for f, s in zip(frames, scores, strict=False) if is_finite(s)
            and (float(s) < threshold if higher_is_better else float(s) > threshold)]


def bad_stretches(frames: Sequence[int], scores: Sequence, threshold: float | None,
                  higher_is_better: bool) -> list[tuple[int, int]]:
    """The stretches ``(first, last)`` of consecutive frames worse than ``threshold`` (:func:`bad_frames`):
    the supports of the clips where the raters disagree."""
    return runs_of(bad_frames(frames, scores, threshold, higher_is_better))


def _label_list(samples, path: str) -> str | None:
    """The label list attribute (``detections``, ...) of label field ``path``, ``None`` for one label."""
    from agreement.fo.storage.projection import LIST_ATTRS

    doc_type = getattr(samples._root_dataset.get_field(path), "document_type", None)
    return LIST_ATTRS.get(doc_type) if doc_type is not None else None


def _rater_paths(samples, info: dict) -> list[tuple[str, str | None, str]]:
    """``(field path, rater or None (attribute layout), path of its labels)`` of the run's rater fields."""
    layout = info.get("input") or {}
    names = list(layout.get("fields") or []) or [layout["field"]]
    out = []
    for name in names:
        attr = _label_list(samples, name)
        rater = None if layout.get("layout") == "attribute" else (name[len("frames."):] if name.startswith("frames.")
                                                                   else name)
        out.append((name, rater, f"{name}.{attr}" if attr else name))
    return out


def _tracks_from(rows: dict, rater: str, frame: int, keys: list, labels: list) -> None:
    for k, lab in zip(keys, labels, strict=False):
        entry = rows.setdefault(rater, {}).setdefault(k if k is not None else f"class {lab}", {"frames": [],
                                                                                           "labels": {}})
        entry["frames"].append(int(frame))
        entry["labels"][str(lab)] = entry["labels"].get(str(lab), 0) + 1


def _as_list(x) -> list:
    return [] if x is None else list(x) if isinstance(x, (list, tuple)) else [x]


def _frame_tracks(one, info: dict) -> dict:
    """Per rater, per track (``index``; a label's class when it has none), its frames and classes."""
    layout = info.get("input") or {}
    attr = layout.get("rater_attr") or "annotator"
    rows: dict = {}
    for name, rater, lpath in _rater_paths(one, info):
        is_list = lpath != name
        paths = ["frames.frame_number", f"{lpath}.index", f"{lpath}.label"]
        if rater is None:
            paths.append(f"{lpath}.{attr}")
        values = one.values(paths)
        numbers, indices, labels = values[0][0] or [], values[1][0] or [], values[2][0] or []
        who = values[3][0] if rater is None else [None] * len(numbers)
        for k, frame in enumerate(numbers):
            idx, lab = _as_list(indices[k] if is_list else [indices[k]]), _as_list(labels[k])
            if rater is not None:
                if labels[k] is None and indices[k] is None:
                    continue
                _tracks_from(rows, rater, frame, idx, lab)
                continue
            for r, i, lb in zip(_as_list(who[k]), idx, lab, strict=False):
                _tracks_from(rows, str(r), frame, [i], [lb])
    return rows


def _segment_tracks(one, info: dict) -> dict:
    """Per rater, each temporal segment as a track of the frames it covers."""
    layout = info.get("input") or {}
    attr = layout.get("rater_attr") or "annotator"
    rows: dict = {}
    for _name, rater, lpath in _rater_paths(one, info):
        paths = [f"{lpath}.support", f"{lpath}.label"] + ([f"{lpath}.{attr}"] if rater is None else [])
        values = one.values(paths)
        supports, labels = values[0][0] or [], values[1][0] or []
        who = values[2][0] if rater is None else [rater] * len(supports)
        for k, (support, lab, r) in enumerate(zip(supports, labels, who, strict=False)):
            if support is None:
                continue
            first, last = int(support[0]), int(support[1])
            rows.setdefault(str(r), {})[f"segment {k + 1}"] = {
                "frames": list(range(first, last + 1)), "labels": {str(lab): last - first + 1}}
    return rows


def video_timeline(samples, info: dict, video_id: str) -> dict:
    """What the timeline of video ``video_id`` (of ``samples``) shows, read from the dataset.

    Returns:
        ``{"video", "name", "num_frames", "raters" [(rater, n labels)], "tracks" {rater: [{"track", "label",
        "runs" [(first, last)], "n_frames"}]}, "frames", "scores", "bad", "stretches", "threshold",
        "higher_is_better", "score_name", "video_score", "kind" ("frames" or "segments")}``; a
        temporal-segment run has no per-frame ``scores`` (empty lists).
    """
    one = samples.select(video_id)
    if not len(one):
        raise ValueError(f"video {video_id!r} is not in the view")
    path, count = one.values(["filepath", "metadata.total_frame_count"])
    spec = frame_score_spec(info)
    temporal = spec is None
    rows = _segment_tracks(one, info) if temporal else _frame_tracks(one, info)
    frames: list = []
    scores: list = []
    if not temporal:
        frames, scores = [v[0] or [] for v in one.values(["frames.frame_number", f"frames.{frame_field(info)}"])]
    tracks = {}
    for rater, per in rows.items():
        items = []
        for track, entry in per.items():
            label = "/".join(sorted(entry["labels"], key=lambda c: (-entry["labels"][c], c)))
            items.append({"track": track, "label": label, "runs": runs_of(entry["frames"]),
                          "n_frames": len(set(entry["frames"]))})
        items.sort(key=lambda t: (t["runs"][0][0] if t["runs"] else 0, str(t["track"])))
        tracks[rater] = items
    order = _rater_order(info, tracks)
    field = _video_score_field(info)
    video_score = one.values(field)[0] if field else None
    higher = spec["higher_is_better"] if spec else not _worst_first(info)
    threshold = spec.get("threshold") if spec else None
    n = int(count[0] or 0) or max([f for f in frames] + [r[1] for ts in tracks.values() for t in ts for r in t["runs"]]
                                  + [1])
    return {"video": video_id, "name": os.path.basename(path[0]), "num_frames": n, "raters": order,
            "tracks": tracks, "frames": list(frames), "scores": list(scores),
            "bad": bad_frames(frames, scores, threshold, higher),
            "stretches": bad_stretches(frames, scores, threshold, higher), "threshold": threshold,
            "higher_is_better": higher, "score_name": _method_view(info).get("score_name", "score"),
            "video_score": video_score, "kind": "segments" if temporal else "frames"}


def _rater_order(info: dict, tracks: dict) -> list[tuple[str, int]]:
    """The raters of the run in its order (natural for the attribute layout), each with its labels in the
    video; raters the run has but who drew nothing here are listed with 0."""
    from agreement.fo.panel.rater_tables import natural_key

    layout = info.get("input") or {}
    if layout.get("layout") == "attribute":
        names = sorted(tracks, key=natural_key)
    else:
        names = [f[len("frames."):] if f.startswith("frames.") else f for f in layout.get("fields") or []]
    return [(r, sum(t["n_frames"] for t in tracks.get(r, []))) for r in names]


# --------------------------------------------------------------------------- the figure
def _shown_raters(tl: dict, top: int) -> list[str]:
    """At most ``top`` raters, those with the most labels in the video (ties: the first in the run's order),
    in the run's order."""
    raters = tl["raters"]
    if len(raters) <= top:
        return [r for r, _ in raters]
    keep = {raters[i][0] for i in sorted(range(len(raters)), key=lambda i: (-raters[i][1], i))[:top]}
    return [r for r, _ in raters if r in keep]


def _track_trace(tl: dict, rater: str, row: int, colour: str, width: int = 3) -> dict:
    """One rater's tracks as horizontal lines in its row (each track at its own height within the row)."""
    items = tl["tracks"].get(rater, [])
    xs, ys, hover = [], [], []
    what = "segment" if tl["kind"] == "segments" else "track"
    for k, t in enumerate(items):
        y = row - 0.36 + 0.72 * (k + 0.5) / max(len(items), 1)
        name = t["track"] if tl["kind"] == "segments" else f"{what} {t['track']}"
        for first, last in t["runs"]:
            text = f"{rater} · {name} ({t['label']}): frames {first}–{last}"
            xs += [first - 0.45, last + 0.45, None]
            ys += [y, y, None]
            hover += [text, text, None]
    return {"type": "scatter", "mode": "lines+markers", "x": xs, "y": ys, "name": rater, "hovertext": hover,
            "hovertemplate": "%{hovertext}<extra></extra>", "line": {"color": colour, "width": width},
            "marker": {"size": width + 2, "color": colour}, "connectgaps": False, "showlegend": False, "yaxis": "y"}


def _score_traces(tl: dict, clickable: bool) -> list[dict]:
    """The per-frame score as a line under the tracks, the frames worse than the threshold in red, and the
    threshold dashed (all on the second y axis)."""
    frames, scores = tl["frames"], [float(s) if is_finite(s) else None for s in tl["scores"]]
    bad = set(tl["bad"])
    name = tl["score_name"]
    tip = "<br>click: the clips where the raters disagree in this video" if clickable and tl["stretches"] else ""
    hover = [f"frame {f}: {name} {sig3(s)}" + (" (worse than the threshold)" if f in bad else "") + tip
             for f, s in zip(frames, scores, strict=False)]
    traces = [{"type": "scatter", "mode": "lines+markers", "x": frames, "y": scores, "name": f"{name} per frame",
               "ids": [f"{tl['video']}:{f}" for f in frames], "hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>",
               "line": {"color": REFERENCE, "width": 1}, "connectgaps": False, "showlegend": False,
               "marker": {"size": 6, "color": [BAD_COLOUR if f in bad else GOOD_COLOUR for f in frames]},
               "xaxis": "x", "yaxis": "y2"}]
    if tl["threshold"] is not None and frames:
        traces.append({"type": "scatter", "mode": "lines", "x": [0.5, tl["num_frames"] + 0.5],
                       "y": [tl["threshold"]] * 2, "name": "threshold", "hoverinfo": "skip", "showlegend": False,
                       "line": {"color": BAD_COLOUR, "dash": "dash", "width": 1}, "xaxis": "x", "yaxis": "y2"})
    return traces


def _subtitle(tl: dict, shown: list[str], clickable: bool) -> str:
    parts = []
    if tl["kind"] == "frames":
        n_scored = sum(1 for s in tl["scores"] if is_finite(s))
        worse = "above" if not tl["higher_is_better"] else "below"
        if tl["threshold"] is not None and tl["bad"]:
            parts.append(f"{len(tl['bad'])} of {count_text(n_scored, what='scored frame')} with {tl['score_name']} "
                         f"{worse} {sig3(tl['threshold'])} (red; "
                         f"{count_text(len(tl['stretches']), what='stretch')} shaded)")
        elif tl["threshold"] is not None:
            parts.append(f"no frame of the {count_text(n_scored, what='scored frame')} has {tl['score_name']} "
                         f"{worse} {sig3(tl['threshold'])}")
        parts.append(f"the video's mean {tl['score_name']} {sig3(tl['video_score'])}")
    else:
        parts.append(f"each rater's segments; the video's {tl['score_name']} {sig3(tl['video_score'])}")
    if len(shown) < len(tl["raters"]):
        parts.append(f"the {len(shown)} of {len(tl['raters'])} raters with the most labels here")
    if clickable and tl["stretches"]:
        parts.append("click the score strip: this video's clips where the raters disagree")
    return " · ".join(parts)


def timeline_figure(tl: dict, clickable: bool = True, top: int = MAX_TIMELINE_RATERS,
                    selected: Sequence[int] | None = None) -> dict:
    """The timeline of one video (:func:`video_timeline`): a row per rater (at most ``top``) with its tracks
    (or segments) as lines over their frames; for a frame run, the per-frame score below them (red: worse
    than the threshold, dashed), the bad stretches shaded over both; ``selected`` (a clip's ``[first,
    last]``) outlined. Clickable (``click="video_strip"``): a point of the strip, the video's id as ``id``."""
    shown = _shown_raters(tl, top)
    most = max([len(tl["tracks"].get(r, [])) for r in shown] + [1])  # a row holds a rater's tracks apart
    row_px = min(max(30, 11 * most + 10), 90)
    width = 3 if row_px / most >= 9 else 2
    traces = [_track_trace(tl, r, i, RATER_COLOURS[i % len(RATER_COLOURS)], width) for i, r in enumerate(shown)]
    strip = tl["kind"] == "frames"
    if strip:
        traces += _score_traces(tl, clickable)
    n = len(shown)
    rows_px = max(90, row_px * n)
    strip_px = 110 if strip else 0
    what = "tracks" if tl["kind"] == "frames" else "segments"
    title = f"Timeline of {tl['name']}: {what} per rater" + (f" and {tl['score_name']} per frame" if strip else "")
    layout = figure_layout(title, "frame", "rater", height=rows_px + strip_px + 60,
                           subtitle=_subtitle(tl, shown, clickable and strip),
                           xaxis={"range": [0.5, tl["num_frames"] + 0.5], "anchor": "y2" if strip else "y",
                                  "zeroline": False},
                           yaxis={"tickmode": "array", "tickvals": list(range(n)), "ticktext": shown,
                                  "range": [n - 0.5, -0.5], "zeroline": False, "showgrid": False,
                                  "domain": [strip_px / (rows_px + strip_px) + 0.06, 1] if strip else [0, 1]})
    if strip:
        vals = [float(s) for s in tl["scores"] if is_finite(s)] + ([tl["threshold"]] if tl["threshold"] is not None
                                                                   else [])
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        pad = 0.08 * (hi - lo or 1.0)
        layout["yaxis2"] = {"domain": [0, strip_px / (rows_px + strip_px) - 0.02], "anchor": "x",
                            "range": [lo - pad, hi + pad], "automargin": True, "fixedrange": True, "nticks": 4,
                            "title": {"text": f"{tl['score_name']}<br>per frame", "font": {"size": 12}}}
    shapes = [{"type": "rect", "xref": "x", "yref": "paper", "x0": a - 0.5, "x1": b + 0.5, "y0": 0, "y1": 1,
               "fillcolor": SHADE, "line": {"width": 0}, "layer": "below"} for a, b in tl["stretches"]]
    if selected:
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": selected[0] - 0.5,
                       "x1": selected[1] + 0.5, "y0": 0, "y1": 1, "line": {"color": SELECTED, "width": 2}})
    layout["shapes"] = shapes
    full = f"{title} ({count_text(n, what='rater')}, {count_text(tl['num_frames'], what='frame')})"
    return figure("video_timeline", full, traces, layout, clickable="video_strip" if clickable and strip else None)


def stretches_text(tl: dict) -> str:
    """The bad stretches of a timeline in words: ``"frames 3–7, 12–12 (6 frames)"``."""
    if not tl["stretches"]:
        return "no frame worse than the threshold"
    total = sum(b - a + 1 for a, b in tl["stretches"])
    shown = ", ".join(f"{a}–{b}" for a, b in tl["stretches"][:8]) + ("…" if len(tl["stretches"]) > 8 else "")
    return f"frames {shown} ({count_text(total, what='frame')} in {len(tl['stretches'])} {plural(len(tl['stretches']), 'stretch')})"
