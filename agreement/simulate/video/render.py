"""Playable video files of :class:`VideoLabels`: the boxes drawn on a plain background, written with OpenCV.

Simulated videos have labels but no media; a video dataset whose files do not
exist shows error tiles in the FiftyOne App. :func:`render_video` writes a
small video of one :class:`VideoLabels` with exactly its frame count, frame
rate and (even) frame size: each box filled with its class's colour (the
same colour for a class in every video) and outlined, on a dark gradient,
with a bar along the bottom edge that grows with the frame number. Boxes
drawn by the App over the video coincide with the drawn ones on every frame
(the frame numbers match), so a rater's drift or missed stretch shows
against the objects it should have boxed.

The codec follows the file's extension (:data:`VIDEO_CODECS`): ``.mp4``
gets VP9 in MP4, ``.webm`` gets VP8 (OpenCV prints a harmless note about
the ``VP80`` tag for each). Both are decoded by Chromium, Chrome, Edge and
Firefox. OpenCV's wheels cannot write H.264, and the MPEG-4 part 2
(``mp4v``) they do write is played by no browser.

Cost on one core: about 5 ms per frame of 320 x 240 in VP9 (four times that
at 640 x 480; VP8 about three times less); :func:`render_videos` renders on
several threads (OpenCV releases the GIL while encoding).

This module does not import FiftyOne.
"""

from __future__ import annotations

import os
import uuid
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from agreement.simulate.video.data import VideoLabels

__all__ = ["VIDEO_CODECS", "VideoFileInfo", "probe_video", "render_video", "render_videos", "video_codec"]

VIDEO_CODECS: dict[str, str] = {".mp4": "vp09", ".webm": "VP80"}
"""The OpenCV FourCC written for each file extension (lower case)."""

_PALETTE = [(60, 76, 231), (113, 204, 46), (219, 152, 52), (182, 89, 155), (15, 196, 241), (34, 126, 230),
            (156, 188, 26), (80, 127, 255), (173, 68, 142), (0, 215, 255)]  # BGR
_BACKGROUND_TOP, _BACKGROUND_BOTTOM = (58, 50, 44), (30, 26, 24)  # BGR: a smooth gradient costs the codec little


@dataclass(frozen=True)
class VideoFileInfo:
    """What OpenCV reads from a video file: its frame count, frame rate and frame size in pixels."""

    num_frames: int
    frame_rate: float
    width: int
    height: int


def video_codec(path: str | os.PathLike) -> str:
    """The FourCC :func:`render_video` writes to ``path``, from its extension.

    Raises:
        ValueError: an extension no browser-playable codec is written for.
    """
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in VIDEO_CODECS:
        raise ValueError(f"cannot render a browser-playable video named {os.path.basename(os.fspath(path))!r}: "
                         f"name the videos {' or '.join(sorted(VIDEO_CODECS))}")
    return VIDEO_CODECS[ext]


def probe_video(path: str | os.PathLike) -> VideoFileInfo | None:
    """The frame count, rate and size of the video at ``path``; ``None`` if OpenCV cannot read it.

    The frame count is the container's; when the container has none, the
    frames are counted by decoding them.
    """
    import cv2

    cap = cv2.VideoCapture(os.fspath(path))
    try:
        if not cap.isOpened():
            return None
        n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        if n <= 0:
            n = 0
            while cap.grab():
                n += 1
        fps, w, h = (cap.get(p) for p in (cv2.CAP_PROP_FPS, cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT))
        if n <= 0 or w <= 0 or h <= 0:
            return None
        return VideoFileInfo(num_frames=n, frame_rate=float(fps), width=int(w), height=int(h))
    finally:
        cap.release()


def _colour(label: str) -> tuple[int, int, int]:
    return _PALETTE[zlib.crc32(str(label).encode()) % len(_PALETTE)]


def _background(w: int, h: int) -> np.ndarray:
    s = np.linspace(0.0, 1.0, h)[:, None]
    rows = (1 - s) * np.asarray(_BACKGROUND_TOP, np.float64) + s * np.asarray(_BACKGROUND_BOTTOM, np.float64)
    return np.repeat(np.rint(rows).astype(np.uint8)[:, None, :], w, axis=1)


