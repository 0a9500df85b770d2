"""The core library without FiftyOne: αOT, KαLOS α and consensus labels from plain numpy arrays
and from a KαLOS multi-rater COCO file.

    pip install .                                  # numpy, scipy, shapely, OpenCV; no FiftyOne
    python examples/core_without_fiftyone.py [file.json]

Without an argument the COCO part reads ``examples/data/three_raters.json``
(beside this script); a training or QA pipeline would pass its own file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from agreement import MultiRaterAnnotations
from agreement.io.coco import read_multi_rater_coco
from agreement.methods.consensus import consensus
from agreement.methods.kalos import kalos_alpha
from agreement.methods.ot.alpha_ot import alpha_ot

HERE = Path(__file__).resolve().parent


def from_arrays() -> MultiRaterAnnotations:
    """Three raters on two images, as columnar numpy arrays (one row per box).

    Boxes are relative ``[x, y, w, h]`` (top-left corner, width, height, in
    [0, 1] of the image). ``assigned[s, r]`` says whether rater ``r`` looked
    at image ``s``: carol never saw image 1 (implicit absence); bob saw
    image 1 and drew nothing there (explicit absence, which counts).
    """
    boxes = np.array([
        [0.10, 0.10, 0.20, 0.30], [0.50, 0.50, 0.20, 0.20],  # image 0, alice
        [0.11, 0.10, 0.20, 0.29], [0.52, 0.49, 0.20, 0.21],  # image 0, bob
        [0.10, 0.12, 0.19, 0.30],                            # image 0, carol (missed the second object)
        [0.30, 0.30, 0.40, 0.40],                            # image 1, alice
    ])
    return MultiRaterAnnotations(
        sample_ids=np.array(["img0.jpg", "img1.jpg"], dtype=object),
        raters=("alice", "bob", "carol"),
        assigned=np.array([[True, True, True], [True, True, False]]),
        boxes=boxes,
        labels=np.array(["cat", "dog", "cat", "dog", "cat", "cat"], dtype=object),
        label_ids=np.arange(6).astype(object),
        sample_index=np.array([0, 0, 0, 0, 0, 1]),
        rater_index=np.array([0, 0, 1, 1, 2, 0]),
        image_sizes=np.array([[640.0, 480.0], [640.0, 480.0]]),
    )


def report(title: str, data: MultiRaterAnnotations) -> None:
    print(f"== {title}: {data.summary()['samples']} images, {len(data)} boxes, raters {list(data.raters)}")
    ot = alpha_ot(data, lam=0.5, beta=0.5)
    print(f"alpha_OT = {ot.alpha:.4f}   (D_o {ot.observed:.4f}, D_e {ot.expected:.4f}{', ' + ot.reason if ot.reason else ''})")
    ka = kalos_alpha(data, similarity="iou", tau=0.5)
    print(f"KaLOS alpha = {ka.global_alpha:.4f} (pooled), mean per image {ka.mean_alpha:.4f}")
    res = consensus(data)  # method="em": Dawid-Skene classes, detection rates and localisation noise per rater
    agreed = res.to_annotations()
    print(f"consensus (EM): {len(agreed)} boxes; per rater agreement with it: "
          + ", ".join(f"{r} {a:.2f}" for r, a in zip(res.report.raters, res.report.agreement)))


def main(argv: list[str]) -> None:
    report("numpy arrays", from_arrays())
    path = Path(argv[1]) if len(argv) > 1 else HERE / "data" / "three_raters.json"
    coco = read_multi_rater_coco(path)  # images carry rater_list, annotations rater_id
    report(f"KaLOS COCO file {path.name}", coco.annotations)


if __name__ == "__main__":
    main(sys.argv)
