"""The "Annotator Agreement" panel's section of a run on videos: a frame run (``fields=["frames.r1", ...]``)
or a run on the raters' temporal segments (``TemporalDetections``).

The method's generic view already reads a frame run as videos (the per-video
mean of the per-frame score is the histogram's score: a bar loads its videos,
*lowest agreement first* sorts the videos, the rater-pair heatmap's cell loads
the videos where that pair agrees least). Under the histogram this section
adds, from :mod:`agreement.fo.panel.video_figures`:

* the **timeline** of one video: the one chosen in the dropdown (the view's
  videos, worst first), the one selected in the grid, or the worst of the
  view; in the sample view the open video (the open clip's video, its clip
  outlined). A row per rater with its tracks (or segments), under it the
  per-frame score with the frames worse than the run's threshold in red and
  their stretches shaded; clicking the score strip loads that video's clips
  where the raters disagree;
* **Load the clips where the raters disagree**: the clips view
  (:func:`agreement.fo.views.disagreements.disagreement_clips_view`) of every video in view,
  and the same for the timeline's video.

A clips view is a generated collection, so the drill-down loads the App's
view with the sidebar filters as stages (the clips do not have the videos'
fields) and puts the filters back when it is undone, as the review queue does.
The chosen video is remembered in the panel's memory, never in panel state.
"""

from __future__ import annotations

import fiftyone.operators.types as types

from agreement.fo.panel.video_figures import (
    MAX_VIDEO_CHOICES,
    choose_video,
    frame_score_spec,
    is_temporal_run,
    stretches_text,
    timeline_figure,
    video_choices,
    video_timeline,
)
from agreement.reporting.figures.base import count_text, sig3

from .panel_filters import load_derived_view
from .panel_host import PanelHost
from .panel_memory import panel_memory_of

__all__ = ["VideoEvents", "refresh_video", "render_video", "video_modal", "FIGURE"]

FIGURE = "video_timeline"


def _is_video_run(base, info: dict) -> bool:
    return frame_score_spec(info) is not None or is_temporal_run(base, info)


def _open_video(view, sid: str | None) -> tuple[str | None, list | None]:
    """The video of the open sample ``sid`` of the App's ``view`` and, for an open clip, its support."""
    if not sid:
        return None, None
    if getattr(view, "_is_clips", False):
        found = view.select(sid)
        if len(found):
            vid, support = found.values(["sample_id", "support"])
            return str(vid[0]), support[0]
    return sid, None


def _threshold_text(spec: dict | None, name: str) -> str:
    if not spec or spec.get("threshold") is None:
        return ""
    return f"{name} {'below' if spec.get('higher_is_better', True) else 'above'} {sig3(spec['threshold'])}"


def refresh_video(pdata, mem, base, data: dict, ctx_view=None, current_sample: str | None = None) -> None:
    """The timeline of the video the panel shows (memory, for the layout; traces in panel data) and its notes;
    nothing for runs that are not on videos."""
    info = data["info"]
    mem.figures.pop(FIGURE, None)
    mem.video = None
    if not _is_video_run(base, info) or not data["n_view"]:
        pdata.video_md = ""
        return
    spec = frame_score_spec(info)
    vid, support = _open_video(ctx_view, current_sample)
    why = "the open video" if vid else None
    if vid is None and mem.video_choice:
        vid, why = mem.video_choice, "the chosen video"
    chosen = choose_video(base, info, vid)
    if chosen is None:  # no video in view (``n_view`` counts them, so not reached): as for an empty view
        pdata.video_md = ""
        return
    if chosen != vid:
        why = "the video in view with the lowest agreement"
    tl = video_timeline(base, info, chosen)
    fig = timeline_figure(tl, clickable=spec is not None, selected=support)
    mem.figures[FIGURE] = {"layout": fig["layout"], "config": fig["config"], "click": fig["click"],
                           "traces": fig["traces"], "per_rater": False}
    choices = video_choices(base, info, MAX_VIDEO_CHOICES)
    if chosen not in [c["id"] for c in choices]:
        choices.append({"id": chosen, "name": tl["name"], "score": tl["video_score"]})
    name = tl["score_name"]
    mem.video = {"id": chosen, "name": tl["name"], "frames": spec is not None, "n_stretches": len(tl["stretches"]),
                 "choices": [(c["id"], f"{c['name']} — {'mean ' if spec else ''}{name} {sig3(c['score'])}")
                             for c in choices], "bad": _threshold_text(spec, name)}
    pdata.video_timeline = fig["traces"]
    pdata.video_md = _video_md(tl, why, spec, name, support)
    if spec is not None:
        mem.video["n_bad_videos"], mem.video["n_bad_frames"] = _bad_counts(base, info)


def _bad_counts(base, info: dict) -> tuple[int, int]:
    """The videos in view with a frame worse than the threshold, and those frames (from the per-video fields)."""
    from fiftyone import ViewField as F

    low, n = f"{info['key']}_frames_low", f"{info['key']}_frames_n"
    bad = base.match(F(low) > 0)
    count = len(bad)
    return count, int(round(bad.sum(F(low) * F(n)) or 0)) if count else 0


def _video_md(tl: dict, why: str | None, spec: dict | None, name: str, support) -> str:
    """The note over the timeline: which video, why this one, its bad stretches."""
    text = f"**Timeline of {tl['name']}** ({why or 'the video in view with the lowest agreement'})"
    if spec is None:
        return text + f": each rater's segments; the video's {name} is {sig3(tl['video_score'])}."
    if tl["stretches"]:
        text += f": the raters disagree ({_threshold_text(spec, name)}) on {stretches_text(tl)}."
    else:
        text += f": no frame has {_threshold_text(spec, name)}."
    if support:
        text += f" The open clip, frames {support[0]}–{support[1]}, is outlined."
    return text


