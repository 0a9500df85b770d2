"""The media type of an imported dataset, from what its files are.

FiftyOne takes a sample's media type from its file name's extension
(:func:`fiftyone.core.media.get_media_type`), so images named without an
extension (``0001``, ``a3f9e2``: common in crowdsourcing exports) make a
dataset of media type ``unknown``. On such a dataset the App shows each
sample as a JSON document, labels cannot be hovered, and FiftyOne refuses
patches views (the review queue of a consensus run is one).

The importers decide the media type here, one documented way:

1. the extension, as FiftyOne reads it;
2. else the file's first bytes, when the file can be read (JPEG, PNG, GIF,
   BMP, TIFF, WebP, AVIF/HEIC images; MP4/MOV, WebM/Matroska and AVI videos);
3. else what the annotation format describes (COCO and Label Studio image
   tasks describe images), with a warning that says how many files could not
   be told and that the type was assumed.

Files of different media types in one import are an error.
"""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import fiftyone as fo
import fiftyone.core.media as fom

logger = logging.getLogger(__name__)

__all__ = ["MediaTypeReport", "sniff_media_type", "decide_media_type", "media_sample", "set_empty_dataset_media_type",
           "ImportMediaWarning"]

_IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"BM", b"II*\x00", b"MM\x00*")
_VIDEO_BRANDS_IMAGE = (b"avif", b"avis", b"heic", b"heix", b"mif1", b"msf1")


class ImportMediaWarning(UserWarning):
    """An import could not tell the media type of some files from their names or contents."""


def sniff_media_type(path: str) -> str | None:
    r"""The media type a file's first bytes show (``"image"`` or ``"video"``), or None if unreadable or unknown.

    Signatures: JPEG ``FF D8 FF``, PNG, GIF87a/89a, BMP ``BM``, TIFF ``II*\0``/``MM\0*``, WebP
    (``RIFF....WEBP``), ISO-BMFF ``ftyp`` with an AVIF/HEIF brand (image) or any other brand (MP4,
    MOV: video), WebM/Matroska ``1A 45 DF A3`` and AVI (``RIFF....AVI ``) (video).
    """
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    if head.startswith(_IMAGE_MAGIC):
        return fom.IMAGE
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return fom.IMAGE
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return fom.VIDEO
    if head[4:8] == b"ftyp":
        return fom.IMAGE if head[8:12] in _VIDEO_BRANDS_IMAGE else fom.VIDEO
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return fom.VIDEO
    return None


@dataclass
class MediaTypeReport:
    """What :func:`decide_media_type` found.

    Attributes:
        media_type: the dataset's media type.
        by_name: files whose extension told it.
        by_content: files whose first bytes told it.
        assumed: files that could be told neither way, taken as ``media_type`` because the format says so.
        note: a sentence for the import's result (empty when nothing was assumed).
    """

    media_type: str
    by_name: int = 0
    by_content: int = 0
    assumed: int = 0
    note: str = ""

    def to_dict(self) -> dict:
        """The report as a JSON-able dict (recorded in ``dataset.info["iaa_import"]["media"]``)."""
        return {"media_type": self.media_type, "by_name": self.by_name, "by_content": self.by_content,
                "assumed": self.assumed, "note": self.note}


def decide_media_type(filepaths: Iterable[str], expected: str = fom.IMAGE,
                      reason: str = "the annotations describe images", warn: bool = True) -> MediaTypeReport:
    """The media type of an import's files: by extension, else by content, else ``expected`` with a warning.

    Args:
        filepaths: the samples' file paths.
        expected: what the annotation format describes (``"image"`` for COCO and Label Studio image tasks).
        reason: why ``expected`` is right, for the warning (e.g. ``"COCO annotations describe images"``).
        warn: emit an :class:`ImportMediaWarning` (and a log line) when files had to be assumed.

    Raises:
        ValueError: files of different media types (e.g. images and videos) in one import.
    """
    found: Counter = Counter()
    counts: Counter[str] = Counter()
    unknown: list[str] = []
    for path in dict.fromkeys(filepaths):
        kind = fom.get_media_type(path)
        if kind != fom.UNKNOWN:
            found[kind] += 1
            counts["by_name"] += 1
            continue
        kind = sniff_media_type(path)
        if kind is not None:
            found[kind] += 1
            counts["by_content"] += 1
        else:
            unknown.append(path)
    if len(found) > 1:
        raise ValueError(f"the import mixes media types {dict(found)}: a dataset holds one media type; "
                         "import the images and the videos separately")
    media_type = next(iter(found), expected)
    report = MediaTypeReport(media_type, counts["by_name"], counts["by_content"], len(unknown))
    if unknown:
        report.note = (f"{len(unknown)} of {len(unknown) + sum(found.values())} files (e.g. {unknown[0]!r}) have no "
                       f"extension FiftyOne knows and could not be read to tell what they are: taken as {media_type} "
                       f"because {reason}")
        if warn:
            warnings.warn(report.note, ImportMediaWarning, stacklevel=3)
            logger.warning(report.note)
    return report


def media_sample(filepath: str, media_type: str, **fields) -> fo.Sample:
    """A new sample of ``media_type`` whatever its file name says (FiftyOne infers it from the extension)."""
    if fom.get_media_type(filepath) == media_type:  # what FiftyOne infers from the name: built once
        return fo.Sample(filepath=filepath, **fields)
    typed = fo.Sample.from_dict({"filepath": filepath, "_media_type": media_type})
    for name, value in fields.items():
        typed[name] = value
    return typed


def set_empty_dataset_media_type(dataset: fo.Dataset, media_type: str) -> None:
    """Gives a new, empty dataset its media type before samples are added (FiftyOne would take the first
    sample's, from its extension)."""
    if dataset.media_type != media_type:
        dataset.media_type = media_type
