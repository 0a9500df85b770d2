"""Decoding the semantic masks of a read: every mask file once, in a thread pool.

A ``Segmentation`` rater field holds its mask in the database (``mask``) or in
a file (``mask_path``, PNG usually). The files of a read are decoded here, each
exactly once per run, by OpenCV (``cv2.imread`` with ``IMREAD_UNCHANGED``,
through FiftyOne's own image reader, so a mask reads as
``Segmentation.get_mask()`` reads it) in :data:`DECODE_THREADS` threads:
OpenCV's decoders release the GIL, so the decoding runs on every core while
the run's Python waits for its results in order. Nothing else of a run reads a
mask file again (the kernels, the chance baseline, the consensus and the
write-back all take the arrays decoded here).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Sequence, TypeVar

import cv2
import numpy as np

import fiftyone.utils.image as foui

from agreement.core.validation import AnnotationError

__all__ = ["DECODE_THREADS", "decode_mask", "decode_masks", "ordered_map"]


T = TypeVar("T")
R = TypeVar("R")


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


#: Threads decoding mask files: the cores this process may run on.
DECODE_THREADS = _cores()

def decode_mask(path: str) -> np.ndarray:
    """The mask stored in the image file ``path``, as ``fiftyone.core.labels.Segmentation(mask_path=path)
    .get_mask()`` reads it (``cv2.IMREAD_UNCHANGED``: a single-channel PNG is its 2-D array of values).

    Raises:
        OSError: the file cannot be decoded.
    """
    return foui.read(path, flag=cv2.IMREAD_UNCHANGED)


def _decode_or_error(path: str) -> np.ndarray | Exception:
    try:
        return decode_mask(path)
    except (OSError, cv2.error) as err:  # named with its sample and rater by the caller, in order
        return err


def decode_masks(paths: Sequence[str | None], where: Any, *, threads: int | None = None) -> list[np.ndarray | None]:
    """The masks of the files ``paths`` (``None``: no file to read, ``None`` returned), each file decoded once,
    in ``threads`` threads (default :data:`DECODE_THREADS`), returned in the order of ``paths``.

    Args:
        paths: one mask file per row, or ``None``.
        where: names row ``i`` in messages as ``where[i]`` (the sample and the rater; built only for a
            message).
        threads: decoding threads; 1 decodes in this thread.

    Raises:
        AnnotationError: a file that does not exist or cannot be decoded, naming the row (sample and rater)
            and the file; the first such row in the order of ``paths``.
    """
    todo = [i for i, p in enumerate(paths) if p]
    for i in todo:
        if not os.path.isfile(str(paths[i])):
            raise AnnotationError(f"{where[i]}: the mask file {paths[i]!r} does not exist")
    files = [str(paths[i]) for i in todo]
    n = DECODE_THREADS if threads is None else max(1, int(threads))
    if n == 1 or len(files) <= 1:
        decoded = [_decode_or_error(f) for f in files]
    else:
        with ThreadPoolExecutor(min(n, len(files)), thread_name_prefix="iaa-mask-decode") as pool:
            decoded = list(pool.map(_decode_or_error, files))
    out: list[np.ndarray | None] = [None] * len(paths)
    for i, m in zip(todo, decoded, strict=True):
        if isinstance(m, Exception):
            raise AnnotationError(f"{where[i]}: the mask file {paths[i]!r} cannot be decoded as an image ({m})") from m
        out[i] = m
    return out


def ordered_map(fn: Callable[[T], R], items: Iterable[T], *, threads: int | None = None) -> list[R]:
    """``[fn(x) for x in items]`` in ``threads`` threads (default :data:`DECODE_THREADS`): the per-sample mask
    arithmetic of a shard (numpy's and OpenCV's loops over whole masks release the GIL). The results come in
    the order of ``items``, and the first exception in that order is raised, so a caller that merges them in
    order gets exactly the serial result."""
    work = list(items)
    n = DECODE_THREADS if threads is None else max(1, int(threads))
    if n == 1 or len(work) <= 1:
        return [fn(x) for x in work]
    with ThreadPoolExecutor(min(n, len(work)), thread_name_prefix="iaa-mask-compute") as pool:
        return list(pool.map(fn, work))
