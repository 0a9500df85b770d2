"""The distances :func:`agreement.methods.geometry_agreement.geometry_agreement` offers and the checks of its
parameters and of the box geometry.

This module does not import FiftyOne.
"""

from __future__ import annotations

import numpy as np

from agreement.geometry.similarity import check_similarity, SIMILARITIES
from agreement.core.validation import AnnotationError


#: Distances offered: ``d = 1 - s`` for the similarity ``s`` of that name in
#: :func:`agreement.geometry.similarity.similarity_matrix`. Each is listed only once a
#: test shows the ordering property on it (noisier annotations score lower).
DISTANCES: tuple[str, ...] = tuple(
    d for d in ("giou", "iou", "centroid", "polygon_iou", "polygon_giou", "mask_iou", "oks", "cuboid_iou",
                "point3d", "polyline3d_f1", "segment_jaccard")
    if d in SIMILARITIES
)


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _check_params(distance, threshold, bootstrap, max_pairs, seed, confidence, sigma_p):
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")
    t = float(threshold)
    if not (np.isfinite(t) and 0.0 <= t <= 1.0):
        raise ValueError(f"threshold (the matching threshold on similarity) must be in [0, 1], got {threshold!r}")
    if bootstrap is not None:
        if isinstance(bootstrap, bool) or int(bootstrap) != bootstrap or int(bootstrap) < 2:
            raise ValueError(
                f"bootstrap must be a number of resamples >= 2 (or None for no intervals), got {bootstrap!r}"
            )
        bootstrap = int(bootstrap)
    if isinstance(max_pairs, bool) or int(max_pairs) != max_pairs or int(max_pairs) < 1:
        raise ValueError(f"max_pairs (the pair budget) must be a positive number of comparisons, got {max_pairs!r}")
    c = float(confidence)
    if not (0.0 < c < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    p = float(sigma_p)
    if not (0.0 < p < 1.0):
        raise ValueError(f"sigma_p (the chance percentile of σ) must be in (0, 1), got {sigma_p!r}")
    return t, bootstrap, int(max_pairs), int(seed), c, p


def _check_data(data, distance: str) -> None:
    if distance not in ("iou", "giou", "centroid"):
        return  # the geometry is checked by agreement.geometry.similarity.check_similarity
    boxes = data.boxes
    if data.cuboids is not None and len(boxes) and not np.isfinite(boxes).all():
        check_similarity(distance, data)  # 3D labels have no 2D box: the message says to use 'cuboid_iou'
    bad = ~np.isfinite(boxes).all(axis=1) | (boxes[:, 2] < 0) | (boxes[:, 3] < 0) if len(boxes) else np.zeros(0, bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        s, r = int(data.sample_index[i]), int(data.rater_index[i])
        k = i - data.rows(s, r).start
        raise AnnotationError(
            f"sample {data.sample_names[s]!r}, rater {data.raters[r]!r}, annotation {k}: box "
            f"{boxes[i].tolist()} has NaN or infinite coordinates or a negative width or height"
        )
