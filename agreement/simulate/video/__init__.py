"""Simulated video raters: synthetic reference videos of moving boxes and their degraded copies.

* :mod:`agreement.simulate.video.data`: :class:`VideoLabels`, one video's
  boxes per frame (with track ids) and temporal segments, as columnar arrays.
* :mod:`agreement.simulate.video.synthetic`: :func:`generate_videos`, N
  videos x F frames x k boxes moving smoothly, with labels, track ids and
  each object's lifetime as a temporal segment.
* :mod:`agreement.simulate.video.raters`: :func:`simulate_video_raters`, a
  rater's version of a reference: box drift along tracks, identity switches,
  missed frame runs, spurious short tracks and segment boundary jitter
  (:class:`VideoNoise`).
* :mod:`agreement.simulate.video.render`: :func:`render_video`, a playable
  video file (VP9 in MP4, VP8 in WebM) of a video's boxes, for the App.

Typical use::

    from agreement.simulate.video import VideoNoise, generate_videos, simulate_video_raters

    reference = generate_videos(100, num_frames=300, num_objects=5, seed=0)
    sim = simulate_video_raters(reference, VideoNoise.scaled(1.0), num_raters=3, seed=0)
    sim.videos["r1"][0]        # rater r1's VideoLabels of the first video

:func:`agreement.fo.simulate.video.build_video_dataset` writes them as a
FiftyOne video dataset, with rendered media. This package does not import FiftyOne.
"""

from agreement.simulate.video.data import VideoLabels, check_video
from agreement.simulate.video.raters import (
    COUNTS,
    DRIFT_HORIZON,
    VideoNoise,
    VideoSimulation,
    simulate_video_rater,
    simulate_video_raters,
)
from agreement.simulate.video.render import (
    VideoFileInfo,
    probe_video,
    render_video,
    render_videos,
)
from agreement.simulate.video.synthetic import VIDEO_CLASSES, generate_videos

__all__ = [
    "COUNTS",
    "DRIFT_HORIZON",
    "VIDEO_CLASSES",
    "VideoFileInfo",
    "VideoLabels",
    "VideoNoise",
    "VideoSimulation",
    "check_video",
    "generate_videos",
    "probe_video",
    "render_video",
    "render_videos",
    "simulate_video_rater",
    "simulate_video_raters",
]