def _draw_frame(img: np.ndarray, boxes: np.ndarray, labels: np.ndarray, t: int, num_frames: int) -> None:
    """Fills each box with its class's colour and outlines it, larger boxes first; a bar along the bottom
    edge grows with the frame number (text would cost the encoder several times more)."""
    import cv2

    h, w = img.shape[:2]
    order = np.argsort(-(boxes[:, 2] * boxes[:, 3]), kind="stable")
    for i in order:
        x, y, bw, bh = boxes[i]
        p0 = (round(x * w), round(y * h))
        p1 = (max(p0[0], round((x + bw) * w) - 1), max(p0[1], round((y + bh) * h) - 1))
        cv2.rectangle(img, p0, p1, _colour(labels[i]), -1)
        cv2.rectangle(img, p0, p1, (235, 235, 235), 1)
    bar = max(2, h // 80)
    img[h - bar:, : round(w * t / num_frames)] = (200, 200, 200)


def render_video(video: VideoLabels, path: str | os.PathLike) -> VideoFileInfo:
    """Writes ``video``'s boxes as a playable video file at ``path`` (see the module docstring).

    The file has ``video.num_frames`` frames at ``video.frame_rate``; its
    size is ``video.width x video.height`` rounded down to even numbers (the
    codecs' 4:2:0 chroma). It is written next to ``path`` and moved into place
    once complete, so an interrupted render leaves no partial file behind;
    an existing file at ``path`` is replaced. Parent folders are created.

    Returns:
        What OpenCV reads back from the written file.

    Raises:
        ValueError: an extension without a codec (:func:`video_codec`).
        RuntimeError: this OpenCV cannot write the codec, or the written
            file does not read back with the video's frame count.
    """
    import cv2

    path = os.fspath(path)
    codec = video_codec(path)
    w, h = max(2, video.width - video.width % 2), max(2, video.height - video.height % 2)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.partial{os.path.splitext(path)[1]}")
    try:
        fourcc = cv2.VideoWriter_fourcc(*codec)  # type: ignore[attr-defined]  # missing from OpenCV's stubs
        writer = cv2.VideoWriter(tmp, fourcc, float(video.frame_rate), (w, h))
        if not writer.isOpened():
            raise RuntimeError(f"this OpenCV cannot write a {codec!r} video to {path!r} (no such encoder in FFmpeg)")
        try:
            background, bounds = _background(w, h), video.frame_bounds()
            for t in range(1, video.num_frames + 1):
                a, b = bounds[t - 1], bounds[t]
                img = background.copy()
                _draw_frame(img, video.boxes[a:b], video.labels[a:b], t, video.num_frames)
                writer.write(img)
        finally:
            writer.release()
        info = probe_video(tmp)
        if info is None or info.num_frames != video.num_frames:
            raise RuntimeError(f"the video written to {path!r} reads back as {info}, not {video.num_frames} frames")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return info


def render_videos(videos: Sequence[VideoLabels], paths: Sequence[str | os.PathLike], *, workers: int | None = None,
                  progress: Callable[[float, str], None] | None = None) -> list[VideoFileInfo]:
    """:func:`render_video` of each video to its path, on ``workers`` threads (default: the CPU count, at most 8).

    Args:
        videos: the videos.
        paths: one file path per video.
        workers: number of threads.
        progress: ``progress(fraction, message)`` after each video.

    Returns:
        What OpenCV reads back from each written file, in the videos' order.
    """
    if len(videos) != len(paths):
        raise ValueError(f"{len(videos)} videos for {len(paths)} paths")
    for p in paths:
        video_codec(p)  # every name checked before anything is written
    workers = workers or min(8, os.cpu_count() or 1)
    out: list[VideoFileInfo] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for i, info in enumerate(pool.map(render_video, videos, paths)):
            out.append(info)
            if progress is not None:
                progress((i + 1) / len(videos), f"rendered {i + 1} / {len(videos)} videos")
    return out
