"""A crowdsourced box export as a labelling platform writes it: many workers, a few per image, and image
files named without an extension.

:func:`write_crowd_export` writes a multi-rater COCO file (``crowd.json``) of a generated crowd corpus
(:func:`agreement.simulate.synthetic.crowd.crowd_corpus`) and one small PNG image per sample, named
``img0000``, ``img0001``, ... (no extension: the case where a dataset's media type cannot be read from
the file names). Workers are named ``w0``, ``w1``, ..., ``w199`` (not zero-padded, as platforms name
them). It is the data of the App's crowd journey (the browser test) and of the docs' screenshots.
"""

from __future__ import annotations

import dataclasses
import os

import cv2
import numpy as np

from agreement.io.coco import MultiRaterCoco, write_multi_rater_coco
from agreement.simulate.synthetic.crowd import CrowdNoise, crowd_corpus

__all__ = ["EXPORT_NOISE", "write_crowd_export"]

#: The workers' noise of the export: a crowd whose consensus has uncertain labels to review, as real crowds do.
EXPORT_NOISE = CrowdNoise(miss=0.5, jitter=0.1, confusion=0.3, false_positive=0.3)


def _draw(boxes: np.ndarray, labels, size: tuple[int, int], seed: int) -> np.ndarray:
    """A grey image with the true objects drawn as filled, class-coloured rectangles."""
    W, H = size
    rng = np.random.default_rng(seed)
    img = np.full((H, W, 3), 200, np.uint8) + rng.integers(0, 20, size=(H, W, 3), dtype=np.uint8)
    colours = {"c0": (60, 60, 200), "c1": (60, 180, 60), "c2": (200, 120, 40)}
    for (x, y, w, h), c in zip(boxes, labels, strict=False):
        p0 = (int(x * W), int(y * H))
        p1 = (int((x + w) * W), int((y + h) * H))
        cv2.rectangle(img, p0, p1, colours.get(str(c), (90, 90, 90)), thickness=-1)
    return img


def write_crowd_export(directory: str | os.PathLike, *, num_samples: int = 200, num_raters: int = 200,
                       raters_per_sample: int = 9, image_size: tuple[int, int] = (160, 120),
                       noise: CrowdNoise = EXPORT_NOISE, seed: int = 0) -> str:
    """Writes a crowd's COCO export and its extension-less images into ``directory``; returns the JSON path.

    Args:
        directory: created if missing; receives ``crowd.json`` and ``img0000``, ``img0001``, ...
        num_samples: images.
        num_raters: workers in the crowd (``w0`` ... ``w{num_raters - 1}``).
        raters_per_sample: workers assigned per image (``2 <= raters_per_sample <= num_raters``).
        image_size: ``(width, height)`` of the written images in pixels (the COCO boxes are in these pixels).
        noise: the workers' :class:`~agreement.simulate.synthetic.crowd.CrowdNoise` (default
            :data:`EXPORT_NOISE`).
        seed: the corpus's and the images' random seed.

    Returns:
        The path of ``crowd.json``.
    """
    os.makedirs(directory, exist_ok=True)
    corpus, truth = crowd_corpus(num_samples, num_raters, raters_per_sample=raters_per_sample, noise=noise, seed=seed)
    W, H = image_size
    images = []
    for s in range(corpus.num_samples):
        name = f"img{s:04d}"
        rows = truth.sample_index == s
        cv2.imwrite(os.path.join(directory, name + ".png"), _draw(truth.boxes[rows], truth.labels[rows], (W, H), s))
        os.replace(os.path.join(directory, name + ".png"), os.path.join(directory, name))  # no extension
        images.append({"id": s + 1, "file_name": name, "width": W, "height": H})
    corpus = dataclasses.replace(  # COCO ids and this export's pixel size (the boxes are relative)
        corpus, sample_ids=np.arange(1, corpus.num_samples + 1, dtype=object),
        label_ids=np.arange(1, len(corpus) + 1, dtype=object),
        image_sizes=np.tile([float(W), float(H)], (corpus.num_samples, 1)))
    coco = MultiRaterCoco(
        annotations=corpus, images=images,
        categories=[{"id": i + 1, "name": c} for i, c in enumerate(sorted(set(corpus.labels.tolist())))],
        rater_ids={r: f"w{int(r[1:])}" for r in corpus.raters},
    )
    path = os.path.join(directory, "crowd.json")
    write_multi_rater_coco(coco, path)
    return path