def render_video(handlers, panel, mem) -> None:
    """The video section (grid: chooser, buttons, timeline; sample view: the open video's timeline)."""
    video = mem.video
    fig = mem.figures.get(FIGURE)
    if video is None or fig is None:
        return
    if video["frames"] and mem.modal is None and video.get("n_bad_videos"):
        n, f = video["n_bad_videos"], video["n_bad_frames"]
        panel.btn("video_clips", label=f"Load the clips where the raters disagree ({count_text(f, what='frame')} with "
                  f"{video['bad']} in {count_text(n, what='video')})", on_click=handlers.on_video_clips, variant="outlined")
    panel.str("video_md", view=types.MarkdownView())
    if mem.modal is None:
        choices = types.DropdownView()
        for vid, label in video["choices"]:
            choices.add_choice(vid, label=label)
        panel.enum("video_choice", [v for v, _ in video["choices"]], default=video["id"],
                   label="Timeline of video (worst first)", view=choices, on_change=handlers.on_change_video)
        row = panel.h_stack("video_actions", gap=1, align_x="left")
        row.btn("video_load", label="Load this video", on_click=handlers.on_video_load, variant="outlined")
        if video["frames"] and video["n_stretches"]:
            row.btn("video_own_clips", label="Load its clips where they disagree",
                    on_click=handlers.on_video_own_clips, variant="outlined")
    # the traces go in the view, not in panel data (see .agreement_panel)
    panel.plot(f"plot_{FIGURE}", data=fig["traces"], layout=fig["layout"], config=fig["config"],
               **({"on_click": handlers.on_video_strip_click} if fig.get("click") else {}))


def video_modal(ctx, mem, info: dict) -> bool:
    """The sample view of a run on videos: the open video is explained by its timeline, not label by label
    (``True``: done; ``False``: not a run on videos)."""
    if frame_score_spec(info) is None and not is_temporal_run(ctx.dataset, info):
        return False
    sid = ctx.current_sample
    mem.modal = {"sample": sid, "n": 0, "n_disagree": 0} if sid else None
    ctx.panel.data.labels_md = ""
    return True


class VideoEvents(PanelHost):
    """The video section's events (mixed into the panel, whose ``_context``, ``_drill`` and
    ``_option_changed`` they use)."""

    def on_change_video(self, ctx) -> None:
        """The dropdown: the timeline of another video of the view."""
        mem = panel_memory_of(ctx)
        value = ctx.params.get("value")
        if not value or value == (mem.video or {}).get("id"):  # the dropdown reporting its value
            return
        mem.video_choice = value
        self._option_changed(ctx, mem)

    def on_change_selected(self, ctx) -> None:
        """A video selected in the grid: its timeline."""
        mem = panel_memory_of(ctx)
        selected = list(ctx.selected or [])
        if mem.video is None or not selected or selected[0] == mem.video.get("id"):
            return
        mem.video_choice = selected[0]
        self._option_changed(ctx, mem)

    def on_video_load(self, ctx) -> None:
        """Loads the timeline's video alone (open it to play it)."""
        key, info, base, base_stages = self._context(ctx)
        video = panel_memory_of(ctx).video
        if video:
            self._drill(ctx, base, base_stages, base.select(video["id"]), f"video {video['name']}")

    def on_video_clips(self, ctx) -> None:
        """The clips of every video in view where the raters disagree."""
        self._load_clips(ctx, None)

    def on_video_own_clips(self, ctx) -> None:
        """The clips of the timeline's video where the raters disagree."""
        video = panel_memory_of(ctx).video
        if video:
            self._load_clips(ctx, video["id"])

    def on_video_strip_click(self, ctx) -> None:
        """A point of the timeline's score strip (id ``"<video id>:<frame>"``): that video's clips."""
        pid = str(ctx.params.get("id") or "")
        vid = pid.split(":", 1)[0] or (panel_memory_of(ctx).video or {}).get("id")
        if vid:
            self._load_clips(ctx, vid)

    def _load_clips(self, ctx, video_id: str | None) -> None:
        """Loads the clips where the raters disagree (of ``video_id``, or of every video in view) on top of
        the panel's view; the sidebar filters go into the view as stages (see the module docstring)."""
        from agreement.fo.views.disagreements import ViewError, disagreement_clips_view

        key, info, base, base_stages = self._context(ctx)
        mem = panel_memory_of(ctx)
        try:
            view = disagreement_clips_view(base, key, video_id)
        except ViewError as e:
            ctx.ops.notify(str(e), variant="warning")
            return
        count = len(view)
        if video_id:
            name = next((n for v, n in (mem.video or {}).get("choices", []) if v == video_id), video_id)
            where = f"video {name.split(' — ')[0]}"
        else:
            where = f"the {count_text(len(base), what='video')} in view"
        if not count:
            ctx.ops.notify(f"no frame of {where} has {(mem.video or {}).get('bad') or 'a bad score'}", variant="info")
            return
        load_derived_view(ctx, mem, base, base_stages, view, {
            "what": f"the clips of {where} where the raters disagree ({(mem.video or {}).get('bad', '')}), in video order",
            "count": count, "unit": "clip", "run": key})
